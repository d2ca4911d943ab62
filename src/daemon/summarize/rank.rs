//! The extractive summarizer: the document's most representative sentences, in document
//! order, within a word budget. It needs no model, so it is the fallback when none is
//! configured or the model fails, and the method of `seqgpt summarize --local` on a fresh
//! machine; with the SeqGPT template it also orders and cuts the sentences the model quoted.
//!
//! Ranking, deterministic for a given input (docs/SUMMARIZE.md):
//! 1. Candidates are the sentences of prose blocks and list items ([`super::structure`]) that
//!    read as whole sentences: 6 to 80 words (10 to 200 CJK characters), mostly plain words,
//!    ending like a sentence, not a lead-in to a list, code or figure ("as follows:", "is shown
//!    below."), not the tail of a sentence begun before the text, and not in a change log,
//!    a version history, a licence or installation notes (unless the document is mostly that).
//! 2. Each is a TF-IDF vector (sublinear term frequency, smoothed IDF over the document's
//!    sentences), L2-normalized; its centrality is the cosine with the centroid of the prose.
//! 3. The learned [`super::scorer`] turns what the document knows of each sentence (its
//!    centrality, the kind and depth of its section, its place in the document, its section
//!    and its paragraph, its share of the title's and the heading's terms, the phrases with
//!    which documents announce their point, a definitional form "X is a ...", its length and
//!    share of plain words, ...) into the probability that it belongs in the summary.
//! 4. Selection is greedy, by score per square root of the length, with maximal marginal
//!    relevance (a candidate loses a share of its score to its similarity with what is
//!    chosen, and near-duplicates are skipped) up to the word budget. A sentence that opens by pointing back ("This", "However", "Both", ...) is
//!    taken only after the sentence before it. When that leaves more than 15% of the budget
//!    unused, the best-scoring set of the top candidates that fills it is taken instead (a
//!    small knapsack).
//! 5. A summary of a document with prose is never empty: when no whole sentence fits the
//!    budget, the best one is cut at a word boundary and marked with "…".

use super::document::{Document, Section, SectionKind};
use super::Anchor;
use super::document::BlockKind;
use super::keyterms::{self, TermFeatures, Usage};
use super::scorer::FeatureVec;
use super::structure::prose_share;
use super::text::{balanced, double_quotes_paired, holds_sentences, is_cjk, is_cjk_letter, split_sentences, terms, PARENTHESES};
use super::{Cancel, Style, SummaryError};
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// Words of `text`: whitespace-separated tokens, except that in a token with CJK letters each
/// letter counts as a word, and so does each run of other letters or digits in it.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().map(token_words).sum()
}

fn token_words(tok: &str) -> usize {
    let (mut cjk, mut runs, mut in_run) = (0usize, 0usize, false);
    for c in tok.chars() {
        if is_cjk_letter(c) {
            cjk += 1;
            in_run = false;
        } else if c.is_alphanumeric() {
            if !in_run {
                runs += 1;
            }
            in_run = true;
        } else {
            in_run = false;
        }
    }
    if cjk == 0 {
        1
    } else {
        cjk + runs
    }
}

/// A sentence of the document.
#[derive(Debug, Clone, PartialEq)]
pub struct Sentence {
    /// Its block, and its byte range in the block's text.
    pub block: usize,
    pub range: Range<usize>,
    /// The sentence as a summary shows it.
    pub text: String,
    pub words: usize,
    /// It reads as a sentence a summary may quote (see the module notes).
    pub candidate: bool,
    /// It opens by pointing at something before it ([`dangling_start`]).
    pub dangling: bool,
    /// The list items it runs on into, each as (block, byte range in the block's text): a
    /// lead-in and the fragments it introduces read as one sentence ([`join_lists`]).
    pub items: Vec<(usize, Range<usize>)>,
}

/// Sparse TF-IDF vector: (term id, weight), sorted by term id, L2-normalized.
type SparseVec = Vec<(u32, f64)>;

/// A ranked document: its sentences, their vectors and scores.
pub struct Ranker {
    pub sentences: Vec<Sentence>,
    vectors: Vec<SparseVec>,
    /// Each sentence's features ([`super::scorer::NAMES`]).
    pub features: Vec<FeatureVec>,
    /// Each sentence's score (0 for one that is not a candidate).
    pub scores: Vec<f64>,
    /// The document's terms in first-seen order, with their key-term features
    /// ([`super::keyterms::NAMES`]), for `--explain` and the script that fits the model.
    pub terms: Vec<(String, TermFeatures)>,
}

/// The sentences a summary is made of ([`Ranker::choose`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Indices of the sentences, in document order.
    pub chosen: Vec<usize>,
    /// No whole sentence fit the budget: the one chosen is cut at a word boundary ("…").
    pub cut: bool,
    /// The document has no whole sentence (a slide of phrases, a list without sentence
    /// ends): the summary quotes pieces of text as they stand.
    pub phrases: bool,
}

/// Phrases with which documents say what they are about (matched as whole words).
const CUES: &[&str] = &[
    "in this paper", "in this article", "in this note", "in this report", "in this work", "in this thesis",
    "in this chapter", "in this document", "in this manual", "in this guide", "in this tutorial", "this paper",
    "this article", "this report", "this document", "this manual", "this guide", "this note", "this work",
    "this package", "this library", "this program", "this tool", "this software", "we present", "we propose",
    "we describe", "we introduce", "we show", "we demonstrate", "we develop", "we provide", "we discuss",
    "we illustrate", "we implement", "we extend", "we review", "we summarize", "we conclude", "our approach",
    "our method", "our results", "the main contribution", "in summary", "to summarize", "in conclusion",
    "is designed to", "is intended", "aims to", "the purpose of",
];

/// CJK phrases with which documents say what they are about.
const CJK_CUES: &[&str] = &["本文", "我们提出", "本研究", "本论文", "本项目", "本章", "旨在", "主要内容"];

/// Whether `text` uses a [`CJK_CUES`] phrase as a word: at the start of a clause (after the
/// text's start, punctuation or a space) or after a preposition ("在本文中"), not inside
/// another word ("文本文件" holds 本文).
fn cjk_cue(text: &str) -> bool {
    CJK_CUES.iter().any(|cue| {
        text.match_indices(cue).any(|(i, _)| text[..i].chars().next_back().is_none_or(|p| !is_cjk_letter(p) || matches!(p, '在' | '于' | '的' | '是' | '从')))
    })
}

/// Words with which documents describe what they are and offer (the vocabulary of
/// abstracts), matched as whole words with their inflections: each one a sentence uses
/// counts, up to three.
const ABSTRACT_WORDS: &[&str] = &[
    "provide", "implement", "describe", "illustrate", "introduce", "present", "propose", "develop", "allow", "enable",
    "support", "offer", "include", "extend", "available", "application", "apply", "example", "general", "framework",
    "approach", "method", "software", "package", "library", "tool", "toolkit", "paper", "article", "overview",
    "analysis", "efficient", "flexible", "new", "novel", "several", "variety", "wide", "range", "various", "base",
    "user", "document", "program", "system", "interface", "feature", "simple", "easy", "allows",
];

/// Endings a word of [`ABSTRACT_WORDS`] may take.
const INFLECTIONS: &[&str] = &["", "s", "es", "d", "ed", "ing", "ly", "ation", "ations", "ment", "ments", "er", "ers", "ied", "ies"];

