//! Load benchmark of the D-Bus service, and the end-to-end time of a one-page PDF summary.
//! Both are `#[ignore]`d (minutes of CPU); docs/BENCHMARKS.md ("D-Bus service") has the
//! numbers and the commands:
//!
//! ```text
//! CARGO_TARGET_DIR=... cargo test --release --test dbus_load -- --ignored --nocapture load_64_clients
//! SEQGPT_BENCH_MODEL=~/.cache/seqgpt-fast/bloom-560m-q8_0.gguf \
//!   cargo test --release --test dbus_load -- --ignored --nocapture one_page_pdf_end_to_end
//! ```
//!
//! The load: 64 clients, each on its own connection, send 20 requests each, one after the
//! other, retrying after LimitsExceeded. The mix: model summaries of distinct texts (the tiny
//! model, batched by the engine), extractive ones, repeats that the cache answers, and jobs
//! cancelled right after they were accepted. Every accepted job must end in Finished or Failed
//! (a job that does not within two minutes fails the test), and the daemon's resident memory,
//! sampled as the requests complete, must stay flat.

mod common;
mod dbus_harness;

use dbus_harness::*;
use seqgpt_engine::gguf::GgmlType;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zbus::zvariant::Value;

const CLIENTS: usize = 64;
const REQUESTS: usize = 20;

#[derive(Default, Debug)]
struct Tally {
    accepted: usize,
    busy: usize,
    finished: BTreeMap<String, usize>,
    failed: BTreeMap<String, usize>,
    cache_hits: usize,
    latencies_ms: Vec<u64>,
}

