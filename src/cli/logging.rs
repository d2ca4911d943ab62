//! Where the binaries' logs go. Started by systemd with stderr connected to the journal
//! (`JOURNAL_STREAM` names that stream), they log to journald natively: one entry per event,
//! its level as the entry's PRIORITY, its fields as journal fields, no colour codes and no
//! second timestamp. Elsewhere: readable lines on stderr, coloured only on a terminal.

use std::io::IsTerminal;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

/// Installs the subscriber; `default_filter` applies unless `SEQGPT_LOG` is set. The
/// binaries keep the PDF parser's own log lines out by default (`lopdf=off`): what it
/// repaired reaches the user as the job's warnings; `SEQGPT_LOG=debug` shows them.
pub fn init(program: &str, default_filter: &str) {
    let filter = || EnvFilter::try_from_env("SEQGPT_LOG").unwrap_or_else(|_| default_filter.into());
    if stderr_is_journal() {
        match tracing_journald::layer() {
            Ok(journal) => {
                let journal = journal.with_syslog_identifier(program.to_string());
                tracing_subscriber::registry().with(filter()).with(journal).init();
                return;
            }
            Err(e) => eprintln!("{program}: JOURNAL_STREAM is set but the journal cannot be reached ({e}); logging to stderr"),
        }
    }
    tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Whether stderr is the stream systemd connected to the journal: `JOURNAL_STREAM` is
/// "DEVICE:INODE" of that stream, and a child that redirected its stderr must not match.
fn stderr_is_journal() -> bool {
    let Some(value) = std::env::var_os("JOURNAL_STREAM") else { return false };
    let Some((dev, ino)) = value.to_str().and_then(|v| v.split_once(':')) else { return false };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else { return false };
    use std::os::fd::AsFd;
    let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() else { return false };
    let Ok(meta) = std::fs::File::from(fd).metadata() else { return false };
    use std::os::unix::fs::MetadataExt;
    meta.dev() == dev && meta.ino() == ino
}
