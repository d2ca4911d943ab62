//! Hostile and damaged input: every case gets its specific error (or its text), never a panic,
//! a hang or a memory blow-up.

#[path = "pdf/builder.rs"]
mod builder;

use builder::*;
use seqgpt_pdf::{extract_text, ExtractOptions, Limits, PageStatus, PdfError};

fn opts_with(limits: Limits) -> ExtractOptions {
    ExtractOptions { limits, ..Default::default() }
}

#[test]
fn not_a_pdf() {
    assert!(matches!(text(b"hello, world"), Err(PdfError::Invalid(_))));
    assert!(matches!(text(b""), Err(PdfError::Invalid(_))));
    assert!(matches!(text(b"%PDF-1.4\n"), Err(PdfError::Invalid(_))));
}

/// A five-page document whose page objects come after all the content streams (as in
/// LibreOffice's output), so a cut in the middle loses the pages.
fn late_pages_doc() -> Vec<u8> {
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
    let contents: Vec<u32> =
        (1..=5).map(|i| pdf.stream("", format!("BT /F1 12 Tf 72 700 Td (page {i} text) Tj ET").as_bytes())).collect();
    let pages = pdf.reserve();
    let kids: Vec<u32> = contents
        .iter()
        .map(|c| {
            pdf.add(format!(
                "<< /Type /Page /Parent {pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 {font} 0 R >> >> /Contents {c} 0 R >>"
            ))
        })
        .collect();
    let kids_src: Vec<String> = kids.iter().map(|k| format!("{k} 0 R")).collect();
    pdf.set(pages, format!("<< /Type /Pages /Kids [{}] /Count 5 >>", kids_src.join(" ")));
    let root = pdf.add(format!("<< /Type /Catalog /Pages {pages} 0 R >>"));
    pdf.finish(root)
}

