//! Typed BGP updates, as read from MRT BGP4MP records or LINX text update
//! files, for replaying into a dynamic FIB.

use ipfib::prefix::AnyPrefix;
use std::net::IpAddr;
use std::sync::Arc;

/// Who sent an update. Text update files name no peer (`addr` and `asn`
/// are `None`); BGP4MP records always carry both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerId {
    pub addr: Option<IpAddr>,
    pub asn: Option<u32>,
}

/// One AS_PATH segment (RFC 4271 §4.3, RFC 5065 for the confederation kinds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AsSegment {
    Sequence(Vec<u32>),
    Set(Vec<u32>),
    ConfedSequence(Vec<u32>),
    ConfedSet(Vec<u32>),
}

/// An AS path after RFC 6793 merging of AS4_PATH, shared by every prefix
/// of one BGP UPDATE.
pub type AsPath = Arc<[AsSegment]>;

/// What happened to a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A route for the prefix (replacing any earlier one from the same peer
    /// and path id). Text update files carry a next hop but no AS path.
    Announce {
        next_hop: Option<IpAddr>,
        as_path: Option<AsPath>,
    },
    Withdraw,
}

/// One prefix announced or withdrawn by one peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// Seconds since the Unix epoch.
    pub timestamp: u32,
    /// Microseconds, from BGP4MP_ET records.
    pub microseconds: Option<u32>,
    pub peer: PeerId,
    pub prefix: AnyPrefix,
    /// The ADD-PATH path identifier (RFC 7911), when the session uses it.
    pub path_id: Option<u32>,
    pub change: Change,
}

/// What an update stream yields, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Update(Update),
    /// A BGP4MP state change (RFC 4271 §8 state numbers: 1 Idle ... 6
    /// Established). A session leaving Established takes its routes with it.
    PeerState {
        timestamp: u32,
        peer: PeerId,
        old: u16,
        new: u16,
    },
}

/// RFC 4271 state number of Established.
pub const ESTABLISHED: u16 = 6;
