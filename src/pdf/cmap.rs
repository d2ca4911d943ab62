//! CMaps: ToUnicode maps (code -> Unicode) and encoding CMaps (code -> CID), embedded or
//! predefined (see [`super::cjk`]).

use super::encoding::{glyph_name_to_unicode, utf16be};
use super::lexer::{Lexer, Operand, Token};
use std::sync::Arc;

/// Most mapping entries read from one CMap; the rest are ignored.
const MAX_ENTRIES: usize = 1 << 20;
/// Deepest `usecmap` chain followed.
pub(crate) const MAX_USECMAP_DEPTH: usize = 4;

/// One codespace range: codes of `n` bytes whose every byte lies between the bytes of lo/hi.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Codespace {
    pub(crate) n: u8,
    pub(crate) lo: u32,
    pub(crate) hi: u32,
}

impl Codespace {
    fn contains(&self, bytes: &[u8]) -> bool {
        let n = usize::from(self.n);
        if bytes.len() < n {
            return false;
        }
        (0..n).all(|i| {
            let shift = 8 * (n - 1 - i);
            let lo = (self.lo >> shift) as u8;
            let hi = (self.hi >> shift) as u8;
            (lo..=hi).contains(&bytes[i])
        })
    }

    fn first_byte_matches(&self, b: u8) -> bool {
        let shift = 8 * (usize::from(self.n).max(1) - 1);
        ((self.lo >> shift) as u8..=(self.hi >> shift) as u8).contains(&b)
    }
}

/// Code -> CID range.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CidRange {
    pub(crate) lo: u32,
    pub(crate) hi: u32,
    pub(crate) cid: u32,
}

/// Where a bfrange's destinations come from.
#[derive(Debug, Clone)]
enum BfDst {
    /// The first code's text; each further code increments the last character.
    Inc(Box<str>),
    /// One text per code.
    List(Vec<Box<str>>),
}

#[derive(Debug, Clone)]
struct BfRange {
    lo: u32,
    hi: u32,
    dst: BfDst,
}

/// How a predefined Unicode CMap (UniGB-UCS2-H, UniJIS-UTF16-V, ...) turns a code into a
/// Unicode scalar before looking its CID up in the collection's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnicodeForm {
    Ucs2,
    Utf16,
    Utf32,
    Utf8,
}

/// A parsed CMap.
#[derive(Debug, Default, Clone)]
pub(crate) struct CMap {
    pub(crate) wmode: u8,
    pub(crate) codespace: Vec<Codespace>,
    /// Code == CID (Identity-H/V).
    pub(crate) identity: bool,
    cid_chars: Vec<(u32, u32)>,
    cid_ranges: Vec<CidRange>,
    bf_chars: Vec<(u32, Box<str>)>,
    bf_ranges: Vec<BfRange>,
    pub(crate) parent: Option<Arc<CMap>>,
    /// Predefined Unicode-based CMaps: the form of their codes, and their collection's
    /// Unicode -> CID ranges (sorted by `lo`; the CJK data's, decoded once and kept).
    pub(crate) unicode_form: Option<(UnicodeForm, &'static [CidRange])>,
    /// Registry-Ordering of a predefined CMap's character collection, e.g. "Adobe-GB1".
    pub(crate) collection: Option<&'static str>,
}

impl CMap {
    pub(crate) fn identity(wmode: u8) -> CMap {
        CMap { wmode, identity: true, codespace: vec![Codespace { n: 2, lo: 0, hi: 0xffff }], ..CMap::default() }
    }

    pub(crate) fn from_parts(
        wmode: u8,
        codespace: Vec<Codespace>,
        mut ranges: Vec<CidRange>,
        parent: Option<Arc<CMap>>,
        unicode_form: Option<(UnicodeForm, &'static [CidRange])>,
        collection: Option<&'static str>,
    ) -> CMap {
        ranges.sort_by_key(|r| r.lo);
        CMap { wmode, codespace, cid_ranges: ranges, parent, unicode_form, collection, ..CMap::default() }
    }

    /// The codespace ranges in effect (own, else inherited).
    fn codespaces(&self) -> &[Codespace] {
        let mut cur = self;
        for _ in 0..=MAX_USECMAP_DEPTH {
            if !cur.codespace.is_empty() {
                return &cur.codespace;
            }
            match &cur.parent {
                Some(p) => cur = p,
                None => break,
            }
        }
        &[]
    }

    /// Split the next character code off `bytes` (non-empty): (code, bytes used).
    pub(crate) fn next_code(&self, bytes: &[u8]) -> (u32, usize) {
        let cs = self.codespaces();
        let take = |n: usize| -> (u32, usize) {
            let n = n.clamp(1, 4).min(bytes.len());
            let code = bytes[..n].iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b));
            (code, n)
        };
        if cs.is_empty() {
            return take(if self.identity { 2 } else { 1 });
        }
        for n in 1..=4u8 {
            if cs.iter().any(|c| c.n == n && c.contains(bytes)) {
                return take(usize::from(n));
            }
        }
        // No range matches: use the length of a range whose first byte matches, else the
        // shortest length (as Acrobat and pdf.js do).
        let first = bytes[0];
        let n = cs
            .iter()
            .filter(|c| c.first_byte_matches(first))
            .map(|c| c.n)
            .min()
            .or_else(|| cs.iter().map(|c| c.n).min())
            .unwrap_or(1);
        take(usize::from(n))
    }

