//! `seqgpt extract-text FILE.pdf [--pages A-B] [--password P]`.
//!
//! Prints the text as UTF-8, each page followed by a form feed (pdftotext's convention).
//! Repairs of a damaged file are reported on stderr as warnings; pages whose content is
//! missing from the file make the command fail after printing what could be read.

use seqgpt_pdf::{ExtractOptions, Limits};
use anyhow::{bail, Context};
use std::io::Write;
use std::ops::RangeInclusive;

#[derive(clap::Args, Debug)]
pub struct ExtractTextArgs {
    /// The PDF file to read.
    pub file: std::path::PathBuf,
    /// Pages to extract, 1-based and inclusive: `A-B`, `A-` (to the end) or `A`.
    #[arg(long, value_parser = parse_pages)]
    pub pages: Option<RangeInclusive<u32>>,
    /// Password of an encrypted PDF (user or owner password).
    #[arg(long)]
    pub password: Option<String>,
}

fn parse_pages(s: &str) -> Result<RangeInclusive<u32>, String> {
    let num = |t: &str| t.trim().parse::<u32>().map_err(|_| format!("not a page number: {t:?}"));
    let (a, b) = match s.split_once('-') {
        Some((a, "")) => (num(a)?, u32::MAX),
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let n = num(s)?;
            (n, n)
        }
    };
    if a == 0 || a > b {
        return Err(format!("invalid page range {s:?} (pages are numbered from 1; use A-B with A <= B)"));
    }
    Ok(a..=b)
}

pub fn run(args: ExtractTextArgs) -> anyhow::Result<()> {
    let limits = Limits::default();
    let meta = std::fs::metadata(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    if meta.len() > limits.max_file_bytes as u64 {
        bail!("{}: too large: the file has {} bytes (limit {})", args.file.display(), meta.len(), limits.max_file_bytes);
    }
    let bytes = std::fs::read(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    let opts = ExtractOptions { pages: args.pages, password: args.password, limits, cancel: None };
    let doc = seqgpt_pdf::extract_text(&bytes, &opts).with_context(|| args.file.display().to_string())?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for page in &doc.pages {
        out.write_all(page.text.as_bytes())?;
        out.write_all(b"\x0c")?;
    }
    out.flush()?;
    for w in &doc.warnings {
        eprintln!("seqgpt: warning: {}: {w}", args.file.display());
    }
    let unreadable = doc.unreadable_pages();
    if !unreadable.is_empty() {
        bail!(
            "{}: damaged PDF: {} of {} pages could not be read (their text is missing from the output)",
            args.file.display(),
            unreadable.len(),
            doc.pages.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_pages;

    #[test]
    fn page_ranges() {
        assert_eq!(parse_pages("2-5"), Ok(2..=5));
        assert_eq!(parse_pages("3"), Ok(3..=3));
        assert_eq!(parse_pages("4-"), Ok(4..=u32::MAX));
        assert!(parse_pages("0-2").is_err());
        assert!(parse_pages("5-2").is_err());
        assert!(parse_pages("x").is_err());
    }
}
