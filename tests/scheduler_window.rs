//! The scheduler's rules on tokio's paused clock, with the model-free fake backend: the
//! window and its trigger, buckets, backpressure, continuous batching, cancellation, the
//! memory guard, failures and shutdown. Virtual time only moves when everything waits on a
//! timer; the fake's work takes none.

use seqgpt_engine::generate::{FinishReason, GenerationConfig};
use seqgpt_daemon::scheduler::fake::{FakeBackend, FakeLog};
use seqgpt_daemon::scheduler::{
    Event, JobHandle, MemoryModel, Planned, Request, Scheduler, SchedulerConfig, SchedulerError, StartOptions,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::{sleep, Instant};

const MS: Duration = Duration::from_millis(1);

fn start(cfg: SchedulerConfig, fake: FakeBackend) -> (Scheduler, Arc<Mutex<FakeLog>>) {
    let log = fake.log();
    (Scheduler::start_with(fake, None, cfg, StartOptions::default()).unwrap(), log)
}

fn req(prompt_len: usize, max_new: usize) -> Request {
    Request::tokens(vec![5; prompt_len], GenerationConfig { max_new_tokens: max_new, ..Default::default() })
}

/// Reads events up to `Started` (checking that `Queued` came first) and returns its fields.
async fn started(job: &mut JobHandle) -> (usize, usize, bool, Duration) {
    assert!(matches!(job.next().await, Some(Event::Queued { .. })), "the first event is Queued");
    match job.next().await {
        Some(Event::Started { bucket, batch_size, joined, waited }) => (bucket, batch_size, joined, waited),
        other => panic!("expected Started, got {other:?}"),
    }
}

/// Reads events to the terminal one; checks that nothing follows it.
async fn outcome(job: &mut JobHandle) -> Result<seqgpt_daemon::scheduler::Completion, SchedulerError> {
    loop {
        match job.next().await.expect("a terminal event before the stream ends") {
            Event::Finished(c) => {
                assert!(job.next().await.is_none(), "nothing after the terminal event");
                return Ok(c);
            }
            Event::Failed(e) => {
                assert!(job.next().await.is_none(), "nothing after the terminal event");
                return Err(e);
            }
            _ => {}
        }
    }
}

#[tokio::test(start_paused = true)]
async fn three_arrivals_run_at_the_next_tick() {
    let (s, log) = start(SchedulerConfig::default(), FakeBackend::new());
    let t0 = Instant::now();
    sleep(10 * MS).await;
    let mut jobs: Vec<JobHandle> = (0..3).map(|_| s.submit(req(4, 3)).unwrap()).collect();
    for j in &mut jobs {
        assert_eq!(started(j).await, (0, 3, false, 40 * MS));
    }
    assert_eq!(t0.elapsed(), 50 * MS);
    for j in &mut jobs {
        let c = outcome(j).await.unwrap();
        assert_eq!(c.ids.len(), 3);
        assert_eq!(c.finish, FinishReason::Length);
        assert_eq!(c.waited, 40 * MS);
    }
    assert_eq!(log.lock().unwrap().admits, vec![vec![1, 2, 3]]);
    assert_eq!(s.stats().finished, 3);
}

#[tokio::test(start_paused = true)]
async fn two_arrivals_wait_for_the_tick_after_min_batch_or_the_deadline() {
    let (s, _) = start(SchedulerConfig::default(), FakeBackend::new());
    sleep(10 * MS).await;
    let mut a = s.submit(req(4, 1)).unwrap();
    sleep(20 * MS).await;
    let mut b = s.submit(req(4, 1)).unwrap();
    // Two waiting at the 50 ms tick is not enough: they run at the oldest's deadline.
    assert_eq!(started(&mut a).await, (0, 2, false, 100 * MS));
    assert_eq!(started(&mut b).await, (0, 2, false, 80 * MS));
}

#[tokio::test(start_paused = true)]
async fn a_lone_arrival_runs_at_max_wait() {
    let (s, _) = start(SchedulerConfig::default(), FakeBackend::new());
    let t0 = Instant::now();
    let mut a = s.submit(req(4, 2)).unwrap();
    assert_eq!(started(&mut a).await, (0, 1, false, 100 * MS));
    assert_eq!(t0.elapsed(), 100 * MS);
    outcome(&mut a).await.unwrap();
    // Off the tick grid as well: the deadline is the arrival + 100 ms.
    sleep(137 * MS).await;
    let mut b = s.submit(req(4, 2)).unwrap();
    assert_eq!(started(&mut b).await, (0, 1, false, 100 * MS));
}

#[tokio::test(start_paused = true)]
async fn without_the_window_a_request_runs_at_once() {
    let (s, _) = start(SchedulerConfig::default().without_window(), FakeBackend::new());
    sleep(10 * MS).await;
    let mut a = s.submit(req(4, 2)).unwrap();
    assert_eq!(started(&mut a).await, (0, 1, false, Duration::ZERO));
}

#[tokio::test(start_paused = true)]
async fn the_ninth_request_in_a_full_queue_is_busy() {
    let (s, log) = start(SchedulerConfig::default(), FakeBackend::new());
    sleep(10 * MS).await;
    let mut jobs = Vec::new();
    for i in 0..8 {
        let mut j = s.submit(req(4, 2)).unwrap();
        assert_eq!(j.next().await, Some(Event::Queued { position: i + 1 }));
        jobs.push(j);
    }
    assert_eq!(s.queue_len(), 8);
    assert_eq!(s.submit(req(4, 2)).err(), Some(SchedulerError::Busy));
    assert_eq!(s.stats().busy, 1);
    // At the tick all 8 start (one batch of bucket <=32): the queue has room again.
    for j in &mut jobs {
        assert!(matches!(j.next().await, Some(Event::Started { batch_size: 8, .. })));
    }
    assert_eq!(s.queue_len(), 0);
    let mut late = s.submit(req(4, 2)).unwrap();
    for j in &mut jobs {
        outcome(j).await.unwrap();
    }
    outcome(&mut late).await.unwrap();
    assert_eq!(log.lock().unwrap().admits[0].len(), 8);
    assert_eq!(s.stats().accepted, 9);
}

#[tokio::test(start_paused = true)]
async fn batches_form_by_bucket_oldest_first() {
    let (s, log) = start(SchedulerConfig::default(), FakeBackend::new());
    sleep(10 * MS).await;
    // Lengths and their buckets: 40 -> 1, 10 -> 0, 200 -> 2, 20 -> 0, 100 -> 1, 30 -> 0, 129 -> 2.
    let lens = [40, 10, 200, 20, 100, 30, 129];
    let mut jobs: Vec<JobHandle> = lens.iter().map(|&n| s.submit(req(n, 2)).unwrap()).collect();
    let mut seen = Vec::new();
    for j in &mut jobs {
        let (bucket, batch_size, joined, _) = started(j).await;
        assert!(!joined);
        seen.push((bucket, batch_size));
    }
    assert_eq!(seen, [(1, 2), (0, 3), (2, 2), (0, 3), (1, 2), (0, 3), (2, 2)]);
    for j in &mut jobs {
        outcome(j).await.unwrap();
    }
    // The oldest's bucket first; then, once the engine is idle, the next oldest's.
    assert_eq!(log.lock().unwrap().admits, vec![vec![1, 5], vec![2, 4, 6], vec![3, 7]]);
}

#[tokio::test(start_paused = true)]
async fn a_running_batch_admits_joiners_of_its_bucket() {
    let (s, log) = start(SchedulerConfig::default(), FakeBackend::new());
    let mut a = s.submit(req(4, 1_000_000)).unwrap();
    assert_eq!(started(&mut a).await, (0, 1, false, 100 * MS));
    assert!(matches!(a.next().await, Some(Event::Tokens { .. })));
    let mut b = s.submit(req(8, 3)).unwrap();
    let mut c = s.submit(req(300, 3)).unwrap(); // another bucket: waits for the batch to drain
    assert_eq!(started(&mut b).await, (0, 2, true, Duration::ZERO));
    let done = outcome(&mut b).await.unwrap();
    assert_eq!(done.ids, vec![2001, 2002, 2003]);
    assert_eq!(s.queue_len(), 1);
    a.cancel();
    assert_eq!(outcome(&mut a).await.err(), Some(SchedulerError::Cancelled));
    assert_eq!(started(&mut c).await.0, 2);
    outcome(&mut c).await.unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log.admits, vec![vec![1], vec![2], vec![3]]);
    assert_eq!(log.cancelled, vec![1]);
}

