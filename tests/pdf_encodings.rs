//! One test per code -> Unicode path of the extractor, each on a small PDF built here.

#[path = "pdf/builder.rs"]
mod builder;

use builder::*;

#[test]
fn win_ansi_core14_font_without_widths() {
    // Helvetica without /Widths: spaces come from the core-14 metrics.
    let pdf = helvetica_page(b"BT /F1 12 Tf 72 700 Td (Hello world \\223quoted\\224 caf\\351 \\226 dash) Tj ET");
    assert_eq!(words(&text(&pdf).unwrap()), "Hello world \u{201c}quoted\u{201d} caf\u{e9} \u{2013} dash");
}

#[test]
fn mac_roman_encoding() {
    let pdf = one_page(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /MacRomanEncoding >>",
        b"BT /F1 12 Tf 72 700 Td (\\216t\\216 \\245) Tj ET",
    );
    assert_eq!(words(&text(&pdf).unwrap()), "\u{e9}t\u{e9} \u{2022}");
}

#[test]
fn differences_with_glyph_names() {
    let pdf = one_page(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Foo /FirstChar 65 /LastChar 70 /Widths [500 500 500 500 500 500]
           /Encoding << /Type /Encoding /BaseEncoding /StandardEncoding
              /Differences [65 /uni4E2D /f_i /quotedblleft /a.sc /u1F600 /uni00410042] >> >>",
        b"BT /F1 12 Tf 72 700 Td (ABCDEF) Tj ET",
    );
    assert_eq!(words(&text(&pdf).unwrap()), "\u{4e2d}fi\u{201c}a\u{1f600}AB");
}

#[test]
fn standard_encoding_is_the_default_for_type1() {
    // No /Encoding: StandardEncoding, where 0x27 is quoteright and 0x60 quoteleft.
    let pdf = one_page("<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman >>", b"BT /F1 12 Tf 72 700 Td (\\140it\\047s) Tj ET");
    assert_eq!(words(&text(&pdf).unwrap()), "\u{2018}it\u{2019}s");
}

#[test]
fn symbol_font_builtin_encoding() {
    let pdf = one_page("<< /Type /Font /Subtype /Type1 /BaseFont /Symbol >>", b"BT /F1 12 Tf 72 700 Td (abg) Tj ET");
    assert_eq!(words(&text(&pdf).unwrap()), "\u{3b1}\u{3b2}\u{3b3}");
}

#[test]
fn tounicode_wins_over_encoding() {
    // lopdf's own extract_text lets /Encoding win; ToUnicode must come first.
    let mut pdf = Pdf::new();
    let tu = pdf.stream(
        "",
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap
1 begincodespacerange <00> <FF> endcodespacerange
2 beginbfchar <41> <005A> <42> <00660066> endbfchar
endcmap CMapName currentdict /CMap defineresource pop end end",
    );
    let f = pdf.add(format!(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding /ToUnicode {tu} 0 R >>"
    ));
    let bytes = doc_with_pages(
        &mut pdf,
        &[(b"BT /F1 12 Tf 72 700 Td (ABC) Tj ET".to_vec(), format!("<< /Font << /F1 {f} 0 R >> >>"))],
    );
    assert_eq!(words(&text(&bytes).unwrap()), "ZffC");
}

/// A Type0 font with Identity-H, /DW 1000, an optional ToUnicode stream and CIDSystemInfo.
fn type0_doc(encoding: &str, ordering: &str, tounicode: Option<&[u8]>, content: &[u8], w: &str) -> Vec<u8> {
    let mut pdf = Pdf::new();
    let tu = tounicode.map(|t| pdf.stream("", t));
    let desc = pdf.add(format!(
        "<< /Type /Font /Subtype /CIDFontType0 /BaseFont /Song /CIDSystemInfo << /Registry (Adobe) /Ordering ({ordering}) /Supplement 4 >> /DW 1000 /W [{w}] >>"
    ));
    let tu = tu.map(|t| format!("/ToUnicode {t} 0 R")).unwrap_or_default();
    let f = pdf.add(format!(
        "<< /Type /Font /Subtype /Type0 /BaseFont /Song /Encoding {encoding} /DescendantFonts [{desc} 0 R] {tu} >>"
    ));
    doc_with_pages(&mut pdf, &[(content.to_vec(), format!("<< /Font << /F1 {f} 0 R >> >>"))])
}

