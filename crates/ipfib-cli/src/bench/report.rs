//! What a run reports: one [`Row`] per engine x trace x batch x threads
//! (the JSON `results`, ARCHITECTURE §4), latency rows (`latency`), and the
//! text tables printed from them.

use super::latency::LatencyRow;
use super::machine::Machine;
use super::stats::Summary;
use serde::{Deserialize, Serialize};

/// Which engine on which table and trace: what a row (throughput or
/// latency) is about. Flattened: its fields are the row's own in JSON.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Subject {
    pub engine: String,
    pub kernel: String,
    pub family: u8,
    pub table: String,
    pub prefixes: usize,
    pub trace: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Row {
    #[serde(flatten)]
    pub id: Subject,
    pub batch: usize,
    pub threads: usize,
    pub mlps_min: f64,
    pub mlps_median: f64,
    pub mlps_max: f64,
    /// Quartiles of MLPS over the timed passes and their distance.
    #[serde(default)]
    pub mlps_q1: f64,
    #[serde(default)]
    pub mlps_q3: f64,
    #[serde(default)]
    pub mlps_iqr: f64,
    pub build_ms: f64,
    pub footprint_bytes: usize,
    pub bytes_per_prefix: f64,
    /// Growth of the process's resident memory across the build (from
    /// /proc/self/statm, the heap trimmed first: the engine, plus what the
    /// allocator kept of the build's temporaries; null for radix, which is
    /// not built, and where unreadable).
    #[serde(default)]
    pub rss_delta_bytes: Option<i64>,
    /// CPUs the worker threads were pinned to (threads > 1); with one
    /// thread, the `--pin` CPU or nothing.
    #[serde(default)]
    pub cpus: Vec<usize>,
    pub checksum: u64,
    /// Poptrie: internal nodes, leaves and bytes of the trie alone
    /// (direct table, nodes, leaves; `footprint_bytes` adds the route list
    /// of route-payload variants).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub inodes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub leaves: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub engine_bytes: Option<usize>,
    /// `auto`: the engine it chose (`single/batch` when they differ) and
    /// why.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub chosen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub chosen_reason: Option<String>,
}

impl Row {
    pub fn set_mlps(&mut self, mlps: Vec<f64>) {
        let s = Summary::of(mlps);
        self.mlps_min = s.min;
        self.mlps_q1 = s.q1;
        self.mlps_median = s.median;
        self.mlps_q3 = s.q3;
        self.mlps_max = s.max;
        self.mlps_iqr = s.iqr();
    }
}

#[derive(Serialize, Deserialize, Default)]
pub struct Report {
    pub machine: Machine,
    pub results: Vec<Row>,
    /// With `--latency`: per engine and trace.
    #[serde(default)]
    pub latency: Vec<LatencyRow>,
    /// Per table, trace, batch and threads: the fastest engine, its ratio
    /// to radix, every engine's ratio to it (`summary.rs`).
    #[serde(default)]
    pub summary: Vec<super::summary::Cell>,
}

pub fn print_header() {
    println!(
        "{:<17} {:<7} {:>2} {:<10} {:>5} {:>3} {:>24} {:>6} {:>8} {:>10} {:>6} {:>8} {:>20}  inodes/leaves/trie_bytes",
        "engine",
        "kernel",
        "v",
        "trace",
        "batch",
        "thr",
        "MLPS median [min-max]",
        "IQR",
        "build_ms",
        "bytes",
        "B/pfx",
        "rss_MiB",
        "checksum"
    );
}

pub fn print_row(r: &Row) {
    let counts = match (r.inodes, r.leaves, r.engine_bytes) {
        (Some(n), Some(l), Some(b)) => format!("  {n}/{l}/{b}"),
        // `auto`'s choice: one engine, or `SINGLE/BATCH` when a different
        // engine answers batches (the JSON keeps that compact label).
        _ => match r.chosen.as_deref().map(|c| (c, c.split_once('/'))) {
            Some((_, Some((single, batch)))) => {
                format!("  auto: {single} for single lookups, {batch} for batches")
            }
            Some((c, None)) => format!("  auto: {c}"),
            None => String::new(),
        },
    };
    let range = format!("{:.1} [{:.1}-{:.1}]", r.mlps_median, r.mlps_min, r.mlps_max);
    let rss = r
        .rss_delta_bytes
        .map_or("-".into(), |b| format!("{:.1}", b as f64 / 1048576.0));
    println!(
        "{:<17} {:<7} {:>2} {:<10} {:>5} {:>3} {:>24} {:>6.1} {:>8.1} {:>10} {:>6.1} {:>8} {:>20}{counts}",
        r.id.engine,
        r.id.kernel,
        r.id.family,
        r.id.trace,
        r.batch,
        r.threads,
        range,
        r.mlps_iqr,
        r.build_ms,
        r.footprint_bytes,
        r.bytes_per_prefix,
        rss,
        r.checksum
    );
}

pub fn print_latency(rows: &[LatencyRow], tsc_hz: Option<f64>) {
    if rows.is_empty() {
        return;
    }
    let rate = tsc_hz.map_or("TSC rate n/a".into(), |hz| {
        format!("1 tick = {:.3} ns", 1e9 / hz)
    });
    println!(
        "# latency: single lookups, time-stamp counter ticks per lookup ({rate}; \
         each figure includes the empty measurement's overhead)"
    );
    println!(
        "{:<17} {:<7} {:>2} {:<10} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8}",
        "engine",
        "kernel",
        "v",
        "trace",
        "samples",
        "mean",
        "p50",
        "p75",
        "p95",
        "p99",
        "overhead",
        "mean_ns"
    );
    for r in rows {
        println!(
            "{:<17} {:<7} {:>2} {:<10} {:>8} {:>8.1} {:>7.0} {:>7.0} {:>7.0} {:>7.0} {:>8.0} {:>8}",
            r.id.engine,
            r.id.kernel,
            r.id.family,
            r.id.trace,
            r.samples,
            r.ticks_mean,
            r.ticks_p50,
            r.ticks_p75,
            r.ticks_p95,
            r.ticks_p99,
            r.overhead_ticks,
            r.ns_mean.map_or("-".into(), |n| format!("{n:.1}"))
        );
    }
}
