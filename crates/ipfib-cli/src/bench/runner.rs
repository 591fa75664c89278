//! One table of one family through every engine: build each engine once
//! (timed, with the resident-memory growth), then per trace: latency
//! samples (`--latency`), and timed passes per batch size and thread
//! count. Every row's checksum must agree with the first row of its trace.

use super::latency;
use super::machine::{rss_bytes, trim_heap, worker_cpus};
use super::passes::time_passes;
use super::report::print_row;
use super::rows::{LatencyRow, Row, Subject};
use super::trace::TraceSpec;
use super::tsc;
use ipfib::compiled::Compiled;
use ipfib::engine::auto::{AutoEngine, AutoOptions};
use ipfib::engine::kernel::{Kernel, KernelSet};
use ipfib::engine::planb::{PlanB, PlanBOptions};
use ipfib::engine::poptrie::{FlatPoptrie, Node, Node32, Poptrie, PoptrieOptions, Stride};
use ipfib::engine::registry::{EngineSpec, Kind, Variant as PayloadKind};
use ipfib::engine::{Engine, Family};
use ipfib::intervals::{compile, NO_ROUTE};
use ipfib::route_table::RouteTable;
use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

type Error = Box<dyn std::error::Error>;

/// What every table of a run shares.
pub struct Plan<'a> {
    /// `--kernels`: `None` for every kernel this CPU supports (`all`),
    /// empty for each engine's best.
    pub kernels: Option<&'a [Kernel]>,
    pub engines: &'a [EngineSpec],
    pub traces: &'a [TraceSpec],
    pub batches: &'a [usize],
    pub threads: &'a [usize],
    pub runs: usize,
    pub trace_len: usize,
    pub seed: u64,
    pub direct_bits: Option<u8>,
    pub pin: Option<usize>,
    /// `--latency`: sample size, the overhead of an empty measurement and
    /// the counter rate.
    pub latency: Option<(usize, u64, Option<f64>)>,
}

/// A built engine as the runner drives it: passes and latency samples are
/// monomorphised inside, so the one dynamic call is per pass (or per
/// latency sample), never per lookup.
trait Bench<A: Family>: Sync {
    /// The row fields the engine decides (name, build, memory, counts).
    fn base(&self) -> &Row;
    /// Answer `addrs` into `out`, `m` at a time (1: single lookups).
    fn pass(&self, m: usize, addrs: &[A], out: &mut [u32]);
    /// Ticks of each single lookup of `sample`.
    fn latency(&self, sample: &[A]) -> Vec<u64>;
    /// Payload -> value index, for the checksum.
    fn resolve(&self, p: u32) -> u32;
    /// Whether batch sizes other than 1 mean anything.
    fn batches(&self) -> bool;
}

