//! Peers: ids with a generation, liveness in a word per slot.
//!
//! A peer is one source of routes: a BGP neighbour as one BMP session
//! reports it, in one RIB kind and instance ([`PeerKey`]), or a peer of an
//! MRT dump. The same router seen by two sessions, or pre- and
//! post-policy, are different peers. The registry does not look peers up
//! by key: every registration makes a new peer with a new id, even for a
//! key already registered (a BMP session keeps its own map from what it
//! was told to the peers it registered, and may register two peers with
//! one key, e.g. a neighbour's unicast and labeled routes). A peer's id is
//! its registry slot plus the slot's generation, so a slot freed by a
//! swept peer and reused gives a new id (see [`Peers`]); Peer Down is one
//! compare-and-swap of the slot's liveness word.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwapOption;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::seg::Segmented;

/// Which table of the monitored router a peer's routes come from.
///
/// ```
/// use ipfib_rib::RibKind;
///
/// assert!(RibKind::LocRib.rank() < RibKind::PostPolicy.rank());
/// assert_eq!(RibKind::Mrt.rank(), RibKind::PrePolicy.rank());
/// assert_eq!(RibKind::PostPolicy.as_str(), "post-policy");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RibKind {
    /// RFC 9069 Loc-RIB: the router's own selected routes.
    LocRib,
    /// Adj-RIB-In after inbound policy (RFC 7854 L flag set).
    PostPolicy,
    /// Adj-RIB-In before inbound policy.
    PrePolicy,
    /// A peer of an MRT RIB dump (`--mrt`).
    Mrt,
    /// Adj-RIB-Out before outbound policy (RFC 8671: O flag, L clear).
    AdjRibOutPre,
    /// Adj-RIB-Out after outbound policy (RFC 8671: O and L flags).
    AdjRibOutPost,
}

impl RibKind {
    /// Rank in route preference: the router's own choice first, then what
    /// passed its policy, then the raw feed.
    pub fn rank(self) -> u8 {
        match self {
            RibKind::LocRib => 0,
            RibKind::PostPolicy => 1,
            RibKind::PrePolicy | RibKind::Mrt => 2,
            // What the router sends, not what it uses: last.
            RibKind::AdjRibOutPost => 3,
            RibKind::AdjRibOutPre => 4,
        }
    }

    /// Every kind, in [`RibKind::index`] order.
    pub const ALL: [RibKind; 6] = [
        RibKind::LocRib,
        RibKind::PostPolicy,
        RibKind::PrePolicy,
        RibKind::Mrt,
        RibKind::AdjRibOutPre,
        RibKind::AdjRibOutPost,
    ];

    /// A distinct small number per kind (bit sets, arrays).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The kind named `s` (as [`RibKind::as_str`] spells it).
    pub fn parse(s: &str) -> Option<RibKind> {
        RibKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RibKind::LocRib => "loc-rib",
            RibKind::PostPolicy => "post-policy",
            RibKind::PrePolicy => "pre-policy",
            RibKind::Mrt => "mrt",
            RibKind::AdjRibOutPre => "adj-rib-out-pre",
            RibKind::AdjRibOutPost => "adj-rib-out-post",
        }
    }
}

/// What identifies a peer within one session.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PeerKey {
    /// BMP peer type (0 global, 1 RD instance, 2 local instance, 3 Loc-RIB).
    pub peer_type: u8,
    /// The instance's distinguisher: the per-peer header's, or for VPN
    /// routes (SAFI 128) the route distinguisher of their NLRI.
    pub distinguisher: u64,
    pub address: IpAddr,
    pub asn: u32,
    pub bgp_id: u32,
    pub rib: RibKind,
}

/// Which NLRI a peer's routes came as: one BMP neighbour's unicast,
/// labeled unicast and VPN routes are different RIB peers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NlriClass {
    #[default]
    Unicast,
    /// Labeled unicast (SAFI 4): the neighbour's instance.
    Labeled,
    /// VPN (SAFI 128): the instance its route distinguisher names.
    Vpn,
}

impl NlriClass {
    /// The class of routes of SAFI `safi` (1 unicast, 4 labeled, 128 VPN).
    pub fn of_safi(safi: u8) -> Option<NlriClass> {
        match safi {
            1 => Some(NlriClass::Unicast),
            4 => Some(NlriClass::Labeled),
            128 => Some(NlriClass::Vpn),
            _ => None,
        }
    }

    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_code(c: u8) -> Option<NlriClass> {
        [NlriClass::Unicast, NlriClass::Labeled, NlriClass::Vpn]
            .get(c as usize)
            .copied()
    }
}

/// Where a peer's routes come from, beyond its [`PeerKey`]: what a warm
/// restart matches a router's returning peers on (see `restart.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PeerOrigin {
    /// The address the BMP session came from (`None`: an MRT dump, or a
    /// program's own peer).
    pub router: Option<IpAddr>,
    pub class: NlriClass,
}

