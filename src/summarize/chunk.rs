//! Splitting a document into chunks that fit the model's prompt, counted in the model's own
//! tokens, cut at paragraph boundaries where possible, else at sentence boundaries, and only
//! for a single overlong sentence inside it (at a character boundary, which for CJK text is as
//! good as a word boundary).

use super::clean::Paragraph;
use super::text::{is_cjk, join_pieces, split_sentences};

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
/// `budget` must be at least 1; a chunk is never empty.
pub fn chunk(paragraphs: &[Paragraph], budget: usize, count: &dyn Fn(&str) -> usize) -> Vec<Chunk> {
    let budget = budget.max(1);
    let mut units = Vec::new();
    for p in paragraphs {
        let tokens = count(&p.text);
        if tokens <= budget {
            units.push(Unit { text: p.text.clone(), tokens, page: p.page, para_start: true });
            continue;
        }
        let mut first = true;
        for r in split_sentences(&p.text) {
            let s = &p.text[r];
            let t = count(s);
            if t <= budget {
                units.push(Unit { text: s.to_string(), tokens: t, page: p.page, para_start: first });
                first = false;
            } else {
                for piece in split_overlong(s, budget, count) {
                    let tokens = count(&piece);
                    units.push(Unit { text: piece, tokens, page: p.page, para_start: first });
                    first = false;
                }
            }
        }
    }

    let mut out: Vec<Chunk> = Vec::new();
    let mut current: Option<Chunk> = None;
    for u in units {
        if let Some(c) = current.as_mut() {
            // The separator costs about one token; the join is recounted when it is close.
            let estimate = c.tokens + u.tokens + 1;
            let mut joined = c.text.clone();
            append_unit(&mut joined, &u);
            let fits = if estimate + 8 <= budget { true } else { count(&joined) <= budget };
            if fits {
                c.tokens = if estimate + 8 <= budget { estimate } else { count(&joined) };
                c.text = joined;
                continue;
            }
            out.push(current.take().expect("current chunk"));
        }
        current = Some(Chunk { text: u.text, tokens: u.tokens, page: u.page });
    }
    out.extend(current);
    // Exact counts for the caller (the estimates above only decide packing).
    for c in &mut out {
        c.tokens = count(&c.text);
    }
    out
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
/// any character for CJK; the largest prefix that fits is found by bisection.
fn split_overlong(sentence: &str, budget: usize, count: &dyn Fn(&str) -> usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = sentence.trim();
    while !rest.is_empty() {
        if count(rest) <= budget {
            out.push(rest.to_string());
            break;
        }
        // Candidate cut points: after whitespace, or between two characters where either is CJK.
        let chars: Vec<(usize, char)> = rest.char_indices().collect();
        let mut cuts: Vec<usize> = Vec::new();
        for w in chars.windows(2) {
            let (a, b) = (w[0].1, w[1].1);
            if a.is_whitespace() || is_cjk(a) || is_cjk(b) {
                cuts.push(w[1].0);
            }
        }
        if cuts.is_empty() {
            // One enormous word: cut at characters.
            cuts = chars.iter().skip(1).map(|(i, _)| *i).collect();
        }
        // Largest cut whose prefix fits (at least the first cut, so progress is certain).
        let (mut lo, mut hi) = (0usize, cuts.len());
        while lo + 1 < hi {
            let mid = (lo + hi) / 2;
            if count(rest[..cuts[mid]].trim_end()) <= budget {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let at = if cuts.is_empty() { rest.len() } else { cuts[lo] };
        out.push(rest[..at].trim_end().to_string());
        rest = rest[at..].trim_start();
    }
    out.retain(|s| !s.is_empty());
    out
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
        let chunks = chunk(&paras, 9, &words);
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, vec!["a b c d\n\ne f g h", "i j k l\n\nm n"]);
        assert_eq!(chunks[1].page, 2);
        assert!(chunks.iter().all(|c| c.tokens <= 9));
    }

    #[test]
    fn an_overlong_paragraph_splits_at_sentences() {
        let paras = vec![para("One two three. Four five six. Seven eight nine.", 1)];
        let chunks = chunk(&paras, 6, &words);
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, vec!["One two three. Four five six.", "Seven eight nine."]);
    }

    #[test]
    fn an_overlong_sentence_splits_at_words_or_cjk_characters() {
        let paras = vec![para("w1 w2 w3 w4 w5 w6 w7", 1)];
        let chunks = chunk(&paras, 3, &words);
        assert_eq!(chunks.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), vec!["w1 w2 w3", "w4 w5 w6", "w7"]);
        let paras = vec![para("机器学习是人工智能的一个分支", 1)];
        let chunks = chunk(&paras, 5, &words);
        assert!(chunks.iter().all(|c| words(&c.text) <= 5));
        assert_eq!(chunks.iter().map(|c| c.text.as_str()).collect::<String>(), "机器学习是人工智能的一个分支");
    }

    #[test]
    fn every_chunk_fits_a_real_tokenizer_like_counter() {
        // A counter that is not additive (joins cost more than the parts).
        let count = |t: &str| t.len() / 3 + 1;
        let text = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(40);
        let paras: Vec<Paragraph> = (0..5).map(|i| para(&text, i + 1)).collect();
        let chunks = chunk(&paras, 200, &count);
        assert!(chunks.len() > 5);
        assert!(chunks.iter().all(|c| count(&c.text) <= 200 && !c.text.is_empty()));
    }
}
