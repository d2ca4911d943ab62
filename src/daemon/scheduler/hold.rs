//! A backend wrapper that holds the running batch before its first step until a file exists.
//!
//! Tests of signals, reloads and shutdown need a model job that is still running when they
//! act. A job sized to outlast the test's reaction time is too short on a fast machine and
//! too long under emulation (qemu runs the same job a hundred times slower); a hold makes the
//! job wait for the test itself, on any machine. The daemon wraps its engine in one only when
//! `SEQGPT_TEST_HOLD` names the file, and logs a warning when it does: a production daemon
//! never sets it, and one whose environment sets it runs normally once the file exists.
//!
//! Admission (the prefill and each row's first token) is not held, so a held job is in the
//! batch and has streamed its first token; every later step waits. Once the file is seen the
//! hold is gone for good. While held, the engine thread does nothing else: cancellations and
//! new admissions wait too, and the systemd watchdog is not pinged.

use super::backend::{Backend, ModelInfo, NewSequence, Update};
use super::memory::BatchState;
use seqgpt_engine::generate::Generated;
use std::path::PathBuf;
use std::time::Duration;

/// How often a held step looks for the file.
const POLL: Duration = Duration::from_millis(10);

pub struct Held<B> {
    inner: B,
    /// The file whose existence releases the hold; `None` once it was seen.
    gate: Option<PathBuf>,
}

impl<B: Backend> Held<B> {
    pub fn new(inner: B, gate: PathBuf) -> Self {
        Self { inner, gate: Some(gate) }
    }

    fn wait(&mut self) {
        if let Some(gate) = &self.gate {
            while !gate.exists() {
                std::thread::sleep(POLL);
            }
            self.gate = None;
        }
    }
}

impl<B: Backend> Backend for Held<B> {
    fn info(&self) -> ModelInfo {
        self.inner.info()
    }

    fn admit(&mut self, seqs: Vec<NewSequence>) -> Result<Vec<Update>, String> {
        self.inner.admit(seqs)
    }

    fn step(&mut self) -> Result<Vec<Update>, String> {
        self.wait();
        self.inner.step()
    }

    fn cancel(&mut self, ids: &[u64]) -> Result<Vec<Update>, String> {
        self.inner.cancel(ids)
    }

    fn run_solo(&mut self, seq: NewSequence) -> Result<Generated, String> {
        self.wait();
        self.inner.run_solo(seq)
    }

    fn state(&self) -> BatchState {
        self.inner.state()
    }

    fn reset(&mut self) {
        self.inner.reset()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seqgpt_engine::generate::GenerationConfig;
    use crate::scheduler::fake::FakeBackend;
    use std::sync::mpsc;

    fn seq(id: u64, max_new_tokens: usize) -> NewSequence {
        NewSequence { id, prompt: vec![1, 2, 3], config: GenerationConfig { max_new_tokens, ..Default::default() } }
    }

    #[test]
    fn steps_wait_for_the_file_and_admission_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let gate = dir.path().join("open");
        let mut held = Held::new(FakeBackend::new(), gate.clone());
        let first = held.admit(vec![seq(1, 3)]).unwrap();
        assert!(matches!(first[..], [Update::Token { id: 1, .. }]), "{first:?}");
        let (tx, rx) = mpsc::channel();
        let stepper = std::thread::spawn(move || {
            let out = held.step();
            tx.send(()).unwrap();
            (held, out)
        });
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "a step ran before the file existed");
        std::fs::write(&gate, b"").unwrap();
        rx.recv_timeout(Duration::from_secs(30)).expect("the step once the file exists");
        let (mut held, out) = stepper.join().unwrap();
        assert!(matches!(out.unwrap()[..], [Update::Token { id: 1, .. }]));
        // Released for good: the file may go, steps go on.
        std::fs::remove_file(&gate).unwrap();
        let last = held.step().unwrap();
        assert!(matches!(last.last(), Some(Update::Finished(_))), "{last:?}");
    }
}
