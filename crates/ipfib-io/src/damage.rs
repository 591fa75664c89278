//! Where a lenient read found the input stopped making sense ([`Damage`]).
//! A leaf: errors and reports carry it, and it depends on neither.

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
