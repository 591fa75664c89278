//! Immutable lookup snapshots, one per address family, compiled from the
//! route table with the chosen engine; everything here runs without the
//! GIL.
//!
//! Two engines per family (each `auto`'s choice unless one is named), as
//! in `ipfib bench`:
//! - over value slots (the route table's value indices, equal neighbours
//!   merged: `planb` / `poptrie`), what answers values: `lookup`, `in`,
//!   `lookup_many` (one engine lookup, then an integer or object per slot);
//! - over route ordinals (position in the ordered walk: `planb-routes` /
//!   `poptrie-routes`), what answers the matching prefix: `lookup_prefix`,
//!   `with_prefix_len`. Built on first use: value-only users never pay it.
//!
//! The values are copied into the snapshot, so later changes to the table
//! never change it. `radix` keeps a copy of the route table and asks it.

use crate::value::{Objects, Value};
use ipfib::engine::auto::{AutoEngine, AutoOptions, Choice};
pub use ipfib::engine::registry::EngineSpec;
use ipfib::engine::{Engine, Family, NO_ROUTE};
use ipfib::image::FamilyImage;
use ipfib::intervals::compile;
use ipfib::mem::LookupBuf;
use ipfib::prefix::Prefix;
use ipfib::route_table::RouteTable;
use pyo3::{Py, PyAny, PyResult, Python};
use std::sync::OnceLock;

/// Addresses handed to the engine's batch path at a time (the batch width
/// `ipfib bench` finds best for both engines on the real tables).
pub const BATCH: usize = 32;
/// Addresses per chunk of work: the ordinals of one chunk stay in L1.
pub const CHUNK: usize = 2048;

/// A compiled engine of one family: every named engine is built through
/// [`AutoEngine`] with its choice forced, so one enum arm serves them all.
/// Two of these per family snapshot: the size is nothing, while boxing
/// the engine would add a pointer to chase before every lookup.
#[allow(clippy::large_enum_variant)]
enum Compiled<A: Family> {
    Engine(AutoEngine<A>),
    /// A route table whose values are the payloads.
    Radix(RouteTable<A, u32>),
}

impl<A: Family> Compiled<A> {
    /// Build `spec` over `(prefix, payload)` in walk order; `reuse`: an
    /// earlier choice of `auto` to build again without calibrating.
    fn build(
        spec: EngineSpec,
        routes: impl Iterator<Item = (Prefix<A>, u32)>,
        reuse: Option<&Choice>,
    ) -> Result<Self, String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        Ok(match spec {
            EngineSpec::Radix => {
                let mut t = RouteTable::new();
                for (p, i) in routes {
                    t.insert(p, i).map_err(|e| err(&e))?;
                }
                t.compact();
                Compiled::Radix(t)
            }
            _ => {
                let mut opts = AutoOptions {
                    force: spec.force(),
                    ..AutoOptions::default()
                };
                let iv = compile(routes);
                if let (None, Some(c)) = (opts.force, reuse) {
                    if c.still_fits(iv.len()) {
                        opts = opts.reuse(c);
                    }
                }
                Compiled::Engine(AutoEngine::build(&iv, &opts).map_err(|e| err(&e))?)
            }
        })
    }

    /// What `auto` chose and why (`None` for radix).
    fn choice(&self) -> Option<&Choice> {
        match self {
            Compiled::Engine(e) => Some(e.choice()),
            Compiled::Radix(_) => None,
        }
    }

    fn name(&self) -> String {
        match self {
            Compiled::Engine(e) => e.name(),
            Compiled::Radix(_) => "radix".into(),
        }
    }

    fn footprint_bytes(&self) -> usize {
        match self {
            Compiled::Engine(e) => e.footprint_bytes(),
            Compiled::Radix(t) => t.footprint_bytes(),
        }
    }

    #[inline]
    fn lookup(&self, addr: A) -> u32 {
        match self {
            Compiled::Engine(e) => e.lookup(addr),
            Compiled::Radix(t) => t.lookup(addr).map_or(NO_ROUTE, |(_, o)| *o),
        }
    }

    /// Payloads for `addrs` (`out.len() >= addrs.len()`) through the
    /// engine's batch path.
    #[inline]
    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        match self {
            Compiled::Engine(e) => e.lookup_batch::<BATCH>(addrs, out),
            Compiled::Radix(t) => {
                for (a, o) in addrs.iter().zip(out.iter_mut()) {
                    *o = t.lookup(*a).map_or(NO_ROUTE, |(_, v)| *v);
                }
            }
        }
    }
}

/// One family's snapshot.
pub struct FamilySnap<A: Family> {
    spec: EngineSpec,
    /// Answers value slots.
    by_value: Compiled<A>,
    /// Answers route ordinals (built on first use).
    by_route: OnceLock<Result<Compiled<A>, String>>,
    /// The previous snapshot's route-ordinal choice, if it had built one:
    /// reused by `by_route` like `by_value`'s (one change, one build).
    route_reuse: Option<Choice>,
    /// Ordinal -> prefix (ordered walk: address, then shorter first);
    /// borrowed from the mapping for a table opened from a compiled file.
    pub prefixes: LookupBuf<Prefix<A>>,
    /// Ordinal -> value slot.
    slot_of: LookupBuf<u32>,
    /// Value slot -> value (`None`: a slot free in the route table).
    pub values: Vec<Option<Value>>,
    /// Value slot -> integer, when every value is an `Int`.
    pub ints: Option<Vec<i64>>,
    /// The smallest and largest `Int` value (`None`: no `Int` value), so
    /// `lookup_many(dtype=...)` checks that its values fit without a scan.
    pub int_range: Option<(i64, i64)>,
}

