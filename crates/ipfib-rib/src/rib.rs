//! The multi-peer RIB: every route of every peer, longest-prefix match
//! over all of them.
//!
//! ```text
//!  writers (one per BMP session)            readers (any thread)
//!  announce / withdraw                      lookup(addr, query)
//!    |  prefix -> id (lock-free map)          |  FIB snapshot: addr -> prefix id
//!    |  routes[id]: copy, edit, swap ----->   |  routes[id]: one atomic load
//!    |  first route / last route gone         |  most preferred live entry that
//!    v                                        |  fits the query (flat lists
//!  FIB thread: Fib<u32> of prefix ids         |  preference order); none: probe
//!  (coalesced publication, <= 1 ms)           v  shorter prefixes
//!  sweeper thread: drops dead peers' entries, gives memory back
//! ```
//!
//! Prefixes change rarely, routes often: the set of prefixes with at least
//! one route is a dynamic [`Fib`] whose value is a prefix id, maintained by
//! one thread from "this prefix gained its first / lost its last route"
//! events. The routes of a prefix are a small immutable array behind an
//! `ArcSwap`, replaced copy-on-write, so a reader never waits and never
//! sees half an update (past 512 routes, a persistent B-tree whose
//! changes copy one root-to-leaf path: `routelist.rs`).
//!
//! Memory follows live state: a prefix that loses its last route gives
//! back its map entry, slot and id (the FIB thread frees it, see
//! `Inner::free_prefix`); ids are recycled, and a reader that resolved
//! an id before it was recycled notices, because every route array names
//! its prefix and carries its id's generation (see "Id recycling" below
//! and docs/architecture.md).
//!
//! Id recycling, why readers stay right. A reader goes addr -> tag through
//! a FIB snapshot (or prefix -> id through the map) and then loads
//! `slots[id]`; the id may have been freed and given to another prefix in
//! between. Every route array is one immutable object holding its prefix,
//! that prefix's entries and the tag (id and generation) of that life of
//! the id, so whatever a reader loads is a consistent triple that was
//! current at the load. Readers check it against what they asked: a
//! longest-prefix lookup requires the very tag the FIB gave (else it
//! probes the covering prefixes through the map, as a lookup whose prefix
//! has no fitting route does), a probe or an exact query requires the
//! very prefix. So a recycled id never makes a lookup answer from the new
//! prefix: that prefix might cover the address while a more specific one,
//! still published, is the right answer. It answers as if the old prefix
//! had no route, which it had not at that instant.
//!
//! Writers check the same pair before they swap: a writer whose id no
//! longer holds its prefix (freed under it) retries through the map.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use ipfib::fib::{Fib, FibOptions, FibReader};
use ipfib::mem::prefetch;
use ipfib::prefix::{AnyAddr, AnyPrefix, Prefix};

