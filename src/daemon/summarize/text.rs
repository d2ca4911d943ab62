//! Script-aware text helpers shared by the pipeline: CJK detection, sentence splitting and the
//! terms the extractive ranker counts.
//!
//! Latin-script text separates words with spaces and ends sentences with `.`, `!` or `?`
//! followed by a space; CJK text has no spaces, and ends sentences with `。！？` whether or not
//! anything follows. Both can be mixed in one paragraph (a Chinese sentence quoting an English
//! name), so every rule here looks at the characters around a boundary, not at a document-wide
//! language guess.

use std::ops::Range;

/// Han ideographs, kana, hangul, bopomofo: letters of scripts written without spaces.
pub fn is_cjk_letter(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF     // hiragana, katakana
        | 0x3100..=0x312F   // bopomofo
        | 0x3130..=0x318F   // hangul compatibility jamo
        | 0x31F0..=0x31FF   // katakana phonetic extensions
        | 0x3400..=0x4DBF   // CJK extension A
        | 0x4E00..=0x9FFF   // CJK unified ideographs
        | 0xAC00..=0xD7AF   // hangul syllables
        | 0x1100..=0x11FF   // hangul jamo
        | 0xF900..=0xFAFF   // CJK compatibility ideographs
        | 0xFF66..=0xFF9D   // halfwidth katakana
        | 0x20000..=0x2FA1F // CJK extensions B-F, compatibility supplement
    )
}

/// A plain word, as a reader counts them: letters (with inner hyphens or apostrophes),
/// optionally wrapped in quotes or brackets and followed by punctuation.
pub fn is_plain_word(w: &str) -> bool {
    let w = w.trim_start_matches(['(', '"', '“', '‘', '\'', '[']);
    let w = w.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '”', '’', '\'', ']']);
    // Placeholders of a manual's syntax stand for words: "the ⟨key⟩ to set", "a ⟨key⟩=⟨value⟩
    // list" (placeholders joined by one sign each).
    if let Some(inner) = w.strip_prefix('⟨').and_then(|w| w.strip_suffix('⟩')) {
        let name = |n: &str| !n.is_empty() && n.chars().all(|c| c.is_alphabetic() || c == '-');
        let mut parts = inner.split('⟩');
        return parts.next().is_some_and(name)
            && parts.all(|p| {
                let mut cs = p.chars();
                cs.next().is_some_and(|c| !c.is_alphanumeric() && c != '⟨') && cs.next() == Some('⟨') && name(cs.as_str())
            });
    }
    let mut chars = w.chars();
    let plain = match chars.next() {
        Some(c) if c.is_alphabetic() => chars.all(|c| c.is_alphabetic() || matches!(c, '-' | '\'' | '’')),
        _ => false,
    };
    // A lone letter is a variable more often than a word ("a", "I" excepted).
    plain && (w.chars().count() > 1 || matches!(w, "a" | "A" | "I"))
}

/// CJK letters plus the CJK and fullwidth punctuation blocks: characters after which no space
/// is needed when two lines are joined.
pub fn is_cjk(c: char) -> bool {
    is_cjk_letter(c) || matches!(c as u32, 0x3000..=0x303F | 0xFF00..=0xFF65 | 0xFE30..=0xFE4F)
}

/// (CJK letters, all letters) of `text`.
pub fn letter_counts(text: &str) -> (usize, usize) {
    let (mut cjk, mut letters) = (0usize, 0usize);
    for c in text.chars() {
        if is_cjk_letter(c) {
            cjk += 1;
            letters += 1;
        } else if c.is_alphabetic() {
            letters += 1;
        }
    }
    (cjk, letters)
}

/// Share of CJK letters among all letters of `text` (0 when it has no letters).
pub fn cjk_ratio(text: &str) -> f64 {
    let (cjk, letters) = letter_counts(text);
    if letters == 0 {
        0.0
    } else {
        cjk as f64 / letters as f64
    }
}

