//! `ipfib bench`: engines side by side on one table and trace, in one run.
//!
//! Method: the traces are generated (or read) once per table; each engine
//! variant is built once (timed, with the process's resident-memory growth
//! across the build); per trace, batch size and thread count, one discarded
//! warm-up pass and `--runs` timed passes over the whole trace; MLPS min /
//! q1 / median / q3 / max and IQR. Outputs are resolved to value indices
//! after timing and summed into a checksum that must agree across engines
//! (a wrong engine is reported, and the run fails).
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
//!   (the paper's Table 2 rows); `poptrie32[:S]` (was `poptrie5`): 32-ary
//!   nodes;
//!   `poptrie-flat[:S]`: 32-ary nodes held inline with the leaves. Poptrie
//!   rows also report internal nodes and leaves (flat: entries, as
//!   leaves).
//!
//! Where things are: `bench/trace.rs` (the traces), `runner.rs` (build and
//! time one table), `passes.rs` (timed passes, threads), `latency.rs` and
//! `tsc.rs` (`--latency`), `stats.rs` (quartiles), `machine.rs` (header,
//! pinning, RSS), `report.rs` (rows, JSON, text tables), `summary.rs` (the
//! closing per-cell summary), `preset.rs` (`--preset`), `plot.rs`
//! and `plot/draw.rs` (`--plot`).

mod latency;
pub(crate) mod machine;
mod passes;
mod plot;
mod preset;
mod report;
mod rows;
mod runner;
pub(crate) mod stats;
mod summary;
mod trace;
mod tsc;

use crate::load::{from_routes, load, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::engine::kernel::Kernel;
use ipfib::engine::planb;
use ipfib::engine::registry::{self, EngineSpec};
use ipfib::gen::{synthetic_v4, synthetic_v6};
use ipfib::table::Table;
use machine::{pin_to, Machine};
use report::{print_header, print_latency, print_row, Report};
use runner::Plan;
use std::path::PathBuf;
use trace::TraceSpec;

type Error = Box<dyn std::error::Error>;

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
    /// Ranges --table: the 1-based column holding the value (default 3).
    #[arg(long, value_name = "N")]
    value_column: Option<usize>,
    /// Synthetic IPv4 table sizes (when no --table; 0 skips; a list is a
    /// sweep: one table per size, e.g. 100000,300000,1000000).
    #[arg(long, default_value = "606000", value_delimiter = ',')]
    v4_prefixes: Vec<usize>,
    /// Synthetic IPv6 table sizes (when no --table; 0 skips; a list is a
    /// sweep, e.g. 10000,100000,1000000).
    #[arg(long, default_value = "259000", value_delimiter = ',')]
    v6_prefixes: Vec<usize>,
    /// Traces: uniform (random addresses), matched (inside random prefixes
    /// of the table), sequential (consecutive addresses from a random
    /// start: the Poptrie paper's sequential pattern), repeat (each random
    /// address 16 times in a row: its repeated pattern; repeat:K for K
    /// times), uniform-in:PREFIX (random addresses inside PREFIX, e.g.
    /// uniform-in:2000::/8; only that prefix's family is run), or a trace
    /// file (binary `IPFIBTR1` or one address per line;
    /// `bench/peers/make_inputs.py` writes them for ipfib and its peers).
    #[arg(long, default_value = "uniform,matched", value_delimiter = ',')]
    trace: Vec<String>,
    /// Addresses per generated trace.
    #[arg(long, default_value_t = 2_000_000)]
    trace_len: usize,
    // The help text names optional parts in brackets (`poptrie[:S]`),
    // which rustdoc would read as links.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Engines: auto, planb, poptrie[:S], poptrie32[:S], poptrie-flat[:S],
    /// radix, and the bench-only planb-routes, poptrie-routes[:S],
    /// poptrie-basic[:S] (S: direct-pointing bits, 0-24; `ipfib engines`
    /// says what each is).
    #[arg(
        long,
        default_value = "auto,planb,planb-routes,poptrie,poptrie-flat,radix",
        value_delimiter = ','
    )]
    engines: Vec<String>,
    /// Kernels (scalar, popcnt, avx2, avx512, neon), or `all`: each engine
    /// runs those listed that it has and this CPU supports (its best when
    /// none), every one it supports here with `all`; default: its best.
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
    /// Batch sizes (1 = single lookups; 8, 16, 32, 64 are compiled, other
    /// sizes run the nearest one below).
    #[arg(long, default_value = "1,16,32", value_delimiter = ',')]
    batch: Vec<usize>,
    /// Thread counts: each thread pinned to its own CPU (from --pin on,
    /// round the online CPUs; without --pin, the CPUs this process may run
    /// on) answers a contiguous share of the trace; MLPS = whole trace /
    /// the slowest thread's time per pass.
    #[arg(long, default_value = "1", value_delimiter = ',')]
    threads: Vec<usize>,
    /// PlanB direct-pointing bits (default: chosen from the table size;
    /// Poptrie takes its own from `poptrie:S`).
    #[arg(long)]
    direct_bits: Option<u8>,
    /// Timed passes (after one discarded warm-up).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Pin the benchmark thread to this CPU (and threads > 1 from it on).
    #[arg(long)]
    pin: Option<usize>,
    /// Trace seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also time single lookups one by one with the time-stamp counter on
    /// the first N addresses of each trace (default 100000; x86-64 only):
    /// mean / p50 / p75 / p95 / p99 ticks per engine.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "100000")]
    latency: Option<usize>,
    /// Output files, boxed: they keep `Args` small beside the other
    /// commands' arguments.
    #[command(flatten)]
    out: Box<Output>,
    #[command(flatten)]
    preset: Box<PresetArgs>,
}

