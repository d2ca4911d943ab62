//! [`BusString`]: the only string type the service puts on the bus.
//!
//! A D-Bus message whose string holds a NUL byte is invalid: dbus-daemon disconnects the
//! sender, and the daemon exits with its bus gone. Text reaches the bus from many places that
//! nobody controls (PDF error messages naming a file's own objects, model output, cached
//! entries, echoed options), so every string member, property, signal argument and error
//! message is built through this type: NUL and the other characters a strict D-Bus peer may
//! refuse become U+FFFD, and the length is capped (on a character boundary, with "…").

use serde::{Serialize, Serializer};
use zbus::zvariant::{self, Signature, Type, Value};

/// Error messages, names, option echoes: one readable line, not a document.
pub const MESSAGE_MAX: usize = 1024;
/// Summaries and streamed text: bounded by the length option already; this is the backstop.
pub const TEXT_MAX: usize = 256 << 10;

/// A string that is valid to send on D-Bus, of bounded length.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BusString(String);

impl BusString {
    /// `s` for a message (at most [`MESSAGE_MAX`] bytes).
    pub fn message(s: &str) -> Self {
        Self::capped(s, MESSAGE_MAX)
    }

    /// `s` for a text (at most [`TEXT_MAX`] bytes).
    pub fn text(s: &str) -> Self {
        Self::capped(s, TEXT_MAX)
    }

    /// `s` with the characters D-Bus refuses replaced, cut to at most `max` bytes.
    pub fn capped(s: &str, max: usize) -> Self {
        const ELLIPSIS: &str = "…";
        let mut out = String::with_capacity(s.len().min(max));
        let mut truncated = false;
        for c in s.chars() {
            let c = if refused(c) { char::REPLACEMENT_CHARACTER } else { c };
            if out.len() + c.len_utf8() > max {
                truncated = true;
                break;
            }
            out.push(c);
        }
        if truncated {
            while !out.is_empty() && out.len() + ELLIPSIS.len() > max {
                out.pop();
            }
            if out.len() + ELLIPSIS.len() <= max {
                out.push_str(ELLIPSIS);
            }
        }
        BusString(out)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// NUL (invalid in every D-Bus string) and the Unicode noncharacters, which older D-Bus
/// implementations reject as invalid UTF-8.
fn refused(c: char) -> bool {
    let u = c as u32;
    u == 0 || (0xFDD0..=0xFDEF).contains(&u) || (u & 0xFFFE) == 0xFFFE
}

impl std::ops::Deref for BusString {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for BusString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for BusString {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for BusString {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl Serialize for BusString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl Type for BusString {
    const SIGNATURE: &'static Signature = &Signature::Str;
}

impl From<BusString> for Value<'static> {
    fn from(s: BusString) -> Self {
        Value::from(s.0)
    }
}

impl From<&BusString> for Value<'static> {
    fn from(s: &BusString) -> Self {
        Value::from(s.0.clone())
    }
}

impl TryFrom<BusString> for zvariant::OwnedValue {
    type Error = zvariant::Error;
    fn try_from(s: BusString) -> Result<Self, Self::Error> {
        zvariant::OwnedValue::try_from(Value::from(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_and_noncharacters_are_replaced() {
        assert_eq!(BusString::message("a\0b"), "a\u{FFFD}b");
        assert_eq!(BusString::message("x\u{FFFE}\u{FFFF}\u{FDD0}\u{10FFFF}y").as_str(), "x\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}y");
        assert_eq!(BusString::message("plain text, 中文"), "plain text, 中文");
    }

    #[test]
    fn length_is_capped_on_a_character_boundary() {
        let s = BusString::capped(&"中".repeat(100), 20);
        assert!(s.len() <= 20, "{}", s.len());
        assert!(s.ends_with('…'));
        // Exactly at the cap: no ellipsis.
        let s = BusString::capped("abcdefghij", 10);
        assert_eq!(s, "abcdefghij");
        let s = BusString::capped("abcdefghijk", 10);
        assert_eq!(s, "abcdefg…");
        assert!(BusString::message(&"x".repeat(1 << 20)).len() <= MESSAGE_MAX);
    }

    #[test]
    fn serializes_as_a_plain_string() {
        let ctxt = zvariant::serialized::Context::new_dbus(zvariant::LE, 0);
        let a = zvariant::to_bytes(ctxt, &BusString::message("hi\0")).unwrap();
        let b = zvariant::to_bytes(ctxt, &"hi\u{FFFD}").unwrap();
        assert_eq!(a.bytes(), b.bytes());
        assert_eq!(<BusString as Type>::SIGNATURE, &Signature::Str);
    }
}
