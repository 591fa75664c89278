//! One address family of a [`super::Fib`]: the route table (the writer's
//! truth), the published side readers search, and for Poptrie the writer
//! of the one copy every version shares
//! (`crate::engine::poptrie::versioned`).

use super::options::{FibEngine, FibError, FibOptions, FibStats};
use crate::engine::planb::PlanB;
use crate::engine::poptrie::{Version, Writer};
use crate::engine::Family;
use crate::intervals::{compile, NO_ROUTE};
use crate::mem::CowChunks;
use crate::prefix::Prefix;
use crate::route_table::RouteTable;
use crate::values::ValueTable;
use std::hash::Hash;
use std::sync::Arc;

/// Value slots per copy-on-write chunk, as a power of two.
const VALUE_CHUNK_BITS: u32 = 8;

/// What readers search: an engine over value indices and the values those
/// indices meant when this side was made. A side's indices are resolved
/// only through its own `values`, so an index the route table frees and
/// hands to another value later cannot change what this side answers (the
/// recycled-index bug). Sides share the value chunks they agree on.
pub(crate) struct FamilySide<A: Family, V> {
    engine: SideEngine<A>,
    values: CowChunks<Option<V>>,
}

// One per published side: boxing PlanB would add a pointer hop to each of
// its lookups to save a few hundred bytes.
#[allow(clippy::large_enum_variant)]
enum SideEngine<A: Family> {
    PlanB(PlanB<A>),
    /// One version of the shared Poptrie.
    Poptrie(Version<A>),
}

impl<A: Family, V> FamilySide<A, V> {
    /// Value index for `addr`, or [`NO_ROUTE`].
    #[inline]
    pub(crate) fn lookup_index(&self, addr: A) -> u32 {
        match &self.engine {
            SideEngine::Poptrie(t) => t.lookup(addr),
            SideEngine::PlanB(t) => t.lookup(addr),
        }
    }

    /// Value indices for `addrs` into `out` (batch search, 32 in flight).
    #[inline]
    pub(crate) fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        match &self.engine {
            SideEngine::Poptrie(t) => t.lookup_batch::<32>(addrs, out),
            SideEngine::PlanB(t) => t.lookup_batch::<32>(addrs, out),
        }
    }

    /// The value of index `i` (as this side knows it).
    #[inline]
    pub(crate) fn value(&self, i: u32) -> Option<&V> {
        self.values.get(i as usize)?.as_ref()
    }

    /// Engine bytes plus the value slots (not the values' own heap data;
    /// memory shared with other versions counted in full).
    pub(crate) fn footprint_bytes(&self) -> usize {
        let engine = match &self.engine {
            SideEngine::Poptrie(t) => t.footprint_bytes(),
            SideEngine::PlanB(t) => t.footprint_bytes(),
        };
        engine + self.values.footprint_bytes()
    }
}

/// The writer's state for one family.
pub(crate) struct FamilyFib<A: Family, V> {
    pub(crate) routes: RouteTable<A, V>,
    current: Arc<FamilySide<A, V>>,
    /// Poptrie only: the writer of the shared copy, and the value slots its
    /// working state resolves through. `None` after `replace_all` or a
    /// failed publication: the next publication builds afresh.
    writer: Option<(Writer<A>, CowChunks<Option<V>>)>,
    /// Sides replaced by publications that snapshots may still hold. The
    /// writer drops them itself once no snapshot does, so that a reader
    /// dropping its last snapshot of a version only decrements a count
    /// (a side's teardown is hundreds of chunk counts and frees, which
    /// would otherwise land on a reader thread).
    retired: Vec<Arc<FamilySide<A, V>>>,
    /// Direct-pointing slots changed since the last publication (Poptrie),
    /// each listed once (`marked` is their bitset).
    dirty: Vec<u32>,
    marked: Vec<u64>,
    /// Any route changed since the last publication. Cleared only when a
    /// publication has made the changes current, so a publication that
    /// fails keeps them for the next one.
    changed: bool,
    /// Every route was replaced (`replace_all`): build afresh.
    rebuild_all: bool,
    /// Poptrie's direct-pointing bits.
    s: u32,
}