impl<A: Family> FamilySnap<A> {
    /// Compile `table` with `spec`; an error names the engine's reason.
    /// `previous`: the snapshot this one replaces, whose `auto` choices
    /// are built again rather than measured anew (one change, one build).
    pub fn build(
        table: &RouteTable<A, Value>,
        spec: EngineSpec,
        previous: Option<&FamilySnap<A>>,
    ) -> Result<Self, String> {
        let routes: Vec<(Prefix<A>, u32)> = table.iter_indices().collect();
        let reuse = previous.and_then(|p| p.by_value.choice());
        let by_value = Compiled::build(spec, routes.iter().copied(), reuse)?;
        let route_reuse = previous
            .and_then(|p| p.by_route.get())
            .and_then(|built| built.as_ref().ok())
            .and_then(Compiled::choice)
            .cloned();
        let values = table.values().to_vec();
        let (prefixes, slot_of): (Vec<_>, Vec<_>) = routes.into_iter().unzip();
        Ok(Self::assemble(
            spec,
            by_value,
            OnceLock::new(),
            route_reuse,
            LookupBuf::from_slice(&prefixes),
            LookupBuf::from_slice(&slot_of),
            values,
        ))
    }

    /// A snapshot of one family of a compiled table file: its engines and
    /// route list used in place, its values converted as a table file's
    /// are (`Value::from_file_text`).
    pub fn from_image(img: FamilyImage<A>) -> Self {
        let (by_value, by_route, prefixes, slot_of, values) = img.into_parts();
        let route_reuse = Some(by_route.choice().clone());
        let values = values
            .into_iter()
            .map(|v| Some(Value::from_file_text(v)))
            .collect();
        Self::assemble(
            EngineSpec::Auto,
            Compiled::Engine(by_value),
            OnceLock::from(Ok(Compiled::Engine(by_route))),
            route_reuse,
            prefixes,
            slot_of,
            values,
        )
    }

    fn assemble(
        spec: EngineSpec,
        by_value: Compiled<A>,
        by_route: OnceLock<Result<Compiled<A>, String>>,
        route_reuse: Option<Choice>,
        prefixes: LookupBuf<Prefix<A>>,
        slot_of: LookupBuf<u32>,
        values: Vec<Option<Value>>,
    ) -> Self {
        let ints = values
            .iter()
            .map(|v| match v {
                Some(Value::Int(i)) => Some(*i),
                Some(_) => None,
                None => Some(0),
            })
            .collect();
        let int_range = values
            .iter()
            .filter_map(|v| match v {
                Some(Value::Int(i)) => Some((*i, *i)),
                _ => None,
            })
            .reduce(|(lo, hi), (a, b)| (lo.min(a), hi.max(b)));
        FamilySnap {
            spec,
            by_value,
            by_route,
            route_reuse,
            prefixes,
            slot_of,
            values,
            ints,
            int_range,
        }
    }

    /// The route table this snapshot answers for (what a table opened from
    /// a compiled file builds on its first change or exact-prefix query).
    pub fn route_table(&self) -> Result<RouteTable<A, Value>, String> {
        let mut t = RouteTable::new();
        for (p, &slot) in self.prefixes.iter().zip(self.slot_of.iter()) {
            if let Some(Some(v)) = self.values.get(slot as usize) {
                t.insert(*p, v.clone()).map_err(|e| e.to_string())?;
            }
        }
        t.compact();
        Ok(t)
    }

    /// Routes compiled in.
    pub fn len(&self) -> usize {
        self.prefixes.len()
    }

    /// The value engine's description (`auto:planb[avx512,s=20]`, `radix`).
    pub fn engine_name(&self) -> String {
        self.by_value.name()
    }

    /// The value engine `auto` built (`poptrie-flat:18`, or
    /// `single/batch` when they differ) and why; `None` for radix.
    pub fn engine_choice(&self) -> Option<(String, String)> {
        self.by_value
            .choice()
            .map(|c| (c.label(), c.reason.clone()))
    }

    /// Bytes of the engines built so far plus the route list.
    pub fn footprint_bytes(&self) -> usize {
        let by_route = match self.by_route.get() {
            Some(Ok(e)) => e.footprint_bytes(),
            _ => 0,
        };
        self.by_value.footprint_bytes()
            + by_route
            + std::mem::size_of_val(&self.prefixes[..])
            + self.slot_of.len() * 4
    }

