//! Routes by prefix (exact, more or less specific), ordered walks of the
//! prefixes held, and counts: the looking-glass side of the RIB.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ipfib::prefix::{AnyAddr, AnyPrefix};

use super::lookup::prefix_of;
use super::{lock, Entry, Match, Query, Rib, Route, Routes};
use crate::routelist::List;

fn covers(outer: &AnyPrefix, inner: &AnyPrefix) -> bool {
    match (outer, inner) {
        (AnyPrefix::V4(o), AnyPrefix::V4(i)) => o.covers(i),
        (AnyPrefix::V6(o), AnyPrefix::V6(i)) => o.covers(i),
        _ => false,
    }
}

impl Rib {
    /// Every live route of exactly `prefix`, in preference order.
    ///
    /// ```
    /// # use ipfib_rib::Rib;
    /// # use ipfib_rib::rib::doctest::{addr, attrs, key, pfx};
    /// # use ipfib_rib::{AsPath, RibKind};
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
    /// # use ipfib_rib::rib::doctest::{addr, attrs, key, pfx};
    /// # use ipfib_rib::{AsPath, RibKind};
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
    // Hidden: not API; tests and the soak example check id recycling.
    #[doc(hidden)]
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

    /// `prefix`'s route array as it is now (live entries or not).
    pub(crate) fn routes_array(&self, prefix: &AnyPrefix) -> Option<Arc<Routes>> {
        let &id = self.inner.ids.pin().get(prefix)?;
        self.inner
            .slot(id)?
            .load_full()
            .filter(|r| r.prefix == *prefix)
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