fn abstract_word(word: &str) -> bool {
    ABSTRACT_WORDS.iter().any(|stem| {
        word.strip_prefix(stem).is_some_and(|rest| INFLECTIONS.contains(&rest))
            || (stem.ends_with('e') || stem.ends_with('y')) && word.strip_prefix(&stem[..stem.len() - 1]).is_some_and(|rest| INFLECTIONS.contains(&rest) && !rest.is_empty())
    })
}

/// Words that open a sentence by pointing at something said before it: such a sentence does
/// not stand alone in a summary. "This" and "These" before a word that names the document
/// itself ("This package provides ...") point at nothing missing.
const DANGLING: &[&str] = &[
    "this", "these", "that", "those", "it", "its", "they", "their", "them", "both", "such", "however", "moreover",
    "furthermore", "also", "thus", "hence", "therefore", "consequently", "additionally", "similarly", "likewise",
    "nevertheless", "nonetheless", "otherwise", "instead", "then", "there", "here", "finally", "second", "secondly",
    "third", "thirdly", "next", "another", "besides", "but", "and", "or", "so", "yet", "still", "accordingly",
    "conversely", "alternatively", "meanwhile", "further", "again", "latter", "former", "above", "he", "she",
];

/// Openings of several words that point back ("In a second condition", "The latter", "In
/// addition", "On the other hand", "For example": an example of what was said before),
/// lowercase.
const DANGLING_PHRASES: &[&str] = &[
    "in a second", "in a third", "in the second", "in the third", "the latter", "the former", "in addition",
    "on the other hand", "in contrast", "in this case", "in that case", "as a result", "for this reason",
    "for these reasons", "to this end", "in particular", "as such", "of these", "each of these", "all of these",
    "one of these", "some of these", "in the same way", "at the same time", "by contrast", "even so", "in turn",
    "the same", "the other", "the rest", "for example", "for instance", "in other words", "that is",
];

/// Words after "This"/"These" that name the document itself, not something before.
const SELF_NOUNS: &[&str] = &[
    "paper", "article", "document", "package", "packages", "manual", "guide", "thesis", "report", "chapter", "note",
    "notes", "tutorial", "vignette", "work", "library", "software", "program", "tool", "module", "book", "class",
    "bundle", "system", "project", "text", "introduction", "section",
];

/// CJK openings that point back.
const CJK_DANGLING: &[&str] = &["这", "那", "它", "其", "该", "此", "但", "然而", "此外", "因此", "所以", "另外", "而且", "并且", "同时", "因而", "于是", "不过", "否则"];

/// CJK phrases that, anywhere in a sentence, compare it with what was said before ("Debian
/// 系统也不例外。").
const CJK_BACK_PHRASES: &[&str] = &["也不例外", "也是如此", "同样如此", "亦然", "也一样", "上述", "前述", "如上所述"];

/// Whether a sentence opens by pointing at something said before it ([`DANGLING`]).
pub fn dangling_start(text: &str) -> bool {
    let t = text.trim_start_matches(|c: char| !c.is_alphanumeric() && !is_cjk_letter(c));
    if t.starts_with(|c: char| is_cjk_letter(c)) {
        return (CJK_DANGLING.iter().any(|p| t.starts_with(p)) && !t.starts_with("其他") && !t.starts_with("其中"))
            || CJK_BACK_PHRASES.iter().any(|p| t.contains(p));
    }
    let lower = t.to_lowercase();
    let mut words = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty());
    let Some(first) = words.next() else { return false };
    if DANGLING_PHRASES.iter().any(|p| lower.starts_with(p) && lower[p.len()..].starts_with(|c: char| !c.is_alphanumeric())) {
        return true;
    }
    if !DANGLING.contains(&first) {
        return false;
    }
    if matches!(first, "this" | "these") {
        return !words.next().is_some_and(|w| SELF_NOUNS.contains(&w));
    }
    true
}

/// Section titles of what does not stand for a document's content: change logs, version
/// histories, licences, installation notes (lowercase, matched as whole words).
const ASIDE_TITLES: &[&str] = &[
    "change", "changes", "changelog", "change log", "history", "version history", "revision history", "news",
    "release notes", "what's new", "whats new", "licence", "license", "licensing", "copying", "copyright",
    "installation", "installing", "install", "download", "downloading", "obtaining", "acknowledgment", "credits",
    "versions", "bugs", "known bugs", "todo", "to do",
];

/// Whether a section titled `title` is an aside ([`ASIDE_TITLES`]).
pub fn aside_section(title: &str) -> bool {
    let t = super::structure::strip_numbering(title).to_lowercase();
    let words = title_words(&t);
    if words.is_empty() || words.len() > 6 {
        return false;
    }
    ASIDE_TITLES.iter().any(|a| {
        let aw: Vec<&str> = a.split(' ').collect();
        words.windows(aw.len()).any(|w| w == aw.as_slice())
    }) || upgrade_notes(&words) || ["更新", "版本历史", "修订记录", "许可", "版权", "安装", "变更"].iter().any(|c| t.contains(c))
}

/// Which of `sections` are asides: by its own title ([`aside_section`]), or as part of one,
/// as a version's entry in a version history ("22 Upgrading checklist" > "22.19 Version
/// 4.0.0" > "perl"). Part of it means a numbering that extends the aside's ("22.19" under
/// "22"), or no numbering at a deeper level before the next section at the aside's level or
/// above.
fn aside_sections(sections: &[Section]) -> Vec<bool> {
    let numbering = |title: &str| -> String {
        let t = title.trim();
        t[..t.len() - super::structure::strip_numbering(t).len()].trim().trim_end_matches(['.', ':', ')']).to_string()
    };
    let mut out = Vec::with_capacity(sections.len());
    // The innermost aside the sections now read are part of: its level and numbering.
    let mut open: Option<(u8, String)> = None;
    for sec in sections {
        let number = numbering(&sec.title);
        let inside = open.as_ref().is_some_and(|(level, of)| {
            if number.is_empty() {
                sec.level > *level
            } else {
                !of.is_empty() && number.strip_prefix(of.as_str()).is_some_and(|rest| rest.starts_with('.'))
            }
        });
        let own = aside_section(&sec.title);
        if own && !inside && history_section(&sec.title) {
            open = Some((sec.level, number));
        } else if !inside {
            open = None;
        }
        out.push(own || inside);
    }
    out
}

/// A lowercased title's words, apostrophes kept ("what's new").
fn title_words(lower: &str) -> Vec<&str> {
    lower.split(|c: char| !c.is_alphanumeric() && c != '\'').filter(|w| !w.is_empty()).collect()
}

/// Whether a title's words open with "upgrading" ("Upgrading checklist", "Upgrading from
/// 1.x"): notes on moving between versions. "Database upgrading" is a topic, no such note.
fn upgrade_notes(words: &[&str]) -> bool {
    words.first().is_some_and(|w| *w == "upgrading")
}

/// Whether a section titled `title` is a version history, whose subsections are its
/// versions' entries ("Upgrading checklist", "Change history", "News").
fn history_section(title: &str) -> bool {
    let t = super::structure::strip_numbering(title).to_lowercase();
    let words = title_words(&t);
    upgrade_notes(&words)
        || words.iter().any(|w| matches!(*w, "history" | "news" | "changelog" | "versions" | "release"))
        || words.windows(2).any(|w| w == ["change", "log"] || w == ["what's", "new"] || w == ["whats", "new"])
}