/// A peer as the RIB knows it (made by [`crate::Rib::add_peer`]).
/// Thread-safe: what identifies it never changes; its state and route
/// count change under the RIB's hand only, and are read through methods.
#[derive(Debug)]
pub struct PeerInfo {
    pub id: u32,
    /// The BMP session (connection) that reported it; 0 for MRT peers.
    pub session: u64,
    pub key: PeerKey,
    pub origin: PeerOrigin,
    /// Restored from a snapshot at start (`--state`): its routes are what
    /// the router had sent before the restart, kept until the router
    /// sends them again (see `restart.rs`).
    pub stale: bool,
    /// Unix seconds since its routes are stale (0: not stale).
    pub(crate) stale_since: i64,
    /// Unix seconds of its Peer Up (or first route).
    pub up_since: i64,
    /// Unix seconds of its Peer Down or session loss; 0 while up.
    pub(crate) down_since: AtomicI64,
    /// Live routes (announced, not withdrawn, not swept).
    pub(crate) routes: AtomicU64,
    /// Whether its routes have been swept out after it went down.
    pub(crate) swept: AtomicBool,
    /// Table name (RFC 9069 Peer Up TLV 3), when sent.
    pub(crate) table_name: OnceLock<String>,
    /// The stale peers this one took over (see `restart.rs`): their
    /// routes give way to this peer's, route by route.
    pub(crate) predecessor: OnceLock<Box<[u32]>>,
}

impl PeerInfo {
    pub fn is_up(&self) -> bool {
        self.down_since.load(Ordering::Relaxed) == 0
    }

    /// Unix seconds of its Peer Down or session loss; 0 while up.
    pub fn down_since(&self) -> i64 {
        self.down_since.load(Ordering::Relaxed)
    }

    /// Its routes held (announced, not withdrawn, not swept); once it is
    /// down, what it held until the sweeper removed them (then 0).
    pub fn route_count(&self) -> u64 {
        self.routes.load(Ordering::Relaxed)
    }

    /// Whether the sweeper has removed its routes (it went down before).
    pub fn is_swept(&self) -> bool {
        self.swept.load(Ordering::Acquire)
    }

    /// Unix seconds since its routes are stale: the first load that
    /// restored them (0: not stale).
    pub fn stale_since(&self) -> i64 {
        self.stale_since
    }

    /// Its table name (RFC 9069 Peer Up TLV 3), when its router sent one.
    pub fn table_name(&self) -> Option<&str> {
        self.table_name.get().map(String::as_str)
    }
}

/// What a new peer is ([`crate::Rib::add_peer_with`]).
#[derive(Clone, Debug)]
pub struct PeerInit {
    pub session: u64,
    pub key: PeerKey,
    pub origin: PeerOrigin,
    pub stale: bool,
    /// Unix seconds since its routes are stale (with `stale`).
    pub stale_since: i64,
    /// Unix seconds it came up (`None`: now).
    pub up_since: Option<i64>,
    pub table_name: Option<String>,
}

impl Default for PeerInit {
    fn default() -> Self {
        PeerInit {
            session: 0,
            key: PeerKey {
                peer_type: 0,
                distinguisher: 0,
                address: IpAddr::from([0u8; 4]),
                asn: 0,
                bgp_id: 0,
                rib: RibKind::Mrt,
            },
            origin: PeerOrigin::default(),
            stale: false,
            stale_since: 0,
            up_since: None,
            table_name: None,
        }
    }
}

/// Bits of a peer id that name its registry slot; the bits above are the
/// slot's generation (how many peers used the slot before).
// Hidden: not API (ids are opaque); tests check slot reuse with it.
#[doc(hidden)]
pub const SLOT_BITS: u32 = 20;
/// The most peers registered at once (up, or down and not yet swept).
pub const MAX_PEERS: u32 = 1 << SLOT_BITS;
const GEN_MASK: u32 = (1 << 11) - 1;
/// Set in a slot's liveness word while its peer is up.
const LIVE: u32 = 1 << 31;

fn slot_of(id: u32) -> u32 {
    id & (MAX_PEERS - 1)
}

/// The registry of the peers the RIB holds: up, or down with routes not
/// yet swept. A swept peer leaves it (`Peers::free`) and its slot goes
/// to a later peer under a new id: the slot number with the next
/// generation. Slots are reused oldest-freed first, so an id comes back
/// only after 2,048 generations of its slot, each a whole peer lifetime
/// (registration, Peer Down, a sweep of every prefix) of every slot freed
/// in between; a reader holds a route array for one lookup. An entry of a
/// freed peer therefore never passes for a later peer's: [`Peers::is_live`]
/// compares the whole id, generation included.
pub struct Peers {
    /// Slot -> its peer (`None`: free).
    slots: Segmented<ArcSwapOption<PeerInfo>>,
    /// Slot -> `LIVE | id` while its peer is up, else 0 (the hot check of
    /// every lookup: 16 slots a cache line).
    live: Segmented<AtomicU32>,
    /// Slots never used so far start here.
    next: AtomicU32,
    /// Ids to hand out next (a freed slot with its next generation),
    /// oldest first.
    free: Mutex<VecDeque<u32>>,
    /// Peers registered and not freed.
    held: AtomicU32,
}

