//! An annotated copy of a PDF: highlights over given line boxes and one note, appended to the
//! original as an incremental update (ISO 32000-1, 7.5.6).
//!
//! The original bytes stay the copy's prefix, unchanged, so whatever they carry (a signature's
//! byte range, the producer's own structure) stays as it was; the update adds one Highlight
//! annotation per highlight, one Text annotation (a note), and new versions of the pages that
//! get them (their /Annots arrays). Every reader that shows annotations shows these: each
//! carries its own appearance stream (a multiply-blended fill, so the text under it stays
//! black), and the standard /QuadPoints for readers that draw their own.
//!
//! Refused, with the reason: encrypted files (new strings would have to be encrypted with the
//! document's key), files certified against changes (a DocMDP signature that allows no
//! annotations), and damaged files (an update must point into a sound cross-reference chain).

use super::document::{open_for_update, pages};
use super::objects::{dict_of, get, get_array, get_dict, get_name, get_num};
use super::{Limits, PdfError};
use lopdf::{Dictionary, IncrementalDocument, Object, ObjectId, Stream, StringFormat};

/// Where a page is: its visible area and how a reader turns it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageGeometry {
    /// 1-based page number.
    pub number: u32,
    /// The visible area in user space, x0, y0, x1, y1: the CropBox within the MediaBox.
    pub area: [f32; 4],
    /// The page's /Rotate: 0, 90, 180 or 270 degrees clockwise.
    pub rotate: u16,
}

/// One highlight: the line boxes of a passage on one page.
#[derive(Debug, Clone, PartialEq)]
pub struct Highlight {
    /// 1-based page number.
    pub page: u32,
    /// One box per line, x0, y0, x1, y1 in that page's user space.
    pub boxes: Vec<[f32; 4]>,
    /// What the annotation says (a reader shows it on hover or in its annotation list).
    pub contents: String,
}

/// What to add to a copy.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotations {
    pub highlights: Vec<Highlight>,
    /// A note (a Text annotation, closed) at the top left of this page, with this text.
    pub note: Option<(u32, String)>,
    /// The annotations' author (/T).
    pub author: String,
    /// Highlight colour, RGB in 0..1.
    pub color: [f32; 3],
}

/// Why no copy was written.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum AnnotateError {
    /// The file cannot be read, or has no such page.
    #[error(transparent)]
    Pdf(#[from] PdfError),
    #[error("the PDF is encrypted: an annotated copy would need its new text encrypted with the document's key, which is not supported; annotate a decrypted copy (qpdf --decrypt)")]
    Encrypted,
    #[error("the PDF is certified against changes ({0}): annotating it would break its certification")]
    Certified(String),
    #[error("the PDF is damaged ({0}): an update appended to it would point into the damage; annotate a repaired copy (qpdf in.pdf out.pdf)")]
    Damaged(String),
    #[error("page {0} is not in the document (it has {1})")]
    NoSuchPage(u32, u32),
    #[error("cannot write the update: {0}")]
    Write(String),
}

/// The visible area and rotation of every page, in order.
pub fn page_geometry(bytes: &[u8], password: Option<&str>, limits: &Limits) -> Result<Vec<PageGeometry>, PdfError> {
    let (doc, _) = super::document::open(bytes, password, limits)?;
    let mut warnings = Vec::new();
    let list = pages(&doc, limits, &mut warnings)?;
    Ok(list
        .iter()
        .enumerate()
        .map(|(i, p)| PageGeometry {
            number: i as u32 + 1,
            area: p.bbox.unwrap_or([0.0, 0.0, 612.0, 792.0]).map(|v| v as f32),
            rotate: p.rotate,
        })
        .collect())
}

