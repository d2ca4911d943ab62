//! Fonts: how the bytes of a shown string split into character codes, each code's advance
//! width, and its Unicode text.
//!
//! Unicode comes from, in order: the font's ToUnicode CMap; for simple fonts the encoding
//! (/Encoding name or /BaseEncoding + /Differences, else the embedded program's built-in
//! encoding, else Standard/WinAnsi/Symbol) through glyph names; for CID fonts the CID through
//! the character collection's CID -> Unicode table (predefined CMaps, Identity-H/V with a known
//! /CIDSystemInfo).

use super::cjk;
use super::cmap::{self, CMap};
use super::encoding::{self, base_encoding, core14, glyph_name_to_unicode, numeric_glyph_name};
use super::fontfile::{self, Builtin};
use super::limits::DecodeBudget;
use super::objects::{deref, dict_of, get, get_array, get_dict, get_name, get_num, get_stream, matrix, num_deref};
use super::PdfError;
use lopdf::{Dictionary, Document, Object};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Simple,
    Type3,
    Cid,
}

pub(crate) struct Font {
    pub(crate) kind: Kind,
    /// Simple fonts: Unicode text per code.
    texts: Vec<Option<Box<str>>>,
    /// Simple fonts: advance width per code, in text space units (1 = font size).
    widths: Vec<f32>,
    /// CID fonts.
    cmap: Option<Arc<CMap>>,
    to_unicode: Option<CMap>,
    collection: Option<usize>,
    cid_widths: Vec<(u32, u32, f32)>,
    dw: f32,
    vertical: bool,
    cid_w1y: Vec<(u32, u32, f32)>,
    dw1y: f32,
    /// CID TrueType fonts without ToUnicode or known collection: CID -> glyph id (None:
    /// identity) and the embedded font's glyph id -> Unicode.
    cid_to_gid: Option<Vec<u16>>,
    gid_unicode: Vec<(u16, char)>,
    /// Glyph height scale relative to a standard 1000-unit font (Type 3 fonts: from /FontMatrix).
    pub(crate) em_scale: f32,
    /// What the font's name and descriptor say of its design ([`style`] bits).
    pub(crate) style: u8,
}

/// Bits of [`Font::style`]: what the layout's readers (the summarizer's block classifier) use
/// to tell code, formulas and headings from prose.
pub mod style {
    /// Every glyph has the same width (a typewriter face: code, console output).
    pub const MONOSPACE: u8 = 1;
    /// A mathematics face (TeX's math italic, symbols and extensions, AMS symbols, the Symbol
    /// font, fonts named *Math*).
    pub const MATH: u8 = 2;
    pub const BOLD: u8 = 4;
    pub const ITALIC: u8 = 8;
}

/// A descriptor's /Flags less the fixed-pitch bit where the font's own widths (`given`, in
/// glyph units) say otherwise: some producers set the bit on every font they embed, and a
/// document's running text would then read as code. Proportional widths take at least four
/// values, the commonest on under three in five glyphs; a CJK face's half- and full-width
/// glyphs (two values) stay fixed-pitch.
fn trusted_flags(flags: i64, given: &[f32]) -> i64 {
    const FIXED_PITCH: i64 = 1;
    let mut widths: Vec<i64> = given.iter().filter(|w| w.is_finite() && **w > 0.0).map(|w| w.round() as i64).collect();
    widths.sort_unstable();
    let (mut distinct, mut commonest, mut run) = (0usize, 0usize, 0usize);
    for (i, w) in widths.iter().enumerate() {
        if i == 0 || widths[i - 1] != *w {
            distinct += 1;
            run = 0;
        }
        run += 1;
        commonest = commonest.max(run);
    }
    let proportional = widths.len() >= 8 && distinct >= 4 && commonest * 5 < widths.len() * 3;
    if proportional { flags & !FIXED_PITCH } else { flags }
}

