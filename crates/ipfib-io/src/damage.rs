//! What a lenient read found wrong: where the input stopped making sense
//! ([`Damage`]) and what it skipped on the way ([`Report`]).

use crate::error::ReadError;
use crate::format::Format;
use std::fmt;

/// Where and why the readable part of an input ends.
///
/// Everything complete before `offset` was read; nothing after it is trusted
/// (a header that breaks framing leaves no way to find the next record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Byte offset in the decompressed stream: the start of the record (MRT)
    /// or line (text) that could not be read whole.
    pub offset: u64,
    /// Complete records (MRT) or lines (text) before `offset`.
    pub records_before: u64,
    pub kind: DamageKind,
    /// The decompressor's complaint, when the compressed stream itself is
    /// damaged or truncated (often the cause of an incomplete record).
    pub stream_error: Option<String>,
}

/// Why reading stopped at [`Damage::offset`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DamageKind {
    /// The input ends inside a 12- or 16-byte MRT common header.
    TruncatedHeader { have: u64, need: u64 },
    /// The input ends inside a record body.
    TruncatedBody { have: u64, need: u64 },
    /// A length field beyond what any real record needs (16 MiB).
    Oversized { length: u64 },
    /// An `_ET` record whose length cannot hold its microsecond field.
    EtLengthTooShort { length: u64 },
    /// A type that RFC 6396 does not define: the framing is lost (garbage,
    /// or a wrong length in the record before).
    UnknownType { entry_type: u16, subtype: u16 },
    /// The decompressor failed in the middle of a line (text formats).
    Stream,
    /// A line longer than any table line can be (text formats), so the
    /// stream is not text.
    LineTooLong { limit: u64 },
}

impl fmt::Display for DamageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DamageKind::TruncatedHeader { have, need } => {
                write!(f, "incomplete MRT header ({have} of {need} bytes)")
            }
            DamageKind::TruncatedBody { have, need } => {
                write!(f, "incomplete MRT record ({have} of {need} body bytes)")
            }
            DamageKind::Oversized { length } => {
                write!(f, "MRT length field {length} is beyond any real record")
            }
            DamageKind::EtLengthTooShort { length } => write!(
                f,
                "extended-timestamp MRT record with length {length} (at least 4 needed)"
            ),
            DamageKind::UnknownType {
                entry_type,
                subtype,
            } => write!(
                f,
                "unknown MRT type {entry_type} (subtype {subtype}): framing lost"
            ),
            DamageKind::Stream => f.write_str("incomplete line"),
            DamageKind::LineTooLong { limit } => {
                write!(f, "line longer than {limit} bytes: not a text table")
            }
        }
    }
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "damaged at byte {} of the decompressed stream, after {} complete records: {}",
            self.offset, self.records_before, self.kind
        )?;
        if let Some(e) = &self.stream_error {
            write!(f, " (decompression: {e})")?;
        }
        Ok(())
    }
}

/// How many skipped lines or records a [`Report`] keeps the errors of.
pub const KEPT_ERRORS: usize = 10;

/// What a lenient read went through, besides the routes it returned.
///
/// ```
/// use ipfib_io::{load_table_from, Compression, TableOptions};
///
/// let text = b"10.0.0.0/8 a\n10.0.0.1/8 b\n";
/// let report = load_table_from(&text[..], "t", &TableOptions::default())?.report;
/// assert_eq!((report.records, report.bad, report.compression), (2, 1, Compression::None));
/// assert!(report.has_problems() && report.damage.is_none());
/// # Ok::<(), ipfib_io::ReadError>(())
/// ```
#[derive(Debug, Default)]
pub struct Report {
    /// The format the input was read as (never `Auto`).
    pub format: Format,
    /// How the file was compressed.
    pub compression: crate::input::Compression,
    /// Lines (text formats, comments included) or MRT records framed whole.
    pub records: u64,
    /// Lines or records that were skipped because they did not parse.
    pub bad: u64,
    /// The first [`KEPT_ERRORS`] of them.
    pub errors: Vec<ReadError>,
    /// MRT records of types or subtypes that carry no routes we read
    /// (BGP4MP_ENTRY, OSPF, ...), per `(type, subtype)`, in order of first
    /// appearance. Not damage, but not silently dropped either.
    pub unsupported: Vec<((u16, u16), u64)>,
    /// Where reading stopped early, if it did.
    pub damage: Option<Damage>,
    /// Decompressed bytes read (up to the damage, if any).
    pub bytes: u64,
    /// MRT detail (peers, multi-origin prefixes, ...); `None` for text.
    pub mrt: Option<crate::mrt::MrtStats>,
    /// MaxMind DB detail (metadata, distinct records); `None` otherwise.
    pub mmdb: Option<crate::mmdb::MmdbInfo>,
    /// Ranges detail (overlaps, the header, ...); `None` for other formats.
    pub ranges: Option<crate::ranges::RangeStats>,
}

impl Report {
    pub(crate) fn new(format: Format) -> Self {
        Report {
            format,
            ..Report::default()
        }
    }

    /// Count one skipped line or record, keeping its error if among the first.
    pub(crate) fn skip(&mut self, e: ReadError) {
        self.bad += 1;
        if self.errors.len() < KEPT_ERRORS {
            self.errors.push(e);
        }
    }

    pub(crate) fn unsupported(&mut self, key: (u16, u16)) {
        match self.unsupported.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => self.unsupported.push((key, 1)),
        }
    }

    /// Whether anything was skipped or cut short (exit status 1 in the CLI).
    pub fn has_problems(&self) -> bool {
        self.bad > 0 || self.damage.is_some() || !self.unsupported.is_empty()
    }
}
