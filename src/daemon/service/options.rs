//! The `a{sv}` options of the Summarize* methods.
//!
//! | key        | type    | values                                   | default  |
//! |------------|---------|------------------------------------------|----------|
//! | `pages`    | s or u  | "3", "2-5", "3-" (1-based, inclusive)    | all      |
//! | `length`   | s       | short, medium, long                      | medium   |
//! | `language` | s       | auto, en, zh, ja, ko                     | auto     |
//! | `style`    | s       | paragraph, bullets                       | paragraph|
//! | `password` | s       | the PDF's user or owner password         | none     |
//! | `method`   | s       | auto, model, extractive                  | auto     |
//! | `no_cache` | b       | skip the summary cache                   | false    |
//! | `detach`   | b       | keep the job when the caller disconnects | false    |
//! | `max_words`| u       | the most words of the summary (1-100000) | by length|
//! | `handle_token` | s   | the job's path: `jobs/SENDER/TOKEN` (portal practice) | random |
//! | `annotate_fd` | h    | write the annotated copy of the PDF here ([`super::annotate_fd`]) | none |
//!
//! Unknown keys are ignored and listed in the result's stats (`ignored_options`), so that a
//! newer client works with an older daemon (the practice of the XDG desktop portals); a known
//! key with a wrong type or value is `InvalidArgs`. [`encode`] is [`parse`]'s inverse, for
//! clients ([`super::client`]).
//!
//! Parsed by hand rather than with zvariant's `DeserializeDict`: `pages` takes a string or a
//! number, unknown keys are collected rather than refused, and every error names the key and
//! quotes at most 40 characters of the client's value, which a derived parser cannot do.

use super::annotate_fd::AnnotateTarget;
use super::errors::ServiceError;
use crate::summarize::{Language, Length, MethodChoice, Style, SummaryOptions};
use std::collections::HashMap;
use zbus::zvariant::{OwnedValue, Value};

pub const KEYS: &[&str] =
    &["pages", "length", "language", "style", "password", "method", "no_cache", "detach", "max_words", "handle_token", "annotate_fd"];

/// Unknown keys listed at most, and the characters kept of each: the list goes back to the
/// client, who chose the keys.
const MAX_IGNORED: usize = 32;
const MAX_IGNORED_CHARS: usize = 64;

/// Parsed options: the pipeline's, and the service's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestOptions {
    pub summary: SummaryOptions,
    /// The job survives its caller's disconnection (busctl and gdbus callers disconnect
    /// right after the call).
    pub detach: bool,
    /// `handle_token`: the last element of the job's path (`[A-Za-z0-9_]`, 1-64 characters).
    pub handle_token: Option<String>,
    /// Keys this daemon does not know, sorted (at most 32, each cut to 64 characters).
    pub ignored: Vec<String>,
    /// `annotate_fd`: where the annotated copy of the PDF goes.
    pub annotate_to: Option<AnnotateTarget>,
}

pub fn parse(options: &HashMap<String, OwnedValue>) -> Result<RequestOptions, ServiceError> {
    let mut out = RequestOptions::default();
    // Sorted keys: the first bad one reported is always the same.
    let mut keys: Vec<&String> = options.keys().collect();
    keys.sort();
    for key in keys {
        let value: &Value<'_> = &options[key];
        let value = unwrap_variant(value);
        match key.as_str() {
            "pages" => {
                let range = match value {
                    Value::Str(s) => parse_pages(s.as_str())?,
                    Value::U32(n) => parse_pages(&n.to_string())?,
                    Value::I32(n) if *n > 0 => parse_pages(&n.to_string())?,
                    other => return Err(wrong_type(key, "s (\"A-B\") or u", other)),
                };
                out.summary.pages = Some(range);
            }
            "length" => {
                let s = string(key, value)?;
                out.summary.length = Length::parse(s)
                    .ok_or_else(|| ServiceError::invalid_args(format!("length '{}': expected short, medium or long", echo(s))))?;
            }
            "language" => {
                let s = string(key, value)?;
                out.summary.language = Language::parse(s)
                    .ok_or_else(|| ServiceError::invalid_args(format!("language '{}': expected auto, en, zh, ja or ko", echo(s))))?;
            }
            "style" => {
                let s = string(key, value)?;
                out.summary.style = Style::parse(s)
                    .ok_or_else(|| ServiceError::invalid_args(format!("style '{}': expected paragraph or bullets", echo(s))))?;
            }
            "password" => out.summary.password = Some(string(key, value)?.to_string()),
            "method" => {
                let s = string(key, value)?;
                out.summary.method = MethodChoice::parse(s)
                    .ok_or_else(|| ServiceError::invalid_args(format!("method '{}': expected auto, model or extractive", echo(s))))?;
            }
            "no_cache" => out.summary.no_cache = boolean(key, value)?,
            "max_words" => {
                let n = match value {
                    Value::U32(n) => u64::from(*n),
                    Value::U64(n) => *n,
                    Value::I32(n) if *n > 0 => *n as u64,
                    Value::I64(n) if *n > 0 => *n as u64,
                    Value::U16(n) => u64::from(*n),
                    other => return Err(wrong_type(key, "u", other)),
                };
                if !(1..=100_000).contains(&n) {
                    return Err(ServiceError::invalid_args(format!("max_words {n}: expected 1 to 100000")));
                }
                out.summary.max_words = Some(n as u32);
            }
            "detach" => out.detach = boolean(key, value)?,
            "handle_token" => {
                let token = string(key, value)?;
                let valid = (1..=64).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                if !valid {
                    return Err(ServiceError::invalid_args(format!(
                        "handle_token '{}': expected 1 to 64 characters of A-Z, a-z, 0-9 and _",
                        echo(token)
                    )));
                }
                out.handle_token = Some(token.to_string());
            }
            "annotate_fd" => out.annotate_to = Some(AnnotateTarget::parse(value)?),
            other => {
                if out.ignored.len() < MAX_IGNORED {
                    out.ignored.push(other.chars().take(MAX_IGNORED_CHARS).collect());
                }
            }
        }
    }
    Ok(out)
}

