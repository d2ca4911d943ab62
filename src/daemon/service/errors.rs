//! The service's D-Bus errors. Their names are part of the API (docs/DBUS.md): clients match
//! on them, so they never change.

use super::bus_string::BusString;
use crate::summarize::SummaryError;
use zbus::message::{Header, Message};
use zbus::names::ErrorName;

/// The service's own error namespace.
pub const ERROR_PREFIX: &str = "org.seqgpt.Summarizer1.Error";

/// What went wrong, one variant per D-Bus error name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The job queue is full: `org.freedesktop.DBus.Error.LimitsExceeded`.
    Busy,
    /// Not allowed (SummarizePath on the system bus, another user's job):
    /// `org.freedesktop.DBus.Error.AccessDenied`.
    AccessDenied,
    /// Malformed options, a bad page range, a descriptor that is not a readable regular file:
    /// `org.freedesktop.DBus.Error.InvalidArgs`.
    InvalidArgs,
    /// SummarizePath: no such file: `org.freedesktop.DBus.Error.FileNotFound`.
    FileNotFound,
    /// SummarizePath: the daemon may not open the file.
    PermissionDenied,
    /// Not a PDF, or damaged beyond repair.
    InvalidPdf,
    /// The PDF is encrypted and the password is missing, wrong, or its encryption unsupported.
    Encrypted,
    /// No extractable text (a scanned, image-only PDF; an empty text).
    NoText,
    /// The input is over a configured limit (file size, pages, decoded streams).
    TooLarge,
    /// The job was cancelled (Cancel, or its client left the bus).
    Cancelled,
    /// The request needs a model and none is loaded.
    ModelUnavailable,
    /// The daemon stopped (SIGTERM) before the job finished.
    ShuttingDown,
    /// Anything else: `org.freedesktop.DBus.Error.Failed`.
    Failed,
}

impl ErrorKind {
    /// The D-Bus error name.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Busy => "org.freedesktop.DBus.Error.LimitsExceeded",
            ErrorKind::AccessDenied => "org.freedesktop.DBus.Error.AccessDenied",
            ErrorKind::InvalidArgs => "org.freedesktop.DBus.Error.InvalidArgs",
            ErrorKind::Failed => "org.freedesktop.DBus.Error.Failed",
            ErrorKind::FileNotFound => "org.freedesktop.DBus.Error.FileNotFound",
            ErrorKind::PermissionDenied => "org.seqgpt.Summarizer1.Error.PermissionDenied",
            ErrorKind::InvalidPdf => "org.seqgpt.Summarizer1.Error.InvalidPdf",
            ErrorKind::Encrypted => "org.seqgpt.Summarizer1.Error.Encrypted",
            ErrorKind::NoText => "org.seqgpt.Summarizer1.Error.NoText",
            ErrorKind::TooLarge => "org.seqgpt.Summarizer1.Error.TooLarge",
            ErrorKind::Cancelled => "org.seqgpt.Summarizer1.Error.Cancelled",
            ErrorKind::ModelUnavailable => "org.seqgpt.Summarizer1.Error.ModelUnavailable",
            ErrorKind::ShuttingDown => "org.seqgpt.Summarizer1.Error.ShuttingDown",
        }
    }

    pub const ALL: [ErrorKind; 13] = [
        ErrorKind::Busy,
        ErrorKind::AccessDenied,
        ErrorKind::InvalidArgs,
        ErrorKind::FileNotFound,
        ErrorKind::PermissionDenied,
        ErrorKind::InvalidPdf,
        ErrorKind::Encrypted,
        ErrorKind::NoText,
        ErrorKind::TooLarge,
        ErrorKind::Cancelled,
        ErrorKind::ModelUnavailable,
        ErrorKind::ShuttingDown,
        ErrorKind::Failed,
    ];
}

/// An error reply: a stable name and a one-line message for people. The message is a
/// [`BusString`]: it often quotes the input (a PDF's own names, an option's value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceError {
    pub kind: ErrorKind,
    pub message: BusString,
}

