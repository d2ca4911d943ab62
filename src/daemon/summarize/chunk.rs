//! Splitting a document into chunks that fit the model's prompt, counted in the model's own
//! tokens, cut at paragraph boundaries where possible, else at sentence boundaries, and only
//! for a single overlong sentence inside it (at a character boundary, which for CJK text is as
//! good as a word boundary).
//!
//! Linear in the input: every piece of text is counted a bounded number of times, and an
//! overlong sentence is cut inside a window of [`WINDOW_BYTES_PER_TOKEN`] bytes per token of
//! the budget, never by counting the rest of the sentence again.

use super::text::{is_cjk, join_pieces, split_sentences};
use super::{Cancel, SummaryError};

/// A paragraph of cleaned text and the page it starts on (1-based): what the chunker packs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paragraph {
    pub text: String,
    pub page: u32,
}

/// An overlong sentence is cut within its first `budget * WINDOW_BYTES_PER_TOKEN` bytes: a
/// token covers at least one byte, so a budget's worth of bytes always fits, and tokens of
/// more than this many bytes are rare enough that a shorter piece than possible costs little.
const WINDOW_BYTES_PER_TOKEN: usize = 8;

/// A piece of the document that fits one prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub text: String,
    /// Tokens of `text` as counted by the caller's counter.
    pub tokens: usize,
    /// Page of its first paragraph.
    pub page: u32,
}

/// A unit of packing: a paragraph, a sentence of an overlong paragraph, or a piece of an
/// overlong sentence.
struct Unit {
    text: String,
    tokens: usize,
    page: u32,
    /// Starts a paragraph (joined with a blank line) rather than continuing one.
    para_start: bool,
}

/// Splits `paragraphs` into chunks of at most `budget` tokens according to `count`.
/// `budget` must be at least 1; a chunk is never empty. Stops with `Cancelled` once `cancel`
/// is set.
pub fn chunk(
    paragraphs: &[Paragraph],
    budget: usize,
    count: &dyn Fn(&str) -> usize,
    cancel: &Cancel,
) -> Result<Vec<Chunk>, SummaryError> {
    let budget = budget.max(1);
    let mut units = Vec::new();
    for p in paragraphs {
        cancel.check()?;
        let tokens = if p.text.len() > budget * WINDOW_BYTES_PER_TOKEN * 4 { usize::MAX } else { count(&p.text) };
        if tokens <= budget {
            units.push(Unit { text: p.text.clone(), tokens, page: p.page, para_start: true });
            continue;
        }
        let mut first = true;
        for r in split_sentences(&p.text) {
            cancel.check()?;
            let s = &p.text[r];
            let t = if s.len() > budget * WINDOW_BYTES_PER_TOKEN { usize::MAX } else { count(s) };
            if t <= budget {
                units.push(Unit { text: s.to_string(), tokens: t, page: p.page, para_start: first });
                first = false;
            } else {
                for piece in split_overlong(s, budget, count, cancel)? {
                    let tokens = count(&piece);
                    units.push(Unit { text: piece, tokens, page: p.page, para_start: first });
                    first = false;
                }
            }
        }
    }

    let mut out: Vec<Chunk> = Vec::new();
    let mut current: Option<Chunk> = None;
    for (i, u) in units.into_iter().enumerate() {
        if i % 1024 == 0 {
            cancel.check()?;
        }
        if let Some(c) = current.as_mut() {
            // The separator costs about one token; the join is recounted only when it is
            // close to the budget (each recount adds at least two tokens to the estimate, so
            // a chunk is recounted a few times at most).
            let estimate = c.tokens + u.tokens + 1;
            if estimate + 8 <= budget {
                append_unit(&mut c.text, &u);
                c.tokens = estimate;
                continue;
            }
            if estimate <= budget + 8 {
                let mut joined = c.text.clone();
                append_unit(&mut joined, &u);
                let t = count(&joined);
                if t <= budget {
                    c.text = joined;
                    c.tokens = t;
                    continue;
                }
            }
            out.push(current.take().expect("current chunk"));
        }
        current = Some(Chunk { text: u.text, tokens: u.tokens, page: u.page });
    }
    out.extend(current);
    // Exact counts for the caller (the estimates above only decide packing).
    for c in &mut out {
        cancel.check()?;
        c.tokens = count(&c.text);
    }
    Ok(out)
}

