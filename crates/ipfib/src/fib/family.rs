//! One address family of a [`super::Fib`]: the route table (the writer's
//! truth), the published side readers search, and for Poptrie the spare
//! side the writer brings up to date before it publishes it (left-right).

use super::{FibEngine, FibError, FibOptions, FibStats};
use crate::engine::planb::PlanB;
use crate::engine::poptrie::{Arena, Poptrie};
use crate::engine::Family;
use crate::intervals::{compile, Intervals, NO_ROUTE};
use crate::prefix::Prefix;
use crate::route_table::RouteTable;
use crate::values::ValueTable;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What readers search: an engine over value indices and the values those
/// indices meant when this side was last brought up to date. A side's
/// indices are resolved only through its own `values`, so an index the
/// route table frees and hands to another value later cannot change what
/// this side answers (the recycled-index bug).
pub(crate) struct FamilySide<A: Family, V> {
    engine: SideEngine<A>,
    values: Vec<Option<V>>,
}

enum SideEngine<A: Family> {
    PlanB(PlanB<A>),
    /// The arena is writer-only bookkeeping; readers never touch it.
    Poptrie(Poptrie<A>, Arena),
}

impl<A: Family, V> FamilySide<A, V> {
    /// Value index for `addr`, or [`NO_ROUTE`].
    #[inline]
    pub(crate) fn lookup_index(&self, addr: A) -> u32 {
        match &self.engine {
            SideEngine::Poptrie(t, _) => t.lookup(addr),
            SideEngine::PlanB(t) => t.lookup(addr),
        }
    }

    /// Value indices for `addrs` into `out` (batch search, 32 in flight).
    #[inline]
    pub(crate) fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        match &self.engine {
            SideEngine::Poptrie(t, _) => t.lookup_batch::<32>(addrs, out),
            SideEngine::PlanB(t) => t.lookup_batch::<32>(addrs, out),
        }
    }

    /// A copy of a Poptrie side (`None` for PlanB, never duplicated).
    fn duplicate(&self) -> Option<Self>
    where
        V: Clone,
    {
        match &self.engine {
            SideEngine::Poptrie(t, a) => Some(FamilySide {
                engine: SideEngine::Poptrie(t.duplicate(), a.clone()),
                values: self.values.clone(),
            }),
            SideEngine::PlanB(_) => None,
        }
    }

    /// The value of index `i` (as this side knows it).
    #[inline]
    pub(crate) fn value(&self, i: u32) -> Option<&V> {
        self.values.get(i as usize)?.as_ref()
    }

    /// Engine bytes plus the value slots (not the values' own heap data).
    pub(crate) fn footprint_bytes(&self) -> usize {
        let engine = match &self.engine {
            SideEngine::Poptrie(t, _) => t.footprint_bytes(),
            SideEngine::PlanB(t) => t.footprint_bytes(),
        };
        engine + self.values.capacity() * std::mem::size_of::<Option<V>>()
    }
}

/// The writer's state for one family.
pub(crate) struct FamilyFib<A: Family, V> {
    pub(crate) routes: RouteTable<A, V>,
    current: Arc<FamilySide<A, V>>,
    /// Poptrie only: the other copy, behind `current` by `lag`.
    spare: Option<Arc<FamilySide<A, V>>>,
    /// Direct-pointing slots changed since the last publication (Poptrie),
    /// each listed once (`marked` is their bitset).
    dirty: Vec<u32>,
    marked: Vec<u64>,
    /// Slots the spare has not seen yet: the last publication's `dirty`.
    lag: Vec<u32>,
    /// Any route changed since the last publication.
    changed: bool,
    /// Every route was replaced (`replace_all`): build afresh.
    rebuild_all: bool,
    /// Poptrie's direct-pointing bits.
    s: u32,
}

impl<A: Family, V: Clone + Eq + Hash> FamilyFib<A, V> {
    pub(crate) fn new(routes: RouteTable<A, V>, opts: &FibOptions) -> Result<Self, FibError> {
        let current = Arc::new(full_side(&routes, opts)?);
        let (spare, s) = match opts.engine {
            FibEngine::PlanB => (None, 0),
            // The spare starts as a copy (memcpy, not a second build).
            FibEngine::Poptrie => (
                current.duplicate().map(Arc::new),
                u32::from(opts.direct_bits()),
            ),
        };
        let slots = if opts.engine == FibEngine::Poptrie {
            1usize << s
        } else {
            0
        };
        Ok(FamilyFib {
            routes,
            current,
            spare,
            dirty: Vec::new(),
            marked: vec![0; slots.div_ceil(64)],
            lag: Vec::new(),
            changed: false,
            rebuild_all: false,
            s,
        })
    }

    pub(crate) fn current(&self) -> Arc<FamilySide<A, V>> {
        Arc::clone(&self.current)
    }

