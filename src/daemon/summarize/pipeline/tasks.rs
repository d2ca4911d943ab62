//! SeqGPT's own tasks on a text, beside summaries: classification (`Classify` on the bus)
//! and span extraction (`Extract` on the bus), in the prompt format its authors trained.

use super::super::prompt::{parse_classification, parse_spans, seqgpt_task_prompt, SeqGptTask, Template, SPAN_KINDS_PER_PROMPT};
use super::super::{Cancel, SummaryError, SummaryStats};
use super::{Ignore, ModelFailure, ModelSetup, Pipeline, Stage, MAX_BYTES_PER_TOKEN};
use seqgpt_engine::generate::{GenerationConfig, Sampling};
use std::collections::BTreeMap;

impl Pipeline {
    /// SeqGPT classification: the labels of `labels` the model assigns to `text`, and its raw
    /// answer.
    pub async fn classify(&self, text: &str, labels: &[String], cancel: &Cancel) -> Result<(Vec<String>, String), SummaryError> {
        let m = self.task_model()?;
        check_labels(labels)?;
        check_task_text(m, text)?;
        let prompt = seqgpt_task_prompt(SeqGptTask::Classify, text, labels);
        let answer = self.task_answer(m, &prompt, cancel).await?;
        Ok((parse_classification(&answer, labels), answer))
    }

    /// SeqGPT extraction: spans of `text` per kind, and the model's raw answers (one line per
    /// prompt; kinds go six to a prompt, as SeqGPT's authors advise).
    pub async fn find_spans(
        &self,
        text: &str,
        kinds: &[String],
        cancel: &Cancel,
    ) -> Result<(BTreeMap<String, Vec<String>>, String), SummaryError> {
        let m = self.task_model()?;
        check_labels(kinds)?;
        check_task_text(m, text)?;
        let mut all = BTreeMap::new();
        let mut raw = Vec::new();
        for group in kinds.chunks(SPAN_KINDS_PER_PROMPT) {
            let prompt = seqgpt_task_prompt(SeqGptTask::Spans, text, group);
            let answer = self.task_answer(m, &prompt, cancel).await?;
            all.extend(parse_spans(&answer, group));
            raw.push(answer);
        }
        Ok((all, raw.join("\n")))
    }

    fn task_model(&self) -> Result<&ModelSetup, SummaryError> {
        self.model.as_ref().ok_or_else(|| {
            SummaryError::ModelUnavailable("no model is loaded: Classify and Extract need one (configure `model`)".into())
        })
    }

    async fn task_answer(&self, m: &ModelSetup, prompt: &str, cancel: &Cancel) -> Result<String, SummaryError> {
        let config = GenerationConfig {
            max_new_tokens: 64,
            sampling: Sampling::Greedy,
            repetition_penalty: Template::seqgpt().repetition_penalty,
            ..GenerationConfig::default()
        };
        let mut stats = SummaryStats::default();
        let out = self
            .run_prompts(m, &[prompt.to_string()], &config, 0, Stage::Summarize, &mut stats, &mut Ignore, cancel)
            .await
            .map_err(|f| match f {
                ModelFailure::Stop(e) => e,
                ModelFailure::TooLarge(reason) => SummaryError::TooLarge(reason),
                ModelFailure::Failed(reason) => SummaryError::Internal(reason),
            })?;
        Ok(out.into_iter().next().unwrap_or_default().trim().to_string())
    }
}

/// Longest label (or extraction kind), in bytes.
const MAX_LABEL_BYTES: usize = 256;

fn check_labels(labels: &[String]) -> Result<(), SummaryError> {
    if labels.is_empty() || labels.iter().any(|l| l.trim().is_empty()) {
        return Err(SummaryError::InvalidArgs("give at least one label, none of them empty".into()));
    }
    if labels.len() > 64 {
        return Err(SummaryError::InvalidArgs("at most 64 labels".into()));
    }
    if labels.iter().any(|l| l.len() > MAX_LABEL_BYTES) {
        return Err(SummaryError::InvalidArgs(format!("a label has more than {MAX_LABEL_BYTES} bytes")));
    }
    Ok(())
}

/// Refuses, before any tokenizing, a Classify or Extract text that cannot fit the model's
/// context whatever its tokens (see [`MAX_BYTES_PER_TOKEN`]).
fn check_task_text(m: &ModelSetup, text: &str) -> Result<(), SummaryError> {
    let ctx = m.context_length();
    let max = ctx.saturating_mul(MAX_BYTES_PER_TOKEN);
    if text.len() > max {
        return Err(SummaryError::TooLarge(format!(
            "the text has {} bytes; a prompt of this model holds at most {ctx} tokens, so at most {max} bytes are accepted",
            text.len()
        )));
    }
    Ok(())
}