/// The unified ideograph that a Kangxi radical (U+2F00-U+2FDF), a CJK radicals supplement form
/// or a CJK compatibility ideograph stands for (its NFKC form): some fonts' ToUnicode maps give
/// these look-alikes, which a reader cannot search for and the ranker would count as other
/// characters. Other characters (full-width Latin letters and digits included) stay as the
/// page shows them.
pub fn unified_ideograph(c: char) -> Option<char> {
    use unicode_normalization::UnicodeNormalization;
    if !matches!(c as u32, 0x2E80..=0x2FDF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F) {
        return None;
    }
    let mut n = std::iter::once(c).nfkc();
    match (n.next(), n.next()) {
        (Some(u), None) if u != c && is_cjk_letter(u) => Some(u),
        _ => None,
    }
}

/// Joins two pieces of text the way a line break inside a paragraph reads: no space between
/// CJK characters, one space otherwise.
pub fn join_pieces(out: &mut String, next: &str) {
    let next = next.trim();
    if next.is_empty() {
        return;
    }
    let prev_end = out.trim_end().chars().last();
    out.truncate(out.trim_end().len());
    match (prev_end, next.chars().next()) {
        (None, _) => {}
        (Some(a), Some(b)) if is_cjk(a) && is_cjk(b) => {}
        (Some(a), _) if is_cjk(a) && matches!(a, '。' | '！' | '？' | '，' | '、' | '；' | '：') => {}
        _ => out.push(' '),
    }
    out.push_str(next);
}

/// Visual length of a summary: a CJK character carries about as much as a short Latin word,
/// so it counts 2.5 against a budget where a Latin character counts 1.
pub fn weighted_len(text: &str) -> f64 {
    text.chars().map(|c| if is_cjk_letter(c) { 2.5 } else { 1.0 }).sum()
}

/// Ends of CJK sentences, which end them whether or not anything follows. `…` and the
/// full-width period `．` end one only after a CJK character (in Latin text `…` is an
/// ellipsis inside a sentence, `．` a decimal point of full-width digits).
const CJK_TERMINATORS: &[char] = &['。', '！', '？', '｡'];
const CJK_AFTER_CJK: &[char] = &['…', '．'];
const LATIN_TERMINATORS: &[char] = &['.', '!', '?'];
/// Closing quotes and brackets that stay with the sentence they end.
const CLOSERS: &[char] = &['"', '\'', ')', ']', '}', '”', '’', '」', '』', '）', '】', '》', '〉', '〕', '］', '｝'];

/// Brackets and quotes whose inside does not end the sentence around them: a sentence that
/// opens one closes it.
const PAIRS: &[(char, char)] = &[
    ('(', ')'), ('[', ']'), ('（', '）'), ('［', '］'), ('【', '】'), ('〔', '〕'), ('「', '」'), ('『', '』'),
    ('“', '”'), ('《', '》'), ('〈', '〉'),
];
/// Brackets that open a parenthetical: one that stands alone after a sentence belongs to it.
pub(crate) const PARENTHESES: &[char] = &['(', '（', '［', '【', '〔', '['];
/// A pair longer than this (bytes) is not protected: an opener whose closer is a page away is
/// a stray, and the text inside it still needs sentences.
const MAX_PAIR_BYTES: usize = 1200;
/// Nesting deeper than this is not tracked (keeps hostile text linear).
const MAX_PAIR_DEPTH: usize = 32;

/// Abbreviations after which a period does not end a sentence (compared lowercase, without
/// the period). Not "etc": it ends a list, and a sentence with it more often than not ("...,
/// tables, etc. The next ..."); before a lowercase word it goes on like any period.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "e.g", "i.e", "cf", "fig", "figs", "no",
    "nos", "vol", "vols", "pp", "p", "ed", "eds", "inc", "ltd", "co", "corp", "dept", "univ", "approx", "est", "al",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "gen", "gov", "sen", "rep",
    "ca", "op", "cit", "ibid", "eq", "eqs", "sec", "ch", "art", "para",
];

/// Longest word before a period that is still looked at as a possible abbreviation.
const MAX_ABBREVIATION_CHARS: usize = 24;

/// Whether the brackets and curly quotes of `text` ([`PAIRS`]) pair up: a sentence that opens
/// one closes it (a closer without its opener is the tail of a sentence cut before the text).
pub fn balanced(text: &str) -> bool {
    let mut stack: Vec<char> = Vec::new();
    for c in text.chars() {
        if let Some(&(_, close)) = PAIRS.iter().find(|(o, _)| *o == c) {
            stack.push(close);
        } else if PAIRS.iter().any(|(_, cl)| *cl == c) && stack.pop() != Some(c) {
            return false;
        }
    }
    stack.is_empty()
}