#[derive(clap::Args)]
struct PresetArgs {
    /// Run a named set of tables, engines and batch sizes instead of
    /// choosing them: `standing` = BENCHMARKS.md's standing (the five real
    /// tables of the data directory, uniform and matched traces, its
    /// engines, batch 1,16,32). --runs, --trace-len, --pin, --kernels,
    /// --json and --plot apply as usual.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["table", "engines", "batch", "v4_prefixes", "v6_prefixes", "trace"])]
    preset: Option<String>,
    /// Where --preset finds the real tables (default: $IPFIB_DATA, else
    /// ../shared/data).
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
}

#[derive(clap::Args)]
struct Output {
    /// Write results as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write PNG charts into this directory (throughput per engine and
    /// trace; vs batch size, table size and threads when those vary;
    /// latency CDF with --latency).
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Which charts --plot draws (default: every one the data supports):
    /// throughput, batch, fib-size, threads, latency-cdf.
    #[arg(long, value_delimiter = ',')]
    charts: Vec<String>,
    /// Chart size in pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "900x500")]
    plot_size: String,
    /// Measure nothing: read these JSON reports (of earlier --json runs),
    /// print their tables and draw their charts (with --plot).
    #[arg(long, value_name = "FILE", value_delimiter = ',')]
    from_json: Vec<PathBuf>,
}

