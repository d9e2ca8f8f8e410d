//! The crate's one error type.
//!
//! Every message is written for a person or an agent reading `previewError`:
//! it says what was wrong with the document in plain words, never names a
//! host path, and has no trailing period.

use serde::{Deserialize, Serialize};

/// Why a preview or an HTML rendering could not be made.
///
/// The type is serializable because the extraction worker sends it back to
/// the parent process as JSON; the parent hands the same value to its caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExtractError {
    /// The file could not be opened or read from disk.
    #[error("the file could not be read: {0}")]
    Io(String),
    /// The bytes are not a readable document of the type the file name says.
    #[error("the file is not a readable {what} ({detail})")]
    Invalid {
        /// What the file should have been, e.g. "Word document".
        what: String,
        /// What the reader found wrong.
        detail: String,
    },
    /// The document has pages but no text on them: a scan, or text drawn as shapes. Said as an
    /// error so that an empty preview is never mistaken for a blank document.
    #[error("no text layer ({pages} pages): a scanned document, or text drawn as shapes")]
    NoTextLayer {
        /// How many pages the document has.
        pages: usize,
    },
    /// A page was asked for that the document does not have.
    #[error("the document has {pages} pages; there is no page {page}")]
    NoSuchPage {
        /// The page asked for, from 1.
        page: u32,
        /// How many pages the document has.
        pages: u32,
    },
    /// The document is encrypted or password-protected.
    #[error("the document is encrypted or password-protected, so it cannot be previewed")]
    Encrypted,
    /// The document breaks one of the reading limits (zip bomb, XML DTD,
    /// nesting depth, entry count).
    #[error("the document is too large or too complex to read safely: {0}")]
    LimitExceeded(String),
    /// There is no preview of the asked kind for this type of file.
    #[error("{0}")]
    Unsupported(String),
    /// The worker ran past its CPU-time or wall-clock limit.
    #[error("the document took too long to read")]
    TimedOut,
    /// The worker ran out of its address-space limit.
    #[error("the document needs more memory than allowed")]
    OutOfMemory,
    /// The worker wrote more than the output cap.
    #[error("the document produced more preview output than allowed")]
    OutputTooLarge,
    /// The document's structure is nested so deeply that the reader overflowed its stack.
    #[error("the document is nested too deeply to read")]
    TooDeep,
    /// The worker died for another reason (a signal, an abort, a panic that escaped).
    #[error("the document reader crashed on this document")]
    Crashed,
    /// The worker could not be started or answered something unreadable.
    #[error("the document reader could not be run: {0}")]
    Worker(String),
}

impl ExtractError {
    /// A document that is not what its name says, with a short detail.
    pub(crate) fn invalid(what: &str, detail: impl std::fmt::Display) -> Self {
        ExtractError::Invalid {
            what: what.to_owned(),
            detail: short_detail(&detail.to_string()),
        }
    }

    pub(crate) fn limit(detail: impl Into<String>) -> Self {
        ExtractError::LimitExceeded(detail.into())
    }

    pub(crate) fn io(err: &std::io::Error) -> Self {
        // `io::Error`'s Display carries the OS message only, never the path.
        ExtractError::Io(short_detail(&err.to_string()))
    }
}

/// Library messages can be long or multi-line; keep the first line and at
/// most 200 characters so the `previewError` stays readable.
fn short_detail(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    let mut out: String = line.chars().take(200).collect();
    if line.chars().count() > 200 {
        out.push('…');
    }
    if out.is_empty() {
        out.push_str("no detail given");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_plainly() {
        let e = ExtractError::invalid("Word document", "invalid Zip archive: bad\nsecond line");
        assert_eq!(
            e.to_string(),
            "the file is not a readable Word document (invalid Zip archive: bad)"
        );
        assert_eq!(
            ExtractError::TimedOut.to_string(),
            "the document took too long to read"
        );
    }

    #[test]
    fn round_trips_through_json() {
        for e in [
            ExtractError::Encrypted,
            ExtractError::limit("it unpacks to more than 256 MiB"),
            ExtractError::invalid("PDF", "no trailer"),
        ] {
            let json = serde_json::to_string(&e).unwrap();
            let back: ExtractError = serde_json::from_str(&json).unwrap();
            assert_eq!(back, e);
        }
    }

    #[test]
    fn long_details_are_shortened() {
        let e = ExtractError::invalid("PDF", "x".repeat(500));
        let ExtractError::Invalid { detail, .. } = e else {
            panic!("wrong variant")
        };
        assert_eq!(detail.chars().count(), 201);
        assert!(detail.ends_with('…'));
    }
}