/// Whether a sentence reads like a change-log or licence line by itself ("Fixed a bug in ...",
/// "version 2.1", "under the terms of the GNU General Public License"), sends the reader
/// elsewhere ([`cross_reference`]) or stands under a label that sets it apart ([`admonition`]).
fn aside_sentence(lower: &str) -> bool {
    let first = lower.split_whitespace().next().unwrap_or("");
    let changelog = matches!(first, "fixed" | "added" | "removed" | "changed" | "new:" | "fix:" | "bugfix" | "bugfix:" | "deprecated")
        || lower.contains("bug fix");
    let licence = [
        "gnu general public license", "lppl", "latex project public license", "without any warranty", "permission is granted",
        "all rights reserved", "public licen", "license notice", "this license", "invariant section", "cover texts", "under the terms of",
        "free documentation licen", "copy of the licen",
    ]
        .iter()
        .any(|p| lower.contains(p));
    changelog || licence || cjk_change_line(lower) || cross_reference(lower) || admonition(lower)
}

/// A sentence under a label that sets it aside from the text around it ("Note: don't use this
/// option in your final submission.", "Important: ...", "Example: using multiple variables"):
/// a caution or an example's title, which never stands for the content.
fn admonition(lower: &str) -> bool {
    lower.split_once([':', '：']).is_some_and(|(label, _)| {
        let label = label.trim().trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ' ');
        matches!(label, "note" | "notes" | "remark" | "hint" | "tip" | "warning" | "caution" | "important" | "attention" | "example" | "examples" | "注意" | "提示" | "警告" | "注" | "例")
    })
}

/// A sentence whose point is where to read on ("See Section 5.3.2 for the commands provided.",
/// "For more details see the package help.", "Refer to the lineno documentation."): it
/// points at what the summary does not contain, so it never stands for the content.
fn cross_reference(lower: &str) -> bool {
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).take(6).collect();
    match words.first() {
        Some(&"see") => true,
        Some(&"refer") => words.get(1) == Some(&"to"),
        Some(&"for") => words[1..].contains(&"see"),
        _ => false,
    }
}

/// A CJK change-log entry: a short line that opens with what was done ("添加 dh_pysupport
/// 命令的支持。", "修复了……"), no subject before it.
fn cjk_change_line(text: &str) -> bool {
    text.chars().count() <= 40 && ["添加", "新增", "增加了", "修复", "修正", "移除", "删除了", "弃用", "改进了"].iter().any(|v| text.starts_with(v))
}

/// Whether a sentence defines something ("NEATO is a utility ...", "The package provides ..."):
/// a short subject, then a defining verb, within the first words.
fn definition(lower: &str) -> bool {
    let words: Vec<&str> = lower.split_whitespace().take(9).collect();
    words.iter().enumerate().skip(1).any(|(i, w)| {
        let next = words.get(i + 1).copied().unwrap_or("");
        (matches!(*w, "is" | "are") && matches!(next, "a" | "an" | "the" | "designed" | "intended" | "used"))
            || matches!(*w, "provides" | "implements" | "offers" | "defines" | "describes" | "presents" | "introduces" | "contains" | "allows" | "enables" | "supports" | "computes" | "draws" | "generates" | "converts")
    }) || lower.contains("是一个") || lower.contains("是一种") || lower.contains("提供了")
}

/// Maximal marginal relevance: the share of a candidate's score lost per unit of similarity
/// to the chosen sentences, and the similarity above which it is a near-duplicate, skipped.
const REDUNDANCY: f64 = 0.25;
const DUPLICATE: f64 = 0.3;
/// The greedy choice takes the sentence of the highest value per word^DENSITY: the words are
/// the summary's budget, so a shorter sentence that says nearly as much leaves room for
/// another (0 would take the highest value whatever its length, 1 the value per word; 0.5
/// was best on the training documents, see docs/SUMMARIZE.md).
const DENSITY: f64 = 0.5;

