//! The annotated copy (`seqgpt summarize --annotate`), checked from the pixels poppler draws
//! (pdftoppm renders annotations): on a rotated page, a cropped page whose MediaBox does not
//! start at the origin, and a page of two columns, the highlight colour covers each summary
//! sentence's lines and little else, the text under it stays dark, and the original bytes are
//! the copy's prefix. Also what cannot be annotated: encrypted and certified files.

#[path = "pdf/builder.rs"]
mod builder;
#[path = "pdf/ppm.rs"]
#[allow(dead_code)]
mod ppm;
mod common;

use builder::Pdf;
use ppm::Image;
use seqgpt_pdf::{AnnotateError, Annotations, Highlight, PageGeometry};
use seqgpt::reader::geometry;
use std::path::{Path, PathBuf};

const SCALE: f64 = 2.0; // pdftoppm -r 144

fn tool(name: &str) -> bool {
    let found = std::process::Command::new(name).arg("-v").output().is_ok();
    assert!(found || std::env::var_os("CI").is_none(), "{name} is missing under CI (tests/deps.sh installs it)");
    found
}

/// Prose for a page: distinct sentences, so that each is told from the others.
fn paragraph(topic: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 4 {
            0 => format!("The {topic} study measured how the method behaves on long documents number {i}."),
            1 => format!("Results for the {topic} case show a clear gain over the baseline in trial {i}."),
            2 => format!("We describe the {topic} setup, its data and the reason for each choice {i}."),
            _ => format!("In summary the {topic} approach is simple, fast and robust in setting {i}."),
        })
        .collect()
}

/// Content that sets `lines` of 10-point Helvetica from (x, y) down, 13 points apart, each
/// line at most `width` characters.
fn column(sentences: &[String], x: f64, y: f64, width: usize) -> (String, usize) {
    let mut lines = vec![String::new()];
    for s in sentences {
        for w in s.split(' ') {
            let cur = lines.last_mut().unwrap();
            if !cur.is_empty() && cur.len() + 1 + w.len() > width {
                lines.push(w.to_string());
            } else {
                if !cur.is_empty() {
                    cur.push(' ');
                }
                cur.push_str(w);
            }
        }
    }
    let mut c = String::new();
    for (i, l) in lines.iter().enumerate() {
        c.push_str(&format!("BT /F1 10 Tf {x} {} Td ({l}) Tj ET\n", y - 13.0 * i as f64));
    }
    (c, lines.len())
}

/// Page 1: turned a quarter (/Rotate 90). Page 2: MediaBox from (100, 200), cropped inside.
/// Page 3: two columns.
fn sample() -> Vec<u8> {
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
    let pages_id = pdf.reserve();
    let res = format!("<< /Font << /F1 {font} 0 R >> >>");
    let (p1, _) = column(&paragraph("turned", 8), 72.0, 720.0, 80);
    let (p2, _) = column(&paragraph("cropped", 8), 172.0, 900.0, 70);
    let (left, _) = column(&paragraph("left column", 6), 56.0, 720.0, 42);
    let (right, _) = column(&paragraph("right column", 6), 316.0, 720.0, 42);
    let pages = [
        (p1, "/MediaBox [0 0 612 792] /Rotate 90".to_string()),
        (p2, "/MediaBox [100 200 712 992] /CropBox [130 230 682 962]".to_string()),
        (left + &right, "/MediaBox [0 0 612 792]".to_string()),
    ];
    let mut kids = Vec::new();
    for (content, boxes) in pages {
        let c = pdf.stream("", content.as_bytes());
        kids.push(format!("{} 0 R", pdf.add(format!("<< /Type /Page /Parent {pages_id} 0 R {boxes} /Resources {res} /Contents {c} 0 R >>"))));
    }
    pdf.set(pages_id, format!("<< /Type /Pages /Kids [{}] /Count {} >>", kids.join(" "), kids.len()));
    let root = pdf.add(format!("<< /Type /Catalog /Pages {pages_id} 0 R >>"));
    pdf.finish(root)
}