    /// The CID of a code (with its byte length), through usecmap parents.
    pub(crate) fn cid(&self, code: u32, n: usize) -> Option<u32> {
        let mut cur = self;
        for _ in 0..=MAX_USECMAP_DEPTH {
            if cur.identity {
                return Some(code);
            }
            if let Ok(i) = cur.cid_chars.binary_search_by_key(&code, |e| e.0) {
                return cur.cid_chars.get(i).map(|e| e.1);
            }
            if let Some(r) = find_range(&cur.cid_ranges, code, |r| (r.lo, r.hi)) {
                return Some(r.cid.saturating_add(code - r.lo));
            }
            if let Some((form, table)) = cur.unicode_form {
                if let Some(u) = decode_form(form, code, n) {
                    if let Some(cid) = unicode_to_cid(table, u) {
                        return Some(cid);
                    }
                }
            }
            match &cur.parent {
                Some(p) => cur = p,
                None => return None,
            }
        }
        None
    }

    /// Whether the map has any bf (Unicode) entries.
    pub(crate) fn has_unicode(&self) -> bool {
        !self.bf_chars.is_empty() || !self.bf_ranges.is_empty() || self.parent.as_ref().is_some_and(|p| p.has_unicode())
    }

    /// Append the Unicode text of `code` to `out`; false when the map does not know it.
    pub(crate) fn unicode(&self, code: u32, out: &mut String) -> bool {
        let mut cur = self;
        for _ in 0..=MAX_USECMAP_DEPTH {
            if let Ok(i) = cur.bf_chars.binary_search_by_key(&code, |e| e.0) {
                if let Some((_, s)) = cur.bf_chars.get(i) {
                    out.push_str(s);
                    return true;
                }
            }
            if let Some(r) = find_range(&cur.bf_ranges, code, |r| (r.lo, r.hi)) {
                let off = code - r.lo;
                match &r.dst {
                    BfDst::Inc(base) => {
                        let mut chars = base.chars();
                        let last = chars.next_back();
                        out.push_str(chars.as_str());
                        if let Some(last) = last {
                            let v = u32::from(last).saturating_add(off);
                            out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                        }
                        return true;
                    }
                    BfDst::List(list) => {
                        if let Some(s) = list.get(off as usize) {
                            out.push_str(s);
                            return true;
                        }
                    }
                }
            }
            match &cur.parent {
                Some(p) => cur = p,
                None => return false,
            }
        }
        false
    }
}

/// The range containing `code` in a list sorted by `lo` (later of overlapping ranges wins,
/// looking back a few entries).
fn find_range<T>(ranges: &[T], code: u32, key: impl Fn(&T) -> (u32, u32)) -> Option<&T> {
    let end = ranges.partition_point(|r| key(r).0 <= code);
    ranges[..end].iter().rev().take(8).find(|r| key(r).1 >= code)
}

/// The CID of a Unicode scalar in a collection's sorted Unicode -> CID ranges.
fn unicode_to_cid(ranges: &[CidRange], u: u32) -> Option<u32> {
    let end = ranges.partition_point(|r| r.lo <= u);
    let r = ranges.get(end.checked_sub(1)?)?;
    (r.hi >= u).then(|| r.cid.saturating_add(u - r.lo))
}

fn decode_form(form: UnicodeForm, code: u32, n: usize) -> Option<u32> {
    match form {
        UnicodeForm::Ucs2 | UnicodeForm::Utf32 => Some(code),
        UnicodeForm::Utf16 => {
            if n == 4 {
                let hi = code >> 16;
                let lo = code & 0xffff;
                if (0xD800..0xDC00).contains(&hi) && (0xDC00..0xE000).contains(&lo) {
                    return Some(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
                }
                None
            } else {
                Some(code)
            }
        }
        UnicodeForm::Utf8 => {
            let bytes = code.to_be_bytes();
            let s = &bytes[4usize.saturating_sub(n)..];
            std::str::from_utf8(s).ok()?.chars().next().map(u32::from)
        }
    }
}

fn code_of(bytes: &[u8]) -> Option<(u32, u8)> {
    if bytes.is_empty() || bytes.len() > 4 {
        return None;
    }
    Some((bytes.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b)), bytes.len() as u8))
}

