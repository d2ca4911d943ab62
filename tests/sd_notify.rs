//! The sd_notify protocol against a NOTIFY_SOCKET this test owns.
//!
//! Each test binds its own datagram socket (a path in a private temporary folder, or a unique
//! abstract name) and plays systemd's part. Tests that need the environment (`from_env`,
//! `watchdog_interval`) run this test binary again as a child process with the variables set on
//! the child only, so no test changes the environment of this process.

use seqgpt_daemon::sd_notify::{watchdog_interval_from, Notifier};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A bound notification socket, removed (with its folder) on drop.
struct Listener {
    socket: UnixDatagram,
    /// The address as systemd would put it in NOTIFY_SOCKET.
    spelling: String,
    dir: Option<PathBuf>,
}

fn unique(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "seqgpt-notify-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

impl Listener {
    fn path(tag: &str) -> Listener {
        let dir = std::env::temp_dir().join(unique(tag));
        std::fs::create_dir(&dir).unwrap();
        let path = dir.join("notify");
        let socket = UnixDatagram::bind(&path).unwrap();
        Listener::timed(socket, path.to_str().unwrap().to_owned(), Some(dir))
    }

    fn abstract_name(tag: &str) -> Listener {
        let name = unique(tag);
        let socket =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        Listener::timed(socket, format!("@{name}"), None)
    }

    fn timed(socket: UnixDatagram, spelling: String, dir: Option<PathBuf>) -> Listener {
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        Listener {
            socket,
            spelling,
            dir,
        }
    }

    /// The next datagram, as text; panics after 5 s without one.
    fn recv(&self) -> String {
        let mut buf = [0u8; 4096];
        let n = self
            .socket
            .recv(&mut buf)
            .expect("no notification within 5 s");
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    /// Nothing more is queued.
    fn assert_empty(&self) {
        self.socket.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 64];
        let next = self.socket.recv(&mut buf);
        assert!(
            next.is_err(),
            "unexpected datagram {:?}",
            String::from_utf8_lossy(&buf[..next.unwrap()])
        );
        self.socket.set_nonblocking(false).unwrap();
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn lifecycle(listener: &Listener) {
    let n = Notifier::new(&listener.spelling).unwrap();
    n.status("loading model\nstill loading").unwrap();
    n.ready().unwrap();
    n.watchdog().unwrap();
    n.notify("STATUS=idle\nEXTEND_TIMEOUT_USEC=1000").unwrap();
    n.stopping().unwrap();
    assert_eq!(listener.recv(), "STATUS=loading model still loading");
    assert_eq!(listener.recv(), "READY=1");
    assert_eq!(listener.recv(), "WATCHDOG=1");
    assert_eq!(listener.recv(), "STATUS=idle\nEXTEND_TIMEOUT_USEC=1000");
    assert_eq!(listener.recv(), "STOPPING=1");
    listener.assert_empty();
}

#[test]
fn path_socket_receives_ready_watchdog_stopping() {
    lifecycle(&Listener::path("path"));
}

#[test]
fn abstract_socket_receives_ready_watchdog_stopping() {
    lifecycle(&Listener::abstract_name("abstract"));
}

#[test]
fn bad_addresses_are_refused() {
    assert!(Notifier::new("").is_err());
    assert!(Notifier::new("relative/notify").is_err());
    // A well-formed address with no listener: creating works, sending fails.
    let gone = std::env::temp_dir().join(unique("absent")).join("notify");
    let n = Notifier::new(&gone).unwrap();
    assert!(n.ready().is_err());
}

#[test]
fn watchdog_interval_is_half_of_watchdog_usec() {
    let me = 4242;
    assert_eq!(
        watchdog_interval_from(Some("30000000"), None, me),
        Some(Duration::from_secs(15))
    );
    assert_eq!(
        watchdog_interval_from(Some("1"), None, me),
        Some(Duration::ZERO)
    );
    assert_eq!(
        watchdog_interval_from(Some("3"), Some("4242"), me),
        Some(Duration::from_micros(1))
    );
    assert_eq!(
        watchdog_interval_from(Some("30000000"), Some("1"), me),
        None,
        "watchdog meant for another pid"
    );
    assert_eq!(
        watchdog_interval_from(Some("30000000"), Some("x"), me),
        None
    );
    assert_eq!(
        watchdog_interval_from(Some("0"), None, me),
        None,
        "0 disables the watchdog"
    );
    assert_eq!(watchdog_interval_from(Some("-5"), None, me), None);
    assert_eq!(watchdog_interval_from(Some(""), None, me), None);
    assert_eq!(watchdog_interval_from(None, Some("4242"), me), None);
}

/// Runs `child_pinger` in a fresh copy of this test binary with `env` set on the child only.
/// Under emulation (jetson/check.sh runs the aarch64 tests with qemu, without binfmt_misc)
/// `SEQGPT_TEST_RUNNER` names the emulator that must start the copy too.
fn spawn_pinger(env: &[(&str, &str)]) -> std::process::Child {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match std::env::var_os("SEQGPT_TEST_RUNNER") {
        Some(runner) => {
            let mut cmd = Command::new(runner);
            cmd.arg(exe);
            cmd
        }
        None => Command::new(exe),
    };
    cmd.args(["child_pinger", "--exact", "--test-threads=1", "--quiet"]);
    cmd.env_remove("NOTIFY_SOCKET")
        .env_remove("WATCHDOG_USEC")
        .env_remove("WATCHDOG_PID");
    cmd.env("SEQGPT_NOTIFY_CHILD", "1")
        .envs(env.iter().copied());
    cmd.stdout(std::process::Stdio::null());
    cmd.spawn().unwrap()
}

const PINGS: usize = 4;

/// The child side: what seqgptd does, in miniature. Does nothing unless started by a test
/// below (SEQGPT_NOTIFY_CHILD set).
#[test]
fn child_pinger() {
    if std::env::var_os("SEQGPT_NOTIFY_CHILD").is_none() {
        return;
    }
    let Some(n) = Notifier::from_env() else {
        // Nobody to tell; the parent sees the exit status.
        std::process::exit(3);
    };
    n.ready().unwrap();
    match seqgpt_daemon::sd_notify::watchdog_interval() {
        Some(every) => {
            for _ in 0..PINGS {
                std::thread::sleep(every);
                n.watchdog().unwrap();
            }
        }
        None => n.status("watchdog off").unwrap(),
    }
    n.stopping().unwrap();
}

#[test]
fn child_pings_at_half_of_watchdog_usec() {
    for listener in [Listener::path("child"), Listener::abstract_name("child")] {
        // WATCHDOG_USEC = 200 ms: pings every 100 ms.
        let mut child = spawn_pinger(&[
            ("NOTIFY_SOCKET", &listener.spelling),
            ("WATCHDOG_USEC", "200000"),
        ]);
        assert_eq!(listener.recv(), "READY=1");
        let mut last = Instant::now();
        let mut gaps = Vec::new();
        for _ in 0..PINGS {
            assert_eq!(listener.recv(), "WATCHDOG=1");
            let now = Instant::now();
            gaps.push(now - last);
            last = now;
        }
        assert_eq!(listener.recv(), "STOPPING=1");
        assert!(child.wait().unwrap().success());
        // Loose bounds, so that a loaded machine does not fail the test: never early (the
        // child sleeps 100 ms between pings; the first gap starts late, at READY's receipt),
        // and typically at half of WATCHDOG_USEC rather than at all of it (the median gap).
        let total: Duration = gaps.iter().sum();
        assert!(
            total >= Duration::from_millis(100 * PINGS as u64 - 30),
            "pings too early: {gaps:?}"
        );
        assert!(
            gaps[1..].iter().all(|g| *g >= Duration::from_millis(60)),
            "pings too close: {gaps:?}"
        );
        let mut sorted = gaps.clone();
        sorted.sort();
        assert!(
            sorted[PINGS / 2] < Duration::from_millis(180),
            "pings not at half of WATCHDOG_USEC: {gaps:?}"
        );
        listener.assert_empty();
    }
}

#[test]
fn child_honours_watchdog_pid() {
    let listener = Listener::path("pid");
    // systemd sets WATCHDOG_PID to the main process: here, some other process.
    let mut child = spawn_pinger(&[
        ("NOTIFY_SOCKET", &listener.spelling),
        ("WATCHDOG_USEC", "200000"),
        ("WATCHDOG_PID", "1"),
    ]);
    assert_eq!(listener.recv(), "READY=1");
    assert_eq!(listener.recv(), "STATUS=watchdog off");
    assert_eq!(listener.recv(), "STOPPING=1");
    assert!(child.wait().unwrap().success());
    listener.assert_empty();
}

#[test]
fn child_without_notify_socket_has_no_notifier() {
    let mut child = spawn_pinger(&[]);
    assert_eq!(child.wait().unwrap().code(), Some(3));
}