#[test]
fn truncated_files() {
    let full = late_pages_doc();
    assert_eq!(words(&text(&full).unwrap()), "page 1 text page 2 text page 3 text page 4 text page 5 text");
    // Cut inside the content streams: no page object survives.
    let cut = &full[..full.len() * 40 / 100];
    match text(cut) {
        Err(PdfError::Invalid(m)) => assert!(m.contains("truncated"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Cut after the third page object: the xref is lost, three pages are recovered, and the
    // document says it was repaired.
    let third = full.windows(14).enumerate().filter(|(_, w)| w == b"/Type /Page /P").nth(2).map(|(i, _)| i).unwrap();
    let cut = &full[..third + 200];
    let d = extract_text(cut, &ExtractOptions::default()).unwrap();
    assert_eq!(d.pages.len(), 3);
    assert!(!d.warnings.is_empty());
    assert_eq!(words(&d.pages[2].text), "page 3 text");
}

#[test]
fn streams_that_end_without_an_end_of_line_are_read() {
    // As a 2005 VTeX wrote them: "obj<<", ">>stream" and " endstream" (a space where the
    // end of line belongs), with a sound cross-reference table.
    let full = late_pages_doc();
    let replace = |bytes: &[u8], from: &[u8], to: &[u8]| -> Vec<u8> {
        let mut out = bytes.to_vec();
        let mut i = 0;
        while i + from.len() <= out.len() {
            if &out[i..i + from.len()] == from {
                out[i..i + from.len()].copy_from_slice(to);
                i += from.len();
            } else {
                i += 1;
            }
        }
        out
    };
    let odd = replace(&replace(&full, b"\nendstream", b" endstream"), b"obj\n<<", b"obj <<");
    assert!(extract_text(&full, &ExtractOptions::default()).unwrap().warnings.is_empty());
    let d = extract_text(&odd, &ExtractOptions::default()).unwrap();
    assert_eq!(d.pages.len(), 5);
    assert_eq!(words(&d.pages[4].text), "page 5 text");
    assert!(d.warnings.iter().all(|w| !w.contains("damaged")), "{:?}", d.warnings);
}

#[test]
fn broken_xref_offsets_are_repaired() {
    let full = helvetica_page(b"BT /F1 12 Tf 72 700 Td (still here) Tj ET");
    // Shift every object by inserting a comment after the header.
    let nl = full.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut shifted = full[..nl].to_vec();
    shifted.extend_from_slice(b"%xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n");
    shifted.extend_from_slice(&full[nl..]);
    let d = extract_text(&shifted, &ExtractOptions::default()).unwrap();
    assert_eq!(words(&d.pages[0].text), "still here");
    assert!(!d.warnings.is_empty());
    // startxref pointing past the end of the file.
    let s = String::from_utf8_lossy(&full).into_owned();
    let i = s.rfind("startxref\n").unwrap() + "startxref\n".len();
    let j = i + s[i..].find('\n').unwrap();
    let bogus = format!("{}999999999{}", &s[..i], &s[j..]);
    assert_eq!(words(&text(bogus.as_bytes()).unwrap()), "still here");
}

fn encrypted(user: &str) -> Vec<u8> {
    let plain = helvetica_page(b"BT /F1 12 Tf 72 700 Td (secret text) Tj ET");
    let mut doc = lopdf::Document::load_mem(&plain).unwrap();
    let version = lopdf::EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password: user,
        key_length: 128,
        permissions: lopdf::Permissions::all(),
    };
    let state = lopdf::EncryptionState::try_from(version).unwrap();
    doc.encrypt(&state).unwrap();
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    assert!(!out.windows(11).any(|w| w == b"secret text"), "content must be encrypted");
    out
}

#[test]
fn encrypted_with_empty_user_password_just_opens() {
    assert_eq!(words(&text(&encrypted("")).unwrap()), "secret text");
}

#[test]
fn encrypted_with_a_user_password() {
    let pdf = encrypted("pw123");
    assert_eq!(text(&pdf), Err(PdfError::PasswordRequired));
    let wrong = ExtractOptions { password: Some("nope".into()), ..Default::default() };
    assert_eq!(text_with(&pdf, &wrong), Err(PdfError::WrongPassword));
    let user = ExtractOptions { password: Some("pw123".into()), ..Default::default() };
    assert_eq!(words(&text_with(&pdf, &user).unwrap()), "secret text");
    let owner = ExtractOptions { password: Some("owner".into()), ..Default::default() };
    assert_eq!(words(&text_with(&pdf, &owner).unwrap()), "secret text");
}

fn image_xobject(pdf: &mut Pdf) -> u32 {
    pdf.stream("/Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8", &[0, 255, 255, 0])
}

#[test]
fn image_only_document_has_no_text_layer() {
    let mut pdf = Pdf::new();
    let img = image_xobject(&mut pdf);
    let bytes = doc_with_pages(
        &mut pdf,
        &[(b"q 500 0 0 700 50 50 cm /Im0 Do Q".to_vec(), format!("<< /XObject << /Im0 {img} 0 R >> >>"))],
    );
    assert_eq!(text(&bytes), Err(PdfError::NoTextLayer));
}

#[test]
fn image_only_page_in_a_text_document() {
    let mut pdf = Pdf::new();
    let img = image_xobject(&mut pdf);
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let res = format!("<< /Font << /F1 {font} 0 R >> /XObject << /Im0 {img} 0 R >> >>");
    let bytes = doc_with_pages(
        &mut pdf,
        &[
            (b"BT /F1 12 Tf 72 700 Td (words) Tj ET".to_vec(), res.clone()),
            (b"q 500 0 0 700 50 50 cm /Im0 Do Q".to_vec(), res),
        ],
    );
    let d = extract_text(&bytes, &ExtractOptions::default()).unwrap();
    assert_eq!(d.pages[1].status, PageStatus::NoTextLayer);
    assert_eq!(d.pages[1].text, "");
    assert_eq!(d.pages_without_text(), vec![2]);
    // Selecting only the image page: no text layer.
    let only2 = ExtractOptions { pages: Some(2..=2), ..Default::default() };
    assert_eq!(text_with(&bytes, &only2), Err(PdfError::NoTextLayer));
}

/// A page whose content stream is `layers` times FlateDecode of `size` bytes (text, then spaces).
fn bomb(size: usize, layers: usize) -> Vec<u8> {
    let mut data = b"BT /F1 24 Tf 72 720 Td (Hello bomb) Tj ET\n".to_vec();
    data.resize(size, b' ');
    for _ in 0..layers {
        data = zlib(&data);
    }
    let filters = vec!["/FlateDecode"; layers];
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let c = pdf.stream(&format!("/Filter [{}]", filters.join(" ")), &data);
    let pages = pdf.reserve();
    let page = pdf.add(format!(
        "<< /Type /Page /Parent {pages} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 {font} 0 R >> >> /Contents {c} 0 R >>"
    ));
    pdf.set(pages, format!("<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>"));
    let root = pdf.add(format!("<< /Type /Catalog /Pages {pages} 0 R >>"));
    pdf.finish(root)
}

#[test]
fn flate_bomb_hits_the_stream_cap() {
    let pdf = bomb(32 << 20, 2);
    assert!(pdf.len() < 100_000);
    let limits = Limits { max_stream_bytes: 4 << 20, ..Limits::default() };
    match text_with(&pdf, &opts_with(limits)) {
        Err(PdfError::TooLarge(m)) => assert!(m.contains("max_stream_bytes"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Under the cap it is just a page.
    assert_eq!(words(&text(&pdf).unwrap()), "Hello bomb");
}

#[test]
fn many_streams_hit_the_document_cap() {
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let mut content = b"BT /F1 12 Tf 72 700 Td (x) Tj ET\n".to_vec();
    content.resize(1 << 20, b' ');
    let pages: Vec<(Vec<u8>, String)> = (0..8).map(|_| (content.clone(), format!("<< /Font << /F1 {font} 0 R >> >>"))).collect();
    let bytes = doc_with_pages(&mut pdf, &pages);
    let limits = Limits { max_document_bytes: 5 << 20, ..Limits::default() };
    match text_with(&bytes, &opts_with(limits)) {
        Err(PdfError::TooLarge(m)) => assert!(m.contains("max_document_bytes"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn deep_and_cyclic_form_xobjects() {
    // A chain of 40 nested forms: over the depth limit.
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let mut inner = pdf.stream(
        &format!("/Type /XObject /Subtype /Form /BBox [0 0 600 800] /Resources << /Font << /F1 {font} 0 R >> >>"),
        b"BT /F1 12 Tf 72 700 Td (deep) Tj ET",
    );
    for _ in 0..40 {
        inner = pdf.stream(
            &format!("/Type /XObject /Subtype /Form /BBox [0 0 600 800] /Resources << /XObject << /X {inner} 0 R >> >>"),
            b"/X Do",
        );
    }
    let bytes = doc_with_pages(&mut pdf, &[(b"/X Do".to_vec(), format!("<< /XObject << /X {inner} 0 R >> >>"))]);
    match text(&bytes) {
        Err(PdfError::TooLarge(m)) => assert!(m.contains("max_xobject_depth"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A form that draws itself (and its sibling twice): the cycle is cut, the text is there.
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let me = pdf.reserve();
    let mut body = format!("<< /Type /XObject /Subtype /Form /BBox [0 0 600 800] /Resources << /Font << /F1 {font} 0 R >> /XObject << /Me {me} 0 R >> >> /Length 43 >>\nstream\n").into_bytes();
    body.extend_from_slice(b"BT /F1 12 Tf 72 700 Td (loop) Tj ET /Me Do\n");
    body.extend_from_slice(b"\nendstream");
    pdf.set(me, body);
    let bytes = doc_with_pages(&mut pdf, &[(b"/Me Do /Me Do".to_vec(), format!("<< /XObject << /Me {me} 0 R >> >>"))]);
    assert!(words(&text(&bytes).unwrap()).starts_with("loop"));
}

#[test]
fn exponential_form_fanout_hits_the_operator_cap() {
    // Each level draws the next one 4 times: 4^12 leaf executions without the cap.
    let mut pdf = Pdf::new();
    let mut inner = pdf.stream("/Type /XObject /Subtype /Form /BBox [0 0 1 1]", b"0 0 m 1 1 l S");
    for _ in 0..11 {
        inner = pdf.stream(
            &format!("/Type /XObject /Subtype /Form /BBox [0 0 1 1] /Resources << /XObject << /X {inner} 0 R >> >>"),
            b"/X Do /X Do /X Do /X Do",
        );
    }
    let bytes = doc_with_pages(&mut pdf, &[(b"/X Do".to_vec(), format!("<< /XObject << /X {inner} 0 R >> >>"))]);
    let start = std::time::Instant::now();
    match text(&bytes) {
        Err(PdfError::TooLarge(m)) => assert!(m.contains("max_operators_per_page"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(start.elapsed().as_secs() < 30);
}

#[test]
fn huge_page_counts_and_page_tree_cycles() {
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let res = format!("<< /Font << /F1 {font} 0 R >> >>");
    let pages: Vec<(Vec<u8>, String)> = (0..150).map(|i| (format!("BT /F1 9 Tf 9 9 Td ({i}) Tj ET").into_bytes(), res.clone())).collect();
    let bytes = doc_with_pages(&mut pdf, &pages);
    let limits = Limits { max_pages: 100, ..Limits::default() };
    match text_with(&bytes, &opts_with(limits)) {
        Err(PdfError::TooLarge(m)) => assert!(m.contains("max_pages"), "{m}"),
        other => panic!("{other:?}"),
    }
    // /Count lies and the tree contains itself: the walk ends, the one page is found.
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let c = pdf.stream("", b"BT /F1 12 Tf 72 700 Td (only page) Tj ET");
    let pages = pdf.reserve();
    let page = pdf.add(format!("<< /Type /Page /Parent {pages} 0 R /Resources << /Font << /F1 {font} 0 R >> >> /Contents {c} 0 R >>"));
    pdf.set(pages, format!("<< /Type /Pages /Kids [{page} 0 R {pages} 0 R {pages} 0 R] /Count 2000000000 >>"));
    let root = pdf.add(format!("<< /Type /Catalog /Pages {pages} 0 R >>"));
    let d = extract_text(&pdf.finish(root), &ExtractOptions::default()).unwrap();
    assert_eq!(d.page_count, 1);
    assert_eq!(words(&d.pages[0].text), "only page");
}

#[test]
fn page_ranges() {
    let pdf = helvetica_page(b"BT /F1 12 Tf 72 700 Td (one) Tj ET");
    for r in [2..=3, 0..=1, std::ops::RangeInclusive::new(3, 2)] {
        let o = ExtractOptions { pages: Some(r), ..Default::default() };
        assert!(matches!(text_with(&pdf, &o), Err(PdfError::InvalidPageRange(_))));
    }
    let o = ExtractOptions { pages: Some(1..=99), ..Default::default() };
    assert_eq!(words(&text_with(&pdf, &o).unwrap()), "one");
}

#[test]
fn garbage_content_and_objects_do_not_panic() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let tokens: [&[u8]; 24] = [
        b"BT ", b"ET ", b"Tf ", b"/F1 ", b"12 ", b"-3.5 ", b"(ab\\) ", b"<4142> ", b"[ ", b"] ", b"TJ ", b"Tj ", b"Td ",
        b"Tm ", b"cm ", b"q ", b"Q ", b"Do ", b"/X ", b"BI ", b"ID \xff\x00 EI ", b"<< ", b">> ", b"1e308 ",
    ];
    for _ in 0..200 {
        let mut content = Vec::new();
        for _ in 0..(rnd() % 200) {
            content.extend_from_slice(tokens[(rnd() % tokens.len() as u64) as usize]);
        }
        let pdf = helvetica_page(&content);
        let _ = text(&pdf);
        // And the whole file mangled.
        let mut bytes = pdf.clone();
        for _ in 0..8 {
            let i = (rnd() % bytes.len() as u64) as usize;
            bytes[i] = rnd() as u8;
        }
        let _ = text(&bytes);
        let cut = (rnd() % bytes.len() as u64) as usize;
        let _ = text(&bytes[..cut]);
    }
}

#[test]
fn scattered_glyphs_lay_out_in_bounded_time() {
    // 60,000 one-glyph segments at pseudo-random places, and 60,000 on one baseline spaced far
    // apart: the layout must stay near-linear.
    let mut content = b"BT /F1 4 Tf ".to_vec();
    let mut seed = 12345u64;
    for _ in 0..60_000 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let x = (seed >> 33) % 600;
        let y = (seed >> 13) % 780;
        content.extend_from_slice(format!("1 0 0 1 {x} {y} Tm (a) Tj ").as_bytes());
    }
    for y in [400, 399] {
        content.extend_from_slice(format!("ET BT /F1 0.001 Tf 0 {y} Td ").as_bytes());
        for _ in 0..30_000 {
            content.extend_from_slice(b"(b) Tj 0.01 0 Td ");
        }
    }
    content.extend_from_slice(b"ET");
    let pdf = helvetica_page(&content);
    let start = std::time::Instant::now();
    let t = text(&pdf).unwrap();
    assert!(t.contains('a') && t.contains('b'));
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
}

#[test]
fn deep_nesting_fits_a_small_thread_stack() {
    // Arrays and dictionaries nested to lopdf's limit in an object and in a content stream, read
    // on a thread with tokio's default 2 MiB stack.
    let deep_obj = format!("{}1{}", "[".repeat(99), "]".repeat(99));
    let deep_dict = format!("{}1{}", "<< /A ".repeat(99), " >>".repeat(99));
    let mut content = b"BT /F1 12 Tf 72 700 Td (ok) Tj ET ".to_vec();
    content.extend_from_slice(format!("{} TJ {} BDC EMC", "[".repeat(5000), "<< /P ".repeat(5000)).as_bytes());
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let junk = pdf.add(format!("<< /Deep {deep_obj} /Deeper {deep_dict} >>"));
    let bytes = doc_with_pages(
        &mut pdf,
        &[(content, format!("<< /Font << /F1 {font} 0 R >> /Junk {junk} 0 R >>"))],
    );
    let t = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || text(&bytes))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(words(&t.unwrap()), "ok");
}
