//! The rows a run produces, shared by the code that measures them
//! (`runner.rs`, `latency.rs`), summarises them (`summary.rs`), prints
//! them (`report.rs`) and draws them (`plot.rs`): a leaf, importing no
//! other module of the command but `stats`.

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

/// One engine's latency on one trace.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct LatencyRow {
    #[serde(flatten)]
    pub id: Subject,
    /// Lookups timed.
    pub samples: usize,
    pub ticks_mean: f64,
    pub ticks_p50: f64,
    pub ticks_p75: f64,
    pub ticks_p95: f64,
    pub ticks_p99: f64,
    pub ticks_max: f64,
    /// Ticks of an empty measurement (fences and counter reads), included
    /// in every figure above; subtract it for the lookup alone.
    pub overhead_ticks: f64,
    /// `ticks_mean` in nanoseconds at the calibrated counter rate.
    pub ns_mean: Option<f64>,
    /// Percentiles 0, 1, ..., 100 of the ticks.
    pub cdf_ticks: Vec<f64>,
}

/// One cell of the summary (the JSON `summary` list).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Cell {
    pub table: String,
    pub family: u8,
    pub prefixes: usize,
    pub trace: String,
    pub batch: usize,
    pub threads: usize,
    /// The fastest engine's label (`engine` or `engine/kernel` when an
    /// engine ran several kernels) and its median MLPS.
    pub fastest: String,
    pub fastest_mlps: f64,
    /// Fastest median over radix's median (null when radix did not run).
    pub vs_radix: Option<f64>,
    /// Every engine of the cell, fastest first, with its median over the
    /// fastest's.
    pub engines: Vec<Ratio>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Ratio {
    pub engine: String,
    pub mlps_median: f64,
    pub of_fastest: f64,
}