#[test]
fn identity_h_with_tounicode_multibyte_and_surrogates() {
    let cmap = b"begincmap 1 begincodespacerange <0000> <FFFF> endcodespacerange
3 beginbfchar <0001> <4E2D> <0002> <D840DC00> <0003> <00660069> endbfchar
1 beginbfrange <0010> <0012> <6587> endbfrange endcmap";
    let pdf = type0_doc("/Identity-H", "Identity", Some(cmap), b"BT /F1 12 Tf 72 700 Td <0001000200030010001100 12> Tj ET", "");
    assert_eq!(words(&text(&pdf).unwrap()), "\u{4e2d}\u{20000}fi\u{6587}\u{6588}\u{6589}");
}

#[test]
fn identity_h_without_tounicode_uses_the_collection() {
    // Adobe-GB1: CID 4559 is U+4E2D, CIDs 34/35 are 'A'/'B' (half-width, /W 500).
    let pdf = type0_doc("/Identity-H", "GB1", None, b"BT /F1 12 Tf 72 700 Td <11CF00220023> Tj ET", "34 35 500");
    assert_eq!(words(&text(&pdf).unwrap()), "\u{4e2d}AB");
}

#[test]
fn predefined_gbk_euc_cmap() {
    // GBK-EUC-H: one-byte ASCII and two-byte GBK codes, CID -> Unicode through Adobe-GB1.
    let pdf = type0_doc("/GBK-EUC-H", "GB1", None, b"BT /F1 12 Tf 72 700 Td (Hi\\326\\320\\316\\304) Tj ET", "");
    assert_eq!(words(&text(&pdf).unwrap()), "Hi\u{4e2d}\u{6587}");
}

#[test]
fn predefined_unicode_cmap() {
    let pdf = type0_doc("/UniGB-UCS2-H", "GB1", None, b"BT /F1 12 Tf 72 700 Td <4E2D6587> Tj ET", "");
    assert_eq!(words(&text(&pdf).unwrap()), "\u{4e2d}\u{6587}");
}

#[test]
fn vertical_japanese_reads_top_to_bottom_right_to_left() {
    // UniJIS-UCS2-V: two columns of vertical text; the right column is read first.
    let pdf = type0_doc(
        "/UniJIS-UCS2-V",
        "Japan1",
        None,
        b"BT /F1 12 Tf 300 700 Td <30423044> Tj ET BT /F1 12 Tf 280 700 Td <30463048> Tj ET",
        "",
    );
    let t = text(&pdf).unwrap();
    assert_eq!(words(&t), "\u{3042}\u{3044} \u{3046}\u{3048}", "{t:?}");
}