/// The style bits of a font from its /BaseFont name (subset prefix removed) and its
/// descriptor's /Flags. Names are matched the way typesetters name their faces, not by
/// document: TeX's Computer Modern and Latin Modern families (cmtt, cmmi, cmsy, cmbx, ...),
/// and the words foundries put in names (Mono, Courier, Bold, Italic, Math, ...).
pub(crate) fn style_of(base_font: &[u8], flags: i64) -> u8 {
    let name = String::from_utf8_lossy(base_font).to_ascii_lowercase();
    let family: String = name.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    let mut bits = 0;
    const FIXED_PITCH: i64 = 1;
    const ITALIC_FLAG: i64 = 1 << 6;
    const FORCE_BOLD: i64 = 1 << 18;
    if flags & FIXED_PITCH != 0
        || (name.contains("mono") && !name.contains("monotype"))
        || has(&["courier", "typewriter", "consol", "menlo", "monaco", "inconsolata", "fixed"])
        || matches!(family.as_str(), "cmtt" | "cmsltt" | "cmitt" | "cmtex" | "sftt" | "lmtt" | "txtt" | "pcr" | "ectt" | "tctt")
    {
        bits |= style::MONOSPACE;
    }
    if has(&["math", "symbol"])
        || matches!(
            family.as_str(),
            "cmmi" | "cmmib" | "cmsy" | "cmbsy" | "cmex" | "msam" | "msbm" | "eufm" | "eufb" | "eusm" | "rsfs" | "lmmi"
                | "lmsy" | "lmex" | "txsy" | "txex" | "txmi" | "pxsy" | "pxex" | "pxmi" | "stmary" | "wasy" | "esint"
                | "mtmi" | "mtsy" | "mtex" | "rmtmi" | "zxlr"
        )
    {
        bits |= style::MATH;
    }
    if flags & FORCE_BOLD != 0
        || has(&["bold", "black", "heavy", "semibold", "demi"])
        || matches!(family.as_str(), "cmbx" | "cmb" | "cmssbx" | "cmbxti" | "cmbxsl" | "lmbx")
    {
        bits |= style::BOLD;
    }
    if flags & ITALIC_FLAG != 0
        || has(&["italic", "oblique"])
        || matches!(family.as_str(), "cmti" | "cmsl" | "cmbxti" | "cmmi" | "cmitt" | "lmri" | "lmti")
    {
        bits |= style::ITALIC;
    }
    bits
}

/// Most /W, /W2 or /Widths entries read.
const MAX_WIDTH_ENTRIES: usize = 1 << 18;

impl Font {
    /// Split the next code off `bytes` (non-empty): (code, number of bytes).
    pub(crate) fn next_code(&self, bytes: &[u8]) -> (u32, usize) {
        match (&self.kind, &self.cmap) {
            (Kind::Cid, Some(c)) => c.next_code(bytes),
            (Kind::Cid, None) => {
                let n = bytes.len().min(2);
                (bytes[..n].iter().fold(0, |a, &b| (a << 8) | u32::from(b)), n)
            }
            _ => (u32::from(bytes[0]), 1),
        }
    }

    pub(crate) fn is_vertical(&self) -> bool {
        self.vertical
    }

    fn cid(&self, code: u32, n: usize) -> u32 {
        self.cmap.as_ref().and_then(|c| c.cid(code, n)).unwrap_or(0)
    }

    /// Horizontal advance of a code (text space, before scaling by the font size).
    pub(crate) fn width(&self, code: u32, n: usize) -> f32 {
        match self.kind {
            Kind::Cid => {
                let cid = self.cid(code, n);
                lookup(&self.cid_widths, cid).unwrap_or(self.dw)
            }
            _ => self.widths.get(code as usize).copied().unwrap_or(0.0),
        }
    }

    /// Vertical advance of a code in vertical writing (negative: downwards).
    pub(crate) fn vertical_advance(&self, code: u32, n: usize) -> f32 {
        let cid = self.cid(code, n);
        lookup(&self.cid_w1y, cid).unwrap_or(self.dw1y)
    }

