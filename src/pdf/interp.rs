//! Content-stream interpreter: runs a page's operators (and its Form XObjects, recursively,
//! depth-limited) keeping the graphics and text state, and records every glyph shown with its
//! position, advance, size, direction and Unicode text.

use super::encoding;
use super::font::{self, Font};
use super::lexer::{Lexer, Operand};
use super::limits::{DecodeBudget, Limits};
use super::objects::{deref, dict_of, get, get_dict, get_name, matrix, ref_id};
use super::PdfError;
use lopdf::{Dictionary, Document, Object, ObjectId};
use std::collections::HashMap;
use std::rc::Rc;

/// A glyph shown on a page, in default user space (y up).
#[derive(Debug, Clone)]
pub(crate) struct Glyph {
    /// Origin.
    pub(crate) x: f32,
    pub(crate) y: f32,
    /// Advance along the writing direction (user-space units).
    pub(crate) adv: f32,
    /// Font size in user-space units.
    pub(crate) size: f32,
    /// Writing direction: 0 right, 1 down, 2 left, 3 up.
    pub(crate) rot: u8,
    /// The glyph's text: `text[start..start + len]` of the page.
    pub(crate) start: u32,
    pub(crate) len: u32,
    /// Order of appearance.
    pub(crate) seq: u32,
    /// The font's style bits (`font::style`).
    pub(crate) style: u8,
}

/// What a page's content streams showed.
#[derive(Debug, Default)]
pub(crate) struct PageContent {
    pub(crate) glyphs: Vec<Glyph>,
    pub(crate) text: String,
    /// Glyphs shown, including those without Unicode text.
    pub(crate) shown: usize,
    /// Image XObjects and inline images drawn.
    pub(crate) images: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Matrix(pub(crate) [f64; 6]);

impl Matrix {
    pub(crate) const IDENTITY: Matrix = Matrix([1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);

    /// self × other (apply self first, then other).
    pub(crate) fn mul(&self, o: &Matrix) -> Matrix {
        let [a, b, c, d, e, f] = self.0;
        let [oa, ob, oc, od, oe, of] = o.0;
        let m = Matrix([
            a * oa + b * oc,
            a * ob + b * od,
            c * oa + d * oc,
            c * ob + d * od,
            e * oa + f * oc + oe,
            e * ob + f * od + of,
        ]);
        if m.0.iter().all(|v| v.is_finite()) {
            m
        } else {
            *self
        }
    }

    fn translate(tx: f64, ty: f64) -> Matrix {
        Matrix([1.0, 0.0, 0.0, 1.0, tx, ty])
    }
}

/// Fonts and decoded Form XObjects of one document, shared by its pages.
#[derive(Default)]
pub(crate) struct DocCache {
    fonts: HashMap<FontKey, Rc<Font>>,
    forms: HashMap<ObjectId, Rc<Vec<u8>>>,
}

#[derive(Hash, PartialEq, Eq, Clone, Copy)]
enum FontKey {
    Id(ObjectId),
    /// An inline font dictionary, keyed by its address in the (immutable) document.
    Addr(usize),
}

#[derive(Clone)]
struct GState {
    ctm: Matrix,
    font: Option<Rc<Font>>,
    size: f64,
    char_space: f64,
    word_space: f64,
    hscale: f64,
    leading: f64,
    rise: f64,
}

const MAX_GSTATE_DEPTH: usize = 256;
/// Deepest marked-content nesting tracked (for /ActualText); deeper BMC/BDC are counted only.
const MAX_MARKED_DEPTH: usize = 64;

/// An open marked-content sequence: its /ActualText replacement, and where its glyphs start.
struct Marked {
    actual: Option<String>,
    first_glyph: usize,
}

pub(crate) struct Interp<'a> {
    doc: &'a Document,
    budget: &'a mut DecodeBudget,
    cache: &'a mut DocCache,
    limits: &'a Limits,
    out: PageContent,
    ops: u64,
    forms: Vec<ObjectId>,
    gs: GState,
    stack: Vec<GState>,
    tm: Matrix,
    tlm: Matrix,
    marked: Vec<Marked>,
    /// Marked-content sequences opened beyond MAX_MARKED_DEPTH and not yet closed.
    marked_overflow: usize,
}

impl<'a> Interp<'a> {
    pub(crate) fn new(doc: &'a Document, budget: &'a mut DecodeBudget, cache: &'a mut DocCache, limits: &'a Limits) -> Self {
        Interp {
            doc,
            budget,
            cache,
            limits,
            out: PageContent::default(),
            ops: 0,
            forms: Vec::new(),
            gs: GState {
                ctm: Matrix::IDENTITY,
                font: None,
                size: 0.0,
                char_space: 0.0,
                word_space: 0.0,
                hscale: 1.0,
                leading: 0.0,
                rise: 0.0,
            },
            stack: Vec::new(),
            tm: Matrix::IDENTITY,
            tlm: Matrix::IDENTITY,
            marked: Vec::new(),
            marked_overflow: 0,
        }
    }