/// The original bytes followed by an update that adds `what`. Highlights without boxes are
/// left out; boxes are clipped to their page's visible area.
pub fn annotate(bytes: &[u8], what: &Annotations, limits: &Limits) -> Result<Vec<u8>, AnnotateError> {
    let (doc, warnings) = open_for_update(bytes, limits)?;
    if doc.trailer.has(b"Encrypt") || doc.encryption_state.is_some() {
        return Err(AnnotateError::Encrypted);
    }
    if let Some(w) = warnings.first() {
        return Err(AnnotateError::Damaged(w.clone()));
    }
    if doc.xref_start == 0 {
        return Err(AnnotateError::Damaged("its cross-reference table could not be found".into()));
    }
    if let Some(why) = certified_against_annotations(&doc) {
        return Err(AnnotateError::Certified(why));
    }
    let mut page_warnings = Vec::new();
    let list = pages(&doc, limits, &mut page_warnings)?;
    if !page_warnings.is_empty() {
        return Err(AnnotateError::Damaged(page_warnings.join("; ")));
    }
    let count = list.len() as u32;
    // Per page: its object (None: inline or missing) and its visible area.
    let geometry: Vec<(Option<ObjectId>, [f32; 4])> = list
        .iter()
        .map(|p| (p.id.filter(|_| p.dict.is_some()), p.bbox.unwrap_or([0.0, 0.0, 612.0, 792.0]).map(|v| v as f32)))
        .collect();
    drop(list);
    let page_of = |n: u32| -> Result<(ObjectId, [f32; 4]), AnnotateError> {
        let &(id, area) = geometry.get((n as usize).wrapping_sub(1)).ok_or(AnnotateError::NoSuchPage(n, count))?;
        let id = id.ok_or_else(|| AnnotateError::Damaged(format!("page {n} has no object of its own in the file")))?;
        Ok((id, area))
    };

    // Each page's annotations to add, in page order.
    let mut added: std::collections::BTreeMap<u32, Vec<Dictionary>> = Default::default();
    for h in &what.highlights {
        let (id, area) = page_of(h.page)?;
        let boxes: Vec<[f32; 4]> = h.boxes.iter().filter_map(|b| clip(*b, area)).collect();
        if boxes.is_empty() {
            continue;
        }
        added.entry(h.page).or_default().push(highlight(id, &boxes, &h.contents, what));
    }
    if let Some((n, text)) = &what.note {
        let (id, area) = page_of(*n)?;
        added.entry(*n).or_default().push(note(id, area, text, &what.author));
    }

    let mut inc = IncrementalDocument::create_from(bytes.to_vec(), doc);
    // New objects are numbered after every number the file has used (/Size counts them all,
    // the free ones too).
    let size = get_num(inc.get_prev_documents(), &inc.get_prev_documents().trailer, b"Size").unwrap_or(0.0) as u32;
    inc.new_document.max_id = inc.new_document.max_id.max(size.saturating_sub(1));
    for (n, annots) in added {
        let (page_id, _) = page_of(n)?;
        let mut refs: Vec<Object> = Vec::new();
        for mut a in annots {
            if let Ok(Object::Dictionary(ap)) = a.get_mut(b"AP") {
                // The appearance stream, written as an object of its own.
                if let Ok(Object::Stream(s)) = ap.get(b"N").cloned() {
                    let sid = inc.new_document.add_object(Object::Stream(s));
                    ap.set("N", Object::Reference(sid));
                }
            }
            refs.push(Object::Reference(inc.new_document.add_object(Object::Dictionary(a))));
        }
        let prev = inc.get_prev_documents();
        let page = prev.get_object(page_id).ok().and_then(|o| dict_of(prev, o)).cloned().ok_or_else(|| AnnotateError::Damaged(format!("page {n} is unreadable")))?;
        // The page's own annotations come first, as they were; an /Annots held in an object of
        // its own is read through and written inline (that object stays as it was).
        let mut annots: Vec<Object> = get_array(prev, &page, b"Annots").map(|a| a.to_vec()).unwrap_or_default();
        annots.extend(refs);
        let mut page = page;
        page.set("Annots", Object::Array(annots));
        inc.new_document.objects.insert(page_id, Object::Dictionary(page));
    }
    let mut out = Vec::with_capacity(bytes.len() + 4096);
    inc.save_to(&mut out).map_err(|e| AnnotateError::Write(e.to_string()))?;
    debug_assert!(out.starts_with(bytes));
    Ok(out)
}

/// Why a DocMDP certification forbids adding annotations (permission 1: no changes; 2: form
/// filling and signing only), `None` when the file has none or allows them (3).
fn certified_against_annotations(doc: &lopdf::Document) -> Option<String> {
    let root = doc.trailer.get(b"Root").ok().and_then(|o| dict_of(doc, o))?;
    let perms = get_dict(doc, root, b"Perms")?;
    let sig = get_dict(doc, perms, b"DocMDP")?;
    for r in get_array(doc, sig, b"Reference").unwrap_or(&[]) {
        let Some(r) = dict_of(doc, r) else { continue };
        if get_name(doc, r, b"TransformMethod") != Some(b"DocMDP") {
            continue;
        }
        let p = get_dict(doc, r, b"TransformParams").and_then(|t| get_num(doc, t, b"P")).unwrap_or(2.0) as i64;
        return match p {
            1 => Some("its certification allows no changes at all".into()),
            2 => Some("its certification allows form filling and signing only".into()),
            _ => None,
        };
    }
    // A DocMDP signature without a readable transform: the default permission (2) applies.
    get(doc, sig, b"V").map(|_| "its certification allows form filling and signing only".to_string())
}

/// `b` within `area`, or `None` when nothing of it is inside or it is not a box.
fn clip(b: [f32; 4], area: [f32; 4]) -> Option<[f32; 4]> {
    if !b.iter().all(|v| v.is_finite()) {
        return None;
    }
    let r = [b[0].max(area[0]), b[1].max(area[1]), b[2].min(area[2]), b[3].min(area[3])];
    (r[0] < r[2] && r[1] < r[3]).then_some(r)
}

/// A text string as PDF writes any Unicode: UTF-16BE with its byte order mark.
fn text_string(s: &str) -> Object {
    let mut bytes = vec![0xFE, 0xFF];
    for u in s.encode_utf16() {
        bytes.extend_from_slice(&u.to_be_bytes());
    }
    Object::String(bytes, StringFormat::Hexadecimal)
}

