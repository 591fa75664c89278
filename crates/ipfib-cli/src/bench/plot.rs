//! `--plot DIR`: PNG charts of a run (or of `--from-json` files), drawn
//! with plotters into an RGB buffer and encoded with `png`. Text uses
//! DejaVu Sans compiled into the binary (the `dejavu` crate, through
//! plotters' `ab_glyph` feature): no fontconfig, no system fonts, so a
//! fresh machine draws the same pictures.
//!
//! Per family (`-v4`, `-v6`), each written only when the data varies
//! along its axis:
//! - `throughput`: MLPS per engine per trace, each engine at its best
//!   batch size, bars at the median with IQR whiskers (min-max thin);
//! - `batch`: MLPS vs batch size, one panel per trace;
//! - `fib-size`: MLPS vs number of prefixes (best batch), one panel per
//!   trace, then bytes per prefix and build time;
//! - `threads`: aggregate MLPS vs threads (best batch);
//! - `latency-cdf`: cumulative distribution of single-lookup ticks.
//!
//! This file picks what each chart shows from the rows; `plot/draw.rs`
//! draws it.

use super::rows::{LatencyRow, Row, Subject};
mod draw;

use draw::{register_font, render};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

type Error = Box<dyn std::error::Error>;

const FONT: &str = "sans-serif";

/// The charts, by the stem of their file names (`--charts`).
pub const CHARTS: [&str; 5] = ["throughput", "batch", "fib-size", "threads", "latency-cdf"];

/// Every chart the rows and latency rows support (of those in `only`;
/// empty: all), into `dir`; the files written.
pub fn write_all(
    dir: &Path,
    rows: &[Row],
    latency: &[LatencyRow],
    only: &[String],
    size: (u32, u32),
) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(dir).map_err(|e| format!("--plot {}: {e}", dir.display()))?;
    register_font()?;
    let mut written = Vec::new();
    for family in [4u8, 6] {
        let fam: Vec<&Row> = rows.iter().filter(|r| r.id.family == family).collect();
        let lat: Vec<&LatencyRow> = latency.iter().filter(|r| r.id.family == family).collect();
        let wanted = |stem: &str| only.is_empty() || only.iter().any(|o| o == stem);
        let charts: [(&str, &dyn Fn() -> Option<Chart>); 5] = [
            ("throughput", &|| throughput(&fam)),
            ("batch", &|| versus(&fam, Axis::Batch)),
            ("fib-size", &|| fib_size(&fam)),
            ("threads", &|| versus(&fam, Axis::Threads)),
            ("latency-cdf", &|| latency_cdf(&lat)),
        ];
        for (stem, chart) in charts {
            if let Some(chart) = wanted(stem).then(chart).flatten() {
                let path = dir.join(format!("{stem}-v{family}.png"));
                render(
                    &path,
                    size,
                    &format!("{} (IPv{family})", chart.title),
                    |area| chart.draw(area),
                )?;
                written.push(path);
            }
        }
    }
    Ok(written)
}

/// A series' name: the engine, with its kernel when one engine runs
/// several kernels.
fn names(ids: &[&Subject]) -> impl Fn(&Subject) -> String {
    let multi: BTreeSet<String> = ids
        .iter()
        .filter(|r| {
            ids.iter()
                .any(|o| o.engine == r.engine && o.kernel != r.kernel)
        })
        .map(|r| r.engine.clone())
        .collect();
    move |r: &Subject| {
        if multi.contains(&r.engine) {
            format!("{} {}", r.engine, r.kernel)
        } else {
            r.engine.clone()
        }
    }
}

/// [`names`] for throughput rows.
fn row_names(rows: &[&Row]) -> impl Fn(&Row) -> String {
    let ids: Vec<&Subject> = rows.iter().map(|r| &r.id).collect();
    let name = names(&ids);
    move |r: &Row| name(&r.id)
}

/// Distinct values in first-seen order.
fn distinct<T: PartialEq + Clone>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// The row with the best median among `rows` matching `keep`.
fn best<'r>(rows: &[&'r Row], keep: impl Fn(&Row) -> bool) -> Option<&'r Row> {
    rows.iter()
        .copied()
        .filter(|r| keep(r))
        .max_by(|a, b| a.mlps_median.total_cmp(&b.mlps_median))
}

/// One point: x, y, and an optional whisker (low, high) around y.
#[derive(Clone, Copy)]
struct Point {
    x: f64,
    y: f64,
    whisker: Option<(f64, f64)>,
}

fn point(x: f64, r: &Row) -> Point {
    Point {
        x,
        y: r.mlps_median,
        whisker: Some((r.mlps_q1, r.mlps_q3)),
    }
}