    /// Append the Unicode text of a code to `out`; false when it has none.
    pub(crate) fn unicode(&self, code: u32, n: usize, out: &mut String) -> bool {
        match self.kind {
            Kind::Cid => {
                if let Some(tu) = &self.to_unicode {
                    if tu.unicode(code, out) {
                        return true;
                    }
                }
                if let Some(coll) = self.collection {
                    if let Some(c) = cjk::cid_to_unicode(coll, self.cid(code, n)) {
                        out.push(c);
                        return true;
                    }
                }
                if !self.gid_unicode.is_empty() {
                    let cid = self.cid(code, n);
                    let gid = match &self.cid_to_gid {
                        Some(map) => map.get(cid as usize).copied().unwrap_or(0),
                        None => u16::try_from(cid).unwrap_or(0),
                    };
                    if let Ok(i) = self.gid_unicode.binary_search_by_key(&gid, |e| e.0) {
                        if let Some((_, c)) = self.gid_unicode.get(i) {
                            out.push(*c);
                            return true;
                        }
                    }
                }
                false
            }
            _ => match self.texts.get(code as usize) {
                Some(Some(t)) => {
                    out.push_str(t);
                    true
                }
                _ => false,
            },
        }
    }
}

fn lookup(ranges: &[(u32, u32, f32)], cid: u32) -> Option<f32> {
    let end = ranges.partition_point(|r| r.0 <= cid);
    ranges[..end].iter().rev().take(4).find(|r| r.1 >= cid).map(|r| r.2)
}

fn decode_stream(doc: &Document, d: &Dictionary, key: &[u8], budget: &mut DecodeBudget) -> Result<Option<Vec<u8>>, PdfError> {
    match get_stream(doc, d, key) {
        Some(s) => budget.decode(s),
        None => Ok(None),
    }
}

fn load_to_unicode(doc: &Document, font: &Dictionary, budget: &mut DecodeBudget) -> Result<Option<CMap>, PdfError> {
    match get(doc, font, b"ToUnicode") {
        Some(Object::Stream(s)) => {
            let Some(data) = budget.decode(s)? else { return Ok(None) };
            let m = cmap::parse(&data, &|n| cjk::predefined_cmap(n));
            Ok(m.has_unicode().then_some(m))
        }
        // `/ToUnicode /Identity-H`: some producers mean "the codes are UTF-16". Not usable.
        _ => Ok(None),
    }
}

/// Load a font dictionary.
pub(crate) fn load(doc: &Document, dict: &Dictionary, budget: &mut DecodeBudget) -> Result<Font, PdfError> {
    match get_name(doc, dict, b"Subtype") {
        Some(b"Type0") => load_type0(doc, dict, budget),
        Some(b"Type3") => load_simple(doc, dict, budget, true),
        _ => load_simple(doc, dict, budget, false),
    }
}

fn strip_subset(name: &[u8]) -> &[u8] {
    match name.get(6) {
        Some(b'+') if name[..6].iter().all(u8::is_ascii_uppercase) => &name[7..],
        _ => name,
    }
}

