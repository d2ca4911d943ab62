//! seqgpt-daemon: summaries as a service. [`scheduler`] (the engine's request queue: sliding
//! window, length buckets, continuous batching, memory guard), [`summarize`] (PDF or text to
//! a summary: reading the document's structure, the extractive ranker, prompts for the model,
//! the cache), [`service`] (the D-Bus interface), [`config`] (the daemon's TOML file),
//! [`sd_notify`] (systemd's notify protocol), and [`app`], the one place that builds engine ->
//! scheduler -> pipeline -> service from a config (`seqgptd` and `seqgpt summarize --local`).
//!
//! The inference layer and the PDF extractor are crates of their own, named where they are
//! used (`seqgpt_engine::...`, `seqgpt_pdf::...`), so a reader can tell which crate a type
//! lives in.

pub mod app;
pub mod config;
pub mod scheduler;
pub mod sd_notify;
pub mod service;
pub mod summarize;