impl Ranker {
    /// Splits the prose of `doc` into sentences and ranks them; `Cancelled` once `cancel` is
    /// set (checked every few sentences).
    pub fn new(doc: &Document, cancel: &Cancel) -> Result<Self, SummaryError> {
        let mut sentences = Vec::new();
        for (b, block) in summarizable(doc) {
            // A list item's marker ("•", "1.", "(a)") is not part of its sentence.
            let marker = if block.kind == BlockKind::ListItem { list_marker_len(&block.text) } else { 0 };
            for r in split_sentences(&block.text) {
                let r = r.start.max(marker)..r.end;
                if r.start >= r.end {
                    continue;
                }
                let source = block.text[r.clone()].trim_start();
                let r = r.end - source.len()..r.end;
                let text = super::compress::summary_text(source).into_owned();
                let words = word_count(&text);
                let candidate = readable(&text, words, lower_ok(doc, b, r.start));
                let dangling = dangling_start(&text);
                sentences.push(Sentence { block: b, range: r, text, words, candidate, dangling, items: Vec::new() });
            }
        }
        let mut sentences = join_lists(doc, sentences);
        cancel.check()?;
        // Term ids in first-seen order keep every sum in a fixed order (determinism).
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut counts: Vec<Vec<(u32, u32)>> = Vec::with_capacity(sentences.len());
        for (n, s) in sentences.iter().enumerate() {
            if n % 1024 == 0 {
                cancel.check()?;
            }
            counts.push(term_counts(&s.text, &mut ids));
        }
        let vocab = ids.len();
        let total = sentences.len() as f64;
        let mut df = vec![0u32; vocab];
        for tf in &counts {
            for (id, _) in tf {
                df[*id as usize] += 1;
            }
        }
        // A sentence may begin in lowercase with a name the document uses (a command), not
        // with a common word (the tail of a sentence cut off before the text: "starts a new
        // page."). A name is used in more than one sentence, and it is either no word that
        // documents in general use (the abstract vocabulary) or the document shows it as a
        // command or in its title ("dot draws ...", with `dot -Tps` in a listing).
        let mut shown: Option<HashSet<String>> = None;
        for s in sentences.iter_mut().filter(|s| s.candidate && s.text.starts_with(char::is_lowercase)) {
            let first = s.text.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
            let Some(term) = terms(first).into_iter().next() else {
                s.candidate = false;
                continue;
            };
            let repeated = ids.get(&term).is_some_and(|&id| df[id as usize] >= 2);
            s.candidate = repeated
                && (!super::scorer::vocabulary().contains_key(&term)
                    || shown.get_or_insert_with(|| shown_names(doc)).contains(&first.to_lowercase()));
        }
        let idf: Vec<f64> = df.iter().map(|&d| ((total + 1.0) / (f64::from(d) + 1.0)).ln() + 1.0).collect();
        let vectorize = |tf: &[(u32, u32)]| -> SparseVec {
            let mut v: SparseVec = tf.iter().map(|&(id, c)| (id, (1.0 + f64::from(c).ln()) * idf[id as usize])).collect();
            let norm = v.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|(_, w)| *w /= norm);
            }
            v
        };
        let vectors: Vec<SparseVec> = counts.iter().map(|tf| vectorize(tf)).collect();
        cancel.check()?;
        let mut centroid = vec![0.0f64; vocab];
        for v in &vectors {
            for &(id, w) in v {
                centroid[id as usize] += w;
            }
        }
        let cnorm = centroid.iter().map(|w| w * w).sum::<f64>().sqrt();
        if cnorm > 0.0 {
            centroid.iter_mut().for_each(|w| *w /= cnorm);
        }
        let title_terms: Vec<u32> = {
            let mut t: Vec<u32> = terms(&doc.title).into_iter().filter_map(|t| ids.get(&t).copied()).collect();
            t.sort_unstable();
            t.dedup();
            t
        };
        // Place of each prose block in its section (0 = the section's first prose block), and
        // of each sentence in its block.
        let mut block_rank: HashMap<usize, usize> = HashMap::new();
        let mut seen_in_section: HashMap<usize, usize> = HashMap::new();
        for (b, block) in doc.prose() {
            let k = seen_in_section.entry(block.section).or_default();
            block_rank.insert(b, *k);
            *k += 1;
        }
        // Asides (change logs, licences, installation notes) are left out, unless most of the
        // document's prose is in them (then the document is one).
        let aside = aside_sections(&doc.sections);
        let aside_words: usize = sentences.iter().filter(|s| aside[doc.blocks[s.block].section]).map(|s| s.words).sum();
        let all_words: usize = sentences.iter().map(|s| s.words).sum();
        let drop_asides = aside_words * 2 < all_words;
        // Sentences of each section, and the terms of its heading.
        let mut in_section: HashMap<usize, usize> = HashMap::new();
        for s in &sentences {
            *in_section.entry(doc.blocks[s.block].section).or_default() += 1;
        }
        let heading_terms: Vec<Vec<u32>> = doc
            .sections
            .iter()
            .map(|sec| {
                let mut t: Vec<u32> = terms(super::structure::strip_numbering(&sec.title)).into_iter().filter_map(|t| ids.get(&t).copied()).collect();
                t.sort_unstable();
                t.dedup();
                t
            })
            .collect();
        let vocabulary = super::scorer::vocabulary();
        let key_terms = key_terms(&sentences, &counts, &ids, &title_terms, &heading_terms, vocabulary);
        let share_of = |v: &SparseVec, of: &[u32]| -> f64 {
            if of.is_empty() {
                0.0
            } else {
                v.iter().filter(|(id, _)| of.binary_search(id).is_ok()).count() as f64 / of.len() as f64
            }
        };
        let cosines: Vec<f64> =
            vectors.iter().map(|v| v.iter().map(|&(id, x)| x * centroid[id as usize]).sum::<f64>().max(0.0)).collect();
        // The document's opening: the centroid of its first candidate sentences.
        let mut lead = vec![0.0f64; vocab];
        for (v, _) in vectors.iter().zip(&sentences).filter(|(_, s)| s.candidate).take(5) {
            for &(id, w) in v {
                lead[id as usize] += w;
            }
        }
        let lnorm = lead.iter().map(|w| w * w).sum::<f64>().sqrt();
        if lnorm > 0.0 {
            lead.iter_mut().for_each(|w| *w /= lnorm);
        }
        let max_cos = cosines.iter().zip(&sentences).filter(|(_, s)| s.candidate).map(|(c, _)| *c).fold(0.0, f64::max);
        let mut features = Vec::with_capacity(sentences.len());
        let mut candidates = Vec::with_capacity(sentences.len());
        let (mut prev_block, mut index_in_block) = (usize::MAX, 0usize);
        let mut seen_of_section: HashMap<usize, usize> = HashMap::new();
        for (i, s) in sentences.iter().enumerate() {
            if s.block != prev_block {
                prev_block = s.block;
                index_in_block = 0;
            } else {
                index_in_block += 1;
            }
            let block = &doc.blocks[s.block];
            let section = &doc.sections[block.section];
            let in_sec = seen_of_section.entry(block.section).or_default();
            let sec_pos = *in_sec as f64 / in_section.get(&block.section).copied().unwrap_or(1).max(1) as f64;
            *in_sec += 1;
            let lower = s.text.to_lowercase();
            let hits = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| abstract_word(w)).count().min(3) as f64;
            let cue = CUES.iter().any(|c| contains_words(&lower, c)) || cjk_cue(&s.text);
            let kind = |k: SectionKind| f64::from(u8::from(section.kind == k));
            let is_aside = aside[block.section] || aside_sentence(&lower);
            let first = s.text.chars().next().unwrap_or(' ');
            let non_space = s.text.chars().filter(|c| !c.is_whitespace()).count().max(1) as f64;
            let x: FeatureVec = [
                cosines[i],
                (cosines[i] + 0.01).ln(),
                if max_cos > 0.0 { cosines[i] / max_cos } else { 0.0 },
                vectors[i].iter().map(|&(id, x)| x * lead[id as usize]).sum::<f64>(),
                {
                    let t = terms(&s.text);
                    t.iter().map(|t| vocabulary.get(t).copied().unwrap_or(0.0)).sum::<f64>() / t.len().max(1) as f64
                },
                counts[i].iter().map(|&(id, _)| key_terms[id as usize].2).sum::<f64>() / s.words.max(1) as f64,
                share_of(&vectors[i], &title_terms),
                share_of(&vectors[i], &heading_terms[block.section]),
                kind(SectionKind::Front),
                kind(SectionKind::Abstract),
                kind(SectionKind::Introduction),
                kind(SectionKind::Background),
                kind(SectionKind::Body),
                kind(SectionKind::Conclusion),
                kind(SectionKind::Appendix),
                f64::from(section.level.min(4)),
                i as f64 / total.max(1.0),
                (1.0 + i as f64).ln(),
                1.0 / (1.0 + i as f64 / 8.0),
                sec_pos,
                1.0 / (1.0 + block_rank.get(&s.block).copied().unwrap_or(0) as f64),
                f64::from(u8::from(index_in_block == 0)),
                1.0 / (1.0 + index_in_block as f64),
                f64::from(u8::from(cue)),
                hits / 3.0,
                f64::from(u8::from(definition(&lower))),
                f64::from(u8::from(lower.split(|c: char| !c.is_alphanumeric()).any(|w| matches!(w, "we" | "our" | "us")))),
                (s.words.max(1) as f64).ln(),
                f64::from(u8::from(s.words <= 11)),
                f64::from(u8::from(s.words >= 37)),
                f64::from(prose_share(&s.text)),
                (f64::from(prose_share(&s.text)) + 0.05).ln(),
                s.text.chars().filter(char::is_ascii_digit).count() as f64 / non_space,
                f64::from(u8::from(block.kind == BlockKind::ListItem)),
                f64::from(u8::from(first.is_lowercase())),
                f64::from(u8::from(s.dangling)),
                f64::from(u8::from(is_aside)),
                f64::from(u8::from(lower.contains("http") || lower.contains("www.") || lower.contains('@'))),
            ];
            features.push(x);
            candidates.push(s.candidate && !(drop_asides && is_aside) && !matches!(section.kind, SectionKind::Acknowledgements | SectionKind::References | SectionKind::Contents));
        }
        let scorer = super::scorer::shipped();
        let off = super::scorer::indices(&super::ablation::stages());
        let scores = features.iter().zip(&candidates).map(|(x, &c)| if c { scorer.probability(x, &off) } else { 0.0 }).collect();
        for (s, c) in sentences.iter_mut().zip(candidates) {
            s.candidate = c;
        }
        let terms = key_terms.into_iter().map(|(t, x, _)| (t, x)).collect();
        Ok(Ranker { sentences, vectors, features, scores, terms })
    }

    /// Whether sentence `i` may join `chosen` by itself: it points at nothing, or at the
    /// sentence just before it in the same block, which is chosen.
    fn resolved(&self, i: usize, chosen: &[usize]) -> bool {
        if super::ablation::off("coherence") || !self.sentences[i].dangling {
            return true;
        }
        self.antecedent(i).is_some_and(|p| chosen.contains(&p))
    }

    /// The sentence a dangling sentence `i` points back to: the one before it, in its block or,
    /// when `i` opens a paragraph, at the end of the paragraph (or the list) just before
    /// (nothing between them: no heading, listing or figure).
    fn antecedent(&self, i: usize) -> Option<usize> {
        let p = i.checked_sub(1)?;
        let before = &self.sentences[p];
        // A lead-in read with its list ends with the list's last item.
        let bp = before.items.last().map_or(before.block, |(b, _)| *b);
        let b = self.sentences[i].block;
        (before.block == b || bp + 1 == b).then_some(p)
    }

    /// The summary's sentences within `max_words` ([`Ranker::select`] over all candidates);
    /// never empty while the document has a sentence: when no whole one fits, the best one,
    /// which [`Ranker::render`] then cuts at a word boundary (`cut` says so).
    pub fn choose(&self, max_words: usize) -> Choice {
        let chosen = self.select(max_words, |_| true);
        let cut = |chosen: &[usize]| chosen.iter().any(|&i| cut_to_words(&self.sentences[i].text, max_words) != self.sentences[i].text);
        let phrases = |chosen: &[usize]| chosen.iter().any(|&i| !self.sentences[i].candidate);
        if !chosen.is_empty() || self.sentences.is_empty() {
            return Choice { cut: cut(&chosen), phrases: phrases(&chosen), chosen };
        }
        let best = (0..self.sentences.len())
            .filter(|&i| self.sentences[i].words > 0)
            .max_by(|&a, &b| {
                let key = |i: usize| (self.sentences[i].candidate, self.scores[i], f64::from(prose_share(&self.sentences[i].text)));
                let (ka, kb) = (key(a), key(b));
                ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1)).then(ka.2.total_cmp(&kb.2)).then(b.cmp(&a))
            });
        let chosen: Vec<usize> = best.into_iter().collect();
        Choice { cut: cut(&chosen), phrases: phrases(&chosen), chosen }
    }

    /// Cosine similarity of sentences `a` and `b`.
    pub fn similarity(&self, a: usize, b: usize) -> f64 {
        let (x, y) = (&self.vectors[a], &self.vectors[b]);
        let (mut i, mut j, mut dot) = (0, 0, 0.0);
        while i < x.len() && j < y.len() {
            match x[i].0.cmp(&y[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    dot += x[i].1 * y[j].1;
                    i += 1;
                    j += 1;
                }
            }
        }
        dot
    }

    /// Chooses sentences among the candidates `allowed`, by score per word^[`DENSITY`] with
    /// the redundancy penalty, within `max_words`; returns their indices in document order.
    /// Sentences that are not candidates are used only when no candidate is allowed.
    pub fn select(&self, max_words: usize, allowed: impl Fn(usize) -> bool) -> Vec<usize> {
        let max_words = max_words.min(MAX_SUMMARY_WORDS);
        let n = self.sentences.len();
        let mut pool: Vec<usize> = (0..n).filter(|&i| allowed(i) && self.sentences[i].candidate && self.scores[i] > 0.0).collect();
        if pool.is_empty() {
            pool = (0..n).filter(|&i| allowed(i) && self.sentences[i].words > 0).collect();
        }
        let (redundancy_weight, duplicate) =
            if super::ablation::off("redundancy") { (0.0, f64::INFINITY) } else { (REDUNDANCY, DUPLICATE) };
        let density = |words: usize| (words.max(1) as f64).powf(DENSITY);
        let mut chosen: Vec<usize> = Vec::new();
        let mut used = 0usize;
        // The value of adding sentence `c` now (its score less the redundancy share), or
        // `None` when it would be a near-duplicate.
        let value = |c: usize, chosen: &[usize]| -> Option<f64> {
            let redundancy = chosen.iter().map(|&s| self.similarity(c, s)).fold(0.0, f64::max);
            (redundancy <= duplicate).then(|| self.scores[c] - redundancy_weight * redundancy * self.scores[c])
        };
        loop {
            // (the sentence, the one before it when the two go in together, their value)
            let mut best: Option<(usize, Option<usize>, f64)> = None;
            for &c in &pool {
                let words = self.sentences[c].words;
                let unit = if self.resolved(c, &chosen) {
                    (used + words <= max_words).then(|| value(c, &chosen).map(|v| (None, v / density(words)))).flatten()
                } else {
                    // A sentence that points back goes in with the one it points to, when that
                    // one may stand by itself and both fit: their mean value, for their mean
                    // length.
                    self.antecedent(c)
                        .filter(|&p| pool.contains(&p) && self.resolved(p, &chosen) && used + words + self.sentences[p].words <= max_words)
                        .and_then(|p| {
                            let vp = value(p, &chosen)?;
                            let with_p: Vec<usize> = chosen.iter().copied().chain([p]).collect();
                            Some((Some(p), (vp + value(c, &with_p)?) / 2.0 / density((words + self.sentences[p].words).div_ceil(2))))
                        })
                };
                // Strictly greater: ties go to the earlier sentence.
                if let Some((before, v)) = unit {
                    if best.is_none_or(|(_, _, b)| v > b) {
                        best = Some((c, before, v));
                    }
                }
            }
            let Some((c, before, _)) = best else { break };
            for i in before.into_iter().chain([c]) {
                pool.retain(|&x| x != i);
                used += self.sentences[i].words;
                chosen.push(i);
            }
        }
        if used * 100 < max_words * FILL_PERCENT && !super::ablation::off("fill") {
            if let Some(better) = self.fill(max_words, &allowed, duplicate) {
                if better.iter().map(|&i| self.sentences[i].words).sum::<usize>() > used {
                    chosen = better;
                }
            }
        }
        chosen.sort_unstable();
        chosen
    }

    /// When the greedy choice leaves much of the budget unused (its next sentences are all too
    /// long), the set of the best candidates that fills at least [`FILL_PERCENT`] of it with
    /// the highest total score: a knapsack over the best-scored candidates, near-duplicates
    /// of a better one left out. `None` when no such set exists.
    fn fill(&self, max_words: usize, allowed: &dyn Fn(usize) -> bool, dup: f64) -> Option<Vec<usize>> {
        const POOL: usize = 48;
        let mut order: Vec<usize> =
            (0..self.sentences.len()).filter(|&i| allowed(i) && self.sentences[i].candidate && self.scores[i] > 0.0).collect();
        order.sort_by(|&a, &b| self.scores[b].total_cmp(&self.scores[a]).then(a.cmp(&b)));
        let mut pool: Vec<usize> = Vec::new();
        for i in order {
            if pool.len() == POOL {
                break;
            }
            if self.sentences[i].words <= max_words && !self.sentences[i].dangling && pool.iter().all(|&p| self.similarity(i, p) <= dup) {
                pool.push(i);
            }
        }
        let floor = (max_words * FILL_PERCENT).div_ceil(100);
        if pool.iter().map(|&i| self.sentences[i].words).sum::<usize>() < floor {
            return None;
        }
        // 0/1 knapsack: best[w] = the highest total score of a set of exactly w words;
        // took[k][w]: candidate k is in that set as it stood after considering k.
        let mut best: Vec<f64> = vec![f64::NEG_INFINITY; max_words + 1];
        best[0] = 0.0;
        let mut took = vec![vec![false; max_words + 1]; pool.len()];
        for (k, &i) in pool.iter().enumerate() {
            let (words, score) = (self.sentences[i].words, self.scores[i]);
            for w in (words..=max_words).rev() {
                let value = best[w - words] + score;
                if value > best[w] {
                    best[w] = value;
                    took[k][w] = true;
                }
            }
        }
        let total = (floor..=max_words).filter(|&w| best[w].is_finite()).max_by(|&a, &b| best[a].total_cmp(&best[b]))?;
        let mut set = Vec::new();
        let mut w = total;
        for k in (0..pool.len()).rev() {
            if took[k][w] {
                set.push(pool[k]);
                w -= self.sentences[pool[k]].words;
            }
        }
        Some(set)
    }

    /// The text of sentences `chosen` (document order) in `style`. A sentence longer than the
    /// whole budget (a text without sentence breaks) is cut to `max_words` with "…": a summary
    /// is bounded by its length, never by its input.
    pub fn render(&self, chosen: &[usize], style: Style, max_words: usize) -> String {
        let texts: Vec<String> = chosen.iter().map(|&i| cut_to_words(&self.sentences[i].text, max_words)).collect();
        render_sentences(texts.iter().map(String::as_str), style)
    }

    /// The anchors of sentences `chosen`, as [`Ranker::render`] shows them.
    pub fn anchors(&self, doc: &Document, chosen: &[usize], max_words: usize) -> Vec<Anchor> {
        chosen
            .iter()
            .map(|&i| {
                let s = &self.sentences[i];
                let mut anchor = doc.anchor(s.block, s.range.clone(), &cut_to_words(&s.text, max_words));
                // A lead-in and its list: the lines of the items on the page where it starts.
                for (b, r) in &s.items {
                    let item = doc.anchor(*b, r.clone(), "");
                    if item.page != anchor.page || item.start < anchor.end {
                        break;
                    }
                    anchor.end = item.end;
                    anchor.boxes.extend(item.boxes);
                }
                anchor
            })
            .collect()
    }
}