fn load_simple(doc: &Document, dict: &Dictionary, budget: &mut DecodeBudget, type3: bool) -> Result<Font, PdfError> {
    let subtype = get_name(doc, dict, b"Subtype").unwrap_or(b"Type1");
    let base_font = get_name(doc, dict, b"BaseFont").map(strip_subset).unwrap_or(b"");
    let descriptor = get_dict(doc, dict, b"FontDescriptor");
    let flags = descriptor.and_then(|d| get_num(doc, d, b"Flags")).unwrap_or(0.0) as i64;
    let symbolic = flags & 4 != 0;

    // Base encoding.
    let enc_obj = get(doc, dict, b"Encoding");
    let (enc_name, differences) = match enc_obj {
        Some(Object::Name(n)) => (Some(n.as_slice()), None),
        Some(o) => match dict_of(doc, o) {
            Some(ed) => (get_name(doc, ed, b"BaseEncoding"), get_array(doc, ed, b"Differences")),
            None => (None, None),
        },
        None => (None, None),
    };
    let mut names: Vec<Option<String>> = match enc_name.and_then(base_encoding) {
        Some(t) => fontfile::table_names(t),
        None => {
            let builtin = if type3 { None } else { builtin_encoding(doc, descriptor, budget)? };
            match builtin {
                Some(b) => fontfile::to_names(&b),
                None => {
                    let lower = String::from_utf8_lossy(base_font).to_ascii_lowercase();
                    if lower.starts_with("symbol") {
                        fontfile::table_names(&encoding::ENC_SYMBOL)
                    } else if lower.starts_with("zapfdingbats") {
                        fontfile::table_names(&encoding::ENC_ZAPF_DINGBATS)
                    } else if subtype == b"TrueType" && !(symbolic && enc_obj.is_none()) {
                        fontfile::table_names(encoding::win_ansi())
                    } else if type3 && differences.is_some() {
                        vec![None; 256]
                    } else {
                        fontfile::table_names(&encoding::ENC_STANDARD)
                    }
                }
            }
        }
    };
    names.resize(256, None);
    if let Some(diffs) = differences {
        let mut code: i64 = 0;
        for o in diffs.iter().take(MAX_WIDTH_ENTRIES) {
            match deref(doc, o) {
                Object::Integer(i) => code = *i,
                Object::Real(r) => code = *r as i64,
                Object::Name(n) => {
                    if (0..256).contains(&code) {
                        names[code as usize] = Some(String::from_utf8_lossy(n).into_owned());
                    }
                    code = code.saturating_add(1);
                }
                _ => {}
            }
        }
    }

    // Names -> Unicode.
    let mut texts: Vec<Option<Box<str>>> = vec![None; 256];
    let mut unmapped: Vec<usize> = Vec::new();
    let mut buf = String::new();
    for (code, name) in names.iter().enumerate() {
        let Some(name) = name else { continue };
        buf.clear();
        if glyph_name_to_unicode(name.as_bytes(), &mut buf) {
            texts[code] = Some(buf.as_str().into());
        } else if let Some(c) = literal_glyph_name(name) {
            // dvips/Distiller Type 3 fonts name glyphs after the character: "/,", "/#23" + "23"
            texts[code] = Some(c.to_string().into());
        } else if name != ".notdef" {
            unmapped.push(code);
        }
    }
    // Names like "g65"/"c41"/"cid12": when no name of the font means anything else, take the
    // number as the character code (hexadecimal if any of them has hex letters).
    if !unmapped.is_empty() && texts.iter().all(Option::is_none) {
        let parsed: Vec<_> = unmapped
            .iter()
            .filter_map(|&c| names[c].as_deref().and_then(|n| numeric_glyph_name(n.as_bytes())).map(|v| (c, v)))
            .collect();
        if parsed.len() == unmapped.len() {
            let hex = parsed.iter().any(|(_, (_, h))| *h);
            for (code, (v, _)) in parsed {
                let value = if hex {
                    names[code].as_deref().and_then(|n| {
                        let d = n.trim_start_matches(|c: char| !c.is_ascii_digit());
                        u32::from_str_radix(d, 16).ok()
                    })
                } else {
                    Some(v)
                };
                if let Some(ch) = value.and_then(char::from_u32).filter(|c| !c.is_control()) {
                    texts[code] = Some(ch.to_string().into());
                }
            }
        }
    }
    if let Some(tu) = load_to_unicode(doc, dict, budget)? {
        for (code, slot) in texts.iter_mut().enumerate() {
            buf.clear();
            if tu.unicode(code as u32, &mut buf) {
                *slot = Some(buf.as_str().into());
            }
        }
    }

    // Widths.
    let font_matrix = if type3 { matrix(doc, dict.get(b"FontMatrix").ok()) } else { None };
    let fm = font_matrix.unwrap_or([0.001, 0.0, 0.0, 0.001, 0.0, 0.0]);
    let wscale = if type3 { fm[0] as f32 } else { 0.001 };
    let missing = descriptor.and_then(|d| get_num(doc, d, b"MissingWidth")).unwrap_or(0.0) as f32;
    let mut widths: Vec<f32> = vec![f32::NAN; 256];
    let mut given = Vec::new();
    if let Some(ws) = get_array(doc, dict, b"Widths") {
        let first = get_num(doc, dict, b"FirstChar").unwrap_or(0.0);
        if (0.0..256.0).contains(&first) {
            for (i, w) in ws.iter().enumerate().take(256) {
                let code = first as usize + i;
                if let (Some(slot), Some(w)) = (widths.get_mut(code), num_deref(doc, w)) {
                    *slot = w as f32 * wscale;
                    given.push(w as f32);
                }
            }
        }
    }
    let core = core14(base_font);
    for (code, w) in widths.iter_mut().enumerate() {
        if w.is_nan() {
            let from_core = core.as_ref().and_then(|c| names[code].as_deref().and_then(|n| c.width(n)));
            *w = match from_core {
                Some(cw) => f32::from(cw) * 0.001,
                None if missing > 0.0 => missing * wscale,
                None if type3 => 0.0,
                None => 0.5,
            };
        }
        if !w.is_finite() {
            *w = 0.0;
        }
    }
    let em_scale = if type3 { type3_em_scale(&names, &widths, &fm) } else { 1.0 };
    Ok(Font {
        kind: if type3 { Kind::Type3 } else { Kind::Simple },
        texts,
        widths,
        cmap: None,
        to_unicode: None,
        collection: None,
        cid_widths: Vec::new(),
        dw: 1.0,
        vertical: false,
        cid_w1y: Vec::new(),
        dw1y: -1.0,
        cid_to_gid: None,
        gid_unicode: Vec::new(),
        em_scale,
        style: style_of(base_font, trusted_flags(flags, &given)),
    })
}