fn reals(v: &[f32]) -> Object {
    Object::Array(v.iter().map(|&x| Object::Real((x * 100.0).round() / 100.0)).collect())
}

/// The highlight's box: a line box grown a little above and below, as readers draw a text
/// selection (the glyph box is tight to the ink of the line's tallest glyphs).
fn grown(b: [f32; 4]) -> [f32; 4] {
    let pad = ((b[3] - b[1]) * 0.08).clamp(0.3, 2.0);
    [b[0], b[1] - pad, b[2], b[3] + pad]
}

fn highlight(page: ObjectId, boxes: &[[f32; 4]], contents: &str, what: &Annotations) -> Dictionary {
    let boxes: Vec<[f32; 4]> = boxes.iter().map(|&b| grown(b)).collect();
    let rect = boxes.iter().fold([f32::MAX, f32::MAX, f32::MIN, f32::MIN], |r, b| [r[0].min(b[0]), r[1].min(b[1]), r[2].max(b[2]), r[3].max(b[3])]);
    // Upper left, upper right, lower left, lower right: the order readers take (the
    // standard's figure says counter-clockwise; Acrobat, poppler, pdf.js and MuPDF read this).
    let quads: Vec<f32> = boxes.iter().flat_map(|b| [b[0], b[3], b[2], b[3], b[0], b[1], b[2], b[1]]).collect();
    let [r, g, bl] = what.color;
    let mut ops = format!("/GS0 gs {r:.3} {g:.3} {bl:.3} rg\n");
    for b in &boxes {
        ops.push_str(&format!("{:.2} {:.2} {:.2} {:.2} re\n", b[0], b[1], b[2] - b[0], b[3] - b[1]));
    }
    ops.push_str("f\n");
    let mut gs = Dictionary::new();
    gs.set("Type", Object::Name(b"ExtGState".to_vec()));
    gs.set("BM", Object::Name(b"Multiply".to_vec()));
    let mut ext = Dictionary::new();
    ext.set("GS0", Object::Dictionary(gs));
    let mut res = Dictionary::new();
    res.set("ExtGState", Object::Dictionary(ext));
    let mut form = Dictionary::new();
    form.set("Type", Object::Name(b"XObject".to_vec()));
    form.set("Subtype", Object::Name(b"Form".to_vec()));
    form.set("BBox", reals(&rect));
    form.set("Resources", Object::Dictionary(res));
    let mut ap = Dictionary::new();
    ap.set("N", Object::Stream(Stream::new(form, ops.into_bytes())));

    let mut d = Dictionary::new();
    d.set("Type", Object::Name(b"Annot".to_vec()));
    d.set("Subtype", Object::Name(b"Highlight".to_vec()));
    d.set("Rect", reals(&rect));
    d.set("QuadPoints", reals(&quads));
    d.set("C", reals(&what.color));
    d.set("F", Object::Integer(4)); // Print: the highlight prints with the page.
    d.set("P", Object::Reference(page));
    d.set("T", text_string(&what.author));
    d.set("Contents", text_string(contents));
    d.set("AP", Object::Dictionary(ap));
    d
}

fn note(page: ObjectId, area: [f32; 4], text: &str, author: &str) -> Dictionary {
    // A 20-point icon just inside the top left corner of the visible area.
    let rect = [area[0] + 4.0, area[3] - 24.0, area[0] + 24.0, area[3] - 4.0];
    let mut d = Dictionary::new();
    d.set("Type", Object::Name(b"Annot".to_vec()));
    d.set("Subtype", Object::Name(b"Text".to_vec()));
    d.set("Rect", reals(&rect));
    d.set("Name", Object::Name(b"Comment".to_vec()));
    d.set("Open", Object::Boolean(false));
    // Print only: with NoRotate a reader keeps the icon upright about its corner, which on a
    // turned page puts it off the page.
    d.set("F", Object::Integer(4));
    d.set("C", reals(&[1.0, 0.85, 0.0]));
    d.set("P", Object::Reference(page));
    d.set("T", text_string(author));
    d.set("Contents", text_string(text));
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_keeps_boxes_inside_the_area_and_drops_the_rest() {
        let area = [10.0, 20.0, 200.0, 300.0];
        assert_eq!(clip([0.0, 30.0, 50.0, 40.0], area), Some([10.0, 30.0, 50.0, 40.0]));
        assert_eq!(clip([300.0, 30.0, 350.0, 40.0], area), None);
        assert_eq!(clip([f32::NAN, 30.0, 50.0, 40.0], area), None);
    }

    #[test]
    fn text_strings_are_utf16_with_a_byte_order_mark() {
        let Object::String(b, _) = text_string("é中") else { panic!() };
        assert_eq!(b, vec![0xFE, 0xFF, 0x00, 0xE9, 0x4E, 0x2D]);
    }
}