/// The most list items a lead-in takes in ([`join_lists`]): a longer list is a catalogue,
/// not a statement.
const MAX_LIST_ITEMS: usize = 12;

/// The longest list item (words) [`join_lists`] reads as a fragment of its lead-in.
const MAX_ITEM_WORDS: usize = 16;

/// A sentence that introduces a list ("At present the package is mainly concerned with:")
/// and the items after it, when none of them is a sentence of its own ("spacing of
/// fractions, roots and symbols"), become one sentence: the lead-in, then the items in
/// order, separated by semicolons. Apart, the lead-in says nothing and the items are
/// fragments; together they are often where a manual states what it does. Only a list that
/// follows its lead-in directly, a paragraph's last sentence of five words or more (one that
/// states something: not "Examples include:"), and only when the whole list (two to
/// [`MAX_LIST_ITEMS`] items, each one short fragment) fits in one sentence.
fn join_lists(doc: &Document, sentences: Vec<Sentence>) -> Vec<Sentence> {
    // Lists never overlap: a lead-in is prose, an item a list item.
    let joins: Vec<(usize, usize)> = (0..sentences.len()).filter_map(|i| list_end(doc, &sentences, i).map(|end| (i, end))).collect();
    if joins.is_empty() {
        return sentences;
    }
    let mut out: Vec<Sentence> = Vec::with_capacity(sentences.len());
    let mut joins = joins.into_iter().peekable();
    let mut rest = sentences.into_iter().enumerate();
    while let Some((i, s)) = rest.next() {
        match joins.next_if(|&(lead, _)| lead == i) {
            Some((_, end)) => {
                let items: Vec<Sentence> = rest.by_ref().take(end - i - 1).map(|(_, s)| s).collect();
                out.push(joined(doc, s, &items));
            }
            None => out.push(s),
        }
    }
    out
}