/// Request `r` of client `i`: (text, options, cancel right away).
fn request(i: usize, r: usize) -> (String, Vec<(&'static str, Value<'static>)>, bool) {
    let unique = format!(
        "Report {i}-{r}. The station recorded {} millimetres of rain in week {r}, and the river rose by {} centimetres. \
         Farmers in district {i} delayed the harvest. The council opened two shelters near the bridge. \
         Forecasts expect drier weather next week, and the roads should reopen by Friday.",
        10 + (i * 7 + r * 3) % 90,
        (i + r) % 40
    );
    match r % 10 {
        0 | 5 => (ARTICLE.to_string(), vec![("length", Value::from("short"))], false),
        1 | 6 => (unique, vec![("method", Value::from("extractive")), ("no_cache", Value::from(true))], false),
        7 => (unique, vec![("no_cache", Value::from(true))], true),
        _ => (unique, vec![("no_cache", Value::from(true))], false),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "load benchmark, minutes of CPU: cargo test --release --test dbus_load -- --ignored --nocapture load_64_clients"]
async fn load_64_clients() {
    let Some(bus) = Bus::start() else { return };
    let model = common::gguf("tiny", GgmlType::F16);
    let config = format!(
        r#"model = "{}"
device = "cpu"
[summarize]
template = "brief"
[summarize.templates.brief]
kind = "instruction"
prompt = "{{text}}\n\nSummary:"
max_new_tokens = [32, 32, 32]
"#,
        model.display()
    );
    let env: Vec<(String, String)> = std::env::var("SEQGPT_LOAD_DAEMON_ENV")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let daemon = Daemon::start_with_env(&bus, &config, &[], &env);
    let pid = daemon.child.id();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let completed = Arc::new(AtomicUsize::new(0));
    let samples: Arc<Mutex<Vec<(usize, u64)>>> = Arc::new(Mutex::new(vec![(0, rss_kib(pid))]));
    let started = Instant::now();

    let sampler = {
        let (completed, samples) = (completed.clone(), samples.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                samples.lock().unwrap().push((completed.load(Ordering::SeqCst), rss_kib(pid)));
            }
        })
    };

    let mut tasks = Vec::new();
    for i in 0..CLIENTS {
        let (address, tally, completed) = (bus.address.clone(), tally.clone(), completed.clone());
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(&address).await;
            for r in 0..REQUESTS {
                let (text, options, cancel) = request(i, r);
                let options: Options<'_> = options.into_iter().collect();
                let t0 = Instant::now();
                let mut backoff = 25u64;
                let job = loop {
                    match c.summarize_text(&text, &options).await {
                        Ok(job) => break job,
                        Err(e) if error_name(&e) == "org.freedesktop.DBus.Error.LimitsExceeded" => {
                            // What a polite client does when busy: back off, with jitter.
                            tally.lock().unwrap().busy += 1;
                            tokio::time::sleep(Duration::from_millis(backoff + ((i * 13 + r * 7) % 25) as u64)).await;
                            backoff = (backoff * 2).min(800);
                        }
                        Err(e) => panic!("client {i} request {r}: {e}"),
                    }
                };
                tally.lock().unwrap().accepted += 1;
                if cancel {
                    let _ = c.job(&job).await.cancel().await;
                }
                let events = c.events(job.as_str(), Duration::from_secs(120)).await;
                let ms = t0.elapsed().as_millis() as u64;
                let mut t = tally.lock().unwrap();
                match events.last() {
                    Some(Event::Finished(_, stats)) => {
                        *t.finished.entry(stat_str(stats, "method")).or_default() += 1;
                        if stat_bool(stats, "cached") {
                            t.cache_hits += 1;
                        }
                        t.latencies_ms.push(ms);
                    }
                    Some(Event::Failed(name, _)) => *t.failed.entry(name.clone()).or_default() += 1,
                    other => panic!("job {job} ended with {other:?}"),
                }
                drop(t);
                completed.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for t in tasks {
        t.await.expect("a client task panicked");
    }
    let wall = started.elapsed();
    sampler.abort();
    let samples = samples.lock().unwrap().clone();
    let tally = tally.lock().unwrap();

    let total = CLIENTS * REQUESTS;
    let ended: usize = tally.finished.values().sum::<usize>() + tally.failed.values().sum::<usize>();
    assert_eq!(tally.accepted, total, "every request is eventually accepted");
    assert_eq!(ended, tally.accepted, "every accepted job ends: {tally:?}");
    assert!(tally.failed.keys().all(|k| k == "org.seqgpt.Summarizer1.Error.Cancelled"), "unexpected failures: {:?}", tally.failed);

    // Memory: median RSS between 200 and 400 completed requests vs after 1,000.
    let median = |lo: usize, hi: usize| {
        let mut v: Vec<u64> = samples.iter().filter(|(c, _)| *c >= lo && *c < hi).map(|(_, r)| *r).collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    };
    let early = median(200, 400);
    let late = median(1000, total + 1);
    let peak = samples.iter().map(|(_, r)| *r).max().unwrap_or(0);
    let mut lat = tally.latencies_ms.clone();
    lat.sort_unstable();
    let pct = |p: f64| lat.get(((lat.len() as f64 - 1.0) * p) as usize).copied().unwrap_or(0);
    println!(
        "{}",
        serde_json::json!({
            "clients": CLIENTS, "requests_per_client": REQUESTS, "requests": total,
            "wall_s": (wall.as_secs_f64() * 10.0).round() / 10.0,
            "accepted": tally.accepted, "busy_refusals": tally.busy,
            "finished": tally.finished, "failed": tally.failed, "cache_hits": tally.cache_hits,
            "latency_ms": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": lat.last()},
            "rss_kib": {"start": samples[0].1, "median_200_400": early, "median_after_1000": late, "peak": peak},
        })
    );
    println!("rss samples (completed requests, KiB):");
    // (printed as "rss <completed> <KiB>" lines)
    for (c, r) in samples.iter().step_by((samples.len() / 40).max(1)) {
        println!("rss {c:5} {r}");
    }
    let probe = Client::connect(&bus.address).await;
    println!(
        "daemon Stats: jobs_done {}, jobs_cancelled {}, busy_refusals {}, cache_hits {}, peak_rss_bytes {}",
        probe.service_stat("jobs_done").await,
        probe.service_stat("jobs_cancelled").await,
        probe.service_stat("busy_refusals").await,
        probe.service_stat("cache_hits").await,
        probe.service_stat("peak_rss_bytes").await
    );
    assert!(late <= early + early / 5 + 8 * 1024, "RSS grew from {early} KiB to {late} KiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a model: SEQGPT_BENCH_MODEL=FILE.gguf cargo test --release --test dbus_load -- --ignored --nocapture one_page_pdf_end_to_end"]
async fn one_page_pdf_end_to_end() {
    let model = std::env::var_os("SEQGPT_BENCH_MODEL").expect("SEQGPT_BENCH_MODEL: the GGUF file to run (this test is ignored otherwise)");
    let Some(bus) = Bus::start() else { return };
    let pdf = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pdf-samples/one-page.pdf");
    let t_start = Instant::now();
    let daemon = Daemon::start(&bus, &format!("model = \"{}\"\ndevice = \"cpu\"\n", std::path::Path::new(&model).display()), &[]);
    let startup = t_start.elapsed();
    let mut c = Client::connect(&bus.address).await;
    let mut rows = Vec::new();
    for (label, extra) in [("model (seqgpt template)", None), ("extractive", Some("extractive")), ("cache hit", Some("cached"))] {
        let file = std::fs::File::open(&pdf).unwrap();
        let mut options = opts(&[]);
        match extra {
            Some("extractive") => {
                options.insert("method", Value::from("extractive"));
                options.insert("no_cache", Value::from(true));
            }
            Some("cached") => {}
            _ => {}
        }
        let t0 = Instant::now();
        let job = c.summarize_fd(&file, &options).await.unwrap();
        let events = c.events(job.as_str(), Duration::from_secs(900)).await;
        let wall = t0.elapsed();
        let Some(Event::Finished(summary, stats)) = events.last() else { panic!("{events:?}") };
        rows.push(serde_json::json!({
            "request": label, "wall_s": (wall.as_secs_f64() * 100.0).round() / 100.0,
            "method": stat_str(stats, "method"), "cached": stat_bool(stats, "cached"),
            "chunks": stat_u32(stats, "chunks"), "fallback": stat_str(stats, "fallback"),
            "prompt_tokens": u64::try_from(stats["prompt_tokens"].try_clone().unwrap()).unwrap(),
            "generated_tokens": u64::try_from(stats["generated_tokens"].try_clone().unwrap()).unwrap(),
            "extract_ms": u64::try_from(stats["extract_ms"].try_clone().unwrap()).unwrap(),
            "summary_chars": summary.chars().count(),
        }));
    }
    let rss = rss_kib(daemon.child.id());
    println!("{}", serde_json::json!({"model": model.to_string_lossy(), "startup_s": startup.as_secs_f64(), "rss_kib": rss, "runs": rows}));
}