impl Peers {
    pub(crate) fn new() -> Self {
        Peers {
            slots: Segmented::new(),
            live: Segmented::new(),
            next: AtomicU32::new(0),
            free: Mutex::new(VecDeque::new()),
            held: AtomicU32::new(0),
        }
    }

    /// Register a new peer; `None` when [`MAX_PEERS`] are registered.
    pub(crate) fn add(&self, session: u64, key: PeerKey) -> Option<Arc<PeerInfo>> {
        self.add_with(PeerInit {
            session,
            key,
            ..PeerInit::default()
        })
    }

    /// Register a new peer described by `init`.
    pub(crate) fn add_with(&self, init: PeerInit) -> Option<Arc<PeerInfo>> {
        let PeerInit {
            session,
            key,
            origin,
            stale,
            stale_since,
            up_since,
            table_name,
        } = init;
        let reused = self
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        let id = match reused {
            Some(id) => id,
            None => self
                .next
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < MAX_PEERS).then_some(n + 1)
                })
                .ok()?,
        };
        let (Some(slot), Some(live)) = (
            self.slots.get_or_alloc(slot_of(id)),
            self.live.get_or_alloc(slot_of(id)),
        ) else {
            return None;
        };
        let info = Arc::new(PeerInfo {
            id,
            session,
            key,
            origin,
            stale,
            stale_since: if stale { stale_since.max(1) } else { 0 },
            up_since: up_since.unwrap_or_else(unix_now),
            down_since: AtomicI64::new(0),
            routes: AtomicU64::new(0),
            swept: AtomicBool::new(false),
            table_name: table_name.map(OnceLock::from).unwrap_or_default(),
            predecessor: OnceLock::new(),
        });
        // Concurrent registrations get distinct ids (the free list is
        // popped under its lock, unused slots come from one atomic
        // counter), so no other `add` writes this slot. Its last peer left
        // it empty (`free` empties a slot before its id joins the free
        // list), and a late `mark_down` of that peer cannot clear the new
        // liveness word: its compare-and-swap expects the old id.
        slot.store(Some(Arc::clone(&info)));
        live.store(LIVE | id, Ordering::Release);
        self.held.fetch_add(1, Ordering::Relaxed);
        Some(info)
    }

    /// Mark `id` down: from the next lookup on, its routes are invisible.
    /// Idempotent; whether it was up.
    pub(crate) fn mark_down(&self, id: u32) -> bool {
        let Some(info) = self.get(id) else {
            return false;
        };
        let now = unix_now().max(1);
        if info
            .down_since
            .compare_exchange(0, now, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        if let Some(word) = self.live.get(slot_of(id)) {
            let _ = word.compare_exchange(LIVE | id, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
        true
    }

    /// Remove a peer that is down and swept from the registry; its slot
    /// goes to a later peer under the next generation. Whether it was
    /// there. Only for peers no route entry names any more (the sweeper
    /// calls it after removing their entries).
    pub(crate) fn free(&self, id: u32) -> bool {
        let Some(slot) = self.slots.get(slot_of(id)) else {
            return false;
        };
        let cur = slot.load_full();
        if !cur
            .as_ref()
            .is_some_and(|p| p.id == id && !p.is_up() && p.swept.load(Ordering::Acquire))
        {
            return false;
        }
        let prev = slot.compare_and_swap(&cur, None);
        let same = match (&*prev, &cur) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        if !same {
            return false;
        }
        let gen = ((id >> SLOT_BITS) + 1) & GEN_MASK;
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back((gen << SLOT_BITS) | slot_of(id));
        self.held.fetch_sub(1, Ordering::Relaxed);
        true
    }

    /// Whether `id`'s routes are visible (the hot check of every lookup).
    #[inline]
    pub fn is_live(&self, id: u32) -> bool {
        match self.live.get(slot_of(id)) {
            Some(w) => w.load(Ordering::Acquire) == LIVE | id,
            None => false,
        }
    }

    /// The peer with this id, if registered (a swept peer is not).
    pub fn get(&self, id: u32) -> Option<Arc<PeerInfo>> {
        let slot = self.slots.get(slot_of(id))?;
        slot.load().as_ref().filter(|p| p.id == id).cloned()
    }

    /// `f` of the peer with this id, without taking a reference.
    #[inline]
    pub fn with<R>(&self, id: u32, f: impl FnOnce(&PeerInfo) -> R) -> Option<R> {
        let slot = self.slots.get(slot_of(id))?;
        let guard = slot.load();
        guard.as_ref().filter(|p| p.id == id).map(|p| f(p))
    }

    /// Peers registered (up, or down and not yet swept).
    pub fn count(&self) -> u32 {
        self.held.load(Ordering::Relaxed)
    }

    /// Every registered peer, in slot order.
    pub fn all(&self) -> impl Iterator<Item = Arc<PeerInfo>> + '_ {
        (0..self.next.load(Ordering::Acquire))
            .filter_map(|i| self.slots.get(i).and_then(|s| s.load_full()))
    }
}

pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
