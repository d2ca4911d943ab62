//! Logs under systemd: with `JOURNAL_STREAM` naming its stderr, seqgptd logs to journald
//! natively (one datagram per event with MESSAGE, PRIORITY, SYSLOG_IDENTIFIER and the
//! event's fields); without it, plain lines on stderr with no colour codes. The journal's
//! socket is the fixed /run/systemd/journal/socket, so this test stands in for journald
//! there: on a machine without journald it binds that path itself; where journald runs, it
//! starts the daemon in a mount namespace of its own (`unshare --mount`) with the stand-in's
//! folder bound over /run/systemd/journal. Both need root: without it the test says SKIPPED,
//! and fails under CI=1.

mod common;
mod dbus_harness;

use dbus_harness::*;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const SOCKET: &str = "/run/systemd/journal/socket";

/// A pipe: (read end, write end).
fn pipe() -> (std::fs::File, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two new descriptors, owned below by nothing else.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fresh descriptors from pipe2.
    unsafe { (std::fs::File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// The fields of a journal datagram (the native protocol): `KEY=value\n`, or, for values
/// that may hold newlines, `KEY\n`, the value's length as 64-bit little-endian, the value, `\n`.
fn fields(mut d: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while !d.is_empty() {
        let end = d.iter().position(|&b| b == b'\n' || b == b'=').expect("a field name");
        let key = String::from_utf8_lossy(&d[..end]).into_owned();
        if d[end] == b'=' {
            let rest = &d[end + 1..];
            let nl = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            out.push((key, String::from_utf8_lossy(&rest[..nl]).into_owned()));
            d = &rest[(nl + 1).min(rest.len())..];
        } else {
            let rest = &d[end + 1..];
            let len = u64::from_le_bytes(rest[..8].try_into().unwrap()) as usize;
            out.push((key, String::from_utf8_lossy(&rest[8..8 + len]).into_owned()));
            d = &rest[(8 + len + 1).min(rest.len())..];
        }
    }
    out
}

#[test]
fn under_systemd_the_daemon_logs_to_the_journal() {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        assert!(std::env::var_os("CI").is_none(), "standing in for journald at {SOCKET} needs root, and CI is set: run the tests as root");
        eprintln!("SKIPPED: standing in for journald at {SOCKET} needs root");
        return;
    }
    let Some(bus) = Bus::start() else { return };
    // Where journald runs, the stand-in's socket is in a folder of its own, bound over the
    // journal's folder for the daemon only.
    let real = Path::new(SOCKET).exists();
    let private = tempfile::tempdir().unwrap();
    let dir = if real { private.path() } else { Path::new(SOCKET).parent().unwrap() };
    let made_dir = !dir.exists();
    std::fs::create_dir_all(dir).unwrap();
    let socket = dir.join("socket");
    let journal = UnixDatagram::bind(&socket).unwrap();
    journal.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let cleanup = || {
        let _ = std::fs::remove_file(&socket);
        if made_dir && !real {
            let _ = std::fs::remove_dir(dir);
        }
    };

    let (mut stderr_read, stderr_write) = pipe();
    let meta = stderr_read.metadata().unwrap();
    let stream = format!("{}:{}", std::os::unix::fs::MetadataExt::dev(&meta), std::os::unix::fs::MetadataExt::ino(&meta));
    let mut daemon = if real {
        let mut c = std::process::Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "sh", "-c", "mount --bind \"$0\" /run/systemd/journal && exec \"$@\""]).arg(dir);
        if let Some(runner) = std::env::var_os("SEQGPT_TEST_RUNNER") {
            c.arg(runner);
        }
        c.arg(env!("CARGO_BIN_EXE_seqgptd"));
        c
    } else {
        common::program(env!("CARGO_BIN_EXE_seqgptd"))
    };
    let mut child = daemon
        .args(["--address", &bus.address])
        .env("JOURNAL_STREAM", &stream)
        .env("SEQGPT_LOG", "info")
        .env_remove("NOTIFY_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr_write))
        .spawn()
        .unwrap();
    // The command holds the write end of the stderr pipe: close it, or reading stderr never ends.
    drop(daemon);
    let mut datagrams = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut buf = vec![0u8; 1 << 16];
    while Instant::now() < deadline && !datagrams.iter().any(|d: &Vec<u8>| d.windows(7).any(|w| w == b"serving")) {
        if let Ok(n) = journal.recv(&mut buf) {
            datagrams.push(buf[..n].to_vec());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    cleanup();
    let mut text = String::new();
    stderr_read.read_to_string(&mut text).unwrap();

    let serving = datagrams.iter().find(|d| d.windows(7).any(|w| w == b"serving")).unwrap_or_else(|| {
        panic!("no 'serving' entry reached the journal; got {} datagrams; stderr: {text}", datagrams.len())
    });
    let f = fields(serving);
    let get = |k: &str| f.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    assert!(get("MESSAGE").is_some_and(|m| m.starts_with("serving org.seqgpt.Summarizer1 on the private bus")), "{f:?}");
    assert_eq!(get("PRIORITY"), Some("5"), "info is notice (5): {f:?}");
    assert_eq!(get("SYSLOG_IDENTIFIER"), Some("seqgptd"), "{f:?}");
    assert_eq!(get("TARGET"), Some("seqgpt_daemon::app"), "{f:?}");
    assert!(get("CODE_FILE").is_some() && get("CODE_LINE").is_some(), "{f:?}");
    // Events went to the journal, not to stderr (which the journal records as well).
    assert!(!text.contains("serving org.seqgpt.Summarizer1"), "{text}");
    assert!(!text.contains('\x1b'), "colour codes on stderr: {text:?}");
}

#[test]
fn elsewhere_stderr_has_plain_lines() {
    let Some(bus) = Bus::start() else { return };
    let mut child = common::program(env!("CARGO_BIN_EXE_seqgptd"))
        .args(["--address", &bus.address])
        .env("JOURNAL_STREAM", "1:1")
        .env("SEQGPT_LOG", "info")
        .env_remove("NOTIFY_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let c = tokio::runtime::Runtime::new().unwrap();
    c.block_on(async {
        loop {
            if let Ok(conn) = zbus::connection::Builder::address(bus.address.as_str()).unwrap().build().await {
                let dbus = zbus::fdo::DBusProxy::new(&conn).await.unwrap();
                if dbus.name_has_owner(zbus::names::BusName::try_from(NAME).unwrap()).await.unwrap_or(false) {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "seqgptd did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    let text = reader.join().unwrap();
    // A JOURNAL_STREAM that is not this stderr (a child of a service that redirected it)
    // leaves the logs on stderr, plain.
    assert!(text.contains("serving org.seqgpt.Summarizer1"), "{text}");
    assert!(text.contains(" INFO "), "{text}");
    assert!(!text.contains('\x1b'), "colour codes on a pipe: {text:?}");
}