/// Whether the curly double quotes of `text` pair up (“ before each ”). Asked of Latin
/// sentences, which may leave brackets open ("a)" enumerations) but whose closing quote
/// without its opening one is the tail of a quotation that began in an earlier sentence, or
/// a document's misprint; neither is a sentence to quote alone. (’ is also an apostrophe.)
pub fn double_quotes_paired(text: &str) -> bool {
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '“' => depth += 1,
            '”' if depth == 0 => return false,
            '”' => depth -= 1,
            _ => {}
        }
    }
    depth == 0
}

/// The outermost bracket and quote pairs of `text` that close (byte offsets of the opener and
/// of the closer), in order. A closer without its opener, or an opener never closed, is
/// ignored.
fn outer_pairs(text: &str) -> Vec<(usize, usize)> {
    let mut stack: Vec<(char, usize)> = Vec::new();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, c) in text.char_indices() {
        if let Some(&(_, close)) = PAIRS.iter().find(|(o, _)| *o == c) {
            if stack.len() < MAX_PAIR_DEPTH {
                stack.push((close, i));
            }
        } else if PAIRS.iter().any(|(_, cl)| *cl == c) {
            // The innermost open pair this closes; the openers above it were strays.
            if let Some(k) = stack.iter().rposition(|&(close, _)| close == c) {
                let open = stack[k].1;
                stack.truncate(k);
                if stack.is_empty() && i - open <= MAX_PAIR_BYTES {
                    while out.last().is_some_and(|&(o, _)| o > open) {
                        out.pop();
                    }
                    out.push((open, i));
                }
            }
        }
    }
    out
}

/// Byte ranges of the sentences of `text` (one paragraph: line breaks already joined), in
/// order, trimmed, never empty. Text without a terminator is one sentence. A terminator
/// inside brackets or quotes does not end the sentence around them, a Chinese sentence that
/// quotes one goes on after the quote, and a parenthetical standing after a sentence is part
/// of it. Linear in `text`.
pub fn split_sentences(text: &str) -> Vec<Range<usize>> {
    let pairs = outer_pairs(text);
    let mut next_pair = 0usize;
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut start = 0usize;
    let mut i = 0usize;
    let mut prev: Option<char> = None;
    while let Some(c) = text[i..].chars().next() {
        let after_c = i + c.len_utf8();
        // Where to look next when no sentence ends here: past the whole run of terminators.
        let mut resume = after_c;
        let mut end_here = None;
        let cjk_end = CJK_TERMINATORS.contains(&c) || (CJK_AFTER_CJK.contains(&c) && prev.is_some_and(|p| is_cjk_letter(p) || (is_cjk(p) && !p.is_alphanumeric())));
        if cjk_end {
            // A run of terminators ("？！", "……") and the closers after it stay together.
            let j = skip(text, after_c, |c| CJK_TERMINATORS.contains(&c) || CJK_AFTER_CJK.contains(&c) || LATIN_TERMINATORS.contains(&c));
            end_here = Some(skip(text, j, |c| CLOSERS.contains(&c)));
        } else if LATIN_TERMINATORS.contains(&c) || c == '…' {
            let run_end = skip(text, after_c, |c| LATIN_TERMINATORS.contains(&c) || c == '…');
            let run_end = if c == '.' { spaced_ellipsis_end(text, i).unwrap_or(run_end) } else { run_end };
            resume = run_end;
            let single = run_end == after_c && c != '…';
            let ellipsis = text[i..run_end].contains('…') || text[i..run_end].matches('.').count() >= 3;
            let j = skip(text, run_end, |c| CLOSERS.contains(&c));
            let next = text[j..].chars().next();
            let separated = next.is_none_or(|n| n.is_whitespace() || is_cjk_letter(n));
            // After an ellipsis the sentence goes on unless a new one visibly starts ("x1,
            // . . . , xn", "\begin . . . \end"; "I did not know better. . . How can I").
            let starts_after_ellipsis = || text[j..].chars().find(|c| !c.is_whitespace()).is_none_or(|n| n.is_uppercase() || is_cjk_letter(n) || "\"“‘'".contains(n));
            if separated && (!ellipsis || starts_after_ellipsis()) && latin_boundary(text, i, j, single) {
                end_here = Some(j);
            }
        }
        if let Some(j) = end_here {
            while pairs.get(next_pair).is_some_and(|&(_, close)| close < i) {
                next_pair += 1;
            }
            if let Some(&(open, close)) = pairs.get(next_pair) {
                // Inside a pair that the terminator's closers do not close: the sentence goes on.
                let inside = open < i && close >= j;
                // A Chinese quote or bracket closed by this end, opened inside the sentence.
                let quoted = cjk_end && open < i && close < j && text[start..open].trim().chars().count() > 0;
                if inside || quoted {
                    end_here = None;
                }
            }
        }
        match end_here {
            Some(j) => {
                push_sentence(&mut out, text, start, j, &pairs);
                start = j;
                i = j;
                prev = text[..j].chars().next_back();
            }
            None => {
                i = resume;
                prev = text[..resume].chars().next_back();
            }
        }
    }
    push_sentence(&mut out, text, start, text.len(), &pairs);
    out
}