/// When sentence `i` is a lead-in that [`join_lists`] joins with the list after it, the end
/// (exclusive) of that list's sentences.
fn list_end(doc: &Document, sentences: &[Sentence], i: usize) -> Option<usize> {
    let last_of_block = |k: usize| sentences.get(k + 1).is_none_or(|n| n.block != sentences[k].block);
    let lead = &sentences[i];
    if !last_of_block(i) || doc.blocks[lead.block].kind != BlockKind::Prose || !lead.text.trim_end().ends_with([':', '：']) || lead.words < 5 {
        return None;
    }
    // The k-th sentence after the lead-in is an item when it is all of the k-th block after it.
    let item = |k: usize| sentences.get(k).is_some_and(|s| s.block == lead.block + (k - i) && doc.blocks[s.block].kind == BlockKind::ListItem && last_of_block(k));
    let mut end = i + 1;
    while item(end) {
        end += 1;
    }
    // The whole list: the block after the last item is not an item of more sentences.
    let whole = sentences.get(end).is_none_or(|n| n.block != lead.block + (end - i) || doc.blocks[n.block].kind != BlockKind::ListItem);
    let items = &sentences[i + 1..end];
    let fragments = items.iter().all(|s| !s.candidate && s.words <= MAX_ITEM_WORDS);
    let words = lead.words + items.iter().map(|s| s.words).sum::<usize>();
    ((2..=MAX_LIST_ITEMS).contains(&items.len()) && whole && fragments && words <= 80).then_some(end)
}

/// The sentence a lead-in and its list `items` make ([`join_lists`]).
fn joined(doc: &Document, lead: Sentence, items: &[Sentence]) -> Sentence {
    let cjk = lead.text.trim_end().ends_with('：');
    let (first, sep, stop) = if cjk { ("", "；", "。") } else { (" ", "; ", ".") };
    let mut text = lead.text.trim_end().to_string();
    for (k, item) in items.iter().enumerate() {
        text.push_str(if k == 0 { first } else { sep });
        text.push_str(item_text(&item.text));
    }
    text.push_str(stop);
    let words = word_count(&text);
    Sentence {
        candidate: readable(&text, words, lower_ok(doc, lead.block, lead.range.start)),
        dangling: dangling_start(&text),
        items: items.iter().map(|s| (s.block, s.range.clone())).collect(),
        block: lead.block,
        range: lead.range,
        text,
        words,
    }
}

/// A list item as [`join_lists`] quotes it: without the punctuation that ends it in the list
/// (",", ";", "."; ", and", "; or": the separators take their place).
fn item_text(item: &str) -> &str {
    const ENDS: [char; 7] = [',', ';', '.', '；', '，', '。', ' '];
    let t = item.trim().trim_end_matches(ENDS);
    for conj in [" and", " or"] {
        if let Some(rest) = t.strip_suffix(conj).filter(|r| r.ends_with([',', ';'])) {
            return rest.trim_end_matches(ENDS);
        }
    }
    t
}

/// The largest budget the selection plans for (the knapsack's table is this long).
const MAX_SUMMARY_WORDS: usize = 100_000;

/// The share of the word budget (percent) a summary fills when the document has enough prose.
const FILL_PERCENT: usize = 85;

/// Bytes of a list item's marker and the spaces after it.
pub fn list_marker_len(text: &str) -> usize {
    let first = text.split_whitespace().next().unwrap_or("");
    let letters = first.trim_matches(|c: char| matches!(c, '(' | ')' | '.' | ':'));
    let marker = first.chars().count() == 1 && !first.chars().all(|c| c.is_alphabetic())
        || (!letters.is_empty() && letters.len() <= 3 && (first.ends_with(')') || first.ends_with('.')) && letters.chars().all(|c| c.is_ascii_alphanumeric()));
    if !marker {
        return 0;
    }
    let after = &text[text.find(first).unwrap_or(0) + first.len()..];
    text.len() - after.trim_start().len()
}

/// The blocks whose sentences a summary may quote: prose and list items; in a document with
/// none, the text no other kind claims (a paragraph of one endless word), so that such a
/// summary is the best of it cut and marked, not nothing. Code, tables, formulas, captions,
/// references and headings never.
pub fn summarizable(doc: &Document) -> Vec<(usize, &super::document::Block)> {
    let prose: Vec<_> = doc.prose().collect();
    if !prose.is_empty() {
        return prose;
    }
    doc.blocks.iter().enumerate().filter(|(_, b)| b.kind == BlockKind::Other && !b.text.trim().is_empty()).collect()
}

