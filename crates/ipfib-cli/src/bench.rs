//! `ipfib bench`: engines side by side on one table and trace, in one run.
//!
//! Method: the trace is generated (or read) once per family; per engine
//! variant and batch size, one discarded warm-up pass and `--runs` timed
//! passes over the whole trace; MLPS min / median / max. Outputs are
//! resolved to value indices after timing and summed into a checksum that
//! must agree across engines (a wrong engine is reported, not timed).
//!
//! Engines:
//! - `planb`: PlanB over aggregated intervals whose payload is the value
//!   (what a FIB answers: next hop / origin AS); the peers' task;
//! - `planb-routes`: PlanB whose payload is the route, so the prefix is
//!   known too (what `ipfib lookup` prints);
//! - `radix`: the route table (path-compressed trie), single lookups;
//! - `poptrie[:S]`: Poptrie with leafvec over value payloads (route
//!   aggregation), `S` direct-pointing bits; `poptrie-routes[:S]`: leafvec
//!   over route payloads (no aggregation); `poptrie-basic[:S]`: neither
//!   (the paper's Table 2 rows). Poptrie rows also report internal nodes
//!   and leaves.

use crate::engines::{EngineSpec, BENCH_ENGINES};
use crate::load::{from_routes, load, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::compiled::Compiled;
use ipfib::engine::planb::kernel::Kernel;
use ipfib::engine::planb::{PlanB, PlanbOptions};
use ipfib::engine::poptrie::{self, Poptrie, PoptrieOptions};
use ipfib::engine::{Engine, Family};
use ipfib::gen::{matched_trace, synthetic_v4, synthetic_v6, uniform_trace};
use ipfib::intervals::{compile, NO_ROUTE};
use ipfib::prefix::{AnyPrefix, HostBits, Prefix};
use ipfib::route_table::RouteTable;
use ipfib::table::Table;
use ipfib_io::{read_trace, Trace};
use serde::Serialize;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Table file (any format `ipfib lookup` reads); default: built-in
    /// synthetic IPv4 and IPv6 tables.
    #[arg(long)]
    table: Option<PathBuf>,
    /// Format of --table.
    #[arg(long, default_value = "auto")]
    format: String,
    /// Clear host bits in --table instead of rejecting lines.
    #[arg(long)]
    mask_host_bits: bool,
    /// Synthetic IPv4 table size (when no --table).
    #[arg(long, default_value_t = 606_000)]
    v4_prefixes: usize,
    /// Synthetic IPv6 table size (when no --table; 0 skips).
    #[arg(long, default_value_t = 259_000)]
    v6_prefixes: usize,
    /// Traces: uniform (random addresses), matched (inside random prefixes
    /// of the table), uniform-in:PREFIX (random addresses inside PREFIX,
    /// e.g. uniform-in:2000::/8; only that prefix's family is run), or a
    /// trace file (binary `IPFIBTR1` or one address per line;
    /// `bench/peers/make_inputs.py` writes them for ipfib and its peers).
    #[arg(long, default_value = "uniform,matched", value_delimiter = ',')]
    trace: Vec<String>,
    /// Addresses per trace.
    #[arg(long, default_value_t = 2_000_000)]
    trace_len: usize,
    /// Engines: planb, planb-routes, radix, poptrie[:S], poptrie-routes[:S],
    /// poptrie-basic[:S] (S: direct-pointing bits, 0-24).
    #[arg(
        long,
        default_value = "planb,planb-routes,poptrie,radix",
        value_delimiter = ','
    )]
    engines: Vec<String>,
    /// PlanB kernels, or `all` for every kernel this CPU supports
    /// (default: the best one). Poptrie runs its best popcount kernel, and
    /// the scalar one too when scalar (or all) is listed.
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
    /// Batch sizes (1 = single lookups).
    #[arg(long, default_value = "1,16,32", value_delimiter = ',')]
    batch: Vec<usize>,
    /// PlanB direct-pointing bits (default: chosen from the table size;
    /// Poptrie takes its own from `poptrie:S`).
    #[arg(long)]
    direct_bits: Option<u8>,
    /// Timed passes (after one discarded warm-up).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Pin the benchmark thread to this CPU.
    #[arg(long)]
    pin: Option<usize>,
    /// Trace seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write results as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Serialize)]
