//! Tokenizer for content streams (and the PostScript-like syntax of CMaps).
//!
//! Written for hostile input: every loop advances, nesting is capped, nothing indexes past the
//! end, and garbage bytes are skipped rather than reported, the way viewers do.

use std::borrow::Cow;

/// Deepest array/dictionary nesting kept as operands; deeper structure is skipped.
const MAX_NESTING: usize = 32;
/// Most operands kept on the stack between two operators; beyond, the oldest are dropped.
const MAX_OPERANDS: usize = 256;
/// Most elements kept in one array or dictionary operand.
const MAX_ELEMENTS: usize = 1 << 20;

/// An operand of a content-stream operator.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand<'a> {
    Num(f64),
    Str(Cow<'a, [u8]>),
    Name(Cow<'a, [u8]>),
    Array(Vec<Operand<'a>>),
    Dict(Vec<(Cow<'a, [u8]>, Operand<'a>)>),
    Bool(bool),
    Null,
}

impl Operand<'_> {
    pub(crate) fn num(&self) -> Option<f64> {
        match self {
            Operand::Num(n) => Some(*n),
            _ => None,
        }
    }
}

/// A token of the content-stream syntax.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token<'a> {
    Operand(Operand<'a>),
    ArrayOpen,
    ArrayClose,
    DictOpen,
    DictClose,
    /// A bare keyword: an operator in content streams (`Tj`, `BT`, `begincmap`, ...).
    Keyword(&'a [u8]),
}

#[inline]
pub(crate) fn is_white(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\0')
}

#[inline]
pub(crate) fn is_delim(c: u8) -> bool {
    matches!(c, b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%')
}

#[inline]
fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

pub(crate) struct Lexer<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Lexer { data, pos: 0 }
    }

    fn skip_space(&mut self) {
        while let Some(&c) = self.data.get(self.pos) {
            if is_white(c) {
                self.pos += 1;
            } else if c == b'%' {
                while let Some(&c) = self.data.get(self.pos) {
                    if c == b'\n' || c == b'\r' {
                        break;
                    }
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    /// The next token, or `None` at the end of the data.
    pub(crate) fn token(&mut self) -> Option<Token<'a>> {
        loop {
            self.skip_space();
            let c = *self.data.get(self.pos)?;
            let start = self.pos;
            match c {
                b'(' => return Some(Token::Operand(Operand::Str(self.literal_string()))),
                b'<' => {
                    if self.data.get(self.pos + 1) == Some(&b'<') {
                        self.pos += 2;
                        return Some(Token::DictOpen);
                    }
                    return Some(Token::Operand(Operand::Str(Cow::Owned(self.hex_string()))));
                }
                b'>' => {
                    if self.data.get(self.pos + 1) == Some(&b'>') {
                        self.pos += 2;
                        return Some(Token::DictClose);
                    }
                    self.pos += 1; // stray '>'
                }
                b'[' => {
                    self.pos += 1;
                    return Some(Token::ArrayOpen);
                }
                b']' => {
                    self.pos += 1;
                    return Some(Token::ArrayClose);
                }
                b'/' => {
                    self.pos += 1;
                    return Some(Token::Operand(Operand::Name(self.name())));
                }
                b')' => self.pos += 1, // stray ')'
                b'{' | b'}' => {
                    self.pos += 1;
                    return Some(Token::Keyword(&self.data[start..self.pos]));
                }
                b'0'..=b'9' | b'+' | b'-' | b'.' => {
                    let (num, end) = parse_number(self.data, self.pos);
                    if end > self.pos {
                        self.pos = end;
                        return Some(Token::Operand(Operand::Num(num)));
                    }
                    self.pos += 1;
                }
                _ => {
                    let mut end = self.pos;
                    while let Some(&c) = self.data.get(end) {
                        if is_white(c) || is_delim(c) {
                            break;
                        }
                        end += 1;
                    }
                    if end == self.pos {
                        end += 1; // cannot happen (whitespace/delimiters handled), but advance anyway
                    }
                    self.pos = end;
                    let word = &self.data[start..end];
                    return Some(match word {
                        b"true" => Token::Operand(Operand::Bool(true)),
                        b"false" => Token::Operand(Operand::Bool(false)),
                        b"null" => Token::Operand(Operand::Null),
                        _ => Token::Keyword(word),
                    });
                }
            }
        }
    }

    fn literal_string(&mut self) -> Cow<'a, [u8]> {
        // self.data[self.pos] == b'('
        self.pos += 1;
        let start = self.pos;
        // Fast path: no escapes, balanced parentheses.
        let mut depth = 0usize;
        let mut i = start;
        while let Some(&c) = self.data.get(i) {
            match c {
                b'\\' => break,
                b'(' => depth += 1,
                b')' => {
                    if depth == 0 {
                        self.pos = i + 1;
                        return Cow::Borrowed(&self.data[start..i]);
                    }
                    depth -= 1;
                }
                _ => {}
            }
            i += 1;
        }
        if i >= self.data.len() {
            self.pos = self.data.len();
            return Cow::Borrowed(&self.data[start..]);
        }
        // Slow path with escapes.
        let mut out = Vec::with_capacity(i - start + 16);
        let mut depth = 0usize;
        let mut i = start;
        while let Some(&c) = self.data.get(i) {
            i += 1;
            match c {
                b'\\' => {
                    let Some(&e) = self.data.get(i) else { break };
                    i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'0'..=b'7' => {
                            let mut v: u32 = u32::from(e - b'0');
                            for _ in 0..2 {
                                match self.data.get(i) {
                                    Some(&d @ b'0'..=b'7') => {
                                        v = v * 8 + u32::from(d - b'0');
                                        i += 1;
                                    }
                                    _ => break,
                                }
                            }
                            out.push((v & 0xff) as u8);
                        }
                        b'\r' => {
                            if self.data.get(i) == Some(&b'\n') {
                                i += 1;
                            }
                        }
                        b'\n' => {}
                        other => out.push(other),
                    }
                }
                b'(' => {
                    depth += 1;
                    out.push(c);
                }
                b')' => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                    out.push(c);
                }
                _ => out.push(c),
            }
        }
        self.pos = i;
        Cow::Owned(out)
    }

    fn hex_string(&mut self) -> Vec<u8> {
        self.pos += 1; // '<'
        let mut out = Vec::new();
        let mut hi: Option<u8> = None;
        while let Some(&c) = self.data.get(self.pos) {
            self.pos += 1;
            if c == b'>' {
                break;
            }
            if let Some(v) = hex_val(c) {
                match hi.take() {
                    Some(h) => out.push((h << 4) | v),
                    None => hi = Some(v),
                }
            }
        }
        if let Some(h) = hi {
            out.push(h << 4);
        }
        out
    }

    fn name(&mut self) -> Cow<'a, [u8]> {
        let start = self.pos;
        let mut end = start;
        let mut escaped = false;
        while let Some(&c) = self.data.get(end) {
            if is_white(c) || is_delim(c) {
                break;
            }
            if c == b'#' {
                escaped = true;
            }
            end += 1;
        }
        self.pos = end;
        let raw = &self.data[start..end];
        if !escaped {
            return Cow::Borrowed(raw);
        }
        let mut out = Vec::with_capacity(raw.len());
        let mut i = 0;
        while i < raw.len() {
            let c = raw[i];
            if c == b'#' {
                if let (Some(h), Some(l)) =
                    (raw.get(i + 1).copied().and_then(hex_val), raw.get(i + 2).copied().and_then(hex_val))
                {
                    out.push((h << 4) | l);
                    i += 3;
                    continue;
                }
            }
            out.push(c);
            i += 1;
        }
        Cow::Owned(out)
    }

    /// Read the operands up to the next operator into `ops` (cleared first) and return the
    /// operator, or `None` at the end of the data.
    pub(crate) fn next_op(&mut self, ops: &mut Vec<Operand<'a>>) -> Option<&'a [u8]> {
        ops.clear();
        loop {
            let tok = self.token()?;
            let value = match tok {
                Token::Keyword(k) => return Some(k),
                Token::Operand(o) => o,
                Token::ArrayOpen => self.array(1),
                Token::DictOpen => self.dict(1),
                Token::ArrayClose | Token::DictClose => continue,
            };
            if ops.len() >= MAX_OPERANDS {
                ops.remove(0);
            }
            ops.push(value);
        }
    }

    fn array(&mut self, depth: usize) -> Operand<'a> {
        let mut items = Vec::new();
        while let Some(tok) = self.token() {
            let value = match tok {
                Token::ArrayClose => break,
                Token::Operand(o) => o,
                Token::ArrayOpen => self.nested(depth, true),
                Token::DictOpen => self.nested(depth, false),
                Token::DictClose => continue,
                // An operator inside an array: the array was not closed. Stop here.
                Token::Keyword(k) => {
                    self.pos -= k.len().min(self.pos);
                    break;
                }
            };
            if items.len() < MAX_ELEMENTS {
                items.push(value);
            }
        }
        Operand::Array(items)
    }

    fn dict(&mut self, depth: usize) -> Operand<'a> {
        let mut items = Vec::new();
        let mut key: Option<Cow<'a, [u8]>> = None;
        while let Some(tok) = self.token() {
            let value = match tok {
                Token::DictClose => break,
                Token::Operand(o) => o,
                Token::ArrayOpen => self.nested(depth, true),
                Token::DictOpen => self.nested(depth, false),
                Token::ArrayClose => continue,
                Token::Keyword(k) => {
                    self.pos -= k.len().min(self.pos);
                    break;
                }
            };
            match key.take() {
                None => match value {
                    Operand::Name(n) => key = Some(n),
                    _ => {} // not a key: skip
                },
                Some(k) => {
                    if items.len() < MAX_ELEMENTS {
                        items.push((k, value));
                    }
                }
            }
        }
        Operand::Dict(items)
    }

    fn nested(&mut self, depth: usize, array: bool) -> Operand<'a> {
        if depth >= MAX_NESTING {
            self.skip_nested(array);
            return Operand::Null;
        }
        if array {
            self.array(depth + 1)
        } else {
            self.dict(depth + 1)
        }
    }

    /// Skip to the end of an array or dictionary without keeping anything (iteratively).
    fn skip_nested(&mut self, array: bool) {
        let mut stack = vec![array];
        while let Some(tok) = self.token() {
            match tok {
                Token::ArrayOpen => stack.push(true),
                Token::DictOpen => stack.push(false),
                Token::ArrayClose | Token::DictClose => {
                    stack.pop();
                    if stack.is_empty() {
                        return;
                    }
                }
                Token::Keyword(k) => {
                    self.pos -= k.len().min(self.pos);
                    return;
                }
                Token::Operand(_) => {}
            }
        }
    }

    /// After the `BI` operator: skip the inline image dictionary and data up to and including
    /// `EI`.
    pub(crate) fn skip_inline_image(&mut self) {
        // Dictionary entries up to the ID keyword.
        loop {
            match self.token() {
                None => return,
                Some(Token::Keyword(b"ID")) => break,
                Some(Token::Keyword(b"EI")) => return,
                Some(_) => {}
            }
        }
        // One whitespace byte after ID, then binary data up to whitespace + "EI" + (whitespace|EOF).
        self.pos = self.pos.saturating_add(1);
        let d = self.data;
        let mut i = self.pos;
        while i + 1 < d.len() {
            if d[i] == b'E'
                && d[i + 1] == b'I'
                && (i == 0 || is_white(d[i - 1]))
                && d.get(i + 2).is_none_or(|&c| is_white(c) || is_delim(c))
            {
                self.pos = i + 2;
                return;
            }
            i += 1;
        }
        self.pos = d.len();
    }
}

