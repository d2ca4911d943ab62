//! `seqgpt show` with a real zathura, under Xvfb, on a private session bus with seqgptd: the
//! zathura that has the file open switches to the annotated copy (screenshots before and
//! after: the highlight colour over the first sentence's box; `--goto`'s page; the same
//! zathura still running), and the cases on the way: zathura with another file (a new one
//! opens this file's copy), no zathura installed, a summary written by the model (nothing to
//! highlight: said, and printed). With SEQGPT_SCREENSHOTS=DIR the screenshots are written
//! there as PPM (docs/img holds them as PNG). Needs Xvfb, zathura with its PDF plugin, xwd and
//! ImageMagick's convert (tests/deps.sh installs them): without them the tests fail under CI=1.

#![allow(dead_code)]

#[path = "pdf/builder.rs"]
mod builder;
#[path = "pdf/ppm.rs"]
mod ppm;
mod common;
mod dbus_harness;

use builder::Pdf;
use ppm::Image;
use dbus_harness::{Bus, Daemon};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ZATHURARC: &str = "set highlight-color \"#ff00ff\"\nset highlight-active-color \"#00c8ff\"\nset highlight-transparency 0.6\n\
set adjust-open \"best-fit\"\nset window-width 900\nset window-height 1000\nset guioptions \"\"\nset default-bg \"#404040\"\n\
set dbus-raise-window false\nset database \"null\"\n";

fn have(program: &str) -> bool {
    let found = seqgpt::reader::launch::on_path(program);
    assert!(found || std::env::var_os("CI").is_none(), "{program} is missing under CI (tests/deps.sh installs it)");
    if !found {
        eprintln!("skipped: {program} is not installed");
    }
    found
}

/// An X server of its own, and the zathuras started on it (killed at the end).
struct Screen {
    xvfb: Child,
    display: String,
    dir: PathBuf,
    bus: String,
}

impl Screen {
    fn start(bus: &Bus) -> Screen {
        // Xvfb picks a free display and writes its number to stdout (-displayfd): the tests of
        // one binary run at once, and a number derived from the pid would be shared by them.
        let mut xvfb = Command::new("Xvfb")
            .args(["-displayfd", "1", "-screen", "0", "1000x1100x24", "-nolisten", "tcp"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Xvfb");
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(xvfb.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let n: u32 = line.trim().parse().unwrap_or_else(|_| panic!("Xvfb did not start: it printed {line:?}"));
        let display = format!(":{n}");
        let dir = bus.dir.path().join("zathura");
        std::fs::create_dir_all(dir.join("config")).unwrap();
        std::fs::write(dir.join("config/zathurarc"), ZATHURARC).unwrap();
        Screen { xvfb, display, dir, bus: bus.address.clone() }
    }

    /// A command for one of this machine's programs (zathura, xwd) that runs on this screen
    /// and bus, with a home of its own.
    fn command(&self, program: &str) -> Command {
        self.on_screen(Command::new(program))
    }

    /// `seqgpt` itself (under emulation, through the emulator: `common::program`).
    fn seqgpt(&self) -> Command {
        self.on_screen(common::program(env!("CARGO_BIN_EXE_seqgpt")))
    }

    fn on_screen(&self, mut c: Command) -> Command {
        c.env("DISPLAY", &self.display)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .env("HOME", &self.dir)
            .env("XDG_CACHE_HOME", self.dir.join("cache"))
            .env("XDG_DATA_HOME", self.dir.join("data"))
            .env_remove("WAYLAND_DISPLAY");
        c
    }

    fn zathura(&self, file: &Path) -> Child {
        // Its messages go to a log that a failed wait prints.
        let log = std::fs::File::create(self.dir.join(format!("zathura-{}.log", file.file_stem().unwrap().to_string_lossy()))).unwrap();
        self.command("zathura").arg("-c").arg(self.dir.join("config")).arg(file).stdout(Stdio::null()).stderr(log).spawn().expect("start zathura")
    }

    /// Where `seqgpt show` puts the annotated copy of `file` (this screen's cache).
    fn copy_of(&self, file: &Path) -> PathBuf {
        self.dir.join("cache/seqgpt/annotated").join(format!("{}.annotated.pdf", file.file_stem().unwrap().to_string_lossy()))
    }

    fn show(&self, args: &[&str]) -> std::process::Output {
        self.seqgpt().arg("show").arg("--address").arg(&self.bus).args(args).output().unwrap()
    }

    /// The screen as RGB pixels.
    fn shot(&self) -> Image {
        let xwd = self.command("xwd").args(["-root", "-silent"]).output().unwrap();
        assert!(xwd.status.success(), "xwd failed");
        let mut convert = Command::new("convert").args(["xwd:-", "ppm:-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        use std::io::Write;
        convert.stdin.take().unwrap().write_all(&xwd.stdout).unwrap();
        let out = convert.wait_with_output().unwrap();
        Image::parse(&out.stdout)
    }

    /// The zathura instances on the bus.
    fn instances(&self) -> Vec<seqgpt::reader::zathura::Instance> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let conn = zbus::connection::Builder::address(self.bus.as_str()).unwrap().build().await.unwrap();
            seqgpt::reader::zathura::instances(&conn).await.unwrap()
        })
    }

    fn page_number(&self, name: &str) -> u32 {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let conn = zbus::connection::Builder::address(self.bus.as_str()).unwrap().build().await.unwrap();
            seqgpt::reader::zathura::page_number(&conn, name).await.unwrap()
        })
    }