    /// Insert or replace; `Ok((old, changed))`.
    pub(crate) fn insert(&mut self, p: Prefix<A>, v: V) -> Result<(Option<V>, bool), FibError> {
        let old = self.routes.insert(p, v)?;
        // Unchanged exactly when the value index stayed the same.
        let changed = self.routes.get(&p) != old.as_ref();
        if changed {
            self.mark(p);
        }
        Ok((old, changed))
    }

    /// Insert or replace without the old value; whether anything changed.
    pub(crate) fn upsert(&mut self, p: Prefix<A>, v: V) -> Result<bool, FibError> {
        let changed = self.routes.upsert(p, v)?;
        if changed {
            self.mark(p);
        }
        Ok(changed)
    }

    /// Remove; `(old, changed)`.
    pub(crate) fn remove(&mut self, p: &Prefix<A>) -> (Option<V>, bool) {
        let old = self.routes.remove(p);
        if old.is_some() {
            self.mark(*p);
        }
        let changed = old.is_some();
        (old, changed)
    }

    /// Note that the addresses of `p` may resolve differently now.
    fn mark(&mut self, p: Prefix<A>) {
        self.changed = true;
        if self.marked.is_empty() {
            return; // PlanB rebuilds everything anyway
        }
        let first = p.addr().direct_index(self.s);
        let count = 1usize << self.s.saturating_sub(u32::from(p.len()));
        for slot in first..first + count {
            let (w, b) = (slot / 64, 1u64 << (slot % 64));
            if self.marked[w] & b == 0 {
                self.marked[w] |= b;
                self.dirty.push(slot as u32);
            }
        }
    }

    /// Replace every route (`replace_all`): the next publication builds
    /// afresh.
    pub(crate) fn reset(&mut self, routes: RouteTable<A, V>) {
        self.routes = routes;
        self.changed = true;
        self.rebuild_all = true;
        self.spare = None;
        self.clear_dirty();
        self.lag.clear();
    }

    fn clear_dirty(&mut self) {
        for &slot in &self.dirty {
            self.marked[slot as usize / 64] = 0;
        }
        self.dirty.clear();
    }

    /// Whether a publication could update the spare without waiting (true
    /// when there is nothing to do or no spare to wait for).
    pub(crate) fn spare_ready(&mut self) -> bool {
        if !self.changed || self.rebuild_all || !self.few() {
            return true; // nothing to do, or a fresh build anyway
        }
        match &mut self.spare {
            Some(sp) => Arc::get_mut(sp).is_some(),
            None => true,
        }
    }

    /// Bring a side up to date for publication (or keep the current one
    /// when nothing changed) and make it current.
    pub(crate) fn prepare(
        &mut self,
        opts: &FibOptions,
        wait: Duration,
        stats: &mut FibStats,
    ) -> Result<Arc<FamilySide<A, V>>, FibError> {
        if !self.changed {
            return Ok(self.current());
        }
        self.changed = false;
        let next = if opts.engine == FibEngine::PlanB {
            stats.full_builds += 1;
            Arc::new(full_side(&self.routes, opts)?)
        } else {
            // The spare is behind by `lag` (copied from the current side,
            // which has them right) and `dirty` (rebuilt from the routes).
            // Past an eighth of all slots a fresh build is cheaper.
            let few = self.few() && !std::mem::take(&mut self.rebuild_all);
            let spare = self.spare.take().filter(|_| few).and_then(|sp| {
                let free = wait_unique(sp, wait);
                if free.is_none() {
                    stats.spare_busy += 1;
                }
                free
            });
            // A snapshot still holds the spare: copy the current side (a few
            // memcpys, far cheaper than a build); it only lacks `dirty`.
            let (spare, lag) = match spare {
                Some(sp) => (Some(sp), self.lag.as_slice()),
                None if few => {
                    stats.spare_copies += 1;
                    (self.current.duplicate().map(Arc::new), &[][..])
                }
                None => (None, &[][..]),
            };
            let next = match spare {
                Some(mut arc) => match Arc::get_mut(&mut arc) {
                    Some(side) => {
                        let done = update_slots(
                            side,
                            &self.current,
                            &self.routes,
                            lag,
                            &self.dirty,
                            &self.marked,
                            self.s,
                        )?;
                        if !done {
                            stats.full_builds += 1;
                            *side = full_side(&self.routes, opts)?;
                        }
                        stats.slot_rebuilds += self.dirty.len() as u64;
                        stats.slot_copies += lag.len() as u64;
                        arc
                    }
                    // wait_unique returned it unique and nothing else has
                    // seen it since; a fresh build covers the case anyway.
                    None => {
                        stats.full_builds += 1;
                        Arc::new(full_side(&self.routes, opts)?)
                    }
                },
                None => {
                    stats.full_builds += 1;
                    Arc::new(full_side(&self.routes, opts)?)
                }
            };
            self.lag = std::mem::take(&mut self.dirty);
            self.clear_marks();
            next
        };
        let old = std::mem::replace(&mut self.current, Arc::clone(&next));
        if opts.engine == FibEngine::Poptrie {
            self.spare = Some(old);
        }
        Ok(next)
    }

