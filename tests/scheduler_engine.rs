//! The scheduler over the real engine (the tiny fixture model): batched and joined
//! sequences give exactly the tokens they give alone, text prompts, beams, cancellation.

mod common;

use common::{engine, golden, u32s};
use seqgpt_engine::generate::{GenerationConfig, Sampling};
use seqgpt_engine::gguf::GgmlType;
use seqgpt_daemon::scheduler::{Event, JobHandle, Request, Scheduler, SchedulerConfig, SchedulerError, StartOptions};
use std::sync::Arc;

fn greedy(n: usize) -> GenerationConfig {
    GenerationConfig { max_new_tokens: n, sampling: Sampling::Greedy, stop_on_eos: false, ..Default::default() }
}

fn prompts() -> Vec<Vec<u32>> {
    golden("tiny")["prompts"].as_array().unwrap().iter().map(|p| u32s(&p["ids"])).collect()
}

/// Collects a job's tokens from its events and checks them against its completion.
async fn finish(mut job: JobHandle) -> (Vec<u32>, usize, seqgpt_daemon::scheduler::Completion) {
    let mut streamed = Vec::new();
    let mut text = String::new();
    let mut batch = 0;
    while let Some(e) = job.next().await {
        match e {
            Event::Started { batch_size, .. } => batch = batch_size,
            Event::Tokens { ids, text: t } => {
                streamed.extend(ids);
                text.push_str(&t);
            }
            Event::Finished(c) => {
                assert_eq!(streamed, c.ids, "the streamed tokens are the result's");
                assert!(text.starts_with(&c.text) || c.text.starts_with(&text), "{text:?} vs {:?}", c.text);
                return (streamed, batch, c);
            }
            Event::Failed(e) => panic!("job failed: {e}"),
            Event::Queued { .. } => {}
        }
    }
    panic!("no terminal event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_and_joined_results_equal_unbatched_ones() {
    let e = Arc::new(engine("tiny", GgmlType::F32));
    let prompts = prompts();
    // The first three run long enough for the others to join them.
    let cfg = |i: usize| {
        let n = if i < 3 { 60 } else { 12 };
        if i % 2 == 0 { greedy(n) } else { GenerationConfig { repetition_penalty: 2.0, ..greedy(n) } }
    };
    let mut want = Vec::new();
    for (i, p) in prompts.iter().enumerate() {
        want.push(e.generate(&[p.clone()], &cfg(i)).unwrap().remove(0).ids);
    }
    let sched = Scheduler::start_engine(e.clone(), SchedulerConfig::default(), StartOptions::default()).unwrap();
    // Three at once (one batch), then two more while it runs (they join it).
    let first: Vec<JobHandle> =
        (0..3).map(|i| sched.submit(Request::tokens(prompts[i].clone(), cfg(i))).unwrap()).collect();
    let mut tasks = Vec::new();
    for job in first {
        tasks.push(tokio::spawn(finish(job)));
    }
    // Wait until the batch runs, then add the others.
    while sched.stats().running == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    for i in 3..prompts.len() {
        tasks.push(tokio::spawn(finish(sched.submit(Request::tokens(prompts[i].clone(), cfg(i))).unwrap())));
    }
    let mut max_batch = 0;
    for (i, t) in tasks.into_iter().enumerate() {
        let (ids, batch, c) = t.await.unwrap();
        assert_eq!(ids, want[i], "prompt {i}");
        assert_eq!(c.prompt_tokens, prompts[i].len());
        max_batch = max_batch.max(batch);
    }
    assert!(max_batch >= 3, "requests ran batched");
    let st = sched.stats();
    assert_eq!(st.finished, prompts.len() as u64);
    assert!(st.joins >= 1, "later requests joined the running batch: {st:?}");
    assert_eq!(st.tokens, want.iter().map(|w| w.len() as u64).sum::<u64>());
    sched.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_prompts_sampling_and_beams_match_the_engine() {
    let e = Arc::new(engine("tiny", GgmlType::F32));
    let sampled = GenerationConfig {
        sampling: Sampling::Sample { temperature: 0.9, top_k: Some(40), top_p: Some(0.95), seed: 7 },
        ..greedy(10)
    };
    let beams = GenerationConfig { num_beams: 3, ..greedy(6) };
    let text = golden("tiny")["prompts"][1]["text"].as_str().unwrap().to_string();
    let ids = e.encode(&text).unwrap();
    let want_sampled = e.generate(&[ids.clone()], &sampled).unwrap().remove(0);
    let want_beams = e.generate(&[ids.clone()], &beams).unwrap().remove(0);
    let sched = Scheduler::start_engine(e.clone(), SchedulerConfig::default().without_window(), StartOptions::default()).unwrap();
    let a = sched.submit(Request::text(text.clone(), sampled)).unwrap();
    let b = sched.submit(Request::text(text, beams)).unwrap();
    let (_, _, a) = finish(a).await;
    assert_eq!((a.ids, a.text), (want_sampled.ids, want_sampled.text));
    let b = b.wait().await.unwrap();
    assert_eq!(b.ids, want_beams.ids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_limits_with_the_engine() {
    let e = Arc::new(engine("tiny", GgmlType::F32));
    let ctx = e.model.cfg.context_length;
    let prompts = prompts();
    let sched = Scheduler::start_engine(e.clone(), SchedulerConfig::default().without_window(), StartOptions::default()).unwrap();
    let too_long = Request::tokens(vec![5; ctx], greedy(1));
    assert!(matches!(sched.submit(too_long).err(), Some(SchedulerError::TooLarge(_))));

    let mut long = sched.submit(Request::tokens(prompts[0].clone(), greedy(ctx - prompts[0].len()))).unwrap();
    loop {
        if let Some(Event::Tokens { .. }) = long.next().await {
            break;
        }
    }
    long.cancel();
    let mut last = None;
    while let Some(ev) = long.next().await {
        last = Some(ev);
    }
    assert_eq!(last, Some(Event::Failed(SchedulerError::Cancelled)));
    // The engine keeps serving, and the cancelled row's memory is gone.
    let again = sched.submit(Request::tokens(prompts[1].clone(), greedy(4))).unwrap();
    assert_eq!(again.wait().await.unwrap().ids, e.generate(&[prompts[1].clone()], &greedy(4)).unwrap()[0].ids);
    let st = sched.stats();
    assert_eq!((st.cancelled, st.finished, st.running, st.kv_bytes), (1, 1, 0, 0));
    sched.shutdown().await;
}