use crate::attrs::{AttrSet, Attrs};
use crate::instance::{Instance, RibSet};
use crate::peers::{PeerInfo, PeerKey, Peers};
use crate::routelist::{Keyed, List};
use crate::seg::Segmented;

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
fn entry_key(peer: u32, path_id: u32) -> u64 {
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
    pub best: Option<Entry>,
    list: List<Entry>,
    /// The prefix id with the generation of this life of it (see
    /// [`ID_BITS`]): what the FIB maps the prefix to. A reader that got a
    /// tag from a FIB snapshot and finds another in the slot knows the id
    /// was freed, perhaps recycled, since.
    pub tag: u32,
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
pub const ID_BITS: u32 = 24;
const ID_MASK: u32 = (1 << ID_BITS) - 1;

/// The most prefix ids (prefixes held at once).
pub const MAX_PREFIX_IDS: u64 = 1 << ID_BITS;

/// The default bound on the routes one prefix holds (every peer, path
/// id, instance and RIB kind together; [`Rib::set_max_routes_per_prefix`]
/// sets another). A change costs O(log n) whatever the bound (past 512
/// routes a prefix's list is a persistent B-tree, see [`Routes`]); the
/// bound caps what one prefix holds (256 KiB of entries) and what a
/// lookup none of whose preferred routes fits (a peer, instance or next
/// hop that few routes have) searches on it. A
/// further new route of a full prefix is dropped ([`Rib::announce`]
/// returns `false`) and counted ([`RibCounters::over_prefix_limit`]);
/// changes to and withdrawals of the routes held still apply. A dropped
/// route stays dropped (BMP does not resend it) until its peer announces
/// it again. Real collectors hold tens to a few thousand routes per
/// prefix (the 20-peer RouteViews dump: at most 28; thousands of VRFs of
/// one PE sharing a default route: one each), so only a sender inventing
/// peers reaches it. Entries of downed peers count until the sweeper
/// removes them.
pub const MAX_ROUTES_PER_PREFIX: usize = 16_384;

impl Routes {
    fn tagged(prefix: AnyPrefix, list: List<Entry>, tag: u32) -> Routes {
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

/// Counters the service exports.
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

/// What the FIB thread is told.
enum FibEvent {
    /// Make the FIB agree with `routes[id]` (present iff it has entries).
    Check(AnyPrefix, u32),
    /// Publish everything so far, then answer.
    Sync(Sender<()>),
}

struct Inner {
    peers: Peers,
    attrs: Attrs,
    ids: papaya::HashMap<AnyPrefix, u32, foldhash::fast::RandomState>,
    slots: Segmented<ArcSwapOption<Routes>>,
    /// Ids below this have been handed out at least once.
    next_id: AtomicU32,
    /// Ids given back by freed prefixes, handed out again first.
    free_ids: Mutex<Vec<u32>>,
    /// Bit l set: some IPv4 prefix of length l exists (fallback probes).
    lens_v4: AtomicU64,
    lens_v6: [AtomicU64; 3],
    counters: RibCounters,
    /// See [`MAX_ROUTES_PER_PREFIX`].
    max_routes_per_prefix: AtomicUsize,
    /// Held for a whole sweep: the public call waits for the thread's,
    /// so that when it returns every dead peer is swept and freed (two
    /// sweeps side by side could each leave the other's last steps, a
    /// peer's registry count, undone for an instant).
    sweeping: Mutex<()>,
}

/// New prefixes a writer thread puts in the map between two attempts to
/// hand over its reclamation batch.
const MAP_FLUSH_EVERY: u32 = 4096;

thread_local! {
    /// New prefixes this thread put in any RIB's map: a cadence, not a
    /// count per map.
    static MAP_INSERTS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The multi-peer RIB.
///
/// Thread-safety: every method takes `&self`. Lookups never block and
/// never allocate (except [`Route`]'s `Arc` clones); writers for different
/// sessions meet only when they change the same prefix (a compare-and-swap
/// retry) or intern attributes in the same shard.
///
/// Route preference, used when a lookup does not name a next hop (or no
/// route has it) — the order in which a prefix's routes are preferred:
/// 1. RIB kind: Loc-RIB, then post-policy, then pre-policy and MRT (the
///    closer to the router's own decision, the better);
/// 2. highest LOCAL_PREF (missing: 100);
/// 3. shortest AS path (a set counts as one);
/// 4. lowest ORIGIN (IGP < EGP < incomplete);
/// 5. lowest MED (missing: 0), compared across all neighbours;
/// 6. lowest peer id (the peer seen first), then lowest path id.
///
/// A subset of RFC 4271 §9.1.2.2: IGP cost and eBGP-over-iBGP are not
/// known to a collector.
///
/// Staleness: a prefix that gets its first route is found by
/// longest-prefix lookups after the FIB thread's next publication (at most
/// about 1 ms later); until then lookups answer from the covering prefix.
/// Exact queries ([`Rib::routes`]) see it at once.
///
/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are looked up as IPv4
/// when they arrive as [`AnyAddr::unmapped`] makes them; the RIB takes
/// [`AnyAddr`] as given.
///
/// ```
/// use ipfib_rib::{Query, Rib};
/// # use ipfib_rib::{attrs::AttrsRef, AsPath, Origin, PeerKey, RibKind};
/// # use ipfib::prefix::{AnyAddr, AnyPrefix};
/// # fn key(addr: &str, rib: RibKind) -> PeerKey {
/// #     let address = addr.parse().unwrap();
/// #     PeerKey { peer_type: 0, distinguisher: 0, address, asn: 64500, bgp_id: 1, rib }
/// # }
/// # fn attrs<'a>(path: &'a [u32], next_hop: &str) -> AttrsRef<'a> {
/// #     let next_hop = Some(next_hop.parse().unwrap());
/// #     AttrsRef { as_path: path, communities: &[], large_communities: &[], next_hop,
/// #                origin: Origin::Igp, med: None, local_pref: None }
/// # }
/// # let addr = |s: &str| AnyAddr::unmapped(s.parse().unwrap());
/// # let pfx = |s: &str| s.parse::<AnyPrefix>().unwrap();
/// let rib = Rib::new();
/// let peer = rib.add_peer(1, key("192.0.2.1", RibKind::PrePolicy))?;
/// let path = AsPath::encode([(2, &[64500, 64501][..])]);
/// let set = rib.intern(&attrs(&path, "192.0.2.1"));
/// rib.announce(&peer, pfx("10.0.0.0/8"), 0, &set)?;
/// rib.sync(); // longest-prefix lookups see new prefixes after publication
/// let route = rib.lookup(addr("10.1.2.3"), &Query::default()).unwrap();
/// assert_eq!(route.prefix, pfx("10.0.0.0/8"));
/// assert_eq!(route.attrs.origin_asn, Some(64501));
/// # Ok::<(), ipfib_rib::rib::RibError>(())
/// ```
pub struct Rib {
    inner: Arc<Inner>,
    fib: FibReader<u32>,
    /// The FIB thread's writer, shared so that ordered walks
    /// ([`Rib::prefixes_under`]) can read its route tables.
    fib_w: Arc<Mutex<Fib<u32>>>,
    fib_tx: Option<Sender<FibEvent>>,
    sweep_tx: Option<Sender<()>>,
    threads: Vec<JoinHandle<()>>,
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

fn prefix_of(addr: AnyAddr, len: u8) -> AnyPrefix {
    match addr {
        AnyAddr::V4(a) => AnyPrefix::V4(Prefix::host(a).truncate(len)),
        AnyAddr::V6(a) => AnyPrefix::V6(Prefix::host(a).truncate(len)),
    }
}

/// Whether two loaded slot values are the same array (or both empty).
fn same(a: &Option<Arc<Routes>>, b: &Option<Arc<Routes>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// One more than the longest prefix length of `addr`'s family: a probe
/// of every covering prefix starts there.
fn full_len(addr: AnyAddr) -> u8 {
    match addr {
        AnyAddr::V4(_) => 33,
        AnyAddr::V6(_) => 129,
    }
}

fn covers(outer: &AnyPrefix, inner: &AnyPrefix) -> bool {
    match (outer, inner) {
        (AnyPrefix::V4(o), AnyPrefix::V4(i)) => o.covers(i),
        (AnyPrefix::V6(o), AnyPrefix::V6(i)) => o.covers(i),
        _ => false,
    }
}

impl Inner {
    fn slot(&self, id: u32) -> Option<&ArcSwapOption<Routes>> {
        self.slots.get(id)
    }

    /// A free id for `prefix`, its slot holding an empty route array of
    /// `prefix` (before the id goes into the map, so a writer that finds
    /// the id there always finds its prefix in the slot, unless freed).
    fn alloc_id(&self, prefix: AnyPrefix) -> Result<u32, RibError> {
        let max = MAX_PREFIX_IDS.min(crate::seg::CAPACITY);
        let reused = self
            .free_ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        // The free list holds the tags of the ids' last lives.
        let tag = match reused {
            Some(old) => (old & ID_MASK) | (old & !ID_MASK).wrapping_add(1 << ID_BITS),
            None => self
                .next_id
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    ((n as u64) < max).then_some(n + 1)
                })
                .map_err(|_| RibError::PrefixesExhausted(max))?,
        };
        let id = tag & ID_MASK;
        let Some(slot) = self.slots.get_or_alloc(id) else {
            return Err(RibError::PrefixesExhausted(max));
        };
        slot.store(Some(Arc::new(Routes::tagged(prefix, List::default(), tag))));
        Ok(id)
    }

    /// Give back an id that never went into the map (a writer lost the
    /// race to insert the same prefix).
    fn release_id(&self, id: u32) {
        let tag = self
            .slots
            .get(id)
            .and_then(|slot| slot.swap(None))
            .map_or(id, |r| r.tag);
        self.free_ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tag);
    }

    /// Free `prefix`'s id if `seen` (its empty route array) is still in
    /// the slot: the slot empties (one compare-and-swap, which fails if a
    /// writer added a route since), then the map entry goes, then the id
    /// is free. Only the FIB thread calls this, so frees are serial.
    ///
    /// The map must hand out `id` for `prefix`: an id just allocated and
    /// not yet in the map (see [`Inner::alloc_id`]) is not freed by a
    /// stale event of an earlier life of the same id. Between the swap and
    /// the map removal a writer may find the id in the map and the slot
    /// empty: it removes the entry itself and retries (`Rib::edit`). Once
    /// the id is pushed, no map entry names it, so it is handed out to at
    /// most one prefix at a time.
    fn free_prefix(&self, prefix: AnyPrefix, id: u32, seen: &Arc<Routes>) -> bool {
        let ids = self.ids.pin();
        if ids.get(&prefix) != Some(&id) {
            return false;
        }
        let Some(slot) = self.slot(id) else {
            return false;
        };
        let cur = Some(Arc::clone(seen));
        let prev = slot.compare_and_swap(&cur, None);
        if !same(&prev, &cur) {
            return false;
        }
        let _ = ids.remove_if(&prefix, |_, &v| v == id);
        self.free_ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(seen.tag);
        self.counters.prefixes_freed.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// A writer found `prefix -> id` in the map and the id's slot not
    /// holding `prefix` (freed under it, the FIB thread not yet past its
    /// map removal): remove that entry so the retry allocates. Only while
    /// the slot still does not hold the prefix: once another writer has
    /// reallocated the id to this very prefix (its slot stored before its
    /// map entry), the entry is theirs and live, and removing it would
    /// orphan their route.
    fn drop_stale(&self, prefix: AnyPrefix, id: u32) {
        let holds_prefix = |v: u32| {
            self.slot(v)
                .is_some_and(|s| s.load().as_ref().is_some_and(|r| r.prefix == prefix))
        };
        let _ = self
            .ids
            .pin()
            .remove_if(&prefix, |_, &v| v == id && !holds_prefix(v));
    }

    fn note_len(&self, p: &AnyPrefix) {
        let l = p.len() as usize;
        match p {
            AnyPrefix::V4(_) => self.lens_v4.fetch_or(1 << l, Ordering::Relaxed),
            AnyPrefix::V6(_) => self.lens_v6[l / 64].fetch_or(1 << (l % 64), Ordering::Relaxed),
        };
    }

    fn has_len(&self, v6: bool, l: u8) -> bool {
        let l = l as usize;
        if v6 {
            self.lens_v6[l / 64].load(Ordering::Relaxed) & (1 << (l % 64)) != 0
        } else {
            self.lens_v4.load(Ordering::Relaxed) & (1 << l) != 0
        }
    }

    /// Whether `e` (live) fits the query's peer, instance and RIB kinds.
    #[inline]
    fn peer_fits(&self, e: &Entry, q: &Query) -> bool {
        if q.peer.is_none() && q.instance == Instance::All && q.ribs == RibSet::ALL {
            return true;
        }
        // No reference taken: this runs for every entry a lookup scans.
        self.peers
            .with(e.peer, |p| {
                let k = &p.key;
                q.ribs.has(k.rib)
                    && q.instance.fits(k.peer_type, k.distinguisher)
                    && match &q.peer {
                        None => true,
                        Some(PeerFilter::Id(id)) => e.peer == *id,
                        Some(PeerFilter::Address(a)) => unmap(k.address) == unmap(*a),
                    }
            })
            .unwrap_or(false)
    }

    /// The entry a lookup chooses among `routes`.
    #[inline]
    fn choose<'r>(&self, routes: &'r Routes, q: &Query) -> Option<&'r Entry> {
        if q.peer.is_none() && q.next_hop.is_none() {
            if let Some(b) = &routes.best {
                if self.peers.is_live(b.peer) && self.peer_fits(b, q) {
                    return Some(b);
                }
            }
        }
        if let Some(nh) = q.next_hop {
            let nh = unmap(nh);
            let by_nh = self.first_preferred(routes, |e| {
                e.attrs.next_hop.map(unmap) == Some(nh)
                    && self.peers.is_live(e.peer)
                    && self.peer_fits(e, q)
            });
            if by_nh.is_some() {
                return by_nh;
            }
        }
        self.first_preferred(routes, |e| {
            self.peers.is_live(e.peer) && self.peer_fits(e, q)
        })
    }

    /// The most preferred entry `fits` takes: the first in a flat list; in
    /// a tree (only prefixes of more than 512 routes), a best-first search
    /// over the subtrees' best entries ([`List::first_fitting`]).
    #[inline]
    fn first_preferred<'r>(
        &self,
        routes: &'r Routes,
        fits: impl Fn(&Entry) -> bool,
    ) -> Option<&'r Entry> {
        match &routes.list {
            List::Flat(v) => v.iter().find(|e| fits(e)),
            List::Tree(_) => routes.list.first_fitting(&|e| self.pref_key(e), &fits),
        }
    }

    /// Order of entries within a prefix: the least key is the most
    /// preferred. A peer freed by the sweeper ranks 3 (its entries are
    /// gone from every current list by then; a reader's older copy may
    /// still hold them, which is why sorts compute each key once).
    fn pref_key(&self, e: &Entry) -> PrefKey {
        let x = &e.attrs;
        (
            self.peers.with(e.peer, |p| p.key.rib.rank()).unwrap_or(3),
            std::cmp::Reverse(x.local_pref.unwrap_or(100)),
            x.as_path.selection_len(),
            x.origin,
            x.med.unwrap_or(0),
            e.peer,
            e.path_id,
        )
    }
}

