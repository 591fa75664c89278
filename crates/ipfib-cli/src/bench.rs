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
//! - `radix`: the route table (path-compressed trie), single lookups.

use crate::load::{from_routes, load, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::compiled::Compiled;
use ipfib::engine::planb::kernel::Kernel;
use ipfib::engine::planb::{Family, PlanB, PlanbOptions};
use ipfib::gen::{matched_trace, synthetic_v4, synthetic_v6, uniform_trace};
use ipfib::intervals::{compile, NO_ROUTE};
use ipfib::route_table::RouteTable;
use ipfib::table::Table;
use serde::Serialize;
use std::hint::black_box;
use std::path::PathBuf;
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
    /// Traces: uniform (random addresses), matched (inside random prefixes of the table).
    #[arg(long, default_value = "uniform,matched", value_delimiter = ',')]
    trace: Vec<String>,
    /// Addresses per trace.
    #[arg(long, default_value_t = 2_000_000)]
    trace_len: usize,
    /// Engines: planb, planb-routes, radix.
    #[arg(
        long,
        default_value = "planb,planb-routes,radix",
        value_delimiter = ','
    )]
    engines: Vec<String>,
    /// PlanB kernels, or `all` for every kernel this CPU supports
    /// (default: the best one).
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
    /// Batch sizes (1 = single lookups).
    #[arg(long, default_value = "1,16,32", value_delimiter = ',')]
    batch: Vec<usize>,
    /// PlanB direct-pointing bits (default: chosen from the table size).
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
    for e in &args.engines {
        if !matches!(e.as_str(), "planb" | "planb-routes" | "radix") {
            return Err(
                format!("unknown engine {e:?} (available: planb, planb-routes, radix)").into(),
            );
        }
    }
    for t in &args.trace {
        if !matches!(t.as_str(), "uniform" | "matched") {
            return Err(format!("unknown trace {t:?} (available: uniform, matched)").into());
        }
    }
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
        "{:<13} {:<7} {:>2} {:<8} {:>5} {:>8} {:>8} {:>8} {:>9} {:>10} {:>8} {:>20}",
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
    let ctx = Ctx {
        args: &args,
        kernels: &kernels,
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
    name: &'a str,
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
        for trace_name in &self.args.trace {
            let trace: Vec<A> = match trace_name.as_str() {
                "matched" => matched_trace(&prefixes, self.args.trace_len, self.args.seed + 1),
                _ => uniform_trace(self.args.trace_len, self.args.seed),
            };
            let mut reference: Option<u64> = None;
            for engine in &self.args.engines {
                match engine.as_str() {
                    "radix" => {
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
                    "planb" | "planb-routes" => {
                        for &kernel in self.kernels {
                            let opts = PlanbOptions {
                                kernel: Some(kernel),
                                direct_bits: self.args.direct_bits,
                                ..Default::default()
                            };
                            let t0 = Instant::now();
                            let variant = if engine == "planb" {
                                Variant::Values(PlanB::build(
                                    &compile(table.iter_indices()),
                                    &opts,
                                )?)
                            } else {
                                let vi = table.iter_indices().map(|(_, v)| v).collect();
                                Variant::Routes(Compiled::build(table, &opts)?, vi)
                            };
                            let build_ms = t0.elapsed().as_secs_f64() * 1e3;
                            for &m in &self.args.batch {
                                let mut out = vec![0u32; trace.len()];
                                let mlps = time_passes(self.args.runs, trace.len(), || {
                                    batch(variant.engine(), &trace, &mut out, m)
                                });
                                let checksum = checksum(&out, |p| variant.resolve(p));
                                let footprint = variant.footprint_bytes();
                                let row = self.row(
                                    engine,
                                    kernel.name(),
                                    A::FAMILY,
                                    table.len(),
                                    trace_name,
                                    m,
                                    mlps,
                                    build_ms,
                                    footprint,
                                    checksum,
                                );
                                self.emit(row, &mut reference, rows)?;
                            }
                        }
                    }
                    _ => unreachable!("engine names are checked in run()"),
                }
            }
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
        }
    }

    fn emit(
        &self,
        row: Row,
        reference: &mut Option<u64>,
        rows: &mut Vec<Row>,
    ) -> Result<(), Box<dyn std::error::Error>> {
        println!(
            "{:<13} {:<7} {:>2} {:<8} {:>5} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>10} {:>8.1} {:>20}",
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

/// A PlanB engine as benchmarked: value payloads, or route payloads with
/// the route -> value-index map used to resolve them for the checksum.
enum Variant<A: Family> {
    Values(PlanB<A>),
    Routes(Compiled<A, String>, Vec<u32>),
}

impl<A: Family> Variant<A> {
    fn engine(&self) -> &PlanB<A> {
        match self {
            Variant::Values(e) => e,
            Variant::Routes(c, _) => c.engine(),
        }
    }

    fn resolve(&self, p: u32) -> u32 {
        match self {
            Variant::Routes(_, vi) if p != NO_ROUTE => vi[p as usize],
            _ => p,
        }
    }

    fn footprint_bytes(&self) -> usize {
        match self {
            Variant::Values(e) => e.footprint_bytes(),
            Variant::Routes(c, _) => c.footprint_bytes(),
        }
    }
}

fn batch<A: Family>(e: &PlanB<A>, trace: &[A], out: &mut [u32], m: usize) {
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