/// Parse a PDF number starting at `pos`. Returns the value and the end offset (== `pos` when
/// there is no number). Lenient like viewers: `--5`, `5.`, `.5`, `1.2.3` (as 1.2) are accepted.
pub(crate) fn parse_number(data: &[u8], pos: usize) -> (f64, usize) {
    let mut i = pos;
    let mut neg = false;
    while let Some(&c) = data.get(i) {
        match c {
            b'-' => neg = !neg,
            b'+' => {}
            _ => break,
        }
        i += 1;
    }
    let mut int_part: f64 = 0.0;
    let mut digits = 0usize;
    while let Some(&c @ b'0'..=b'9') = data.get(i) {
        int_part = int_part * 10.0 + f64::from(c - b'0');
        digits += 1;
        i += 1;
    }
    let mut value = int_part;
    if data.get(i) == Some(&b'.') {
        i += 1;
        let mut scale = 0.1;
        while let Some(&c @ b'0'..=b'9') = data.get(i) {
            value += f64::from(c - b'0') * scale;
            scale *= 0.1;
            digits += 1;
            i += 1;
        }
    }
    if digits == 0 {
        // A lone sign or dot: consume it so the caller advances, as value 0.
        return (0.0, if i > pos { i } else { pos });
    }
    // Swallow garbage glued to the number (e.g. "1.2.3"), as viewers do.
    while let Some(&c) = data.get(i) {
        if matches!(c, b'0'..=b'9' | b'.') {
            i += 1;
        } else {
            break;
        }
    }
    if !value.is_finite() {
        value = 0.0;
    }
    (if neg { -value } else { value }, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(data: &[u8]) -> Vec<(String, Vec<Operand<'_>>)> {
        let mut lx = Lexer::new(data);
        let mut v = Vec::new();
        let mut stack = Vec::new();
        while let Some(op) = lx.next_op(&mut stack) {
            if op == b"BI" {
                lx.skip_inline_image();
            }
            v.push((String::from_utf8_lossy(op).into_owned(), stack.clone()));
        }
        v
    }

    #[test]
    fn basic_ops() {
        let v = ops(b"BT /F1 12 Tf 1 0 0 1 72.5 -.5 Tm (a\\(b\\)c\\101) Tj [(x) -250 <4142>] TJ ET");
        assert_eq!(v[1].0, "Tf");
        assert_eq!(v[1].1, vec![Operand::Name(Cow::Borrowed(b"F1")), Operand::Num(12.0)]);
        assert_eq!(v[2].1[5], Operand::Num(-0.5));
        assert_eq!(v[3].1, vec![Operand::Str(Cow::Owned(b"a(b)cA".to_vec()))]);
        match &v[4].1[0] {
            Operand::Array(a) => {
                assert_eq!(a.len(), 3);
                assert_eq!(a[2], Operand::Str(Cow::Owned(b"AB".to_vec())));
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn inline_image_is_skipped() {
        let v = ops(b"BI /W 2 /H 2 /BPC 8 ID \x00EI\xffEIx EI\nBT (t) Tj ET");
        let names: Vec<_> = v.iter().map(|o| o.0.as_str()).collect();
        assert_eq!(names, ["BI", "BT", "Tj", "ET"]);
    }

    #[test]
    fn garbage_does_not_hang() {
        let data: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        let _ = ops(&data);
        let deep = "[".repeat(10000) + &"]".repeat(10000) + " Tj";
        let v = ops(deep.as_bytes());
        assert_eq!(v.last().map(|o| o.0.as_str()), Some("Tj"));
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number(b"--5", 0).0, 5.0);
        assert_eq!(parse_number(b"5.", 0), (5.0, 2));
        assert_eq!(parse_number(b"1.2.3", 0).1, 5);
        assert_eq!(parse_number(b"-", 0), (0.0, 1));
    }
}
