//! `ReadError`: everything that can go wrong reading a table, each naming
//! the file and, where there is one, the 1-based line.

use crate::damage::Damage;
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

    /// A compiled table file that cannot be opened (wrong version, damaged,
    /// hostile): the reason names the byte offset.
    #[error("{}: {source}", .path.display())]
    Image {
        path: PathBuf,
        source: ipfib::image::ImageError,
    },

    /// Reading failed part way through an uncompressed input (or a line
    /// was longer than any table line); `offset` is where the line starts.
    #[error("{}: read error at line {line} (byte {offset}): {source}", .path.display())]
    Read {
        path: PathBuf,
        line: u64,
        offset: u64,
        source: io::Error,
    },

    /// The compressed stream is damaged or truncated; `line` is the line
    /// being read when the decoder failed, `offset` where that line starts in
    /// the decompressed stream. Lines before it may already be garbage (gzip
    /// checks its CRC only at the end of a member), so a bad line in
    /// compressed input is reported as this error when the stream behind it
    /// is damaged.
    #[error(
        "{}: damaged {compression} stream (at line {line}, byte {offset} decompressed): {source}",
        .path.display()
    )]
    DamagedStream {
        path: PathBuf,
        compression: &'static str,
        line: u64,
        offset: u64,
        source: io::Error,
    },

    /// The file is compressed with something we cannot decompress.
    #[error("{}: {compression}-compressed input is not supported", .path.display())]
    UnsupportedCompression {
        path: PathBuf,
        compression: &'static str,
    },

    /// The format cannot be read by this function (MRT and update streams
    /// go through [`load_table`](crate::load_table) or the update readers).
    #[error("format '{format}' is not a line table here; use ipfib_io::load_table")]
    UnsupportedFormat { format: Format },

    /// With `Format::Auto`, the content matched no format we read.
    #[error("{}: unrecognised format; tried {tried}", .path.display())]
    UnknownFormat { path: PathBuf, tried: String },

    /// With `Format::Auto` in a line reader, the input is binary (an MRT dump).
    #[error(
        "{}: input is binary, not a text route table (an MRT dump? use --format mrt or auto)",
        .path.display()
    )]
    Binary { path: PathBuf },

    /// Strict mode: the input is damaged (see [`Damage`]).
    #[error("{}: {damage}", .path.display())]
    Damaged { path: PathBuf, damage: Damage },

    /// One MRT record frames correctly but its body does not parse (strict
    /// mode; otherwise it is skipped and counted).
    #[error(
        "{}: MRT record {record} at byte {offset} (type {entry_type}, subtype {subtype}): {reason}",
        .path.display()
    )]
    BadRecord {
        path: PathBuf,
        record: u64,
        offset: u64,
        entry_type: u16,
        subtype: u16,
        reason: String,
    },

    /// Decoding one MRT record's body panicked (a bug in the decoder,
    /// which is written not to). Caught and handled like [`ReadError::BadRecord`]:
    /// the record is skipped and counted, or in strict mode the read stops
    /// here. `message` is the panic's message.
    #[error(
        "{}: MRT record {record} at byte {offset} (type {entry_type}, subtype {subtype}): the MRT parser panicked: {message}",
        .path.display()
    )]
    ParserPanic {
        path: PathBuf,
        record: u64,
        offset: u64,
        entry_type: u16,
        subtype: u16,
        message: String,
    },

    /// A bad line in a text update stream.
    #[error("{}:{line}: {reason}", .path.display())]
    BadUpdate {
        path: PathBuf,
        line: u64,
        reason: String,
    },

    /// A value policy that the format cannot give (`--peer` on a table
    /// without peers, a peer that is not in the dump).
    #[error("{}: {reason}", .path.display())]
    Policy { path: PathBuf, reason: String },

    /// A MaxMind DB whose layout is unusable (no or bad metadata, a search
    /// tree past the data, a tree that multiplies past the visit bound);
    /// `offset` is a byte of the file.
    #[error("{}: MaxMind DB, byte {offset}: {reason}", .path.display())]
    Mmdb {
        path: PathBuf,
        offset: u64,
        reason: String,
    },

    /// One network of a MaxMind DB whose record is unusable (skipped and
    /// counted, or in strict mode the end of the load); `reason` names the
    /// byte offset.
    #[error("{}: MaxMind DB network {prefix}: {reason}", .path.display())]
    MmdbRecord {
        path: PathBuf,
        prefix: String,
        reason: String,
    },

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

    /// A bad line in a ranges table: an address that does not parse, the
    /// first address after the last, mixed families, no value column, a
    /// broken quote.
    #[error("{}:{line}: {reason} in {text:?}", .path.display())]
    BadRange {
        path: PathBuf,
        line: u64,
        text: String,
        reason: String,
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
    ///
    /// ```
    /// use ipfib_io::{read_routes_from, LoadOptions, ReadError};
    ///
    /// let read = |text: &'static [u8]| read_routes_from(text, "t", &LoadOptions::default());
    /// let err = read(b"10.0.0.0/8 a\n\n10.0.0.0/8 a extra\n").unwrap_err();
    /// assert!(matches!(err, ReadError::ExtraText { ref extra, .. } if extra == "extra"));
    /// assert_eq!(err.line(), Some(3));
    /// let err = read(b"10.0.0.0/8 a\n").and_then(|_| read(b"\x01\x02bin")).err();
    /// assert!(err.is_some_and(|e| e.line().is_none()));
    /// ```
    pub fn line(&self) -> Option<u64> {
        match self {
            ReadError::InvalidUtf8 { line, .. }
            | ReadError::Prefix { line, .. }
            | ReadError::MissingValue { line, .. }
            | ReadError::InvalidValue { line, .. }
            | ReadError::ExtraText { line, .. }
            | ReadError::BadUpdate { line, .. }
            | ReadError::BadRange { line, .. } => Some(*line),
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