#[tokio::test(start_paused = true)]
async fn joins_stop_once_a_request_of_another_bucket_was_overtaken_enough() {
    let cfg = SchedulerConfig { max_overtakes: 2, ..Default::default() };
    let (s, log) = start(cfg, FakeBackend::new());
    let mut a = s.submit(req(4, 1_000_000)).unwrap();
    started(&mut a).await;
    assert!(matches!(a.next().await, Some(Event::Tokens { .. })));
    let mut c = s.submit(req(300, 3)).unwrap(); // bucket 2: cannot join a's batch
    let mut d: Vec<JobHandle> = (0..3).map(|_| s.submit(req(4, 3)).unwrap()).collect();
    // Two of a's bucket overtake c; the third may not.
    for j in &mut d[..2] {
        assert_eq!(started(j).await.2, true);
        outcome(j).await.unwrap();
    }
    for _ in 0..20 {
        assert!(matches!(a.next().await, Some(Event::Tokens { .. })));
    }
    assert!(matches!(d[2].next().await, Some(Event::Queued { position: 4 })));
    assert!(d[2].events().try_recv().is_err(), "the third did not join");
    a.cancel();
    assert_eq!(outcome(&mut a).await.err(), Some(SchedulerError::Cancelled));
    // The batch drained: c, the oldest, runs next, then the third.
    assert_eq!(started(&mut c).await.0, 2);
    outcome(&mut c).await.unwrap();
    assert!(matches!(d[2].next().await, Some(Event::Started { joined: false, .. })));
    outcome(&mut d[2]).await.unwrap();
    assert_eq!(log.lock().unwrap().admits, vec![vec![1], vec![3, 4], vec![2], vec![5]]);
}

