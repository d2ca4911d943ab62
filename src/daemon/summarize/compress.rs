//! What a summary leaves out of a sentence it quotes: the bracketed citations and
//! cross-references that point into the document or its bibliography ("(Knaus 2013)", "[15]",
//! "(see Section 3)", "(Table 1)"; "(?)" where the typesetter could not resolve one), and its
//! bracketed examples ("(e.g., a data frame)"). Out of context they say nothing, or less than
//! another sentence would for the words they take from the budget. Everything else in a sentence stays as the document has it; the
//! sentence's anchor still covers the whole of it.

use std::borrow::Cow;

/// Longest bracketed group (characters) that may be a citation or a cross-reference.
const MAX_GROUP_CHARS: usize = 160;

/// `sentence` as a summary quotes it: without its citations, cross-references and bracketed
/// examples, or as it is when it has none (or when nothing would be left of it).
pub fn summary_text(sentence: &str) -> Cow<'_, str> {
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let bytes = sentence.as_bytes();
    let mut i = 0;
    // Open parentheses before byte `counted` (kept as the scan goes: each byte counted once).
    let (mut depth, mut counted) = (0usize, 0usize);
    while i < bytes.len() {
        let (open, close) = match bytes[i] {
            b'(' => (b'(', b')'),
            b'[' => (b'[', b']'),
            _ => {
                i += 1;
                continue;
            }
        };
        // The group's end: the first closing bracket, with no other opening one before it.
        let rest = &sentence[i + 1..];
        let Some(len) = rest.find(|c: char| c as u32 == u32::from(close) || c as u32 == u32::from(open)) else { break };
        if bytes[i + 1 + len] != close || rest[..len].chars().nth(MAX_GROUP_CHARS).is_some() {
            i += 1;
            continue;
        }
        let inner = rest[..len].trim();
        let end = i + 1 + len + 1;
        let before = &sentence[..i];
        for &b in &bytes[counted..i] {
            match b {
                b'(' => depth += 1,
                b')' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        counted = i;
        // Inside another parenthesis ("(as in [3])") a citation is that one's to keep or drop.
        let nested = depth > 0;
        let droppable = !nested
            && (unresolved(inner)
                || if open == b'[' { numeric_citation(inner) && !names_it(before) } else { author_year(inner) || pointer_or_example(inner) });
        // A group glued to a word ("f(x)", "x[1]") is part of it.
        let glued = before.chars().next_back().is_some_and(|c| !c.is_whitespace());
        if droppable && !glued {
            cuts.push((i, end));
        }
        i = end;
    }
    if cuts.is_empty() {
        return Cow::Borrowed(sentence);
    }
    let mut out = String::with_capacity(sentence.len());
    let mut from = 0;
    for (start, end) in cuts {
        out.push_str(sentence[from..start].trim_end());
        from = end;
        // "x (see below), y" -> "x, y"; "x (Table 1) y" -> "x y".
        let next = sentence[from..].chars().next();
        if next.is_some_and(|c| c.is_whitespace()) && !out.is_empty() {
            out.push(' ');
            from += sentence[from..].len() - sentence[from..].trim_start().len();
        }
    }
    out.push_str(&sentence[from..]);
    let out = out.trim().to_string();
    if out.split_whitespace().count() < 3 {
        return Cow::Borrowed(sentence);
    }
    Cow::Owned(out)
}

/// "?", "??", "?, ?": a citation or a reference that the typesetter could not resolve (it
/// prints question marks). Empty brackets stay: "returns [] when" names an empty list.
fn unresolved(inner: &str) -> bool {
    inner.contains('?') && inner.chars().all(|c| matches!(c, '?' | ',' | ';') || c.is_whitespace())
}

/// "15", "3, 7", "3-5", "12–14, 20": the numbers of a numbered bibliography.
fn numeric_citation(inner: &str) -> bool {
    !inner.is_empty()
        && inner.split([',', ';']).all(|part| {
            let part = part.trim();
            let mut ends = part.splitn(2, ['-', '–']);
            ends.all(|n| {
                let n = n.trim();
                (1..=3).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit())
            })
        })
        // "[0, 1]" is an interval more often than two references.
        && !inner.split([',', ';']).any(|p| p.trim() == "0")
}

/// Whether the text before a numbered citation makes it a noun of the sentence ("as shown in
/// [3]"), so that it cannot go.
fn names_it(before: &str) -> bool {
    let word = before.split_whitespace().next_back().unwrap_or("").to_ascii_lowercase();
    matches!(word.as_str(), "" | "in" | "of" | "see" | "by" | "from" | "and" | "or" | "to" | "at" | "on" | "with" | "cf." | "cf" | "ref." | "reference" | "references" | "interval" | "range")
}