/// A panel: lines (with markers) per series.
struct Panel {
    title: String,
    x: Axis,
    y_label: &'static str,
    series: Vec<(String, Vec<Point>)>,
    markers: bool,
}

/// What a chart is: grouped bars, or panels of lines.
enum Body {
    Bars {
        groups: Vec<String>,
        series: Vec<(String, Vec<Option<Row>>)>,
    },
    Panels(Vec<Panel>),
}

struct Chart {
    title: String,
    body: Body,
}

#[derive(Clone, Copy, PartialEq)]
enum Axis {
    Batch,
    Threads,
    Prefixes,
    Ticks,
}

impl Axis {
    /// Where a value goes on the axis (log scales are drawn linear in the
    /// logarithm) and back.
    fn to_pos(self, v: f64) -> f64 {
        match self {
            Axis::Batch => v.max(1e-9).log2(),
            Axis::Prefixes | Axis::Ticks => v.max(1e-9).log10(),
            Axis::Threads => v,
        }
    }
    fn label(self, pos: f64) -> String {
        let v = match self {
            Axis::Batch => pos.exp2(),
            Axis::Prefixes | Axis::Ticks => 10f64.powf(pos),
            Axis::Threads => pos,
        };
        match self {
            Axis::Prefixes => si(v),
            _ if (v - v.round()).abs() < 1e-6 => format!("{v:.0}"),
            _ => String::new(),
        }
    }
    /// Where the axis is labelled: at the data's own values (batch sizes,
    /// thread counts, table sizes), at 1-2-5 steps of each decade (ticks).
    fn key_points(self, lo: f64, hi: f64, data: Vec<f64>) -> Vec<f64> {
        if self == Axis::Ticks {
            let decades = lo.floor() as i32..=hi.ceil() as i32;
            return decades
                .flat_map(|d| [1.0, 2.0, 5.0].map(|m| (m * 10f64.powi(d)).log10()))
                .filter(|p| (lo..=hi).contains(p))
                .collect();
        }
        let mut v = data;
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    }

    fn name(self) -> &'static str {
        match self {
            Axis::Batch => "batch size",
            Axis::Threads => "threads",
            Axis::Prefixes => "prefixes",
            Axis::Ticks => "TSC ticks per lookup (log scale)",
        }
    }
}

/// Rows of the largest table of the family (a sweep's other sizes have
/// their own chart).
fn largest<'r>(rows: &[&'r Row]) -> Vec<&'r Row> {
    let top = rows.iter().map(|r| r.id.prefixes).max().unwrap_or(0);
    rows.iter()
        .copied()
        .filter(|r| r.id.prefixes == top)
        .collect()
}

fn throughput(rows: &[&Row]) -> Option<Chart> {
    let rows: Vec<&Row> = largest(rows)
        .into_iter()
        .filter(|r| r.threads == 1)
        .collect();
    let name = row_names(&rows);
    let groups = distinct(rows.iter().map(|r| r.id.trace.clone()));
    let engines = distinct(rows.iter().map(|r| name(r)));
    if rows.is_empty() {
        return None;
    }
    let series = engines
        .iter()
        .map(|e| {
            let bars = groups
                .iter()
                .map(|t| best(&rows, |r| &name(r) == e && &r.id.trace == t).cloned())
                .collect();
            (e.clone(), bars)
        })
        .collect();
    Some(Chart {
        title: format!(
            "throughput, {} prefixes, best batch per engine",
            rows[0].id.prefixes
        ),
        body: Body::Bars { groups, series },
    })
}

/// MLPS vs batch size or threads, one panel per trace (largest table).
fn versus(rows: &[&Row], axis: Axis) -> Option<Chart> {
    let rows = largest(rows);
    let value = |r: &Row| match axis {
        Axis::Batch => r.batch,
        _ => r.threads,
    };
    let xs = distinct(rows.iter().map(|r| value(r)));
    if xs.len() < 2 {
        return None;
    }
    let name = row_names(&rows);
    let panels = distinct(rows.iter().map(|r| r.id.trace.clone()))
        .into_iter()
        .map(|trace| {
            let t_rows: Vec<&Row> = rows
                .iter()
                .copied()
                .filter(|r| r.id.trace == trace && (axis != Axis::Batch || r.threads == 1))
                .collect();
            let series = distinct(t_rows.iter().map(|r| name(r)))
                .into_iter()
                .map(|e| {
                    let pts = xs
                        .iter()
                        .filter_map(|&x| {
                            best(&t_rows, |r| name(r) == e && value(r) == x)
                                .map(|r| point(x as f64, r))
                        })
                        .collect();
                    (e, pts)
                })
                .collect();
            Panel {
                title: trace,
                x: axis,
                y_label: "MLPS (median, IQR)",
                series,
                markers: true,
            }
        })
        .collect();
    let what = match axis {
        Axis::Batch => "throughput vs batch size",
        _ => "aggregate throughput vs threads (best batch)",
    };
    Some(Chart {
        title: format!("{what}, {} prefixes", rows[0].id.prefixes),
        body: Body::Panels(panels),
    })
}

