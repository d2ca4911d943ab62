//! Built-in encodings of embedded font programs: Type 1 (FontFile) and CFF (FontFile3/Type1C).
//!
//! PDF producers often leave /Encoding out of a font whose program carries its own encoding
//! (TeX's Computer Modern fonts, Ghostscript's Type1C conversions); the codes then mean the
//! glyphs that encoding names.

use super::encoding::{CFF_STANDARD_STRINGS, ENC_STANDARD, NameTable};
use super::lexer::{Lexer, Operand, Token};

/// A font program's built-in encoding: code -> glyph name.
pub(crate) enum Builtin {
    Standard,
    Custom(Box<[Option<String>; 256]>),
}

impl Builtin {
    pub(crate) fn name(&self, code: u8) -> Option<&str> {
        match self {
            Builtin::Standard => Some(ENC_STANDARD[usize::from(code)]).filter(|n| !n.is_empty()),
            Builtin::Custom(t) => t[usize::from(code)].as_deref(),
        }
    }
}

fn empty_table() -> Box<[Option<String>; 256]> {
    Box::new(std::array::from_fn(|_| None))
}

/// The encoding in the clear-text part of a Type 1 font program.
pub(crate) fn type1_encoding(data: &[u8]) -> Option<Builtin> {
    // The clear-text part ends at `eexec`; only look there (and at most 256 KiB).
    let limit = data.len().min(256 << 10);
    let head = &data[..limit];
    let end = find(head, b"eexec").unwrap_or(head.len());
    let head = &head[..end];
    let start = find(head, b"/Encoding")?;
    let rest = &head[start + b"/Encoding".len()..];
    let mut lx = Lexer::new(rest);
    let mut table = empty_table();
    let mut any = false;
    // Recognise `StandardEncoding def` and `dup <code> /<name> put`.
    let mut window: Vec<Token<'_>> = Vec::with_capacity(4);
    let mut steps = 0usize;
    while let Some(tok) = lx.token() {
        steps += 1;
        if steps > 20_000 {
            break;
        }
        match &tok {
            Token::Keyword(b"StandardEncoding") if !any => return Some(Builtin::Standard),
            Token::Keyword(b"def") | Token::Keyword(b"readonly") if any => break,
            Token::Keyword(b"put") => {
                if let [Token::Keyword(b"dup"), Token::Operand(Operand::Num(code)), Token::Operand(Operand::Name(name))] =
                    window.as_slice()
                {
                    if (0.0..256.0).contains(code) {
                        table[*code as usize] = Some(String::from_utf8_lossy(name).into_owned());
                        any = true;
                    }
                }
            }
            _ => {}
        }
        if window.len() == 3 {
            window.remove(0);
        }
        window.push(tok);
    }
    any.then(|| Builtin::Custom(table))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

// ------------------------------------------------------------------------------------ CFF

struct Cff<'a> {
    d: &'a [u8],
}

impl<'a> Cff<'a> {
    fn u8(&self, at: usize) -> Option<u8> {
        self.d.get(at).copied()
    }
    fn u16(&self, at: usize) -> Option<usize> {
        Some((usize::from(self.u8(at)?) << 8) | usize::from(self.u8(at + 1)?))
    }
    fn offset(&self, at: usize, size: u8) -> Option<usize> {
        let mut v = 0usize;
        for i in 0..usize::from(size) {
            v = (v << 8) | usize::from(self.u8(at + i)?);
        }
        Some(v)
    }

    /// An INDEX at `at`: (the items' byte ranges, the offset after the INDEX).
    fn index(&self, at: usize) -> Option<(Vec<(usize, usize)>, usize)> {
        let count = self.u16(at)?;
        if count == 0 {
            return Some((Vec::new(), at + 2));
        }
        let off_size = self.u8(at + 2)?;
        if !(1..=4).contains(&off_size) {
            return None;
        }
        let offs_at = at + 3;
        let data_at = offs_at + (count + 1) * usize::from(off_size) - 1;
        let mut items = Vec::with_capacity(count.min(65536));
        let mut prev = self.offset(offs_at, off_size)?;
        for i in 1..=count {
            let next = self.offset(offs_at + i * usize::from(off_size), off_size)?;
            if next < prev {
                return None;
            }
            items.push((data_at + prev, data_at + next));
            prev = next;
        }
        let end = data_at + prev;
        if end > self.d.len() {
            return None;
        }
        Some((items, end))
    }

