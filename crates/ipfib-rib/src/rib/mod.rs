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
//!
//! The files of this module:
//! - `types.rs`: what the RIB holds and answers ([`Entry`], [`Routes`],
//!   [`Route`], [`Hit`]), what a query asks ([`Query`]), its limits,
//!   errors and counters;
//! - this file: the [`Rib`] itself, its construction and accessors;
//! - `store.rs`: prefix ids and copy-on-write edits (announce, withdraw,
//!   Peer Down);
//! - `lookup.rs`: longest-prefix lookups, one address or a batch, and the
//!   route preference;
//! - `query.rs`: routes by prefix (exact, longer, shorter), ordered walks,
//!   counts;
//! - `threads.rs`: the FIB thread (publication) and the sweeper;
//! - `doctest.rs`: builders the documentation examples share (hidden).

mod lookup;
mod query;
mod restart;
mod store;
mod threads;
mod types;

// Hidden: the documentation examples' builders, not API.
#[doc(hidden)]
pub mod doctest;
#[cfg(test)]
mod tests;

pub use restart::EndOfRib;
pub use types::{
    unmap, Entry, Hit, Match, PeerFilter, Query, RibCounters, RibError, Route, Routes,
    MAX_PREFIX_IDS, MAX_ROUTES_PER_PREFIX,
};

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use ipfib::fib::{Fib, FibOptions, FibReader};
#[cfg(doc)]
use ipfib::prefix::AnyAddr;
use ipfib::prefix::AnyPrefix;

use crate::attrs::{AttrSet, Attrs};
use crate::peers::{PeerInfo, PeerKey, Peers};
use crate::seg::Segmented;
use threads::{fib_thread, sweeper_thread, FibEvent};

/// The shared state of a [`Rib`]: what its handle, the FIB thread and
/// the sweeper all reach.
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
    /// Stale peers not yet swept (`restart.rs`).
    stale: Mutex<Vec<restart::Stale>>,
    /// A bulk load is running ([`Rib::bulk`]): no FIB event per prefix.
    bulk: std::sync::atomic::AtomicBool,
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
/// 6. a route its router sent since the collector started before one
///    restored from a snapshot (stale, see [`PeerInfo::stale`]);
/// 7. lowest peer id (the peer seen first), then lowest path id.
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
/// # use ipfib_rib::rib::doctest::{addr, attrs, key, pfx};
/// # use ipfib_rib::{AsPath, RibKind};
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
            stale: Mutex::new(Vec::new()),
            bulk: std::sync::atomic::AtomicBool::new(false),
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

    /// The peers registered (up, or down and not yet swept): look one up
    /// by id, list them all.
    pub fn peers(&self) -> &Peers {
        &self.inner.peers
    }

    /// The attribute interner (its counts, for metrics).
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

    /// The bound on routes per prefix ([`Rib::set_max_routes_per_prefix`];
    /// `usize::MAX`: none).
    pub fn max_routes_per_prefix(&self) -> usize {
        self.inner.max_routes_per_prefix.load(Ordering::Relaxed)
    }

    /// What the RIB counted (for metrics; the RIB alone writes them).
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
        if matches!(ev, FibEvent::Check(..)) && self.inner.bulk.load(Ordering::Relaxed) {
            return;
        }
        if let Some(tx) = &self.fib_tx {
            let _ = tx.send(ev);
        }
    }

    /// Run `f` (a bulk load into a RIB nobody else uses yet) without a
    /// FIB event per new prefix, then have the FIB thread take every
    /// prefix in one pass and publish once: a publication per millisecond
    /// while a million prefixes arrive would rebuild the FIB over and over.
    pub(crate) fn bulk<R>(&self, f: impl FnOnce() -> R) -> R {
        self.inner.bulk.store(true, Ordering::Relaxed);
        let r = f();
        self.inner.bulk.store(false, Ordering::Relaxed);
        self.send_fib(FibEvent::Rescan);
        r
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

/// The FIB writer's lock; a panic while it was held leaves a FIB that is
/// still consistent (each call completes or leaves changes pending).
fn lock(m: &Mutex<Fib<u32>>) -> MutexGuard<'_, Fib<u32>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