/// A glyph name that is the character itself (`,`, `=`), or `#` and two hex digits.
fn literal_glyph_name(name: &str) -> Option<char> {
    let mut chars = name.chars();
    let first = chars.next()?;
    match chars.next() {
        None => Some(first),
        _ if first == '#' && name.len() == 3 => u8::from_str_radix(&name[1..], 16).ok().map(char::from),
        _ => None,
    }
}

/// The size of a Type 3 font's glyphs relative to its nominal size. Type 3 glyph space has no
/// em, so guess it from the advance of 'm' (a typical 'm' is 0.6 em wide), else of a letter or
/// any glyph (0.5 em), as pdftotext does.
fn type3_em_scale(names: &[Option<String>], widths: &[f32], fm: &[f64; 6]) -> f32 {
    let width_of = |pred: &dyn Fn(&str) -> bool| {
        names.iter().zip(widths).find(|(n, w)| n.as_deref().is_some_and(pred) && **w > 0.0).map(|(_, w)| *w)
    };
    let w = width_of(&|n| n == "m")
        .map(|w| w / 0.6)
        .or_else(|| width_of(&|n| n.len() == 1 && n.as_bytes()[0].is_ascii_alphabetic()).map(|w| w / 0.5))
        .or_else(|| width_of(&|_| true).map(|w| w / 0.5))
        .unwrap_or(1.0);
    let ratio = if fm[0] != 0.0 { (fm[3] / fm[0]).abs() as f32 } else { 1.0 };
    let s = w * ratio;
    if s.is_finite() && s > 0.0 { s } else { 1.0 }
}

