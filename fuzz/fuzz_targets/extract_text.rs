//! Fuzz target: any bytes through extract_text must return (Ok or Err), never panic, hang or
//! blow up memory. Limits are lowered so that one input stays fast.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seqgpt_pdf::{extract_text, ExtractOptions, Limits};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_stream_bytes: 4 << 20,
        max_document_bytes: 16 << 20,
        max_pages: 2_000,
        max_operators_per_page: 200_000,
        max_glyphs_per_page: 100_000,
        ..Limits::default()
    };
    let opts = ExtractOptions { limits, ..Default::default() };
    if let Ok(doc) = extract_text(data, &opts) {
        for p in &doc.pages {
            assert!(p.number >= 1 && p.number <= doc.page_count);
        }
    }
    let with_password = ExtractOptions { password: Some("pw".into()), pages: Some(2..=3), ..opts };
    let _ = extract_text(data, &with_password);
});