/// A (10 + 40 tokens) runs alone; B (10 + 20) arrives once A has generated 30: joining would
/// make the batch's span 60 positions for rows that need at most 50.
async fn late_joiner(max_padding_ratio: f64) -> bool {
    let cfg = SchedulerConfig { max_padding_ratio, ..Default::default() };
    let (s, _) = start(cfg, FakeBackend::new().with_step_delay(5 * MS));
    let mut a = s.submit(req(10, 40)).unwrap();
    started(&mut a).await;
    for _ in 0..30 {
        assert!(matches!(a.next().await, Some(Event::Tokens { .. })));
    }
    let mut b = s.submit(req(10, 20)).unwrap();
    let joined = started(&mut b).await.2;
    outcome(&mut a).await.unwrap();
    outcome(&mut b).await.unwrap();
    joined
}

#[tokio::test(start_paused = true)]
async fn joins_stop_when_padding_would_dominate_the_batch() {
    assert!(late_joiner(2.0).await, "within the default ratio the late request joins");
    assert!(!late_joiner(1.1).await, "past the ratio it waits for the batch to drain");
}

#[tokio::test(start_paused = true)]
async fn cancel_mid_generation_frees_the_slot() {
    let (s, log) = start(SchedulerConfig::default(), FakeBackend::new());
    sleep(10 * MS).await;
    // Prompts over 128 tokens: bucket 2, batches of 2.
    let mut a = s.submit(req(150, 1_000_000)).unwrap();
    let mut b = s.submit(req(150, 1_000_000)).unwrap();
    let mut c = s.submit(req(150, 4)).unwrap();
    assert_eq!(started(&mut a).await, (2, 2, false, 40 * MS));
    assert_eq!(started(&mut b).await, (2, 2, false, 40 * MS));
    assert!(matches!(c.next().await, Some(Event::Queued { position: 3 })));
    for _ in 0..5 {
        assert!(matches!(a.next().await, Some(Event::Tokens { .. })));
    }
    assert_eq!(s.queue_len(), 1, "the batch is full: c waits");
    a.cancel();
    assert_eq!(outcome(&mut a).await.err(), Some(SchedulerError::Cancelled));
    // c takes a's row at the next token boundary.
    assert!(matches!(c.next().await, Some(Event::Started { bucket: 2, batch_size: 2, joined: true, .. })));
    assert_eq!(outcome(&mut c).await.unwrap().ids.len(), 4);
    drop(b); // a caller that goes away cancels its request
    loop {
        let st = s.stats();
        if st.running == 0 {
            assert_eq!(st.cancelled, 2);
            break;
        }
        tokio::task::yield_now().await;
    }
    let log = log.lock().unwrap();
    assert_eq!(log.max_rows, 2);
    assert_eq!(log.cancelled, vec![1, 2]);
}