/// Adds the sentence `start..end` (trimmed) to `out`; a parenthetical that is the whole
/// sentence joins the sentence before it.
fn push_sentence(out: &mut Vec<Range<usize>>, text: &str, start: usize, end: usize, pairs: &[(usize, usize)]) {
    let piece = &text[start..end];
    let lead = piece.len() - piece.trim_start().len();
    let trail = piece.len() - piece.trim_end().len();
    if lead + trail >= piece.len() {
        return;
    }
    let r = start + lead..end - trail;
    let parenthetical = text[r.clone()].starts_with(PARENTHESES) && {
        let k = pairs.partition_point(|&(o, _)| o < r.start);
        pairs.get(k).is_some_and(|&(o, close)| {
            o == r.start && text[close..r.end].chars().skip(1).all(|c| CJK_TERMINATORS.contains(&c) || CJK_AFTER_CJK.contains(&c) || LATIN_TERMINATORS.contains(&c) || CLOSERS.contains(&c))
        })
    };
    match out.last_mut() {
        // One that holds sentences of its own is an aside of its own ("... drawing. (In most
        // other cases you would want a page number. It is ...)"): joined, it would make the
        // sentence before it too long to be chosen.
        Some(last) if parenthetical && !holds_sentences(&text[r.clone()]) => last.end = r.end,
        _ => out.push(r),
    }
}

/// Whether a bracketed `aside` holds more than one sentence: a terminator before its end
/// followed by a space and a capital, or a CJK terminator before its last characters.
pub(crate) fn holds_sentences(aside: &str) -> bool {
    let inner = aside.trim_end_matches(|c: char| CLOSERS.contains(&c) || LATIN_TERMINATORS.contains(&c) || CJK_TERMINATORS.contains(&c));
    for (i, c) in inner.char_indices() {
        if CJK_TERMINATORS.contains(&c) && i + c.len_utf8() < inner.len() {
            return true;
        }
        if matches!(c, '.' | '!' | '?') {
            let mut rest = inner[i + 1..].chars();
            if rest.next().is_some_and(char::is_whitespace) && rest.next().is_some_and(char::is_uppercase) {
                return true;
            }
        }
    }
    false
}

/// The end of a spaced ellipsis that starts with the period at byte `i` (". . .", as LaTeX
/// sets `\ldots`: three periods or more, one space at most between two), or `None`.
fn spaced_ellipsis_end(text: &str, i: usize) -> Option<usize> {
    let (mut j, mut dots) = (i + 1, 1);
    loop {
        let rest = &text[j..];
        if rest.starts_with('.') {
            j += 1;
        } else if rest.starts_with(" .") {
            j += 2;
        } else {
            break;
        }
        dots += 1;
    }
    (dots >= 3 && text[i..j].contains(' ')).then_some(j)
}

/// The byte index after the characters from `from` on for which `pred` holds.
fn skip(text: &str, from: usize, pred: impl Fn(char) -> bool) -> usize {
    let mut j = from;
    for c in text[from..].chars() {
        if !pred(c) {
            break;
        }
        j += c.len_utf8();
    }
    j
}