    /// The route-ordinal engine, built now if it was not yet.
    fn by_route(&self) -> Result<&Compiled<A>, String> {
        let built = self.by_route.get_or_init(|| {
            let ordinals = self
                .prefixes
                .iter()
                .enumerate()
                .map(|(i, p)| (*p, i as u32));
            Compiled::build(self.spec, ordinals, self.route_reuse.as_ref())
        });
        built.as_ref().map_err(Clone::clone)
    }

    /// The matching route's ordinal, or `NO_ROUTE`.
    pub fn ordinal(&self, addr: A) -> Result<u32, String> {
        Ok(self.by_route()?.lookup(addr))
    }

    /// `ordinal` for a caller holding the GIL. The first call builds the
    /// route engine (tens of ms on a full table), and a call meanwhile
    /// waits in `OnceLock::get_or_init` for whichever thread builds it
    /// (`lookup_many(with_prefix_len=True)` builds it without the GIL): until
    /// it is built, both happen detached from the interpreter, so neither
    /// stops the other Python threads. The build itself is pure Rust.
    pub fn ordinal_attached(&self, py: Python<'_>, addr: A) -> Result<u32, String> {
        if self.by_route.get().is_some() {
            self.ordinal(addr)
        } else {
            py.detach(|| self.ordinal(addr))
        }
    }

    /// The matching value slot, or `NO_ROUTE`.
    #[inline]
    pub fn slot(&self, addr: A) -> u32 {
        self.by_value.lookup(addr)
    }

    /// The route at an ordinal: prefix and value slot.
    #[inline]
    pub fn route(&self, ordinal: u32) -> Option<(Prefix<A>, u32)> {
        let i = ordinal as usize;
        Some((*self.prefixes.get(i)?, *self.slot_of.get(i)?))
    }

    /// Look up `addrs` and hand each answer to `sink` as (position, value
    /// slot or `NO_ROUTE`, prefix length: 0 unless `with_len`); `pos[i]` is
    /// where `addrs[i]` belongs (`None`: `i`).
    #[inline]
    pub fn answer<S: Sink>(
        &self,
        addrs: &[A],
        pos: Option<&[u32]>,
        with_len: bool,
        sink: &mut S,
    ) -> Result<(), String> {
        let engine = if with_len {
            self.by_route()?
        } else {
            &self.by_value
        };
        let mut out = [0u32; CHUNK];
        for (c, chunk) in addrs.chunks(CHUNK).enumerate() {
            let out = &mut out[..chunk.len()];
            engine.lookup_batch(chunk, out);
            let base = c * CHUNK;
            for (i, &o) in out.iter().enumerate() {
                let p = match pos {
                    Some(pos) => pos[base + i] as usize,
                    None => base + i,
                };
                if !with_len {
                    sink.put(p, o, 0);
                } else {
                    match self.route(o) {
                        Some((prefix, slot)) => sink.put_route(p, o, slot, prefix.len()),
                        None => sink.put(p, NO_ROUTE, 0),
                    }
                }
            }
        }
        Ok(())
    }
}

/// Where `lookup_many` answers go, one family at a time.
pub trait Sink {
    /// Address `pos` matched value slot `slot` (`NO_ROUTE`: no match) with
    /// a prefix of length `len`.
    fn put(&mut self, pos: usize, slot: u32, len: u8);

    /// The same answer from the route-ordinal engine (`with_len`), which
    /// also knows the matched route's `ordinal` in this family's walk
    /// order; sinks that do not need it answer as [`Sink::put`].
    #[inline]
    fn put_route(&mut self, pos: usize, ordinal: u32, slot: u32, len: u8) {
        let _ = ordinal;
        self.put(pos, slot, len);
    }
}

/// Both families.
pub struct Snapshot {
    pub v4: std::sync::Arc<FamilySnap<u32>>,
    pub v6: std::sync::Arc<FamilySnap<u128>>,
    pub spec: EngineSpec,
}

impl Snapshot {
    /// A compiled table file's engines and values, as mapped.
    pub fn from_image(img: ipfib::image::ImageTable) -> Self {
        Snapshot {
            v4: std::sync::Arc::new(FamilySnap::from_image(img.v4)),
            v6: std::sync::Arc::new(FamilySnap::from_image(img.v6)),
            spec: EngineSpec::Auto,
        }
    }

    /// Integer value per slot for both families, when every value is an int.
    pub fn ints(&self) -> Option<(&[i64], &[i64])> {
        Some((self.v4.ints.as_deref()?, self.v6.ints.as_deref()?))
    }

    /// The smallest and largest integer value of both families (`None`:
    /// no integer value).
    pub fn int_range(&self) -> Option<(i64, i64)> {
        match (self.v4.int_range, self.v6.int_range) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (r, None) | (None, r) => r,
        }
    }
}

/// Python objects for every value slot of both families (IPv6 after IPv4).
pub(crate) fn slot_objects(
    py: Python<'_>,
    objects: &Objects,
    snap: &Snapshot,
) -> PyResult<Vec<Py<PyAny>>> {
    snap.v4
        .values
        .iter()
        .chain(snap.v6.values.iter())
        .map(|v| match v {
            Some(v) => objects.to_py(py, v),
            None => Ok(py.None()),
        })
        .collect()
}