fn builtin_encoding(doc: &Document, descriptor: Option<&Dictionary>, budget: &mut DecodeBudget) -> Result<Option<Builtin>, PdfError> {
    let Some(d) = descriptor else { return Ok(None) };
    if let Some(data) = decode_stream(doc, d, b"FontFile", budget)? {
        return Ok(fontfile::type1_encoding(&data));
    }
    if let Some(s) = get_stream(doc, d, b"FontFile3") {
        if get_name(doc, &s.dict, b"Subtype") == Some(b"Type1C") {
            if let Some(data) = budget.decode(s)? {
                return Ok(fontfile::cff_encoding(&data));
            }
        }
    }
    Ok(None)
}

fn load_type0(doc: &Document, dict: &Dictionary, budget: &mut DecodeBudget) -> Result<Font, PdfError> {
    // Encoding CMap.
    let cmap: Option<Arc<CMap>> = match get(doc, dict, b"Encoding") {
        Some(Object::Name(n)) => cjk::predefined_cmap(n),
        Some(Object::Stream(s)) => {
            let parent = match get(doc, &s.dict, b"UseCMap") {
                Some(Object::Name(n)) => cjk::predefined_cmap(n),
                _ => None,
            };
            match budget.decode(s)? {
                Some(data) => {
                    let mut m = cmap::parse(&data, &|n| cjk::predefined_cmap(n));
                    if m.parent.is_none() {
                        m.parent = parent;
                    }
                    if let Some(Object::Integer(1)) = get(doc, &s.dict, b"WMode") {
                        m.wmode = 1;
                    }
                    Some(Arc::new(m))
                }
                None => parent,
            }
        }
        _ => None,
    };
    let cmap = cmap.unwrap_or_else(|| Arc::new(CMap::identity(0)));
    let descendant = get_array(doc, dict, b"DescendantFonts").and_then(|a| a.first()).and_then(|o| dict_of(doc, o));
    let empty = Dictionary::new();
    let cid_font = descendant.unwrap_or(&empty);

    let mut collection = None;
    if let Some(info) = get_dict(doc, cid_font, b"CIDSystemInfo") {
        let s = |k: &[u8]| match get(doc, info, k) {
            Some(Object::String(s, _)) => String::from_utf8_lossy(s).into_owned(),
            _ => String::new(),
        };
        collection = cjk::collection_index(&format!("{}-{}", s(b"Registry"), s(b"Ordering")));
    }
    if let Some(c) = cmap.collection.and_then(cjk::collection_index) {
        collection = Some(c);
    }

    let to_unicode = load_to_unicode(doc, dict, budget)?;

    let dw = get_num(doc, cid_font, b"DW").unwrap_or(1000.0) as f32 * 0.001;
    let mut cid_widths = Vec::new();
    if let Some(w) = get_array(doc, cid_font, b"W") {
        parse_w(doc, w, 1, &mut cid_widths);
    }
    cid_widths.sort_by_key(|e| e.0);
    let style = {
        let name = get_name(doc, dict, b"BaseFont").or_else(|| get_name(doc, cid_font, b"BaseFont")).map(strip_subset);
        let flags = get_dict(doc, cid_font, b"FontDescriptor").and_then(|d| get_num(doc, d, b"Flags")).unwrap_or(0.0) as i64;
        let given: Vec<f32> = cid_widths.iter().map(|e| e.2 * 1000.0).collect();
        style_of(name.unwrap_or(b""), trusted_flags(flags, &given))
    };
    let vertical = cmap.wmode == 1;
    let mut dw1y = -1.0f32;
    let mut cid_w1y = Vec::new();
    if vertical {
        if let Some(Object::Array(a)) = get(doc, cid_font, b"DW2") {
            if let Some(v) = a.get(1).and_then(|o| num_deref(doc, o)) {
                dw1y = v as f32 * 0.001;
            }
        }
        if let Some(w2) = get_array(doc, cid_font, b"W2") {
            parse_w(doc, w2, 3, &mut cid_w1y);
        }
        cid_w1y.sort_by_key(|e| e.0);
    }
    // No ToUnicode and no known collection: an embedded TrueType program's own cmap says which
    // character each glyph draws.
    let (mut cid_to_gid, mut gid_unicode) = (None, Vec::new());
    if to_unicode.is_none() && collection.is_none() {
        let fd = get_dict(doc, cid_font, b"FontDescriptor");
        if let Some(data) = fd.map(|fd| decode_stream(doc, fd, b"FontFile2", budget)).transpose()?.flatten() {
            gid_unicode = fontfile::truetype_gid_to_unicode(&data);
            if let Some(Object::Stream(s)) = get(doc, cid_font, b"CIDToGIDMap") {
                if let Some(map) = budget.decode(s)? {
                    cid_to_gid = Some(map.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect());
                }
            }
        }
    }
    Ok(Font {
        kind: Kind::Cid,
        texts: Vec::new(),
        widths: Vec::new(),
        cmap: Some(cmap),
        to_unicode,
        collection,
        cid_widths,
        dw: if dw.is_finite() { dw } else { 1.0 },
        vertical,
        cid_w1y,
        dw1y: if dw1y.is_finite() { dw1y } else { -1.0 },
        cid_to_gid,
        gid_unicode,
        em_scale: 1.0,
        style,
    })
}

