//! The API a client can grow with, and which daemon a client asks: the interface version and
//! capabilities, unknown options ignored and listed, `handle_token` paths, file errors, the
//! caller's own jobs, the CLI's choice between a system and a session daemon, and the CLI's
//! jobs, classify, extract and --password-file. Private buses, the real binaries.

mod common;
mod dbus_harness;

use dbus_harness::*;
use seqgpt_daemon::service::client;
use std::collections::HashMap;
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use zbus::zvariant::{OwnedValue, Value};

const T: Duration = Duration::from_secs(120);

fn sample(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pdf-samples").join(name)
}

/// Runs `seqgpt ARGS` with `env`, feeding `stdin`.
fn seqgpt(args: &[&str], env: &[(&str, &str)], stdin: Option<&[u8]>) -> Output {
    let mut cmd = common::program(env!("CARGO_BIN_EXE_seqgpt"));
    cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        // A command that refuses its arguments exits without reading: a broken pipe here is
        // its answer, not the test's failure.
        let _ = std::io::Write::write_all(&mut input, bytes);
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_and_capabilities() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let c = Client::connect(&bus.address).await;
    let s = client::summarizer(&c.conn).await.unwrap();
    assert_eq!(s.interface_version().await.unwrap(), 2);
    let caps = s.capabilities().await.unwrap();
    for cap in ["summarize-fd", "summarize-path", "summarize-text", "handle-token", "list-jobs", "ignore-unknown-options"] {
        assert!(caps.iter().any(|c| c == cap), "{cap} missing from {caps:?}");
    }
    // On the system bus, paths are not served, and the capabilities say so.
    let other = Bus::start().unwrap();
    let address = other.address.clone();
    let _system = Daemon::start_with_env(&other, "", &["--bus", "system"], &[("DBUS_SYSTEM_BUS_ADDRESS", &address)]);
    let c = Client::connect(&other.address).await;
    let caps = client::summarizer(&c.conn).await.unwrap().capabilities().await.unwrap();
    assert!(!caps.iter().any(|c| c == "summarize-path"), "{caps:?}");
    assert!(caps.iter().any(|c| c == "summarize-fd"), "{caps:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_options_are_ignored_and_listed_known_ones_checked() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let mut c = Client::connect(&bus.address).await;
    // A newer client's option: the job runs, and its stats say what was ignored.
    let job = c
        .summarize_text(ARTICLE, &opts(&[("highlight_color", Value::from("yellow")), ("zoom", Value::from(2u32)), ("length", Value::from("short"))]))
        .await
        .unwrap();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(_, stats)) = events.last() else { panic!("{events:?}") };
    let ignored: Vec<String> = stats["ignored_options"].try_clone().unwrap().try_into().unwrap();
    assert_eq!(ignored, ["highlight_color", "zoom"]);
    // The Stats property holds the same.
    let prop: HashMap<String, OwnedValue> = c.job(&job).await.stats().await.unwrap();
    let again: Vec<String> = prop["ignored_options"].try_clone().unwrap().try_into().unwrap();
    assert_eq!(again, ignored);
    // Without unknown keys there is no such entry.
    let job = c.summarize_text(ARTICLE, &opts(&[])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(_, stats)) = events.last() else { panic!("{events:?}") };
    assert!(!stats.contains_key("ignored_options"));
    // A known key with a wrong type or value stays an error.
    for bad in [opts(&[("length", Value::from(3u32))]), opts(&[("max_words", Value::from("many"))]), opts(&[("style", Value::from("poem"))])] {
        let e = c.summarize_text(ARTICLE, &bad).await.unwrap_err();
        assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.InvalidArgs", "{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handle_token_gives_a_path_known_before_the_call() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let c = Client::connect(&bus.address).await;
    let me = c.conn.unique_name().unwrap().as_str().trim_start_matches(':').replace('.', "_");
    let expected = format!("{JOBS}/{me}/reader_42");
    // Subscribed to exactly that path before the call: no signal can be missed.
    let rule = zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .path(expected.as_str())
        .unwrap()
        .interface("org.seqgpt.Job1")
        .unwrap()
        .build();
    let mut stream = zbus::MessageStream::for_match_rule(rule, &c.conn, Some(1000)).await.unwrap();
    let job = c.summarize_text(ARTICLE, &opts(&[("handle_token", Value::from("reader_42"))])).await.unwrap();
    assert_eq!(job.as_str(), expected);
    let finished = tokio::time::timeout(T, async {
        while let Some(Ok(msg)) = futures_util::StreamExt::next(&mut stream).await {
            if let Some(s) = client::JobSignal::from_message(&msg) {
                if s.is_terminal() {
                    return s;
                }
            }
        }
        panic!("the stream ended")
    })
    .await
    .unwrap();
    assert!(matches!(finished, client::JobSignal::Finished { .. }), "{finished:?}");
    // The same token again while that job is retained: refused, nothing replaced.
    let e = c.summarize_text(ARTICLE, &opts(&[("handle_token", Value::from("reader_42"))])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.InvalidArgs", "{e}");
    assert_eq!(c.job_string(&expected, "State").await, "done");
    // Another connection with the same token gets its own path.
    let other = Client::connect(&bus.address).await;
    let theirs = other.summarize_text(ARTICLE, &opts(&[("handle_token", Value::from("reader_42"))])).await.unwrap();
    assert_ne!(theirs.as_str(), expected);
    for bad in ["", "a/b", "a.b", &"x".repeat(65)] {
        let e = c.summarize_text(ARTICLE, &opts(&[("handle_token", Value::from(bad))])).await.unwrap_err();
        assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.InvalidArgs", "{bad:?}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_file_is_file_not_found() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let c = Client::connect(&bus.address).await;
    let e = c.summarize_path(std::path::Path::new("/nonexistent/paper.pdf"), &opts(&[])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.FileNotFound", "{e}");
    assert!(e.to_string().contains("no such file"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_jobs_shows_the_callers_jobs_for_reattaching() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, &slow_config(""), &[]);
    let address = bus.address.clone();
    let first = Client::connect(&bus.address).await;
    let job = first.summarize_text(ARTICLE, &opts(&[("detach", Value::from(true)), ("method", Value::from("model"))])).await.unwrap();
    drop(first);
    // A new connection (the client restarted) finds it and waits for it through the CLI.
    let c = Client::connect(&bus.address).await;
    let jobs = client::summarizer(&c.conn).await.unwrap().list_jobs().await.unwrap();
    assert!(jobs.iter().any(|(p, _)| *p == job), "{jobs:?}");
    let job_str = job.to_string();
    tokio::task::spawn_blocking(move || {
        let list = ok(&seqgpt(&["jobs", "--json", "--address", &address], &[], None));
        let v: serde_json::Value = serde_json::from_str(&list).unwrap();
        assert!(v.as_array().unwrap().iter().any(|j| j["job"] == job_str.as_str()), "{list}");
        let waited = ok(&seqgpt(&["jobs", "--json", "--wait", &job_str, "--address", &address], &[], None));
        let v: serde_json::Value = serde_json::from_str(&waited).unwrap();
        assert_eq!(v["job"], job_str.as_str());
        assert_eq!(v["method"], "model");
        assert!(!v["summary"].as_str().unwrap().is_empty());
        let after = ok(&seqgpt(&["jobs", "--address", &address], &[], None));
        assert!(after.contains(&format!("{job_str}\tdone")), "{after}");
        let bad = seqgpt(&["jobs", "--wait", "/not/a/job", "--address", &address], &[], None);
        assert!(!bad.status.success());
    })
    .await
    .unwrap();
}

/// On a system-type bus with two users, a user's list holds only that user's jobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_system_bus_the_list_is_the_users_own() {
    let Some(bus) = Bus::start_system() else { return };
    let address = bus.address.clone();
    let _daemon = Daemon::start_with_env(&bus, "", &["--bus", "system"], &[("DBUS_SYSTEM_BUS_ADDRESS", &address)]);
    let root = Client::connect(&bus.address).await;
    let file = std::fs::File::open(sample("one-page.pdf")).unwrap();
    let job = root.summarize_fd(&file, &opts(&[("detach", Value::from(true))])).await.unwrap();
    let mine = client::summarizer(&root.conn).await.unwrap().list_jobs().await.unwrap();
    assert!(mine.iter().any(|(p, _)| *p == job), "{mine:?}");
    let (ok, out) = bus.busctl_as("nobody", &["call", NAME, PATH, NAME, "ListJobs"]);
    assert!(ok, "{out}");
    assert!(out.trim() == "a(os) 0", "nobody sees: {out}");
}

/// One daemon per machine: the CLI asks the system service when it is there and usable, the
/// session daemon otherwise, and `--session` / `--system` choose.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_prefers_the_system_service() {
    let Some(system) = Bus::start() else { return };
    let session = Bus::start().unwrap();
    let (sys_addr, ses_addr) = (system.address.clone(), session.address.clone());
    let _sys = Daemon::start_with_env(&system, "", &["--bus", "system"], &[("DBUS_SYSTEM_BUS_ADDRESS", &sys_addr)]);
    let _ses = Daemon::start(&session, "", &[]);
    let (sys_client, ses_client) = (Client::connect(&sys_addr).await, Client::connect(&ses_addr).await);
    // `seqgpt summarize` with these two buses as the system and the session bus; returns the
    // job's path.
    let run = |system: String, extra: &'static [&'static str]| {
        let session = ses_addr.clone();
        tokio::task::spawn_blocking(move || {
            let pdf = sample("one-page.pdf");
            let mut args = vec!["summarize", "--json", "--no-cache"];
            args.extend_from_slice(extra);
            args.push(pdf.to_str().unwrap());
            let env = [("DBUS_SYSTEM_BUS_ADDRESS", system.as_str()), ("DBUS_SESSION_BUS_ADDRESS", session.as_str())];
            let v: serde_json::Value = serde_json::from_str(&ok(&seqgpt(&args, &env, None))).unwrap();
            v["job"].as_str().unwrap().to_string()
        })
    };
    let list = |c: &Client| {
        let conn = c.conn.clone();
        async move { client::summarizer(&conn).await.unwrap().list_jobs().await.unwrap().into_iter().map(|(p, _)| p.to_string()).collect::<Vec<_>>() }
    };
    let by_default = run(sys_addr.clone(), &[]).await.unwrap();
    assert!(list(&sys_client).await.contains(&by_default), "the default went to the session daemon");
    let forced = run(sys_addr.clone(), &["--session"]).await.unwrap();
    assert!(list(&ses_client).await.contains(&forced), "--session did not reach the session daemon");
    // A system bus without the service: the session daemon answers.
    let empty = Bus::start().unwrap();
    let fallback = run(empty.address.clone(), &[]).await.unwrap();
    assert!(list(&ses_client).await.contains(&fallback), "no fallback to the session daemon");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_file_from_standard_input() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let address = bus.address.clone();
    tokio::task::spawn_blocking(move || {
        let pdf = sample("encrypted.pdf");
        let pdf = pdf.to_str().unwrap();
        // Through the daemon and in this process, from standard input and from a file.
        let remote = ok(&seqgpt(&["summarize", "--address", &address, "--password-file", "-", pdf], &[], Some(b"secret\n")));
        let local = ok(&seqgpt(&["summarize", "--local", "--password-file", "-", pdf], &[], Some(b"secret\n")));
        assert_eq!(remote, local);
        assert!(!remote.trim().is_empty());
        let file = std::env::temp_dir().join(format!("seqgpt-pw-{}", std::process::id()));
        std::fs::write(&file, "secret\n").unwrap();
        let from_file = seqgpt(&["summarize", "--local", "--password-file", file.to_str().unwrap(), pdf], &[], None);
        let _ = std::fs::remove_file(&file);
        assert_eq!(ok(&from_file), local);
        // A wrong one is the Encrypted error; both on standard input is refused.
        let wrong = seqgpt(&["summarize", "--address", &address, "--password-file", "-", pdf], &[], Some(b"guess\n"));
        assert!(!wrong.status.success());
        assert!(String::from_utf8_lossy(&wrong.stderr).contains("org.seqgpt.Summarizer1.Error.Encrypted"));
        let both = seqgpt(&["summarize", "--local", "--password-file", "-", "-"], &[], Some(b"secret\n"));
        assert!(!both.status.success());
        assert!(String::from_utf8_lossy(&both.stderr).contains("standard input"));
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classify_and_extract_from_the_command_line() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, &format!("model = \"{}\"\ndevice = \"cpu\"\n", tiny()), &[]);
    let address = bus.address.clone();
    tokio::task::spawn_blocking(move || {
        let text = b"The film was a delight from start to end.";
        let out = ok(&seqgpt(&["classify", "--labels", "positive,negative", "--json", "--address", &address, "-"], &[], Some(text)));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(v["labels"].is_array() && v["answer"].is_string(), "{out}");
        for l in v["labels"].as_array().unwrap() {
            assert!(l == "positive" || l == "negative", "{out}");
        }
        let out = ok(&seqgpt(&["extract", "--kinds", "person,city", "--json", "--address", &address, "-"], &[], Some(b"Ada lives in Paris.")));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(v["spans"].is_object() && v["answer"].is_string(), "{out}");
        // Without a kind to look for, clap refuses before anything is sent.
        let none = seqgpt(&["extract", "--address", &address, "-"], &[], Some(b"x"));
        assert!(!none.status.success());
    })
    .await
    .unwrap();
}

/// The interface file installed for gdbus-codegen and qdbusxml2cpp
/// (/usr/share/dbus-1/interfaces/) is what the daemon introspects: a change to the API that the
/// file misses fails here. `SEQGPT_BLESS=1` rewrites the file from the daemon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installed_interface_xml_is_what_the_daemon_introspects() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let c = Client::connect(&bus.address).await;
    let introspect = |path: String| {
        let conn = c.conn.clone();
        async move {
            let reply = conn.call_method(Some(NAME), path.as_str(), Some("org.freedesktop.DBus.Introspectable"), "Introspect", &()).await.unwrap();
            reply.body().deserialize::<String>().unwrap()
        }
    };
    let job = c.summarize_text(ARTICLE, &opts(&[])).await.unwrap();
    let service_xml = introspect(PATH.to_string()).await;
    let job_xml = introspect(job.to_string()).await;
    let interface = |xml: &str, name: &str| -> String {
        let start = xml.find(&format!("<interface name=\"{name}\">")).unwrap_or_else(|| panic!("{name} not in {xml}"));
        let end = start + xml[start..].find("</interface>").unwrap() + "</interface>".len();
        format!("  {}\n", &xml[start..end])
    };
    let generated = format!(
        "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n \
         \"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n\
         <!-- org.seqgpt.Summarizer1 (the service object /org/seqgpt/Summarizer1) and org.seqgpt.Job1\n     \
         (its job objects), interface version 2: docs/DBUS.md describes every member.\n     \
         Generated from the daemon's introspection; tests/dbus_api.rs keeps the two equal. -->\n\
         <node>\n{}{}</node>\n",
        interface(&service_xml, "org.seqgpt.Summarizer1"),
        interface(&job_xml, "org.seqgpt.Job1")
    );
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd/dbus/interfaces/org.seqgpt.Summarizer1.xml");
    if std::env::var_os("SEQGPT_BLESS").is_some() {
        std::fs::write(&file, &generated).unwrap();
    }
    let installed = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(installed == generated, "{} differs from the daemon's introspection (SEQGPT_BLESS=1 rewrites it):\n{generated}", file.display());
}

/// The C (GDBus) example builds with the system's GLib and gets the same summary as
/// `seqgpt summarize`; a refused document ends it with the error's name. The Python (Gio)
/// example runs too (its daemon-vanished path is in dbus_hostile.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_c_and_python_examples_summarize_a_pdf() {
    let has_gio = Command::new("pkg-config").args(["--exists", "gio-unix-2.0"]).status().is_ok_and(|s| s.success());
    let has_gi = Command::new("/usr/bin/python3").args(["-c", "import gi"]).status().is_ok_and(|s| s.success());
    if !(has_gio && has_gi) {
        assert!(std::env::var_os("CI").is_none(), "libglib2.0-dev or python3-gi is missing under CI (tests/deps.sh installs them)");
        eprintln!("SKIPPED: the GLib examples need libglib2.0-dev, pkg-config and python3-gi");
        return;
    }
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let address = bus.address.clone();
    let exe = bus.dir.path().join("summarize_gdbus");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    tokio::task::spawn_blocking(move || {
        let flags = Command::new("pkg-config").args(["--cflags", "--libs", "gio-unix-2.0"]).output().unwrap();
        let flags = String::from_utf8(flags.stdout).unwrap();
        let build = Command::new("cc")
            .args(["-std=c11", "-Wall", "-Werror", "-o"])
            .arg(&exe)
            .arg(root.join("examples/summarize_gdbus.c"))
            .args(flags.split_whitespace())
            .output()
            .unwrap();
        assert!(build.status.success(), "{}", String::from_utf8_lossy(&build.stderr));
        let pdf = sample("report-3pages.pdf");
        let expected = ok(&seqgpt(&["summarize", "--length", "short", "--address", &address, pdf.to_str().unwrap()], &[], None));
        let c = Command::new(&exe).args([pdf.to_str().unwrap(), "short", "--address", &address]).output().unwrap();
        let stderr = String::from_utf8_lossy(&c.stderr);
        assert!(c.status.success(), "{stderr}");
        assert_eq!(String::from_utf8_lossy(&c.stdout), expected);
        assert!(stderr.contains("method: extractive") && stderr.contains("anchored sentences"), "{stderr}");
        let refused = Command::new(&exe).args([sample("encrypted.pdf").to_str().unwrap(), "--address", &address]).output().unwrap();
        assert_eq!(refused.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&refused.stderr).contains("org.seqgpt.Summarizer1.Error.Encrypted"));
        let py = Command::new("/usr/bin/python3")
            .arg(root.join("examples/summarize_gio.py"))
            .args([pdf.to_str().unwrap(), "--length", "short", "--address", &address])
            .output()
            .unwrap();
        assert!(py.status.success(), "{}", String::from_utf8_lossy(&py.stderr));
        assert_eq!(String::from_utf8_lossy(&py.stdout), expected);
    })
    .await
    .unwrap();
}

/// Classification and extraction as jobs: a path at once, Cancel, the result in Finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classify_and_extract_as_jobs() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, &format!("model = \"{}\"\ndevice = \"cpu\"\n[service]\nmax_text_bytes = 4000\n", tiny()), &[]);
    let mut c = Client::connect(&bus.address).await;
    let s = client::summarizer(&c.conn).await.unwrap();
    let job = s.classify_job("The film was a delight.", &["positive", "negative"], &opts(&[("handle_token", Value::from("c1"))])).await.unwrap();
    assert!(job.as_str().ends_with("/c1"), "{job}");
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(answer, stats)) = events.last() else { panic!("{events:?}") };
    assert_eq!(stat_str(stats, "task"), "classify");
    let labels: Vec<String> = stats["labels"].try_clone().unwrap().try_into().unwrap();
    assert!(labels.iter().all(|l| l == "positive" || l == "negative"), "{labels:?}");
    assert_eq!(c.job_string(job.as_str(), "Summary").await, *answer);
    let job = s.extract_job("Ada lives in Paris.", &["person", "city"], &opts(&[("zoom", Value::from(1u32))])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(_, stats)) = events.last() else { panic!("{events:?}") };
    assert_eq!(stat_str(stats, "task"), "extract");
    let _spans: HashMap<String, Vec<String>> = stats["spans"].try_clone().unwrap().try_into().unwrap();
    let ignored: Vec<String> = stats["ignored_options"].try_clone().unwrap().try_into().unwrap();
    assert_eq!(ignored, ["zoom"]);
    // Cancel: the job ends once, in the state its last signal says.
    let job = s.classify_job(&"word ".repeat(700), &["a", "b"], &opts(&[])).await.unwrap();
    c.job(&job).await.cancel().await.unwrap();
    let events = c.events(job.as_str(), T).await;
    let state = c.job_string(job.as_str(), "State").await;
    match events.last() {
        Some(Event::Failed(n, _)) => {
            assert_eq!(n, "org.seqgpt.Summarizer1.Error.Cancelled");
            assert_eq!(state, "cancelled");
        }
        Some(Event::Finished(..)) => assert_eq!(state, "done"),
        other => panic!("{other:?}"),
    }
    assert_eq!(events.iter().filter(|e| e.is_terminal()).count(), 1);
    // Refused before a job exists: too large, or (below) no model.
    let e = s.classify_job(&"x".repeat(5000), &["a"], &opts(&[])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.seqgpt.Summarizer1.Error.TooLarge", "{e}");
    let plain = Bus::start().unwrap();
    let _extractive = Daemon::start(&plain, "", &[]);
    let c2 = Client::connect(&plain.address).await;
    let e = client::summarizer(&c2.conn).await.unwrap().extract_job("x", &["k"], &opts(&[])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.seqgpt.Summarizer1.Error.ModelUnavailable", "{e}");
}

/// `annotate_fd`: the job writes the annotated copy into the client's pipe before Finished, the
/// original bytes its prefix, one Highlight per anchor; what cannot carry it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotate_fd_writes_the_annotated_copy_into_the_clients_pipe() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let mut c = Client::connect(&bus.address).await;
    let pdf = sample("report-3pages.pdf");
    let original = std::fs::read(&pdf).unwrap();
    let (r, w) = rustix::pipe::pipe().unwrap();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(r), &mut got).unwrap();
        got
    });
    let file = std::fs::File::open(&pdf).unwrap();
    let fd = zbus::zvariant::Fd::from(std::os::fd::AsFd::as_fd(&w));
    let job = c.summarize_fd(&file, &opts(&[("annotate_fd", Value::Fd(fd)), ("no_cache", Value::from(true))])).await.unwrap();
    drop(w);
    let events = c.events(job.as_str(), Duration::from_secs(120)).await;
    let Some(Event::Finished(_, stats)) = events.last() else { panic!("{events:?}") };
    let warnings: Vec<String> = stats.get("warnings").map(|v| <Vec<String>>::try_from(v.try_clone().unwrap()).unwrap()).unwrap_or_default();
    assert!(warnings.is_empty(), "{warnings:?}");
    let anchors = <Vec<seqgpt_daemon::service::anchors::WireAnchor>>::try_from(stats["anchors"].try_clone().unwrap()).unwrap();
    let copy = reader.join().unwrap();
    assert!(copy.len() > original.len() && copy.starts_with(&original), "the original bytes are the copy's prefix");
    let doc = lopdf::Document::load_mem(&copy).unwrap();
    let highlights: usize = doc
        .get_pages()
        .values()
        .map(|&p| doc.get_page_annotations(p).unwrap().iter().filter(|a| a.get(b"Subtype").and_then(|s| s.as_name()).ok() == Some(b"Highlight")).count())
        .sum();
    assert!(!anchors.is_empty());
    assert_eq!(highlights, anchors.len(), "one highlight per summary sentence");

    // A text has no PDF to annotate; a read-only descriptor cannot take the copy.
    let (r2, _w2) = rustix::pipe::pipe().unwrap();
    let e = c.summarize_text("Some text. More text here.", &opts(&[("annotate_fd", Value::Fd(zbus::zvariant::Fd::from(std::os::fd::AsFd::as_fd(&r2))))])).await.unwrap_err();
    assert!(error_name(&e).ends_with("InvalidArgs"), "{e}");
    let file = std::fs::File::open(&pdf).unwrap();
    let e = c.summarize_fd(&file, &opts(&[("annotate_fd", Value::Fd(zbus::zvariant::Fd::from(std::os::fd::AsFd::as_fd(&r2))))])).await.unwrap_err();
    assert!(e.to_string().contains("not open for writing"), "{e}");
}