impl<A: Family, V: Clone + Eq + Hash> FamilyFib<A, V> {
    pub(crate) fn new(routes: RouteTable<A, V>, opts: &FibOptions) -> Result<Self, FibError> {
        let (current, writer) = full_side(&routes, opts)?;
        let s = match opts.engine {
            FibEngine::PlanB => 0,
            FibEngine::Poptrie => u32::from(opts.direct_bits()),
        };
        let slots = if opts.engine == FibEngine::Poptrie {
            1usize << s
        } else {
            0
        };
        Ok(FamilyFib {
            routes,
            current: Arc::new(current),
            writer,
            retired: Vec::new(),
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
        self.writer = None;
        self.clear_dirty();
    }

    fn clear_dirty(&mut self) {
        for &slot in &self.dirty {
            self.marked[slot as usize / 64] = 0;
        }
        self.dirty.clear();
    }

    /// The side the next publication shows: `None` when nothing changed
    /// (the current side stands). Changes nothing readers or the next
    /// publication rely on: `current`, the route table and the changed
    /// slots stay as they are until [`FamilyFib::commit`], so an error
    /// leaves the family as it was (a Poptrie writer whose update failed
    /// is dropped, and the next publication builds afresh; one whose
    /// version is not committed is only ahead, and redoes the same slots).
    pub(crate) fn build_next(
        &mut self,
        opts: &FibOptions,
        stats: &mut FibStats,
    ) -> Result<Option<Arc<FamilySide<A, V>>>, FibError> {
        // Even when this family has no change: drop the retired sides no
        // snapshot holds, then free the blocks only they reached.
        self.retired.retain(|side| Arc::strong_count(side) > 1);
        if let Some((writer, _)) = self.writer.as_mut() {
            writer.reclaim();
        }
        if !self.changed {
            return Ok(None);
        }
        // Past an eighth of all slots a fresh build is cheaper.
        let few = !self.rebuild_all && self.dirty.len() <= (1usize << self.s) / 8;
        if let (true, Some((writer, values))) = (few, self.writer.as_mut()) {
            let done =
                update_slots(writer, values, &self.routes, &self.dirty, self.s).and_then(|done| {
                    if done && opts.validate {
                        writer.validate().map_err(FibError::Invariant)?;
                    }
                    Ok(done)
                });
            match done {
                Ok(true) => {
                    stats.slot_rebuilds += self.dirty.len() as u64;
                    return Ok(Some(Arc::new(FamilySide {
                        engine: SideEngine::Poptrie(writer.publish()),
                        values: values.clone(),
                    })));
                }
                Ok(false) => self.writer = None, // no room: build afresh below
                Err(e) => {
                    self.writer = None;
                    return Err(e);
                }
            }
        }
        stats.full_builds += 1;
        let (side, writer) = full_side(&self.routes, opts)?;
        self.writer = writer;
        Ok(Some(Arc::new(side)))
    }

    /// Make `next` (from [`FamilyFib::build_next`]) current and return the
    /// side to publish. Infallible, so a publication changes both families
    /// or neither.
    pub(crate) fn commit(&mut self, next: Option<Arc<FamilySide<A, V>>>) -> Arc<FamilySide<A, V>> {
        let Some(next) = next else {
            return self.current();
        };
        let old = std::mem::replace(&mut self.current, Arc::clone(&next));
        self.retired.push(old);
        self.clear_dirty();
        self.changed = false;
        self.rebuild_all = false;
        next
    }

    /// Dropped Poptrie blocks and frames that still wait for readers to
    /// leave the versions that reach them.
    pub(crate) fn waiting(&self) -> usize {
        self.writer.as_ref().map_or(0, |(w, _)| w.waiting())
    }
}

impl<A: Family, V> FamilyFib<A, V> {
    /// Bytes of the current side, the route table and the dirty-slot
    /// bookkeeping (older versions that readers still hold share most of
    /// the current side's memory and are not counted).
    pub(crate) fn footprint_bytes(&self) -> usize {
        self.current.footprint_bytes()
            + self.routes.footprint_bytes()
            + self.marked.capacity() * 8
            + self.dirty.capacity() * 4
    }
}

/// A side built from the whole route table, and for Poptrie its writer.
/// With [`FibOptions::validate`], the engine passes its structural check
/// (a Poptrie's with its arena); payloads against the side's values are
/// checked by the tests' lookups (`check::check_fib_script`).
#[allow(clippy::type_complexity)]
fn full_side<A: Family, V: Clone>(
    routes: &RouteTable<A, V>,
    opts: &FibOptions,
) -> Result<(FamilySide<A, V>, Option<(Writer<A>, CowChunks<Option<V>>)>), FibError> {
    if crate::fault::hit(crate::fault::Point::FullBuild) {
        return Err(FibError::Invariant("injected build failure".into()));
    }
    let iv = compile(routes.iter_indices());
    let values = CowChunks::new(&routes.values().to_vec(), VALUE_CHUNK_BITS, None);
    Ok(match opts.engine {
        FibEngine::PlanB => {
            let t = PlanB::build(&iv, &opts.planb)?;
            if opts.validate {
                t.validate().map_err(FibError::Invariant)?;
            }
            let side = FamilySide {
                engine: SideEngine::PlanB(t),
                values,
            };
            (side, None)
        }
        FibEngine::Poptrie => {
            let (mut w, first) = Writer::build(&iv, &opts.poptrie)?;
            w.set_poison(opts.validate);
            if opts.validate {
                w.validate().map_err(FibError::Invariant)?;
            }
            let side = FamilySide {
                engine: SideEngine::Poptrie(first),
                values: values.clone(),
            };
            (side, Some((w, values)))
        }
    })
}

/// Rebuild `slots` of a Poptrie writer's working state from the route
/// table, and bring its value slots up to date for them. `Ok(false)`: no
/// room in its arrays; it must be built afresh.
fn update_slots<A: Family, V: Clone + Eq>(
    writer: &mut Writer<A>,
    values: &mut CowChunks<Option<V>>,
    routes: &RouteTable<A, V>,
    dirty: &[u32],
    s: u32,
) -> Result<bool, FibError> {
    for (k, &slot) in dirty.iter().enumerate() {
        let iv = routes.slot_intervals(slot, s);
        if writer.replace_slot(slot as usize, &iv)?.is_err() {
            return Ok(false);
        }
        sync_values(values, routes.values(), iv.payloads.iter().copied());
        if k == 0 && crate::fault::hit(crate::fault::Point::SlotUpdate) {
            return Err(FibError::Invariant("injected slot update failure".into()));
        }
    }
    Ok(true)
}

/// Make the value slots agree with the route table for `payloads`. A live
/// index always means the same value, so only indices new to these slots
/// (or freed and reused since they last saw them) are written, each
/// copying its chunk once if an older side shares it.
fn sync_values<V: Clone + Eq>(
    values: &mut CowChunks<Option<V>>,
    table: &ValueTable<V>,
    payloads: impl IntoIterator<Item = u32>,
) {
    for p in payloads {
        if p == NO_ROUTE {
            continue;
        }
        let v = table.get(p);
        if values.get(p as usize).and_then(|x| x.as_ref()) != v {
            values.set(p as usize, v.cloned());
        }
    }
}