impl ServiceError {
    pub fn new(kind: ErrorKind, message: impl AsRef<str>) -> Self {
        ServiceError { kind, message: BusString::message(message.as_ref()) }
    }

    pub fn invalid_args(message: impl AsRef<str>) -> Self {
        Self::new(ErrorKind::InvalidArgs, message)
    }

    pub fn access_denied(message: impl AsRef<str>) -> Self {
        Self::new(ErrorKind::AccessDenied, message)
    }

    pub fn name(&self) -> &'static str {
        self.kind.name()
    }
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

impl std::error::Error for ServiceError {}

impl zbus::DBusError for ServiceError {
    fn create_reply(&self, call: &Header<'_>) -> zbus::Result<Message> {
        Message::error(call, self.name())?.build(&(&self.message,))
    }

    fn name(&self) -> ErrorName<'_> {
        ErrorName::from_static_str_unchecked(self.kind.name())
    }

    fn description(&self) -> Option<&str> {
        Some(self.message.as_str())
    }
}

impl From<zbus::Error> for ServiceError {
    fn from(e: zbus::Error) -> Self {
        match e {
            zbus::Error::Variant(v) => ServiceError::invalid_args(v.to_string()),
            other => ServiceError::new(ErrorKind::Failed, other.to_string()),
        }
    }
}

impl From<zbus::fdo::Error> for ServiceError {
    fn from(e: zbus::fdo::Error) -> Self {
        ServiceError::new(ErrorKind::Failed, e.to_string())
    }
}

impl From<SummaryError> for ServiceError {
    fn from(e: SummaryError) -> Self {
        let kind = match &e {
            SummaryError::InvalidPdf(_) => ErrorKind::InvalidPdf,
            SummaryError::Encrypted(_) => ErrorKind::Encrypted,
            SummaryError::NoText(_) => ErrorKind::NoText,
            SummaryError::TooLarge(_) => ErrorKind::TooLarge,
            SummaryError::InvalidArgs(_) => ErrorKind::InvalidArgs,
            SummaryError::ModelUnavailable(_) => ErrorKind::ModelUnavailable,
            SummaryError::Cancelled => ErrorKind::Cancelled,
            SummaryError::ShuttingDown => ErrorKind::ShuttingDown,
            SummaryError::Internal(_) => ErrorKind::Failed,
        };
        let message = match e {
            SummaryError::Cancelled => "the job was cancelled".to_string(),
            other => other.to_string(),
        };
        ServiceError::new(kind, message)
    }
}

/// Property getters must return `zbus::fdo::Error`; access checks there use AccessDenied.
impl From<ServiceError> for zbus::fdo::Error {
    fn from(e: ServiceError) -> Self {
        let message = e.message.into_string();
        match e.kind {
            ErrorKind::AccessDenied => zbus::fdo::Error::AccessDenied(message),
            ErrorKind::InvalidArgs => zbus::fdo::Error::InvalidArgs(message),
            ErrorKind::Busy => zbus::fdo::Error::LimitsExceeded(message),
            _ => zbus::fdo::Error::Failed(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_and_distinct() {
        let names: std::collections::BTreeSet<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), ErrorKind::ALL.len());
        assert_eq!(ErrorKind::Busy.name(), "org.freedesktop.DBus.Error.LimitsExceeded");
        assert_eq!(ErrorKind::Encrypted.name(), format!("{ERROR_PREFIX}.Encrypted"));
        let e: ServiceError = SummaryError::NoText("empty".into()).into();
        assert_eq!((e.name(), e.message.as_str()), ("org.seqgpt.Summarizer1.Error.NoText", "empty"));
    }

    #[test]
    fn messages_are_bus_strings() {
        let e: ServiceError = SummaryError::Encrypted("filter /Evil\0Handler".into()).into();
        assert!(!e.message.contains('\0'));
        let e = ServiceError::invalid_args("x".repeat(1 << 20));
        assert!(e.message.len() <= super::super::bus_string::MESSAGE_MAX);
    }
}