/// See [`Inner::pref_key`].
type PrefKey = (
    u8,
    std::cmp::Reverse<u32>,
    u32,
    crate::attrs::Origin,
    u32,
    u32,
    u32,
);

/// How a write changed a prefix.
#[derive(Default, Clone, Copy)]
struct Change {
    /// The (peer, path id) route was new / existed before.
    added: bool,
    removed: bool,
    /// The prefix went from no entries to some, or back.
    became_nonempty: bool,
    became_empty: bool,
}

impl Rib {
    /// An empty RIB, with its FIB and sweeper threads running.
    ///
    /// # Panics
    /// If the OS cannot start a thread ([`Rib::try_new`] returns the
    /// error instead).
    pub fn new() -> Rib {
        match Rib::try_new() {
            Ok(r) => r,
            Err(e) => panic!("cannot start a RIB thread: {e}"),
        }
    }

    /// An empty RIB, or the error that kept its threads from starting.
    pub fn try_new() -> std::io::Result<Rib> {
        let inner = Arc::new(Inner {
            peers: Peers::new(),
            attrs: Attrs::default(),
            ids: papaya::HashMap::with_hasher(foldhash::fast::RandomState::default()),
            slots: Segmented::new(),
            next_id: AtomicU32::new(0),
            free_ids: Mutex::new(Vec::new()),
            lens_v4: AtomicU64::new(0),
            lens_v6: Default::default(),
            counters: RibCounters::default(),
            max_routes_per_prefix: AtomicUsize::new(MAX_ROUTES_PER_PREFIX),
            sweeping: Mutex::new(()),
        });
        let opts = FibOptions {
            max_pending: 1 << 16,
            max_delay: Duration::from_millis(1),
            ..FibOptions::default()
        };
        // An empty FIB cannot fail to build.
        let fib: Fib<u32> = match Fib::new(opts) {
            Ok(f) => f,
            Err(e) => unreachable!("an empty FIB failed to build: {e}"),
        };
        let reader = fib.reader();
        let fib_w = Arc::new(Mutex::new(fib));
        let (fib_tx, fib_rx) = mpsc::channel();
        let (sweep_tx, sweep_rx) = mpsc::channel();
        let t1 = {
            let (inner, fib) = (Arc::clone(&inner), Arc::clone(&fib_w));
            std::thread::Builder::new()
                .name("rib-fib".into())
                .spawn(move || fib_thread(inner, fib, fib_rx))
        };
        let t2 = {
            let inner = Arc::clone(&inner);
            let fib_tx = fib_tx.clone();
            std::thread::Builder::new()
                .name("rib-sweeper".into())
                .spawn(move || sweeper_thread(inner, sweep_rx, fib_tx))
        };
        // A thread that did start ends when its channel closes: `t1`'s
        // when `fib_tx` (and the sweeper's clone) drop with this frame.
        let threads = vec![t1?, t2?];
        Ok(Rib {
            inner,
            fib: reader,
            fib_w,
            fib_tx: Some(fib_tx),
            sweep_tx: Some(sweep_tx),
            threads,
        })
    }

    pub fn peers(&self) -> &Peers {
        &self.inner.peers
    }

    pub fn attrs(&self) -> &Attrs {
        &self.inner.attrs
    }

    /// Bound the routes one prefix holds (default
    /// [`MAX_ROUTES_PER_PREFIX`]; `0`: no bound). Prefixes already past a
    /// new, lower bound keep their routes and take no new ones.
    pub fn set_max_routes_per_prefix(&self, max: usize) {
        let max = if max == 0 { usize::MAX } else { max };
        self.inner
            .max_routes_per_prefix
            .store(max, Ordering::Relaxed);
    }

    pub fn counters(&self) -> &RibCounters {
        &self.inner.counters
    }

    /// The prefix-id FIB's statistics (publications, full builds, blocks
    /// waiting for readers), as of its last publication.
    pub fn fib_stats(&self) -> ipfib::fib::FibStats {
        lock(&self.fib_w).stats().clone()
    }

    /// Register a peer (a BMP Peer Up, or a peer of an MRT dump).
    pub fn add_peer(&self, session: u64, key: PeerKey) -> Result<Arc<PeerInfo>, RibError> {
        self.inner
            .peers
            .add(session, key)
            .ok_or(RibError::PeersExhausted)
    }

    /// The interned attribute set for `a` (call once per BGP UPDATE).
    pub fn intern(&self, a: &crate::attrs::AttrsRef<'_>) -> Arc<AttrSet> {
        self.inner.attrs.intern(a)
    }

    fn send_fib(&self, ev: FibEvent) {
        if let Some(tx) = &self.fib_tx {
            let _ = tx.send(ev);
        }
    }

    /// The id of `prefix`, allocated (or recycled) when it has none.
    fn prefix_id(&self, prefix: AnyPrefix) -> Result<u32, RibError> {
        let ids = self.inner.ids.pin();
        if let Some(&id) = ids.get(&prefix) {
            return Ok(id);
        }
        // Everything a reader or another writer may reach through the id
        // exists before the id is in the map: the length bit (fallback
        // probes) and the slot, holding the prefix (see `alloc_id`).
        self.inner.note_len(&prefix);
        let id = self.inner.alloc_id(prefix)?;
        let inserted = ids.try_insert(prefix, id);
        // The map's memory freed by a writer (a table it finished copying
        // into a bigger or tombstone-free one, removed entries) waits in
        // that thread's reclamation batch until the batch fills, which a
        // writer that only inserts may never do: a month of churn kept
        // tables of 9.4 MB each. Every 4,096 new prefixes of its own, a
        // writer tries to hand its batch over (a memory barrier on every
        // CPU: not on every insert). The attempt waits for the next one
        // while more threads are on the map than the batch has objects.
        let due = MAP_INSERTS.with(|n| {
            let k = n.get().wrapping_add(1);
            n.set(k);
            k.is_multiple_of(MAP_FLUSH_EVERY)
        });
        if due {
            papaya::Guard::flush(&self.inner.ids.guard());
        }
        match inserted {
            Ok(_) => Ok(id),
            Err(e) => {
                let winner = *e.current;
                self.inner.release_id(id);
                Ok(winner)
            }
        }
    }

