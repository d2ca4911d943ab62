//! zathura over its D-Bus interface: each instance owns `org.pwmt.zathura.PID-<pid>` on the
//! session bus, object `/org/pwmt/zathura`, interface `org.pwmt.zathura`, with the properties
//! `filename`, `pagenumber` and `numberofpages` (pages from 0) and the methods `GotoPage(u)`
//! and `HighlightRects(u page, a(dddd) rects, a(udddd) secondary)`.
//!
//! HighlightRects draws the rectangles as search results (zathura's `highlight-color`; the
//! first rectangle of `page` in `highlight-active-color`) and scrolls to that first one. Its
//! rectangles are `(x1, x2, y1, y2)`, in that order, in page coordinates (points from the top
//! left of the page as shown, [`super::geometry`]). zathura checks `page` against the page
//! count, but takes the rectangles as they come: [`Highlights::safe`] sends only ordered,
//! finite rectangles inside their page, none on a page out of range, at most
//! [`MAX_RECTS`], and the primary page's rectangles in the primary list only (secondary
//! rectangles on the primary page have crashed zathura).

use super::geometry;
use crate::pdf::PageGeometry;
use crate::summarize::document::Anchor;
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zbus::proxy::CacheProperties;
use zbus::Connection;

const NAME_PREFIX: &str = "org.pwmt.zathura.PID-";
const PATH: &str = "/org/pwmt/zathura";
const INTERFACE: &str = "org.pwmt.zathura";
/// The most rectangles one call sends: a long summary's lines, with room to spare.
pub const MAX_RECTS: usize = 2000;

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
    let mut cmd = std::process::Command::new("zathura");
    if let Some(c) = config_dir {
        cmd.arg("-c").arg(c);
    }
    cmd.arg(file)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!("zathura is not installed (Debian: apt install zathura zathura-pdf-poppler)"),
        _ => anyhow::anyhow!("cannot start zathura: {e}"),
    })?;
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

/// What one HighlightRects call sends.
#[derive(Debug, Clone, PartialEq)]
pub struct Highlights {
    /// The page scrolled to (from 0); its rectangles come first in `rects`.
    pub page: u32,
    /// `(x1, x2, y1, y2)` on `page`.
    pub rects: Vec<(f64, f64, f64, f64)>,
    /// `(page, x1, x2, y1, y2)` on the other pages.
    pub secondary: Vec<(u32, f64, f64, f64, f64)>,
}

impl Highlights {
    /// The sentences' boxes, with sentence `current` (from 0) as the one zathura goes to and
    /// draws as active. `pages` is the document's page geometry, in order.
    pub fn of(sentences: &[Anchor], pages: &[PageGeometry], current: usize) -> Highlights {
        let page_of = |a: &Anchor| a.page.saturating_sub(1);
        let primary = sentences.get(current).or(sentences.first()).map_or(0, page_of);
        let mut rects = Vec::new();
        let mut secondary = Vec::new();
        // The current sentence first: zathura makes the page's first rectangle the active one.
        let order = sentences.get(current).into_iter().chain(sentences.iter().enumerate().filter(|(i, _)| *i != current).map(|(_, a)| a));
        for a in order {
            let p = page_of(a);
            let Some(g) = pages.get(p as usize) else { continue };
            for b in &a.boxes {
                let [l, t, r, bt] = geometry::to_page(*b, g);
                if p == primary {
                    rects.push((l, r, t, bt));
                } else {
                    secondary.push((p, l, r, t, bt));
                }
            }
        }
        Highlights { page: primary, rects, secondary }.safe(pages)
    }