    /// Parse a DICT: (operator, operands) pairs; two-byte operators are 1200 + b1.
    fn dict(&self, start: usize, end: usize) -> Vec<(u16, Vec<f64>)> {
        let mut out = Vec::new();
        let mut ops: Vec<f64> = Vec::new();
        let mut i = start;
        while i < end {
            let Some(b0) = self.u8(i) else { break };
            match b0 {
                0..=21 => {
                    let op = if b0 == 12 {
                        i += 1;
                        1200 + u16::from(self.u8(i).unwrap_or(0))
                    } else {
                        u16::from(b0)
                    };
                    out.push((op, std::mem::take(&mut ops)));
                    i += 1;
                }
                28 => {
                    let v = self.u16(i + 1).unwrap_or(0) as i16;
                    ops.push(f64::from(v));
                    i += 3;
                }
                29 => {
                    let v = self.offset(i + 1, 4).unwrap_or(0) as u32 as i32;
                    ops.push(f64::from(v));
                    i += 5;
                }
                30 => {
                    // real: skip nibbles up to the 0xf terminator
                    i += 1;
                    while let Some(b) = self.u8(i) {
                        i += 1;
                        if b & 0x0f == 0x0f || b >> 4 == 0x0f {
                            break;
                        }
                    }
                    ops.push(0.0);
                }
                32..=246 => {
                    ops.push(f64::from(i32::from(b0) - 139));
                    i += 1;
                }
                247..=250 => {
                    let b1 = i32::from(self.u8(i + 1).unwrap_or(0));
                    ops.push(f64::from((i32::from(b0) - 247) * 256 + b1 + 108));
                    i += 2;
                }
                251..=254 => {
                    let b1 = i32::from(self.u8(i + 1).unwrap_or(0));
                    ops.push(f64::from(-(i32::from(b0) - 251) * 256 - b1 - 108));
                    i += 2;
                }
                _ => i += 1,
            }
            if ops.len() > 48 {
                ops.clear();
            }
        }
        out
    }

    fn sid_name(&self, sid: usize, strings: &[(usize, usize)]) -> Option<String> {
        if sid < CFF_STANDARD_STRINGS.len() {
            return CFF_STANDARD_STRINGS.get(sid).map(|s| s.to_string());
        }
        let (a, b) = *strings.get(sid - CFF_STANDARD_STRINGS.len())?;
        Some(String::from_utf8_lossy(self.d.get(a..b)?).into_owned())
    }
}

/// The built-in encoding of a bare CFF font program (FontFile3 /Subtype /Type1C).
pub(crate) fn cff_encoding(data: &[u8]) -> Option<Builtin> {
    let c = Cff { d: data };
    let hdr_size = usize::from(c.u8(2)?);
    let (_names, after_names) = c.index(hdr_size)?;
    let (top, after_top) = c.index(after_names)?;
    let (strings, _) = c.index(after_top)?;
    let &(ts, te) = top.first()?;
    let dict = c.dict(ts, te);
    let get = |op: u16| dict.iter().find(|(o, _)| *o == op).and_then(|(_, v)| v.last().copied());
    if dict.iter().any(|(o, _)| *o == 1230) {
        return None; // CID-keyed: no encoding
    }
    let enc_off = get(16).unwrap_or(0.0);
    if enc_off == 0.0 {
        return Some(Builtin::Standard);
    }
    if enc_off < 0.0 || enc_off == 1.0 {
        return None; // Expert encoding: not supported
    }
    let charstrings = get(17)?;
    if charstrings <= 0.0 {
        return None;
    }
    let (glyphs, _) = c.index(charstrings as usize)?;
    let n_glyphs = glyphs.len();
    // charset: GID -> SID
    let charset_off = get(15).unwrap_or(0.0);
    let mut sids: Vec<usize> = vec![0; n_glyphs];
    if charset_off == 0.0 {
        for (gid, sid) in sids.iter_mut().enumerate() {
            *sid = if gid <= 228 { gid } else { 0 };
        }
    } else if charset_off > 2.0 {
        let mut at = charset_off as usize;
        let fmt = c.u8(at)?;
        at += 1;
        let mut gid = 1usize;
        match fmt {
            0 => {
                while gid < n_glyphs {
                    sids[gid] = c.u16(at)?;
                    at += 2;
                    gid += 1;
                }
            }
            1 | 2 => {
                while gid < n_glyphs {
                    let first = c.u16(at)?;
                    let left = if fmt == 1 { usize::from(c.u8(at + 2)?) } else { c.u16(at + 2)? };
                    at += if fmt == 1 { 3 } else { 4 };
                    for k in 0..=left {
                        if gid >= n_glyphs {
                            break;
                        }
                        sids[gid] = first + k;
                        gid += 1;
                    }
                }
            }
            _ => return None,
        }
    } else {
        return None; // predefined expert charsets
    }
    let mut table = empty_table();
    let mut at = enc_off as usize;
    let fmt = c.u8(at)?;
    at += 1;
    match fmt & 0x7f {
        0 => {
            let n = usize::from(c.u8(at)?);
            at += 1;
            for gid in 1..=n {
                let code = c.u8(at)?;
                at += 1;
                if let Some(&sid) = sids.get(gid) {
                    table[usize::from(code)] = c.sid_name(sid, &strings);
                }
            }
        }
        1 => {
            let n = usize::from(c.u8(at)?);
            at += 1;
            let mut gid = 1usize;
            for _ in 0..n {
                let first = usize::from(c.u8(at)?);
                let left = usize::from(c.u8(at + 1)?);
                at += 2;
                for k in 0..=left {
                    let code = first + k;
                    if code < 256 {
                        if let Some(&sid) = sids.get(gid) {
                            table[code] = c.sid_name(sid, &strings);
                        }
                    }
                    gid += 1;
                }
            }
        }
        _ => return None,
    }
    if fmt & 0x80 != 0 {
        let n = usize::from(c.u8(at)?);
        at += 1;
        for _ in 0..n {
            let code = c.u8(at)?;
            let sid = c.u16(at + 1)?;
            at += 3;
            table[usize::from(code)] = c.sid_name(sid, &strings);
        }
    }
    Some(Builtin::Custom(table))
}

