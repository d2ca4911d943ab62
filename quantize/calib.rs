//! Calibration text: loading, cleaning, the calibration / held-out split, and token samples.
//!
//! The default text is the Vim tutor in eight languages (quantize/calib/, Vim licence in
//! quantize/calib/VIM-LICENSE.txt), compiled into the binary. Paragraphs are cleaned the
//! way tests/fixtures/make_fixtures.py cleans them: blank-line separated blocks, lines
//! trimmed, lines made only of the tutor's ASCII decorations dropped, lines joined (without
//! a space for Chinese and Japanese), runs of spaces collapsed, paragraphs under 20
//! characters dropped.
//!
//! Every `HELD_OUT_EVERY`-th paragraph of each language is held out of calibration: those
//! paragraphs are the prompts on which quantized models are evaluated.

use anyhow::{bail, Context};
use std::path::Path;

/// One language's (or one file's) paragraphs.
#[derive(Debug, Clone)]
pub struct Text {
    pub lang: String,
    pub paragraphs: Vec<String>,
}

/// The shipped tutor files: (language, contents).
const DEFAULT_FILES: [(&str, &str); 8] = [
    ("en", include_str!("calib/vimtutor.en.txt")),
    ("zh", include_str!("calib/vimtutor.zh.txt")),
    ("ja", include_str!("calib/vimtutor.ja.txt")),
    ("ko", include_str!("calib/vimtutor.ko.txt")),
    ("fr", include_str!("calib/vimtutor.fr.txt")),
    ("de", include_str!("calib/vimtutor.de.txt")),
    ("ru", include_str!("calib/vimtutor.ru.txt")),
    ("es", include_str!("calib/vimtutor.es.txt")),
];

/// One paragraph in this many (per language) is held out for evaluation.
pub const HELD_OUT_EVERY: usize = 8;

/// The default corpus: the Vim tutor in eight languages.
pub fn default_corpus() -> Vec<Text> {
    DEFAULT_FILES.iter().map(|(lang, text)| Text { lang: lang.to_string(), paragraphs: paragraphs(text, lang) }).collect()
}

/// A user's calibration file (UTF-8 text, paragraphs separated by blank lines), or the
/// default corpus when `path` is None.
pub fn load_corpus(path: Option<&Path>) -> anyhow::Result<Vec<Text>> {
    let Some(path) = path else { return Ok(default_corpus()) };
    let text = std::fs::read_to_string(path).with_context(|| format!("reading calibration text {}", path.display()))?;
    let paragraphs = paragraphs(&text, "file");
    if paragraphs.is_empty() {
        bail!("{}: no paragraph of at least 20 characters", path.display());
    }
    Ok(vec![Text { lang: "file".into(), paragraphs }])
}

fn is_decoration(line: &str) -> bool {
    line.chars().all(|c| "=~-*#^<>|".contains(c) || c.is_whitespace())
}

/// The cleaned paragraphs of `text`.
pub fn paragraphs(text: &str, lang: &str) -> Vec<String> {
    let sep = if matches!(lang, "zh" | "ja") { "" } else { " " };
    let text = text.replace("\r\n", "\n");
    let mut out = Vec::new();
    let mut block: Vec<&str> = Vec::new();
    let mut flush = |block: &mut Vec<&str>| {
        let lines: Vec<&str> = block.iter().map(|l| l.trim()).filter(|l| !l.is_empty() && !is_decoration(l)).collect();
        block.clear();
        if lines.is_empty() {
            return;
        }
        let joined = lines.join(sep);
        let mut p = String::with_capacity(joined.len());
        let mut prev_space = false;
        for c in joined.chars() {
            let space = c == ' ' || c == '\t';
            if space && prev_space {
                continue;
            }
            p.push(if space { ' ' } else { c });
            prev_space = space;
        }
        if p.chars().count() >= 20 {
            out.push(p);
        }
    };
    for line in text.split('\n') {
        if line.trim().is_empty() {
            flush(&mut block);
        } else {
            block.push(line);
        }
    }
    flush(&mut block);
    out
}

/// Calibration paragraphs and held-out paragraphs, interleaved across languages
/// (round-robin) so that any prefix of either list mixes all languages.
#[derive(Debug, Clone)]
pub struct Split {
    pub calib: Vec<String>,
    pub held_out: Vec<String>,
}

