//! What a load reports: its counts, the errors it kept, and why it
//! failed when it did.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use ipfib_io::{Damage, ReadError};

use crate::rib::RibError;

/// Errors kept in a [`LoadReport`]; later ones are only counted.
pub const KEPT_ERRORS: usize = 16;

/// Why a load failed, or what it skipped.
#[derive(Debug, thiserror::Error)]
pub enum MrtError {
    /// The file could not be opened (the message names it).
    #[error(transparent)]
    Open(#[from] ReadError),
    /// A record's body does not hold together; it was skipped whole.
    #[error(
        "{}: MRT record {record} at byte {offset} (type {entry_type}, subtype {subtype}): {reason}",
        .path.display()
    )]
    Record {
        path: PathBuf,
        /// 1-based count of complete records.
        record: u64,
        /// Offset of the record's header in the decompressed stream.
        offset: u64,
        entry_type: u16,
        subtype: u16,
        reason: String,
    },
    /// One RIB entry of a record could not be taken; the others were.
    #[error(
        "{}: MRT record {record}, RIB entry {entry} at byte {offset} (peer index {peer_index}): {reason}",
        .path.display()
    )]
    Entry {
        path: PathBuf,
        record: u64,
        /// 0-based position of the entry in its record.
        entry: u16,
        /// Offset of the entry in the decompressed stream.
        offset: u64,
        peer_index: u16,
        reason: String,
    },
    /// The RIB refused a peer or a prefix (it is full).
    #[error("{}: MRT record {record} at byte {offset}: {source}", .path.display())]
    Rib {
        path: PathBuf,
        record: u64,
        offset: u64,
        source: RibError,
    },
}

/// What [`load`](super::load) did.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Complete records read (every type).
    pub records: u64,
    /// RIB peers added (one per PEER_INDEX_TABLE entry, or per distinct
    /// (address, AS) of TABLE_DUMP records).
    pub peers: usize,
    /// Routes announced (RIB entries taken).
    pub routes: u64,
    /// Routes the RIB dropped: their prefix held the most routes a prefix
    /// may (see `rib::MAX_ROUTES_PER_PREFIX`).
    pub routes_dropped: u64,
    /// Peers of an earlier dump of the same view in the file (same
    /// collector BGP ID and view name), marked down when the later dump's
    /// PEER_INDEX_TABLE came: their routes left lookups then.
    pub superseded_peers: usize,
    /// Distinct prefixes with at least one route taken.
    pub prefixes_v4: u64,
    pub prefixes_v6: u64,
    /// Where the readable part of the file ends, when it ends early.
    pub damage: Option<Damage>,
    /// Decompressed bytes framed.
    pub bytes: u64,
    /// Records of types that hold no unicast RIB (BGP4MP updates,
    /// multicast, non-unicast RIB_GENERIC, GEO_PEER_TABLE), by (type,
    /// subtype).
    pub unsupported: Vec<((u16, u16), u64)>,
    /// Where each pair is in `unsupported` (no scan of the list per record).
    unsupported_at: std::collections::HashMap<(u16, u16), usize>,
    /// Records skipped whole, and single entries skipped.
    pub bad_records: u64,
    pub bad_entries: u64,
    /// The first [`KEPT_ERRORS`] of them.
    pub errors: Vec<MrtError>,
    /// Attribute sets decoded (by `ipfib_io::bgp`, BMP's decoder too); the
    /// other routes reused the set of identical attribute bytes seen
    /// before.
    pub attr_decodes: u64,
    /// Attributes dropped from a route that was kept (RFC 7606
    /// "attribute discard": a malformed AGGREGATOR or AS4_PATH, a
    /// repeated attribute), once per distinct attribute bytes.
    pub attrs_discarded: u64,
    pub elapsed: Duration,
}

impl LoadReport {
    /// The byte offset (decompressed) where the file stopped being readable.
    pub fn damaged_at(&self) -> Option<u64> {
        self.damage.as_ref().map(|d| d.offset)
    }

    pub(super) fn unsupported(&mut self, key: (u16, u16)) {
        let at = *self
            .unsupported_at
            .entry(key)
            .or_insert(self.unsupported.len());
        match self.unsupported.get_mut(at) {
            Some((_, n)) => *n += 1,
            None => self.unsupported.push((key, 1)),
        }
    }

    pub(super) fn skip(&mut self, e: MrtError) {
        match e {
            MrtError::Entry { .. } => self.bad_entries += 1,
            _ => self.bad_records += 1,
        }
        if self.errors.len() < KEPT_ERRORS {
            self.errors.push(e);
        }
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} records, {} peers, {} routes, {} IPv4 + {} IPv6 prefixes in {:.3} s",
            self.records,
            self.peers,
            self.routes,
            self.prefixes_v4,
            self.prefixes_v6,
            self.elapsed.as_secs_f64()
        )?;
        if self.superseded_peers > 0 {
            write!(
                f,
                "; {} peers of earlier dumps of the same view went down",
                self.superseded_peers
            )?;
        }
        if self.routes_dropped > 0 {
            write!(
                f,
                "; {} routes dropped (their prefix held the most routes a prefix may)",
                self.routes_dropped
            )?;
        }
        if let Some(d) = &self.damage {
            write!(f, "; {d}")?;
        }
        if self.bad_records + self.bad_entries > 0 {
            write!(
                f,
                "; skipped {} records and {} entries",
                self.bad_records, self.bad_entries
            )?;
        }
        if self.attrs_discarded > 0 {
            write!(
                f,
                "; {} malformed attributes dropped from routes kept (RFC 7606)",
                self.attrs_discarded
            )?;
        }
        Ok(())
    }
}