impl Plan<'_> {
    /// Build every engine on `table` and time it on every trace; rows are
    /// printed as they come and appended to `rows` / `latency`.
    pub fn table<A: Family>(
        &self,
        table: &RouteTable<A, String>,
        name: &str,
        rows: &mut Vec<Row>,
        lat: &mut Vec<LatencyRow>,
    ) -> Result<(), Error> {
        if table.is_empty() {
            return Ok(());
        }
        let prefixes: Vec<_> = table.iter().map(|(p, _)| p).collect();
        let traces: Vec<(String, Vec<A>)> = self
            .traces
            .iter()
            .filter_map(|t| {
                t.generate(&prefixes, self.trace_len, self.seed)
                    .map(|addrs| (t.name(), addrs))
            })
            .collect();
        if traces.is_empty() {
            return Ok(());
        }
        let built = self.build_all(table)?;
        let mut reference: HashMap<&str, (u64, String)> = HashMap::new();
        for (trace_name, trace) in &traces {
            for b in &built {
                let mut row = b.base().clone();
                row.id.family = A::FAMILY;
                row.id.table = name.to_string();
                row.id.prefixes = table.len();
                row.bytes_per_prefix = row.footprint_bytes as f64 / table.len().max(1) as f64;
                row.id.trace = trace_name.clone();
                if let Some((n, overhead, hz)) = self.latency {
                    let ticks = b.latency(&trace[..n.min(trace.len())]);
                    lat.push(latency::summarize(row.id.clone(), &ticks, overhead, hz));
                }
                let batches: &[usize] = if b.batches() { self.batches } else { &[1] };
                for &m in batches {
                    for &threads in self.threads {
                        let mut out = vec![0u32; trace.len()];
                        let cpus = if threads > 1 {
                            worker_cpus(self.pin, threads)
                        } else {
                            Vec::new()
                        };
                        let pass = |addrs: &[A], out: &mut [u32]| b.pass(m, addrs, out);
                        let mlps = time_passes(self.runs, trace, &mut out, &cpus, &pass)?;
                        let mut r = row.clone();
                        r.batch = m;
                        r.threads = threads;
                        r.cpus = if threads > 1 {
                            cpus
                        } else {
                            self.pin.into_iter().collect()
                        };
                        r.set_mlps(mlps);
                        r.checksum = checksum(&out, |p| b.resolve(p));
                        print_row(&r);
                        let who = format!(
                            "{} ({}) batch {m} threads {threads}",
                            r.id.engine, r.id.kernel
                        );
                        let (want, first) = reference
                            .entry(trace_name)
                            .or_insert_with(|| (r.checksum, who.clone()));
                        let mismatch = *want != r.checksum;
                        let first = first.clone();
                        rows.push(r);
                        if mismatch {
                            return Err(format!(
                                "checksum mismatch on {name} IPv{} {trace_name}: {who} disagrees \
                                 with {first}",
                                A::FAMILY
                            )
                            .into());
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The kernels to run an engine of `set` with: every one this CPU
    /// supports (`--kernels all`), those listed that it supports, or (none
    /// listed, or none of them its) its best.
    fn kernels_of(&self, set: &KernelSet) -> Vec<Kernel> {
        let Some(listed) = self.kernels else {
            return set.supported();
        };
        let mine: Vec<Kernel> = listed
            .iter()
            .copied()
            .filter(|&k| set.is_supported(k))
            .collect();
        match mine.is_empty() {
            true => vec![set.detect()],
            false => mine,
        }
    }

    /// Every engine variant, in `--engines` order.
    fn build_all<'t, A: Family>(
        &self,
        table: &'t RouteTable<A, String>,
    ) -> Result<Vec<Box<dyn Bench<A> + 't>>, Error> {
        let mut built: Vec<Box<dyn Bench<A> + 't>> = Vec::new();
        for &engine in self.engines {
            match engine {
                EngineSpec::Radix => built.push(Box::new(Radix::new(table))),
                EngineSpec::Auto => {
                    let who = ("auto".to_string(), "auto");
                    let mut v = Variant::<A, AutoEngine<A>>::build(
                        table,
                        &AutoOptions::default(),
                        true,
                        who,
                    )?;
                    let choice = v.engine().choice().clone();
                    v.base.chosen = Some(choice.label());
                    v.base.chosen_reason = Some(choice.reason);
                    built.push(Box::new(v));
                }
                EngineSpec::Engine {
                    kind: Kind::PlanB,
                    variant,
                    ..
                } => {
                    for kernel in self.kernels_of(Kind::PlanB.kernels()) {
                        let opts = PlanBOptions {
                            kernel: Some(kernel),
                            direct_bits: self.direct_bits,
                            ..Default::default()
                        };
                        let aggregate = variant == PayloadKind::Values;
                        let who = (engine.label(0), kernel.name());
                        let v = Variant::<A, PlanB<A>>::build(table, &opts, aggregate, who)?;
                        built.push(Box::new(v));
                    }
                }
                EngineSpec::Engine {
                    kind: kind @ (Kind::Poptrie | Kind::Poptrie32 | Kind::Flat),
                    bits,
                    variant,
                } => {
                    for kernel in self.kernels_of(kind.kernels()) {
                        let opts = PoptrieOptions {
                            direct_bits: bits,
                            leafvec: variant != PayloadKind::Basic,
                            kernel: Some(kernel),
                        };
                        let aggregate = variant == PayloadKind::Values;
                        let label = engine.label(PoptrieOptions::DEFAULT_DIRECT_BITS);
                        let who = (label, kernel.name());
                        built.push(match kind {
                            Kind::Poptrie32 => {
                                poptrie_variant::<A, Node32>(table, &opts, aggregate, who)?
                            }
                            Kind::Flat => flat_variant::<A>(table, &opts, aggregate, who)?,
                            _ => poptrie_variant::<A, Node>(table, &opts, aggregate, who)?,
                        });
                    }
                }
                // An engine with no typed arm here is measured through the
                // registry's `Built` (one match per call), with its best
                // kernel: a new engine is benchmarked from its first day.
                EngineSpec::Engine { variant, .. } => {
                    let opts = AutoOptions {
                        force: engine.force(),
                        ..AutoOptions::default()
                    };
                    let aggregate = variant == PayloadKind::Values;
                    let who = (engine.label(PoptrieOptions::DEFAULT_DIRECT_BITS), "best");
                    let v = Variant::<A, AutoEngine<A>>::build(table, &opts, aggregate, who)?;
                    built.push(Box::new(v));
                }
            }
        }
        Ok(built)
    }
}

/// A Poptrie of node layout `N`, with its node, leaf and byte counts.
fn poptrie_variant<'t, A: Family, N: Stride>(
    table: &'t RouteTable<A, String>,
    opts: &PoptrieOptions,
    aggregate: bool,
    who: (String, &'static str),
) -> Result<Box<dyn Bench<A> + 't>, Error> {
    let mut v = Variant::<A, Poptrie<A, N>>::build(table, opts, aggregate, who)?;
    let e = v.engine();
    let (n, l, b) = (e.internal_nodes(), e.leaves(), e.footprint_bytes());
    v.base.inodes = Some(n);
    v.base.leaves = Some(l);
    v.base.engine_bytes = Some(b);
    Ok(Box::new(v))
}

/// A flat Poptrie, with its entry and byte counts.
fn flat_variant<'t, A: Family>(
    table: &'t RouteTable<A, String>,
    opts: &PoptrieOptions,
    aggregate: bool,
    who: (String, &'static str),
) -> Result<Box<dyn Bench<A> + 't>, Error> {
    let mut v = Variant::<A, FlatPoptrie<A>>::build(table, opts, aggregate, who)?;
    let (entries, bytes) = (v.engine().entries(), v.engine().footprint_bytes());
    v.base.leaves = Some(entries);
    v.base.engine_bytes = Some(bytes);
    Ok(Box::new(v))
}

/// The route table as the `radix` baseline: single lookups only.
struct Radix<'t, A: Family> {
    table: &'t RouteTable<A, String>,
    base: Row,
}

