//! A pipeline's prompts on the scheduler: submitted together (so they decode in one batch),
//! their events merged as they come, their text streamed to the observer.

use super::super::{Cancel, SummaryStats};
use super::{ModelFailure, ModelSetup, Observer, Pipeline, Stage};
use seqgpt_engine::generate::GenerationConfig;
use crate::scheduler::{Event, JobHandle, Request, SchedulerError};
use futures_util::stream::{self, StreamExt};

impl Pipeline {
    /// Submits `prompts` together to the scheduler (retrying while its queue is full),
    /// streams their text to `obs` as prompt `first_index + i`, and returns the answers in
    /// prompt order. Submitting tokenizes, so it runs on a blocking thread. The job handles
    /// are held here: dropping them (a cancelled job) cancels the prompts.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_prompts(
        &self,
        m: &ModelSetup,
        prompts: &[String],
        config: &GenerationConfig,
        first_index: u32,
        stage: Stage,
        stats: &mut SummaryStats,
        obs: &mut dyn Observer,
        cancel: &Cancel,
    ) -> Result<Vec<String>, ModelFailure> {
        let mut handles: Vec<JobHandle> = Vec::with_capacity(prompts.len());
        for p in prompts {
            loop {
                let (sched, p, c) = (m.scheduler.clone(), p.clone(), config.clone());
                match self.blocking(cancel, move |_| Ok(sched.submit(Request::text(p, c)))).await.map_err(ModelFailure::Stop)? {
                    Ok(h) => {
                        handles.push(h);
                        break;
                    }
                    Err(SchedulerError::Busy) => tokio::time::sleep(self.settings.busy_retry).await,
                    Err(e) => return Err(ModelFailure::from_scheduler(e)),
                }
            }
        }
        let total = prompts.len() as u32;
        let streams = handles.into_iter().enumerate().map(|(i, h)| {
            stream::unfold(Some(h), move |h| async move {
                let mut h = h?;
                match h.next().await {
                    // The scheduler dropped the job without a terminal event: it is gone.
                    None => Some(((i, Event::Failed(SchedulerError::ShuttingDown)), None)),
                    Some(ev) => {
                        let terminal = ev.is_terminal();
                        Some(((i, ev), if terminal { None } else { Some(h) }))
                    }
                }
            })
            .boxed()
        });
        let mut merged = stream::select_all(streams);
        let mut answers: Vec<Option<String>> = vec![None; prompts.len()];
        let mut done = 0u32;
        while let Some((i, ev)) = merged.next().await {
            match ev {
                Event::Tokens { text, .. } if !text.is_empty() => obs.partial(first_index + i as u32, &text),
                Event::Finished(c) => {
                    stats.prompt_tokens += c.prompt_tokens as u64;
                    stats.generated_tokens += c.ids.len() as u64;
                    answers[i] = Some(c.text);
                    done += 1;
                    obs.progress(stage, done, total);
                }
                Event::Failed(e) => return Err(ModelFailure::from_scheduler(e)),
                Event::Queued { .. } | Event::Started { .. } | Event::Tokens { .. } => {}
            }
        }
        Ok(answers.into_iter().map(Option::unwrap_or_default).collect())
    }
}