/// Page `n` of `pdf` as poppler draws it (annotations included), its crop box as readers show
/// it (pdftoppm draws the media box unless told).
fn render(pdf: &Path, n: u32, dir: &Path) -> Image {
    let stem = dir.join(format!("{}-p{n}", pdf.file_stem().unwrap().to_string_lossy()));
    let st = std::process::Command::new("pdftoppm")
        .args(["-r", "144", "-cropbox", "-f", &n.to_string(), "-l", &n.to_string(), "-singlefile"])
        .arg(pdf)
        .arg(&stem)
        .status()
        .unwrap();
    assert!(st.success(), "pdftoppm failed on {}", pdf.display());
    Image::parse(&std::fs::read(stem.with_extension("ppm")).unwrap())
}

fn is_highlight(p: [u8; 3]) -> bool {
    p[0] > 200 && p[1] > 160 && p[2] < 120
}

fn is_dark(p: [u8; 3]) -> bool {
    p.iter().map(|&c| u32::from(c)).sum::<u32>() < 300
}

fn is_white(p: [u8; 3]) -> bool {
    p.iter().all(|&c| c > 240)
}

/// The pixel rectangle of a user-space box on the shown page, grown by `pad` pixels.
fn pixels(b: [f32; 4], g: &PageGeometry, pad: f64, img: &Image) -> (usize, usize, usize, usize) {
    let [l, t, r, bt] = geometry::to_page(b, g);
    let clampx = |v: f64| (v.max(0.0) as usize).min(img.w);
    let clampy = |v: f64| (v.max(0.0) as usize).min(img.h);
    (clampx(l * SCALE - pad), clampy(t * SCALE - pad), clampx(r * SCALE + pad), clampy(bt * SCALE + pad))
}

fn summarize_annotated(pdf: &Path, page: u32, out: &Path) -> serde_json::Value {
    let o = common::program(env!("CARGO_BIN_EXE_seqgpt"))
        .args(["summarize", "--local", "--length", "short", "--json", "--pages", &page.to_string()])
        .arg(pdf)
        .arg("--annotate")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "summarize --annotate failed: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn highlights_cover_each_sentence_on_turned_cropped_and_two_column_pages() {
    if !tool("pdftoppm") {
        return;
    }
    let dir = tmp("annotate");
    let original = dir.join("sample.pdf");
    let bytes = sample();
    std::fs::write(&original, &bytes).unwrap();
    let geo = seqgpt_pdf::page_geometry(&bytes, None, &Default::default()).unwrap();
    assert_eq!(geo.iter().map(|g| g.rotate).collect::<Vec<_>>(), [90, 0, 0]);
    assert_eq!(geo[1].area, [130.0, 230.0, 682.0, 962.0]);
    for n in 1..=3u32 {
        let out = dir.join(format!("annotated-{n}.pdf"));
        let v = summarize_annotated(&original, n, &out);
        let copy = std::fs::read(&out).unwrap();
        assert!(copy.len() > bytes.len() && copy.starts_with(&bytes), "page {n}: the original bytes must be the copy's prefix");
        let sentences = v["sentences"].as_array().unwrap();
        assert!(!sentences.is_empty(), "page {n}: the summary has no sentences");
        let g = &geo[n as usize - 1];
        let before = render(&original, n, &dir);
        let after = render(&out, n, &dir);
        assert_eq!((before.w, before.h), (after.w, after.h));
        let (sw, sh) = geometry::page_size(g);
        assert_eq!((before.w as f64 / SCALE).round(), sw.round(), "page {n}: the shown width");
        assert_eq!((before.h as f64 / SCALE).round(), sh.round(), "page {n}: the shown height");
        let mut inside = vec![false; after.w * after.h];
        let mut changed_inside = 0usize;
        for s in sentences {
            assert_eq!(s["page"].as_u64(), Some(u64::from(n)));
            let boxes: Vec<[f32; 4]> = s["boxes"].as_array().unwrap().iter().map(|b| {
                let b: Vec<f32> = b.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
                [b[0], b[1], b[2], b[3]]
            }).collect();
            assert!(!boxes.is_empty(), "page {n}: a sentence without boxes: {s}");
            let (mut text, mut text_kept, mut bg, mut bg_lit) = (0, 0, 0, 0);
            for b in &boxes {
                // Inside the line's box (a pixel in from its edges): background turned to the
                // highlight colour, text still dark.
                let (x0, y0, x1, y1) = pixels(*b, g, -1.0, &after);
                for y in y0..y1 {
                    for x in x0..x1 {
                        let (o, a) = (before.at(x, y), after.at(x, y));
                        if is_dark(o) {
                            text += 1;
                            text_kept += usize::from(is_dark(a));
                        } else if is_white(o) {
                            bg += 1;
                            bg_lit += usize::from(is_highlight(a));
                        }
                    }
                }
                let (x0, y0, x1, y1) = pixels(*b, g, 6.0, &after);
                for y in y0..y1 {
                    for x in x0..x1 {
                        inside[y * after.w + x] = true;
                    }
                }
            }
            assert!(text > 50, "page {n}: no text under the sentence's boxes: {s}");
            assert!(text_kept * 10 >= text * 9, "page {n}: the highlight hides the text ({text_kept} of {text} dark pixels stay)");
            assert!(bg > 0 && bg_lit * 10 >= bg * 9, "page {n}: only {bg_lit} of {bg} background pixels in the boxes are highlighted: {s}");
            changed_inside += bg_lit;
        }
        // Outside the sentences' boxes nothing changes but the note's icon, on the page of
        // the first sentence, at the top left of the visible area.
        let area = g.area;
        let icon = [area[0], area[3] - 40.0, area[0] + 40.0, area[3]];
        let (ix0, iy0, ix1, iy1) = pixels(icon, g, 20.0, &after);
        let mut changed_outside = 0usize;
        for y in 0..after.h {
            for x in 0..after.w {
                if inside[y * after.w + x] || (ix0..ix1).contains(&x) && (iy0..iy1).contains(&y) {
                    continue;
                }
                changed_outside += usize::from(before.at(x, y) != after.at(x, y));
            }
        }
        assert!(changed_outside * 100 <= changed_inside, "page {n}: {changed_outside} pixels changed outside the sentences' boxes ({changed_inside} inside)");
    }
}