/// The options as a client sends them: only what differs from the defaults, so that a
/// request reads as what was asked.
pub fn encode(options: &RequestOptions) -> HashMap<&'static str, Value<'static>> {
    let (s, defaults) = (&options.summary, SummaryOptions::default());
    let mut out: HashMap<&'static str, Value<'static>> = HashMap::new();
    if let Some(r) = &s.pages {
        let pages = if *r.end() == u32::MAX { format!("{}-", r.start()) } else { format!("{}-{}", r.start(), r.end()) };
        out.insert("pages", Value::from(pages));
    }
    if s.length != defaults.length {
        out.insert("length", Value::from(s.length.as_str()));
    }
    if s.language != defaults.language {
        out.insert("language", Value::from(s.language.as_str()));
    }
    if s.style != defaults.style {
        out.insert("style", Value::from(s.style.as_str()));
    }
    if let Some(p) = &s.password {
        out.insert("password", Value::from(p.clone()));
    }
    if s.method != defaults.method {
        out.insert("method", Value::from(s.method.as_str()));
    }
    if s.no_cache {
        out.insert("no_cache", Value::from(true));
    }
    if let Some(n) = s.max_words {
        out.insert("max_words", Value::from(n));
    }
    if options.detach {
        out.insert("detach", Value::from(true));
    }
    if let Some(t) = &options.handle_token {
        out.insert("handle_token", Value::from(t.clone()));
    }
    if let Some(v) = options.annotate_to.as_ref().and_then(AnnotateTarget::as_value) {
        out.insert("annotate_fd", v);
    }
    out
}

/// "7", "2-5" (also "2..5", "2–5") or "3-" (to the end) as a 1-based inclusive range.
pub fn parse_pages(s: &str) -> Result<std::ops::RangeInclusive<u32>, ServiceError> {
    let bad = || ServiceError::invalid_args(format!("pages '{}': expected N, A-B with 1 <= A <= B, or A-", echo(s)));
    let s = s.trim();
    let (a, b) = match s.split_once(['-', '–']).or_else(|| s.split_once("..")) {
        Some((a, b)) => (a.trim(), b.trim()),
        None => (s, s),
    };
    let a: u32 = a.parse().map_err(|_| bad())?;
    let b: u32 = if b.is_empty() { u32::MAX } else { b.parse().map_err(|_| bad())? };
    if a == 0 || a > b {
        return Err(bad());
    }
    Ok(a..=b)
}

/// A client's value as quoted in an error message: at most 40 characters of it.
fn echo(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn unwrap_variant<'a>(v: &'a Value<'a>) -> &'a Value<'a> {
    match v {
        Value::Value(inner) => unwrap_variant(inner),
        other => other,
    }
}

fn string<'a>(key: &str, v: &'a Value<'a>) -> Result<&'a str, ServiceError> {
    match v {
        Value::Str(s) => Ok(s.as_str()),
        other => Err(wrong_type(key, "s", other)),
    }
}

fn boolean(key: &str, v: &Value<'_>) -> Result<bool, ServiceError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(wrong_type(key, "b", other)),
    }
}

