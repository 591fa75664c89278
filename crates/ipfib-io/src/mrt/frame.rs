//! MRT framing (RFC 6396 §2): the common header, a bounded length, the
//! body. We frame records ourselves so that every record has its exact byte offset in the
//! decompressed stream and framing damage is told apart from a body that
//! does not parse.
//!
//! Framing stops (with a [`Damage`]) at: an input that ends inside a header
//! or body, a length beyond [`MAX_BODY`], an `_ET` length below 4, or a type
//! RFC 6396 does not define (garbage, or a wrong length in the record
//! before: either way the next header cannot be found). Memory is bounded:
//! a body buffer grows only as bytes actually arrive, up to `MAX_BODY`.

use crate::damage::{Damage, DamageKind};
use bytes::Bytes;
use std::io::{self, BufRead, Read};

/// The largest body we accept: a PEER_INDEX_TABLE of 65,535 IPv6 peers is
/// under 3 MiB, a RIB record of every peer's route for one prefix far less,
/// a BGP message at most 64 KiB (RFC 8654).
pub const MAX_BODY: u64 = 16 << 20;

/// Body bytes reserved before any arrive; more is allocated as they do.
const INITIAL_RESERVE: u64 = 64 << 10;

/// One whole record.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Offset of its header in the decompressed stream.
    pub offset: u64,
    pub timestamp: u32,
    pub microseconds: Option<u32>,
    pub entry_type: u16,
    pub subtype: u16,
    /// The message after the (12- or 16-byte) header.
    pub body: Bytes,
}

/// MRT types of RFC 6396 §4 and the IANA registry that can appear in real
/// files (5-12 deprecated, still parsed or at least skipped whole). Types
/// 0-4 (NULL, START, DIE, I_AM_DEAD, PEER_DOWN) have not been written since
/// the 1990s; treating them as unknown makes a run of zero bytes damage
/// rather than thousands of empty records.
pub(crate) fn known_type(t: u16) -> bool {
    matches!(t, 5..=13 | 16 | 17 | 32 | 33 | 48 | 49)
}

/// Types whose header carries a 4-byte microsecond field, counted in the length.
pub(crate) fn is_extended_timestamp(t: u16) -> bool {
    matches!(t, 17 | 33 | 49)
}

/// Reads records one by one; after the first damage it yields nothing more.
pub struct Framer<R> {
    reader: R,
    offset: u64,
    records: u64,
    stopped: bool,
}

impl<R: BufRead> Framer<R> {
    pub fn new(reader: R) -> Self {
        Framer {
            reader,
            offset: 0,
            records: 0,
            stopped: false,
        }
    }

    /// Decompressed bytes framed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next record, `None` at a clean end, or the damage that ends the
    /// input (after which every call returns `None`).
    pub fn next_frame(&mut self) -> Option<Result<Frame, Damage>> {
        if self.stopped {
            return None;
        }
        let result = self.frame();
        match &result {
            Some(Ok(frame)) => {
                self.records += 1;
                let header = if frame.microseconds.is_some() { 16 } else { 12 };
                self.offset += header + frame.body.len() as u64;
            }
            Some(Err(_)) | None => self.stopped = true,
        }
        result
    }

    fn damage(&self, kind: DamageKind, stream_error: Option<io::Error>) -> Damage {
        Damage {
            offset: self.offset,
            records_before: self.records,
            kind,
            stream_error: stream_error.map(|e| e.to_string()),
        }
    }

    fn frame(&mut self) -> Option<Result<Frame, Damage>> {
        let mut header = [0u8; 16];
        let (have, err) = read_full(&mut self.reader, &mut header[..12]);
        if have == 0 && err.is_none() {
            return None;
        }
        if have < 12 {
            let kind = DamageKind::TruncatedHeader { have, need: 12 };
            return Some(Err(self.damage(kind, err)));
        }
        let [t0, t1, t2, t3, y0, y1, s0, s1, l0, l1, l2, l3, ..] = header;
        let timestamp = u32::from_be_bytes([t0, t1, t2, t3]);
        let entry_type = u16::from_be_bytes([y0, y1]);
        let subtype = u16::from_be_bytes([s0, s1]);
        let mut length = u64::from(u32::from_be_bytes([l0, l1, l2, l3]));
        if !known_type(entry_type) {
            let kind = DamageKind::UnknownType {
                entry_type,
                subtype,
            };
            return Some(Err(self.damage(kind, None)));
        }
        if length > MAX_BODY {
            return Some(Err(self.damage(DamageKind::Oversized { length }, None)));
        }
        let mut microseconds = None;
        if is_extended_timestamp(entry_type) {
            if length < 4 {
                let kind = DamageKind::EtLengthTooShort { length };
                return Some(Err(self.damage(kind, None)));
            }
            let (have, err) = read_full(&mut self.reader, &mut header[12..]);
            if have < 4 {
                let kind = DamageKind::TruncatedHeader {
                    have: 12 + have,
                    need: 16,
                };
                return Some(Err(self.damage(kind, err)));
            }
            let [.., m0, m1, m2, m3] = header;
            microseconds = Some(u32::from_be_bytes([m0, m1, m2, m3]));
            length -= 4;
        }
        match read_body(&mut self.reader, length) {
            Ok(body) => Some(Ok(Frame {
                offset: self.offset,
                timestamp,
                microseconds,
                entry_type,
                subtype,
                body,
            })),
            Err((have, err)) => {
                let kind = DamageKind::TruncatedBody { have, need: length };
                Some(Err(self.damage(kind, err)))
            }
        }
    }
}

/// Fill `buf` as far as the input goes: the count read and the error that
/// stopped it early, if any (`None` at a clean end of input).
fn read_full<R: Read>(reader: &mut R, buf: &mut [u8]) -> (u64, Option<io::Error>) {
    let mut have = 0usize;
    while let Some(rest) = buf.get_mut(have..).filter(|r| !r.is_empty()) {
        match reader.read(rest) {
            Ok(0) => break,
            Ok(n) => have += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (have as u64, Some(e)),
        }
    }
    (have as u64, None)
}

/// Read exactly `len` (<= MAX_BODY) bytes; on a short read, how many came
/// and the error that ended them.
fn read_body<R: BufRead>(reader: &mut R, len: u64) -> Result<Bytes, (u64, Option<io::Error>)> {
    let want = usize::try_from(len).map_err(|_| (0, None))?;
    // Fast path: the whole body is already in the buffer.
    if let Ok(buf) = reader.fill_buf() {
        if let Some(body) = buf.get(..want) {
            let body = Bytes::copy_from_slice(body);
            reader.consume(want);
            return Ok(body);
        }
    }
    let mut body = Vec::with_capacity(want.min(INITIAL_RESERVE as usize));
    match reader.take(len).read_to_end(&mut body) {
        Ok(n) if n == want => Ok(Bytes::from(body)),
        Ok(n) => Err((n as u64, None)),
        Err(e) => Err((body.len() as u64, Some(e))),
    }
}