impl<'t, A: Family> Radix<'t, A> {
    fn new(table: &'t RouteTable<A, String>) -> Self {
        let base = Row {
            id: Subject {
                engine: "radix".into(),
                kernel: "-".into(),
                ..Default::default()
            },
            footprint_bytes: table.footprint_bytes(),
            ..Default::default()
        };
        Radix { table, base }
    }
}

impl<A: Family> Bench<A> for Radix<'_, A> {
    fn base(&self) -> &Row {
        &self.base
    }
    fn pass(&self, _m: usize, addrs: &[A], out: &mut [u32]) {
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = self
                .table
                .lookup_index(black_box(a))
                .map_or(NO_ROUTE, |x| x.1);
        }
    }
    fn latency(&self, sample: &[A]) -> Vec<u64> {
        latency::measure(sample, |a| {
            self.table.lookup_index(a).map_or(NO_ROUTE, |x| x.1)
        })
    }
    fn resolve(&self, p: u32) -> u32 {
        p
    }
    fn batches(&self) -> bool {
        false
    }
}

/// An engine as benchmarked: value payloads (aggregated intervals), or
/// route payloads with the route -> value-index map used to resolve them
/// for the checksum; `base` holds its build time (interval compile +
/// engine build) and memory.
struct Variant<A: Family, E: Engine<A>> {
    kind: Payloads<A, E>,
    base: Row,
}

