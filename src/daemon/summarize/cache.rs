//! The summary cache: finished summaries on disk, keyed by (content hash, model, options), so
//! that a repeated request is answered at once.
//!
//! Layout: `<dir>/v2/<first two hex digits>/<sha256 hex>.json`, one small JSON file per
//! summary. Writes are atomic (a temporary file in the same directory, fsync, rename, fsync of
//! the directory), so a crash or a concurrent reader never sees half a file. Files are created
//! 0600 in directories created 0700. The cache keeps at most `max_entries` files: past that the
//! least recently used (by modification time; a hit refreshes it) are deleted.
//!
//! Requests that carry a password are neither looked up nor stored: a key derived from an
//! encrypted document's bytes would let someone without the password read its summary.
//!
//! Reading trusts nothing in the directory: an entry is opened without following a symbolic
//! link and without waiting on a FIFO, must be a regular file of at most [`MAX_ENTRY_BYTES`],
//! and must parse into strings without NUL; anything else is removed and counts as a miss.

use super::Anchor;
use super::{Length, Method, Style, Summary, SummaryStats};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Bumped whenever the pipeline's output for the same input may change.
const FORMAT: &str = "v2";

/// Largest entry file read (a summary is bounded by its length option: a few KiB).
pub const MAX_ENTRY_BYTES: u64 = 1 << 20;

/// The SHA-256 of some input, as lowercase hex.
pub fn content_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a cache key is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    /// [`content_hash`] of the PDF's bytes or of the text.
    pub content: String,
    /// "pdf" or "text": the same bytes mean different things.
    pub input_kind: &'static str,
    /// The summarizer: the model's identity and template, or the extractive ranker's version.
    pub summarizer: String,
    pub pages: Option<(u32, u32)>,
    pub length: Length,
    /// The resolved language ("en", "zh") or "auto".
    pub language: String,
    pub style: Style,
    /// The word budget.
    pub max_words: usize,
}

impl CacheKey {
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            FORMAT,
            self.input_kind,
            &self.content,
            &self.summarizer,
            &self.pages.map_or_else(|| "all".to_string(), |(a, b)| format!("{a}-{b}")),
            self.length.as_str(),
            &self.language,
            self.style.as_str(),
            &self.max_words.to_string(),
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        hex(&h.finalize())
    }
}

#[derive(Serialize, Deserialize)]
struct Entry {
    format: String,
    text: String,
    method: Method,
    stats: SummaryStats,
    #[serde(default)]
    sentences: Vec<Anchor>,
}

/// A directory of cached summaries.
pub struct SummaryCache {
    dir: PathBuf,
    max_entries: usize,
    /// Entries written since the last pruning scan.
    writes: AtomicUsize,
    prune_lock: Mutex<()>,
}

impl SummaryCache {
    /// Opens (creating) the cache under `dir`.
    pub fn open(dir: impl AsRef<Path>, max_entries: usize) -> std::io::Result<Self> {
        let dir = dir.as_ref().join(FORMAT);
        create_private_dir(&dir)?;
        Ok(SummaryCache { dir, max_entries: max_entries.max(1), writes: AtomicUsize::new(0), prune_lock: Mutex::new(()) })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, digest: &str) -> PathBuf {
        self.dir.join(&digest[..2]).join(format!("{digest}.json"))
    }

