//! The D-Bus service end to end: a private dbus-daemon per test, the real `seqgptd` binary,
//! the tiny random BLOOM fixture as its model (its text is gibberish: these tests check the
//! plumbing, not the quality). Skips with a message when dbus-daemon is missing, except in CI.

mod common;
mod dbus_harness;

use dbus_harness::*;
use std::time::Duration;
use zbus::zvariant::Value;

const T: Duration = Duration::from_secs(120);


/// A model config whose template forces several chunks and a reduce step, with short answers.
fn small_chunks_config() -> String {
    format!(
        r#"model = "{}"
device = "cpu"
[summarize]
template = "small"
[summarize.templates.small]
kind = "instruction"
prompt = "{{text}}\n\nSummary:"
reduce_prompt = "{{text}}\n\nSummary of the summaries:"
max_prompt_tokens = 160
max_new_tokens = [24, 24, 24]
"#,
        tiny()
    )
}


/// About 2,500 tokens of the tiny tokenizer: two long prompts.
fn long_text() -> String {
    long_article(5)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extractive_text_job_signals_properties_and_cache() {
    let Some(bus) = Bus::start() else { return };
    let daemon = Daemon::start(&bus, "", &[]);
    let mut c = Client::connect(&bus.address).await;
    assert_eq!(String::try_from(c.property(PATH, NAME, "DefaultMethod").await.unwrap()).unwrap(), "extractive");
    assert_eq!(String::try_from(c.property(PATH, NAME, "Model").await.unwrap()).unwrap(), "");

    let job = c.summarize_text(ARTICLE, &opts(&[("length", Value::from("short"))])).await.unwrap();
    assert!(job.as_str().starts_with("/org/seqgpt/Summarizer1/jobs/"));
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(summary, stats)) = events.last() else { panic!("{events:?}") };
    assert_eq!(stat_str(stats, "method"), "extractive");
    assert!(!stat_bool(stats, "cached"));
    assert!(summary.contains("ighthouse"), "{summary}");
    assert!(events.iter().any(|e| matches!(e, Event::Progress(s, 1, 1) if s == "rank")), "{events:?}");
    assert!(events.iter().any(|e| matches!(e, Event::Partial(0, t) if t == summary)), "{events:?}");
    // The state change is published before Finished.
    let done_at = events.iter().position(|e| matches!(e, Event::Changed(v) if v.iter().any(|(k, x)| k == "State" && x.contains("done"))));
    assert!(done_at.is_some_and(|i| i + 1 < events.len()), "{events:?}");
    assert_eq!(c.job_string(job.as_str(), "State").await, "done");
    assert_eq!(c.job_string(job.as_str(), "Summary").await, *summary);
    assert_eq!(c.job_string(job.as_str(), "Method").await, "extractive");
    assert_eq!(c.job_string(job.as_str(), "ErrorName").await, "");

    // The same request again is answered from the cache; no_cache bypasses it.
    let again = c.summarize_text(ARTICLE, &opts(&[("length", Value::from("short"))])).await.unwrap();
    let events = c.events(again.as_str(), T).await;
    let Some(Event::Finished(s2, stats2)) = events.last() else { panic!("{events:?}") };
    assert_eq!(s2, summary);
    assert!(stat_bool(stats2, "cached"), "second request not from the cache");
    let fresh = c.summarize_text(ARTICLE, &opts(&[("length", Value::from("short")), ("no_cache", Value::from(true))])).await.unwrap();
    let events = c.events(fresh.as_str(), T).await;
    let Some(Event::Finished(_, stats3)) = events.last() else { panic!("{events:?}") };
    assert!(!stat_bool(stats3, "cached"));
    assert_eq!(c.service_stat("cache_hits").await, 1);
    assert_eq!(c.service_stat("jobs_done").await, 3);
    assert!(daemon.state_dir.join("summaries/v2").exists());

    // Wait on a finished job returns its result at once.
    let (s, m) = c.job(&job).await.wait().await.unwrap();
    assert_eq!((s.as_str(), m.as_str()), (summary.as_str(), "extractive"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_their_error_names() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "[service]\nmax_text_bytes = 4000\n", &[]);
    let mut c = Client::connect(&bus.address).await;
    let invalid = "org.freedesktop.DBus.Error.InvalidArgs";
    for (options, why) in [
        (opts(&[("length", Value::from("tiny"))]), "bad value"),
        (opts(&[("length", Value::from(1u32))]), "wrong type"),
        (opts(&[("pages", Value::from("3-1"))]), "bad range"),
        (opts(&[("password", Value::from("x"))]), "password on text"),
    ] {
        let e = c.summarize_text(ARTICLE, &options).await.unwrap_err();
        assert_eq!(error_name(&e), invalid, "{why}: {e}");
    }
    let e = c.summarize_text(&"x".repeat(5000), &opts(&[])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.seqgpt.Summarizer1.Error.TooLarge");
    // No model: Classify, Extract and method=model are ModelUnavailable.
    let e = c.call(PATH, NAME, "Classify", &("good film", vec!["pos", "neg"])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.seqgpt.Summarizer1.Error.ModelUnavailable");
    let e = c.call(PATH, NAME, "Extract", &("I live in Paris", vec!["city"])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.seqgpt.Summarizer1.Error.ModelUnavailable");
    let job = c.summarize_text(ARTICLE, &opts(&[("method", Value::from("model"))])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    assert!(matches!(events.last(), Some(Event::Failed(n, _)) if n == "org.seqgpt.Summarizer1.Error.ModelUnavailable"), "{events:?}");
    // Empty text: the job fails with NoText; pages past the end: InvalidArgs.
    let job = c.summarize_text(" \n \n ", &opts(&[])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    assert!(matches!(events.last(), Some(Event::Failed(n, _)) if n == "org.seqgpt.Summarizer1.Error.NoText"), "{events:?}");
    assert_eq!(c.job_string(job.as_str(), "State").await, "failed");
    assert_eq!(c.job_string(job.as_str(), "ErrorName").await, "org.seqgpt.Summarizer1.Error.NoText");
    let job = c.summarize_text(ARTICLE, &opts(&[("pages", Value::from("2-3"))])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    assert!(matches!(events.last(), Some(Event::Failed(n, _)) if n == invalid), "{events:?}");
    // Wait on a failed job fails with the job's error.
    let e = c.job(&job).await.wait().await.unwrap_err();
    assert_eq!(error_name(&e), invalid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_job_streams_progress_and_partials_in_order() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, &small_chunks_config(), &[]);
    let mut c = Client::connect(&bus.address).await;
    assert_eq!(String::try_from(c.property(PATH, NAME, "Model").await.unwrap()).unwrap(), "tiny");
    assert_eq!(String::try_from(c.property(PATH, NAME, "Template").await.unwrap()).unwrap(), "small");
    assert_eq!(String::try_from(c.property(PATH, NAME, "Device").await.unwrap()).unwrap(), "cpu");

    let job = c.summarize_text(ARTICLE, &opts(&[])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(summary, stats)) = events.last() else { panic!("{events:?}") };
    assert_eq!(stat_str(stats, "method"), "model", "{stats:?}");
    let chunks = stat_u32(stats, "chunks");
    assert!(chunks > 1, "the small template should need several chunks");
    // Summarize progress counts up to the number of chunks, then the reduce step runs.
    let summarize: Vec<(u32, u32)> =
        events.iter().filter_map(|e| if let Event::Progress(s, d, t) = e { (s == "summarize").then_some((*d, *t)) } else { None }).collect();
    assert_eq!(summarize.first(), Some(&(0, chunks)), "{events:?}");
    assert_eq!(summarize.last(), Some(&(chunks, chunks)), "{events:?}");
    assert!(summarize.windows(2).all(|w| w[0].0 <= w[1].0));
    assert!(events.iter().any(|e| matches!(e, Event::Progress(s, _, _) if s == "reduce")), "{events:?}");
    // Partials of the chunks come before the reduce step's, which is numbered after them.
    let first_reduce = events.iter().position(|e| matches!(e, Event::Progress(s, _, _) if s == "reduce")).unwrap();
    assert!(events[..first_reduce].iter().all(|e| !matches!(e, Event::Partial(i, _) if *i >= chunks)));
    let last_index = events.iter().filter_map(|e| if let Event::Partial(i, _) = e { Some(*i) } else { None }).max().unwrap();
    assert!(last_index >= chunks, "no partial text from the reduce prompt: {events:?}");
    let streamed: String = events.iter().filter_map(|e| if let Event::Partial(i, t) = e { (*i == last_index).then_some(t.as_str()) } else { None }).collect();
    assert!(summary.starts_with(streamed.trim()), "streamed {streamed:?}, summary {summary:?}");
    assert_eq!(c.job_string(job.as_str(), "Method").await, "model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seqgpt_template_with_gibberish_falls_back_and_says_so() {
    let Some(bus) = Bus::start() else { return };
    // template = "auto": the tiny model's name is not a known family -> seqgpt's format.
    let _daemon = Daemon::start(&bus, &format!("model = \"{}\"\ndevice = \"cpu\"\n", tiny()), &[]);
    let mut c = Client::connect(&bus.address).await;
    assert_eq!(String::try_from(c.property(PATH, NAME, "Template").await.unwrap()).unwrap(), "seqgpt");
    let job = c.summarize_text(ARTICLE, &opts(&[("length", Value::from("short"))])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(summary, stats)) = events.last() else { panic!("{events:?}") };
    assert_eq!(stat_str(stats, "template"), "seqgpt");
    assert_eq!(stat_str(stats, "model"), "tiny");
    // The random model quotes no sentence of the document: the ranker answers, and says why.
    assert_eq!(stat_str(stats, "method"), "extractive");
    assert!(stat_str(stats, "fallback").contains("quotes no sentence"), "{stats:?}");
    assert!(!summary.is_empty());
    assert!(events.iter().any(|e| matches!(e, Event::Progress(s, _, _) if s == "summarize")));

    // SeqGPT's own tasks run through the model (the answers are gibberish, the shapes are not).
    let reply = c.call(PATH, NAME, "Classify", &("a good film", vec!["pos", "neg"])).await.unwrap();
    let (labels, _raw): (Vec<String>, String) = reply.body().deserialize().unwrap();
    assert!(labels.iter().all(|l| l == "pos" || l == "neg"));
    let reply = c.call(PATH, NAME, "Extract", &("I live in Paris", vec!["city", "person"])).await.unwrap();
    let (spans, _raw): (std::collections::HashMap<String, Vec<String>>, String) = reply.body().deserialize().unwrap();
    assert_eq!(spans.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_a_running_job() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, &slow_config(""), &[]);
    let mut c = Client::connect(&bus.address).await;
    let job = c.summarize_text(&long_text(), &opts(&[])).await.unwrap();
    c.job(&job).await.cancel().await.unwrap();
    let events = c.events(job.as_str(), T).await;
    assert!(
        matches!(events.last(), Some(Event::Failed(n, _)) if n == "org.seqgpt.Summarizer1.Error.Cancelled"),
        "{events:?}"
    );
    assert_eq!(c.job_string(job.as_str(), "State").await, "cancelled");
    assert_eq!(c.job_string(job.as_str(), "ErrorName").await, "org.seqgpt.Summarizer1.Error.Cancelled");
    // Cancelling again is harmless.
    c.job(&job).await.cancel().await.unwrap();
    assert_eq!(c.service_stat("jobs_cancelled").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_past_capacity() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, &slow_config("[service]\nmax_jobs = 2\n"), &[]);
    let mut c = Client::connect(&bus.address).await;
    let text = long_text();
    let a = c.summarize_text(&text, &opts(&[("no_cache", Value::from(true))])).await.unwrap();
    let b = c.summarize_text(&text, &opts(&[("no_cache", Value::from(true))])).await.unwrap();
    let e = c.summarize_text(&text, &opts(&[])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.LimitsExceeded", "{e}");
    let e = c.call(PATH, NAME, "Classify", &("x", vec!["a"])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.LimitsExceeded");
    assert_eq!(u32::try_from(c.property(PATH, NAME, "QueueLength").await.unwrap()).unwrap(), 2);
    assert_eq!(c.service_stat("busy_refusals").await, 2);
    // The accepted jobs still end (cancelled here, to keep the test short), and free their places.
    for j in [&a, &b] {
        c.job(&j).await.cancel().await.unwrap();
        let events = c.events(j.as_str(), T).await;
        assert!(events.last().is_some_and(Event::is_terminal));
    }
    let ok = c.summarize_text(ARTICLE, &opts(&[("method", Value::from("extractive"))])).await.unwrap();
    assert!(matches!(c.events(ok.as_str(), T).await.last(), Some(Event::Finished(..))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_cancels_its_jobs() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, &slow_config(""), &[]);
    let observer = Client::connect(&bus.address).await;
    let leaver = Client::connect(&bus.address).await;
    let job = leaver.summarize_text(&long_text(), &opts(&[])).await.unwrap();
    let kept = leaver
        .summarize_text(ARTICLE, &opts(&[("detach", Value::from(true)), ("method", Value::from("extractive"))]))
        .await
        .unwrap();
    leaver.conn.close().await.unwrap();
    let deadline = std::time::Instant::now() + T;
    loop {
        let state = observer.job_string(job.as_str(), "State").await;
        if state == "cancelled" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "job still {state} after its client left");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A detached job is not cancelled.
    let deadline = std::time::Instant::now() + T;
    while observer.job_string(kept.as_str(), "State").await != "done" {
        assert!(std::time::Instant::now() < deadline, "detached job did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(observer.service_stat("client_disconnects").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_fails_running_jobs_and_exits_cleanly() {
    let Some(bus) = Bus::start() else { return };
    // No grace: the running job is failed at once (tests/dbus_lifecycle.rs has the grace).
    let daemon = Daemon::start(&bus, &slow_config("[service]\nstop_grace_s = 0\n"), &[]);
    let mut c = Client::connect(&bus.address).await;
    let job = c.summarize_text(&long_text(), &opts(&[])).await.unwrap();
    // Let it start.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = daemon.terminate_async().await;
    assert!(status.0.success(), "exit status {:?}\n{}", status.0, status.1);
    let events = c.events(job.as_str(), T).await;
    assert!(
        matches!(events.last(), Some(Event::Failed(n, m)) if n == "org.seqgpt.Summarizer1.Error.ShuttingDown" && m.contains("shutting down")),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspection_names_the_contract() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let c = Client::connect(&bus.address).await;
    let xml: String = c.call(PATH, "org.freedesktop.DBus.Introspectable", "Introspect", &()).await.unwrap().body().deserialize().unwrap();
    for needle in ["org.seqgpt.Summarizer1", "SummarizeText", "Classify", "Extract", "QueueLength", "Stats", "Version"] {
        assert!(xml.contains(needle), "{needle} missing from:\n{xml}");
    }
    let job = c.summarize_text(ARTICLE, &opts(&[("detach", Value::from(true))])).await.unwrap();
    let xml: String = c.call(job.as_str(), "org.freedesktop.DBus.Introspectable", "Introspect", &()).await.unwrap().body().deserialize().unwrap();
    for needle in ["org.seqgpt.Job1", "Cancel", "Wait", "\"State\"", "\"Progress\"", "\"Summary\"", "\"Method\"", "Partial", "Finished", "Failed"] {
        assert!(xml.contains(needle), "{needle} missing from:\n{xml}");
    }
    let version: String = c.property(PATH, NAME, "Version").await.unwrap().try_into().unwrap();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
}

/// Under systemd: READY=1 once ready, WATCHDOG=1 at half of WATCHDOG_USEC (from the engine
/// loop with a model, from the runtime without), STATUS= lines, STOPPING=1 on SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sd_notify_ready_watchdog_status_stopping() {
    let Some(bus) = Bus::start() else { return };
    for config in [format!("model = \"{}\"\ndevice = \"cpu\"\n", tiny()), String::new()] {
        let socket_path = bus.dir.path().join(format!("notify-{}", config.len()));
        let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            let start = std::time::Instant::now();
            while start.elapsed() < Duration::from_secs(60) {
                if let Ok(n) = socket.recv(&mut buf) {
                    let msg = String::from_utf8_lossy(&buf[..n]).to_string();
                    let stop = msg == "STOPPING=1";
                    if tx.send(msg).is_err() || stop {
                        break;
                    }
                }
            }
        });
        let sock = socket_path.to_str().unwrap().to_string();
        let mut daemon = Daemon::start_with_env(&bus, &config, &[], &[("NOTIFY_SOCKET", &sock), ("WATCHDOG_USEC", "200000")]);
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let status = tokio::task::spawn_blocking(move || daemon.terminate()).await.unwrap();
        assert!(status.success());
        reader.join().unwrap();
        let msgs: Vec<String> = rx.try_iter().collect();
        assert_eq!(msgs.iter().filter(|m| *m == "READY=1").count(), 1, "{msgs:?}");
        let ready = msgs.iter().position(|m| m == "READY=1").unwrap();
        let pings = msgs.iter().filter(|m| *m == "WATCHDOG=1").count();
        assert!(pings >= 3, "{pings} watchdog pings in about a second at a 100 ms interval: {msgs:?}");
        assert!(msgs.iter().any(|m| m.starts_with("STATUS=") && m.contains("summaries")), "{msgs:?}");
        assert_eq!(msgs.last().map(String::as_str), Some("STOPPING=1"), "{msgs:?}");
        assert!(ready < msgs.len() - 1);
    }
}

fn sample(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pdf-samples").join(name)
}

fn failed_with(events: &[Event], name: &str) -> bool {
    matches!(events.last(), Some(Event::Failed(n, _)) if n == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdf_by_descriptor_and_by_path_with_cache() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let mut c = Client::connect(&bus.address).await;
    let file = std::fs::File::open(sample("report-3pages.pdf")).unwrap();
    let job = c.summarize_fd(&file, &opts(&[("length", Value::from("short"))])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(summary, stats)) = events.last() else { panic!("{events:?}") };
    assert_eq!(stat_u32(stats, "page_count"), 3);
    assert_eq!(stat_u32(stats, "edge_lines_removed"), 6);
    assert!(!summary.contains("Page 1 of 3"));
    // Extraction progress comes first: pages unknown, then all done.
    let extract: Vec<(u32, u32)> =
        events.iter().filter_map(|e| if let Event::Progress(s, d, t) = e { (s == "extract").then_some((*d, *t)) } else { None }).collect();
    assert_eq!(extract, vec![(0, 0), (3, 3)], "{events:?}");
    // The daemon read from offset 0 and left the caller's file position alone.
    use std::io::Seek;
    assert_eq!((&file).stream_position().unwrap(), 0);

    // The same document by path (session bus): a cache hit, answered at once.
    let job = c.summarize_path(&sample("report-3pages.pdf"), &opts(&[("length", Value::from("short"))])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(again, stats)) = events.last() else { panic!("{events:?}") };
    assert_eq!(again, summary);
    assert!(stat_bool(stats, "cached"));

    // A page range, and Chinese.
    let job = c.summarize_path(&sample("report-3pages.pdf"), &opts(&[("pages", Value::from("3"))])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(_, stats)) = events.last() else { panic!("{events:?}") };
    assert_eq!(stat_u32(stats, "pages"), 1);
    let job = c.summarize_path(&sample("chinese.pdf"), &opts(&[])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    assert!(matches!(events.last(), Some(Event::Finished(s, _)) if s.contains("图书馆") || s.contains("志愿者")), "{events:?}");

    // Paths must be absolute; descriptors must be regular files.
    let e = c.summarize_path(std::path::Path::new("one-page.pdf"), &opts(&[])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.InvalidArgs");
    let (sock, _other) = std::os::unix::net::UnixStream::pair().unwrap();
    let fd = zbus::zvariant::Fd::from(std::os::fd::AsFd::as_fd(&sock));
    let e = c.call(PATH, NAME, "SummarizeFd", &(fd, opts(&[]))).await.unwrap_err();
    assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.InvalidArgs", "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_bad_pdf_fails_with_its_error_name() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "[service]\nmax_pdf_bytes = 3000\n", &[]);
    let mut c = Client::connect(&bus.address).await;
    for (name, options, error) in [
        ("invalid.pdf", opts(&[]), "org.seqgpt.Summarizer1.Error.InvalidPdf"),
        ("encrypted.pdf", opts(&[]), "org.seqgpt.Summarizer1.Error.Encrypted"),
        ("encrypted.pdf", opts(&[("password", Value::from("wrong"))]), "org.seqgpt.Summarizer1.Error.Encrypted"),
        ("no-text.pdf", opts(&[]), "org.seqgpt.Summarizer1.Error.NoText"),
        ("one-page.pdf", opts(&[("pages", Value::from("2-4"))]), "org.freedesktop.DBus.Error.InvalidArgs"),
    ] {
        let file = std::fs::File::open(sample(name)).unwrap();
        let job = c.summarize_fd(&file, &options).await.unwrap();
        let events = c.events(job.as_str(), T).await;
        assert!(failed_with(&events, error), "{name}: {events:?}");
        assert_eq!(c.job_string(job.as_str(), "ErrorName").await, error);
        assert_eq!(c.job_string(job.as_str(), "State").await, "failed");
    }
    // The right password opens it.
    let file = std::fs::File::open(sample("encrypted.pdf")).unwrap();
    let job = c.summarize_fd(&file, &opts(&[("password", Value::from("secret"))])).await.unwrap();
    assert!(matches!(c.events(job.as_str(), T).await.last(), Some(Event::Finished(..))));
    // Over max_pdf_bytes: refused before a job exists.
    let big = std::fs::File::open(sample("report-3pages.pdf")).unwrap();
    let e = c.summarize_fd(&big, &opts(&[])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.seqgpt.Summarizer1.Error.TooLarge", "{e}");
    // A memfd holding a PDF is a regular file: accepted.
    let bytes = std::fs::read(sample("one-page.pdf")).unwrap();
    // SAFETY: memfd_create with a static, NUL-terminated name.
    let raw = unsafe { libc::memfd_create(c"pdf".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(raw >= 0);
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let mut memfd = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    std::io::Write::write_all(&mut memfd, &bytes).unwrap();
    let job = c.summarize_fd(&memfd, &opts(&[])).await.unwrap();
    assert!(matches!(c.events(job.as_str(), T).await.last(), Some(Event::Finished(..))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_system_bus_paths_are_refused() {
    let Some(bus) = Bus::start() else { return };
    // The daemon takes the private bus for the system bus: it decides by the bus it serves.
    let address = bus.address.clone();
    let _daemon = Daemon::start_with_env(&bus, "", &["--bus", "system"], &[("DBUS_SYSTEM_BUS_ADDRESS", &address)]);
    let mut c = Client::connect(&bus.address).await;
    let e = c.summarize_path(&sample("one-page.pdf"), &opts(&[])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.AccessDenied", "{e}");
    let file = std::fs::File::open(sample("one-page.pdf")).unwrap();
    let job = c.summarize_fd(&file, &opts(&[])).await.unwrap();
    assert!(matches!(c.events(job.as_str(), T).await.last(), Some(Event::Finished(..))));
    // Same Unix user, another connection: allowed to read the job (busctl in another process).
    let other = Client::connect(&bus.address).await;
    assert_eq!(other.job_string(job.as_str(), "State").await, "done");
    assert_eq!(String::try_from(c.property(PATH, NAME, "Stats").await.map(|v| {
        let d: std::collections::HashMap<String, zbus::zvariant::OwnedValue> = v.try_into().unwrap();
        d["bus"].try_clone().unwrap()
    }).unwrap()).unwrap(), "system");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seqgpt_summarize_talks_to_the_daemon() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let address = bus.address.clone();
    tokio::task::spawn_blocking(move || {
        let run = |args: &[&str], stdin: Option<&std::path::Path>| {
            let mut cmd = common::program(env!("CARGO_BIN_EXE_seqgpt"));
            cmd.arg("summarize").arg("--address").arg(&address).args(args);
            if let Some(f) = stdin {
                cmd.stdin(std::fs::File::open(f).unwrap());
            }
            cmd.output().unwrap()
        };
        let pdf = sample("one-page.pdf");
        let out = run(&["--json", "--length", "short", pdf.to_str().unwrap()], None);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["method"], "extractive");
        assert!(v["job"].as_str().unwrap().starts_with("/org/seqgpt/Summarizer1/jobs/"));
        assert_eq!(v["stats"]["pages"], 1);
        // Standard input goes to the daemon in a memfd; the same bytes hit the cache.
        let out = run(&["--json", "--length", "short", "-"], Some(&pdf));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(again["summary"], v["summary"]);
        assert_eq!(again["stats"]["cached"], true);
        // Where its sentences stand comes back too, whether the job's signals brought the
        // result or (a cache hit, ended before the client subscribed) its properties.
        assert!(!v["sentences"].as_array().unwrap().is_empty(), "{v}");
        assert_eq!(again["sentences"], v["sentences"]);
        // Errors keep their D-Bus names.
        let out = run(&[sample("encrypted.pdf").to_str().unwrap()], None);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("org.seqgpt.Summarizer1.Error.Encrypted"));
        let text = std::env::temp_dir().join(format!("seqgpt-cli-{}.txt", std::process::id()));
        std::fs::write(&text, ARTICLE).unwrap();
        let out = run(&["--text", "--style", "bullets", text.to_str().unwrap()], None);
        let _ = std::fs::remove_file(&text);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).lines().all(|l| l.starts_with("- ")));
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_job_says_where_its_sentences_stand() {
    let Some(bus) = Bus::start() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let mut c = Client::connect(&bus.address).await;
    let file = std::fs::File::open(sample("report-3pages.pdf")).unwrap();
    let job = c.summarize_fd(&file, &opts(&[("max_words", Value::from(60u32))])).await.unwrap();
    let events = c.events(job.as_str(), T).await;
    let Some(Event::Finished(summary, stats)) = events.last() else { panic!("{events:?}") };
    assert!(summary.split_whitespace().count() <= 60, "{summary}");
    type Anchors = Vec<seqgpt_daemon::service::anchors::WireAnchor>;
    let in_signal: Anchors = stats["anchors"].try_clone().unwrap().try_into().unwrap();
    let in_property: Anchors = c.property(job.as_str(), "org.seqgpt.Job1", "Anchors").await.unwrap().try_into().unwrap();
    assert_eq!(in_signal, in_property);
    assert!(!in_signal.is_empty());
    let pdf = std::fs::read(sample("report-3pages.pdf")).unwrap();
    let pages = seqgpt_pdf::extract_text(&pdf, &Default::default()).unwrap().pages;
    for (text, page, start, end, boxes) in &in_signal {
        assert!(summary.contains(text.as_str()), "{text} not in {summary}");
        let on_page: String = pages[*page as usize - 1].text.chars().skip(*start as usize).take((end - start) as usize).collect();
        assert_eq!(&on_page.split_whitespace().collect::<Vec<_>>().join(" "), text);
        let [x0, y0, x1, y1] = pages[*page as usize - 1].area.unwrap().map(f64::from);
        assert!(!boxes.is_empty() && boxes.iter().all(|b| b.0 >= x0 && b.1 >= y0 && b.2 <= x1 && b.3 <= y1), "{boxes:?}");
    }
    // A bad max_words is InvalidArgs.
    let e = c.summarize_text(ARTICLE, &opts(&[("max_words", Value::from(0u32))])).await.unwrap_err();
    assert_eq!(error_name(&e), "org.freedesktop.DBus.Error.InvalidArgs", "{e}");
}
