//! Every engine variant built from the same routes, each answer compared
//! with the route table's (and, on request, the oracle's); batches of
//! every size compared with single lookups.

use crate::compiled::Compiled;
use crate::engine::auto::{self, AutoEngine, AutoOptions};
use crate::engine::planb::{PlanB, PlanBOptions, BATCH_SIZES};
use crate::engine::poptrie::{self, FlatPoptrie, Node32, Poptrie, PoptrieOptions};
use crate::engine::{Engine, Family};
use crate::intervals::{compile, Intervals, NO_ROUTE};
use crate::oracle::Oracle;
use crate::prefix::Prefix;
use crate::route_table::RouteTable;
use std::fmt::Debug;

/// Property-test cases: `PROPTEST_CASES` from the environment when set
/// (a long run goes deeper than CI's), else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// One disagreement between an engine and the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub engine: String,
    pub addr: String,
    pub got: String,
    pub want: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at {}: got {}, want {}",
            self.engine, self.addr, self.got, self.want
        )
    }
}

/// Every interval boundary of `routes` and its neighbours (start - 1, start,
/// last, last + 1), plus zero and the top of the space.
pub fn boundary_queries<A: Family>(prefixes: impl IntoIterator<Item = Prefix<A>>) -> Vec<A> {
    let mut q = vec![A::ZERO, A::MAX];
    for p in prefixes {
        q.push(p.addr());
        q.push(p.last());
        q.extend(p.addr().checked_pred());
        q.extend(p.last().checked_succ());
    }
    q
}

/// Layouts worth testing, as `(direct bits, sub-table threshold)`: one bit
/// without sub-tables (two buckets: deep local trees), one bit with
/// sub-tables (heavy buckets split again), four bits (mid-size trees and
/// sub-tables), and the defaults.
pub const LAYOUTS: [(Option<u8>, Option<usize>); 4] = [
    (Some(1), Some(usize::MAX)),
    (Some(1), None),
    (Some(4), None),
    (None, None),
];

/// Poptrie layouts worth testing, as `(direct bits, leafvec)`: every `s`
/// of the paper with leaf compression, and the basic trie (no `leafvec`)
/// at the default `s`.
pub const POPTRIE_LAYOUTS: [(u8, bool); 4] = [(0, true), (16, true), (18, true), (18, false)];

/// Check every engine variant against the route table on `queries`:
/// PlanB (each supported kernel x layout) and Poptrie, 64- and 32-ary
/// (the best kernel x [`POPTRIE_LAYOUTS`], the others at the default
/// layout), each with route payloads (through
/// `Compiled`: prefix and value) and value payloads (aggregated
/// intervals: value index), single and batch paths. With `oracle`, the
/// route table is itself checked against the oracle on every query first.
pub fn check_engines<A: Family, V: Clone + Eq + std::hash::Hash + Debug>(
    table: &RouteTable<A, V>,
    oracle: Option<&Oracle<A, V>>,
    queries: &[A],
) -> Result<(), Mismatch> {
    check_engines_in(table, oracle, queries, &LAYOUTS, &POPTRIE_LAYOUTS, true)
}

/// PlanB layouts with small direct tables, for [`check_engines_small`].
pub const SMALL_LAYOUTS: [(Option<u8>, Option<usize>); 4] = [
    (Some(1), Some(usize::MAX)),
    (Some(1), None),
    (Some(4), None),
    (Some(8), None),
];

/// Poptrie layouts with small direct tables (`s` = 0, 5, 8), for
/// [`check_engines_small`].
pub const SMALL_POPTRIE_LAYOUTS: [(u8, bool); 4] = [(0, true), (5, true), (8, true), (8, false)];

/// [`check_engines`] with direct tables of at most 2^8 entries
/// ([`SMALL_LAYOUTS`], [`SMALL_POPTRIE_LAYOUTS`]): the same code paths on
/// small tables at a fraction of the cost, for the engines fuzz target
/// (a 2^18-entry direct table per variant would dominate every input).
pub fn check_engines_small<A: Family, V: Clone + Eq + std::hash::Hash + Debug>(
    table: &RouteTable<A, V>,
    oracle: Option<&Oracle<A, V>>,
    queries: &[A],
) -> Result<(), Mismatch> {
    check_engines_in(
        table,
        oracle,
        queries,
        &SMALL_LAYOUTS,
        &SMALL_POPTRIE_LAYOUTS,
        false,
    )
}