pub fn split(corpus: &[Text]) -> Split {
    let mut calib_per: Vec<Vec<&String>> = Vec::new();
    let mut held_per: Vec<Vec<&String>> = Vec::new();
    for t in corpus {
        let (mut c, mut h) = (Vec::new(), Vec::new());
        for (i, p) in t.paragraphs.iter().enumerate() {
            if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 {
                h.push(p);
            } else {
                c.push(p);
            }
        }
        calib_per.push(c);
        held_per.push(h);
    }
    Split { calib: round_robin(&calib_per), held_out: round_robin(&held_per) }
}

fn round_robin(lists: &[Vec<&String>]) -> Vec<String> {
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..longest {
        for l in lists {
            if let Some(p) = l.get(i) {
                out.push((*p).clone());
            }
        }
    }
    out
}

/// A Hugging Face tokenizer (the checkpoint's tokenizer.json).
pub struct Tokenizer(tokenizers::Tokenizer);

impl Tokenizer {
    pub fn from_json(json: &str) -> anyhow::Result<Self> {
        tokenizers::Tokenizer::from_bytes(json.as_bytes()).map(Self).map_err(|e| anyhow::anyhow!("tokenizer.json: {e}"))
    }

    /// Token ids of `text`, no special tokens added (BLOOM adds none).
    pub fn encode(&self, text: &str) -> anyhow::Result<Vec<u32>> {
        let enc = self.0.encode(text, false).map_err(|e| anyhow::anyhow!("tokenizing: {e}"))?;
        Ok(enc.get_ids().to_vec())
    }
}

/// `n` calibration samples of exactly `len` tokens: the paragraphs' tokens concatenated
/// (as AutoAWQ does), cut into `len`-token blocks, and `n` blocks taken evenly spread over
/// the stream. Fails when the text does not make `n` blocks.
pub fn calibration_samples(tok: &Tokenizer, paragraphs: &[String], n: usize, len: usize) -> anyhow::Result<Vec<Vec<u32>>> {
    if n == 0 || len == 0 {
        bail!("--calib-samples and --calib-len must be positive");
    }
    let mut stream = Vec::new();
    for p in paragraphs {
        stream.extend(tok.encode(p)?);
    }
    let blocks = stream.len() / len;
    if blocks < n {
        bail!(
            "the calibration text makes {blocks} blocks of {len} tokens ({} tokens), fewer than --calib-samples {n}",
            stream.len()
        );
    }
    Ok((0..n).map(|i| i * blocks / n).map(|b| stream[b * len..(b + 1) * len].to_vec()).collect())
}

/// Evaluation prompts: held-out paragraphs (in their round-robin order), each tokenized
/// and cut to at most `max_len` tokens; paragraphs under 8 tokens are skipped.
pub fn eval_prompts(tok: &Tokenizer, held_out: &[String], n: usize, max_len: usize) -> anyhow::Result<Vec<Vec<u32>>> {
    let mut out = Vec::new();
    for p in held_out {
        if out.len() == n {
            break;
        }
        let mut ids = tok.encode(p)?;
        if ids.len() < 8 {
            continue;
        }
        ids.truncate(max_len);
        out.push(ids);
    }
    if out.is_empty() {
        bail!("no held-out paragraph to evaluate on");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_drops_decorations_and_joins_lines() {
        let text = "=====\n=  T i t l e  =\n=====\n\n   Vim is a very\n   powerful   editor.\n~~~~\n\n  short\n\n  中文的\n  句子很长很长很长很长很长很长很长很长\n";
        let p = paragraphs(text, "en");
        // The title line survives the decoration filter but is under 20 characters.
        assert_eq!(p[0], "Vim is a very powerful editor.");
        assert_eq!(p.len(), 2);
        let zh = paragraphs(text, "zh");
        assert_eq!(zh.last().unwrap(), "中文的句子很长很长很长很长很长很长很长很长");
    }

    #[test]
    fn default_corpus_has_every_language_and_a_held_out_part() {
        let corpus = default_corpus();
        assert_eq!(corpus.len(), 8);
        for t in &corpus {
            assert!(t.paragraphs.len() > 40, "{}: {} paragraphs", t.lang, t.paragraphs.len());
        }
        let s = split(&corpus);
        let total: usize = corpus.iter().map(|t| t.paragraphs.len()).sum();
        assert_eq!(s.calib.len() + s.held_out.len(), total);
        assert!(s.held_out.len() * HELD_OUT_EVERY <= total && s.held_out.len() * HELD_OUT_EVERY > total - 8 * HELD_OUT_EVERY);
        // No held-out paragraph is calibration text.
        for h in &s.held_out {
            let copies: usize = corpus.iter().map(|t| t.paragraphs.iter().filter(|p| *p == h).count()).sum();
            assert!(!s.calib.contains(h) || copies > 1, "{h}");
        }
    }
}
