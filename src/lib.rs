//! seqgpt-fast: an offline document-summarization engine for edge devices.
//!
//! This crate holds the command-line tool ([`cli`]) behind the `seqgpt` and `seqgptd`
//! binaries and what a document reader needs to show a summary in place ([`reader`]). The
//! layers below are crates of their own, named where they are used: seqgpt-engine
//! (inference), seqgpt-pdf (the PDF extractor) and seqgpt-daemon (scheduler, summaries, D-Bus
//! service, config, wiring). docs/ARCHITECTURE.md has the map and the data flow.

pub mod cli;
pub mod reader;