/// Whether the Latin terminator at byte `i` (its run and closers ending at byte `j`) ends a
/// sentence. `single`: the terminator is one character (an abbreviation's period, not "?!"
/// or "...").
fn latin_boundary(text: &str, i: usize, j: usize, single: bool) -> bool {
    if text[i..].starts_with('.') && single {
        // The word before the period (abbreviations are short: looking further back would
        // make a text without spaces quadratic).
        let mut k = i;
        for (n, c) in text[..i].chars().rev().enumerate() {
            if n >= MAX_ABBREVIATION_CHARS || c.is_whitespace() || matches!(c, '(' | '"' | '“' | '\'') {
                break;
            }
            k -= c.len_utf8();
        }
        let word = &text[k..i];
        let lower = word.to_lowercase();
        if ABBREVIATIONS.contains(&lower.as_str()) {
            return false;
        }
        // An initial ("J. Smith", "U.S.") or a dotted abbreviation; but a one-letter word
        // before a word that starts sentences ("written in R. The package") ends one, and so
        // does one after a lowercase word other than those that introduce a name ("code
        // with R. Rcpp provides", where "by D. Samperi" and "and J. Smith" are initials).
        let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
        // The next word, looked at no further than an abbreviation's length (linear).
        let ahead: String = text[j..].chars().skip_while(|c| c.is_whitespace()).take(MAX_ABBREVIATION_CHARS).collect();
        let next_word = ahead.split_whitespace().next().unwrap_or("");
        let next: String = next_word.chars().filter(|c| c.is_alphabetic()).collect();
        let next_lower = next.to_lowercase();
        let starts = STOPWORDS.contains(&next_lower.as_str()) || SENTENCE_OPENERS.contains(&next_lower.as_str());
        if letters.len() == 1 && letters[0].is_uppercase() && word.chars().count() <= 2 {
            let next_initial = next_word.len() == 2 && next_word.ends_with('.') && next_word.starts_with(|c: char| c.is_uppercase());
            if !starts && (next_initial || !after_common_word(&text[..k])) {
                return false;
            }
        }
        // A dotted abbreviation goes on, unless a sentence visibly starts ("in the U.S. The
        // rest", "a Ph.D. First, ...").
        if word.contains('.') && word.chars().all(|c| c.is_alphabetic() || c == '.') && letters.len() <= 4 && !starts {
            return false;
        }
    }
    // The next word: a sentence starts with an uppercase letter, a digit, a quote or bracket,
    // or a CJK letter; a lowercase word continues the sentence ("approx. five", "p. 7"), and
    // so does a comma or a closing bracket.
    match text[j..].chars().find(|c| !c.is_whitespace()) {
        None => true,
        Some(n) => !n.is_lowercase() && !",;:)]".contains(n),
    }
}

/// Whether `before` (the text up to a one-letter word) ends in a lowercase word and a space,
/// a word that does not introduce a name: "in R.", "with C.", not "by D.", "thanks to A." or
/// "Smith, J.".
fn after_common_word(before: &str) -> bool {
    let Some(head) = before.strip_suffix(' ') else { return false };
    // Only the last few characters: a text without spaces stays linear.
    let from = head.char_indices().rev().nth(MAX_ABBREVIATION_CHARS - 1).map_or(0, |(i, _)| i);
    let word = head[from..].rsplit(char::is_whitespace).next().unwrap_or("");
    !word.is_empty() && word.chars().all(char::is_lowercase) && !matches!(word, "by" | "and" | "to" | "und" | "et" | "von" | "van" | "de" | "der" | "da" | "di" | "du" | "le" | "la")
}

/// Words that open sentences and are no surnames: after a one-letter word and its period
/// they start a new sentence ("the model matrix, X. Next, ...", "in R. Moreover").
const SENTENCE_OPENERS: &[&str] = &[
    "however", "moreover", "furthermore", "therefore", "thus", "hence", "next", "finally", "first", "second", "third",
    "note", "see", "consequently", "similarly", "instead", "otherwise", "although", "since", "here", "thereby", "likewise",
];