fn check_engines_in<A: Family, V: Clone + Eq + std::hash::Hash + Debug>(
    table: &RouteTable<A, V>,
    oracle: Option<&Oracle<A, V>>,
    queries: &[A],
    planb_layouts: &[(Option<u8>, Option<usize>)],
    poptrie_layouts: &[(u8, bool)],
    auto: bool,
) -> Result<(), Mismatch> {
    let want: Vec<Option<(Prefix<A>, &V)>> = queries.iter().map(|&a| table.lookup(a)).collect();
    if let Some(o) = oracle {
        for (&a, w) in queries.iter().zip(&want) {
            let o = o.lookup(a);
            if o != *w {
                return Err(mismatch("radix", a, w, &o));
            }
        }
    }
    let c = Checker {
        table,
        want: &want,
        value_iv: compile(table.iter_indices()),
        queries,
    };
    for kernel in crate::engine::planb::KERNELS.supported() {
        for &(direct_bits, sub_min_keys) in planb_layouts {
            let opts = PlanBOptions {
                kernel: Some(kernel),
                direct_bits,
                sub_min_keys,
            };
            let name = format!("planb[{kernel}, s={direct_bits:?}, sub>{sub_min_keys:?}]");
            c.variant::<PlanB<A>>(&name, &opts)?;
        }
    }
    // The kernels share every line of the search but the popcount's code,
    // so the ones the CPU would not pick by itself run one layout.
    for kernel in poptrie::KERNELS.supported() {
        let layouts: &[(u8, bool)] = if kernel == poptrie::KERNELS.detect() {
            poptrie_layouts
        } else {
            &poptrie_layouts[2..3]
        };
        for &(s, leafvec) in layouts {
            let opts = PoptrieOptions {
                direct_bits: Some(s),
                leafvec,
                kernel: Some(kernel),
            };
            let name = format!("poptrie[{kernel}, s={s}, leafvec={leafvec}]");
            c.variant::<Poptrie<A>>(&name, &opts)?;
            // The 32-ary layout: the same build and search at K = 5 (its
            // AVX-512 batch differs: one gather per level).
            let name = format!("poptrie32[{kernel}, s={s}, leafvec={leafvec}]");
            c.variant::<Poptrie<A, Node32>>(&name, &opts)?;
        }
        // The flat layout (its runs are always compressed), every `s` on
        // every kernel (its searches share less code across kernels),
        // with its own focus rule and with a focus that leaves a fraction
        // of the boundaries to the outer table.
        for &(s, _) in poptrie_layouts.iter().filter(|l| l.1) {
            let opts = PoptrieOptions {
                direct_bits: Some(s),
                kernel: Some(kernel),
                ..Default::default()
            };
            let name = format!("poptrie-flat[{kernel}, s={s}]");
            c.variant::<FlatPoptrie<A>>(&name, &opts)?;
            let name = format!("poptrie-flat[{kernel}, s={s}, strays]");
            c.variant::<StrayFlat<A>>(&name, &opts)?;
        }
    }
    if auto {
        // `auto` as users get it (calibrated: possibly two engines, one for
        // single lookups, one for batches), from the shape alone, and
        // every pick forced (the dispatch of each arm).
        c.variant::<AutoEngine<A>>("auto", &AutoOptions::default())?;
        let untimed = AutoOptions {
            calibrate: false,
            ..AutoOptions::default()
        };
        c.variant::<AutoEngine<A>>("auto[untimed]", &untimed)?;
        for pick in [
            (auto::Kind::Poptrie32, Some(16)),
            (auto::Kind::Flat, Some(8)),
        ]
        .into_iter()
        .chain(auto::CANDIDATES)
        {
            let forced = AutoOptions {
                force: Some(pick),
                ..AutoOptions::default()
            };
            c.variant::<AutoEngine<A>>(&format!("auto[{}]", auto::label(pick)), &forced)?;
        }
    }
    Ok(())
}

/// A [`FlatPoptrie`] whose focus prefix need hold only just over half the
/// interval boundaries, so that random tables send many lanes through the
/// outer table (real tables leave it a handful of stray prefixes).
struct StrayFlat<A: Family>(FlatPoptrie<A>);

impl<A: Family> Engine<A> for StrayFlat<A> {
    type Options = PoptrieOptions;
    type Error = poptrie::PoptrieError;

    fn build(iv: &Intervals<A>, opts: &Self::Options) -> Result<Self, Self::Error> {
        FlatPoptrie::build_with_share(iv, opts, 501).map(StrayFlat)
    }
    fn lookup(&self, addr: A) -> u32 {
        self.0.lookup(addr)
    }
    fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        self.0.lookup_batch::<M>(addrs, out)
    }
    fn footprint_bytes(&self) -> usize {
        self.0.footprint_bytes()
    }
    fn name(&self) -> String {
        format!("{} (strays)", self.0.name())
    }
    fn validate(&self) -> Result<(), String> {
        self.0.validate()
    }
    fn validate_below(&self, bound: u32) -> Result<(), String> {
        self.0.validate_below(bound)
    }
}

