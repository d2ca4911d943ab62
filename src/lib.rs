//! seqgpt-fast: an offline document-summarization engine for edge devices.
//!
//! See docs/ARCHITECTURE.md for the module map and the data flow.

pub mod cli;
pub mod config;
pub mod convert;
pub mod device;
pub mod engine;
pub mod generate;
pub mod gguf;
pub mod kernels;
pub mod model;
pub mod pdf;
pub mod quant;
pub mod scheduler;
pub mod sd_notify;
pub mod service;
pub mod summarize;
pub mod sysinfo;
pub mod tokenizer;
