//! Subcommands of the `seqgpt` command-line tool, one module each.

pub mod extract_text;
