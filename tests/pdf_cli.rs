//! `seqgpt extract-text`: output format, page selection, exit status and error line.

mod common;

#[path = "pdf/builder.rs"]
mod builder;

use builder::*;

fn write_tmp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("seqgpt-pdf-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = common::program(env!("CARGO_BIN_EXE_seqgpt")).arg("extract-text").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn three_pages() -> Vec<u8> {
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let res = format!("<< /Font << /F1 {font} 0 R >> >>");
    let pages: Vec<(Vec<u8>, String)> =
        (1..=3).map(|i| (format!("BT /F1 12 Tf 72 700 Td (page {i}) Tj ET").into_bytes(), res.clone())).collect();
    doc_with_pages(&mut pdf, &pages)
}

#[test]
fn form_feed_after_each_page_and_page_ranges() {
    let p = write_tmp("three.pdf", &three_pages());
    let (rc, out, err) = run(&[p.as_os_str()]);
    assert_eq!((rc, err.as_str()), (0, ""));
    assert_eq!(out, "page 1\n\n\x0cpage 2\n\n\x0cpage 3\n\n\x0c");
    let (rc, out, _) = run(&[p.as_os_str(), "--pages".as_ref(), "2-3".as_ref()]);
    assert_eq!(rc, 0);
    assert_eq!(out, "page 2\n\n\x0cpage 3\n\n\x0c");
    let (rc, out, _) = run(&[p.as_os_str(), "--pages".as_ref(), "3".as_ref()]);
    assert_eq!((rc, out.as_str()), (0, "page 3\n\n\x0c"));
}

#[test]
fn failures_exit_non_zero_with_one_line() {
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("notpdf.pdf", b"just text".to_vec(), "invalid PDF"),
        ("image.pdf", {
            let mut pdf = Pdf::new();
            let img = pdf.stream("/Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8", &[0]);
            doc_with_pages(&mut pdf, &[(b"q 9 0 0 9 0 0 cm /I Do Q".to_vec(), format!("<< /XObject << /I {img} 0 R >> >>"))])
        }, "no text layer"),
    ];
    for (name, bytes, expect) in cases {
        let p = write_tmp(name, &bytes);
        let (rc, out, err) = run(&[p.as_os_str()]);
        assert_ne!(rc, 0, "{name}");
        assert_eq!(out, "", "{name}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.starts_with("seqgpt: ") && err.contains(expect), "{name}: {err}");
    }
    // Its own file: the other test reads three.pdf while this one runs in parallel.
    let p = write_tmp("three-out-of-range.pdf", &three_pages());
    let (rc, _, err) = run(&[p.as_os_str(), "--pages".as_ref(), "7-9".as_ref()]);
    assert_ne!(rc, 0);
    assert!(err.contains("invalid page range"), "{err}");
    let (rc, _, _) = run(&["/nonexistent/file.pdf".as_ref()]);
    assert_ne!(rc, 0);
}