struct Machine {
    cpu: String,
    kernels: Vec<String>,
    pinned_cpu: Option<usize>,
    governor: Option<String>,
    os: String,
}

#[derive(Serialize, Clone)]
struct Row {
    engine: String,
    kernel: String,
    family: u8,
    table: String,
    prefixes: usize,
    trace: String,
    batch: usize,
    threads: usize,
    mlps_min: f64,
    mlps_median: f64,
    mlps_max: f64,
    build_ms: f64,
    footprint_bytes: usize,
    bytes_per_prefix: f64,
    checksum: u64,
    /// Poptrie: internal nodes, leaves and bytes of the trie alone
    /// (direct table, nodes, leaves; `footprint_bytes` adds the route list
    /// of route-payload variants).
    #[serde(skip_serializing_if = "Option::is_none")]
    inodes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    leaves: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    engine_bytes: Option<usize>,
}

#[derive(Serialize)]
struct Report {
    machine: Machine,
    results: Vec<Row>,
}

pub fn run(args: Args) -> CmdResult {
    if let Some(cpu) = args.pin {
        pin_to(cpu)?;
    }
    let kernels: Vec<Kernel> = if args.kernels.is_empty() {
        vec![Kernel::detect()]
    } else if args.kernels.iter().any(|k| k == "all") {
        Kernel::supported()
    } else {
        args.kernels
            .iter()
            .map(|k| k.parse())
            .collect::<Result<_, _>>()?
    };
    if let Some(k) = kernels.iter().find(|k| !k.is_supported()) {
        return Err(format!("kernel {k} is not supported by this CPU").into());
    }
    let engines = args
        .engines
        .iter()
        .map(|e| EngineSpec::parse(e).map_err(|m| format!("{m} (available: {BENCH_ENGINES})")))
        .collect::<Result<Vec<_>, _>>()?;
    let traces = args
        .trace
        .iter()
        .map(|t| TraceSpec::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    if args.batch.contains(&0) {
        return Err("batch size 0 makes no sense".into());
    }
    let (table, name): (Table<String>, String) = match &args.table {
        Some(path) => {
            let l = load(&TableArgs {
                table: path.clone(),
                format: args.format.clone(),
                mask_host_bits: args.mask_host_bits,
                ..Default::default()
            })?;
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            (l.table, name)
        }
        None => (
            from_routes(
                synthetic_v4(args.v4_prefixes, 4),
                synthetic_v6(args.v6_prefixes, 6),
            ),
            "synthetic".to_string(),
        ),
    };
    let machine = machine(args.pin, &kernels);
    println!(
        "# cpu: {} | kernels: {} | pinned: {} | governor: {}",
        machine.cpu,
        machine.kernels.join(","),
        args.pin.map_or("no".into(), |c| format!("cpu {c}")),
        machine.governor.as_deref().unwrap_or("n/a")
    );
    println!(
        "# table: {name} ({} IPv4, {} IPv6 prefixes) | trace: {} addresses | runs: {} (+1 warm-up)",
        table.v4.len(),
        table.v6.len(),
        args.trace_len,
        args.runs
    );
    println!(
        "{:<17} {:<7} {:>2} {:<8} {:>5} {:>8} {:>8} {:>8} {:>9} {:>10} {:>8} {:>20}  inodes/leaves/trie_bytes",
        "engine",
        "kernel",
        "v",
        "trace",
        "batch",
        "min",
        "median",
        "max",
        "build_ms",
        "bytes",
        "B/pfx",
        "checksum"
    );
    let mut rows = Vec::new();
    let pop_kernels: Vec<poptrie::Kernel> = std::iter::once(poptrie::Kernel::detect())
        .chain(
            kernels
                .contains(&Kernel::Scalar)
                .then_some(poptrie::Kernel::Scalar),
        )
        .fold(Vec::new(), |mut v, k| {
            if !v.contains(&k) {
                v.push(k);
            }
            v
        });
    let ctx = Ctx {
        args: &args,
        kernels: &kernels,
        pop_kernels: &pop_kernels,
        engines: &engines,
        traces: &traces,
        name: &name,
    };
    ctx.family(&table.v4, &mut rows)?;
    ctx.family(&table.v6, &mut rows)?;
    if let Some(path) = &args.json {
        let report = Report {
            machine,
            results: rows,
        };
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(Outcome::Ok)
}

struct Ctx<'a> {
    args: &'a Args,
    kernels: &'a [Kernel],
    pop_kernels: &'a [poptrie::Kernel],
    engines: &'a [EngineSpec],
    traces: &'a [TraceSpec],
    name: &'a str,
}

/// A trace as named on the command line.
#[derive(Clone, Debug)]
enum TraceSpec {
    Uniform,
    Matched,
    /// Uniform inside one prefix (of one family).
    UniformIn(AnyPrefix),
    /// The addresses of a trace file, by the name given.
    File(String, Trace),
}

impl TraceSpec {
    fn parse(t: &str) -> Result<TraceSpec, String> {
        match t {
            "uniform" => Ok(TraceSpec::Uniform),
            "matched" => Ok(TraceSpec::Matched),
            _ => match t.strip_prefix("uniform-in:") {
                Some(p) => AnyPrefix::parse(p, HostBits::Reject)
                    .map(TraceSpec::UniformIn)
                    .map_err(|e| format!("trace {t:?}: {e}")),
                None if Path::new(t).is_file() => read_trace(Path::new(t))
                    .map(|trace| TraceSpec::File(t.to_string(), trace))
                    .map_err(|e| e.to_string()),
                None => Err(format!(
                    "unknown trace {t:?} (available: uniform, matched, uniform-in:PREFIX, \
                     or a trace file)"
                )),
            },
        }
    }

    /// The trace for family `A`, or `None` when it belongs to the other one.
    fn generate<A: Family>(&self, prefixes: &[Prefix<A>], n: usize, seed: u64) -> Option<Vec<A>> {
        match self {
            TraceSpec::Uniform => Some(uniform_trace(n, seed)),
            TraceSpec::Matched => Some(matched_trace(prefixes, n, seed + 1)),
            TraceSpec::UniformIn(p) => {
                let (addr, len) = match *p {
                    AnyPrefix::V4(p) => (p.addr() as u128, p.len()),
                    AnyPrefix::V6(p) => (p.addr(), p.len()),
                };
                if p.family() != A::FAMILY {
                    return None;
                }
                let p = Prefix::new(A::from_u128_truncate(addr), len).ok()?;
                Some(matched_trace(&[p], n, seed + 2))
            }
            TraceSpec::File(_, t) => {
                let addrs: Vec<A> = if A::FAMILY == 4 {
                    t.v4.iter()
                        .map(|&a| A::from_u128_truncate(a.into()))
                        .collect()
                } else {
                    t.v6.iter().map(|&a| A::from_u128_truncate(a)).collect()
                };
                // A file without addresses of this family: nothing to run.
                (!addrs.is_empty()).then_some(addrs)
            }
        }
    }

    fn name(&self) -> String {
        match self {
            TraceSpec::Uniform => "uniform".into(),
            TraceSpec::Matched => "matched".into(),
            TraceSpec::UniformIn(p) => format!("in:{p}"),
            TraceSpec::File(name, _) => name.clone(),
        }
    }
}

impl Ctx<'_> {
    fn family<A: Family>(
        &self,
        table: &RouteTable<A, String>,
        rows: &mut Vec<Row>,
    ) -> Result<(), Box<dyn std::error::Error>> {
        if table.is_empty() {
            return Ok(());
        }
        let prefixes: Vec<_> = table.iter().map(|(p, _)| p).collect();
        for trace_spec in self.traces {
            let Some(trace) = trace_spec.generate(&prefixes, self.args.trace_len, self.args.seed)
            else {
                continue;
            };
            let trace_name = &trace_spec.name();
            let run = Run {
                table,
                trace: &trace,
                trace_name,
            };
            let mut reference: Option<u64> = None;
            for &engine in self.engines {
                match engine {
                    EngineSpec::Radix => {
                        let mut out = vec![0u32; trace.len()];
                        let pass = |out: &mut [u32]| {
                            for (o, &a) in out.iter_mut().zip(&trace) {
                                *o = table.lookup_index(black_box(a)).map_or(NO_ROUTE, |x| x.1);
                            }
                        };
                        let mlps = time_passes(self.args.runs, trace.len(), || pass(&mut out));
                        let checksum = checksum(&out, |p| p);
                        let row = self.row(
                            "radix",
                            "-",
                            A::FAMILY,
                            table.len(),
                            trace_name,
                            1,
                            mlps,
                            0.0,
                            table.footprint_bytes(),
                            checksum,
                        );
                        self.emit(row, &mut reference, rows)?;
                    }
                    EngineSpec::Planb | EngineSpec::PlanbRoutes => {
                        for &kernel in self.kernels {
                            let opts = PlanbOptions {
                                kernel: Some(kernel),
                                direct_bits: self.args.direct_bits,
                                ..Default::default()
                            };
                            let label = engine.label(0);
                            let aggregate = engine == EngineSpec::Planb;
                            let v = Variant::<A, PlanB<A>>::build(table, &opts, aggregate)?;
                            let who = (label.as_str(), kernel.name());
                            self.measure(&run, who, &v, None, &mut reference, rows)?;
                        }
                    }
                    EngineSpec::Poptrie {
                        s,
                        leafvec,
                        aggregate,
                    } => {
                        for &kernel in self.pop_kernels {
                            let opts = PoptrieOptions {
                                direct_bits: s,
                                leafvec,
                                kernel: Some(kernel),
                            };
                            let label = engine.label(PoptrieOptions::DEFAULT_DIRECT_BITS);
                            let v = Variant::<A, Poptrie<A>>::build(table, &opts, aggregate)?;
                            let e = v.engine();
                            let counts = (e.internal_nodes(), e.leaves(), e.footprint_bytes());
                            let who = (label.as_str(), kernel.name());
                            self.measure(&run, who, &v, Some(counts), &mut reference, rows)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Time one built engine (`who`: engine label and kernel name) at
    /// every batch size and emit its rows.
    fn measure<A: Family, E: Engine<A>>(
        &self,
        run: &Run<A>,
        who: (&str, &str),
        v: &Variant<A, E>,
        counts: Option<(usize, usize, usize)>,
        reference: &mut Option<u64>,
        rows: &mut Vec<Row>,
    ) -> Result<(), Box<dyn std::error::Error>> {
        for &m in &self.args.batch {
            let mut out = vec![0u32; run.trace.len()];
            let mlps = time_passes(self.args.runs, run.trace.len(), || {
                batch(v.engine(), run.trace, &mut out, m)
            });
            let checksum = checksum(&out, |p| v.resolve(p));
            let mut row = self.row(
                who.0,
                who.1,
                A::FAMILY,
                run.table.len(),
                run.trace_name,
                m,
                mlps,
                v.build_ms,
                v.footprint_bytes(),
                checksum,
            );
            row.inodes = counts.map(|c| c.0);
            row.leaves = counts.map(|c| c.1);
            row.engine_bytes = counts.map(|c| c.2);
            self.emit(row, reference, rows)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn row(
        &self,
        engine: &str,
        kernel: &str,
        family: u8,
        prefixes: usize,
        trace: &str,
        batch: usize,
        mlps: Vec<f64>,
        build_ms: f64,
        footprint: usize,
        checksum: u64,
    ) -> Row {
        let (min, median, max) = stats(mlps);
        Row {
            engine: engine.to_string(),
            kernel: kernel.to_string(),
            family,
            table: self.name.to_string(),
            prefixes,
            trace: trace.to_string(),
            batch,
            threads: 1,
            mlps_min: min,
            mlps_median: median,
            mlps_max: max,
            build_ms,
            footprint_bytes: footprint,
            bytes_per_prefix: footprint as f64 / prefixes.max(1) as f64,
            checksum,
            inodes: None,
            leaves: None,
            engine_bytes: None,
        }
    }

    fn emit(
        &self,
        row: Row,
        reference: &mut Option<u64>,
        rows: &mut Vec<Row>,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let counts = match (row.inodes, row.leaves, row.engine_bytes) {
            (Some(n), Some(l), Some(b)) => format!("  {n}/{l}/{b}"),
            _ => String::new(),
        };
        println!(
            "{:<17} {:<7} {:>2} {:<8} {:>5} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>10} {:>8.1} {:>20}{counts}",
            row.engine,
            row.kernel,
            row.family,
            row.trace,
            row.batch,
            row.mlps_min,
            row.mlps_median,
            row.mlps_max,
            row.build_ms,
            row.footprint_bytes,
            row.bytes_per_prefix,
            row.checksum
        );
        let mismatch = matches!(reference, Some(r) if *r != row.checksum);
        reference.get_or_insert(row.checksum);
        rows.push(row.clone());
        if mismatch {
            return Err(format!(
                "checksum mismatch: {} ({}) disagrees with the first engine",
                row.engine, row.kernel
            )
            .into());
        }
        Ok(())
    }
}

/// One family's table and trace, as every engine is timed on them.
struct Run<'a, A: Family> {
    table: &'a RouteTable<A, String>,
    trace: &'a [A],
    trace_name: &'a str,
}

/// An engine as benchmarked: value payloads (aggregated intervals), or
/// route payloads with the route -> value-index map used to resolve them
/// for the checksum; with its build time (interval compile + engine build).
struct Variant<A: Family, E: Engine<A>> {
    kind: Payloads<A, E>,
    build_ms: f64,
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
    ) -> Result<Self, E::Error> {
        let t0 = Instant::now();
        let kind = if aggregate {
            Payloads::Values(E::build(&compile(table.iter_indices()), opts)?)
        } else {
            let vi = table.iter_indices().map(|(_, v)| v).collect();
            Payloads::Routes(Compiled::with_engine(table, opts)?, vi)
        };
        Ok(Variant {
            kind,
            build_ms: t0.elapsed().as_secs_f64() * 1e3,
        })
    }

    fn engine(&self) -> &E {
        match &self.kind {
            Payloads::Values(e) => e,
            Payloads::Routes(c, _) => c.engine(),
        }
    }

    fn resolve(&self, p: u32) -> u32 {
        match &self.kind {
            Payloads::Routes(_, vi) if p != NO_ROUTE => vi[p as usize],
            _ => p,
        }
    }

    fn footprint_bytes(&self) -> usize {
        match &self.kind {
            Payloads::Values(e) => e.footprint_bytes(),
            Payloads::Routes(c, _) => c.footprint_bytes(),
        }
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

/// One discarded warm-up, then `runs` timed passes; MLPS per pass.
fn time_passes(runs: usize, n: usize, mut pass: impl FnMut()) -> Vec<f64> {
    pass();
    (0..runs.max(1))
        .map(|_| {
            let t0 = Instant::now();
            pass();
            n as f64 / t0.elapsed().as_secs_f64() / 1e6
        })
        .collect()
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let median = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    (v[0], median, v[v.len() - 1])
}

/// Order-sensitive checksum over resolved value indices.
fn checksum(out: &[u32], resolve: impl Fn(u32) -> u32) -> u64 {
    out.iter().fold(0u64, |h, &p| {
        h.wrapping_mul(0x100_0000_01b3)
            .wrapping_add(resolve(p) as u64 + 1)
    })
}

fn machine(pin: Option<usize>, kernels: &[Kernel]) -> Machine {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let governor = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        .ok()
        .map(|s| s.trim().to_string());
    Machine {
        cpu,
        kernels: kernels.iter().map(|k| k.name().to_string()).collect(),
        pinned_cpu: pin,
        governor,
        os: std::env::consts::OS.to_string(),
    }
}

#[cfg(target_os = "linux")]
fn pin_to(cpu: usize) -> Result<(), Box<dyn std::error::Error>> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set, CPU_SET
    // writes inside it (bounds checked below), and sched_setaffinity only
    // reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(format!("--pin {cpu}: no such CPU").into());
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("--pin {cpu}: {}", std::io::Error::last_os_error()).into());
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn pin_to(_cpu: usize) -> Result<(), Box<dyn std::error::Error>> {
    Err("--pin is only supported on Linux (use your OS's affinity tool)".into())
}