fn append_unit(text: &mut String, u: &Unit) {
    if u.para_start {
        text.push_str("\n\n");
        text.push_str(&u.text);
    } else {
        join_pieces(text, &u.text);
    }
}

/// Cuts one sentence longer than `budget` into pieces that fit: at spaces for Latin text, at
/// any character for CJK, at any character inside a word longer than a piece. Each piece is
/// the largest prefix of a bounded window that fits, found by bisection over the window's cut
/// points, so the whole sentence costs O(n log w) token counts of window-sized text.
fn split_overlong(sentence: &str, budget: usize, count: &dyn Fn(&str) -> usize, cancel: &Cancel) -> Result<Vec<String>, SummaryError> {
    let window = budget.saturating_mul(WINDOW_BYTES_PER_TOKEN).max(16);
    let mut out = Vec::new();
    let mut rest = sentence.trim();
    while !rest.is_empty() {
        cancel.check()?;
        if rest.len() <= window && count(rest) <= budget {
            out.push(rest.to_string());
            break;
        }
        let end = floor_char_boundary(rest, window.min(rest.len()));
        let head = &rest[..end];
        // Cut points: after whitespace, or between two characters where either is CJK.
        // The window's end is a word boundary only where the sentence ends.
        let mut word_cuts: Vec<usize> = cut_points(head, |a, b| a.is_whitespace() || is_cjk(a) || is_cjk(b));
        if end == rest.len() {
            word_cuts.push(end);
        }
        let fits = |at: usize| count(rest[..at].trim_end()) <= budget;
        let at = match largest_fitting(&word_cuts, &fits) {
            Some(at) => at,
            // No word boundary early enough: cut inside the word.
            None => {
                let mut char_cuts = cut_points(head, |_, _| true);
                char_cuts.push(end);
                largest_fitting(&char_cuts, &fits).unwrap_or_else(|| first_char_len(rest))
            }
        };
        let piece = rest[..at].trim_end();
        if !piece.is_empty() {
            out.push(piece.to_string());
        }
        rest = rest[at..].trim_start();
    }
    Ok(out)
}

/// Byte offsets of `text` (inside it: neither 0 nor its end) between two characters `a`, `b`
/// for which `cut(a, b)` holds.
fn cut_points(text: &str, cut: impl Fn(char, char) -> bool) -> Vec<usize> {
    let mut out = Vec::new();
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        if let Some(p) = prev {
            if cut(p, c) {
                out.push(i);
            }
        }
        prev = Some(c);
    }
    out
}

/// The largest of `cuts` (ascending) for which `fits` holds, assuming it holds for a prefix
/// of them; `None` when not even the first fits.
fn largest_fitting(cuts: &[usize], fits: &dyn Fn(usize) -> bool) -> Option<usize> {
    if cuts.is_empty() || !fits(cuts[0]) {
        return None;
    }
    let (mut lo, mut hi) = (0usize, cuts.len());
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if fits(cuts[mid]) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(cuts[lo])
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    if i == 0 {
        first_char_len(s)
    } else {
        i
    }
}