/// "Knaus 2013", "Laparra et al., 2015", "see Smith and Jones 1999; Lee 2001a": each part a
/// capitalized name and a year, a few words in all.
fn author_year(inner: &str) -> bool {
    !inner.is_empty()
        && inner.split(';').all(|part| {
            let words: Vec<&str> = part.split_whitespace().collect();
            let words = match words.first().map(|w| w.to_ascii_lowercase()) {
                Some(w) if matches!(w.as_str(), "see" | "cf." | "e.g." | "e.g.," | "also") => &words[1..],
                _ => &words[..],
            };
            let (Some(first), Some(last)) = (words.first(), words.last()) else { return false };
            let year = last.trim_end_matches([',', '.']).trim_end_matches(|c: char| c.is_ascii_lowercase());
            words.len() >= 2
                && words.len() <= 8
                && first.starts_with(|c: char| c.is_uppercase())
                && year.len() == 4
                && (year.starts_with("19") || year.starts_with("20"))
                && year.bytes().all(|b| b.is_ascii_digit())
        })
}

/// "see below", "see Section 3 for details", "cf. Table 2", "Figure 4", "described in section
/// 4.8": a pointer to another part of the document; or "e.g., a data frame": an example.
fn pointer_or_example(inner: &str) -> bool {
    let words: Vec<String> = inner.split_whitespace().map(|w| w.to_lowercase()).collect();
    let Some(first) = words.first() else { return false };
    let pointer = |w: &str| {
        let w = w.trim_end_matches([',', '.', ':']);
        matches!(
            w,
            "section" | "sections" | "sec" | "secs" | "chapter" | "chapters" | "chap" | "table" | "tables" | "tab"
                | "figure" | "figures" | "fig" | "figs" | "appendix" | "appendices" | "page" | "pages" | "p" | "pp"
                | "listing" | "equation" | "equations" | "eq" | "eqs" | "below" | "above" | "later" | "footnote" | "§"
        ) || w.starts_with('§')
    };
    let numbered = |k: usize| words.get(k + 1).is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit() || c.is_uppercase()));
    match first.trim_end_matches([',', ':']) {
        "see" | "cf." | "cf" | "compare" | "e.g." | "e.g" | "eg." => words.len() <= 12,
        _ => words.len() <= 6 && words.iter().enumerate().any(|(k, w)| pointer(w) && (numbered(k) || matches!(w.as_str(), "below" | "above" | "later"))),
    }
}

#[cfg(test)]
mod tests {
    use super::summary_text;

    #[test]
    fn citations_and_pointers_go() {
        let cases = [
            ("The model was fitted by least squares (Knaus 2013).", "The model was fitted by least squares."),
            ("It extends earlier work (Laparra et al., 2015; Lee 2001a) to images.", "It extends earlier work to images."),
            ("The options (see Section 3 for details) set the layout.", "The options set the layout."),
            ("Both kinds are drawn (Table 1), and colours are kept.", "Both kinds are drawn, and colours are kept."),
            ("Graph drawing is hard [15].", "Graph drawing is hard."),
            ("Graph drawing is hard [3, 7-9] in general.", "Graph drawing is hard in general."),
            ("The package (described in section 4.8) prints tables.", "The package prints tables."),
            ("The commands are listed later (see below).", "The commands are listed later."),
            ("Any table (e.g., a data frame or a matrix) is read.", "Any table is read."),
            ("Graphs are drawn by a spring model (e.g. [3]) in the plane.", "Graphs are drawn by a spring model in the plane."),
            ("The library is a C++ template library (?) with bindings (??).", "The library is a C++ template library with bindings."),
            ("Messages are serialized [?] and sent to the server.", "Messages are serialized and sent to the server."),
            ("The model (Equations 2, 3, and 4) has three parts.", "The model has three parts."),
        ];
        for (input, want) in cases {
            assert_eq!(summary_text(input), want, "{input}");
        }
    }

    #[test]
    fn a_long_text_of_brackets_is_read_once() {
        // Linear in the text: unclosed parentheses and many citations.
        let text = "word [1] and more (see Table 2) here ".repeat(40_000);
        let out = summary_text(&text);
        assert!(!out.contains("[1]") && !out.contains("Table 2") && out.contains("word and more here word"));
        // After a parenthesis left open everything is inside it, and stays.
        let text = "word [1] (a ".repeat(40_000);
        assert_eq!(summary_text(&text).matches("[1]").count(), 40_000 - 1);
    }

    #[test]
    fn content_in_brackets_stays() {
        for s in [
            "As shown in [3], the method converges.",
            "The values lie in [0, 1] by construction.",
            "The function f(x) is smooth (and convex).",
            "The data (assumed to be a data.frame object) are read once.",
            "Smith (2005) drew the first such graphs.",
            "The output (current version is 2.31) is stable.",
            "Use x[1] for the first element.",
            "Call f() with no arguments (or with one)?",
            "The function returns [] when nothing matches, and () is the empty tuple.",
            "Graphs are drawn by a spring model (as in [3]) in the plane.",
            "(see below)",
        ] {
            assert_eq!(summary_text(s), s, "{s}");
        }
    }
}
