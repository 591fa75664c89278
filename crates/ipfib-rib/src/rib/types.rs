//! What the RIB holds and answers: a prefix's routes ([`Routes`] of
//! [`Entry`]), a lookup's question ([`Query`]) and answers ([`Route`],
//! [`Hit`]), the RIB's limits, errors and counters.

use std::net::IpAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use ipfib::prefix::{AnyAddr, AnyPrefix};

use crate::attrs::AttrSet;
use crate::instance::{Instance, RibSet};
use crate::peers::PeerInfo;
use crate::routelist::{Keyed, List};

#[cfg(doc)]
use super::Rib;

/// One route of a prefix: which peer, which ADD-PATH path id, which
/// attributes. 16 bytes.
#[derive(Clone, Debug)]
pub struct Entry {
    pub peer: u32,
    /// RFC 7911 path identifier (0 without ADD-PATH).
    pub path_id: u32,
    pub attrs: Arc<AttrSet>,
}

impl Keyed for Entry {
    #[inline]
    fn key(&self) -> u64 {
        entry_key(self.peer, self.path_id)
    }
}

#[inline]
pub(super) fn entry_key(peer: u32, path_id: u32) -> u64 {
    (u64::from(peer) << 32) | u64::from(path_id)
}

/// Every route of one prefix (see [`Rib`] for their preference order).
/// Entries of peers that went down stay until the sweeper removes them;
/// lookups skip them.
///
/// Up to 512 routes sit in one array in preference order; past that, in a
/// persistent B-tree keyed by (peer, path id), so that a change copies
/// O(log n) entries rather than the whole list (see `routelist.rs`).
#[derive(Debug)]
pub struct Routes {
    pub prefix: AnyPrefix,
    /// A copy of the most preferred entry, inline: a lookup with no
    /// restriction usually ends here, one cache miss sooner than the list.
    pub(super) best: Option<Entry>,
    pub(super) list: List<Entry>,
    /// The prefix id with the generation of this life of it (see
    /// [`ID_BITS`]): what the FIB maps the prefix to. A reader that got a
    /// tag from a FIB snapshot and finds another in the slot knows the id
    /// was freed, perhaps recycled, since.
    pub(super) tag: u32,
}

/// Prefix ids take the low `ID_BITS` bits of a tag, the id's generation
/// (bumped each time the id is recycled) the rest. A FIB snapshot older
/// than the recycling still maps addresses to the old tag; the slot's new
/// array carries the new one, so the reader sees the mismatch and probes
/// the covering prefixes instead of answering with the new prefix (which
/// may cover the address while a more specific one, still published, is
/// the right answer). An id recycled 256 times between one snapshot's
/// publication and a reader's use of it would alias: the FIB thread frees
/// an id at most once per batch, and publishes at least once a batch.
pub(super) const ID_BITS: u32 = 24;
pub(super) const ID_MASK: u32 = (1 << ID_BITS) - 1;

/// The most prefix ids (prefixes held at once).
pub const MAX_PREFIX_IDS: u64 = 1 << ID_BITS;

/// The default bound on the routes one prefix holds (every peer, path
/// id, instance and RIB kind together; [`Rib::set_max_routes_per_prefix`]
/// sets another). A change costs O(log n) whatever the bound (past 512
/// routes a prefix's list is a persistent B-tree, see [`Routes`]); the
/// bound caps what one prefix holds (256 KiB of entries) and what a
/// lookup none of whose preferred routes fits (a peer, instance or next
/// hop that few routes have) searches on it. A further new route of a
/// full prefix is dropped ([`Rib::announce`] returns `false`) and counted
/// ([`RibCounters::over_prefix_limit`]); changes to and withdrawals of
/// the routes held still apply. A dropped route stays dropped (BMP does
/// not resend it) until its peer announces it again. Real collectors hold
/// tens to a few thousand routes per prefix (a route server's peers, or
/// the VRFs of one PE sharing a default route), so only a sender
/// inventing peers reaches it. Entries of downed peers count until the
/// sweeper removes them.
pub const MAX_ROUTES_PER_PREFIX: usize = 16_384;

impl Routes {
    pub(super) fn tagged(prefix: AnyPrefix, list: List<Entry>, tag: u32) -> Routes {
        Routes {
            prefix,
            best: list.best().cloned(),
            list,
            tag,
        }
    }