fn first_char_len(s: &str) -> usize {
    s.chars().next().map_or(s.len(), char::len_utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per whitespace-separated word, and per CJK character.
    fn words(text: &str) -> usize {
        text.split_whitespace().map(|w| if w.chars().any(is_cjk) { w.chars().count() } else { 1 }).sum()
    }

    fn para(text: &str, page: u32) -> Paragraph {
        Paragraph { text: text.into(), page }
    }

    #[test]
    fn paragraphs_pack_until_the_budget() {
        let paras = vec![para("a b c d", 1), para("e f g h", 1), para("i j k l", 2), para("m n", 2)];
        let chunks = chunk(&paras, 9, &words, &Cancel::new()).unwrap();
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, vec!["a b c d\n\ne f g h", "i j k l\n\nm n"]);
        assert_eq!(chunks[1].page, 2);
        assert!(chunks.iter().all(|c| c.tokens <= 9));
    }

    #[test]
    fn an_overlong_paragraph_splits_at_sentences() {
        let paras = vec![para("One two three. Four five six. Seven eight nine.", 1)];
        let chunks = chunk(&paras, 6, &words, &Cancel::new()).unwrap();
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, vec!["One two three. Four five six.", "Seven eight nine."]);
    }

    #[test]
    fn an_overlong_sentence_splits_at_words_or_cjk_characters() {
        let paras = vec![para("w1 w2 w3 w4 w5 w6 w7", 1)];
        let chunks = chunk(&paras, 3, &words, &Cancel::new()).unwrap();
        assert_eq!(chunks.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), vec!["w1 w2 w3", "w4 w5 w6", "w7"]);
        let paras = vec![para("机器学习是人工智能的一个分支", 1)];
        let chunks = chunk(&paras, 5, &words, &Cancel::new()).unwrap();
        assert!(chunks.iter().all(|c| words(&c.text) <= 5));
        assert_eq!(chunks.iter().map(|c| c.text.as_str()).collect::<String>(), "机器学习是人工智能的一个分支");
    }

    #[test]
    fn every_chunk_fits_a_real_tokenizer_like_counter() {
        // A counter that is not additive (joins cost more than the parts).
        let count = |t: &str| t.len() / 3 + 1;
        let text = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(40);
        let paras: Vec<Paragraph> = (0..5).map(|i| para(&text, i + 1)).collect();
        let chunks = chunk(&paras, 200, &count, &Cancel::new()).unwrap();
        assert!(chunks.len() > 5);
        assert!(chunks.iter().all(|c| count(&c.text) <= 200 && !c.text.is_empty()));
    }

    /// Bytes handed to the counter, for the linearity checks: a bounded multiple of the
    /// input whatever its shape (one huge word, CJK without punctuation, tiny sentences).
    fn counted_bytes(text: &str, budget: usize) -> (usize, Vec<Chunk>) {
        let seen = std::cell::Cell::new(0usize);
        // A byte-level tokenizer's lower bound: about one token per four bytes, at least one.
        let count = |t: &str| {
            seen.set(seen.get() + t.len());
            t.len().div_ceil(4).max(1)
        };
        let chunks = chunk(&[para(text, 1)], budget, &count, &Cancel::new()).unwrap();
        (seen.get(), chunks)
    }

    #[test]
    fn work_is_linear_in_the_input() {
        for (name, unit) in [("one word", "x"), ("cjk", "汉"), ("tiny sentences", "a. "), ("words", "word ")] {
            for n in [20_000usize, 80_000, 320_000] {
                let text = unit.repeat(n);
                let (bytes, chunks) = counted_bytes(&text, 512);
                assert!(bytes <= 40 * text.len(), "{name} x{n}: {bytes} bytes counted for {} of input", text.len());
                assert!(chunks.iter().all(|c| c.tokens <= 512), "{name} x{n}");
                let joined: usize = chunks.iter().map(|c| c.text.chars().filter(|c| !c.is_whitespace()).count()).sum();
                assert_eq!(joined, text.chars().filter(|c| !c.is_whitespace()).count(), "{name} x{n}: text lost");
            }
        }
    }

    #[test]
    fn cancel_stops_chunking() {
        let c = Cancel::new();
        c.cancel();
        assert_eq!(chunk(&[para("a b c", 1)], 10, &words, &c).unwrap_err(), SummaryError::Cancelled);
    }
}