/// English function words that carry no topic (the ranker skips them).
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her",
    "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "may", "me", "might", "more", "most", "must", "my", "myself", "no", "nor", "not", "now", "of", "off", "on",
    "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so",
    "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they",
    "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves", "one", "two", "its", "let", "many", "much", "every", "whether", "yet", "upon", "via",
];

/// Common CJK function characters; a bigram made only of them carries no topic.
const CJK_FUNCTION_CHARS: &[char] = &[
    '的', '了', '是', '在', '和', '与', '或', '也', '就', '都', '而', '及', '着', '之', '其', '这', '那', '个', '们', '为',
    '以', '于', '对', '把', '被', '从', '到', '将', '会', '能', '要', '可', '有', '不', 'の', 'は', 'が', 'を', 'に', 'で',
    'と', 'も', 'た', 'て', 'し', 'す', 'る', 'な', 'い',
];

/// The terms of `text` the ranker counts: lowercase Latin words (stop words and one-letter
/// words dropped, a plural `s` stripped) and, for runs of CJK letters, overlapping character
/// bigrams (a lone CJK letter counts as a unigram). Deterministic; in text order.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk_run: Vec<char> = Vec::new();
    let flush_word = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            let w = word.to_lowercase();
            word.clear();
            if w.chars().count() < 2 && !w.chars().all(|c| c.is_ascii_digit()) {
                return;
            }
            if STOPWORDS.contains(&w.as_str()) {
                return;
            }
            out.push(stem(&w));
        }
    };
    let flush_cjk = |run: &mut Vec<char>, out: &mut Vec<String>| {
        match run.len() {
            0 => {}
            1 => {
                if !CJK_FUNCTION_CHARS.contains(&run[0]) {
                    out.push(run[0].to_string());
                }
            }
            _ => {
                for pair in run.windows(2) {
                    if CJK_FUNCTION_CHARS.contains(&pair[0]) && CJK_FUNCTION_CHARS.contains(&pair[1]) {
                        continue;
                    }
                    out.push(pair.iter().collect());
                }
            }
        }
        run.clear();
    };
    for c in text.chars() {
        if is_cjk_letter(c) {
            flush_word(&mut word, &mut out);
            cjk_run.push(c);
        } else if c.is_alphanumeric() || (c == '\'' && !word.is_empty()) {
            flush_cjk(&mut cjk_run, &mut out);
            if c != '\'' {
                word.push(c);
            }
        } else {
            flush_word(&mut word, &mut out);
            flush_cjk(&mut cjk_run, &mut out);
        }
    }
    flush_word(&mut word, &mut out);
    flush_cjk(&mut cjk_run, &mut out);
    out
}

/// A light English stemmer: folds plural and possessive endings so that "summary" and
/// "summaries", "model" and "models" count as one term.
fn stem(w: &str) -> String {
    if !w.is_ascii() || w.len() <= 3 {
        return w.to_string();
    }
    if let Some(s) = w.strip_suffix("ies") {
        if s.len() >= 2 {
            return format!("{s}y");
        }
    }
    if w.ends_with("ss") || w.ends_with("us") || w.ends_with("is") {
        return w.to_string();
    }
    if let Some(s) = w.strip_suffix("es") {
        if s.ends_with("ch") || s.ends_with("sh") || s.ends_with('x') {
            return s.to_string();
        }
    }
    if let Some(s) = w.strip_suffix('s') {
        return s.to_string();
    }
    w.to_string()
}