    /// Only what zathura takes safely (the module's doc).
    pub fn safe(self, pages: &[PageGeometry]) -> Highlights {
        let fit = |p: u32, (x1, x2, y1, y2): (f64, f64, f64, f64)| -> Option<(f64, f64, f64, f64)> {
            let (w, h) = geometry::page_size(pages.get(p as usize)?);
            // Before clipping: max and min would turn a NaN into the bound.
            if ![x1, x2, y1, y2].iter().all(|v| v.is_finite()) {
                return None;
            }
            let r = (x1.max(0.0), x2.min(w), y1.max(0.0), y2.min(h));
            (r.0.is_finite() && r.1.is_finite() && r.2.is_finite() && r.3.is_finite() && r.0 < r.1 && r.2 < r.3).then_some(r)
        };
        let page = self.page;
        if page as usize >= pages.len() {
            return Highlights { page: 0, rects: Vec::new(), secondary: Vec::new() };
        }
        let rects: Vec<_> = self.rects.into_iter().filter_map(|r| fit(page, r)).take(MAX_RECTS).collect();
        let room = MAX_RECTS - rects.len();
        let secondary = self
            .secondary
            .into_iter()
            .filter(|s| s.0 != page)
            .filter_map(|(p, x1, x2, y1, y2)| fit(p, (x1, x2, y1, y2)).map(|(a, b, c, d)| (p, a, b, c, d)))
            .take(room)
            .collect();
        Highlights { page, rects, secondary }
    }
}

/// Draws `h` in the zathura `name`.
pub async fn highlight(conn: &Connection, name: &str, h: &Highlights) -> anyhow::Result<()> {
    let p = proxy(conn, name).await?;
    let ok: bool = p.call("HighlightRects", &(h.page, &h.rects, &h.secondary)).await.context("zathura's HighlightRects")?;
    if !ok {
        bail!("zathura refused the highlights (page {} out of its range?)", h.page + 1);
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn page(n: u32) -> PageGeometry {
        PageGeometry { number: n, area: [0.0, 0.0, 600.0, 800.0], rotate: 0 }
    }

    fn anchor(page: u32, boxes: Vec<[f32; 4]>) -> Anchor {
        Anchor { text: "x".into(), page, start: 0, end: 1, boxes }
    }

    #[test]
    fn the_current_sentence_leads_and_other_pages_go_secondary() {
        let s = vec![anchor(1, vec![[10.0, 700.0, 200.0, 712.0]]), anchor(2, vec![[10.0, 500.0, 200.0, 512.0], [10.0, 480.0, 100.0, 492.0]])];
        let h = Highlights::of(&s, &[page(1), page(2)], 1);
        assert_eq!(h.page, 1);
        assert_eq!(h.rects, vec![(10.0, 200.0, 288.0, 300.0), (10.0, 100.0, 308.0, 320.0)]);
        assert_eq!(h.secondary, vec![(0, 10.0, 200.0, 88.0, 100.0)]);
    }

    #[test]
    fn nothing_unsafe_reaches_zathura() {
        let pages = [page(1), page(2)];
        let h = Highlights {
            page: 0,
            rects: vec![(5.0, 1.0, 2.0, 3.0), (f64::NAN, 2.0, 2.0, 3.0), (-5.0, 900.0, 10.0, 20.0)],
            secondary: vec![(0, 1.0, 2.0, 3.0, 4.0), (7, 1.0, 2.0, 3.0, 4.0), (1, 1.0, 2.0, 3.0, 4.0)],
        }
        .safe(&pages);
        assert_eq!(h.rects, vec![(0.0, 600.0, 10.0, 20.0)], "reversed and NaN rectangles dropped, the rest clipped");
        assert_eq!(h.secondary, vec![(1, 1.0, 2.0, 3.0, 4.0)], "none on the primary page or past the last page");
        let out = Highlights { page: 5, rects: vec![(1.0, 2.0, 3.0, 4.0)], secondary: vec![] }.safe(&pages);
        assert!(out.rects.is_empty());
        let many = Highlights { page: 0, rects: vec![(1.0, 2.0, 3.0, 4.0); MAX_RECTS + 10], secondary: vec![(1, 1.0, 2.0, 3.0, 4.0)] }.safe(&pages);
        assert_eq!(many.rects.len() + many.secondary.len(), MAX_RECTS);
    }
}