/// MLPS (best batch, one thread) vs table size per trace, then bytes per
/// prefix and build time.
fn fib_size(rows: &[&Row]) -> Option<Chart> {
    let rows: Vec<&Row> = rows.iter().copied().filter(|r| r.threads == 1).collect();
    let sizes = distinct(rows.iter().map(|r| r.id.prefixes));
    if sizes.len() < 2 {
        return None;
    }
    let name = row_names(&rows);
    let engines = distinct(rows.iter().map(|r| name(r)));
    let per_size =
        |keep: &dyn Fn(&Row) -> bool, y: &dyn Fn(&Row) -> Point| -> Vec<(String, Vec<Point>)> {
            engines
                .iter()
                .map(|e| {
                    let pts = sizes
                        .iter()
                        .filter_map(|&n| {
                            best(&rows, |r| &name(r) == e && r.id.prefixes == n && keep(r))
                        })
                        .map(y)
                        .collect();
                    (e.clone(), pts)
                })
                .collect()
        };
    let mut panels: Vec<Panel> = distinct(rows.iter().map(|r| r.id.trace.clone()))
        .into_iter()
        .map(|trace| Panel {
            series: per_size(&|r| r.id.trace == trace, &|r| {
                point(r.id.prefixes as f64, r)
            }),
            title: trace,
            x: Axis::Prefixes,
            y_label: "MLPS (median, IQR)",
            markers: true,
        })
        .collect();
    let plain = |y: fn(&Row) -> f64| {
        move |r: &Row| Point {
            x: r.id.prefixes as f64,
            y: y(r),
            whisker: None,
        }
    };
    panels.push(Panel {
        title: "memory".into(),
        x: Axis::Prefixes,
        y_label: "bytes per prefix",
        series: per_size(&|_| true, &plain(|r| r.bytes_per_prefix)),
        markers: true,
    });
    panels.push(Panel {
        title: "build".into(),
        x: Axis::Prefixes,
        y_label: "build ms",
        series: per_size(&|_| true, &plain(|r| r.build_ms)),
        markers: true,
    });
    Some(Chart {
        title: "throughput, memory and build time vs table size".into(),
        body: Body::Panels(panels),
    })
}

fn latency_cdf(rows: &[&LatencyRow]) -> Option<Chart> {
    let top = rows.iter().map(|r| r.id.prefixes).max()?;
    let rows: Vec<&LatencyRow> = rows
        .iter()
        .copied()
        .filter(|r| r.id.prefixes == top)
        .collect();
    let ids: Vec<&Subject> = rows.iter().map(|r| &r.id).collect();
    let name_of = names(&ids);
    let panels = distinct(rows.iter().map(|r| r.id.trace.clone()))
        .into_iter()
        .map(|trace| {
            let series = rows
                .iter()
                .filter(|r| r.id.trace == trace)
                .map(|r| {
                    let name = name_of(&r.id);
                    let n = r.cdf_ticks.len().saturating_sub(1).max(1) as f64;
                    // Up to p99: the last percent (interrupts, page
                    // faults) would stretch the axis past what matters.
                    let pts = r
                        .cdf_ticks
                        .iter()
                        .take(r.cdf_ticks.len().saturating_sub(1))
                        .enumerate()
                        .map(|(i, &t)| Point {
                            x: t,
                            y: i as f64 / n,
                            whisker: None,
                        })
                        .collect();
                    (name, pts)
                })
                .collect();
            Panel {
                title: trace,
                x: Axis::Ticks,
                y_label: "fraction of lookups",
                series,
                markers: false,
            }
        })
        .collect();
    Some(Chart {
        title: format!("single-lookup latency CDF (to p99), {top} prefixes"),
        body: Body::Panels(panels),
    })
}

/// 1000 -> "1K", 31623 -> "32K", 1e6 -> "1M", 2.5e6 -> "2.5M".
fn si(v: f64) -> String {
    let short = |x: f64| {
        if x >= 10.0 {
            format!("{x:.0}")
        } else {
            format!("{x:.1}").trim_end_matches(".0").to_string()
        }
    };
    match v {
        v if v >= 1e6 => format!("{}M", short(v / 1e6)),
        v if v >= 1e3 => format!("{}K", short(v / 1e3)),
        v => short(v),
    }
}