#[test]
fn type3_font_with_differences() {
    let pdf = one_page(
        "<< /Type /Font /Subtype /Type3 /FontBBox [0 0 10 10] /FontMatrix [0.01 0 0 0.01 0 0]
           /CharProcs << >> /Encoding << /Type /Encoding /Differences [97 /a /b 44 /, 35 /#2323] >>
           /FirstChar 35 /LastChar 98 /Widths [50 0 0 0 0 0 0 0 0 50 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
              0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 50 50] >>",
        b"BT /F1 10 Tf 72 700 Td (ab,#) Tj ET",
    );
    assert_eq!(words(&text(&pdf).unwrap()), "ab,#");
}

#[test]
fn embedded_type1_builtin_encoding() {
    // No /Encoding: the font program's own encoding (code 65 draws /B, 66 draws /fi).
    let mut pdf = Pdf::new();
    let prog = b"%!PS-AdobeFont-1.0: Test\n/Encoding 256 array\n0 1 255 {1 index exch /.notdef put} for\ndup 65 /B put\ndup 66 /fi put\nreadonly def\ncurrentfile eexec\n";
    let ff = pdf.stream(&format!("/Length1 {} /Length2 0 /Length3 0", prog.len()), prog);
    let fd = pdf.add(format!("<< /Type /FontDescriptor /FontName /Test /Flags 4 /FontFile {ff} 0 R >>"));
    let f = pdf.add(format!(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Test /FontDescriptor {fd} 0 R /FirstChar 65 /LastChar 66 /Widths [600 600] >>"
    ));
    let bytes = doc_with_pages(
        &mut pdf,
        &[(b"BT /F1 12 Tf 72 700 Td (AB) Tj ET".to_vec(), format!("<< /Font << /F1 {f} 0 R >> >>"))],
    );
    assert_eq!(words(&text(&bytes).unwrap()), "B\u{fb01}");
}

/// A bare CFF font whose encoding maps 0x41 -> glyph 1 ("B") and 0x42 -> glyph 2 ("C").
fn tiny_cff() -> Vec<u8> {
    let mut cff = vec![1, 0, 4, 1]; // header
    cff.extend_from_slice(&[0, 1, 1, 1, 2, b'F']); // Name INDEX: "F"
    // Top DICT: charset (15), Encoding (16), CharStrings (17) as 16-bit operands (28 hi lo).
    let top_dict_len = 3 * 4;
    let top_index_len = 2 + 1 + 2 + top_dict_len;
    let strings_at = cff.len() + top_index_len;
    let gsubrs_at = strings_at + 2;
    let charset_at = gsubrs_at + 2;
    let encoding_at = charset_at + 1 + 2 * 2;
    let charstrings_at = encoding_at + 1 + 1 + 2;
    let op = |v: usize, o: u8| [28, (v >> 8) as u8, v as u8, o];
    cff.extend_from_slice(&[0, 1, 1, 1, 1 + top_dict_len as u8]);
    cff.extend_from_slice(&op(charset_at, 15));
    cff.extend_from_slice(&op(encoding_at, 16));
    cff.extend_from_slice(&op(charstrings_at, 17));
    cff.extend_from_slice(&[0, 0]); // String INDEX (empty)
    cff.extend_from_slice(&[0, 0]); // Global Subr INDEX (empty)
    cff.extend_from_slice(&[0, 0, 35, 0, 36]); // charset format 0: GID1 = SID 35 "B", GID2 = SID 36 "C"
    cff.extend_from_slice(&[0, 2, 0x41, 0x42]); // encoding format 0
    cff.extend_from_slice(&[0, 3, 1, 1, 2, 3, 4, 14, 14, 14]); // CharStrings INDEX: 3 x endchar
    cff
}

#[test]
fn embedded_cff_builtin_encoding() {
    let mut pdf = Pdf::new();
    let ff = pdf.stream("/Subtype /Type1C", &tiny_cff());
    let fd = pdf.add(format!("<< /Type /FontDescriptor /FontName /F /Flags 4 /FontFile3 {ff} 0 R >>"));
    let f = pdf.add(format!(
        "<< /Type /Font /Subtype /Type1 /BaseFont /F /FontDescriptor {fd} 0 R /FirstChar 65 /LastChar 66 /Widths [600 600] >>"
    ));
    let bytes = doc_with_pages(
        &mut pdf,
        &[(b"BT /F1 12 Tf 72 700 Td (AB) Tj ET".to_vec(), format!("<< /Font << /F1 {f} 0 R >> >>"))],
    );
    assert_eq!(words(&text(&bytes).unwrap()), "BC");
}

#[test]
fn spaces_from_positions_tj_and_word_spacing() {
    // TJ gaps, Td moves and Tw (no space characters at all in the first two lines) make words;
    // a small kern does not.
    let pdf = helvetica_page(
        b"BT /F1 10 Tf 72 700 Td [(Hel) -20 (lo) -300 (world)] TJ
          0 -14 Td (one) Tj 25 0 Td (two) Tj
          0 -14 Td 5 Tw (wide words) Tj ET",
    );
    assert_eq!(text(&pdf).unwrap(), "Hello world\none two\nwide words\n\n");
}

#[test]
fn lines_paragraphs_and_hyphenation() {
    let pdf = helvetica_page(
        b"BT /F1 10 Tf 12 TL 72 700 Td (A para-) Tj T* (graph goes on) Tj 0 -40 Td (Next block) Tj ET",
    );
    assert_eq!(text(&pdf).unwrap(), "A paragraph goes on\n\nNext block\n\n");
}

#[test]
fn no_spaces_between_cjk_characters() {
    // Spaced-out CJK (justified): no spaces; the gap to Latin text keeps one.
    let pdf = type0_doc("/UniGB-UCS2-H", "GB1", None, b"BT /F1 12 Tf 72 700 Td [<4E2D> -300 <6587> -300 <0041>] TJ ET", "");
    assert_eq!(text(&pdf).unwrap(), "\u{4e2d}\u{6587} A\n\n");
}

#[test]
fn form_xobjects_nested() {
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
    let inner = pdf.stream(
        &format!("/Type /XObject /Subtype /Form /BBox [0 0 500 500] /Resources << /Font << /F9 {font} 0 R >> >>"),
        b"BT /F9 10 Tf 0 0 Td (inner form) Tj ET",
    );
    let outer = pdf.stream(
        &format!("/Type /XObject /Subtype /Form /BBox [0 0 500 500] /Matrix [1 0 0 1 0 -20] /Resources << /XObject << /In {inner} 0 R >> >>"),
        b"/In Do",
    );
    let bytes = doc_with_pages(
        &mut pdf,
        &[(
            b"BT /F1 10 Tf 72 700 Td (page text) Tj ET q 1 0 0 1 72 700 cm /Out Do Q".to_vec(),
            format!("<< /Font << /F1 {font} 0 R >> /XObject << /Out {outer} 0 R >> >>"),
        )],
    );
    assert_eq!(words(&text(&bytes).unwrap()), "page text inner form");
}

#[test]
fn rotated_text_and_page_range() {
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
    let res = format!("<< /Font << /F1 {font} 0 R >> >>");
    let bytes = doc_with_pages(
        &mut pdf,
        &[
            (b"BT /F1 10 Tf 72 700 Td (first page) Tj ET".to_vec(), res.clone()),
            (b"BT /F1 10 Tf 0 1 -1 0 300 200 Tm (going up) Tj ET".to_vec(), res.clone()),
            (b"BT /F1 10 Tf 72 700 Td (third page) Tj ET".to_vec(), res),
        ],
    );
    let opts = seqgpt_pdf::ExtractOptions { pages: Some(2..=3), ..Default::default() };
    let d = seqgpt_pdf::extract_text(&bytes, &opts).unwrap();
    assert_eq!(d.page_count, 3);
    let got: Vec<_> = d.pages.iter().map(|p| (p.number, words(&p.text))).collect();
    assert_eq!(got, vec![(2, "going up".to_string()), (3, "third page".to_string())]);
}

#[test]
fn actual_text_replaces_the_glyphs() {
    // An inline property list (UTF-16BE with BOM) and a named one in /Properties (PDFDocEncoding).
    let mut pdf = Pdf::new();
    let font = pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let props = pdf.add("<< /ActualText (fl) >>");
    let bytes = doc_with_pages(
        &mut pdf,
        &[(
            b"BT /F1 12 Tf 72 700 Td (Stra) Tj /Span << /ActualText <FEFF00DF> >> BDC (ss) Tj EMC (e) Tj
              0 -14 Td /Span /P1 BDC (\\256) Tj EMC (ow) Tj ET"
                .to_vec(),
            format!("<< /Font << /F1 {font} 0 R >> /Properties << /P1 {props} 0 R >> >>"),
        )],
    );
    assert_eq!(text(&bytes).unwrap(), "Stra\u{df}e\nflow\n\n");
}

/// A TrueType font with only a `cmap` table (format 4) mapping 'A'..'C' to glyphs 5..7.
fn tiny_truetype() -> Vec<u8> {
    let mut f = vec![0, 1, 0, 0, 0, 1, 0, 16, 0, 0, 0, 0];
    f.extend_from_slice(b"cmap");
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 28, 0, 0, 0, 0]);
    f.extend_from_slice(&[0, 0, 0, 1, 0, 3, 0, 1, 0, 0, 0, 12]);
    let delta = (5i32 - 0x41) as i16 as u16;
    for w in [4u16, 32, 0, 4, 4, 1, 0, 0x43, 0xffff, 0, 0x41, 0xffff, delta, 1, 0, 0] {
        f.extend_from_slice(&w.to_be_bytes());
    }
    f
}

