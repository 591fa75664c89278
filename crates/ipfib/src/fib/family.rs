//! One address family of a [`super::Fib`]: the route table (the writer's
//! truth), the published side readers search, and for Poptrie the spare
//! side the writer brings up to date before it publishes it (left-right).

use super::{FibEngine, FibError, FibOptions, FibStats};
use crate::engine::planb::PlanB;
use crate::engine::poptrie::{Arena, Poptrie};
use crate::engine::Family;
use crate::intervals::{compile, NO_ROUTE};
use crate::prefix::Prefix;
use crate::route_table::RouteTable;
use crate::values::ValueTable;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Instant;

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
    /// Poptrie only: the other copy, with the slots it lacks.
    spare: Option<Spare<A, V>>,
    /// Direct-pointing slots changed since the last publication (Poptrie),
    /// each listed once (`marked` is their bitset).
    dirty: Vec<u32>,
    marked: Vec<u64>,
    /// Any route changed since the last publication. Cleared only when a
    /// publication has made the changes current, so a publication that
    /// fails keeps them for the next one.
    changed: bool,
    /// Every route was replaced (`replace_all`): build afresh, and the
    /// side replaced then is no spare (it differs from the new one in
    /// slots no one listed).
    rebuild_all: bool,
    /// Poptrie's direct-pointing bits.
    s: u32,
}

/// The Poptrie copy readers are not given: the previously current side,
/// behind the current one by exactly the direct-pointing slots in `lag`.
/// The lag travels with the side it describes, so a spare can never be
/// used with another side's list (a spare that no list describes is
/// dropped instead, e.g. after `replace_all`).
struct Spare<A: Family, V> {
    side: Arc<FamilySide<A, V>>,
    lag: Vec<u32>,
}

