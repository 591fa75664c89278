//! Longest-prefix lookups, one address or a batch: the FIB snapshot gives
//! a prefix id, the id's route array the chosen route (see [`Rib`] for the
//! route preference), covering prefixes probed when nothing there fits.

use ipfib::mem::prefetch;
use ipfib::prefix::{AnyAddr, AnyPrefix, Prefix};

use super::types::ID_MASK;
use super::{unmap, Entry, Hit, Inner, PeerFilter, Query, Rib, Route, Routes};
use crate::instance::{Instance, RibSet};
use crate::routelist::List;

pub(super) fn prefix_of(addr: AnyAddr, len: u8) -> AnyPrefix {
    match addr {
        AnyAddr::V4(a) => AnyPrefix::V4(Prefix::host(a).truncate(len)),
        AnyAddr::V6(a) => AnyPrefix::V6(Prefix::host(a).truncate(len)),
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

impl Inner {
    /// Whether `e` (live) fits the query's peer, instance and RIB kinds.
    #[inline]
    pub(super) fn peer_fits(&self, e: &Entry, q: &Query) -> bool {
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
    pub(super) fn pref_key(&self, e: &Entry) -> PrefKey {
        let x = &e.attrs;
        let (rank, stale) = self
            .peers
            .with(e.peer, |p| (p.key.rib.rank(), p.stale))
            .unwrap_or((3, false));
        (
            rank,
            std::cmp::Reverse(x.local_pref.unwrap_or(100)),
            x.as_path.selection_len(),
            x.origin,
            x.med.unwrap_or(0),
            stale,
            e.peer,
            e.path_id,
        )
    }
}

/// See [`Inner::pref_key`].
pub(super) type PrefKey = (
    u8,
    std::cmp::Reverse<u32>,
    u32,
    crate::attrs::Origin,
    u32,
    bool,
    u32,
    u32,
);

impl Rib {
    /// The longest-prefix match for `addr` among the routes `q` allows,
    /// passed to `f` (no allocation, no reference counting).
    ///
    /// ```
    /// # use ipfib_rib::{PeerFilter, Query, Rib};
    /// # use ipfib_rib::rib::doctest::{addr, attrs, key, pfx};
    /// # use ipfib_rib::{AsPath, RibKind};
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

    pub(super) fn route_of(&self, prefix: AnyPrefix, e: Entry) -> Option<Route> {
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
}

fn hit(p: &AnyPrefix, e: &Entry) -> Hit {
    Hit {
        prefix_len: p.len(),
        origin_asn: e.attrs.origin_asn,
        peer: e.peer,
        next_hop: e.attrs.next_hop,
    }
}
