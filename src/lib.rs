//! seqgpt-fast: an offline document-summarization engine for edge devices.
//!
//! This crate holds the command-line tool ([`cli`]) behind the `seqgpt` and `seqgptd`
//! binaries, what a document reader needs to show a summary in place ([`reader`]), and names the layers' modules in one place for them and for the tests: the
//! inference layer (seqgpt-engine), the PDF extractor (seqgpt-pdf), and the daemon layer
//! (seqgpt-daemon: scheduler, summaries, D-Bus service, config, wiring). docs/ARCHITECTURE.md
//! has the map and the data flow.

pub mod cli;
pub mod reader;

pub use seqgpt_daemon::{app, config, scheduler, sd_notify, service, summarize};
pub use seqgpt_engine::{arch, device, engine, generate, gguf, kernels, model, quant, sysinfo, tokenizer};
pub use seqgpt_pdf as pdf;
