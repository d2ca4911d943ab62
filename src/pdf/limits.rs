//! Resource limits, and the per-document budget that enforces the byte limits while decoding.

use super::PdfError;
use lopdf::{DecompressError, Error as LoError, Stream};

/// Caps that keep a hostile PDF from exhausting memory or time. Every cap that is hit turns
/// into [`PdfError::TooLarge`] naming the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest input file accepted, in bytes.
    pub max_file_bytes: usize,
    /// Most bytes any single stream may decode to (content streams, Form XObjects, CMaps, font
    /// programs, and object/xref streams while loading). Enforced while decoding.
    pub max_stream_bytes: usize,
    /// Most bytes all decoded streams of one document may add up to.
    pub max_document_bytes: usize,
    /// Most pages a document may have.
    pub max_pages: u32,
    /// Deepest nesting of Form XObjects (a form drawing a form drawing ...).
    pub max_xobject_depth: u32,
    /// Most content-stream operators executed for one page, counting those of its forms.
    pub max_operators_per_page: u64,
    /// Most glyphs shown on one page.
    pub max_glyphs_per_page: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 1 << 30,
            max_stream_bytes: 64 << 20,
            max_document_bytes: 512 << 20,
            max_pages: 50_000,
            max_xobject_depth: 12,
            max_operators_per_page: 4_000_000,
            max_glyphs_per_page: 1_000_000,
        }
    }
}

/// Tracks the decoded bytes of one document against [`Limits`].
#[derive(Debug)]
pub(crate) struct DecodeBudget {
    per_stream: usize,
    doc_limit: usize,
    used: usize,
}

impl DecodeBudget {
    pub(crate) fn new(limits: &Limits) -> Self {
        DecodeBudget { per_stream: limits.max_stream_bytes, doc_limit: limits.max_document_bytes, used: 0 }
    }

    /// Count bytes decoded outside [`DecodeBudget::decode`] (e.g. while lopdf loaded the file).
    pub(crate) fn charge(&mut self, bytes: usize) -> Result<(), PdfError> {
        self.used = self.used.saturating_add(bytes);
        if self.used > self.doc_limit {
            return Err(self.doc_error());
        }
        Ok(())
    }

    fn doc_error(&self) -> PdfError {
        PdfError::TooLarge(format!(
            "the document's streams decode to more than {} bytes (limit max_document_bytes)",
            self.doc_limit
        ))
    }

    /// Decode a stream's filters, never producing more than the per-stream cap or what is left
    /// of the per-document cap. Undecodable data (an unknown filter, corrupt data) gives
    /// `Ok(None)`: the caller skips the stream.
    pub(crate) fn decode(&mut self, stream: &Stream) -> Result<Option<Vec<u8>>, PdfError> {
        let left = self.doc_limit.saturating_sub(self.used);
        let cap = self.per_stream.min(left);
        match stream.decompressed_content_with_limit(cap) {
            Ok(data) => {
                self.charge(data.len())?;
                Ok(Some(data))
            }
            Err(LoError::Decompress(DecompressError::MemoryLimitExceeded { .. })) => {
                if cap < self.per_stream {
                    Err(self.doc_error())
                } else {
                    Err(PdfError::TooLarge(format!(
                        "a stream decodes to more than {} bytes (limit max_stream_bytes; decompression bomb?)",
                        self.per_stream
                    )))
                }
            }
            Err(_) => Ok(None),
        }
    }
}