    fn wait_for(&self, file: &Path) -> seqgpt::reader::zathura::Instance {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(i) = seqgpt::reader::zathura::showing(&self.instances(), file) {
                return i.clone();
            }
            if Instant::now() > deadline {
                let logs: Vec<String> = std::fs::read_dir(&self.dir)
                    .unwrap()
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
                    .map(|e| format!("{}:\n{}", e.path().display(), std::fs::read_to_string(e.path()).unwrap_or_default()))
                    .collect();
                panic!("no zathura showed {} within 30 s; zathura said:\n{}", file.display(), logs.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        for i in self.instances() {
            let _ = Command::new("kill").arg(i.pid.to_string()).status();
        }
        let _ = self.xvfb.kill();
        let _ = self.xvfb.wait();
    }
}

/// The page on the screen: the bounding box of the white pixels (the page; the background is
/// grey).
fn page_on_screen(img: &Image) -> Option<(usize, usize, usize, usize)> {
    let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
    for y in 0..img.h {
        for x in 0..img.w {
            if img.at(x, y) == [255, 255, 255] {
                x0 = x0.min(x);
                y0 = y0.min(y);
                x1 = x1.max(x + 1);
                y1 = y1.max(y + 1);
            }
        }
    }
    (x1 > x0 + 100 && y1 > y0 + 100).then_some((x0, y0, x1, y1))
}

fn prose_page(pdf: &mut Pdf, pages_id: u32, font: u32, topic: &str) -> u32 {
    let mut c = String::new();
    let sentences = [
        format!("The {topic} report explains how the new method reads long documents quickly."),
        format!("Its results on the {topic} data show a clear gain over the older baseline."),
        format!("We describe the {topic} setup, the data and the reason for every choice."),
        format!("In short the {topic} approach is simple, fast and robust on every input."),
    ];
    let mut y = 720;
    for s in sentences.iter().cycle().take(12) {
        c.push_str(&format!("BT /F1 11 Tf 72 {y} Td ({s}) Tj ET\n"));
        y -= 16;
    }
    let content = pdf.stream("", c.as_bytes());
    pdf.add(format!("<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 {font} 0 R >> >> /Contents {content} 0 R >>"))
}

fn document(topics: &[&str]) -> Vec<u8> {
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
    let pages_id = pdf.reserve();
    let kids: Vec<String> = topics.iter().map(|t| format!("{} 0 R", prose_page(&mut pdf, pages_id, font, t))).collect();
    pdf.set(pages_id, format!("<< /Type /Pages /Kids [{}] /Count {} >>", kids.join(" "), kids.len()));
    let root = pdf.add(format!("<< /Type /Catalog /Pages {pages_id} 0 R >>"));
    pdf.finish(root)
}

fn ready() -> Option<Bus> {
    for p in ["Xvfb", "zathura", "xwd", "convert"] {
        if !have(p) {
            return None;
        }
    }
    let plugin = Path::new("/usr/lib/x86_64-linux-gnu/zathura/libpdf-poppler.so").exists()
        || std::fs::read_dir("/usr/lib").ok().into_iter().flatten().flatten().any(|d| d.path().join("zathura/libpdf-poppler.so").exists());
    assert!(plugin || std::env::var_os("CI").is_none(), "zathura-pdf-poppler is missing under CI (tests/deps.sh installs it)");
    if !plugin {
        return None;
    }
    Bus::start()
}

#[test]
fn another_file_open_means_a_new_zathura_and_missing_zathura_is_said() {
    let Some(bus) = ready() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let screen = Screen::start(&bus);
    let (a, b) = (screen.dir.join("a.pdf"), screen.dir.join("b.pdf"));
    std::fs::write(&a, document(&["river"])).unwrap();
    std::fs::write(&b, document(&["forest"])).unwrap();
    let _other = screen.zathura(&b);
    screen.wait_for(&b);
    let o = screen.show(&[a.to_str().unwrap(), "--zathura-config", screen.dir.join("config").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("shows another file"), "{err}");
    let started = screen.wait_for(&screen.copy_of(&a));
    assert_eq!(screen.instances().len(), 2, "the other file's zathura is left alone");
    // --no-start with no zathura on the file names what runs instead.
    let c = screen.dir.join("c.pdf");
    std::fs::write(&c, document(&["desert"])).unwrap();
    let o = screen.show(&[c.to_str().unwrap(), "--no-start"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("no zathura shows") && err.contains("b.pdf"), "{err}");
    // No zathura on this machine.
    let o = screen.seqgpt().env("PATH", "/nonexistent").arg("show").arg("--address").arg(&screen.bus).arg(&c).args(["--reader", "zathura"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("zathura is not installed"), "{err}");
    let o = screen.seqgpt().env("PATH", "/nonexistent").arg("show").arg("--address").arg(&screen.bus).arg(&c).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("no PDF reader found"), "{err}");
    let _ = started;
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The share of the non-dark pixels inside `r` (left, top, right, bottom) that have the
/// highlight's colour (text pixels, dark under a multiply blend, left out).
fn highlighted_share(img: &Image, r: [usize; 4]) -> f64 {
    let [hr, hg, hb] = seqgpt::reader::annotated::HIGHLIGHT_RGB.map(|c| (c * 255.0) as i32);
    let (mut light, mut coloured) = (0usize, 0usize);
    for y in r[1]..r[3] {
        for x in r[0]..r[2] {
            let [pr, pg, pb] = img.at(x, y).map(i32::from);
            if pr + pg + pb < 300 {
                continue;
            }
            light += 1;
            if (pr - hr).abs() < 40 && (pg - hg).abs() < 40 && (pb - hb).abs() < 60 {
                coloured += 1;
            }
        }
    }
    assert!(light > 20, "the box {r:?} holds no light pixels: it lies off the page");
    coloured as f64 / light as f64
}

fn save(img: &Image, name: &str) {
    if let Some(dir) = std::env::var_os("SEQGPT_SCREENSHOTS") {
        std::fs::write(Path::new(&dir).join(name), img.to_ppm()).unwrap();
    }
}

#[test]
fn the_zathura_that_has_the_file_open_shows_the_highlights_and_goes_to_a_sentence() {
    let Some(bus) = ready() else { return };
    let _daemon = Daemon::start(&bus, "", &[]);
    let screen = Screen::start(&bus);
    let file = screen.dir.join("report.pdf");
    std::fs::write(&file, document(&["river", "forest", "harbour"])).unwrap();
    let mut reader = screen.zathura(&file);
    let pid = screen.wait_for(&file).pid;
    std::thread::sleep(Duration::from_millis(1500));
    let before = screen.shot();
    save(&before, "zathura-before.ppm");
    // The summary's sentences, with their boxes, as the daemon gives them.
    let o = screen.seqgpt().args(["summarize", "--address", &screen.bus, "--json"]).arg(&file).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let sentences = summary["sentences"].as_array().expect("sentences").clone();
    assert!(sentences.len() >= 2, "an extractive summary of three pages has sentences: {summary}");
    let o = screen.show(&[file.to_str().unwrap()]);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{err}");
    assert!(out.contains(&format!("zathura (PID {pid}) shows")), "the open zathura is used: {out}");
    assert_eq!(out.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())).count(), sentences.len(), "sentences printed numbered: {out}");
    let shown = screen.wait_for(&screen.copy_of(&file));
    assert_eq!(shown.pid, pid, "the same zathura shows the copy");
    std::thread::sleep(Duration::from_millis(1500));
    let after = screen.shot();
    save(&after, "zathura-after.ppm");
    // Sentence 1's first box on the screen: the page is the white area, scaled from points.
    let first = &sentences[0];
    let page = first["page"].as_u64().unwrap() as u32;
    let geometry = seqgpt_pdf::page_geometry(&std::fs::read(&file).unwrap(), None, &Default::default()).unwrap();
    let g = &geometry[page as usize - 1];
    let b: Vec<f32> = first["boxes"][0].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
    let [l, t, r, bt] = seqgpt::reader::geometry::to_page([b[0], b[1], b[2], b[3]], g);
    let (x0, y0, x1, _) = page_on_screen(&after).expect("a page on the screen");
    let scale = (x1 - x0) as f64 / seqgpt::reader::geometry::page_size(g).0;
    let rect = [x0 + (l * scale) as usize + 2, y0 + (t * scale) as usize + 2, x0 + (r * scale) as usize - 2, y0 + (bt * scale) as usize - 2];
    assert_eq!(screen.page_number(&shown.name) + 1, page, "at sentence 1's page");
    let (was, is) = (highlighted_share(&before, rect), highlighted_share(&after, rect));
    assert!(was < 0.05, "before: {was:.3} of the box already highlight-coloured");
    assert!(is > 0.8, "after: only {is:.3} of sentence 1's box is highlight-coloured");
    // --goto N: the page of the last sentence, in the same zathura.
    let n = sentences.len();
    let target = sentences[n - 1]["page"].as_u64().unwrap() as u32;
    // Away from that page first, so that arriving there is --goto's doing.
    let away = if target == 3 { 0 } else { 2 };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let conn = zbus::connection::Builder::address(screen.bus.as_str()).unwrap().build().await.unwrap();
        seqgpt::reader::zathura::goto(&conn, &shown.name, away).await.unwrap();
    });
    assert_eq!(screen.page_number(&shown.name), away);
    let o = screen.show(&[file.to_str().unwrap(), "--goto", &n.to_string()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let deadline = Instant::now() + Duration::from_secs(10);
    while screen.page_number(&shown.name) + 1 != target {
        assert!(Instant::now() < deadline, "zathura is at page {}, not {target} after --goto {n}", screen.page_number(&shown.name) + 1);
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let goto = screen.shot();
    save(&goto, "zathura-goto.ppm");
    assert!(page_on_screen(&goto).is_some(), "a page is drawn after --goto");
    assert!(reader.try_wait().unwrap().is_none() && alive(pid), "zathura is still running");
    assert_eq!(screen.instances().len(), 1, "no second zathura");
}

#[test]
fn a_model_summary_is_printed_with_why_nothing_is_highlighted() {
    let Some(bus) = ready() else { return };
    let config = format!(
        "model = \"{}\"\ndevice = \"cpu\"\n[summarize]\ntemplate = \"short\"\n[summarize.templates.short]\nkind = \"instruction\"\nprompt = \"{{text}}\\n\\nSummary:\"\nmax_new_tokens = [8, 8, 8]\n",
        dbus_harness::tiny()
    );
    let _daemon = Daemon::start(&bus, &config, &[]);
    let screen = Screen::start(&bus);
    let file = screen.dir.join("m.pdf");
    std::fs::write(&file, document(&["river"])).unwrap();
    let o = screen.show(&[file.to_str().unwrap(), "--method", "model", "--no-start"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("written by the model"), "{err}");
    assert!(!String::from_utf8_lossy(&o.stdout).trim().is_empty(), "the model's summary is printed");
    assert!(screen.instances().is_empty(), "no reader is started for a summary with nothing to show");
    // No daemon at all: said so.
    drop(_daemon);
    let o = screen.show(&[file.to_str().unwrap(), "--no-start"]);
    assert!(!o.status.success());
}