fn bf_text(op: &Operand<'_>) -> Option<Box<str>> {
    match op {
        Operand::Str(s) => Some(utf16be(s).into_boxed_str()),
        Operand::Name(n) => {
            let mut s = String::new();
            glyph_name_to_unicode(n, &mut s).then(|| s.into_boxed_str())
        }
        _ => None,
    }
}

/// Parse CMap source (a ToUnicode stream, or an embedded encoding CMap). `resolve_parent`
/// gives the CMap that a `usecmap` names.
pub(crate) fn parse(data: &[u8], resolve_parent: &dyn Fn(&[u8]) -> Option<Arc<CMap>>) -> CMap {
    let mut cmap = CMap::default();
    let mut lx = Lexer::new(data);
    let mut stack: Vec<Operand<'_>> = Vec::new();
    let mut entries = 0usize;
    while let Some(tok) = lx.token() {
        let kw = match tok {
            Token::Keyword(k) => k,
            Token::Operand(o) => {
                if stack.len() >= 16 {
                    stack.remove(0);
                }
                stack.push(o);
                continue;
            }
            _ => {
                stack.clear();
                continue;
            }
        };
        match kw {
            b"begincodespacerange" => {
                read_entries(&mut lx, b"endcodespacerange", 2, &mut |ops| {
                    if let (Operand::Str(a), Operand::Str(b)) = (&ops[0], &ops[1]) {
                        if let (Some((lo, n)), Some((hi, m))) = (code_of(a), code_of(b)) {
                            if n == m && cmap.codespace.len() < 256 {
                                cmap.codespace.push(Codespace { n, lo, hi });
                            }
                        }
                    }
                });
            }
            b"begincidrange" => {
                read_entries(&mut lx, b"endcidrange", 3, &mut |ops| {
                    if let (Operand::Str(a), Operand::Str(b), Some(cid)) = (&ops[0], &ops[1], ops[2].num()) {
                        if let (Some((lo, _)), Some((hi, _))) = (code_of(a), code_of(b)) {
                            if lo <= hi && entries < MAX_ENTRIES && cid >= 0.0 {
                                entries += 1;
                                cmap.cid_ranges.push(CidRange { lo, hi, cid: cid as u32 });
                            }
                        }
                    }
                });
            }
            b"begincidchar" => {
                read_entries(&mut lx, b"endcidchar", 2, &mut |ops| {
                    if let (Operand::Str(a), Some(cid)) = (&ops[0], ops[1].num()) {
                        if let Some((code, _)) = code_of(a) {
                            if entries < MAX_ENTRIES && cid >= 0.0 {
                                entries += 1;
                                cmap.cid_chars.push((code, cid as u32));
                            }
                        }
                    }
                });
            }
            b"beginbfchar" => {
                read_entries(&mut lx, b"endbfchar", 2, &mut |ops| {
                    if let Operand::Str(a) = &ops[0] {
                        if let (Some((code, _)), Some(text)) = (code_of(a), bf_text(&ops[1])) {
                            if entries < MAX_ENTRIES {
                                entries += 1;
                                cmap.bf_chars.push((code, text));
                            }
                        }
                    }
                });
            }
            b"beginbfrange" => {
                read_entries(&mut lx, b"endbfrange", 3, &mut |ops| {
                    if let (Operand::Str(a), Operand::Str(b)) = (&ops[0], &ops[1]) {
                        if let (Some((lo, _)), Some((hi, _))) = (code_of(a), code_of(b)) {
                            if lo > hi || entries >= MAX_ENTRIES {
                                return;
                            }
                            let dst = match &ops[2] {
                                Operand::Array(items) => {
                                    BfDst::List(items.iter().map(|o| bf_text(o).unwrap_or_default()).collect())
                                }
                                other => match bf_text(other) {
                                    Some(t) => BfDst::Inc(t),
                                    None => return,
                                },
                            };
                            entries += 1;
                            cmap.bf_ranges.push(BfRange { lo, hi, dst });
                        }
                    }
                });
            }
            b"usecmap" => {
                if let Some(Operand::Name(n)) = stack.last() {
                    cmap.parent = resolve_parent(n);
                }
            }
            b"def" => {
                if let [.., Operand::Name(k), Operand::Num(v)] = stack.as_slice() {
                    if k.as_ref() == b"WMode" {
                        cmap.wmode = if *v == 1.0 { 1 } else { 0 };
                    }
                }
            }
            _ => {}
        }
        stack.clear();
    }
    // Later entries override earlier ones: sort stably, keep the last of equal codes.
    cmap.cid_chars.reverse();
    cmap.cid_chars.sort_by_key(|e| e.0);
    cmap.cid_chars.dedup_by_key(|e| e.0);
    cmap.bf_chars.reverse();
    cmap.bf_chars.sort_by_key(|e| e.0);
    cmap.bf_chars.dedup_by_key(|e| e.0);
    cmap.cid_ranges.sort_by_key(|r| r.lo);
    cmap.bf_ranges.sort_by_key(|r| r.lo);
    cmap
}

