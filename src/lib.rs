//! seqgpt-fast: an offline document-summarization engine for edge devices.
//!
//! See docs/ARCHITECTURE.md for the module map and the data flow.

pub mod cli;
pub mod pdf;
pub mod sd_notify;