    /// Entries held (live or not).
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Every entry (live or not), in no promised order ([`Rib::routes`]
    /// gives the live ones in preference order).
    pub fn iter(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.list.iter()
    }

    /// `peer`'s entry with `path_id`.
    pub fn get(&self, peer: u32, path_id: u32) -> Option<&Entry> {
        self.list.get(entry_key(peer, path_id))
    }
}

/// Which routes a lookup may choose. The default: the global instance's
/// pre-policy, post-policy, Loc-RIB and MRT routes of any peer.
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// Only this peer's routes (longest match over that peer's prefixes).
    pub peer: Option<PeerFilter>,
    /// Prefer the route whose next hop is this (a flow's next hop); when
    /// none has it, the usual preference applies.
    pub next_hop: Option<IpAddr>,
    /// Which routing instances (longest match over their routes only).
    pub instance: Instance,
    /// Which RIB kinds.
    pub ribs: RibSet,
}

impl Query {
    /// Every route of every instance and RIB kind.
    pub fn everything() -> Query {
        Query {
            instance: Instance::All,
            ribs: RibSet::ALL,
            ..Query::default()
        }
    }
}

/// A peer restriction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerFilter {
    /// One peer by id.
    Id(u32),
    /// Every peer with this address (pre-, post-policy, several sessions).
    Address(IpAddr),
}

/// A route as lookups return it (owned; cheap: two `Arc` clones).
#[derive(Clone, Debug)]
pub struct Route {
    pub prefix: AnyPrefix,
    pub peer: Arc<PeerInfo>,
    pub path_id: u32,
    pub attrs: Arc<AttrSet>,
}

/// What a batch lookup returns per address (plain data, no allocation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hit {
    pub prefix_len: u8,
    pub origin_asn: Option<u32>,
    pub peer: u32,
    pub next_hop: Option<IpAddr>,
}

/// Which prefixes `routes_matching` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    Exact,
    /// The prefix and every more specific one.
    Longer,
    /// The prefix and every less specific one.
    Shorter,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RibError {
    #[error("the RIB holds the most prefixes it can ({0})")]
    PrefixesExhausted(u64),
    #[error("the RIB holds the most peers it can")]
    PeersExhausted,
}

/// Counters the service exports: the RIB adds to them, callers read
/// them (`load`, any ordering).
#[derive(Default, Debug)]
pub struct RibCounters {
    pub announcements: AtomicU64,
    pub withdrawals: AtomicU64,
    /// Withdrawals of a route the peer did not have.
    pub withdrawals_unknown: AtomicU64,
    /// Announcements for a peer already down, dropped.
    pub dropped_dead: AtomicU64,
    /// New routes dropped because their prefix held the most routes a
    /// prefix may ([`MAX_ROUTES_PER_PREFIX`] by default).
    pub over_prefix_limit: AtomicU64,
    pub sweeps: AtomicU64,
    pub swept_routes: AtomicU64,
    pub fib_publications: AtomicU64,
    /// Heap bytes of the prefix-id FIB (route tables, published and spare
    /// engines), as of its last publication.
    pub fib_bytes: AtomicU64,
    /// Prefixes that lost their last route and gave back their id.
    pub prefixes_freed: AtomicU64,
    /// Peers swept and removed from the registry.
    pub peers_freed: AtomicU64,
    /// Strings from the wire (BMP Initiation and Peer Up TLVs) cut to
    /// [`crate::bmp::MAX_WIRE_STRING`] bytes.
    pub strings_cut: AtomicU64,
    /// Times the sweeper gave free heap pages back to the OS.
    pub heap_trims: AtomicU64,
}

/// `ip` with the IPv4-mapped rule applied (`::ffff:a.b.c.d` is
/// `a.b.c.d`): how next hops and peer addresses are compared, so a query
/// in either spelling matches a stored one in either spelling.
///
/// ```
/// use ipfib_rib::unmap;
/// use std::net::IpAddr;
///
/// let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
/// assert_eq!(unmap(mapped), "192.0.2.1".parse::<IpAddr>().unwrap());
/// assert_eq!(unmap("2001:db8::1".parse().unwrap()).to_string(), "2001:db8::1");
/// ```
pub fn unmap(ip: IpAddr) -> IpAddr {
    AnyAddr::unmapped(ip).to_ip()
}