/// The reference answers and the intervals every variant is built from.
struct Checker<'a, A: Family, V> {
    table: &'a RouteTable<A, V>,
    want: &'a [Option<(Prefix<A>, &'a V)>],
    value_iv: Intervals<A>,
    queries: &'a [A],
}

impl<A: Family, V: Clone + Eq + std::hash::Hash + Debug> Checker<'_, A, V> {
    /// One engine configuration, with route payloads and with value payloads.
    fn variant<E: Engine<A>>(&self, name: &str, opts: &E::Options) -> Result<(), Mismatch> {
        let build_error = |e: &dyn std::fmt::Display, name: &str| Mismatch {
            engine: name.to_string(),
            addr: "-".into(),
            got: format!("build error {e}"),
            want: "an engine".into(),
        };
        let invalid = |e: String, name: &str| Mismatch {
            engine: name.to_string(),
            addr: "-".into(),
            got: format!("invalid structure: {e}"),
            want: "a valid one".into(),
        };
        let c = Compiled::<A, V, E>::with_engine(self.table, opts)
            .map_err(|e| build_error(&e, name))?;
        c.engine().validate().map_err(|e| invalid(e, name))?;
        // Every answer is below the route count (what a compiled table
        // file's opener requires of the route engine).
        let routes = u32::try_from(c.len()).unwrap_or(NO_ROUTE);
        c.engine()
            .validate_below(routes)
            .map_err(|e| invalid(e, name))?;
        let mut top = None;
        for (&a, w) in self.queries.iter().zip(self.want) {
            let got = c.lookup(a);
            if got != *w {
                return Err(mismatch(name, a, w, &got));
            }
            // A miss must be exactly NO_ROUTE, a hit a real ordinal.
            let ordinal = c.engine().lookup(a);
            if (ordinal == NO_ROUTE) != w.is_none()
                || (ordinal != NO_ROUTE && ordinal as usize >= c.len())
            {
                return Err(mismatch(name, a, &format!("ordinal for {w:?}"), &ordinal));
            }
            if ordinal != NO_ROUTE {
                top = top.max(Some(ordinal));
            }
        }
        // And the bound check sees the answers: one below the largest
        // ordinal answered is refused.
        if let Some(top) = top {
            if c.engine().validate_below(top).is_ok() {
                return Err(Mismatch {
                    engine: name.to_string(),
                    addr: "-".into(),
                    got: format!("validate_below({top}) accepted"),
                    want: format!("refused: ordinal {top} is answered"),
                });
            }
        }
        check_batches(name, self.queries, c.engine())?;
        // Value payloads (aggregated intervals): value index must match.
        let vname = format!("{name}/values");
        let e = E::build(&self.value_iv, opts).map_err(|e| build_error(&e, &vname))?;
        e.validate().map_err(|e| invalid(e, &vname))?;
        for (i, &a) in self.queries.iter().enumerate() {
            let p = e.lookup(a);
            let w = self.want[i].map(|(_, v)| v);
            // A miss must be exactly NO_ROUTE, a hit a live value index.
            let got = if p == NO_ROUTE {
                None
            } else {
                Some(self.table.values().get(p))
            };
            if got != w.map(Some) {
                return Err(mismatch(&vname, a, &w, &(p, got)));
            }
        }
        check_batches(&vname, self.queries, &e)
    }
}

/// Every batch size of [`BATCH_SIZES`] must answer what single lookups do.
pub fn check_batches<A: Family, E: Engine<A>>(
    name: &str,
    queries: &[A],
    e: &E,
) -> Result<(), Mismatch> {
    let single: Vec<u32> = queries.iter().map(|&a| e.lookup(a)).collect();
    // A filler no engine writes, so a skipped output slot cannot pass.
    let mut out = vec![NO_ROUTE - 1; queries.len()];
    for m in BATCH_SIZES {
        out.fill(NO_ROUTE - 1);
        match m {
            8 => e.lookup_batch::<8>(queries, &mut out),
            16 => e.lookup_batch::<16>(queries, &mut out),
            32 => e.lookup_batch::<32>(queries, &mut out),
            _ => e.lookup_batch::<64>(queries, &mut out),
        }
        if let Some(i) = (0..queries.len()).find(|&i| out[i] != single[i]) {
            return Err(mismatch(
                &format!("{name} batch<{m}>"),
                queries[i],
                &single[i],
                &out[i],
            ));
        }
    }
    Ok(())
}

fn mismatch<A: Family, T: Debug, U: Debug>(engine: &str, a: A, want: &T, got: &U) -> Mismatch {
    Mismatch {
        engine: engine.to_string(),
        addr: format!("{}", a.to_std()),
        got: format!("{got:?}"),
        want: format!("{want:?}"),
    }
}
