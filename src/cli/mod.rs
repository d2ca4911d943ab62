//! Subcommands of the `seqgpt` command-line tool, one module each.

pub mod bench;
pub mod common;
pub mod extract_text;
pub mod generate;
pub mod info;
pub mod jobs;
pub mod logits;
pub mod remote;
pub mod summarize;
pub mod tasks;
