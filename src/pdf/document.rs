//! Opening a document with lopdf (encryption, damaged files, decompression caps) and walking
//! its page tree (inherited attributes, cycles, page-count cap).

use super::limits::Limits;
use super::objects::{deref, dict_of, get, get_dict, get_name, get_num, rect, ref_id};
use super::PdfError;
use lopdf::xref::XrefRecovery;
use lopdf::{DecompressError, Dictionary, Document, Error as LoError, LoadOptions, Object, ObjectId};
use std::collections::HashSet;

/// A page of the page tree, with its inherited attributes resolved.
pub(crate) struct PageRef<'a> {
    /// `None` when the page tree names an object the file does not have (truncated file).
    pub(crate) dict: Option<&'a Dictionary>,
    pub(crate) resources: Option<&'a Dictionary>,
    /// The visible area: CropBox, else MediaBox.
    pub(crate) bbox: Option<[f64; 4]>,
    /// The page object's number (`None` for a page written inline in its parent's /Kids).
    pub(crate) id: Option<ObjectId>,
    /// Its /Rotate (inherited), in degrees clockwise: 0, 90, 180 or 270.
    pub(crate) rotate: u16,
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    let Some(&first) = needle.first() else { return 0 };
    let mut n = 0;
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        match hay[i..].iter().position(|&b| b == first) {
            Some(k) => {
                i += k;
                if hay.get(i..i + needle.len()) == Some(needle) {
                    n += 1;
                }
                i += 1;
            }
            None => break,
        }
    }
    n
}

/// Appended to a damaged file before rebuilding its cross-reference table: it closes a stream
/// or object cut off by truncation, and gives the scan a catalog when the real one is lost (at
/// the end of a truncated file, or inside an object stream the broken table hid). Pages are
/// then found by scanning for /Type /Page objects.
const RECOVERY_TAIL: &[u8] = b"\nendstream\nendobj\n999998 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n\
999999 0 obj\n<< /Type /Catalog /Pages 999998 0 R >>\nendobj\n";

/// Open a PDF, repairing it if needed. Returns the document and warnings about repairs.
pub(crate) fn open(bytes: &[u8], password: Option<&str>, limits: &Limits) -> Result<(Document, Vec<String>), PdfError> {
    let first = open_as_is(bytes, password, limits, false, true);
    let first_pages = match &first {
        Ok((doc, _)) => match readable_pages(doc, limits) {
            (n, true) if n > 0 => return first, // a sound page tree
            (n, _) => n,
        },
        Err(PdfError::Invalid(_)) => 0,
        Err(_) => return first,
    };
    // Streams that end " endstream" (a space where an end of line belongs, as some producers
    // write them): the same bytes with the end of line put back parse, and keep every offset.
    if let Some(framed) = reframe_endstream(bytes) {
        if let Ok((doc, mut warnings)) = open_as_is(&framed, password, limits, false, true) {
            if readable_pages(&doc, limits).0 > first_pages {
                warnings.push("nonstandard PDF: streams end without an end of line before endstream; read as if they had one".into());
                return Ok((doc, warnings));
            }
        }
    }
    let mut patched = Vec::with_capacity(bytes.len() + RECOVERY_TAIL.len());
    patched.extend_from_slice(bytes);
    patched.extend_from_slice(RECOVERY_TAIL);
    let truncated = !bytes[bytes.len().saturating_sub(1024)..].windows(5).any(|w| w == b"%%EOF");
    match open_as_is(&patched, password, limits, true, true) {
        Ok((doc, mut warnings)) if readable_pages(&doc, limits).0 > first_pages => {
            warnings.retain(|w| !w.contains("cross-reference"));
            warnings.insert(
                0,
                if truncated {
                    "damaged PDF: the file is truncated; what remains was recovered by scanning it for objects".into()
                } else {
                    "damaged PDF: the cross-reference data is broken; the objects were recovered by scanning the file".into()
                },
            );
            Ok((doc, warnings))
        }
        _ => match first {
            Err(PdfError::Invalid(why)) if truncated => Err(PdfError::Invalid(format!(
                "truncated file (no %%EOF at the end) and no page could be recovered ({why})"
            ))),
            other => other,
        },
    }
}

