//! The extractor's error type: one variant per category the daemon reports.

/// Why a PDF could not be turned into text. Messages are one line and name the problem.
///
/// The daemon maps the variants to its D-Bus errors: `Invalid` -> InvalidPdf,
/// `PasswordRequired` / `WrongPassword` / `UnsupportedEncryption` -> Encrypted,
/// `NoTextLayer` -> NoText, `TooLarge` -> TooLarge, `InvalidPageRange` -> InvalidArgs.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum PdfError {
    /// Not a PDF, truncated beyond recovery, or a cross-reference table nothing could be
    /// recovered from.
    #[error("invalid PDF: {0}")]
    Invalid(String),
    /// Encrypted, and the empty user password does not open it (no password was given).
    #[error("password required: the PDF is encrypted and opening it needs a password")]
    PasswordRequired,
    /// Encrypted, and the given password opens it neither as user nor as owner password.
    #[error("wrong password: the given password does not open this encrypted PDF")]
    WrongPassword,
    /// Encrypted with a security handler that is not supported (e.g. public-key).
    #[error("unsupported encryption: {0}")]
    UnsupportedEncryption(String),
    /// No selected page has extractable text (e.g. an image-only, scanned document).
    #[error("no text layer: none of the selected pages has extractable text (image-only or scanned PDF?)")]
    NoTextLayer,
    /// A configured limit of [`super::Limits`] was hit.
    #[error("too large: {0}")]
    TooLarge(String),
    /// The requested page range does not select any page of the document.
    #[error("invalid page range: {0}")]
    InvalidPageRange(String),
    /// The caller's cancel flag ([`super::ExtractOptions::cancel`]) was set.
    #[error("cancelled")]
    Cancelled,
}