#[tokio::test(start_paused = true)]
async fn cancelling_or_dropping_a_waiting_request_removes_it() {
    let (s, log) = start(SchedulerConfig::default(), FakeBackend::new());
    let a = s.submit(req(4, 2)).unwrap();
    let mut b = s.submit(req(4, 2)).unwrap();
    assert_eq!(s.queue_len(), 2);
    drop(a);
    assert_eq!(s.queue_len(), 1);
    b.cancel();
    assert!(matches!(b.next().await, Some(Event::Queued { .. })));
    assert_eq!(b.next().await, Some(Event::Failed(SchedulerError::Cancelled)));
    assert_eq!(b.next().await, None);
    assert_eq!(s.queue_len(), 0);
    sleep(500 * MS).await;
    assert!(log.lock().unwrap().admits.is_empty());
    assert_eq!(s.stats().cancelled, 2);
}

/// A fake model whose sequences (4 prompt + 4 new tokens) fit 2 at a time in 1 MiB.
fn heavy_model() -> MemoryModel {
    MemoryModel { n_layer: 250, hidden: 100, n_head: 1, ffn: 400, vocab: 16, kv_elem_bytes: 1, act_elem_bytes: 1 }
}

#[tokio::test(start_paused = true)]
async fn the_memory_guard_shrinks_batches_and_refuses_what_never_fits() {
    let m = heavy_model();
    let p = Planned { prompt_len: 4, max_new: 4, beams: 1 };
    let empty = Default::default();
    assert!(m.estimate(&empty, &[p; 2]).peak_bytes <= 1 << 20);
    assert!(m.estimate(&empty, &[p; 3]).peak_bytes > 1 << 20);

    let cfg = SchedulerConfig { memory_budget_mb: 1, ..Default::default() };
    let (s, log) = start(cfg, FakeBackend::new().with_memory_model(m));
    let err = s.submit(req(4, 100_000)).err().unwrap();
    assert!(matches!(&err, SchedulerError::TooLarge(msg) if msg.contains("MiB")), "{err}");
    assert_eq!(s.stats().refused, 1);

    sleep(10 * MS).await;
    let mut jobs: Vec<JobHandle> = (0..5).map(|_| s.submit(req(4, 4)).unwrap()).collect();
    for j in &mut jobs {
        outcome(j).await.unwrap();
    }
    let log = log.lock().unwrap();
    assert_eq!(log.admits, vec![vec![1, 2], vec![3, 4], vec![5]]);
    assert_eq!(log.max_rows, 2);
    assert!(s.stats().shrunk >= 2);
}

#[tokio::test(start_paused = true)]
async fn context_length_and_malformed_prompts_are_refused_at_once() {
    let (s, _) = start(SchedulerConfig::default(), FakeBackend::new().with_context_length(64));
    assert!(matches!(s.submit(req(60, 5)).err(), Some(SchedulerError::TooLarge(_))));
    assert!(matches!(s.submit(req(0, 5)).err(), Some(SchedulerError::Invalid(_))));
    assert!(matches!(s.submit(Request::tokens(vec![99], Default::default())).err(), Some(SchedulerError::Invalid(_))));
    assert!(matches!(s.submit(Request::text("hi", Default::default())).err(), Some(SchedulerError::Invalid(_))));
    assert_eq!(s.stats().refused, 4);
    assert_eq!(s.stats().accepted, 0);
}

#[tokio::test(start_paused = true)]
async fn beam_requests_run_alone() {
    let (s, log) = start(SchedulerConfig::default(), FakeBackend::new());
    sleep(10 * MS).await;
    let beam = GenerationConfig { num_beams: 2, max_new_tokens: 3, ..Default::default() };
    let mut a = s.submit(Request::tokens(vec![5; 4], beam)).unwrap();
    let mut b = s.submit(req(4, 2)).unwrap();
    let mut c = s.submit(req(4, 2)).unwrap();
    assert_eq!(started(&mut a).await, (0, 1, false, 40 * MS));
    // No token events from beam search: straight to the result.
    assert_eq!(outcome(&mut a).await.unwrap().ids, vec![1001, 1002, 1003]);
    outcome(&mut b).await.unwrap();
    outcome(&mut c).await.unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log.solos, vec![1]);
    assert_eq!(log.admits, vec![vec![2, 3]]);
}