    pub(crate) fn finish(self) -> PageContent {
        self.out
    }

    /// Run a content stream with the given resources.
    pub(crate) fn run(&mut self, content: &[u8], resources: Option<&'a Dictionary>) -> Result<(), PdfError> {
        let mut lx = Lexer::new(content);
        let mut operands: Vec<Operand<'_>> = Vec::with_capacity(8);
        let base_depth = self.stack.len();
        while let Some(op) = lx.next_op(&mut operands) {
            self.ops += 1;
            if self.ops > self.limits.max_operators_per_page {
                return Err(PdfError::TooLarge(format!(
                    "a page runs more than {} content-stream operators (limit max_operators_per_page)",
                    self.limits.max_operators_per_page
                )));
            }
            self.op(op, &operands, resources, &mut lx)?;
        }
        // Unbalanced q inside a form must not leak out of it.
        while self.stack.len() > base_depth {
            if let Some(g) = self.stack.pop() {
                self.gs = g;
            }
        }
        Ok(())
    }

    fn op(&mut self, op: &[u8], a: &[Operand<'_>], res: Option<&'a Dictionary>, lx: &mut Lexer<'_>) -> Result<(), PdfError> {
        let n = |i: usize| a.get(i).and_then(Operand::num).unwrap_or(0.0);
        // Operands counted from the end (the ones in front may be garbage).
        let last = |k: usize| -> f64 { if a.len() >= k { a[a.len() - k].num().unwrap_or(0.0) } else { 0.0 } };
        match op {
            b"q" if self.stack.len() < MAX_GSTATE_DEPTH => self.stack.push(self.gs.clone()),
            b"Q" => {
                if let Some(g) = self.stack.pop() {
                    self.gs = g;
                }
            }
            b"cm" if a.len() >= 6 => {
                let m = Matrix([last(6), last(5), last(4), last(3), last(2), last(1)]);
                self.gs.ctm = m.mul(&self.gs.ctm);
            }
            b"BT" => {
                self.tm = Matrix::IDENTITY;
                self.tlm = Matrix::IDENTITY;
            }
            b"ET" => {}
            b"Tf" => {
                self.gs.size = last(1);
                if let Some(Operand::Name(name)) = a.len().checked_sub(2).and_then(|i| a.get(i)) {
                    self.gs.font = self.font_resource(res, name)?;
                }
            }
            b"Tc" => self.gs.char_space = last(1),
            b"Tw" => self.gs.word_space = last(1),
            b"Tz" => self.gs.hscale = last(1) / 100.0,
            b"TL" => self.gs.leading = last(1),
            b"Ts" => self.gs.rise = last(1),
            b"Td" => self.next_line(last(2), last(1)),
            b"TD" => {
                self.gs.leading = -last(1);
                self.next_line(last(2), last(1));
            }
            b"Tm" if a.len() >= 6 => {
                self.tm = Matrix([last(6), last(5), last(4), last(3), last(2), last(1)]);
                self.tlm = self.tm;
            }
            b"T*" => self.next_line(0.0, -self.gs.leading),
            b"Tj" => {
                if let Some(Operand::Str(s)) = a.last() {
                    self.show(s)?;
                }
            }
            b"'" => {
                self.next_line(0.0, -self.gs.leading);
                if let Some(Operand::Str(s)) = a.last() {
                    self.show(s)?;
                }
            }
            b"\"" => {
                if a.len() >= 3 {
                    self.gs.word_space = n(a.len() - 3);
                    self.gs.char_space = n(a.len() - 2);
                }
                self.next_line(0.0, -self.gs.leading);
                if let Some(Operand::Str(s)) = a.last() {
                    self.show(s)?;
                }
            }
            b"TJ" => {
                if let Some(Operand::Array(items)) = a.last() {
                    for item in items {
                        match item {
                            Operand::Str(s) => self.show(s)?,
                            Operand::Num(v) => self.adjust(*v),
                            _ => {}
                        }
                    }
                }
            }
            b"Do" => {
                if let Some(Operand::Name(name)) = a.last() {
                    self.do_xobject(res, name)?;
                }
            }
            b"BI" => {
                lx.skip_inline_image();
                self.out.images += 1;
            }
            b"gs" => {
                if let Some(Operand::Name(name)) = a.last() {
                    self.ext_gstate(res, name)?;
                }
            }
            b"BMC" | b"BDC" => {
                let actual = if op == b"BDC" { self.actual_text(a.last(), res) } else { None };
                if self.marked.len() < MAX_MARKED_DEPTH {
                    self.marked.push(Marked { actual, first_glyph: self.out.glyphs.len() });
                } else {
                    self.marked_overflow += 1;
                }
            }
            b"EMC" => {
                if self.marked_overflow > 0 {
                    self.marked_overflow -= 1;
                } else if let Some(m) = self.marked.pop() {
                    if let Some(actual) = m.actual {
                        self.replace_glyphs(m.first_glyph, &actual);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The /ActualText of a BDC property list (inline, or named in /Properties).
    fn actual_text(&self, props: Option<&Operand<'_>>, res: Option<&'a Dictionary>) -> Option<String> {
        match props? {
            Operand::Dict(entries) => entries.iter().find(|(k, _)| k.as_ref() == b"ActualText").and_then(|(_, v)| match v {
                Operand::Str(s) => Some(encoding::text_string(s)),
                _ => None,
            }),
            Operand::Name(name) => {
                let doc = self.doc;
                let props = res.and_then(|r| get_dict(doc, r, b"Properties")).and_then(|p| get_dict(doc, p, name))?;
                match get(doc, props, b"ActualText")? {
                    Object::String(s, _) => Some(encoding::text_string(s)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Replace the glyphs shown since `first` by one glyph carrying `actual` (what pdftotext
    /// does with /ActualText): it spans them all, from the first origin to the last end.
    fn replace_glyphs(&mut self, first: usize, actual: &str) {
        let glyphs = &mut self.out.glyphs;
        let (Some(head), Some(last)) = (glyphs.get(first).cloned(), glyphs.last().cloned()) else { return };
        let (dx, dy) = match head.rot {
            0 => (1.0, 0.0),
            1 => (0.0, -1.0),
            2 => (-1.0, 0.0),
            _ => (0.0, 1.0),
        };
        let span = (last.x - head.x) * dx + (last.y - head.y) * dy + last.adv;
        glyphs.truncate(first);
        self.out.text.truncate(head.start as usize);
        let start = self.out.text.len();
        self.out.text.push_str(actual);
        clean_text(&mut self.out.text, start);
        let len = (self.out.text.len() - start) as u32;
        let seq = head.seq;
        glyphs.push(Glyph { adv: span.max(head.adv), start: start as u32, len, seq, ..head });
    }

    fn next_line(&mut self, tx: f64, ty: f64) {
        self.tlm = Matrix::translate(tx, ty).mul(&self.tlm);
        self.tm = self.tlm;
    }

    /// A TJ number: move back by v/1000 text space units.
    fn adjust(&mut self, v: f64) {
        let Some(f) = &self.gs.font else { return };
        let d = -v / 1000.0 * self.gs.size;
        if f.is_vertical() {
            self.tm = Matrix::translate(0.0, d).mul(&self.tm);
        } else {
            self.tm = Matrix::translate(d * self.gs.hscale, 0.0).mul(&self.tm);
        }
    }

    fn font_resource(&mut self, res: Option<&'a Dictionary>, name: &[u8]) -> Result<Option<Rc<Font>>, PdfError> {
        let doc = self.doc;
        let Some(fonts) = res.and_then(|r| get_dict(doc, r, b"Font")) else { return Ok(None) };
        let Ok(obj) = fonts.get(name) else { return Ok(None) };
        self.font_object(obj)
    }

    fn font_object(&mut self, obj: &'a Object) -> Result<Option<Rc<Font>>, PdfError> {
        let doc = self.doc;
        let Some(dict) = dict_of(doc, obj) else { return Ok(None) };
        let key = match ref_id(obj) {
            Some(id) => FontKey::Id(id),
            None => FontKey::Addr(dict as *const Dictionary as usize),
        };
        if let Some(f) = self.cache.fonts.get(&key) {
            return Ok(Some(f.clone()));
        }
        let f = Rc::new(font::load(doc, dict, self.budget)?);
        self.cache.fonts.insert(key, f.clone());
        Ok(Some(f))
    }

    fn ext_gstate(&mut self, res: Option<&'a Dictionary>, name: &[u8]) -> Result<(), PdfError> {
        let doc = self.doc;
        let Some(gs) = res.and_then(|r| get_dict(doc, r, b"ExtGState")).and_then(|d| get_dict(doc, d, name)) else {
            return Ok(());
        };
        if let Some(Object::Array(f)) = get(doc, gs, b"Font") {
            if let (Some(fo), Some(size)) = (f.first(), f.get(1).and_then(|o| super::objects::num_deref(doc, o))) {
                self.gs.font = self.font_object(fo)?;
                self.gs.size = size;
            }
        }
        Ok(())
    }

    fn do_xobject(&mut self, res: Option<&'a Dictionary>, name: &[u8]) -> Result<(), PdfError> {
        let doc = self.doc;
        let Some(xobjs) = res.and_then(|r| get_dict(doc, r, b"XObject")) else { return Ok(()) };
        let Ok(obj) = xobjs.get(name) else { return Ok(()) };
        let Object::Stream(stream) = deref(doc, obj) else { return Ok(()) };
        match get_name(doc, &stream.dict, b"Subtype") {
            Some(b"Image") => {
                self.out.images += 1;
                return Ok(());
            }
            Some(b"Form") => {}
            _ => return Ok(()),
        }
        let id = ref_id(obj).unwrap_or((0, 0));
        if self.forms.contains(&id) {
            return Ok(()); // a form that draws itself: broken file, skip the cycle
        }
        if self.forms.len() as u64 >= u64::from(self.limits.max_xobject_depth) {
            return Err(PdfError::TooLarge(format!(
                "Form XObjects nested deeper than {} (limit max_xobject_depth)",
                self.limits.max_xobject_depth
            )));
        }
        let content = match self.cache.forms.get(&id) {
            Some(c) if id != (0, 0) => c.clone(),
            _ => {
                let Some(data) = self.budget.decode(stream)? else { return Ok(()) };
                let data = Rc::new(data);
                if id != (0, 0) {
                    self.cache.forms.insert(id, data.clone());
                }
                data
            }
        };
        let form_res = get_dict(doc, &stream.dict, b"Resources").or(res);
        let m = matrix(doc, stream.dict.get(b"Matrix").ok()).map(Matrix).unwrap_or(Matrix::IDENTITY);
        let saved_gs = self.gs.clone();
        let saved_tm = (self.tm, self.tlm);
        self.gs.ctm = m.mul(&self.gs.ctm);
        self.forms.push(id);
        let r = self.run(&content, form_res);
        self.forms.pop();
        self.gs = saved_gs;
        (self.tm, self.tlm) = saved_tm;
        r
    }

    fn show(&mut self, bytes: &[u8]) -> Result<(), PdfError> {
        let Some(font) = self.gs.font.clone() else { return Ok(()) };
        let g = &self.gs;
        let (size, tc, tw, th, rise) = (g.size, g.char_space, g.word_space, g.hscale, g.rise);
        let vertical = font.is_vertical();
        let mut rest = bytes;
        while !rest.is_empty() {
            let (code, nb) = font.next_code(rest);
            let nb = nb.clamp(1, rest.len());
            rest = &rest[nb..];
            let m = self.tm.mul(&self.gs.ctm);
            let [ma, mb, mc, md, me, mf] = m.0;
            // Origin (with rise), direction and size in user space.
            let (ox, oy) = if vertical {
                // Vertical writing: the origin is at the top centre of the glyph.
                let w0 = f64::from(font.width(code, nb));
                let dx = -w0 / 2.0 * size;
                (me + dx * ma, mf + dx * mb)
            } else {
                (me + rise * mc, mf + rise * md)
            };
            let word = nb == 1 && code == 32;
            let (dir_x, dir_y, adv, height);
            if vertical {
                let w1 = f64::from(font.vertical_advance(code, nb));
                let ty = w1 * size + tc + if word { tw } else { 0.0 };
                // Writing goes down the text space y axis.
                let len = (mc * mc + md * md).sqrt();
                dir_x = -mc;
                dir_y = -md;
                // The glyph's extent leaves out Tc/Tw (as pdftotext): spacing makes gaps.
                adv = -(w1 * size) * len;
                height = size.abs() * (ma * ma + mb * mb).sqrt();
                self.tm = Matrix::translate(0.0, ty).mul(&self.tm);
            } else {
                let w0 = f64::from(font.width(code, nb));
                let tx = (w0 * size + tc + if word { tw } else { 0.0 }) * th;
                let len = (ma * ma + mb * mb).sqrt();
                dir_x = ma * th.signum();
                dir_y = mb * th.signum();
                adv = w0 * size * th * len * th.signum();
                height = size.abs() * f64::from(font.em_scale) * (mc * mc + md * md).sqrt();
                self.tm = Matrix::translate(tx, 0.0).mul(&self.tm);
            }
            self.out.shown += 1;
            let start = self.out.text.len();
            font.unicode(code, nb, &mut self.out.text);
            clean_text(&mut self.out.text, start);
            let len = self.out.text.len() - start;
            let rot = if dir_x.abs() >= dir_y.abs() {
                if dir_x >= 0.0 {
                    0
                } else {
                    2
                }
            } else if dir_y < 0.0 {
                1
            } else {
                3
            };
            if self.out.glyphs.len() >= self.limits.max_glyphs_per_page
                || self.out.text.len() > self.limits.max_glyphs_per_page.saturating_mul(16)
            {
                return Err(PdfError::TooLarge(format!(
                    "a page shows more than {} glyphs (limit max_glyphs_per_page)",
                    self.limits.max_glyphs_per_page
                )));
            }
            let (x, y, adv, height) = (ox as f32, oy as f32, adv as f32, height as f32);
            if !(x.is_finite() && y.is_finite() && adv.is_finite() && height.is_finite()) {
                self.out.text.truncate(start);
                continue;
            }
            let seq = self.out.glyphs.len() as u32;
            self.out.glyphs.push(Glyph { x, y, adv, size: height, rot, start: start as u32, len: len as u32, seq, style: font.style });
        }
        Ok(())
    }
}

/// Drop control characters (and turn other whitespace into a plain space) in text[start..].
fn clean_text(text: &mut String, start: usize) {
    let tail = &text[start..];
    if tail.bytes().all(|b| b >= 0x20 && b != 0x7f) && !tail.contains(['\u{a0}', '\u{fffe}', '\u{feff}']) {
        return;
    }
    let cleaned: String = tail
        .chars()
        .filter_map(|c| match c {
            // Other control characters (a ligature glyph named "#0C" ...) come out as a space,
            // as in pdftotext.
            '\u{1}'..='\u{1f}' | '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{3000}' => Some(' '),
            c if c.is_control() || c == '\u{feff}' || c == '\u{fffe}' => None,
            c => Some(c),
        })
        .collect();
    text.truncate(start);
    text.push_str(&cleaned);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_mul() {
        let a = Matrix([2.0, 0.0, 0.0, 2.0, 10.0, 20.0]);
        let b = Matrix::translate(5.0, 5.0);
        assert_eq!(a.mul(&b).0, [2.0, 0.0, 0.0, 2.0, 15.0, 25.0]);
        let inf = Matrix([f64::MAX, 0.0, 0.0, f64::MAX, 0.0, 0.0]);
        assert!(inf.mul(&inf).0.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn clean() {
        let mut s = String::from("ab\u{0}c\td\u{c}");
        clean_text(&mut s, 1);
        assert_eq!(s, "abc d ");
    }
}
