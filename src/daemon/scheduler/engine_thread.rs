//! The dedicated thread that owns the backend and runs its operations, one at a time, so
//! that model work never runs on (or blocks) the tokio reactor.
//!
//! The worker sends an [`Op`] and awaits its [`OpResult`]. The wait runs in
//! `spawn_blocking`, which keeps tokio's paused clock from auto-advancing while the engine
//! computes: timing tests stay deterministic, and the real engine runs the same path.
//!
//! After every operation (and every heartbeat the worker sends while idle, once per tick)
//! the thread calls the `on_tick` hook: the daemon's systemd watchdog ping, which thus proves
//! that the engine loop turns.

use super::backend::{Backend, NewSequence, Update};
use super::memory::BatchState;
use seqgpt_engine::generate::Generated;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::thread::JoinHandle;

pub(crate) enum Op {
    /// At a token boundary: cancel rows, admit new sequences, then (if `step`) one step.
    Run { cancel: Vec<u64>, admit: Vec<NewSequence>, step: bool },
    /// Run one sequence alone to its end.
    Solo(NewSequence),
    /// Nothing to do; calls `on_tick` (the worker is idle).
    Heartbeat,
}

pub(crate) struct OpResult {
    pub updates: Vec<Update>,
    pub solo: Option<Result<Generated, String>>,
    /// The operation failed part-way: the batch was dropped, its rows are lost.
    pub error: Option<String>,
    pub state: BatchState,
}

type Reply = mpsc::Sender<OpResult>;

pub(crate) struct EngineThread {
    tx: Option<mpsc::Sender<(Op, Option<Reply>)>>,
    join: Option<JoinHandle<()>>,
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn run_op(backend: &mut dyn Backend, op: Op) -> OpResult {
    let mut updates = Vec::new();
    let mut solo = None;
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        match op {
            Op::Heartbeat => Ok(()),
            Op::Solo(seq) => {
                solo = Some(backend.run_solo(seq));
                Ok(())
            }
            Op::Run { cancel, admit, step } => {
                if !cancel.is_empty() {
                    updates.extend(backend.cancel(&cancel)?);
                }
                if !admit.is_empty() {
                    updates.extend(backend.admit(admit)?);
                }
                if step {
                    updates.extend(backend.step()?);
                }
                Ok(())
            }
        }
    }));
    let error = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(p) => Some(format!("the engine panicked: {}", panic_message(p))),
    };
    if error.is_some() {
        backend.reset();
    }
    if let Some(Err(_)) = &solo {
        backend.reset();
    }
    OpResult { updates, solo, error, state: backend.state() }
}

impl EngineThread {
    pub fn spawn(mut backend: Box<dyn Backend>, mut on_tick: Option<Box<dyn FnMut() + Send>>) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel::<(Op, Option<Reply>)>();
        let join = std::thread::Builder::new().name("seqgpt-engine".into()).spawn(move || {
            while let Ok((op, reply)) = rx.recv() {
                let result = run_op(backend.as_mut(), op);
                if let Some(reply) = reply {
                    let _ = reply.send(result);
                }
                if let Some(f) = on_tick.as_mut() {
                    f();
                }
            }
        })?;
        Ok(Self { tx: Some(tx), join: Some(join) })
    }

    /// Sends `op`; the returned task ends with its result (an error when the thread is gone).
    pub fn run(&self, op: Op) -> tokio::task::JoinHandle<Result<OpResult, String>> {
        let (reply_tx, reply_rx) = mpsc::channel();
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send((op, Some(reply_tx))).is_ok());
        tokio::task::spawn_blocking(move || {
            if !sent {
                return Err("the engine thread has stopped".to_string());
            }
            reply_rx.recv().map_err(|_| "the engine thread has stopped".to_string())
        })
    }

    pub fn heartbeat(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.send((Op::Heartbeat, None));
        }
    }

    /// Stops the thread once its current operation ends, and waits for it.
    pub async fn stop(mut self) {
        self.tx = None;
        if let Some(join) = self.join.take() {
            let _ = tokio::task::spawn_blocking(move || join.join()).await;
        }
    }
}

impl Drop for EngineThread {
    fn drop(&mut self) {
        // Dropping the sender ends the thread's loop; it is not joined here (no blocking in
        // async contexts).
        self.tx = None;
    }
}
