//! The annotated copy: built by the summarizer's [`seqgpt_daemon::summarize::annotate`] (shared with
//! the daemon's `annotate_fd` option), written here to a file without ever leaving half of one.

pub use seqgpt_daemon::summarize::annotate::{annotated_copy, annotations, unplaceable, HIGHLIGHT_RGB};

/// Writes `bytes` to `path` through a temporary file beside it, so that a failure leaves no
/// half-written copy and an existing file is replaced whole.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