/// Read groups of `arity` operands (arrays allowed) until `end`, calling `f` for each group.
fn read_entries<'a>(lx: &mut Lexer<'a>, end: &[u8], arity: usize, f: &mut dyn FnMut(&[Operand<'a>])) {
    let mut group: Vec<Operand<'a>> = Vec::with_capacity(arity);
    while let Some(tok) = lx.token() {
        let op = match tok {
            Token::Keyword(k) => {
                if k == end {
                    return;
                }
                // Any other keyword ends the section (a malformed CMap).
                return;
            }
            Token::Operand(o) => o,
            Token::ArrayOpen => {
                let mut items = Vec::new();
                while let Some(t) = lx.token() {
                    match t {
                        Token::ArrayClose => break,
                        Token::Operand(o) => {
                            if items.len() < 65536 {
                                items.push(o)
                            }
                        }
                        _ => break,
                    }
                }
                Operand::Array(items)
            }
            _ => continue,
        };
        group.push(op);
        if group.len() == arity {
            f(&group);
            group.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &[u8]) -> Option<Arc<CMap>> {
        None
    }

    #[test]
    fn tounicode_bfchar_bfrange_surrogates() {
        let src = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap
            1 begincodespacerange <0000> <FFFF> endcodespacerange
            3 beginbfchar <0001> <0041> <0002> <D835DC00> <0003> <00660066> endbfchar
            2 beginbfrange <0010> <0012> <4E00> <0020> <0021> [<0061> <0062>] endbfrange
            endcmap";
        let c = parse(src, &none);
        let get = |code| {
            let mut s = String::new();
            c.unicode(code, &mut s).then_some(s)
        };
        assert_eq!(get(1).as_deref(), Some("A"));
        assert_eq!(get(2).as_deref(), Some("\u{1d400}"));
        assert_eq!(get(3).as_deref(), Some("ff"));
        assert_eq!(get(0x12).as_deref(), Some("\u{4e02}"));
        assert_eq!(get(0x21).as_deref(), Some("b"));
        assert_eq!(get(0x22), None);
        assert_eq!(c.next_code(&[0x00, 0x01, 0x41]), (1, 2));
    }

    #[test]
    fn cid_cmap_codespace_and_ranges() {
        let src = b"begincmap 2 begincodespacerange <00> <80> <8140> <FEFE> endcodespacerange
            2 begincidrange <20> <7e> 1 <8140> <817e> 1000 endcidrange
            1 begincidchar <8141> 5 endcidchar /WMode 1 def endcmap";
        let c = parse(src, &none);
        assert_eq!(c.wmode, 1);
        assert_eq!(c.next_code(b"A\x81\x40"), (0x41, 1));
        assert_eq!(c.next_code(b"\x81\x40"), (0x8140, 2));
        assert_eq!(c.cid(0x41, 1), Some(34));
        assert_eq!(c.cid(0x8140, 2), Some(1000));
        assert_eq!(c.cid(0x8141, 2), Some(5));
        assert_eq!(c.cid(0x8180, 2), None);
        // A byte outside every range: one byte, as the range with that first byte is absent.
        assert_eq!(c.next_code(b"\xff\xff").1, 1);
    }

    #[test]
    fn hostile_cmaps_do_not_panic() {
        let srcs: [&[u8]; 5] = [
            b"beginbfrange <FFFFFFFF> <FFFFFFFF> <DBFF> endbfrange",
            b"beginbfrange <00> <FF> [ endbfrange",
            b"begincodespacerange <> <> <0000000000> <01> endcodespacerange",
            b"beginbfchar <01> endbfchar beginbfrange",
            b"begincidrange <10> <01> -5 endcidrange",
        ];
        for s in srcs {
            let c = parse(s, &none);
            let mut out = String::new();
            for code in [0u32, 1, 0xff, 0xffff_ffff] {
                c.unicode(code, &mut out);
                c.cid(code, 2);
            }
            c.next_code(&[0xff]);
        }
    }
}
