//! The systemd notification protocol (`sd_notify(3)`), std only.
//!
//! `seqgptd` runs as a `Type=notify` service: it tells systemd `READY=1` once the model is
//! mapped and the bus name is owned, pings `WATCHDOG=1` from its engine loop at half of the
//! watchdog period, says `STOPPING=1` on SIGTERM and keeps a one-line `STATUS=`. Each message is
//! one datagram sent to the `AF_UNIX` socket named by `$NOTIFY_SOCKET`: a file-system path
//! (`/run/systemd/notify`) or, with a leading `@`, a Linux abstract socket.
//!
//! Outside systemd (no `$NOTIFY_SOCKET`) [`Notifier::from_env`] returns `None` and the daemon
//! simply sends nothing. Nothing here changes the environment (unlike `sd_notify(3)`'s
//! `unset_environment`); tests pass the socket explicitly with [`Notifier::new`].
//!
//! Why not the `sd-notify` crate: it reads `$NOTIFY_SOCKET` on every call, so a notifier bound
//! to a socket a test chose, a watchdog tick handed to the engine thread, and the check that
//! `WATCHDOG_PID` names this process would all be wrapped around it anyway; the protocol
//! itself is one datagram per message, the few lines below.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

/// A connection-less sender of notification datagrams to one socket.
///
/// `Send + Sync`: share it (e.g. in an `Arc`) between the bus task and the engine thread.
#[derive(Debug)]
pub struct Notifier {
    socket: UnixDatagram,
    addr: SocketAddr,
}

impl Notifier {
    /// A notifier for the socket `addr`, spelled as in `$NOTIFY_SOCKET`: an absolute path, or
    /// `@name` for the abstract socket `name`.
    pub fn new(addr: impl AsRef<OsStr>) -> io::Result<Notifier> {
        let addr = parse_addr(addr.as_ref())?;
        let socket = UnixDatagram::unbound()?;
        Ok(Notifier { socket, addr })
    }

    /// The notifier systemd asked for through `$NOTIFY_SOCKET`, or `None` when the variable is
    /// unset, empty or not a socket address this module understands.
    pub fn from_env() -> Option<Notifier> {
        let addr = std::env::var_os("NOTIFY_SOCKET")?;
        Notifier::new(addr).ok()
    }

    /// Sends `state` as it is: one or more `KEY=VALUE` lines (see `sd_notify(3)`).
    pub fn notify(&self, state: &str) -> io::Result<()> {
        let sent = self.socket.send_to_addr(state.as_bytes(), &self.addr)?;
        if sent != state.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "short notification datagram",
            ));
        }
        Ok(())
    }

    /// Start-up is finished: the service is ready.
    pub fn ready(&self) -> io::Result<()> {
        self.notify("READY=1")
    }

    /// A reload started (READY=1 ends it); MONOTONIC_USEC as systemd's notify-reload asks.
    pub fn reloading(&self) -> io::Result<()> {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes into the timespec it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        let usec = ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000;
        self.notify(&format!("RELOADING=1\nMONOTONIC_USEC={usec}"))
    }

    /// The service is shutting down.
    pub fn stopping(&self) -> io::Result<()> {
        self.notify("STOPPING=1")
    }

    /// Keep-alive ping for `WatchdogSec=`.
    pub fn watchdog(&self) -> io::Result<()> {
        self.notify("WATCHDOG=1")
    }

    /// A one-line, human-readable status (`systemctl status` shows it). Line breaks in `text`
    /// become spaces, since a newline would start another `KEY=VALUE` assignment.
    pub fn status(&self, text: &str) -> io::Result<()> {
        let line: String = text
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        self.notify(&format!("STATUS={line}"))
    }
}

fn parse_addr(raw: &OsStr) -> io::Result<SocketAddr> {
    let bytes = raw.as_bytes();
    match bytes.first() {
        Some(b'/') => SocketAddr::from_pathname(raw),
        Some(b'@') => {
            use std::os::linux::net::SocketAddrExt;
            SocketAddr::from_abstract_name(&bytes[1..])
        }
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "NOTIFY_SOCKET must be an absolute path or start with '@'",
        )),
    }
}

/// How often the service should send `WATCHDOG=1`: half of `$WATCHDOG_USEC`, or `None` when
/// the watchdog is off, or when `$WATCHDOG_PID` is set and names another process.
pub fn watchdog_interval() -> Option<Duration> {
    let usec = std::env::var("WATCHDOG_USEC").ok();
    let pid = std::env::var("WATCHDOG_PID").ok();
    watchdog_interval_from(usec.as_deref(), pid.as_deref(), std::process::id())
}

/// [`watchdog_interval`] on explicit values: `usec` and `pid` as read from `$WATCHDOG_USEC`
/// and `$WATCHDOG_PID`, `own_pid` the caller's process id.
pub fn watchdog_interval_from(
    usec: Option<&str>,
    pid: Option<&str>,
    own_pid: u32,
) -> Option<Duration> {
    let usec: u64 = usec?.trim().parse().ok()?;
    if usec == 0 {
        return None;
    }
    if let Some(pid) = pid {
        if pid.trim().parse::<u32>().ok()? != own_pid {
            return None;
        }
    }
    Some(Duration::from_micros(usec / 2))
}