/// `bytes` with every " endstream" after a non-whitespace byte written "\nendstream" (same
/// length, so the cross-reference offsets stay right); `None` when there is none.
fn reframe_endstream(bytes: &[u8]) -> Option<Vec<u8>> {
    const FIND: &[u8] = b" endstream";
    let mut out: Option<Vec<u8>> = None;
    let mut i = 1;
    while i + FIND.len() <= bytes.len() {
        if &bytes[i..i + FIND.len()] == FIND && !bytes[i - 1].is_ascii_whitespace() {
            out.get_or_insert_with(|| bytes.to_vec())[i] = b'\n';
            i += FIND.len();
        } else {
            i += 1;
        }
    }
    out
}

/// How many pages have content, and whether the page tree (not a scan) found them.
fn readable_pages(doc: &Document, limits: &Limits) -> (usize, bool) {
    let mut w = Vec::new();
    match pages(doc, limits, &mut w) {
        Ok(p) => (p.iter().filter(|p| p.dict.is_some_and(|d| page_has_content(doc, d))).count(), w.is_empty()),
        Err(_) => (0, false),
    }
}

fn page_has_content(doc: &Document, page: &Dictionary) -> bool {
    match page.get(b"Contents").map(|c| deref(doc, c)) {
        Ok(Object::Stream(_)) => true,
        Ok(Object::Array(a)) => a.iter().any(|o| matches!(deref(doc, o), Object::Stream(_))),
        _ => false,
    }
}

/// A PDF as it is, every object kept (annotations too), for writing an update onto it: no
/// repair (an update appended to a file whose cross-reference data had to be rebuilt would
/// point into damage). The warnings are lopdf's own corrections, if any.
pub(crate) fn open_for_update(bytes: &[u8], limits: &Limits) -> Result<(Document, Vec<String>), PdfError> {
    open_as_is(bytes, None, limits, false, false)
}

/// `skip_unread`: drop the objects text extraction never reads ([`keep_object`]).
fn open_as_is(bytes: &[u8], password: Option<&str>, limits: &Limits, rebuild: bool, skip_unread: bool) -> Result<(Document, Vec<String>), PdfError> {
    if bytes.len() > limits.max_file_bytes {
        return Err(PdfError::TooLarge(format!(
            "the file has {} bytes, more than {} (limit max_file_bytes)",
            bytes.len(),
            limits.max_file_bytes
        )));
    }
    let head = &bytes[..bytes.len().min(1024)];
    if count(head, b"%PDF-") == 0 {
        return Err(PdfError::Invalid("not a PDF file (no %PDF- header)".into()));
    }
    // lopdf decodes object and cross-reference streams while loading. Share the document's
    // decoding budget among them, so many small bombs cannot add up to more than one big one.
    let streams = (count(bytes, b"/ObjStm") + count(bytes, b"/XRef")).max(1);
    let load_cap = limits.max_stream_bytes.min(limits.max_document_bytes / streams).max(1);
    let options = LoadOptions {
        password: password.map(str::to_string),
        max_decompressed_size: Some(load_cap),
        force_reconstruct: rebuild,
        filter: if skip_unread { Some(keep_object) } else { None },
        ..LoadOptions::default()
    };
    let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Document::load_mem_with_options(bytes, options)));
    let doc = match loaded {
        Err(_) => return Err(PdfError::Invalid("the PDF parser failed on this file (damaged file?)".into())),
        Ok(Err(e)) => return Err(map_load_error(e, password, load_cap)),
        Ok(Ok(doc)) => doc,
    };
    if doc.is_encrypted() {
        // lopdf tried the empty user password (and the given one) and neither opened it.
        if let Some(enc) = doc.trailer.get(b"Encrypt").ok().and_then(|o| dict_of(&doc, o)) {
            if let Some(filter) = get_name(&doc, enc, b"Filter") {
                if filter != b"Standard" {
                    return Err(PdfError::UnsupportedEncryption(format!(
                        "security handler /{} (only the standard password handler is supported)",
                        String::from_utf8_lossy(filter)
                    )));
                }
            }
        }
        return Err(if password.is_some() { PdfError::WrongPassword } else { PdfError::PasswordRequired });
    }
    let mut warnings = Vec::new();
    match doc.xref_recovery {
        Some(XrefRecovery::Reconstructed) => {
            warnings.push("damaged PDF: the cross-reference table was unreadable and was rebuilt by scanning the file".into())
        }
        Some(XrefRecovery::OffsetCorrected) => {
            warnings.push("damaged PDF: cross-reference offsets were wrong and were corrected".into())
        }
        _ => {}
    }
    Ok((doc, warnings))
}