enum Payloads<A: Family, E: Engine<A>> {
    Values(E),
    Routes(Compiled<A, String, E>, Vec<u32>),
}

impl<A: Family, E: Engine<A>> Variant<A, E> {
    fn build(
        table: &RouteTable<A, String>,
        opts: &E::Options,
        aggregate: bool,
        (engine, kernel): (String, &str),
    ) -> Result<Self, E::Error> {
        trim_heap();
        let rss0 = rss_bytes();
        let t0 = Instant::now();
        let kind = if aggregate {
            Payloads::Values(E::build(&compile(table.iter_indices()), opts)?)
        } else {
            let vi = table.iter_indices().map(|(_, v)| v).collect();
            Payloads::Routes(Compiled::with_engine(table, opts)?, vi)
        };
        let build_ms = t0.elapsed().as_secs_f64() * 1e3;
        let rss_delta_bytes = rss0.zip(rss_bytes()).map(|(a, b)| b as i64 - a as i64);
        let footprint_bytes = match &kind {
            Payloads::Values(e) => e.footprint_bytes(),
            Payloads::Routes(c, _) => c.footprint_bytes(),
        };
        let base = Row {
            id: Subject {
                engine,
                kernel: kernel.to_string(),
                ..Default::default()
            },
            build_ms,
            footprint_bytes,
            rss_delta_bytes,
            ..Default::default()
        };
        Ok(Variant { kind, base })
    }

    fn engine(&self) -> &E {
        match &self.kind {
            Payloads::Values(e) => e,
            Payloads::Routes(c, _) => c.engine(),
        }
    }
}

impl<A: Family, E: Engine<A>> Bench<A> for Variant<A, E> {
    fn base(&self) -> &Row {
        &self.base
    }
    fn pass(&self, m: usize, addrs: &[A], out: &mut [u32]) {
        batch(self.engine(), addrs, out, m)
    }
    fn latency(&self, sample: &[A]) -> Vec<u64> {
        let e = self.engine();
        latency::measure(sample, |a| e.lookup(a))
    }
    fn resolve(&self, p: u32) -> u32 {
        match &self.kind {
            Payloads::Routes(_, vi) if p != NO_ROUTE => vi[p as usize],
            _ => p,
        }
    }
    fn batches(&self) -> bool {
        true
    }
}

fn batch<A: Family, E: Engine<A>>(e: &E, trace: &[A], out: &mut [u32], m: usize) {
    match m {
        1 => {
            for (o, &a) in out.iter_mut().zip(trace) {
                *o = e.lookup(black_box(a));
            }
        }
        8 => e.lookup_batch::<8>(trace, out),
        16 => e.lookup_batch::<16>(trace, out),
        32 => e.lookup_batch::<32>(trace, out),
        64 => e.lookup_batch::<64>(trace, out),
        // Other sizes: the nearest compiled batch size below.
        m if m < 16 => e.lookup_batch::<8>(trace, out),
        m if m < 32 => e.lookup_batch::<16>(trace, out),
        m if m < 64 => e.lookup_batch::<32>(trace, out),
        _ => e.lookup_batch::<64>(trace, out),
    }
}

/// Order-sensitive checksum over resolved value indices:
/// `h = h * 0x100000001b3 + (value + 1)`, a miss counting as `u32::MAX`.
pub fn checksum(out: &[u32], resolve: impl Fn(u32) -> u32) -> u64 {
    out.iter().fold(0u64, |h, &p| {
        h.wrapping_mul(0x100_0000_01b3)
            .wrapping_add(resolve(p) as u64 + 1)
    })
}

/// The latency settings for `--latency N`: the sample size, the overhead
/// of an empty measurement and the calibrated counter rate.
pub fn latency_setup(sample: usize) -> Result<(usize, u64, Option<f64>), String> {
    if let Some(why) = tsc::unsupported() {
        return Err(why.into());
    }
    let hz = tsc::calibrate(std::time::Duration::from_millis(50));
    Ok((sample, tsc::overhead(), (hz > 0.0).then_some(hz)))
}