/// Whether `phrase` stands in `text` (both lowercase) as whole words.
fn contains_words(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(at, _)| {
        let before = text[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = text[at + phrase.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        before && after
    })
}

/// The names a document shows as commands: the first word of each line of its code (after
/// a shell prompt), and the words of its title.
fn shown_names(doc: &Document) -> HashSet<String> {
    let commands = doc
        .blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Code)
        .flat_map(|b| b.text.lines())
        .filter_map(|l| l.trim_start_matches(['$', '%', '#', '>', ' ']).split_whitespace().next());
    let title = doc.title.split(|c: char| !c.is_alphanumeric());
    commands.chain(title).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// Whether a sentence at byte `start` of block `b` may begin in lowercase: a manual's
/// sentence often starts with a command's name ("neato draws ..."). Only where the page's
/// layout says the block is a paragraph of its own (a PDF line that starts it, after a block
/// that ended its sentence), never the tail of a sentence cut by a page or a column.
fn lower_ok(doc: &Document, b: usize, start: usize) -> bool {
    let block = &doc.blocks[b];
    let has_layout = block.lines.first().is_some_and(|&l| doc.lines[l].layout.is_some());
    let prev_ended = doc.blocks[..b]
        .iter()
        .rev()
        .find(|p| !matches!(p.kind, BlockKind::Footnote | BlockKind::Other | BlockKind::Caption))
        .is_none_or(|p| !p.kind.is_prose() || p.text.trim_end().ends_with(['.', '!', '?', ':', '。', '！', '？', '：']));
    has_layout && (start > 0 || prev_ended)
}

/// Whether a sentence reads as one a summary may quote (`lower_ok`: it may begin in lowercase).
fn readable(text: &str, words: usize, lower_ok: bool) -> bool {
    let cjk = text.chars().filter(|c| is_cjk_letter(*c)).count() * 2 > text.chars().filter(|c| !c.is_whitespace()).count();
    let (lo, hi) = if cjk { (10, 200) } else { (6, 80) };
    let first = text.chars().next().unwrap_or(' ');
    // It ends like a sentence (closing quotes and brackets aside): not a fragment that a
    // page, a column or a display cut short.
    let end = text.trim_end().trim_end_matches(['"', '\'', ')', ']', '”', '’', '」', '』', '）']);
    // Not a lead-in to what follows ("... is shown below.", "as follows."), and not the tail
    // of a sentence that began before the text given ("(SVM), so ...").
    let last_word = end.trim_end_matches(['.', '!', '?', '。', '！', '？', '…']).rsplit(char::is_whitespace).next().unwrap_or("").to_lowercase();
    // A colon before the final stop ("... as if it were an article:.") introduced a display
    // that the text no longer holds.
    let colon = end.trim_end_matches(['.', '!', '?', '。', '！', '？', '…']).trim_end().ends_with([':', '：']);
    let lead_in = matches!(last_word.as_str(), "below" | "follows" | "following" | "here") || colon || cjk_lead_in(text);
    let tail = first == '(' && !text.trim_end().trim_end_matches(['.', '!', '?']).ends_with(')');
    // An aside of several sentences in brackets stands for nothing by itself.
    let aside = PARENTHESES.contains(&first) && holds_sentences(text);
    (lo..=hi).contains(&words)
        && end.ends_with(['.', '!', '?', '。', '！', '？', '…'])
        && !lead_in
        && !tail
        && !aside
        && (first.is_uppercase() || is_cjk(first) || first.is_ascii_digit() || "\"“‘(".contains(first) || (lower_ok && first.is_lowercase() && !labelled(text)))
        && !run_in_heading(text)
        && prose_share(text) >= 0.85
        // Brackets balanced, asked of CJK sentences only: Latin text writes "a)" and "1)"
        // enumerations; its curly double quotes pair up.
        && (if cjk { balanced(text) } else { double_quotes_paired(text) })
}

/// A sentence that opens with a section's numbering two or more levels deep ("3.4.26
/// parisizemax. gp, and in fact ..."): a heading set in the line of its paragraph, not part of
/// a sentence.
fn run_in_heading(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some(first) = words.first() else { return false };
    let parts: Vec<&str> = first.trim_end_matches(['.', ':']).split('.').collect();
    let numbering = parts.len() <= 4 && parts.iter().all(|p| !p.is_empty() && p.len() <= 3 && p.chars().all(|c| c.is_ascii_digit()));
    // Three levels are no decimal number; two ("2.5 million ...") need a title that ends
    // within a few words, before the sentence does.
    let title_ends = words.iter().enumerate().skip(1).take(5).any(|(k, w)| w.ends_with(['.', ':']) && k + 1 < words.len());
    numbering && words.len() > 1 && (parts.len() >= 3 || (parts.len() == 2 && title_ends))
}

/// A sentence that opens in lowercase with a term set before its description, as in a
/// description list ("euler-digits Take numerals ...", "doc: Formats the document ..."): the
/// term is the item's label, not the subject of a sentence.
fn labelled(text: &str) -> bool {
    let mut words = text.split_whitespace();
    let (Some(label), Some(next)) = (words.next(), words.next()) else { return false };
    label.ends_with(':') || (next.starts_with(char::is_uppercase) && next != "I")
}

/// A CJK sentence that introduces what follows it: a command, a list, a listing ("通过下列命令
/// 安装……", "……如下。").
fn cjk_lead_in(text: &str) -> bool {
    let t = text.trim_end().trim_end_matches(['。', '：', ':', '.']);
    ["下列", "如下", "以下", "下面的"].iter().any(|w| t.ends_with(w) || ["命令", "指令", "代码", "步骤", "例子", "示例", "内容"].iter().any(|n| t.contains(&format!("{w}{n}"))))
}

/// Each term's (text, key-term features, probability), by term id: how the document's
/// sentences (`counts`: their term ids and counts), its title and its headings use it.
fn key_terms(
    sentences: &[Sentence],
    counts: &[Vec<(u32, u32)>],
    ids: &HashMap<String, u32>,
    title: &[u32],
    headings: &[Vec<u32>],
    vocabulary: &HashMap<String, f64>,
) -> Vec<(String, TermFeatures, f64)> {
    let mut usage = vec![Usage::default(); ids.len()];
    for (i, (s, tf)) in sentences.iter().zip(counts).enumerate() {
        for &(id, c) in tf {
            let u = &mut usage[id as usize];
            if u.count == 0 {
                u.first = i;
            }
            u.count += c;
            u.last = i;
            if u.last_block != Some(s.block) {
                u.blocks += 1;
                u.last_block = Some(s.block);
            }
        }
    }
    for &id in title {
        usage[id as usize].in_title = true;
    }
    for &id in headings.iter().flatten() {
        usage[id as usize].headings += 1;
    }
    let occurrences: u64 = counts.iter().flatten().map(|&(_, c)| u64::from(c)).sum();
    let mut names = vec![""; ids.len()];
    for (t, &id) in ids {
        names[id as usize] = t.as_str();
    }
    let model = keyterms::shipped();
    names
        .iter()
        .zip(&usage)
        .map(|(t, u)| {
            let x = keyterms::features(u, sentences.len(), occurrences, vocabulary.get(*t).copied().unwrap_or(0.0));
            ((*t).to_string(), x, model.probability(&x, &[]))
        })
        .collect()
}

fn term_counts(text: &str, ids: &mut HashMap<String, u32>) -> Vec<(u32, u32)> {
    let mut term_ids: Vec<u32> = terms(text)
        .into_iter()
        .map(|t| {
            let next = ids.len() as u32;
            *ids.entry(t).or_insert(next)
        })
        .collect();
    term_ids.sort_unstable();
    let mut tf: Vec<(u32, u32)> = Vec::new();
    for id in term_ids {
        match tf.last_mut() {
            Some((last, c)) if *last == id => *c += 1,
            _ => tf.push((id, 1)),
        }
    }
    tf
}

/// The most characters a summary spends per word of its budget: a "word" of thousands of
/// letters (a text without spaces) is cut too.
const CHARS_PER_WORD: usize = 40;

/// `text` cut to at most `max_words` words at a word boundary (between CJK letters), and to
/// at most [`CHARS_PER_WORD`] characters a word, with "…". Linear in `text`.
pub fn cut_to_words(text: &str, max_words: usize) -> String {
    let cut = cut_words(text, max_words);
    let max_chars = max_words.max(1).saturating_mul(CHARS_PER_WORD);
    let body = cut.strip_suffix('…').unwrap_or(&cut);
    match body.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", body[..at].trim_end()),
        None => cut,
    }
}

