//! zathura over its D-Bus interface: each instance owns `org.pwmt.zathura.PID-<pid>` on the
//! session bus, object `/org/pwmt/zathura`, interface `org.pwmt.zathura`, with the properties
//! `filename`, `pagenumber` and `numberofpages` (pages from 0) and the methods
//! `OpenDocument(s path, s password, i page)` and `GotoPage(u)`.
//!
//! The summary reaches zathura as the annotated copy ([`super::annotated`]), which zathura's
//! poppler plugin draws with its highlights: [`open`] makes a running zathura show it, at a
//! page. Its `HighlightRects` method is never called. In zathura 0.5.2 (Debian 12) that
//! method hands the rectangle lists to the page widgets and then frees them: nothing is
//! drawn, the widgets keep the freed lists, and a later call frees them again (the third
//! call killed zathura with a general protection fault in our test). A reader the user
//! already has open is not a thing to crash.

use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zbus::proxy::CacheProperties;
use zbus::Connection;

const NAME_PREFIX: &str = "org.pwmt.zathura.PID-";
const PATH: &str = "/org/pwmt/zathura";
const INTERFACE: &str = "org.pwmt.zathura";

/// A running zathura.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Its bus name.
    pub name: String,
    pub pid: u32,
    /// The file it shows, if any (as zathura names it).
    pub file: Option<PathBuf>,
}

async fn proxy<'a>(conn: &'a Connection, name: &'a str) -> zbus::Result<zbus::Proxy<'a>> {
    // zathura sends no PropertiesChanged: a cached page number would never move.
    zbus::proxy::Builder::new(conn)
        .destination(name)?
        .path(PATH)?
        .interface(INTERFACE)?
        .cache_properties(CacheProperties::No)
        .build()
        .await
}

/// The zathura instances on this session bus, with the file each shows.
pub async fn instances(conn: &Connection) -> anyhow::Result<Vec<Instance>> {
    let dbus = zbus::fdo::DBusProxy::new(conn).await?;
    let mut out = Vec::new();
    for name in dbus.list_names().await? {
        let Some(pid) = name.as_str().strip_prefix(NAME_PREFIX).and_then(|p| p.parse::<u32>().ok()) else { continue };
        let name = name.to_string();
        let file = match proxy(conn, &name).await {
            // No document open: the property read fails.
            Ok(p) => p.get_property::<String>("filename").await.ok().filter(|f| !f.is_empty()).map(PathBuf::from),
            Err(_) => None,
        };
        out.push(Instance { name, pid, file });
    }
    out.sort_by_key(|i| i.pid);
    Ok(out)
}

/// Whether two names are the same file (both resolved; a name that does not resolve is
/// compared as given).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// The instance that shows `file`, if one does.
pub fn showing<'a>(all: &'a [Instance], file: &Path) -> Option<&'a Instance> {
    all.iter().find(|i| i.file.as_deref().is_some_and(|f| same_file(f, file)))
}

/// Starts zathura on `file` (with `config_dir` as its -c, if given) and waits until it is on
/// the bus with the file open.
pub async fn start(conn: &Connection, file: &Path, config_dir: Option<&Path>, wait: Duration) -> anyhow::Result<Instance> {
    super::launch::Reader::Zathura.require()?;
    let mut cmd = std::process::Command::new("zathura");
    if let Some(c) = config_dir {
        cmd.arg("-c").arg(c);
    }
    cmd.arg(file)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().map_err(|e| anyhow::anyhow!("cannot start zathura: {e}"))?;
    let pid = child.id();
    let name = format!("{NAME_PREFIX}{pid}");
    let deadline = Instant::now() + wait;
    loop {
        if let Some(status) = child.try_wait()? {
            bail!("zathura ended at once ({status}): is there a display (DISPLAY or WAYLAND_DISPLAY)?");
        }
        if let Ok(p) = proxy(conn, &name).await {
            if let Ok(f) = p.get_property::<String>("filename").await {
                if same_file(Path::new(&f), file) {
                    // The reader outlives this command: nobody waits for it.
                    std::mem::forget(child);
                    return Ok(Instance { name, pid, file: Some(PathBuf::from(f)) });
                }
            }
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("zathura did not show {} on the session bus within {} s (is zathura-pdf-poppler installed?)", file.display(), wait.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Makes the zathura `name` show `file` (another file it shows is closed first) at `page`
/// (from 0), and waits until it does: zathura opens it after answering, and has no document
/// in between.
pub async fn open(conn: &Connection, name: &str, file: &Path, page: u32, wait: Duration) -> anyhow::Result<()> {
    let p = proxy(conn, name).await?;
    let path = file.to_str().with_context(|| format!("{}: zathura takes only UTF-8 file names", file.display()))?;
    let page = i32::try_from(page).context("page number out of range")?;
    let ok: bool = p.call("OpenDocument", &(path, "", page)).await.context("zathura's OpenDocument")?;
    if !ok {
        bail!("zathura could not open {}", file.display());
    }
    let deadline = Instant::now() + wait;
    loop {
        if let Ok(f) = p.get_property::<String>("filename").await {
            if same_file(Path::new(&f), file) {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!("zathura ({name}) did not show {} within {} s", file.display(), wait.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Moves the zathura `name` to `page` (from 0).
pub async fn goto(conn: &Connection, name: &str, page: u32) -> anyhow::Result<()> {
    let p = proxy(conn, name).await?;
    let ok: bool = p.call("GotoPage", &(page,)).await.context("zathura's GotoPage")?;
    if !ok {
        bail!("zathura has no page {}", page + 1);
    }
    Ok(())
}

/// The page zathura `name` shows (from 0).
pub async fn page_number(conn: &Connection, name: &str) -> anyhow::Result<u32> {
    Ok(proxy(conn, name).await?.get_property::<u32>("pagenumber").await?)
}

/// Its page count.
pub async fn page_count(conn: &Connection, name: &str) -> anyhow::Result<u32> {
    Ok(proxy(conn, name).await?.get_property::<u32>("numberofpages").await?)
}