pub fn run(args: Args) -> CmdResult {
    let out = &args.out;
    let plot_size = parse_size(&out.plot_size)?;
    if let Some(c) = out
        .charts
        .iter()
        .find(|c| !plot::CHARTS.contains(&c.as_str()))
    {
        return Err(format!(
            "--charts: unknown chart {c:?} (available: {})",
            plot::CHARTS.join(", ")
        )
        .into());
    }
    if !out.from_json.is_empty() {
        return replot(out, plot_size);
    }
    if let Some(cpu) = args.pin {
        pin_to(cpu).map_err(|e| format!("--pin {e}"))?;
    }
    let all_kernels = args.kernels.iter().any(|k| k == "all");
    let kernels: Vec<Kernel> = args
        .kernels
        .iter()
        .filter(|k| *k != "all")
        .map(|k| k.parse())
        .collect::<Result<_, _>>()?;
    if let Some(k) = kernels.iter().find(|&&k| !registry::kernel_runs_here(k)) {
        return Err(format!("kernel {k} is not supported by this CPU (by any engine)").into());
    }
    let preset = args
        .preset
        .preset
        .as_deref()
        .map(|name| preset::Preset::resolve(name, args.preset.data.as_deref()))
        .transpose()?;
    let (engine_names, batches, trace_names) = match &preset {
        Some(p) => (p.engines(), p.batches(), p.traces()),
        None => (args.engines.clone(), args.batch.clone(), args.trace.clone()),
    };
    let engines = engine_names
        .iter()
        .map(|e| e.parse::<EngineSpec>())
        .collect::<Result<Vec<_>, _>>()?;
    let traces = trace_names
        .iter()
        .map(|t| TraceSpec::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    if batches.contains(&0) {
        return Err("batch size 0 makes no sense".into());
    }
    if args.threads.contains(&0) {
        return Err("--threads 0 makes no sense (1 or more)".into());
    }
    if args.latency == Some(0) {
        return Err("--latency 0: the sample needs at least one address".into());
    }
    let latency = args.latency.map(runner::latency_setup).transpose()?;
    let (table, name) = load_table(&args)?;
    // The header names the kernels PlanB runs (Poptrie's are in each row).
    let planb_kernels = match all_kernels {
        true => planb::KERNELS.supported(),
        false => kernels
            .iter()
            .copied()
            .filter(|&k| planb::KERNELS.is_supported(k))
            .collect(),
    };
    let mut machine = Machine::detect(
        args.pin,
        match planb_kernels.is_empty() {
            true => vec![planb::KERNELS.detect().name().to_string()],
            false => planb_kernels.iter().map(|k| k.name().to_string()).collect(),
        },
    );
    machine.tsc_hz = latency.and_then(|l| l.2);
    println!("{}", machine.header());
    let plan = Plan {
        kernels: (!all_kernels).then_some(&kernels[..]),
        engines: &engines,
        traces: &traces,
        batches: &batches,
        threads: &args.threads,
        runs: args.runs,
        trace_len: args.trace_len,
        seed: args.seed,
        direct_bits: args.direct_bits,
        pin: args.pin,
        latency,
    };
    let mut report = Report {
        machine,
        ..Default::default()
    };
    // Generated traces have `--trace-len` addresses; trace files are used
    // whole, as read: say which applies.
    let files = traces
        .iter()
        .filter(|t| matches!(t, TraceSpec::File(..)))
        .count();
    let trace_sizes = match (files, traces.len() - files) {
        (0, _) => format!("{} addresses", args.trace_len),
        (_, 0) => "trace files as read".to_string(),
        _ => format!("{} addresses (trace files as read)", args.trace_len),
    };
    let describe = |v4: usize, v6: usize, name: &str| {
        println!(
            "# table: {name} ({v4} IPv4, {v6} IPv6 prefixes) | trace: {trace_sizes} | runs: {} \
             (+1 warm-up)",
            args.runs
        );
        print_header();
    };
    // One pass per table: the file's two families, or each synthetic size.
    let outcome = (|| -> Result<(), Error> {
        let (rows, lat) = (&mut report.results, &mut report.latency);
        if let Some(p) = &preset {
            for path in &p.files {
                let (table, name) = load_file(path, &args)?;
                describe(table.v4.len(), table.v6.len(), &name);
                plan.table(&table.v4, &name, rows, lat)?;
                plan.table(&table.v6, &name, rows, lat)?;
            }
            return Ok(());
        }
        if args.table.is_some() {
            describe(table.v4.len(), table.v6.len(), &name);
            plan.table(&table.v4, &name, rows, lat)?;
            plan.table(&table.v6, &name, rows, lat)?;
            return Ok(());
        }
        for &n in args.v4_prefixes.iter().filter(|&&n| n > 0) {
            let t = from_routes(synthetic_v4(n, 4), Vec::new());
            describe(t.v4.len(), 0, &name);
            plan.table(&t.v4, &name, rows, lat)?;
        }
        for &n in args.v6_prefixes.iter().filter(|&&n| n > 0) {
            let t = from_routes(Vec::new(), synthetic_v6(n, 6));
            describe(0, t.v6.len(), &name);
            plan.table(&t.v6, &name, rows, lat)?;
        }
        Ok(())
    })();
    print_latency(&report.latency, report.machine.tsc_hz);
    report.summary = summary::cells(&report.results);
    summary::print(&report.summary);
    // Write what was measured even when a checksum disagreed: the rows say
    // which engine did.
    if let Some(path) = &out.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    outcome?;
    charts(out, &report, plot_size)
}

/// `--table FILE` loaded, or an empty table named "synthetic".
fn load_table(args: &Args) -> Result<(Table<String>, String), Error> {
    match &args.table {
        Some(path) => load_file(path, args),
        None => Ok((Table::new(), "synthetic".to_string())),
    }
}

/// A table file, named by its file name.
fn load_file(path: &std::path::Path, args: &Args) -> Result<(Table<String>, String), Error> {
    let l = load(&TableArgs {
        table: path.to_path_buf(),
        format: args.format.clone(),
        mask_host_bits: args.mask_host_bits,
        value_column: args.value_column,
        ..Default::default()
    })?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok((l.table, name))
}

/// `--from-json`: the saved reports' tables, and their charts.
fn replot(out: &Output, size: (u32, u32)) -> CmdResult {
    let mut all = Report::default();
    for (i, path) in out.from_json.iter().enumerate() {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let r: Report = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not an ipfib bench report: {e}", path.display()))?;
        if i == 0 {
            all.machine = r.machine;
            println!("{}", all.machine.header());
        }
        println!("# from {}", path.display());
        print_header();
        r.results.iter().for_each(print_row);
        print_latency(&r.latency, all.machine.tsc_hz);
        all.results.extend(r.results);
        all.latency.extend(r.latency);
    }
    summary::print(&summary::cells(&all.results));
    charts(out, &all, size)
}

/// `--plot DIR`: the report's charts, and their file names on stdout.
fn charts(out: &Output, report: &Report, size: (u32, u32)) -> CmdResult {
    if let Some(dir) = &out.plot {
        let files = plot::write_all(dir, &report.results, &report.latency, &out.charts, size)?;
        let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        println!("# plots: {}", names.join(" "));
    }
    Ok(Outcome::Ok)
}

/// `WIDTHxHEIGHT`, each 100 to 8000 pixels.
fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let bad = || {
        format!("--plot-size {text:?}: expected WIDTHxHEIGHT in pixels (100-8000), e.g. 900x500")
    };
    let (w, h) = text.split_once('x').ok_or_else(bad)?;
    let px = |s: &str| s.parse::<u32>().ok().filter(|v| (100..=8000).contains(v));
    Ok((px(w).ok_or_else(bad)?, px(h).ok_or_else(bad)?))
}