#[tokio::test(start_paused = true)]
async fn an_engine_error_fails_its_batch_and_the_scheduler_goes_on() {
    let (s, _) = start(SchedulerConfig::default(), FakeBackend::new().failing_on_step(1));
    sleep(10 * MS).await;
    let mut jobs: Vec<JobHandle> = (0..3).map(|_| s.submit(req(4, 10)).unwrap()).collect();
    for j in &mut jobs {
        assert!(matches!(outcome(j).await, Err(SchedulerError::Engine(m)) if m.contains("fake failure")));
    }
    let mut next = s.submit(req(4, 3)).unwrap();
    assert_eq!(outcome(&mut next).await.unwrap().ids.len(), 3);
    assert_eq!(s.stats().failed, 3);
}

#[tokio::test(start_paused = true)]
async fn shutdown_ends_every_job_and_refuses_new_ones() {
    let (s, _) = start(SchedulerConfig::default(), FakeBackend::new());
    sleep(10 * MS).await;
    let mut running: Vec<JobHandle> = (0..3).map(|_| s.submit(req(4, 1_000_000)).unwrap()).collect();
    for j in &mut running {
        started(j).await;
    }
    let mut waiting = s.submit(req(300, 3)).unwrap();
    s.shutdown().await;
    for j in &mut running {
        assert_eq!(outcome(j).await.err(), Some(SchedulerError::ShuttingDown));
    }
    assert_eq!(outcome(&mut waiting).await.err(), Some(SchedulerError::ShuttingDown));
    assert_eq!(s.submit(req(4, 1)).err(), Some(SchedulerError::ShuttingDown));
    s.shutdown().await; // twice is fine
}

#[tokio::test(start_paused = true)]
async fn dropping_the_scheduler_shuts_it_down() {
    let (s, _) = start(SchedulerConfig::default(), FakeBackend::new());
    let mut a = s.submit(req(4, 2)).unwrap();
    drop(s);
    assert_eq!(outcome(&mut a).await.err(), Some(SchedulerError::ShuttingDown));
}

#[tokio::test(start_paused = true)]
async fn the_watchdog_hook_runs_while_idle_and_while_busy() {
    let ticks = Arc::new(AtomicUsize::new(0));
    let t = ticks.clone();
    let opts = StartOptions {
        on_tick: Some(Box::new(move || {
            t.fetch_add(1, Ordering::SeqCst);
        })),
        ..Default::default()
    };
    let s = Scheduler::start_with(FakeBackend::new(), None, SchedulerConfig::default(), opts).unwrap();
    sleep(1000 * MS).await;
    // Heartbeats are not awaited: give the engine thread (real) time to take them.
    tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(100))).await.unwrap();
    let idle = ticks.load(Ordering::SeqCst);
    assert!(idle >= 15, "about one call per 50 ms tick while idle, got {idle}");
    let mut a = s.submit(req(4, 20)).unwrap();
    outcome(&mut a).await.unwrap();
    assert!(ticks.load(Ordering::SeqCst) >= idle + 20, "one call per operation");
}

#[test]
fn config_reads_the_scheduler_table() {
    let text = r#"
        [daemon]
        model = "x.gguf"

        [scheduler]
        queue_capacity = 16
        tick_ms = 20
        memory_budget_mb = 512

        [[scheduler.buckets]]
        max_tokens = 64
        batch = 6
        [[scheduler.buckets]]
        batch = 1
    "#;
    let c = SchedulerConfig::from_toml(text).unwrap();
    assert_eq!((c.queue_capacity, c.tick_ms, c.min_batch, c.max_wait_ms), (16, 20, 3, 100));
    assert_eq!(c.fixed_budget_bytes(), Some(512 << 20));
    assert_eq!(c.buckets.len(), 2);
    assert_eq!(c.buckets[1].max_tokens, None);
    assert_eq!(SchedulerConfig::from_toml("").unwrap(), SchedulerConfig::default());
    for bad in [
        "[scheduler]\nqueue_capacity = 0",
        "[scheduler]\ntick_ms = 0",
        "[scheduler]\nmemory_fraction = 1.5",
        "[scheduler]\nunknown_key = 1",
        "[[scheduler.buckets]]\nmax_tokens = 64\nbatch = 0",
        "[[scheduler.buckets]]\nbatch = 2\n[[scheduler.buckets]]\nmax_tokens = 64\nbatch = 2",
        "[[scheduler.buckets]]\nmax_tokens = 64\nbatch = 2\n[[scheduler.buckets]]\nmax_tokens = 32\nbatch = 2",
    ] {
        assert!(SchedulerConfig::from_toml(bad).is_err(), "{bad}");
    }
}