impl<A: Family, V: Clone + Eq + Hash> FamilyFib<A, V> {
    pub(crate) fn new(routes: RouteTable<A, V>, opts: &FibOptions) -> Result<Self, FibError> {
        let current = full_side(&routes, opts)?;
        validate_side(&current, opts)?;
        let current = Arc::new(current);
        let (spare, s) = match opts.engine {
            FibEngine::PlanB => (None, 0),
            // The spare starts as a copy (memcpy, not a second build).
            FibEngine::Poptrie => (
                current.duplicate().map(|side| Spare {
                    side: Arc::new(side),
                    lag: Vec::new(),
                }),
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
            Some(sp) => Arc::get_mut(&mut sp.side).is_some(),
            None => true,
        }
    }

    /// Whether no snapshot holds the spare (or there is none): a
    /// publication could start on it now. Read-only, unlike
    /// [`FamilyFib::spare_ready`]; a snapshot taken meanwhile only makes
    /// the publication wait or copy.
    pub(crate) fn spare_idle(&self) -> bool {
        self.spare
            .as_ref()
            .is_none_or(|sp| Arc::strong_count(&sp.side) == 1)
    }

    /// The side the next publication shows: `None` when nothing changed
    /// (the current side stands). Changes nothing readers or the next
    /// publication rely on: `current`, the route table and the changed
    /// slots stay as they are until [`FamilyFib::commit`], so an error
    /// leaves the family as it was (at most the spare is gone, which the
    /// next publication replaces by a copy of the current side).
    pub(crate) fn build_next(
        &mut self,
        opts: &FibOptions,
        deadline: Option<Instant>,
        stats: &mut FibStats,
    ) -> Result<Option<Arc<FamilySide<A, V>>>, FibError> {
        if !self.changed {
            return Ok(None);
        }
        if opts.engine == FibEngine::PlanB {
            stats.full_builds += 1;
            let side = full_side(&self.routes, opts)?;
            validate_side(&side, opts)?;
            return Ok(Some(Arc::new(side)));
        }
        // The spare is behind by its `lag` (copied from the current side,
        // which has those slots right) and by `dirty` (rebuilt from the
        // routes). Past an eighth of all slots a fresh build is cheaper.
        let few = !self.rebuild_all && self.few();
        let spare = if few { self.spare.take() } else { None };
        let spare = spare.and_then(|sp| match wait_unique(sp.side, deadline) {
            Some(side) => Some((side, sp.lag)),
            None => {
                stats.spare_busy += 1;
                None
            }
        });
        // A snapshot still holds the spare: copy the current side (a few
        // memcpys, far cheaper than a build); it only lacks `dirty`.
        let spare = match spare {
            Some(sp) => Some(sp),
            None if few => {
                stats.spare_copies += 1;
                self.current
                    .duplicate()
                    .map(|side| (Arc::new(side), Vec::new()))
            }
            None => None,
        };
        if let Some((mut arc, lag)) = spare {
            // wait_unique returned it unique and nothing else has seen it
            // since; were it shared, the fresh build below covers it.
            if let Some(side) = Arc::get_mut(&mut arc) {
                let done = update_slots(
                    side,
                    &self.current,
                    &self.routes,
                    &lag,
                    &self.dirty,
                    &self.marked,
                    self.s,
                )?;
                if done {
                    validate_side(side, opts)?;
                    stats.slot_rebuilds += self.dirty.len() as u64;
                    stats.slot_copies += lag.len() as u64;
                    return Ok(Some(arc));
                }
            }
        }
        stats.full_builds += 1;
        let side = full_side(&self.routes, opts)?;
        validate_side(&side, opts)?;
        Ok(Some(Arc::new(side)))
    }

    /// Make `next` (from [`FamilyFib::build_next`]) current and return the
    /// side to publish. Infallible, so a publication changes both families
    /// or neither. The side it replaces becomes the Poptrie spare, behind
    /// by exactly this publication's changed slots.
    pub(crate) fn commit(
        &mut self,
        next: Option<Arc<FamilySide<A, V>>>,
        opts: &FibOptions,
    ) -> Arc<FamilySide<A, V>> {
        let Some(next) = next else {
            return self.current();
        };
        let old = std::mem::replace(&mut self.current, Arc::clone(&next));
        for &slot in &self.dirty {
            self.marked[slot as usize / 64] = 0;
        }
        let lag = std::mem::take(&mut self.dirty);
        self.spare = (opts.engine == FibEngine::Poptrie && !self.rebuild_all)
            .then_some(Spare { side: old, lag });
        self.changed = false;
        self.rebuild_all = false;
        next
    }

    /// Whether updating the spare slot by slot beats a fresh build: up to
    /// an eighth of all slots.
    fn few(&self) -> bool {
        let lag = self.spare.as_ref().map_or(0, |sp| sp.lag.len());
        lag + self.dirty.len() <= (1usize << self.s) / 8
    }
}

impl<A: Family, V> FamilyFib<A, V> {
    /// Bytes of both sides (each counted once), the route table and the
    /// dirty-slot bookkeeping.
    pub(crate) fn footprint_bytes(&self) -> usize {
        self.current.footprint_bytes()
            + self
                .spare
                .as_ref()
                .map_or(0, |sp| sp.side.footprint_bytes() + sp.lag.capacity() * 4)
            + self.routes.footprint_bytes()
            + self.marked.capacity() * 8
            + self.dirty.capacity() * 4
    }
}

/// Wait until the writer holds the only reference to `side` (every
/// snapshot that could read it has been dropped), spinning then yielding,
/// until `deadline` at the latest (`None`: no deadline). `None` back: a
/// reader still holds it.
fn wait_unique<T>(mut side: Arc<T>, deadline: Option<Instant>) -> Option<Arc<T>> {
    let mut spins = 0u32;
    loop {
        if Arc::get_mut(&mut side).is_some() {
            return Some(side);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
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

/// With [`FibOptions::validate`]: the side's engine passes its structural
/// check (a Poptrie's with its arena: the free ranges overlap no live
/// node). Payloads against the side's values are checked by the tests'
/// lookups (`check::check_fib_script`).
fn validate_side<A: Family, V>(side: &FamilySide<A, V>, opts: &FibOptions) -> Result<(), FibError> {
    if !opts.validate {
        return Ok(());
    }
    match &side.engine {
        SideEngine::PlanB(t) => t.validate(),
        SideEngine::Poptrie(t, arena) => t.validate_with_arena(arena),
    }
    .map_err(FibError::Invariant)
}

/// A side built from the whole route table.
fn full_side<A: Family, V: Clone>(
    routes: &RouteTable<A, V>,
    opts: &FibOptions,
) -> Result<FamilySide<A, V>, FibError> {
    if crate::fault::hit(crate::fault::Point::FullBuild) {
        return Err(FibError::Invariant("injected build failure".into()));
    }
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
    if crate::fault::hit(crate::fault::Point::SlotUpdate) {
        return Err(FibError::Invariant("injected slot update failure".into()));
    }
    for &slot in dirty {
        let iv = routes.slot_intervals(slot, s);
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
