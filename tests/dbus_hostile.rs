//! Hostile and careless clients against the real daemon on private buses: each test
//! reproduces one way a client could stop, stall or bloat the service, and checks that the
//! daemon survives, that every job ends, and that the limits hold. The tests with two Unix
//! users run on a system-type bus with the shipped policy file, where the test runs as root;
//! elsewhere they skip with a message.

mod common;
mod dbus_harness;
#[path = "pdf/builder.rs"]
mod builder;

use dbus_harness::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zbus::zvariant::{OwnedValue, Value};

const T: Duration = Duration::from_secs(120);
const EIGHT_MIB: usize = 8 << 20;



/// A one-page PDF (about 860 bytes) whose encryption dictionary names a security handler
/// with a NUL in its name: the extractor's error message quotes it.
fn nul_handler_pdf() -> Vec<u8> {
    let mut pdf = builder::Pdf::new();
    let f = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let enc = pdf.add(format!("<< /Filter /Evil#00Handler /V 1 /R 2 /O <{0}> /U <{0}> /P -4 >>", "00".repeat(32)));
    let bytes = builder::doc_with_pages(&mut pdf, &[(b"BT /F1 12 Tf 72 700 Td (Hello) Tj ET".to_vec(), format!("<< /Font << /F1 {f} 0 R >> >>"))]);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let patched = text.replacen("trailer\n<< ", &format!("trailer\n<< /Encrypt {enc} 0 R "), 1);
    assert_ne!(patched, text);
    patched.into_bytes()
}

fn memfd_with(bytes: &[u8]) -> std::fs::File {
    let name = std::ffi::CString::new("doc").unwrap();
    // SAFETY: memfd_create with a NUL-terminated name returns a new descriptor or -1.
    let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    assert!(raw >= 0);
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    std::io::Write::write_all(&mut f, bytes).unwrap();
    f
}

/// The daemon still owns its name and answers a property read.
async fn alive(c: &Client, daemon: &mut Daemon) {
    assert!(daemon.child.try_wait().unwrap().is_none(), "seqgptd exited:\n{}", daemon.log());
    let v: String = c.property(PATH, NAME, "Version").await.expect("the daemon answers").try_into().unwrap();
    assert!(!v.is_empty());
}