    /// The cached summary for `key`, if any (a damaged or suspicious entry is deleted and
    /// misses).
    pub fn get(&self, key: &CacheKey) -> Option<Summary> {
        let path = self.path_of(&key.digest());
        match read_entry(&path) {
            Ok(None) => None,
            Ok(Some((e, file))) => {
                // Refresh for LRU pruning; failure only makes the entry look older.
                let _ = file.set_modified(std::time::SystemTime::now());
                let mut stats = e.stats;
                stats.cached = true;
                Some(Summary { text: e.text, method: e.method, stats, sentences: e.sentences })
            }
            Err(why) => {
                tracing::warn!("removing cache entry {}: {why}", path.display());
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Stores `summary` under `key`, atomically.
    pub fn put(&self, key: &CacheKey, summary: &Summary) -> std::io::Result<()> {
        let digest = key.digest();
        let path = self.path_of(&digest);
        let parent = path.parent().expect("entries live in a subdirectory");
        create_private_dir(parent)?;
        let mut stats = summary.stats.clone();
        stats.cached = false;
        let entry = Entry { format: FORMAT.into(), text: summary.text.clone(), method: summary.method, stats, sentences: summary.sentences.clone() };
        let json = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        let tmp = parent.join(format!(".{digest}.{}.{}.tmp", std::process::id(), unique()));
        let result = (|| {
            let mut f = open_private(&tmp)?;
            f.write_all(&json)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            std::fs::File::open(parent)?.sync_all()
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result?;
        if self.writes.fetch_add(1, Ordering::Relaxed) + 1 >= (self.max_entries / 10).max(1) {
            self.writes.store(0, Ordering::Relaxed);
            self.prune();
        }
        Ok(())
    }

    /// Entries in the cache now.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn entries(&self) -> Vec<(std::time::SystemTime, PathBuf)> {
        let mut out = Vec::new();
        let Ok(subdirs) = std::fs::read_dir(&self.dir) else { return out };
        for sub in subdirs.flatten() {
            let Ok(files) = std::fs::read_dir(sub.path()) else { continue };
            for f in files.flatten() {
                let p = f.path();
                if p.extension().is_some_and(|e| e == "json") {
                    let t = f.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
                    out.push((t, p));
                }
            }
        }
        out
    }

    /// Deletes the least recently used entries beyond `max_entries`.
    pub fn prune(&self) {
        let Ok(_guard) = self.prune_lock.try_lock() else { return };
        let mut entries = self.entries();
        if entries.len() <= self.max_entries {
            return;
        }
        entries.sort();
        let excess = entries.len() - self.max_entries;
        for (_, p) in entries.into_iter().take(excess) {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Reads the entry at `path`: `Ok(None)` when there is none, `Err(why)` when what is there
/// must go.
fn read_entry(path: &Path) -> Result<Option<(Entry, std::fs::File)>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err("a symbolic link".into()),
        Err(e) => return Err(format!("cannot open it: {e}")),
    };
    let meta = file.metadata().map_err(|e| format!("cannot stat it: {e}"))?;
    if !meta.file_type().is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_ENTRY_BYTES {
        return Err(format!("{} bytes, more than an entry can have", meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&file).take(MAX_ENTRY_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return Err("it grew past the size an entry can have".into());
    }
    let entry: Entry = serde_json::from_slice(&bytes).map_err(|e| format!("damaged: {e}"))?;
    if entry.format != FORMAT {
        return Err(format!("format '{}', not {FORMAT}", entry.format.escape_debug()));
    }
    let s = &entry.stats;
    let strings = [entry.text.as_str(), &s.model, &s.template, &s.fallback]
        .into_iter()
        .chain(s.warnings.iter().map(String::as_str))
        .chain(entry.sentences.iter().map(|a| a.text.as_str()));
    for t in strings {
        if t.contains('\0') {
            return Err("a string with a NUL character".into());
        }
    }
    Ok(Some((entry, file)))
}

fn unique() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}

/// Where the cache lives by default: `$STATE_DIRECTORY` (set by systemd's `StateDirectory=`),
/// else `$XDG_STATE_HOME/seqgpt`, else `~/.local/state/seqgpt`; the summaries go in its
/// `summaries/` subdirectory.
pub fn default_state_dir() -> Option<PathBuf> {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(s) = non_empty("STATE_DIRECTORY") {
        // systemd passes a colon-separated list when a unit names several; ours names one.
        let first = s.to_string_lossy().split(':').next().unwrap_or_default().to_string();
        return Some(PathBuf::from(first));
    }
    if let Some(x) = non_empty("XDG_STATE_HOME") {
        return Some(x.join("seqgpt"));
    }
    non_empty("HOME").map(|h| h.join(".local/state/seqgpt"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(content: &str, length: Length) -> CacheKey {
        CacheKey {
            content: content_hash(content.as_bytes()),
            input_kind: "text",
            summarizer: "extractive-v1".into(),
            pages: None,
            length,
            language: "auto".into(),
            style: Style::Paragraph,
            max_words: 120,
        }
    }

    fn summary(text: &str) -> Summary {
        Summary { text: text.into(), method: Method::Extractive, stats: SummaryStats::default(), sentences: Vec::new() }
    }

    #[test]
    fn round_trip_and_key_sensitivity() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SummaryCache::open(dir.path(), 100).unwrap();
        let k = key("doc", Length::Short);
        assert!(cache.get(&k).is_none());
        cache.put(&k, &summary("short summary")).unwrap();
        let hit = cache.get(&k).unwrap();
        assert_eq!(hit.text, "short summary");
        assert!(hit.stats.cached);
        assert!(cache.get(&key("doc", Length::Long)).is_none());
        assert!(cache.get(&key("other doc", Length::Short)).is_none());
        // No temporary files are left behind, and entries are private.
        let entries = cache.entries();
        assert_eq!(entries.len(), 1);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&entries[0].1).unwrap().permissions().mode() & 0o777, 0o600);
        let sub = entries[0].1.parent().unwrap();
        assert_eq!(std::fs::read_dir(sub).unwrap().count(), 1);
    }

    #[test]
    fn damaged_entries_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SummaryCache::open(dir.path(), 100).unwrap();
        let k = key("doc", Length::Short);
        cache.put(&k, &summary("x")).unwrap();
        let path = cache.path_of(&k.digest());
        std::fs::write(&path, b"{ not json").unwrap();
        assert!(cache.get(&k).is_none());
        assert!(!path.exists());
    }

    #[test]
    fn hostile_entries_are_removed_and_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SummaryCache::open(dir.path(), 100).unwrap();
        let k = key("doc", Length::Short);
        let path = cache.path_of(&k.digest());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        // A FIFO: opened without blocking, refused, removed.
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(cache.get(&k).is_none());
        assert!(std::fs::symlink_metadata(&path).is_err(), "the FIFO was removed");
        // A symbolic link to an endless file: not followed, removed.
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert!(cache.get(&k).is_none());
        assert!(std::fs::symlink_metadata(&path).is_err(), "the link was removed");
        // Too large.
        std::fs::write(&path, vec![b' '; MAX_ENTRY_BYTES as usize + 1]).unwrap();
        assert!(cache.get(&k).is_none());
        assert!(!path.exists());
        // A NUL in a stat string (valid JSON: an escaped NUL).
        cache.put(&k, &summary("fine")).unwrap();
        let text = std::fs::read_to_string(&path).unwrap().replace("\"model\":\"\"", "\"model\":\"a\\u0000b\"");
        assert!(text.contains("u0000"), "{text}");
        std::fs::write(&path, text).unwrap();
        assert!(cache.get(&k).is_none());
        assert!(!path.exists());
    }

    #[test]
    fn pruning_keeps_the_most_recent() {
        let dir = tempfile::tempdir().unwrap();
        let cache = SummaryCache::open(dir.path(), 5).unwrap();
        for i in 0..12 {
            let k = key(&format!("doc {i}"), Length::Short);
            cache.put(&k, &summary("x")).unwrap();
            let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000 + i);
            std::fs::File::options().write(true).open(cache.path_of(&k.digest())).unwrap().set_modified(t).unwrap();
        }
        cache.prune();
        assert_eq!(cache.len(), 5);
        assert!(cache.get(&key("doc 11", Length::Short)).is_some());
        assert!(cache.get(&key("doc 0", Length::Short)).is_none());
    }
}