#[test]
fn the_copy_is_a_sound_pdf_with_standard_annotations() {
    let dir = tmp("annotate-sound");
    let original = dir.join("sample.pdf");
    std::fs::write(&original, sample()).unwrap();
    let out = dir.join("copy.pdf");
    let v = summarize_annotated(&original, 3, &out);
    let copy = std::fs::read(&out).unwrap();
    let doc = lopdf::Document::load_mem(&copy).unwrap();
    let page = doc.get_pages()[&3];
    let annots = doc.get_page_annotations(page).unwrap();
    let highlights: Vec<_> = annots.iter().filter(|a| a.get(b"Subtype").and_then(|s| s.as_name()).ok() == Some(b"Highlight")).collect();
    let notes = annots.iter().filter(|a| a.get(b"Subtype").and_then(|s| s.as_name()).ok() == Some(b"Text")).count();
    assert_eq!(highlights.len(), v["sentences"].as_array().unwrap().len(), "one highlight per sentence");
    assert_eq!(notes, 1, "one note with the whole summary");
    for h in &highlights {
        let quads = h.get(b"QuadPoints").unwrap().as_array().unwrap();
        assert!(!quads.is_empty() && quads.len() % 8 == 0);
        assert!(h.has(b"AP") && h.has(b"Contents") && h.has(b"Rect"));
    }
    // The text is still the text: the update adds annotations, not content.
    let a = seqgpt_pdf::extract_text(&copy, &Default::default()).unwrap();
    let b = seqgpt_pdf::extract_text(&sample(), &Default::default()).unwrap();
    assert_eq!(a.pages.iter().map(|p| &p.text).collect::<Vec<_>>(), b.pages.iter().map(|p| &p.text).collect::<Vec<_>>());
    if tool("qpdf") {
        let o = std::process::Command::new("qpdf").arg("--check").arg(&out).output().unwrap();
        assert!(o.status.success(), "qpdf --check: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    }
}

fn one_highlight() -> Annotations {
    Annotations {
        highlights: vec![Highlight { page: 1, boxes: vec![[72.0, 700.0, 200.0, 712.0]], contents: "x".into() }],
        note: None,
        author: "seqgpt".into(),
        color: [1.0, 0.85, 0.1],
    }
}

fn with_catalog_extra(extra: &str) -> Vec<u8> {
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let c = pdf.stream("", b"BT /F1 12 Tf 72 700 Td (signed text) Tj ET");
    let pages_id = pdf.reserve();
    let page = pdf.add(format!("<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 {font} 0 R >> >> /Contents {c} 0 R >>"));
    pdf.set(pages_id, format!("<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>"));
    let root = pdf.add(format!("<< /Type /Catalog /Pages {pages_id} 0 R {extra} >>"));
    pdf.finish(root)
}

#[test]
fn certified_documents_are_refused_and_signed_ones_keep_their_signed_bytes() {
    let certified = with_catalog_extra(
        "/Perms << /DocMDP << /Type /Sig /Filter /Adobe.PPKLite /ByteRange [0 10 20 30] /Contents <00> \
         /Reference [<< /Type /SigRef /TransformMethod /DocMDP /TransformParams << /Type /TransformParams /P 1 /V /1.2 >> >>] >> >>",
    );
    match seqgpt_pdf::annotate(&certified, &one_highlight(), &Default::default()) {
        Err(AnnotateError::Certified(why)) => assert!(why.contains("no changes"), "{why}"),
        other => panic!("a document certified against changes was annotated: {:?}", other.map(|v| v.len())),
    }
    // Signed, not certified: the update is appended, the signed bytes stay as they were.
    let signed = with_catalog_extra("/AcroForm << /SigFlags 3 /Fields [] >>");
    let copy = seqgpt_pdf::annotate(&signed, &one_highlight(), &Default::default()).unwrap();
    assert!(copy.starts_with(&signed));
}

#[test]
fn encrypted_documents_are_refused_with_the_reason() {
    let plain = builder::helvetica_page(b"BT /F1 12 Tf 72 700 Td (secret text) Tj ET");
    let mut doc = lopdf::Document::load_mem(&plain).unwrap();
    let version = lopdf::EncryptionVersion::V2 { document: &doc, owner_password: "owner", user_password: "", key_length: 128, permissions: lopdf::Permissions::all() };
    let state = lopdf::EncryptionState::try_from(version).unwrap();
    doc.encrypt(&state).unwrap();
    let mut enc = Vec::new();
    doc.save_to(&mut enc).unwrap();
    assert_eq!(seqgpt_pdf::annotate(&enc, &one_highlight(), &Default::default()), Err(AnnotateError::Encrypted));
    // Through the command: the summary is printed, the copy refused, the exit status says so.
    let dir = tmp("annotate-enc");
    let (pdf, out) = (dir.join("enc.pdf"), dir.join("out.pdf"));
    std::fs::write(&pdf, &enc).unwrap();
    let o = common::program(env!("CARGO_BIN_EXE_seqgpt")).args(["summarize", "--local"]).arg(&pdf).arg("--annotate").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("encrypted"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("secret text"), "the summary is still printed");
    assert!(!out.exists(), "no copy is left behind");
}

#[test]
fn a_copy_never_replaces_its_original_and_pages_must_exist() {
    let dir = tmp("annotate-self");
    let pdf = dir.join("a.pdf");
    std::fs::write(&pdf, sample()).unwrap();
    let o = common::program(env!("CARGO_BIN_EXE_seqgpt")).args(["summarize", "--local"]).arg(&pdf).arg("--annotate").arg(&pdf).output().unwrap();
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("the PDF itself"));
    assert_eq!(std::fs::read(&pdf).unwrap(), sample());
    let mut a = one_highlight();
    a.highlights[0].page = 9;
    assert_eq!(seqgpt_pdf::annotate(&sample(), &a, &Default::default()), Err(AnnotateError::NoSuchPage(9, 3)));
}