/// Load filter: drop the objects text extraction never reads, which can be most of a file
/// (hyperref's link annotations and named destinations: 82,000 of source2e.pdf's 90,000
/// objects, 240 MB of memory once parsed).
fn keep_object(id: ObjectId, obj: &mut Object) -> Option<(ObjectId, Object)> {
    if let Object::Dictionary(d) = obj {
        let is_type = |t: &[u8]| matches!(d.get(b"Type"), Ok(Object::Name(n)) if n == t);
        let named_dest = d.len() == 1 && d.has(b"D");
        let name_tree_node = d.has(b"Limits") && (d.has(b"Names") || d.has(b"Kids"));
        if is_type(b"Annot") || named_dest || name_tree_node {
            return None;
        }
    }
    // lopdf keeps `obj` for objects read directly and the returned copy for members of object
    // streams, so both must hold the object.
    Some((id, obj.clone()))
}

fn map_load_error(e: LoError, password: Option<&str>, load_cap: usize) -> PdfError {
    match e {
        LoError::InvalidPassword => {
            if password.is_some() {
                PdfError::WrongPassword
            } else {
                PdfError::PasswordRequired
            }
        }
        LoError::UnsupportedSecurityHandler(h) => PdfError::UnsupportedEncryption(format!(
            "security handler /{} (only the standard password handler is supported)",
            String::from_utf8_lossy(&h)
        )),
        LoError::Decryption(d) => PdfError::UnsupportedEncryption(format!("cannot decrypt: {d}")),
        LoError::Decompress(DecompressError::MemoryLimitExceeded { .. }) => PdfError::TooLarge(format!(
            "an object or cross-reference stream decodes to more than {load_cap} bytes (limits max_stream_bytes / max_document_bytes; decompression bomb?)"
        )),
        LoError::Parse(p) => PdfError::Invalid(format!("unreadable file structure: {p}")),
        LoError::Xref(x) => PdfError::Invalid(format!("broken cross-reference table: {x}")),
        other => PdfError::Invalid(format!("cannot read the file: {other}")),
    }
}

#[derive(Clone, Copy)]
struct Inherited<'a> {
    resources: Option<&'a Dictionary>,
    media: Option<[f64; 4]>,
    crop: Option<[f64; 4]>,
    rotate: Option<i64>,
}

/// A /Rotate value as a quarter turn (the format allows any multiple of 90, negative too).
fn quarter_turn(r: Option<i64>) -> u16 {
    (r.unwrap_or(0).rem_euclid(360) / 90 * 90) as u16
}

/// The pages of the document in order. A page tree that yields nothing falls back to every
/// /Type /Page object in object-number order (with a warning).
pub(crate) fn pages<'a>(doc: &'a Document, limits: &Limits, warnings: &mut Vec<String>) -> Result<Vec<PageRef<'a>>, PdfError> {
    let too_many = || PdfError::TooLarge(format!("the document has more than {} pages (limit max_pages)", limits.max_pages));
    let mut out: Vec<PageRef<'a>> = Vec::new();
    let root = doc.trailer.get(b"Root").ok().and_then(|o| dict_of(doc, o));
    let tree = root.and_then(|r| r.get(b"Pages").ok());
    if let Some(tree) = tree {
        let mut seen: HashSet<ObjectId> = HashSet::new();
        let inh = Inherited { resources: None, media: None, crop: None, rotate: None };
        // Depth-first, iterative: (node, inherited), children pushed in reverse.
        let mut stack: Vec<(&'a Object, Inherited<'a>, usize)> = vec![(tree, inh, 0)];
        while let Some((node, inh, depth)) = stack.pop() {
            let id = ref_id(node);
            if let Some(id) = id {
                if !seen.insert(id) {
                    continue; // cycle or shared node
                }
                if !doc.objects.contains_key(&id) {
                    out.push(PageRef { dict: None, resources: None, bbox: inh.crop.or(inh.media), id: Some(id), rotate: quarter_turn(inh.rotate) });
                    if out.len() > limits.max_pages as usize {
                        return Err(too_many());
                    }
                    continue;
                }
            }
            let Some(d) = dict_of(doc, node) else { continue };
            let inh = Inherited {
                resources: get_dict(doc, d, b"Resources").or(inh.resources),
                media: rect(doc, d.get(b"MediaBox").ok()).or(inh.media),
                crop: rect(doc, d.get(b"CropBox").ok()).or(inh.crop),
                rotate: get_num(doc, d, b"Rotate").map(|r| r as i64).or(inh.rotate),
            };
            let kids = match get(doc, d, b"Kids") {
                Some(Object::Array(k)) => Some(k),
                _ => None,
            };
            let is_pages = get_name(doc, d, b"Type") == Some(b"Pages") || (kids.is_some() && !d.has(b"Contents"));
            if is_pages {
                if depth > 256 {
                    continue;
                }
                if let Some(kids) = kids {
                    if kids.len() > limits.max_pages as usize + 1 {
                        return Err(too_many());
                    }
                    for k in kids.iter().rev() {
                        stack.push((k, inh, depth + 1));
                    }
                }
            } else {
                let bbox = clip(inh.crop, inh.media);
                out.push(PageRef { dict: Some(d), resources: inh.resources, bbox, id, rotate: quarter_turn(inh.rotate) });
                if out.len() > limits.max_pages as usize {
                    return Err(too_many());
                }
            }
        }
    }
    if out.iter().all(|p| p.dict.is_none()) {
        let mut found: Vec<PageRef<'a>> = Vec::new();
        for (&id, obj) in doc.objects.iter() {
            if let Object::Dictionary(d) = obj {
                if get_name(doc, d, b"Type") == Some(b"Page") {
                    let resources = get_dict(doc, d, b"Resources").or_else(|| parent_resources(doc, d));
                    let bbox = clip(rect(doc, d.get(b"CropBox").ok()), rect(doc, d.get(b"MediaBox").ok()));
                    let rotate = quarter_turn(get_num(doc, d, b"Rotate").map(|r| r as i64));
                    found.push(PageRef { dict: Some(d), resources, bbox, id: Some(id), rotate });
                    if found.len() > limits.max_pages as usize {
                        return Err(too_many());
                    }
                }
            }
        }
        if !found.is_empty() {
            warnings.push("damaged PDF: the page tree is unreadable; pages were found by scanning (their order may differ)".into());
            return Ok(found);
        }
    }
    Ok(out)
}