    /// Copy-on-write edit of one prefix's entries; `create`: allocate the
    /// prefix's id if it has none (else a prefix without one is left
    /// alone and the change is empty).
    ///
    /// The swap succeeds only over the array the edit read, and only when
    /// that array is the prefix's: an id freed (and perhaps recycled)
    /// since the map was read sends the writer back to the map. A freed
    /// id still in the map (the FIB thread between its swap and its map
    /// removal) is removed from the map here, so the retry allocates.
    fn edit(
        &self,
        prefix: AnyPrefix,
        create: bool,
        mut f: impl FnMut(&List<Entry>) -> Option<(List<Entry>, bool, bool)>,
    ) -> Result<Change, RibError> {
        loop {
            let id = if create {
                self.prefix_id(prefix)?
            } else {
                match self.inner.ids.pin().get(&prefix) {
                    Some(&id) => id,
                    None => return Ok(Change::default()),
                }
            };
            let Some(slot) = self.inner.slot(id) else {
                return Ok(Change::default());
            };
            let cur = slot.load_full();
            let Some(r) = cur.as_ref().filter(|r| r.prefix == prefix) else {
                self.inner.drop_stale(prefix, id);
                continue;
            };
            let was_empty = r.is_empty();
            // `None`: nothing to change, nothing to publish.
            let Some((list, added, removed)) = f(&r.list) else {
                return Ok(Change::default());
            };
            let change = Change {
                added,
                removed,
                became_nonempty: was_empty && !list.is_empty(),
                became_empty: !was_empty && list.is_empty(),
            };
            let new = Some(Arc::new(Routes::tagged(prefix, list, r.tag)));
            let prev = slot.compare_and_swap(&cur, new);
            if !same(&prev, &cur) {
                continue;
            }
            // Drop the reader guard before the old array (and its
            // attribute references) may drop with `cur`.
            drop(prev);
            if change.became_empty || change.became_nonempty {
                self.send_fib(FibEvent::Check(prefix, id));
            }
            return Ok(change);
        }
    }