fn cut_words(text: &str, max_words: usize) -> String {
    let mut used = 0usize;
    let mut end = 0usize;
    let mut cut = false;
    let mut offset = 0usize;
    for tok in text.split_inclusive(char::is_whitespace) {
        let word = tok.trim_end();
        let w = if word.is_empty() { 0 } else { token_words(word) };
        if used + w > max_words {
            cut = true;
            // A CJK run: as many letters as fit.
            let mut n = used;
            for (j, c) in word.char_indices() {
                if is_cjk_letter(c) || (c.is_alphanumeric() && !word[..j].ends_with(|p: char| p.is_alphanumeric() && !is_cjk_letter(p))) {
                    n += 1;
                }
                if n > max_words {
                    end = offset + j;
                    break;
                }
            }
            break;
        }
        used += w;
        offset += tok.len();
        end = offset;
    }
    if !cut {
        return text.to_string();
    }
    format!("{}…", text[..end].trim_end())
}

/// Joins sentences as a paragraph (no space between CJK sentences) or as a bullet list.
pub fn render_sentences<'a>(sentences: impl Iterator<Item = &'a str>, style: Style) -> String {
    let mut out = String::new();
    for s in sentences {
        match style {
            Style::Bullets => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str("- ");
                out.push_str(s);
            }
            Style::Paragraph => {
                let prev_cjk = out.chars().last().is_some_and(is_cjk);
                let next_cjk = s.chars().next().is_some_and(is_cjk);
                if !out.is_empty() && (!prev_cjk || !next_cjk) {
                    out.push(' ');
                }
                out.push_str(s);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cjk_asides_and_lead_ins() {
        assert!(cjk_change_line("添加 dh_pysupport 命令的支持。"));
        assert!(!cjk_change_line("本文添加了一种新的方法。"));
        assert!(cjk_lead_in("通过下列命令安装旧版本的 foo 软件包。"));
        assert!(cjk_lead_in("配置文件的内容如下。"));
        assert!(!cjk_lead_in("本文介绍推荐系统。"));
        assert!(balanced("他说（见第 3 节）。"));
        assert!(!balanced("以使用 \\noalign 命令。）"));
        assert!(!balanced("系统使用”noatime” 挂载。"));
    }

    #[test]
    fn licence_lines_are_asides() {
        for line in [
            "A copy of the license is included in the section entitled “GNU Free Documentation License”.",
            "Permission is granted to copy, distribute and/or modify this document.",
            "This program is distributed under the terms of the GNU General Public License.",
        ] {
            assert!(aside_sentence(&line.to_lowercase()), "{line}");
        }
        assert!(!aside_sentence("this document describes the libtasn1 library that provides asn.1 parsing."));
    }

    #[test]
    fn cross_references_and_admonitions_are_asides() {
        for line in [
            "See Section 5.3.2 for the commands provided.",
            "For more details see the package help.",
            "For details, see the ltxdoc package documentation.",
            "Refer to the lineno documentation for further commands.",
        ] {
            assert!(aside_sentence(&line.to_lowercase()), "{line}");
        }
        for line in ["Note: don't use this option in your final submission.", "Example 2: multiple walkers with file-based communication.", "注意：不要在发布版本中使用此选项。"] {
            assert!(aside_sentence(&line.to_lowercase()), "{line}");
        }
        for line in ["Seeds are drawn from the generator.", "The note: a reminder.", "For each page the reader sees one box.", "Users refer the job to the daemon."] {
            assert!(!aside_sentence(&line.to_lowercase()), "{line}");
        }
    }

    #[test]
    fn a_lead_in_whose_display_is_gone_is_no_candidate() {
        let cut = "Example with a journal, volume and pages as if it were an article:.";
        assert!(!readable(cut, word_count(cut), false));
        let whole = "Example with a journal, volume and pages as if it were an article.";
        assert!(readable(whole, word_count(whole), false));
    }

    #[test]
    fn a_heading_run_into_its_paragraph_starts_no_sentence() {
        let run_in = "3.4.26 parisizemax. gp, and in fact any program using the PARI library, needs a stack in which to do its computations.";
        assert!(!readable(run_in, word_count(run_in), true), "{run_in}");
        let two_levels = "4.2 Options: the options of a key are set in a list of their own, as below.";
        assert!(!readable(two_levels, word_count(two_levels), true), "{two_levels}");
        // A number that opens a sentence is no section's numbering.
        for sentence in ["2.5 million files were read in under a minute on one core.", "3 of the files were read twice when the disk was full."] {
            assert!(readable(sentence, word_count(sentence), true), "{sentence}");
        }
    }

    #[test]
    fn a_description_list_label_starts_no_sentence() {
        for labelled in ["euler-digits Take numerals, comma and period from Euler Roman in math mode.", "doc: Formats the document as a typical document, one-sided."] {
            assert!(!readable(labelled, word_count(labelled), true), "{labelled}");
        }
        // A command or a program that is the sentence's subject.
        for subject in ["dbconfig-common is a common framework for packaging database applications.", "latex2man preprocesses the input to allow text to be used conditionally."] {
            assert!(readable(subject, word_count(subject), true), "{subject}");
        }
    }

    #[test]
    fn a_list_item_leaves_its_list_punctuation() {
        assert_eq!(item_text("spacing of fractions, roots and symbols,"), "spacing of fractions, roots and symbols");
        assert_eq!(item_text("alternative versions of fractions, and"), "alternative versions of fractions");
        assert_eq!(item_text("a table; or"), "a table");
        assert_eq!(item_text("math symbols within bold text."), "math symbols within bold text");
        assert_eq!(item_text("输入文件；"), "输入文件");
        // A last word that is no separator stays.
        assert_eq!(item_text("black and"), "black and");
        assert_eq!(item_text("rock, paper, scissors"), "rock, paper, scissors");
    }

    #[test]
    fn chinese_cues_are_words() {
        assert!(cjk_cue("本文介绍推荐系统。"));
        assert!(cjk_cue("在本文中，我们讨论它。"));
        assert!(cjk_cue("为此，我们提出一种方法。"));
        assert!(!cjk_cue("把文本文件复制到目录。"));
        assert!(!cjk_cue("这是宗旨在于服务。"));
    }
}
