//! `ReadError`: everything that can go wrong reading a table, each naming
//! the file and, where there is one, the 1-based line.

use crate::format::Format;
use ipfib::prefix::PrefixError;
use std::io;
use std::path::PathBuf;

/// How many characters of an offending line an error keeps.
pub const MAX_QUOTED_CHARS: usize = 80;

/// Why a table could not be read.
///
/// `path` is the path (or name) as the caller gave it. `line` is 1-based and
/// counts every line, comments and blank lines included. `text` is the
/// offending line, cut to [`MAX_QUOTED_CHARS`] characters (`...` marks a cut).
///
/// Line errors ([`ReadError::line`] is `Some`) concern one line and leave the
/// rest of the file readable; the others end the read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be opened or read (missing, permission, a directory).
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },

    /// Reading failed part way through an uncompressed input.
    #[error("{}: read error at line {line}: {source}", .path.display())]
    Read {
        path: PathBuf,
        line: u64,
        source: io::Error,
    },

    /// The gzip stream is damaged or truncated; `line` is the line being read
    /// when the decoder failed. Lines before it may already be garbage (gzip
    /// checks its CRC only at the end of a member), so a bad line in gzip
    /// input is reported as this error when the stream behind it is damaged.
    #[error("{}: damaged gzip stream (at line {line}): {source}", .path.display())]
    DamagedGzip {
        path: PathBuf,
        line: u64,
        source: io::Error,
    },

    /// The file is compressed with something we cannot decompress yet.
    #[error("{}: {compression}-compressed input is not supported yet", .path.display())]
    UnsupportedCompression {
        path: PathBuf,
        compression: &'static str,
    },

    /// The format was asked for by name but has no reader yet.
    #[error(
        "format '{format}' is not supported yet (it arrives with the MRT/pfx2as reader); \
         use --format text or ipasn"
    )]
    UnsupportedFormat { format: Format },

    /// With `Format::Auto`, the first line is not text (an MRT dump, say).
    #[error(
        "{}: input is binary, not a text route table (an MRT dump? format 'mrt' is not \
         supported yet); use a text or ipasn table",
        .path.display()
    )]
    Binary { path: PathBuf },

    /// The line is not valid UTF-8 (`text` shows it lossily).
    #[error("{}:{line}: line is not valid UTF-8: {text:?}", .path.display())]
    InvalidUtf8 {
        path: PathBuf,
        line: u64,
        text: String,
    },

    /// The first token is not a prefix (or has host bits set).
    #[error("{}:{line}: {source}", .path.display())]
    Prefix {
        path: PathBuf,
        line: u64,
        text: String,
        source: PrefixError,
    },

    /// A prefix with no value after it.
    #[error("{}:{line}: missing value after the prefix in {text:?}", .path.display())]
    MissingValue {
        path: PathBuf,
        line: u64,
        text: String,
    },

    /// The value token is not acceptable for the format.
    #[error("{}:{line}: invalid value {value:?}: {reason}", .path.display())]
    InvalidValue {
        path: PathBuf,
        line: u64,
        text: String,
        value: String,
        reason: &'static str,
    },

    /// More tokens after the value that are not a `#` comment.
    #[error("{}:{line}: unexpected {extra:?} after the value in {text:?}", .path.display())]
    ExtraText {
        path: PathBuf,
        line: u64,
        text: String,
        extra: String,
    },
}

impl ReadError {
    /// The line of a line error: one bad line, after which the rest of the
    /// file can still be read. `None` for errors that end the read.
    pub fn line(&self) -> Option<u64> {
        match self {
            ReadError::InvalidUtf8 { line, .. }
            | ReadError::Prefix { line, .. }
            | ReadError::MissingValue { line, .. }
            | ReadError::InvalidValue { line, .. }
            | ReadError::ExtraText { line, .. } => Some(*line),
            _ => None,
        }
    }
}

/// `text` cut to [`MAX_QUOTED_CHARS`] characters, with `...` marking a cut.
pub(crate) fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => {
            let mut s = text.get(..cut).unwrap_or(text).to_string();
            s.push_str("...");
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_cuts_long_text_on_a_char_boundary() {
        assert_eq!(quote("short"), "short");
        let long = "é".repeat(100);
        let q = quote(&long);
        assert_eq!(q.chars().count(), MAX_QUOTED_CHARS + 3);
        assert!(q.ends_with("..."));
        assert_eq!(
            quote(&"x".repeat(MAX_QUOTED_CHARS)),
            "x".repeat(MAX_QUOTED_CHARS)
        );
    }
}
