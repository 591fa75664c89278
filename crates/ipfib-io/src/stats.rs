//! What a load found besides its routes, per format: the statistics a
//! [`Report`](crate::Report) carries and `ipfib info` shows. A leaf: the
//! readers fill these in, the report holds them, and nothing here depends
//! on either.

use std::net::IpAddr;

/// What an MRT load found besides the routes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MrtStats {
    /// Peers named by the dump (PEER_INDEX_TABLE, or seen in records).
    pub peers: Vec<Option<PeerInfo>>,
    /// Routes read: RIB entries, plus BGP4MP announcements replayed.
    pub rib_entries: u64,
    pub announcements: u64,
    pub withdrawals: u64,
    pub state_changes: u64,
    /// RIB entries left out: attributes that could not be located, or an
    /// error RFC 7606 answers with "treat-as-withdraw".
    pub entries_skipped: u64,
    pub reduce: ReduceStats,
}

/// A peer as the dump describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerInfo {
    pub addr: IpAddr,
    pub asn: u32,
}

/// What the reduction found, for `ipfib info`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReduceStats {
    /// Prefixes seen with more than one origin (origin-asn policy).
    pub multi_origin: u64,
    /// Prefixes whose value is an AS_SET origin.
    pub as_set_origins: u64,
    /// Prefixes left out because the chosen peer's route had no next hop
    /// or the peer had no route for them.
    pub without_value: u64,
}

/// What a ranges table held, besides its routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RangeStats {
    /// Ranges read (bad lines and the header not counted).
    pub ranges: u64,
    /// Ranges that overlap an earlier one: on the addresses they share the
    /// later range wins.
    pub overlapping: u64,
    /// Ranges that are not one CIDR prefix.
    pub unaligned: u64,
    /// The header line that was skipped, if the file has one.
    pub header_line: Option<u64>,
    /// The 1-based column the values were taken from.
    pub value_column: usize,
}

/// What `ipfib info` shows about a MaxMind DB besides the routes.
/// `without_field` counts networks with none of the fields asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MmdbInfo {
    pub database_type: String,
    pub ip_version: u16,
    pub record_size: u16,
    pub node_count: u32,
    pub build_epoch: Option<u64>,
    pub binary_format: (Option<u16>, Option<u16>),
    /// Distinct data records referred to by the networks.
    pub records: u64,
    /// Networks whose record lacks the `--value` field (no route).
    pub without_field: u64,
    /// Node visits the walk of the tree made (both tables).
    pub node_visits: u64,
}