    /// Whether updating the spare slot by slot beats a fresh build: up to
    /// an eighth of all slots.
    fn few(&self) -> bool {
        self.lag.len() + self.dirty.len() <= (1usize << self.s) / 8
    }

    fn clear_marks(&mut self) {
        for &slot in &self.lag {
            self.marked[slot as usize / 64] = 0;
        }
    }
}

impl<A: Family, V> FamilyFib<A, V> {
    /// Bytes of both sides (each counted once), the route table and the
    /// dirty-slot bookkeeping.
    pub(crate) fn footprint_bytes(&self) -> usize {
        self.current.footprint_bytes()
            + self.spare.as_ref().map_or(0, |s| s.footprint_bytes())
            + self.routes.footprint_bytes()
            + self.marked.capacity() * 8
            + (self.dirty.capacity() + self.lag.capacity()) * 4
    }
}

/// Wait until the writer holds the only reference to `side` (every
/// snapshot that could read it has been dropped), spinning then yielding,
/// for at most `patience`. `None`: a reader still holds it.
fn wait_unique<T>(mut side: Arc<T>, patience: Duration) -> Option<Arc<T>> {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        if Arc::get_mut(&mut side).is_some() {
            return Some(side);
        }
        if start.elapsed() >= patience {
            return None;
        }
        spins += 1;
        if spins < 100 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// A side built from the whole route table.
fn full_side<A: Family, V: Clone>(
    routes: &RouteTable<A, V>,
    opts: &FibOptions,
) -> Result<FamilySide<A, V>, FibError> {
    let iv = compile(routes.iter_indices());
    let engine = match opts.engine {
        FibEngine::PlanB => SideEngine::PlanB(PlanB::build(&iv, &opts.planb)?),
        FibEngine::Poptrie => {
            let (t, a) = Poptrie::build_updatable(&iv, &opts.poptrie)?;
            SideEngine::Poptrie(t, a)
        }
    };
    Ok(FamilySide {
        engine,
        values: routes.values().to_vec(),
    })
}

/// Rebuild `slots` of a Poptrie side from the route table. `Ok(false)`:
/// its arrays are full and it must be built afresh.
fn update_slots<A: Family, V: Clone + Eq>(
    side: &mut FamilySide<A, V>,
    current: &FamilySide<A, V>,
    routes: &RouteTable<A, V>,
    lag: &[u32],
    dirty: &[u32],
    marked: &[u64],
    s: u32,
) -> Result<bool, FibError> {
    let (SideEngine::Poptrie(trie, arena), SideEngine::Poptrie(from, _)) =
        (&mut side.engine, &current.engine)
    else {
        return Ok(false);
    };
    for &slot in lag {
        if marked[slot as usize / 64] & (1 << (slot % 64)) != 0 {
            continue; // changed again: rebuilt below
        }
        if trie.copy_slot(arena, slot as usize, from).is_err() {
            return Ok(false);
        }
        sync_values(
            &mut side.values,
            routes.values(),
            from.slot_payloads(slot as usize),
        );
    }
    for &slot in dirty {
        let iv = slot_intervals(routes, slot, s);
        if trie.replace_slot(arena, slot as usize, &iv)?.is_err() {
            return Ok(false);
        }
        sync_values(
            &mut side.values,
            routes.values(),
            iv.payloads.iter().copied(),
        );
    }
    Ok(true)
}

/// The intervals of the addresses under direct-pointing slot `slot`:
/// the slot's covering route, then every route under it.
fn slot_intervals<A: Family, V>(routes: &RouteTable<A, V>, slot: u32, s: u32) -> Intervals<A> {
    let first = if s == 0 {
        0
    } else {
        u128::from(slot) << (A::BITS as u32 - s)
    };
    let p = Prefix::host(A::from_u128_truncate(first)).truncate(s as u8);
    compile(
        routes
            .covering_index(&p)
            .into_iter()
            .chain(routes.subnet_indices(&p)),
    )
}

/// Make the side's value slots agree with the route table for `payloads`.
/// A live index always means the same value, so only indices new to this
/// side (or freed and reused since it last saw them) are written.
fn sync_values<V: Clone + Eq>(
    values: &mut Vec<Option<V>>,
    table: &ValueTable<V>,
    payloads: impl IntoIterator<Item = u32>,
) {
    for p in payloads {
        if p == NO_ROUTE {
            continue;
        }
        let i = p as usize;
        if values.len() <= i {
            values.resize(i + 1, None);
        }
        let v = table.get(p);
        if values[i].as_ref() != v {
            values[i] = v.cloned();
        }
    }
}