fn clip(crop: Option<[f64; 4]>, media: Option<[f64; 4]>) -> Option<[f64; 4]> {
    match (crop, media) {
        (Some(c), Some(m)) => {
            let r = [c[0].max(m[0]), c[1].max(m[1]), c[2].min(m[2]), c[3].min(m[3])];
            if r[0] < r[2] && r[1] < r[3] {
                Some(r)
            } else {
                Some(m)
            }
        }
        (c, m) => c.or(m),
    }
}

fn parent_resources<'a>(doc: &'a Document, d: &'a Dictionary) -> Option<&'a Dictionary> {
    let mut cur = d;
    for _ in 0..32 {
        cur = get_dict(doc, cur, b"Parent")?;
        if let Some(r) = get_dict(doc, cur, b"Resources") {
            return Some(r);
        }
    }
    None
}

/// The page's content streams, decoded and concatenated. `None` when the page names content
/// the file does not have (truncated file).
pub(crate) fn page_content(doc: &Document, page: &Dictionary, budget: &mut super::limits::DecodeBudget) -> Result<Option<Vec<u8>>, PdfError> {
    let Ok(contents) = page.get(b"Contents") else { return Ok(Some(Vec::new())) };
    let parts: Vec<&Object> = match deref(doc, contents) {
        Object::Array(a) => a.iter().collect(),
        Object::Null => return Ok(if matches!(contents, Object::Reference(_)) { None } else { Some(Vec::new()) }),
        _ => vec![contents],
    };
    let mut out = Vec::new();
    let mut missing = 0usize;
    for part in &parts {
        match deref(doc, part) {
            Object::Stream(s) => {
                if let Some(data) = budget.decode(s)? {
                    out.extend_from_slice(&data);
                    out.push(b'\n');
                }
            }
            _ => missing += 1,
        }
    }
    if missing > 0 && missing == parts.len() {
        return Ok(None);
    }
    Ok(Some(out))
}

/// The /Title of the information dictionary, decoded, when it holds text (at most 512
/// characters; producers sometimes put a file name or nothing there).
pub(crate) fn info_title(doc: &Document) -> Option<String> {
    let info = doc.trailer.get(b"Info").ok().and_then(|o| super::objects::dict_of(doc, o))?;
    let raw = match info.get(b"Title").ok().map(|o| super::objects::deref(doc, o)) {
        Some(lopdf::Object::String(s, _)) => s.clone(),
        _ => return None,
    };
    let title: String = super::encoding::text_string(&raw).chars().filter(|c| !c.is_control()).take(512).collect();
    let title = title.trim();
    let looks_like_file = title.ends_with(".dvi") || title.ends_with(".tex") || title.ends_with(".pdf") || title.ends_with(".doc");
    (title.chars().filter(|c| c.is_alphabetic()).count() >= 3 && !looks_like_file).then(|| title.to_string())
}
