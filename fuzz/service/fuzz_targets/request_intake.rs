//! Fuzz target: the service's request intake (options dictionary, text, descriptor contents),
//! then the summary pipeline on what it accepts. Whatever the input: no panic, no hang, and
//! everything that would go on the bus (the summary, its stats, an error message) is a valid
//! D-Bus string of bounded length; a summary is bounded by its length option.
//!
//! Input layout: byte 0 picks the method (even: SummarizeText, odd: SummarizeFd), bytes 1-2
//! (little-endian) the length of the options part, then the options part, then the text or
//! the file's contents. The options part is used as a D-Bus-encoded `a{sv}` when it is one,
//! else read as a list of (key, type, value) entries, so that most inputs reach the parser
//! with well-formed dictionaries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seqgpt_daemon::config::ServiceConfig;
use seqgpt_daemon::service::bus_string::{BusString, MESSAGE_MAX, TEXT_MAX};
use seqgpt_daemon::service::errors::ServiceError;
use seqgpt_daemon::service::intake;
use seqgpt_daemon::service::jobs::{stats_dict, Source};
use seqgpt_daemon::summarize::pipeline::{Ignore, Input, Pipeline, PipelineSettings};
use seqgpt_daemon::summarize::{Cancel, Summary};
use std::collections::HashMap;
use std::sync::OnceLock;
use zbus::zvariant::{self, OwnedValue, Value};

const KEYS: &[&str] = &["pages", "length", "language", "style", "password", "method", "no_cache", "detach", "max_words", "handle_token", "lenght", ""];
const WORDS: &[&str] = &["short", "medium", "long", "auto", "en", "zh", "bullets", "paragraph", "model", "extractive", "2-3", "0", "3-", "1..2", "5-2"];

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime"))
}

fn pipeline() -> &'static Pipeline {
    static P: OnceLock<Pipeline> = OnceLock::new();
    P.get_or_init(|| {
        let mut settings = PipelineSettings::default();
        settings.pdf_limits.max_stream_bytes = 4 << 20;
        settings.pdf_limits.max_document_bytes = 16 << 20;
        settings.pdf_limits.max_operators_per_page = 200_000;
        settings.pdf_limits.max_glyphs_per_page = 100_000;
        Pipeline::new(None, None, settings)
    })
}

/// Options from their structured reading: entries of (key byte, type byte, value bytes).
fn structured(mut b: &[u8]) -> HashMap<String, OwnedValue> {
    let mut out = HashMap::new();
    while b.len() >= 3 {
        let key = KEYS[b[0] as usize % KEYS.len()].to_string();
        let (ty, arg) = (b[1], b[2]);
        b = &b[3..];
        let value = match ty % 6 {
            0 => Value::from(WORDS[arg as usize % WORDS.len()]),
            1 => Value::from(u32::from(arg)),
            2 => Value::from(arg % 2 == 1),
            3 => Value::from(-(i32::from(arg))),
            4 => {
                let n = (arg as usize).min(b.len());
                let s = String::from_utf8_lossy(&b[..n]).into_owned();
                b = &b[n..];
                Value::from(s)
            }
            _ => Value::Value(Box::new(Value::from(WORDS[arg as usize % WORDS.len()]))),
        };
        if let Ok(v) = OwnedValue::try_from(value) {
            out.insert(key, v);
        }
    }
    out
}

fn options(blob: &[u8]) -> HashMap<String, OwnedValue> {
    let ctxt = zvariant::serialized::Context::new_dbus(zvariant::LE, 0);
    let data = zvariant::serialized::Data::new(blob, ctxt);
    match data.deserialize::<HashMap<String, OwnedValue>>() {
        Ok((d, _)) => d,
        Err(_) => structured(blob),
    }
}

fn memfd_with(bytes: &[u8]) -> std::os::fd::OwnedFd {
    let name = std::ffi::CString::new("fuzz").unwrap();
    // SAFETY: memfd_create with a NUL-terminated name returns a new descriptor or -1.
    let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    assert!(raw >= 0, "memfd_create");
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let mut f = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    std::io::Write::write_all(&mut f, bytes).unwrap();
    f.into()
}

fn check_error(e: &ServiceError) {
    assert!(!e.message.contains('\0'), "NUL in {:?}", e.message);
    assert!(e.message.len() <= MESSAGE_MAX);
}

fn check_summary(s: &Summary) {
    let text = BusString::text(&s.text);
    assert!(!text.contains('\0'));
    // The medium length is about 1000 weighted characters (long: 2200); with "…" and
    // separators a summary stays well under 16 KiB whatever the input.
    assert!(s.text.len() < 16 << 10 && text.len() <= TEXT_MAX, "a summary of {} bytes", s.text.len());
    for (k, v) in stats_dict(s) {
        if let Ok(s) = String::try_from(v) {
            assert!(!s.contains('\0'), "NUL in stat {k}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let split = (3 + u16::from_le_bytes([data[1], data[2]]) as usize).min(data.len());
    let (blob, body) = (&data[3..split], &data[split..]);
    let opts = options(blob);
    let limits = ServiceConfig { max_text_bytes: 1 << 20, max_pdf_bytes: 1 << 20, ..ServiceConfig::default() };
    let request = if data[0] % 2 == 0 {
        intake::text(String::from_utf8_lossy(body).into_owned(), &opts, &limits)
    } else {
        intake::fd(memfd_with(body), &opts, &limits)
    };
    let request = match request {
        Ok(r) => r,
        Err(e) => return check_error(&e),
    };
    let input = match request.source {
        Source::Text(t) => Input::Text(t),
        Source::Pdf(file) => match file.read_all(limits.max_pdf_bytes) {
            Ok(bytes) => Input::Pdf { bytes, permit: None },
            Err(e) => return check_error(&e),
        },
    };
    let result = runtime().block_on(pipeline().summarize(input, &request.options.summary, &mut Ignore, &Cancel::new()));
    match result {
        Ok(s) => check_summary(&s),
        Err(e) => check_error(&ServiceError::from(e)),
    }
});