    /// Add or replace `peer`'s route `(prefix, path_id)`; whether the RIB
    /// holds it: `false` when it was dropped (the peer is down, or the
    /// prefix holds the most routes a prefix may, see
    /// [`MAX_ROUTES_PER_PREFIX`]; a replacement of a held route is never
    /// dropped).
    ///
    /// ```
    /// # use ipfib_rib::Rib;
    /// # use ipfib_rib::{attrs::AttrsRef, AsPath, Origin, PeerKey, RibKind};
    /// # use ipfib::prefix::{AnyAddr, AnyPrefix};
    /// # fn key(addr: &str, rib: RibKind) -> PeerKey {
    /// #     let address = addr.parse().unwrap();
    /// #     PeerKey { peer_type: 0, distinguisher: 0, address, asn: 64500, bgp_id: 1, rib }
    /// # }
    /// # fn attrs<'a>(path: &'a [u32], next_hop: &str) -> AttrsRef<'a> {
    /// #     let next_hop = Some(next_hop.parse().unwrap());
    /// #     AttrsRef { as_path: path, communities: &[], large_communities: &[], next_hop,
    /// #                origin: Origin::Igp, med: None, local_pref: None }
    /// # }
    /// # let addr = |s: &str| AnyAddr::unmapped(s.parse().unwrap());
    /// # let pfx = |s: &str| s.parse::<AnyPrefix>().unwrap();
    /// let rib = Rib::new();
    /// let peer = rib.add_peer(1, key("192.0.2.1", RibKind::PrePolicy))?;
    /// let (p1, p2) = (AsPath::encode([(2, &[1][..])]), AsPath::encode([(2, &[2][..])]));
    /// rib.announce(&peer, pfx("10.0.0.0/8"), 0, &rib.intern(&attrs(&p1, "192.0.2.9")))?;
    /// rib.announce(&peer, pfx("10.0.0.0/8"), 0, &rib.intern(&attrs(&p2, "192.0.2.9")))?;
    /// let routes = rib.routes(&pfx("10.0.0.0/8"));
    /// assert_eq!(routes.len(), 1); // same peer and path id: replaced
    /// assert_eq!(routes[0].attrs.origin_asn, Some(2));
    /// # Ok::<(), ipfib_rib::rib::RibError>(())
    /// ```
    pub fn announce(
        &self,
        peer: &PeerInfo,
        prefix: AnyPrefix,
        path_id: u32,
        attrs: &Arc<AttrSet>,
    ) -> Result<bool, RibError> {
        // A peer that went down takes no more routes (its session starts a
        // new peer at its next Peer Up). Contract: a peer's writes and its
        // Peer Down come from one thread, so none can slip in after the
        // sweeper passed.
        if !self.inner.peers.is_live(peer.id) {
            self.inner
                .counters
                .dropped_dead
                .fetch_add(1, Ordering::Relaxed);
            return Ok(false);
        }
        let id = self.prefix_id(prefix)?;
        let max = self.inner.max_routes_per_prefix.load(Ordering::Relaxed);
        // Unchanged re-announcement (common in pre-policy feeds), or a new
        // route of a full prefix: no copy. (`edit` decides again on what
        // it copies: writers may have changed the prefix since.)
        if let Some(slot) = self.inner.slot(id) {
            let cur = slot.load();
            if let Some(r) = cur.as_ref().filter(|r| r.prefix == prefix) {
                let held = r.get(peer.id, path_id);
                if held.is_some_and(|e| Arc::ptr_eq(&e.attrs, attrs)) {
                    self.inner
                        .counters
                        .announcements
                        .fetch_add(1, Ordering::Relaxed);
                    return Ok(true);
                }
                if held.is_none() && r.len() >= max {
                    self.inner
                        .counters
                        .over_prefix_limit
                        .fetch_add(1, Ordering::Relaxed);
                    return Ok(false);
                }
            }
        }
        let inner = &self.inner;
        let new = Entry {
            peer: peer.id,
            path_id,
            attrs: Arc::clone(attrs),
        };
        let mut full = false;
        let change = self.edit(prefix, true, |list| {
            full = list.get(new.key()).is_none() && list.len() >= max;
            if full {
                return None;
            }
            let (list, old) = list.upsert(new.clone(), &|e| inner.pref_key(e));
            // A replaced route let go of its attribute set.
            Some((list, old.is_none(), old.is_some()))
        })?;
        if full {
            inner
                .counters
                .over_prefix_limit
                .fetch_add(1, Ordering::Relaxed);
            return Ok(false);
        }
        if change.added {
            peer.routes.fetch_add(1, Ordering::Relaxed);
        }
        if change.removed {
            inner.attrs.released(1);
        }
        inner.counters.announcements.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Whether peer `peer` holds a route `(prefix, path_id)` (up or not):
    /// O(log n) in the prefix's routes, no allocation.
    pub fn holds(&self, peer: u32, prefix: &AnyPrefix, path_id: u32) -> bool {
        let Some(&id) = self.inner.ids.pin().get(prefix) else {
            return false;
        };
        self.inner.slot(id).is_some_and(|s| {
            s.load()
                .as_ref()
                .is_some_and(|r| r.prefix == *prefix && r.get(peer, path_id).is_some())
        })
    }

    /// Remove `peer`'s route `(prefix, path_id)`; whether it existed.
    ///
    /// ```
    /// # use ipfib_rib::Rib;
    /// # use ipfib_rib::{attrs::AttrsRef, AsPath, Origin, PeerKey, RibKind};
    /// # use ipfib::prefix::{AnyAddr, AnyPrefix};
    /// # fn key(addr: &str, rib: RibKind) -> PeerKey {
    /// #     let address = addr.parse().unwrap();
    /// #     PeerKey { peer_type: 0, distinguisher: 0, address, asn: 64500, bgp_id: 1, rib }
    /// # }
    /// # fn attrs<'a>(path: &'a [u32], next_hop: &str) -> AttrsRef<'a> {
    /// #     let next_hop = Some(next_hop.parse().unwrap());
    /// #     AttrsRef { as_path: path, communities: &[], large_communities: &[], next_hop,
    /// #                origin: Origin::Igp, med: None, local_pref: None }
    /// # }
    /// # let addr = |s: &str| AnyAddr::unmapped(s.parse().unwrap());
    /// # let pfx = |s: &str| s.parse::<AnyPrefix>().unwrap();
    /// let rib = Rib::new();
    /// let peer = rib.add_peer(1, key("192.0.2.1", RibKind::PrePolicy))?;
    /// let set = rib.intern(&attrs(&[], "192.0.2.1"));
    /// rib.announce(&peer, pfx("2001:db8::/32"), 7, &set)?;
    /// assert!(!rib.withdraw(&peer, pfx("2001:db8::/32"), 0)); // other path id
    /// assert!(rib.withdraw(&peer, pfx("2001:db8::/32"), 7));
    /// assert!(rib.routes(&pfx("2001:db8::/32")).is_empty());
    /// # Ok::<(), ipfib_rib::rib::RibError>(())
    /// ```
    pub fn withdraw(&self, peer: &PeerInfo, prefix: AnyPrefix, path_id: u32) -> bool {
        self.inner
            .counters
            .withdrawals
            .fetch_add(1, Ordering::Relaxed);
        let Some(&id) = self.inner.ids.pin().get(&prefix) else {
            self.inner
                .counters
                .withdrawals_unknown
                .fetch_add(1, Ordering::Relaxed);
            return false;
        };
        let has = self.inner.slot(id).is_some_and(|s| {
            s.load()
                .as_ref()
                .is_some_and(|r| r.prefix == prefix && r.get(peer.id, path_id).is_some())
        });
        if !has {
            self.inner
                .counters
                .withdrawals_unknown
                .fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let change = self
            .edit(prefix, false, |list| {
                // Nothing removed: nothing to publish.
                let k = entry_key(peer.id, path_id);
                let (list, _) = list.remove(k, &|e| self.inner.pref_key(e))?;
                Some((list, false, true))
            })
            .unwrap_or_default();
        if change.removed {
            peer.routes.fetch_sub(1, Ordering::Relaxed);
            self.inner.attrs.released(1);
        } else {
            self.inner
                .counters
                .withdrawals_unknown
                .fetch_add(1, Ordering::Relaxed);
        }
        change.removed
    }

    /// Peer Down (or its session's grace period ended): its routes vanish
    /// from lookups at once (one store); the sweeper frees them later.
    /// Idempotent; whether the peer was up.
    ///
    /// ```
    /// # use ipfib_rib::Rib;
    /// # use ipfib_rib::{attrs::AttrsRef, AsPath, Origin, PeerKey, RibKind};
    /// # use ipfib::prefix::{AnyAddr, AnyPrefix};
    /// # fn key(addr: &str, rib: RibKind) -> PeerKey {
    /// #     let address = addr.parse().unwrap();
    /// #     PeerKey { peer_type: 0, distinguisher: 0, address, asn: 64500, bgp_id: 1, rib }
    /// # }
    /// # fn attrs<'a>(path: &'a [u32], next_hop: &str) -> AttrsRef<'a> {
    /// #     let next_hop = Some(next_hop.parse().unwrap());
    /// #     AttrsRef { as_path: path, communities: &[], large_communities: &[], next_hop,
    /// #                origin: Origin::Igp, med: None, local_pref: None }
    /// # }
    /// # let addr = |s: &str| AnyAddr::unmapped(s.parse().unwrap());
    /// # let pfx = |s: &str| s.parse::<AnyPrefix>().unwrap();
    /// let rib = Rib::new();
    /// let peer = rib.add_peer(1, key("192.0.2.1", RibKind::PrePolicy))?;
    /// rib.announce(&peer, pfx("10.0.0.0/8"), 0, &rib.intern(&attrs(&[], "192.0.2.1")))?;
    /// assert!(rib.peer_down(peer.id));
    /// assert!(!rib.peer_down(peer.id));
    /// assert!(!peer.is_up() && rib.routes(&pfx("10.0.0.0/8")).is_empty());
    /// # Ok::<(), ipfib_rib::rib::RibError>(())
    /// ```
    pub fn peer_down(&self, peer: u32) -> bool {
        let was_up = self.inner.peers.mark_down(peer);
        if was_up {
            if let Some(tx) = &self.sweep_tx {
                let _ = tx.send(());
            }
        }
        was_up
    }

    /// Wait until every prefix change made before this call is visible to
    /// longest-prefix lookups (tests, `--mrt` bootstrap).
    pub fn sync(&self) {
        let (tx, rx) = mpsc::channel();
        self.send_fib(FibEvent::Sync(tx));
        let _ = rx.recv_timeout(Duration::from_secs(60));
    }

    /// Remove the entries of every peer that is down and not yet swept;
    /// (peers swept, routes removed). The sweeper thread calls this after
    /// each Peer Down; it is public for tests and benchmarks.
    pub fn sweep(&self) -> (usize, u64) {
        sweep(&self.inner, &|ev| self.send_fib(ev))
    }

    /// The longest-prefix match for `addr` among the routes `q` allows,
    /// passed to `f` (no allocation, no reference counting).
    ///
    /// ```
    /// # use ipfib_rib::{PeerFilter, Query, Rib};
    /// # use ipfib_rib::{attrs::AttrsRef, AsPath, Origin, PeerKey, RibKind};
    /// # use ipfib::prefix::{AnyAddr, AnyPrefix};
    /// # fn key(addr: &str, rib: RibKind) -> PeerKey {
    /// #     let address = addr.parse().unwrap();
    /// #     PeerKey { peer_type: 0, distinguisher: 0, address, asn: 64500, bgp_id: 1, rib }
    /// # }
    /// # fn attrs<'a>(path: &'a [u32], next_hop: &str) -> AttrsRef<'a> {
    /// #     let next_hop = Some(next_hop.parse().unwrap());
    /// #     AttrsRef { as_path: path, communities: &[], large_communities: &[], next_hop,
    /// #                origin: Origin::Igp, med: None, local_pref: None }
    /// # }
    /// # let addr = |s: &str| AnyAddr::unmapped(s.parse().unwrap());
    /// # let pfx = |s: &str| s.parse::<AnyPrefix>().unwrap();
    /// let rib = Rib::new();
    /// let a = rib.add_peer(1, key("192.0.2.1", RibKind::PrePolicy))?;
    /// let b = rib.add_peer(2, key("192.0.2.2", RibKind::PrePolicy))?;
    /// rib.announce(&a, pfx("10.0.0.0/8"), 0, &rib.intern(&attrs(&[], "192.0.2.1")))?;
    /// rib.announce(&b, pfx("10.1.0.0/16"), 0, &rib.intern(&attrs(&[], "192.0.2.2")))?;
    /// rib.sync();
    /// let len = |q: &Query| rib.lookup_with(addr("10.1.2.3"), q, |p, _| p.len());
    /// assert_eq!(len(&Query::default()), Some(16));
    /// let only_a = Query { peer: Some(PeerFilter::Id(a.id)), ..Query::default() };
    /// assert_eq!(len(&only_a), Some(8));
    /// # Ok::<(), ipfib_rib::rib::RibError>(())
    /// ```
    #[inline]
    pub fn lookup_with<R>(
        &self,
        addr: AnyAddr,
        q: &Query,
        f: impl FnOnce(&AnyPrefix, &Entry) -> R,
    ) -> Option<R> {
        let snap = self.fib.snapshot();
        let tag = *snap.lookup(addr)?;
        self.resolve(addr, tag, q, f)
    }

    /// As [`Rib::lookup_with`], returning an owned [`Route`].
    pub fn lookup(&self, addr: AnyAddr, q: &Query) -> Option<Route> {
        self.lookup_with(addr, q, |p, e| (*p, e.clone()))
            .and_then(|(prefix, e)| self.route_of(prefix, e))
    }

    fn route_of(&self, prefix: AnyPrefix, e: Entry) -> Option<Route> {
        Some(Route {
            prefix,
            peer: self.inner.peers.get(e.peer)?,
            path_id: e.path_id,
            attrs: e.attrs,
        })
    }

    /// From the FIB's answer (prefix id) to the chosen route, stepping to
    /// covering prefixes when nothing there fits the query.
    #[inline]
    fn resolve<R>(
        &self,
        addr: AnyAddr,
        tag: u32,
        q: &Query,
        f: impl FnOnce(&AnyPrefix, &Entry) -> R,
    ) -> Option<R> {
        let inner = &self.inner;
        let slot = inner.slot(tag & ID_MASK)?;
        let guard = slot.load();
        // The id may have been freed or recycled since the snapshot was
        // published (a tag of another life, see [`ID_BITS`]): probe the
        // covering prefixes.
        let Some(routes) = guard.as_ref().filter(|r| r.tag == tag) else {
            drop(guard);
            return self.fallback(addr, full_len(addr), q, f);
        };
        if let Some(e) = inner.choose(routes, q) {
            return Some(f(&routes.prefix, e));
        }
        let start = routes.prefix.len();
        drop(guard);
        self.fallback(addr, start, q, f)
    }

    #[cold]
    fn fallback<R>(
        &self,
        addr: AnyAddr,
        below: u8,
        q: &Query,
        f: impl FnOnce(&AnyPrefix, &Entry) -> R,
    ) -> Option<R> {
        let inner = &self.inner;
        let v6 = matches!(addr, AnyAddr::V6(_));
        let ids = inner.ids.pin();
        for len in (0..below).rev() {
            if !inner.has_len(v6, len) {
                continue;
            }
            let p = prefix_of(addr, len);
            let Some(&id) = ids.get(&p) else { continue };
            let Some(slot) = inner.slot(id) else { continue };
            let guard = slot.load();
            // `p`'s id may have been recycled since the map was read.
            if let Some(routes) = guard.as_ref().filter(|r| r.prefix == p) {
                if let Some(e) = inner.choose(routes, q) {
                    return Some(f(&routes.prefix, e));
                }
            }
        }
        None
    }

    /// Batch lookups of IPv4 addresses (flow enrichment): one FIB
    /// snapshot per call, the engines' batch path.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    pub fn lookup_batch_v4(&self, addrs: &[u32], q: &Query, out: &mut [Option<Hit>]) {
        assert!(out.len() >= addrs.len(), "out is shorter than addrs");
        let snap = self.fib.snapshot();
        let mut idx = [0u32; 32];
        let mut ids = [None; 32];
        for (a, o) in addrs.chunks(32).zip(out.chunks_mut(32)) {
            snap.lookup_batch_v4(a, &mut idx[..a.len()]);
            for (id, &ix) in ids.iter_mut().zip(&idx[..a.len()]) {
                *id = snap.value_v4(ix).copied();
            }
            self.resolve_batch(|i| AnyAddr::V4(a[i]), &ids[..a.len()], q, o);
        }
    }

    /// As [`Rib::lookup_batch_v4`], for IPv6.
    pub fn lookup_batch_v6(&self, addrs: &[u128], q: &Query, out: &mut [Option<Hit>]) {
        assert!(out.len() >= addrs.len(), "out is shorter than addrs");
        let snap = self.fib.snapshot();
        let mut idx = [0u32; 32];
        let mut ids = [None; 32];
        for (a, o) in addrs.chunks(32).zip(out.chunks_mut(32)) {
            snap.lookup_batch_v6(a, &mut idx[..a.len()]);
            for (id, &ix) in ids.iter_mut().zip(&idx[..a.len()]) {
                *id = snap.value_v6(ix).copied();
            }
            self.resolve_batch(|i| AnyAddr::V6(a[i]), &ids[..a.len()], q, o);
        }
    }

    /// Prefix ids to hits, the misses of a batch overlapped: the slots of
    /// the whole batch are prefetched, then groups of 8 (the cheap guards
    /// arc-swap gives a thread) load their route arrays and prefetch them,
    /// then their chosen attributes, before any is used.
    fn resolve_batch(
        &self,
        addr: impl Fn(usize) -> AnyAddr,
        ids: &[Option<u32>],
        q: &Query,
        out: &mut [Option<Hit>],
    ) {
        let inner = &self.inner;
        for tag in ids.iter().flatten() {
            if let Some(slot) = inner.slot(tag & ID_MASK) {
                prefetch(slot);
            }
        }
        for (g, (ids, out)) in ids.chunks(8).zip(out.chunks_mut(8)).enumerate() {
            let guards: [_; 8] = std::array::from_fn(|j| {
                let slot = inner.slot(ids.get(j).copied().flatten()? & ID_MASK)?;
                let guard = slot.load();
                if let Some(r) = guard.as_ref() {
                    prefetch(&**r);
                }
                Some(guard)
            });
            for guard in guards.iter().flatten() {
                if let Some(b) = guard.as_ref().and_then(|r| r.best.as_ref()) {
                    prefetch(&*b.attrs);
                }
            }
            for (j, (guard, o)) in guards.iter().zip(out.iter_mut()).enumerate() {
                let a = addr(g * 8 + j);
                let tag = ids.get(j).copied().flatten();
                *o = match guard.as_ref().map(|g| g.as_ref()) {
                    Some(Some(routes)) if Some(routes.tag) == tag => {
                        match inner.choose(routes, q) {
                            Some(e) => Some(hit(&routes.prefix, e)),
                            None => self.fallback(a, routes.prefix.len(), q, hit),
                        }
                    }
                    // Freed or recycled since the snapshot (see `resolve`).
                    Some(_) => self.fallback(a, full_len(a), q, hit),
                    None => None,
                };
            }
        }
    }

    /// Every live route of exactly `prefix`, in preference order.
    ///
    /// ```
    /// # use ipfib_rib::Rib;
    /// # use ipfib_rib::{attrs::AttrsRef, AsPath, Origin, PeerKey, RibKind};
    /// # use ipfib::prefix::{AnyAddr, AnyPrefix};
    /// # fn key(addr: &str, rib: RibKind) -> PeerKey {
    /// #     let address = addr.parse().unwrap();
    /// #     PeerKey { peer_type: 0, distinguisher: 0, address, asn: 64500, bgp_id: 1, rib }
    /// # }
    /// # fn attrs<'a>(path: &'a [u32], next_hop: &str) -> AttrsRef<'a> {
    /// #     let next_hop = Some(next_hop.parse().unwrap());
    /// #     AttrsRef { as_path: path, communities: &[], large_communities: &[], next_hop,
    /// #                origin: Origin::Igp, med: None, local_pref: None }
    /// # }
    /// # let addr = |s: &str| AnyAddr::unmapped(s.parse().unwrap());
    /// # let pfx = |s: &str| s.parse::<AnyPrefix>().unwrap();
    /// let rib = Rib::new();
    /// let pre = rib.add_peer(1, key("192.0.2.1", RibKind::PrePolicy))?;
    /// let loc = rib.add_peer(1, key("192.0.2.1", RibKind::LocRib))?;
    /// let set = rib.intern(&attrs(&[], "192.0.2.1"));
    /// rib.announce(&pre, pfx("10.0.0.0/8"), 0, &set)?;
    /// rib.announce(&loc, pfx("10.0.0.0/8"), 0, &set)?;
    /// let kinds: Vec<_> = rib.routes(&pfx("10.0.0.0/8")).iter().map(|r| r.peer.key.rib).collect();
    /// assert_eq!(kinds, [RibKind::LocRib, RibKind::PrePolicy]); // Loc-RIB preferred
    /// # Ok::<(), ipfib_rib::rib::RibError>(())
    /// ```
    pub fn routes(&self, prefix: &AnyPrefix) -> Vec<Route> {
        let Some(&id) = self.inner.ids.pin().get(prefix) else {
            return Vec::new();
        };
        self.live_routes(*prefix, id, &Query::everything())
    }

    /// `prefix`'s live routes that `q` allows, through its id (none if the
    /// id was freed or recycled since it was read).
    fn live_routes(&self, prefix: AnyPrefix, id: u32, q: &Query) -> Vec<Route> {
        let Some(slot) = self.inner.slot(id) else {
            return Vec::new();
        };
        let guard = slot.load();
        let Some(r) = guard.as_ref().filter(|r| r.prefix == prefix) else {
            return Vec::new();
        };
        let fits = |e: &&Entry| self.inner.peers.is_live(e.peer) && self.inner.peer_fits(e, q);
        let route = |e: &Entry| self.route_of(r.prefix, e.clone());
        match &r.list {
            // Already in preference order.
            List::Flat(v) => v.iter().filter(fits).filter_map(route).collect(),
            // The fitting entries only, each key computed once.
            List::Tree(_) => {
                let mut v: Vec<&Entry> = r.iter().filter(fits).collect();
                v.sort_by_cached_key(|e| self.inner.pref_key(e));
                v.into_iter().filter_map(route).collect()
            }
        }
    }

    /// Routes of `prefix` and, per `m`, of its more or less specific
    /// prefixes (ordered by prefix), at most `limit` routes. `Longer`
    /// scans every prefix of the RIB (tens of ms at a full table): for
    /// looking-glass queries, not for the flow path.
    ///
    /// ```
    /// # use ipfib_rib::{Match, Rib};
    /// # use ipfib_rib::{attrs::AttrsRef, AsPath, Origin, PeerKey, RibKind};
    /// # use ipfib::prefix::{AnyAddr, AnyPrefix};
    /// # fn key(addr: &str, rib: RibKind) -> PeerKey {
    /// #     let address = addr.parse().unwrap();
    /// #     PeerKey { peer_type: 0, distinguisher: 0, address, asn: 64500, bgp_id: 1, rib }
    /// # }
    /// # fn attrs<'a>(path: &'a [u32], next_hop: &str) -> AttrsRef<'a> {
    /// #     let next_hop = Some(next_hop.parse().unwrap());
    /// #     AttrsRef { as_path: path, communities: &[], large_communities: &[], next_hop,
    /// #                origin: Origin::Igp, med: None, local_pref: None }
    /// # }
    /// # let addr = |s: &str| AnyAddr::unmapped(s.parse().unwrap());
    /// # let pfx = |s: &str| s.parse::<AnyPrefix>().unwrap();
    /// let rib = Rib::new();
    /// let peer = rib.add_peer(1, key("192.0.2.1", RibKind::PrePolicy))?;
    /// let set = rib.intern(&attrs(&[], "192.0.2.1"));
    /// for p in ["10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "11.0.0.0/8"] {
    ///     rib.announce(&peer, pfx(p), 0, &set)?;
    /// }
    /// let found = |m| rib.routes_matching(&pfx("10.1.0.0/16"), m, 10).len();
    /// assert_eq!((found(Match::Exact), found(Match::Longer), found(Match::Shorter)), (1, 2, 2));
    /// # Ok::<(), ipfib_rib::rib::RibError>(())
    /// ```
    pub fn routes_matching(&self, prefix: &AnyPrefix, m: Match, limit: usize) -> Vec<Route> {
        self.routes_matching_in(prefix, m, limit, &Query::everything())
    }

    /// As [`Rib::routes_matching`], only the routes `q` allows (its
    /// instance, RIB kinds and peer; its next hop is ignored).
    pub fn routes_matching_in(
        &self,
        prefix: &AnyPrefix,
        m: Match,
        limit: usize,
        q: &Query,
    ) -> Vec<Route> {
        let mut prefixes: Vec<(AnyPrefix, u32)> = match m {
            Match::Exact => self
                .inner
                .ids
                .pin()
                .get(prefix)
                .map(|&id| vec![(*prefix, id)])
                .unwrap_or_default(),
            Match::Shorter => {
                let ids = self.inner.ids.pin();
                let v6 = prefix.family() == 6;
                let addr = match prefix {
                    AnyPrefix::V4(p) => AnyAddr::V4(p.addr()),
                    AnyPrefix::V6(p) => AnyAddr::V6(p.addr()),
                };
                (0..=prefix.len())
                    .filter(|&l| self.inner.has_len(v6, l))
                    .filter_map(|l| {
                        let p = prefix_of(addr, l);
                        ids.get(&p).map(|&id| (p, id))
                    })
                    .collect()
            }
            Match::Longer => self
                .inner
                .ids
                .pin()
                .iter()
                .filter(|(p, _)| covers(prefix, p))
                .map(|(p, &id)| (*p, id))
                .collect(),
        };
        prefixes.sort();
        let mut out = Vec::new();
        for (p, id) in prefixes {
            for r in self.live_routes(p, id, q) {
                if out.len() >= limit {
                    return out;
                }
                out.push(r);
            }
        }
        out
    }

    /// Prefixes with routes under `within` (itself included), in prefix
    /// order, strictly after `after` when given, at most `max`: an ordered
    /// walk of the covered subtree of the FIB thread's route table that
    /// stops at `max` (a page costs its size, not the RIB's). The same
    /// staleness as longest-prefix lookups (a prefix appears after the FIB
    /// thread's next batch); a prefix whose peers are down but not yet
    /// swept is still listed. `after` need not exist any more: the walk
    /// resumes where it would have been.
    pub fn prefixes_under(
        &self,
        within: &AnyPrefix,
        after: Option<&AnyPrefix>,
        max: usize,
    ) -> Vec<AnyPrefix> {
        crate::walk::under_any(&lock(&self.fib_w), within, after, max)
    }

    /// Prefixes known: those with routes (live or of peers not yet
    /// swept), and those that just lost their last route and whose id the
    /// FIB thread has not freed yet.
    pub fn prefix_count(&self) -> usize {
        self.inner.ids.len()
    }

    /// Slots ever used (the high-water mark of prefix ids) and ids free
    /// for reuse: `prefix_count() + free` is about `high`.
    pub fn prefix_ids(&self) -> (u32, usize) {
        let free = self
            .inner
            .free_ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len();
        (self.inner.next_id.load(Ordering::Acquire), free)
    }

    /// Live routes over every live peer.
    pub fn route_count(&self) -> u64 {
        self.inner
            .peers
            .all()
            .filter(|p| p.is_up())
            .map(|p| p.routes.load(Ordering::Relaxed))
            .sum()
    }

    /// Visit every prefix with its entries (live or not), in no order.
    pub fn for_each_prefix(&self, mut f: impl FnMut(&Routes)) {
        let n = self.inner.next_id.load(Ordering::Acquire);
        for id in 0..n {
            if let Some(slot) = self.inner.slot(id) {
                if let Some(r) = slot.load().as_ref() {
                    f(r);
                }
            }
        }
    }

    /// Panics unless every prefix's route list keeps its invariants
    /// (order, summaries, node widths): for tests and fuzzing. Order is
    /// checked among live peers' routes: a dead peer freed by the sweeper
    /// while this runs ranks otherwise than when its routes were placed.
    /// Call it with no peer going down meanwhile.
    #[doc(hidden)]
    pub fn validate_route_lists(&self) {
        self.for_each_prefix(|r| {
            r.list.validate(&|e| self.inner.pref_key(e), &|e| {
                self.inner.peers.is_live(e.peer)
            });
        });
    }
}

impl Default for Rib {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Rib {
    fn drop(&mut self) {
        // Closing the channels ends the threads: the sweeper first, since
        // it holds a sender of the FIB thread's channel.
        self.sweep_tx.take();
        self.fib_tx.take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn hit(p: &AnyPrefix, e: &Entry) -> Hit {
    Hit {
        prefix_len: p.len(),
        origin_asn: e.attrs.origin_asn,
        peer: e.peer,
        next_hop: e.attrs.next_hop,
    }
}

/// How long the FIB thread sleeps between drains while changes flow: a
/// writer's send then finds the thread asleep and wakes nobody (a wake-up
/// per new prefix cost writers a system call each).
const FIB_POLL: Duration = Duration::from_micros(250);
/// Idle drains before the FIB thread blocks on its channel again.
const FIB_IDLE_ROUNDS: u32 = 8;

/// The FIB thread: applies prefix-set changes, publishes at most every
/// `max_delay` (plus one poll), answers `Sync`.
fn fib_thread(inner: Arc<Inner>, shared: Arc<Mutex<Fib<u32>>>, rx: Receiver<FibEvent>) {
    let mut waiting: Vec<Sender<()>> = Vec::new();
    let mut idle_rounds = FIB_IDLE_ROUNDS;
    loop {
        let mut batch = Vec::new();
        let pending = lock(&shared).pending();
        if idle_rounds >= FIB_IDLE_ROUNDS && pending == 0 {
            // Nothing flowing: block until the next change.
            match rx.recv() {
                Ok(ev) => push_event(ev, &mut batch, &mut waiting),
                Err(_) => return,
            }
        } else {
            std::thread::sleep(FIB_POLL);
        }
        loop {
            match rx.try_recv() {
                Ok(ev) => push_event(ev, &mut batch, &mut waiting),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => return,
            }
        }
        idle_rounds = if batch.is_empty() && waiting.is_empty() {
            idle_rounds.saturating_add(1)
        } else {
            0
        };
        // Held for the batch and its publication; ordered walks wait.
        let mut fib = lock(&shared);
        for (p, id) in batch {
            let Some(cur) = inner.slot(id).and_then(|s| s.load_full()) else {
                // Freed: its prefix left the FIB when it was.
                continue;
            };
            if cur.prefix != p {
                // Freed and recycled: the same.
                continue;
            }
            // Errors (a failed publication) leave changes pending; the
            // next publication retries them.
            if !cur.is_empty() {
                let _ = fib.insert(p, cur.tag);
            } else if inner.free_prefix(p, id, &cur) {
                // Removed after the slot emptied: a writer that adds the
                // prefix again gets a new id, whose event comes after
                // this one, so the FIB never loses the new mapping.
                let _ = fib.remove(&p);
            } else if inner.ids.pin().get(&p) == Some(&id) {
                // Not freed (a route arrived since, or the id is just
                // allocated): the slot's next change sends its own event;
                // until then the FIB follows the slot.
                let _ = fib.remove(&p);
            }
        }
        if !waiting.is_empty() {
            if fib.flush().is_ok() {
                for tx in waiting.drain(..) {
                    let _ = tx.send(());
                }
            }
        } else {
            let _ = fib.publish_if_due();
        }
        let c = &inner.counters;
        let published = fib.stats().publications;
        if c.fib_publications.swap(published, Ordering::Relaxed) != published {
            c.fib_bytes
                .store(fib.footprint_bytes() as u64, Ordering::Relaxed);
        }
    }
}

/// The FIB writer's lock; a panic while it was held leaves a FIB that is
/// still consistent (each call completes or leaves changes pending).
fn lock(m: &Mutex<Fib<u32>>) -> MutexGuard<'_, Fib<u32>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn push_event(ev: FibEvent, batch: &mut Vec<(AnyPrefix, u32)>, waiting: &mut Vec<Sender<()>>) {
    match ev {
        FibEvent::Check(p, id) => batch.push((p, id)),
        FibEvent::Sync(tx) => waiting.push(tx),
    }
}

/// How often the sweeper wakes without a Peer Down: to free peers it
/// swept and to give free heap back to the OS.
const SWEEP_PERIOD: Duration = Duration::from_secs(1);

/// The sweeper: after each Peer Down, drops the dead peers' entries (one
/// walk of the prefixes for every peer that went down since the last walk),
/// tells the FIB thread about prefixes it left empty and frees the peers;
/// every [`SWEEP_PERIOD`], gives free heap memory back to the OS when
/// enough was freed since the last time.
fn sweeper_thread(inner: Arc<Inner>, rx: Receiver<()>, fib_tx: Sender<FibEvent>) {
    lower_priority();
    let mut trim = crate::heap::Trimmer::default();
    loop {
        match rx.recv_timeout(SWEEP_PERIOD) {
            Ok(()) => while rx.try_recv().is_ok() {},
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        sweep(&inner, &|ev| {
            let _ = fib_tx.send(ev);
        });
        let freed = inner.counters.prefixes_freed.load(Ordering::Relaxed)
            + inner.counters.peers_freed.load(Ordering::Relaxed)
            + inner.attrs.purged() / crate::heap::PURGED_PER_FREE;
        if trim.due(freed) {
            inner.counters.heap_trims.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The sweeper runs at a low priority (nice 10, about a tenth of a core's
/// share against normal threads): on a busy machine a peer's memory comes
/// back later, but readers and the sessions' writers keep most of their
/// CPU time (on 2 cores, a normal-priority sweeper took time slices from
/// the reader and the other sessions; at nice 19 it starved for minutes).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no preconditions; setpriority only changes this
    // thread's nice value (PRIO_PROCESS with a thread id applies to that
    // thread on Linux) and reports failure through its return value,
    // which is ignored: the sweeper then runs at normal priority.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}

fn sweep(inner: &Inner, send: &dyn Fn(FibEvent)) -> (usize, u64) {
    let _one_at_a_time = inner.sweeping.lock().unwrap_or_else(|e| e.into_inner());
    let dead: Vec<u32> = inner
        .peers
        .all()
        .filter(|p| !p.is_up() && !p.swept.load(Ordering::Acquire))
        .map(|p| p.id)
        .collect();
    if dead.is_empty() {
        // A sweep running beside another (the public call beside the
        // thread) may find the peers swept and not yet freed.
        for p in inner.peers.all() {
            if !p.is_up() && p.swept.load(Ordering::Acquire) && inner.peers.free(p.id) {
                inner.counters.peers_freed.fetch_add(1, Ordering::Relaxed);
            }
        }
        return (0, 0);
    }
    let mut dead = dead;
    dead.sort_unstable();
    let is_target = |peer: u32| dead.binary_search(&peer).is_ok();
    let mut removed = 0u64;
    let n = inner.next_id.load(Ordering::Acquire);
    for id in 0..n {
        let Some(slot) = inner.slot(id) else { continue };
        let needs = slot
            .load()
            .as_ref()
            .is_some_and(|r| r.iter().any(|e| is_target(e.peer)));
        if !needs {
            continue;
        }
        let mut gone = 0u64;
        let mut emptied = None;
        slot.rcu(|cur| {
            let r = cur.as_ref()?;
            let list = r
                .list
                .retain(|e| !is_target(e.peer), &|e| inner.pref_key(e));
            gone = (r.len() - list.len()) as u64;
            emptied = (list.is_empty() && !r.is_empty()).then_some(r.prefix);
            Some(Arc::new(Routes::tagged(r.prefix, list, r.tag)))
        });
        removed += gone;
        if let Some(p) = emptied {
            send(FibEvent::Check(p, id));
        }
    }
    // No current route array names a dead peer now, and none can again
    // (a peer that is down takes no routes): the registry lets them go.
    for &id in &dead {
        if let Some(p) = inner.peers.get(id) {
            p.routes.store(0, Ordering::Relaxed);
            p.swept.store(true, Ordering::Release);
        }
        if inner.peers.free(id) {
            inner.counters.peers_freed.fetch_add(1, Ordering::Relaxed);
        }
    }
    inner.attrs.purge();
    inner.counters.sweeps.fetch_add(1, Ordering::Relaxed);
    inner
        .counters
        .swept_routes
        .fetch_add(removed, Ordering::Relaxed);
    (dead.len(), removed)
}

/// A full table holds a million of these: the route list's tree form
/// must not make every prefix pay for it (the list is as big as the plain
/// array it replaced).
#[test]
fn a_route_list_costs_no_more_than_an_array() {
    use std::mem::size_of;
    assert_eq!(size_of::<List<Entry>>(), size_of::<Box<[Entry]>>());
    // The prefix, the best entry inline, the list and the tag: 96 bytes
    // with the plain array too.
    assert!(size_of::<Routes>() <= 96, "{}", size_of::<Routes>());
}

/// The interleaving in which a writer that saw its prefix's slot freed
/// resumes after the id was handed back to the same prefix, replayed step
/// by step (the real-time race is too narrow to hit reliably).
#[cfg(test)]
mod writer_race {
    use super::*;
    use crate::attrs::AttrsRef;
    use crate::peers::{PeerKey, RibKind};

    fn key(i: u32) -> PeerKey {
        PeerKey {
            peer_type: 0,
            distinguisher: 0,
            address: "127.0.0.1".parse().unwrap(),
            asn: 65000,
            bgp_id: i,
            rib: RibKind::PrePolicy,
        }
    }

    #[test]
    fn a_stale_writer_never_removes_a_reallocated_entry() {
        let rib = Rib::new();
        let (a, b, c) = (
            rib.add_peer(1, key(1)).unwrap(),
            rib.add_peer(1, key(2)).unwrap(),
            rib.add_peer(1, key(3)).unwrap(),
        );
        let set = rib.intern(&AttrsRef::default());
        let p: AnyPrefix = "10.0.0.0/24".parse().unwrap();
        rib.announce(&a, p, 0, &set).unwrap();
        rib.sync();
        // T1 (peer B's writer, in `edit`): reads p's id from the map ...
        let t1_id = *rib.inner.ids.pin().get(&p).unwrap();
        // ... peer A withdraws, the FIB thread frees the id ...
        assert!(rib.withdraw(&a, p, 0));
        rib.sync();
        // ... T1 loads the slot: empty, so it heads for `remove_if`; paused.
        assert!(rib.inner.slot(t1_id).unwrap().load().is_none());
        // T2 (peer C) announces p: the free list (LIFO) hands back t1_id.
        rib.announce(&c, p, 0, &set).unwrap();
        assert_eq!(*rib.inner.ids.pin().get(&p).unwrap(), t1_id);
        // T1 resumes with its stale observation: `edit` drops the map
        // entry only while the slot does not hold p, so T2's live entry
        // stays ...
        rib.inner.drop_stale(p, t1_id);
        assert_eq!(rib.inner.ids.pin().get(&p), Some(&t1_id));
        // ... and T1's retry finds it and adds B's route beside C's.
        rib.announce(&b, p, 0, &set).unwrap();
        rib.sync();
        // Had the entry gone, C's route would live in an orphaned slot:
        // lost to exact queries, and C's withdraw could not find it.
        assert_eq!(rib.routes(&p).len(), 2, "peer C's route lost");
        assert!(rib.withdraw(&c, p, 0), "peer C cannot withdraw its route");
    }
}