/// Parse /W (group = 1: `c [w ...]` or `c1 c2 w`) or /W2 (group = 3: `c [w1y vx vy ...]` or
/// `c1 c2 w1y vx vy`), keeping the first value of each group, scaled to text space.
fn parse_w(doc: &Document, w: &[Object], group: usize, out: &mut Vec<(u32, u32, f32)>) {
    let mut i = 0;
    while i < w.len() && out.len() < MAX_WIDTH_ENTRIES {
        let Some(first) = num_deref(doc, &w[i]) else {
            i += 1;
            continue;
        };
        let first = first.max(0.0) as u32;
        match w.get(i + 1).map(|o| deref(doc, o)) {
            Some(Object::Array(list)) => {
                for (k, chunk) in list.chunks(group).enumerate() {
                    if out.len() >= MAX_WIDTH_ENTRIES {
                        break;
                    }
                    if let Some(v) = chunk.first().and_then(|o| num_deref(doc, o)) {
                        let cid = first.saturating_add(k as u32);
                        out.push((cid, cid, v as f32 * 0.001));
                    }
                }
                i += 2;
            }
            Some(o) => {
                let last = num_deref(doc, o).unwrap_or(0.0).max(0.0) as u32;
                if let Some(v) = w.get(i + 2).and_then(|o| num_deref(doc, o)) {
                    if last >= first {
                        out.push((first, last, v as f32 * 0.001));
                    }
                }
                i += 2 + group;
            }
            None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::trusted_flags;

    #[test]
    fn the_fixed_pitch_flag_yields_to_proportional_widths() {
        // Trebuchet MS's widths under a descriptor that says fixed pitch (/Flags 33).
        let trebuchet = [500.0, 367.0, 301.0, 367.0, 580.0, 546.0, 285.0, 404.0, 557.0, 536.0, 495.0, 546.0, 830.0, 524.0, 524.0, 524.0];
        assert_eq!(trusted_flags(33, &trebuchet), 32);
        // A typewriter face's widths, and a CJK face's half and full widths, keep the bit.
        assert_eq!(trusted_flags(33, &[600.0; 40]), 33);
        let cjk: Vec<f32> = (0..40).map(|i| if i % 3 == 0 { 500.0 } else { 1000.0 }).collect();
        assert_eq!(trusted_flags(33, &cjk), 33);
        // Too few widths to tell (or none): the descriptor is taken at its word.
        assert_eq!(trusted_flags(33, &[500.0, 367.0, 301.0]), 33);
        assert_eq!(trusted_flags(33, &[]), 33);
    }
}