/// Fill a name table from a builtin encoding (for the base of /Differences).
pub(crate) fn to_names(b: &Builtin) -> Vec<Option<String>> {
    (0..=255u8).map(|c| b.name(c).map(str::to_string)).collect()
}

/// Names of a predefined table as owned options.
pub(crate) fn table_names(t: &NameTable) -> Vec<Option<String>> {
    t.iter().map(|n| if n.is_empty() { None } else { Some((*n).to_string()) }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type1_custom_and_standard() {
        let f = b"%!PS-AdobeFont-1.0: CMR10\n/Encoding 256 array\n0 1 255 {1 index exch /.notdef put} for\ndup 12 /fi put\ndup 65 /A put\nreadonly def\ncurrentfile eexec\x00\x01";
        let b = type1_encoding(f).expect("encoding");
        assert_eq!(b.name(12), Some("fi"));
        assert_eq!(b.name(65), Some("A"));
        assert_eq!(b.name(66), None);
        let s = type1_encoding(b"/Encoding StandardEncoding def\neexec").expect("std");
        assert_eq!(s.name(0x41), Some("A"));
        assert!(type1_encoding(b"garbage \xff\xfe").is_none());
    }

    #[test]
    fn cff_garbage_is_none() {
        assert!(cff_encoding(b"").is_none());
        assert!(cff_encoding(&[1, 0, 4, 1, 0xff, 0xff, 4, 0, 0, 0]).is_none());
        let noise: Vec<u8> = (0..2000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        let _ = cff_encoding(&noise);
    }
}

// ------------------------------------------------------------------------------- TrueType

/// Glyph id -> Unicode, from the Unicode subtables of a TrueType font's `cmap` (the reverse of
/// what the font maps), sorted by glyph id. Used for CID TrueType fonts that come without
/// ToUnicode and without a known character collection, as pdftotext does.
pub(crate) fn truetype_gid_to_unicode(data: &[u8]) -> Vec<(u16, char)> {
    let rd16 = |at: usize| -> Option<u32> { Some((u32::from(*data.get(at)?) << 8) | u32::from(*data.get(at + 1)?)) };
    let rd32 = |at: usize| -> Option<u32> { Some((rd16(at)? << 16) | rd16(at + 2)?) };
    let mut out: Vec<(u16, char)> = Vec::new();
    let Some(num_tables) = rd16(4) else { return out };
    let cmap = (0..num_tables.min(256) as usize).find_map(|i| {
        let rec = 12 + 16 * i;
        (data.get(rec..rec + 4)? == b"cmap").then(|| rd32(rec + 8)).flatten()
    });
    let Some(cmap) = cmap.map(|c| c as usize) else { return out };
    let Some(n_sub) = rd16(cmap + 2) else { return out };
    // Prefer a full-Unicode (format 12) subtable, then a BMP one.
    let mut best: Option<(u32, usize)> = None;
    for i in 0..n_sub.min(64) as usize {
        let rec = cmap + 4 + 8 * i;
        let (Some(pid), Some(eid), Some(off)) = (rd16(rec), rd16(rec + 2), rd32(rec + 4)) else { break };
        let unicode = pid == 0 || (pid == 3 && (eid == 1 || eid == 10));
        if !unicode {
            continue;
        }
        let at = cmap + off as usize;
        let rank = match rd16(at) {
            Some(12) => 2,
            Some(4) => 1,
            _ => continue,
        };
        if best.is_none_or(|(r, _)| rank > r) {
            best = Some((rank, at));
        }
    }
    let Some((_, at)) = best else { return out };
    const MAX_MAPPINGS: usize = 1 << 17;
    match rd16(at) {
        Some(4) => {
            let seg_x2 = rd16(at + 6).unwrap_or(0) as usize;
            let ends = at + 14;
            let starts = ends + seg_x2 + 2;
            let deltas = starts + seg_x2;
            let range_offs = deltas + seg_x2;
            for seg in 0..seg_x2 / 2 {
                let (Some(end), Some(start), Some(delta), Some(ro)) =
                    (rd16(ends + 2 * seg), rd16(starts + 2 * seg), rd16(deltas + 2 * seg), rd16(range_offs + 2 * seg))
                else {
                    break;
                };
                if start > end || end == 0xffff && start == 0xffff {
                    continue;
                }
                for c in start..=end {
                    if out.len() >= MAX_MAPPINGS {
                        break;
                    }
                    let gid = if ro == 0 {
                        (c + delta) & 0xffff
                    } else {
                        let addr = range_offs + 2 * seg + ro as usize + 2 * (c - start) as usize;
                        match rd16(addr) {
                            Some(0) | None => continue,
                            Some(g) => (g + delta) & 0xffff,
                        }
                    };
                    if let Some(ch) = char::from_u32(c) {
                        if gid != 0 {
                            out.push((gid as u16, ch));
                        }
                    }
                }
            }
        }
        Some(12) => {
            let n = rd32(at + 12).unwrap_or(0) as usize;
            for g in 0..n.min(MAX_MAPPINGS) {
                let rec = at + 16 + 12 * g;
                let (Some(s), Some(e), Some(gs)) = (rd32(rec), rd32(rec + 4), rd32(rec + 8)) else { break };
                if s > e || e > 0x10ffff {
                    continue;
                }
                for c in s..=e.min(s.saturating_add(MAX_MAPPINGS as u32)) {
                    if out.len() >= MAX_MAPPINGS {
                        break;
                    }
                    let gid = gs.saturating_add(c - s);
                    if let (Some(ch), true) = (char::from_u32(c), gid > 0 && gid <= 0xffff) {
                        out.push((gid as u16, ch));
                    }
                }
            }
        }
        _ => {}
    }
    // One character per glyph: the lowest code point (a glyph mapped from several).
    out.sort_by_key(|&(g, c)| (g, c));
    out.dedup_by_key(|e| e.0);
    out
}

#[cfg(test)]
mod truetype_tests {
    use super::truetype_gid_to_unicode;

    /// A font with only a `cmap` table, format 4, mapping 'A'..'C' to glyphs 5..7.
    pub(crate) fn tiny_truetype() -> Vec<u8> {
        let mut f = vec![0, 1, 0, 0, 0, 1, 0, 16, 0, 0, 0, 0];
        f.extend_from_slice(b"cmap");
        f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 28, 0, 0, 0, 0]);
        // cmap header: version 0, 1 subtable (3,1) at offset 12
        f.extend_from_slice(&[0, 0, 0, 1, 0, 3, 0, 1, 0, 0, 0, 12]);
        // format 4, two segments: 0x41..0x43 delta -0x3c (-> 5..7), and the 0xffff terminator
        let delta = (5i32 - 0x41) as i16 as u16;
        let words: [u16; 16] = [4, 32, 0, 4, 4, 1, 0, 0x43, 0xffff, 0, 0x41, 0xffff, delta, 1, 0, 0];
        for w in words {
            f.extend_from_slice(&w.to_be_bytes());
        }
        f
    }

    #[test]
    fn format4_reverse_map() {
        let m = truetype_gid_to_unicode(&tiny_truetype());
        assert_eq!(m, vec![(5, 'A'), (6, 'B'), (7, 'C')]);
        assert!(truetype_gid_to_unicode(b"junk").is_empty());
        let mut cut = tiny_truetype();
        cut.truncate(40);
        let _ = truetype_gid_to_unicode(&cut);
    }
}