fn wrong_type(key: &str, want: &str, got: &Value<'_>) -> ServiceError {
    ServiceError::invalid_args(format!("option '{key}' must be of type {want}, not {}", got.value_signature()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, Value<'static>)]) -> HashMap<String, OwnedValue> {
        pairs.iter().map(|(k, v)| (k.to_string(), OwnedValue::try_from(v.clone()).unwrap())).collect()
    }

    #[test]
    fn encode_is_parse_inverse() {
        let asked = RequestOptions {
            summary: SummaryOptions {
                pages: Some(2..=u32::MAX),
                length: Length::Long,
                language: Language::Zh,
                style: Style::Bullets,
                password: Some("pw".into()),
                method: MethodChoice::Model,
                no_cache: true,
                max_words: Some(55),
            },
            detach: true,
            handle_token: Some("tok_1".into()),
            ignored: vec![],
            annotate_to: None,
        };
        let (_r, w) = rustix::pipe::pipe().unwrap();
        let target = AnnotateTarget::parse(&Value::Fd(zbus::zvariant::Fd::from(w))).unwrap();
        let with_fd = RequestOptions { annotate_to: Some(target), ..asked.clone() };
        let wire: HashMap<String, OwnedValue> =
            encode(&with_fd).into_iter().map(|(k, v)| (k.to_string(), OwnedValue::try_from(v).unwrap())).collect();
        assert_eq!(wire.len(), KEYS.len());
        let mut back = parse(&wire).unwrap();
        // The descriptor comes back as a descriptor of its own (the daemon's copy).
        assert!(back.annotate_to.take().is_some());
        assert_eq!(back, asked);
        let some = RequestOptions { summary: SummaryOptions { pages: Some(3..=4), ..Default::default() }, ..Default::default() };
        let wire: HashMap<String, OwnedValue> =
            encode(&some).into_iter().map(|(k, v)| (k.to_string(), OwnedValue::try_from(v).unwrap())).collect();
        assert_eq!(wire.len(), 1);
        assert_eq!(parse(&wire).unwrap(), some);
    }

    #[test]
    fn all_options_parse() {
        let o = parse(&opts(&[
            ("pages", Value::from("2-4")),
            ("length", Value::from("short")),
            ("language", Value::from("zh")),
            ("style", Value::from("bullets")),
            ("password", Value::from("pw")),
            ("method", Value::from("extractive")),
            ("no_cache", Value::from(true)),
            ("detach", Value::from(true)),
        ]))
        .unwrap();
        assert_eq!(o.summary.pages, Some(2..=4));
        assert_eq!(o.summary.length, Length::Short);
        assert_eq!(o.summary.language, Language::Zh);
        assert_eq!(o.summary.style, Style::Bullets);
        assert_eq!(o.summary.password.as_deref(), Some("pw"));
        assert_eq!(o.summary.method, MethodChoice::Extractive);
        assert!(o.summary.no_cache && o.detach);
        assert_eq!(parse(&HashMap::new()).unwrap(), RequestOptions::default());
        assert_eq!(parse(&opts(&[("pages", Value::from(3u32))])).unwrap().summary.pages, Some(3..=3));
        assert_eq!(parse(&opts(&[("pages", Value::from("3-"))])).unwrap().summary.pages, Some(3..=u32::MAX));
    }

    #[test]
    fn bad_options_are_invalid_args() {
        for bad in [
            opts(&[("length", Value::from("tiny"))]),
            opts(&[("length", Value::from(3u32))]),
            opts(&[("pages", Value::from("5-2"))]),
            opts(&[("pages", Value::from("0"))]),
            opts(&[("no_cache", Value::from("yes"))]),
            opts(&[("handle_token", Value::from("a/b"))]),
            opts(&[("handle_token", Value::from(""))]),
            opts(&[("handle_token", Value::from("x".repeat(65)))]),
            opts(&[("handle_token", Value::from(7u32))]),
        ] {
            let e = parse(&bad).unwrap_err();
            assert_eq!(e.name(), "org.freedesktop.DBus.Error.InvalidArgs", "{e}");
        }
        // A huge bad value is not echoed whole.
        let huge = "9".repeat(1 << 20);
        let e = parse(&opts(&[("pages", Value::from(huge))])).unwrap_err();
        assert!(e.message.len() < 200, "{}", e.message.len());
    }

    #[test]
    fn unknown_keys_are_ignored_and_listed() {
        let o = parse(&opts(&[("lenght", Value::from("short")), ("zoom", Value::from(2u32)), ("length", Value::from("long"))])).unwrap();
        assert_eq!(o.ignored, vec!["lenght".to_string(), "zoom".to_string()]);
        assert_eq!(o.summary.length, Length::Long);
        // A client choosing many long keys gets a bounded list back.
        let many: Vec<(String, Value<'static>)> = (0..100).map(|i| (format!("{i:03}{}", "k".repeat(200)), Value::from(true))).collect();
        let many: HashMap<String, OwnedValue> = many.into_iter().map(|(k, v)| (k, OwnedValue::try_from(v).unwrap())).collect();
        let o = parse(&many).unwrap();
        assert_eq!(o.ignored.len(), 32);
        assert!(o.ignored.iter().all(|k| k.chars().count() == 64));
    }
}