fn job_str(v: OwnedValue) -> String {
    String::try_from(v).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pdf_whose_error_holds_a_nul_does_not_kill_the_daemon() {
    let pdf = nul_handler_pdf();
    assert!(pdf.len() < 1200, "{} bytes", pdf.len());
    for system in [false, true] {
        let Some(bus) = (if system { Bus::start_system() } else { Bus::start() }) else { continue };
        let address = bus.address.clone();
        let args: &[&str] = if system { &["--bus", "system"] } else { &[] };
        let mut daemon = Daemon::start_with_env(&bus, "", args, &[("DBUS_SYSTEM_BUS_ADDRESS", &address)]);
        let mut c = Client::connect(&bus.address).await;
        let file = memfd_with(&pdf);
        let job = c.summarize_fd(&file, &opts(&[("detach", Value::from(true))])).await.unwrap();
        let events = c.events(job.as_str(), T).await;
        let Some(Event::Failed(name, message)) = events.last() else { panic!("{events:?}") };
        assert_eq!(name, "org.seqgpt.Summarizer1.Error.Encrypted");
        assert!(message.contains("Evil") && !message.contains('\0'), "{message:?}");
        // The property and the Wait reply carry the same message.
        let m = job_str(c.property(job.as_str(), "org.seqgpt.Job1", "ErrorMessage").await.unwrap());
        assert_eq!(&m, message);
        let e = c.job(&job).await.wait().await.unwrap_err();
        assert_eq!(error_name(&e), "org.seqgpt.Summarizer1.Error.Encrypted");
        alive(&c, &mut daemon).await;
    }
}

/// The only entry file under the cache directory of `daemon`.
fn only_cache_entry(daemon: &Daemon) -> PathBuf {
    let mut found = Vec::new();
    let mut stack = vec![daemon.state_dir.join("summaries")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                found.push(p);
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.pop().unwrap()
}

async fn summary_of(c: &mut Client, text: &str) -> (String, bool) {
    let job = c.summarize_text(text, &opts(&[])).await.unwrap();
    let events = c.events(job.as_str(), Duration::from_secs(30)).await;
    let Some(Event::Finished(summary, stats)) = events.last() else { panic!("{events:?}") };
    (summary.clone(), stat_bool(stats, "cached"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_cache_entries_are_removed_not_served() {
    let Some(bus) = Bus::start() else { return };
    let mut daemon = Daemon::start(&bus, "", &[]);
    let mut c = Client::connect(&bus.address).await;
    let (first, cached) = summary_of(&mut c, ARTICLE).await;
    assert!(!cached);
    let entry = only_cache_entry(&daemon);
    let good = std::fs::read_to_string(&entry).unwrap();
    assert!(summary_of(&mut c, ARTICLE).await.1, "a hit");

    // A NUL in a stat string: it survives restarts in the file, so restart.
    let nul = good.replacen("\"model\":\"\"", "\"model\":\"a\\u0000b\"", 1);
    assert_ne!(nul, good);
    std::fs::write(&entry, &nul).unwrap();
    drop(c);
    drop(daemon);
    daemon = Daemon::start(&bus, "", &[]);
    let mut c = Client::connect(&bus.address).await;
    let (again, cached) = summary_of(&mut c, ARTICLE).await;
    assert!(!cached, "the bad entry was served");
    assert_eq!(again, first);
    alive(&c, &mut daemon).await;

    // A FIFO: the job must not wait for a writer.
    std::fs::remove_file(&entry).unwrap();
    let path = std::ffi::CString::new(entry.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let t0 = Instant::now();
    let (_, cached) = summary_of(&mut c, ARTICLE).await;
    assert!(!cached && t0.elapsed() < Duration::from_secs(10));

    // A symbolic link to an endless file: not followed, no memory spent.
    std::fs::remove_file(&entry).ok();
    std::os::unix::fs::symlink("/dev/zero", &entry).unwrap();
    let rss0 = rss_kib(daemon.child.id());
    let (_, cached) = summary_of(&mut c, ARTICLE).await;
    assert!(!cached);
    let grew = rss_kib(daemon.child.id()).saturating_sub(rss0);
    assert!(grew < 64 * 1024, "RSS grew by {grew} KiB");
    assert!(std::fs::symlink_metadata(&entry).map(|m| !m.file_type().is_symlink()).unwrap_or(true), "the link was left");
    alive(&c, &mut daemon).await;
}

/// An 8 MiB text: prose with sentence breaks (`prose`), or one without any.
fn big_text(prose: bool, seed: usize) -> String {
    // Not prose: words without a single sentence break (a summary of it is the best of it,
    // cut and marked: a text of no words at all is refused as NoText, tested elsewhere).
    let unit = if prose { format!("{ARTICLE}\n\n") } else { format!("word{} ", char::from(b'a' + (seed % 26) as u8)) };
    let mut t = unit.repeat(EIGHT_MIB / unit.len());
    t.truncate(EIGHT_MIB - 16);
    while !t.is_char_boundary(t.len()) {
        t.pop();
    }
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_requests_do_not_stall_the_bus_and_cancel_wins() {
    let Some(bus) = Bus::start() else { return };
    let mut daemon = Daemon::start(&bus, "", &[]);
    let mut c = Client::connect(&bus.address).await;
    let reader = Client::connect(&bus.address).await;
    let rss0 = rss_kib(daemon.child.id());
    // Four 8 MiB texts at once; meanwhile a property read must stay quick.
    let texts: Vec<String> = (0..4).map(|i| big_text(i % 2 == 0, i)).collect();
    let mut jobs = Vec::new();
    for t in &texts {
        jobs.push(c.summarize_text(t, &opts(&[("no_cache", Value::from(true))])).await.unwrap());
    }
    let mut worst = Duration::ZERO;
    let mut reads = 0;
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let t0 = Instant::now();
        reader.property(PATH, NAME, "QueueLength").await.unwrap();
        worst = worst.max(t0.elapsed());
        reads += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(worst < Duration::from_secs(1), "a property read took {worst:?} while four 8 MiB texts ran ({reads} reads)");
    let mut peak = 0;
    for j in &jobs {
        let events = c.events(j.as_str(), T).await;
        let Some(Event::Finished(summary, _)) = events.last() else { panic!("{events:?}") };
        // A summary is bounded by its length option, never by the input.
        assert!(!summary.trim().is_empty() && summary.len() < 8 << 10, "a summary of {} bytes", summary.len());
        peak = peak.max(rss_kib(daemon.child.id()));
    }
    // Memory goes back once the daemon is idle.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = rss_kib(daemon.child.id());
    eprintln!("RSS: {rss0} KiB before, {peak} KiB at the end of the burst, {after} KiB idle");
    assert!(after < rss0 + 96 * 1024, "RSS {after} KiB after the burst, {rss0} KiB before");

    // Cancel during the heavy work (a few hundred milliseconds of it) ends the job as
    // cancelled, within a second, every time.
    for i in 0..3 {
        let job = c.summarize_text(&texts[0], &opts(&[("no_cache", Value::from(true))])).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50 * i)).await;
        let t0 = Instant::now();
        c.job(&job).await.cancel().await.unwrap();
        let events = c.events(job.as_str(), Duration::from_secs(5)).await;
        assert!(t0.elapsed() < Duration::from_secs(1), "cancel took {:?}", t0.elapsed());
        assert!(
            matches!(events.last(), Some(Event::Failed(n, _)) if n == "org.seqgpt.Summarizer1.Error.Cancelled"),
            "try {i}: {events:?}"
        );
        assert_eq!(c.job_string(job.as_str(), "State").await, "cancelled");
    }
    alive(&c, &mut daemon).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classify_on_8_mib_is_too_large_at_once() {
    let Some(bus) = Bus::start() else { return };
    let mut daemon = Daemon::start(&bus, &format!("model = \"{}\"\ndevice = \"cpu\"\n", tiny()), &[]);
    let c = Client::connect(&bus.address).await;
    let text = big_text(true, 0);
    let rss0 = rss_kib(daemon.child.id());
    let t0 = Instant::now();
    let body = (text.as_str(), vec!["good", "bad"]);
    let calls = (0..4).map(|_| c.call(PATH, NAME, "Classify", &body));
    let results = futures_util::future::join_all(calls).await;
    let took = t0.elapsed();
    let grew = rss_kib(daemon.child.id()).saturating_sub(rss0);
    for r in results {
        let e = r.unwrap_err();
        assert_eq!(error_name(&e), "org.seqgpt.Summarizer1.Error.TooLarge", "{e}");
    }
    assert!(took < Duration::from_secs(1), "four 8 MiB Classify calls took {took:?}");
    assert!(grew < 100 * 1024, "RSS grew by {grew} KiB");
    let e = c.call(PATH, NAME, "Extract", &(text.as_str(), vec!["person"])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.seqgpt.Summarizer1.Error.TooLarge", "{e}");
    alive(&c, &mut daemon).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_huge_word_through_the_model_path_ends_and_cancels() {
    let Some(bus) = Bus::start() else { return };
    let mut daemon = Daemon::start(&bus, &slow_config(""), &[]);
    let mut c = Client::connect(&bus.address).await;
    for word in ["x".repeat(320_000), "汉".repeat(320_000)] {
        let job = c.summarize_text(&word, &opts(&[("no_cache", Value::from(true))])).await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t0 = Instant::now();
        c.job(&job).await.cancel().await.unwrap();
        let events = c.events(job.as_str(), Duration::from_secs(5)).await;
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert!(events.last().is_some_and(Event::is_terminal), "{events:?}");
        // Extractively it completes, bounded.
        let job = c.summarize_text(&word, &opts(&[("method", Value::from("extractive")), ("no_cache", Value::from(true))])).await.unwrap();
        let t0 = Instant::now();
        let events = c.events(job.as_str(), Duration::from_secs(60)).await;
        let Some(Event::Finished(summary, _)) = events.last() else { panic!("{events:?}") };
        assert!(!summary.trim().is_empty() && summary.len() < 8 << 10 && t0.elapsed() < Duration::from_secs(30), "{} bytes in {:?}", summary.len(), t0.elapsed());
    }
    alive(&c, &mut daemon).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retained_results_are_bounded_in_bytes() {
    let Some(bus) = Bus::start() else { return };
    let mut daemon = Daemon::start(&bus, "[service]\nmax_retained_bytes = 4096\n", &[]);
    let mut c = Client::connect(&bus.address).await;
    let mut jobs = Vec::new();
    for i in 0..12 {
        let text = format!("Report {i}. {ARTICLE}");
        let job = c.summarize_text(&text, &opts(&[("no_cache", Value::from(true))])).await.unwrap();
        assert!(matches!(c.events(job.as_str(), T).await.last(), Some(Event::Finished(..))));
        jobs.push(job);
    }
    let retained = c.service_stat("retained_bytes").await;
    assert!(retained <= 4096, "{retained} bytes retained");
    // The oldest are gone, the newest is readable.
    assert!(c.property(jobs[0].as_str(), "org.seqgpt.Job1", "State").await.is_err());
    assert_eq!(c.job_string(jobs[11].as_str(), "State").await, "done");
    alive(&c, &mut daemon).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_daemon_exits_and_the_first_keeps_the_name() {
    let Some(bus) = Bus::start() else { return };
    let mut first = Daemon::start(&bus, "", &[]);
    let c = Client::connect(&bus.address).await;
    let dbus = zbus::fdo::DBusProxy::new(&c.conn).await.unwrap();
    let name = zbus::names::BusName::try_from(NAME).unwrap();
    let owner = dbus.get_name_owner(name.clone()).await.unwrap();
    let t0 = Instant::now();
    let out = common::program(env!("CARGO_BIN_EXE_seqgptd"))
        .args(["--address", &bus.address])
        .env("XDG_STATE_HOME", bus.dir.path().join("second"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "the second daemon exited with {}", out.status);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already owned") && err.contains("another seqgptd"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(30));
    assert_eq!(dbus.get_name_owner(name).await.unwrap(), owner);
    alive(&c, &mut first).await;
    assert!(!first.log().contains("lost name"), "{}", first.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smaller_hostile_inputs() {
    let Some(bus) = Bus::start() else { return };
    let mut daemon = Daemon::start(&bus, "", &[]);
    let mut c = Client::connect(&bus.address).await;
    // An O_PATH descriptor is refused at the call.
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pdf-samples/one-page.pdf");
    let opath = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::File::options().read(true).custom_flags(libc::O_PATH).open(&sample).unwrap()
    };
    let e = c.summarize_fd(&opath, &opts(&[])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.InvalidArgs", "{e}");
    assert!(e.to_string().contains("O_PATH"), "{e}");
    // An eventfd reads as what it is.
    // SAFETY: eventfd returns a new descriptor or -1.
    let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    // SAFETY: a fresh descriptor nothing else owns.
    let efd = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    let e = c.summarize_fd(&efd, &opts(&[])).await.unwrap_err();
    assert!(!e.to_string().contains("not not") && e.to_string().contains("eventfd"), "{e}");
    // A 1 MB bad option value is not echoed back.
    let huge = "9".repeat(1 << 20);
    let e = c.summarize_text(ARTICLE, &opts(&[("pages", Value::from(huge.as_str()))])).await.unwrap_err();
    assert!(e.to_string().len() < 300, "{} bytes of error", e.to_string().len());
    // SummarizePath: a device is never opened, a symbolic link is not followed, a missing
    // file says so.
    let e = c.summarize_path(Path::new("/dev/zero"), &opts(&[])).await.unwrap_err();
    assert!(e.to_string().contains("device"), "{e}");
    let link = bus.dir.path().join("link.pdf");
    std::os::unix::fs::symlink(&sample, &link).unwrap();
    let e = c.summarize_path(&link, &opts(&[])).await.unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let e = c.summarize_path(&bus.dir.path().join("missing.pdf"), &opts(&[])).await.unwrap_err();
    assert!(e.to_string().contains("no such file"), "{e}");
    // The service object's introspection lists no job.
    let job = c.summarize_text(ARTICLE, &opts(&[("detach", Value::from(true))])).await.unwrap();
    assert!(matches!(c.events(job.as_str(), T).await.last(), Some(Event::Finished(..))));
    let token = job.as_str().rsplit('/').next().unwrap().to_string();
    let xml: String = c.call(PATH, "org.freedesktop.DBus.Introspectable", "Introspect", &()).await.unwrap().body().deserialize().unwrap();
    assert!(!xml.contains(&token) && xml.contains("<node name=\"jobs\"/>"), "{xml}");
    assert!(xml.contains("SummarizeText") && xml.contains("org.freedesktop.DBus.Properties"), "{xml}");
    alive(&c, &mut daemon).await;
}

/// `busctl` output of a SummarizeText call: the job path.
fn job_of(out: &str) -> String {
    out.split('"').nth(1).unwrap_or_else(|| panic!("no job path in {out:?}")).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_system_bus_limits_and_access_are_per_user() {
    let Some(bus) = Bus::start_system() else { return };
    let address = bus.address.clone();
    let config = slow_config("[service]\nmax_jobs = 16\nmax_jobs_per_client = 4\n");
    let mut daemon = Daemon::start_with_env(&bus, &config, &["--bus", "system"], &[("DBUS_SYSTEM_BUS_ADDRESS", &address)]);
    let text = format!("{ARTICLE}\n\n{ARTICLE}");
    let submit = |user: &str, text: &str| {
        bus.busctl_as(user, &["call", NAME, PATH, NAME, "SummarizeText", "sa{sv}", text, "2", "detach", "b", "true", "no_cache", "b", "true"])
    };
    // nobody, with five connections (one busctl each): the fifth is refused.
    let mut theirs = Vec::new();
    for i in 0..5 {
        let (ok, out) = submit("nobody", &format!("{i}. {text}"));
        if i < 4 {
            assert!(ok, "call {i}: {out}");
            theirs.push(job_of(&out));
        } else {
            assert!(!ok && out.contains("busy") && out.contains("this user"), "the fifth job of one user was accepted: {out}");
        }
    }
    // Another user (root here) is not affected.
    let mut c = Client::connect(&bus.address).await;
    let mine = c.summarize_text(ARTICLE, &opts(&[("method", Value::from("extractive"))])).await.unwrap();
    assert!(matches!(c.events(mine.as_str(), T).await.last(), Some(Event::Finished(..))));
    // nobody may read neither root's job, with Get nor with GetAll, nor introspect the tree.
    for (method, args) in [
        ("org.freedesktop.DBus.Properties.Get", vec!["string:org.seqgpt.Job1", "string:State"]),
        ("org.freedesktop.DBus.Properties.GetAll", vec!["string:org.seqgpt.Job1"]),
    ] {
        let mut all = vec!["--dest=org.seqgpt.Summarizer1", mine.as_str(), method];
        all.extend(args);
        let (ok, out) = bus.dbus_send_as("nobody", &all);
        assert!(!ok && out.contains("org.freedesktop.DBus.Error.AccessDenied"), "{method}: {out}");
    }
    for path in ["/", "/org/seqgpt", "/org/seqgpt/Summarizer1/jobs"] {
        let (ok, out) = bus.dbus_send_as("nobody", &["--dest=org.seqgpt.Summarizer1", path, "org.freedesktop.DBus.Introspectable.Introspect"]);
        assert!(!ok && out.contains("AccessDenied"), "introspecting {path}: {out}");
    }
    let (ok, out) = bus.dbus_send_as("nobody", &["--dest=org.seqgpt.Summarizer1", PATH, "org.freedesktop.DBus.Introspectable.Introspect"]);
    assert!(ok && !out.contains(mine.rsplit('/').next().unwrap()) && !theirs.iter().any(|j| out.contains(j.rsplit('/').next().unwrap())), "{out}");
    // Their own jobs they may read (and cancel).
    let (ok, out) = bus.dbus_send_as("nobody", &["--dest=org.seqgpt.Summarizer1", &theirs[0], "org.freedesktop.DBus.Properties.GetAll", "string:org.seqgpt.Job1"]);
    assert!(ok && out.contains("State"), "{out}");
    for j in &theirs {
        let (ok, out) = bus.dbus_send_as("nobody", &["--dest=org.seqgpt.Summarizer1", j, "org.seqgpt.Job1.Cancel"]);
        assert!(ok, "{out}");
    }
    alive(&c, &mut daemon).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gio_example_reports_a_daemon_that_went_away() {
    let python = Path::new("/usr/bin/python3");
    let has_gi = python.exists()
        && std::process::Command::new(python).args(["-c", "import gi"]).status().is_ok_and(|s| s.success());
    if !has_gi {
        assert!(std::env::var_os("CI").is_none(), "python3-gi is missing under CI (tests/deps.sh installs it)");
        eprintln!("SKIPPED: /usr/bin/python3 with python3-gi is needed to run examples/summarize_gio.py");
        return;
    }
    let Some(bus) = Bus::start() else { return };
    let mut daemon = Daemon::start(&bus, &slow_config(""), &[]);
    let text = bus.dir.path().join("long.txt");
    std::fs::write(&text, long_article(5)).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/summarize_gio.py");
    let mut child = std::process::Command::new(python)
        .arg(&example)
        .args(["--text", text.to_str().unwrap(), "--address", &bus.address])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the job runs, the daemon dies without a word.
    let c = Client::connect(&bus.address).await;
    let deadline = Instant::now() + T;
    while u32::try_from(c.property(PATH, NAME, "QueueLength").await.unwrap()).unwrap() == 0 {
        assert!(Instant::now() < deadline, "the example's job never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "the example still waits for a daemon that is gone");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("left the bus"), "{err}");
}
