//! How writers change the RIB: prefix ids (allocated, recycled, freed)
//! and copy-on-write edits of a prefix's route array (announce,
//! withdraw), and Peer Down.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use ipfib::prefix::AnyPrefix;

use super::threads::FibEvent;
use super::types::{entry_key, ID_BITS, ID_MASK};
use super::{Entry, Inner, Rib, RibError, Routes, MAX_PREFIX_IDS};
use crate::attrs::AttrSet;
use crate::peers::PeerInfo;
use crate::routelist::{Keyed, List};

#[cfg(doc)]
use super::MAX_ROUTES_PER_PREFIX;

/// New prefixes a writer thread puts in the map between two attempts to
/// hand over its reclamation batch.
const MAP_FLUSH_EVERY: u32 = 4096;

thread_local! {
    /// New prefixes this thread put in any RIB's map: a cadence, not a
    /// count per map.
    static MAP_INSERTS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether two loaded slot values are the same array (or both empty).
fn same(a: &Option<Arc<Routes>>, b: &Option<Arc<Routes>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl Inner {
    pub(super) fn slot(&self, id: u32) -> Option<&ArcSwapOption<Routes>> {
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
    pub(super) fn free_prefix(&self, prefix: AnyPrefix, id: u32, seen: &Arc<Routes>) -> bool {
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
    pub(super) fn drop_stale(&self, prefix: AnyPrefix, id: u32) {
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

    pub(super) fn has_len(&self, v6: bool, l: u8) -> bool {
        let l = l as usize;
        if v6 {
            self.lens_v6[l / 64].load(Ordering::Relaxed) & (1 << (l % 64)) != 0
        } else {
            self.lens_v4.load(Ordering::Relaxed) & (1 << l) != 0
        }
    }
}

/// Whether `list` holds a route with `path_id` of one of the peers `preds`.
fn holds_any(list: &List<Entry>, preds: &[u32], path_id: u32) -> bool {
    preds
        .iter()
        .any(|&p| list.get(entry_key(p, path_id)).is_some())
}

impl Inner {
    /// `list` without the routes with `path_id` of the stale peers
    /// `preds` (`restart.rs`), if it held any; their peers pushed to
    /// `gone`.
    fn without_stale(
        &self,
        list: &List<Entry>,
        preds: &[u32],
        path_id: u32,
        gone: &mut Vec<u32>,
    ) -> Option<List<Entry>> {
        let mut out: Option<List<Entry>> = None;
        for &p in preds {
            let cur = out.as_ref().unwrap_or(list);
            if let Some((l, e)) = cur.remove(entry_key(p, path_id), &|e| self.pref_key(e)) {
                gone.push(e.peer);
                out = Some(l);
            }
        }
        out
    }
}

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
        // writer that only inserts may never do, so retired tables would
        // pile up. Every `MAP_FLUSH_EVERY` new prefixes of its own, a
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
    /// # use ipfib_rib::rib::doctest::{addr, attrs, key, pfx};
    /// # use ipfib_rib::{AsPath, RibKind};
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
        // The stale peers this one took over (`restart.rs`): their route
        // with this path id gives way to the new one in the same edit.
        let preds: &[u32] = peer.predecessor.get().map_or(&[], |p| &p[..]);
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
                let replaces = holds_any(&r.list, preds, path_id);
                if held.is_none() && !replaces && r.len() >= max {
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
        let mut gave_way = Vec::new();
        let change = self.edit(prefix, true, |list| {
            full = list.get(new.key()).is_none()
                && !holds_any(list, preds, path_id)
                && list.len() >= max;
            if full {
                return None;
            }
            let (mut list, old) = list.upsert(new.clone(), &|e| inner.pref_key(e));
            gave_way.clear();
            if let Some(l) = inner.without_stale(&list, preds, path_id, &mut gave_way) {
                list = l;
            }
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
        for &p in &gave_way {
            self.gave_way(p);
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
    /// # use ipfib_rib::rib::doctest::{addr, attrs, key, pfx};
    /// # use ipfib_rib::{AsPath, RibKind};
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
        // The stale peers this one took over (`restart.rs`): the router
        // withdrawing a route it had before the restart removes theirs too.
        let preds: &[u32] = peer.predecessor.get().map_or(&[], |p| &p[..]);
        let k = entry_key(peer.id, path_id);
        let has = self.inner.slot(id).is_some_and(|s| {
            s.load().as_ref().is_some_and(|r| {
                r.prefix == prefix
                    && (r.list.get(k).is_some() || holds_any(&r.list, preds, path_id))
            })
        });
        if !has {
            self.inner
                .counters
                .withdrawals_unknown
                .fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let (mut own, mut stale) = (false, Vec::new());
        let change = self
            .edit(prefix, false, |list| {
                let pref = &|e: &Entry| self.inner.pref_key(e);
                let first = list.remove(k, pref).map(|(l, _)| l);
                own = first.is_some();
                stale.clear();
                let base = first.as_ref().unwrap_or(list);
                let second = self.inner.without_stale(base, preds, path_id, &mut stale);
                // Nothing removed: nothing to publish.
                second.or(first).map(|l| (l, false, true))
            })
            .unwrap_or_default();
        if change.removed {
            if own {
                peer.routes.fetch_sub(1, Ordering::Relaxed);
                self.inner.attrs.released(1);
            }
            for &p in &stale {
                self.gave_way(p);
            }
        } else {
            self.inner
                .counters
                .withdrawals_unknown
                .fetch_add(1, Ordering::Relaxed);
        }
        change.removed
    }

    /// Put `entries` (keys unique, peers registered) into `prefix`'s
    /// routes in one edit: a snapshot's load. The prefix must hold none
    /// of them yet; the caller counts them to their peers. The bound on
    /// routes per prefix was applied when the routes first came.
    pub(crate) fn install(&self, prefix: AnyPrefix, entries: &[Entry]) -> Result<(), RibError> {
        let inner = &self.inner;
        self.edit(prefix, true, |list| {
            let pref = &|e: &Entry| inner.pref_key(e);
            if list.is_empty() {
                return Some((List::from_vec(entries.to_vec(), pref), true, false));
            }
            let mut l = list.upsert(entries[0].clone(), pref).0;
            for e in &entries[1..] {
                l = l.upsert(e.clone(), pref).0;
            }
            Some((l, true, false))
        })?;
        Ok(())
    }

    /// Stale peer `p`'s route gave way to its successor's (`restart.rs`).
    fn gave_way(&self, p: u32) {
        self.inner.peers.with(p, |p| {
            p.routes.fetch_sub(1, Ordering::Relaxed);
        });
        self.inner.attrs.released(1);
    }

    /// Peer Down (or its session's grace period ended): its routes vanish
    /// from lookups at once (one store); the sweeper frees them later.
    /// Idempotent; whether the peer was up.
    ///
    /// ```
    /// # use ipfib_rib::Rib;
    /// # use ipfib_rib::rib::doctest::{addr, attrs, key, pfx};
    /// # use ipfib_rib::{AsPath, RibKind};
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
            // The stale peers it took over go with it: the router says
            // the neighbour is down (`restart.rs`).
            let preds = self
                .inner
                .peers
                .with(peer, |p| p.predecessor.get().cloned())
                .flatten();
            for p in preds.iter().flat_map(|p| p.iter()) {
                self.forget_stale(*p);
                self.inner.peers.mark_down(*p);
            }
            if let Some(tx) = &self.sweep_tx {
                let _ = tx.send(());
            }
        }
        was_up
    }
}
