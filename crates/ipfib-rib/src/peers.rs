//! Peers: ids that are never reused, liveness in a bitmap.
//!
//! A peer is one BGP neighbour as one BMP session reports it, in one RIB
//! kind: the key is (session, peer type, distinguisher, address, AS, BGP
//! ID, RIB kind). The same router seen by two sessions, or pre- and
//! post-policy, are different peers. Ids come from a counter and are never
//! reused, so an id held by a reader or a route entry always means the
//! same peer; Peer Down is one store into the dead bitmap.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
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

/// A peer as the RIB knows it. Shared read-only except the counters and
/// the state.
#[derive(Debug)]
pub struct PeerInfo {
    pub id: u32,
    /// The BMP session (connection) that reported it; 0 for MRT peers.
    pub session: u64,
    pub key: PeerKey,
    /// Unix seconds of its Peer Up (or first route).
    pub up_since: i64,
    /// Unix seconds of its Peer Down or session loss; 0 while up.
    pub down_since: AtomicI64,
    /// Live routes (announced, not withdrawn, not swept).
    pub routes: AtomicU64,
    /// Whether its routes have been swept out after it went down.
    pub swept: AtomicBool,
    /// Table name (RFC 9069 Peer Up TLV 3), when sent.
    pub table_name: OnceLock<String>,
}

impl PeerInfo {
    pub fn is_up(&self) -> bool {
        self.down_since.load(Ordering::Relaxed) == 0
    }
}

/// Per-slot state for a peer id: its info once registered.
#[derive(Default)]
struct PeerSlot {
    info: OnceLock<Arc<PeerInfo>>,
}

/// The registry of every peer the RIB has seen.
pub struct Peers {
    slots: Segmented<PeerSlot>,
    /// Bit `id` set: the peer is down (its routes are invisible to lookups).
    dead: Segmented<AtomicU64>,
    next: AtomicU32,
    /// Bumped at every Peer Down, for the sweeper.
    pub(crate) downs: AtomicU64,
}

impl Peers {
    pub fn new() -> Self {
        Peers {
            slots: Segmented::new(),
            dead: Segmented::new(),
            next: AtomicU32::new(0),
            downs: AtomicU64::new(0),
        }
    }

    /// Register a new peer; `None` when ids are exhausted (2^28).
    pub fn add(&self, session: u64, key: PeerKey) -> Option<Arc<PeerInfo>> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = self.slots.get_or_alloc(id)?;
        self.dead.get_or_alloc(id / 64)?;
        let info = Arc::new(PeerInfo {
            id,
            session,
            key,
            up_since: unix_now(),
            down_since: AtomicI64::new(0),
            routes: AtomicU64::new(0),
            swept: AtomicBool::new(false),
            table_name: OnceLock::new(),
        });
        // A fresh id: nobody else can have set this slot.
        let _ = slot.info.set(Arc::clone(&info));
        Some(info)
    }

    /// Mark `id` down: from the next lookup on, its routes are invisible.
    /// Idempotent; whether it was up.
    pub fn mark_down(&self, id: u32) -> bool {
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
        if let Some(word) = self.dead.get(id / 64) {
            word.fetch_or(1 << (id % 64), Ordering::Release);
        }
        self.downs.fetch_add(1, Ordering::Release);
        true
    }

    /// Whether `id`'s routes are visible (the hot check of every lookup).
    #[inline]
    pub fn is_live(&self, id: u32) -> bool {
        match self.dead.get(id / 64) {
            Some(w) => w.load(Ordering::Acquire) & (1 << (id % 64)) == 0,
            None => false,
        }
    }

    pub fn get(&self, id: u32) -> Option<&Arc<PeerInfo>> {
        self.slots.get(id)?.info.get()
    }

    /// Ids handed out so far (every id below it was registered).
    pub fn count(&self) -> u32 {
        self.next.load(Ordering::Acquire)
    }

    /// Every registered peer, in id order.
    pub fn all(&self) -> impl Iterator<Item = &Arc<PeerInfo>> {
        (0..self.count()).filter_map(|id| self.get(id))
    }
}

impl Default for Peers {
    fn default() -> Self {
        Self::new()
    }
}

pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
