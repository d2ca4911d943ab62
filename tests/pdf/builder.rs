//! A tiny PDF writer for the tests: objects as hand-written bytes, a classic xref table, and
//! helpers for the usual one-page documents. Shared by tests/pdf_*.rs through `#[path]`.
#![allow(dead_code)]

use std::io::Write;

#[derive(Default)]
pub struct Pdf {
    objs: Vec<Option<Vec<u8>>>,
}

impl Pdf {
    pub fn new() -> Self {
        Pdf::default()
    }

    /// Reserve an object number to fill later with [`Pdf::set`].
    pub fn reserve(&mut self) -> u32 {
        self.objs.push(None);
        self.objs.len() as u32
    }

    pub fn set(&mut self, n: u32, body: impl AsRef<[u8]>) {
        self.objs[n as usize - 1] = Some(body.as_ref().to_vec());
    }

    pub fn add(&mut self, body: impl AsRef<[u8]>) -> u32 {
        let n = self.reserve();
        self.set(n, body);
        n
    }

    /// A stream object; `dict` is the inside of the dictionary without /Length.
    pub fn stream(&mut self, dict: &str, data: &[u8]) -> u32 {
        let mut body = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
        body.extend_from_slice(data);
        body.extend_from_slice(b"\nendstream");
        self.add(body)
    }

    /// A FlateDecode stream.
    pub fn flate_stream(&mut self, dict: &str, data: &[u8]) -> u32 {
        let z = zlib(data);
        self.stream(&format!("{dict} /Filter /FlateDecode"), &z)
    }

    /// Serialise with `root` as /Root.
    pub fn finish(&self, root: u32) -> Vec<u8> {
        let mut out = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
        let mut offsets = Vec::new();
        for (i, o) in self.objs.iter().enumerate() {
            offsets.push(out.len());
            writeln!(out, "{} 0 obj", i + 1).unwrap();
            out.extend_from_slice(o.as_deref().unwrap_or(b"null"));
            out.extend_from_slice(b"\nendobj\n");
        }
        let xref = out.len();
        write!(out, "xref\n0 {}\n0000000000 65535 f \n", self.objs.len() + 1).unwrap();
        for o in offsets {
            writeln!(out, "{o:010} 00000 n ").unwrap();
        }
        write!(
            out,
            "trailer\n<< /Size {} /Root {root} 0 R /ID [<00112233445566778899aabbccddeeff> <00112233445566778899aabbccddeeff>] >>\nstartxref\n{xref}\n%%EOF\n",
            self.objs.len() + 1
        )
        .unwrap();
        out
    }
}

pub fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A document whose pages are given as (content, resources dictionary source).
pub fn doc_with_pages(pdf: &mut Pdf, pages: &[(Vec<u8>, String)]) -> Vec<u8> {
    let pages_id = pdf.reserve();
    let mut kids = Vec::new();
    for (content, resources) in pages {
        let c = pdf.stream("", content);
        let p = pdf.add(format!(
            "<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 612 792] /Resources {resources} /Contents {c} 0 R >>"
        ));
        kids.push(format!("{p} 0 R"));
    }
    pdf.set(pages_id, format!("<< /Type /Pages /Kids [{}] /Count {} >>", kids.join(" "), kids.len()));
    let root = pdf.add(format!("<< /Type /Catalog /Pages {pages_id} 0 R >>"));
    pdf.finish(root)
}

/// A one-page document: `font` is the font dictionary source, used as /F1.
pub fn one_page(font: &str, content: &[u8]) -> Vec<u8> {
    let mut pdf = Pdf::new();
    let f = pdf.add(font);
    doc_with_pages(&mut pdf, &[(content.to_vec(), format!("<< /Font << /F1 {f} 0 R >> >>"))])
}

/// A one-page document with a Helvetica /F1 (WinAnsi) showing `content`.
pub fn helvetica_page(content: &[u8]) -> Vec<u8> {
    one_page("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>", content)
}

/// The text of all pages, or the error.
pub fn text(pdf: &[u8]) -> Result<String, seqgpt_pdf::PdfError> {
    text_with(pdf, &seqgpt_pdf::ExtractOptions::default())
}

pub fn text_with(pdf: &[u8], opts: &seqgpt_pdf::ExtractOptions) -> Result<String, seqgpt_pdf::PdfError> {
    let d = seqgpt_pdf::extract_text(pdf, opts)?;
    Ok(d.pages.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\x0c"))
}

/// Whitespace-normalised text: words separated by single spaces.
pub fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