#[test]
fn cid_truetype_without_tounicode_uses_the_font_cmap() {
    for cid_to_gid in ["/Identity", "STREAM"] {
        let mut pdf = Pdf::new();
        let ff = pdf.stream("", &tiny_truetype());
        let map = if cid_to_gid == "STREAM" {
            // CIDs 1, 2, 3 -> glyphs 7, 6, 5
            let s = pdf.stream("", &[0, 0, 0, 7, 0, 6, 0, 5]);
            format!("{s} 0 R")
        } else {
            cid_to_gid.to_string()
        };
        let fd = pdf.add(format!("<< /Type /FontDescriptor /FontName /T /Flags 4 /FontFile2 {ff} 0 R >>"));
        let cid = pdf.add(format!(
            "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /T /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor {fd} 0 R /CIDToGIDMap {map} >>"
        ));
        let f = pdf.add(format!("<< /Type /Font /Subtype /Type0 /BaseFont /T /Encoding /Identity-H /DescendantFonts [{cid} 0 R] >>"));
        let content: &[u8] = if cid_to_gid == "STREAM" { b"BT /F1 12 Tf 72 700 Td <000300020001> Tj ET" } else { b"BT /F1 12 Tf 72 700 Td <000500060007> Tj ET" };
        let bytes = doc_with_pages(&mut pdf, &[(content.to_vec(), format!("<< /Font << /F1 {f} 0 R >> >>"))]);
        assert_eq!(words(&text(&bytes).unwrap()), "ABC", "{cid_to_gid}");
    }
}
