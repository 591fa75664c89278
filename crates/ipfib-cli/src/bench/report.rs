//! What a run reports: one [`Row`] per engine x trace x batch x threads
//! (the JSON `results`, ARCHITECTURE §4), latency rows (`latency`), and the
//! text tables printed from them.

use super::machine::Machine;
use super::rows::{Cell, LatencyRow, Row};
use serde::{Deserialize, Serialize};

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
    pub summary: Vec<Cell>,
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