/// Whether a line ending in `prev` and the next line `next` join as one hyphenated word
/// ("sum-" + "mary" -> "summary").
pub fn joins_hyphenated(prev: &str, next: &str) -> bool {
    let trimmed = prev.trim_end();
    let mut chars = trimmed.chars().rev();
    let (last, before) = (chars.next(), chars.next());
    matches!((last, before, next.trim_start().chars().next()),
        (Some('-' | '\u{2010}'), Some(b), Some(n)) if b.is_alphabetic() && !is_cjk_letter(b) && b.is_lowercase() && n.is_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curly_double_quotes_pair_up() {
        assert!(double_quotes_paired("It is called “Guide for Debian Maintainers” here."));
        assert!(double_quotes_paired("The user’s guide, with no quotation."));
        assert!(!double_quotes_paired("The rewrite is available as ”Guide for Debian Maintainers”."));
        assert!(!double_quotes_paired("the rest of a quotation.” Then it goes on."));
        assert!(!double_quotes_paired("He wrote “a quotation that never closes."));
    }

    fn sentences(text: &str) -> Vec<&str> {
        split_sentences(text).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn english_sentences_respect_abbreviations_and_initials() {
        let t = "Dr. Smith arrived at 3.30 p.m. on Monday. He met J. R. Jones, e.g. the new director! Was it late? Yes.";
        assert_eq!(
            sentences(t),
            vec!["Dr. Smith arrived at 3.30 p.m. on Monday.", "He met J. R. Jones, e.g. the new director!", "Was it late?", "Yes."]
        );
        // A one-letter name ending a sentence, after a common word; an initial after "by".
        let t = "He holds a Ph.D. First, he taught in the U.S. for a year.";
        assert_eq!(sentences(t), vec!["He holds a Ph.D.", "First, he taught in the U.S. for a year."]);
        let t = "It is the model matrix, X. Next, the results are used.";
        assert_eq!(sentences(t), vec!["It is the model matrix, X.", "Next, the results are used."]);
        let t = "It integrates C++ code with R. Rcpp provides classes. It was written by D. Samperi in 2005.";
        assert_eq!(sentences(t), vec!["It integrates C++ code with R.", "Rcpp provides classes.", "It was written by D. Samperi in 2005."]);
        let t = "It reads lists, tables, etc. The rest (notes, etc.) is skipped, as are figures etc. and more.";
        assert_eq!(sentences(t), vec!["It reads lists, tables, etc.", "The rest (notes, etc.) is skipped, as are figures etc. and more."]);
    }

    #[test]
    fn quotes_stay_with_their_sentence() {
        let t = "She said \"stop.\" Then she left. (It was over.) The end";
        assert_eq!(sentences(t), vec!["She said \"stop.\"", "Then she left. (It was over.)", "The end"]);
    }

    #[test]
    fn chinese_sentences_split_without_spaces() {
        let t = "今天天气很好。我们去公园散步吧！你觉得怎么样？他说：“好的。”然后走了。";
        assert_eq!(sentences(t), vec!["今天天气很好。", "我们去公园散步吧！", "你觉得怎么样？", "他说：“好的。”然后走了。"]);
    }

    #[test]
    fn cjk_brackets_and_quotes_hold_their_sentence() {
        // A clause in brackets with its own full stops stays inside the sentence that opened it.
        let t = "在表格中（这时可以使用 \\noalign 命令。将该参数的值用作其他命令的参量。）也能这样做。下一句。";
        assert_eq!(sentences(t), vec!["在表格中（这时可以使用 \\noalign 命令。将该参数的值用作其他命令的参量。）也能这样做。", "下一句。"]);
        // A parenthetical standing after a sentence is part of it.
        // One that holds sentences of its own stands apart.
        let t = "It is redefined. (In the book this makes sense. In most other cases it does not.) Then it ends.";
        assert_eq!(sentences(t), vec!["It is redefined.", "(In the book this makes sense. In most other cases it does not.)", "Then it ends."]);
        let t = "先卸载文件系统。（对未挂载的文件系统这么做。）然后检查。";
        assert_eq!(sentences(t), vec!["先卸载文件系统。（对未挂载的文件系统这么做。）", "然后检查。"]);
        // A book title with a full stop inside.
        assert_eq!(sentences("请读《学习。实践》一书。好的。"), vec!["请读《学习。实践》一书。", "好的。"]);
        // A stray closer or opener does not stop the splitting.
        assert_eq!(sentences("第一句。）第二句。（第三句。"), vec!["第一句。）", "第二句。", "（第三句。"]);
    }

    #[test]
    fn kangxi_radicals_and_compatibility_ideographs_are_unified() {
        // ⼀ KANGXI RADICAL ONE, ⽂ RADICAL SCRIPT, 﨑 (U+FA11), 丽 (U+2F800).
        assert_eq!(unified_ideograph('\u{2F00}'), Some('一'));
        assert_eq!(unified_ideograph('\u{2F42}'), Some('文'));
        assert_eq!(unified_ideograph('\u{F900}'), Some('\u{8C48}'));
        assert_eq!(unified_ideograph('\u{2F800}'), Some('\u{4E3D}'));
        assert_eq!(unified_ideograph('文'), None);
        assert_eq!(unified_ideograph('Ａ'), None);
        assert_eq!(unified_ideograph('（'), None);
    }

    #[test]
    fn ellipsis_ends_only_cjk_sentences() {
        assert_eq!(sentences("It goes on… and on. Done."), vec!["It goes on… and on.", "Done."]);
        // LaTeX's spaced ellipsis is one ellipsis; it ends a sentence only before a new one.
        assert_eq!(sentences("The values x1, . . . , xn are given. Next."), vec!["The values x1, . . . , xn are given.", "Next."]);
        assert_eq!(sentences("Use \\begin . . . \\end blocks here. I did not know better. . . How can I?"), vec!["Use \\begin . . . \\end blocks here.", "I did not know better. . .", "How can I?"]);
        assert_eq!(sentences("Wait . . . and see. A period . then."), vec!["Wait . . . and see.", "A period . then."]);
        assert_eq!(sentences("他想了想……我们走吧。"), vec!["他想了想……", "我们走吧。"]);
        assert_eq!(sentences("版本１．２已经发布。第二句．第三句。"), vec!["版本１．２已经发布。", "第二句．", "第三句。"]);
    }

    #[test]
    fn urls_and_versions_keep_their_dots() {
        let t = "可以参考扩展文档 http://asymptote.sourceforge.net/doc/ 了解更多。版本 2.1.3 修正了它。";
        assert_eq!(sentences(t), vec!["可以参考扩展文档 http://asymptote.sourceforge.net/doc/ 了解更多。", "版本 2.1.3 修正了它。"]);
    }

    #[test]
    fn mixed_script_sentences() {
        let t = "Vim 是一个编辑器。It has many commands. 本教程介绍基本命令。";
        assert_eq!(sentences(t), vec!["Vim 是一个编辑器。", "It has many commands.", "本教程介绍基本命令。"]);
    }

    #[test]
    fn sentences_of_research_articles() {
        let t = "Most SVM software is written in C (Chang and Lin 2001). Smith et al. (2004) show this, e.g. in \
                 Fig. 3 and Eq. (2), i.e. for small data. Section 2.1 describes the method. See \
                 https://www.r-project.org/ for R. The call ksvm(x, y) fits a model. Done.";
        assert_eq!(
            sentences(t),
            vec![
                "Most SVM software is written in C (Chang and Lin 2001).",
                "Smith et al. (2004) show this, e.g. in Fig. 3 and Eq. (2), i.e. for small data.",
                "Section 2.1 describes the method.",
                "See https://www.r-project.org/ for R.",
                "The call ksvm(x, y) fits a model.",
                "Done."
            ]
        );
    }

    #[test]
    fn splitting_is_linear_on_text_without_spaces() {
        // A period before every CJK letter: each boundary looks back at most a word.
        let t = "x.中".repeat(200_000);
        assert_eq!(sentences(&t).len(), 200_000);
    }

    #[test]
    fn lowercase_continuation_is_not_a_boundary() {
        assert_eq!(sentences("See approx. five items. Done."), vec!["See approx. five items.", "Done."]);
        assert_eq!(sentences("No terminator here"), vec!["No terminator here"]);
        assert!(sentences("   ").is_empty());
    }

    #[test]
    fn terms_use_bigrams_for_cjk_and_words_for_latin() {
        assert_eq!(terms("The models summarize PDFs."), vec!["model", "summarize", "pdf"]);
        assert_eq!(terms("机器学习"), vec!["机器", "器学", "学习"]);
        assert_eq!(terms("用 Vim 编辑"), vec!["用", "vim", "编辑"]);
        // Bigrams of two function characters are dropped.
        assert_eq!(terms("的了"), Vec::<String>::new());
    }

    #[test]
    fn joining_lines_depends_on_script() {
        let mut s = String::from("中文的第一");
        join_pieces(&mut s, "行继续");
        assert_eq!(s, "中文的第一行继续");
        let mut s = String::from("an English");
        join_pieces(&mut s, "line");
        assert_eq!(s, "an English line");
        assert!(cjk_ratio("中文 text") > 0.2 && cjk_ratio("中文 text") < 0.5);
    }
}
