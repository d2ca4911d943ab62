//! The request intake: a call's arguments as the client sent them (an options dictionary, a
//! text, a descriptor or a path) checked and turned into a job's [`Source`] and options, or
//! refused with the error the caller gets. Everything here runs before a request takes a
//! place under the limits, and is cheap: sizes are checked before any work, files are looked
//! at before they are read. The fuzz target `fuzz/fuzz_targets/request_intake.rs` drives it.

use super::errors::{ErrorKind, ServiceError};
use super::input::DocumentFile;
use super::jobs::Source;
use super::options::{self, RequestOptions};
use super::limits::ServiceConfig;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::Path;
use zbus::zvariant::OwnedValue;

/// A checked request.
pub struct Request {
    pub source: Source,
    pub options: RequestOptions,
}

/// SummarizeText: a UTF-8 text (form feeds separate pages); no password.
pub fn text(text: String, options: &HashMap<String, OwnedValue>, limits: &ServiceConfig) -> Result<Request, ServiceError> {
    let options = options::parse(options)?;
    if options.summary.password.is_some() {
        return Err(ServiceError::invalid_args("the password option applies to PDFs only"));
    }
    if options.annotate_to.is_some() {
        return Err(ServiceError::invalid_args("the annotate_fd option applies to PDFs only"));
    }
    check_text_size(&text, limits)?;
    Ok(Request { source: Source::Text(text), options })
}

/// SummarizeFd: a readable regular file (or memfd) of at most `max_pdf_bytes`.
pub fn fd(fd: OwnedFd, options: &HashMap<String, OwnedValue>, limits: &ServiceConfig) -> Result<Request, ServiceError> {
    let options = options::parse(options)?;
    let file = DocumentFile::from_fd(fd, limits.max_pdf_bytes)?;
    Ok(Request { source: Source::Pdf(file), options })
}

/// SummarizePath: an absolute path to a regular file (session bus only; the caller checks).
pub fn path(path: &str, options: &HashMap<String, OwnedValue>, limits: &ServiceConfig) -> Result<Request, ServiceError> {
    let options = options::parse(options)?;
    let file = DocumentFile::open_path(Path::new(path), limits.max_pdf_bytes)?;
    Ok(Request { source: Source::Pdf(file), options })
}

/// A text for SummarizeText, Classify or Extract: at most `max_text_bytes`.
pub fn check_text_size(text: &str, limits: &ServiceConfig) -> Result<(), ServiceError> {
    let max = limits.max_text_bytes;
    if text.len() as u64 > max {
        return Err(ServiceError::new(
            ErrorKind::TooLarge,
            format!("the text has {} bytes; this daemon accepts at most {max} ([service] max_text_bytes)", text.len()),
        ));
    }
    Ok(())
}
