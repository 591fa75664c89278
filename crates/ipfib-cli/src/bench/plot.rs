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

use super::latency::LatencyRow;
use super::report::{Row, Subject};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Once;

type Error = Box<dyn std::error::Error>;
type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

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

fn register_font() -> Result<(), Error> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| "the embedded DejaVu Sans font did not load".into());
    });
    result
}

/// Draw into an RGB buffer, then write it as an 8-bit RGB PNG.
fn render(
    path: &Path,
    (w, h): (u32, u32),
    title: &str,
    draw: impl FnOnce(&Area) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut buf = vec![255u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        root.fill(&WHITE)?;
        let body = root.titled(title, (FONT, 18))?;
        draw(&body)?;
        root.present()?;
    }
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::High);
    let mut writer = enc.write_header()?;
    writer.write_image_data(&buf)?;
    writer.finish()?;
    Ok(())
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

fn color(i: usize) -> RGBColor {
    // Okabe-Ito: distinguishable, also for colour-blind readers.
    const C: [(u8, u8, u8); 8] = [
        (0, 114, 178),
        (230, 159, 0),
        (0, 158, 115),
        (204, 121, 167),
        (86, 180, 233),
        (213, 94, 0),
        (240, 228, 66),
        (0, 0, 0),
    ];
    let (r, g, b) = C[i % C.len()];
    RGBColor(r, g, b)
}

impl Chart {
    /// Series names in the order their colours are given out.
    fn legend(&self) -> Vec<String> {
        match &self.body {
            Body::Bars { series, .. } => series.iter().map(|s| s.0.clone()).collect(),
            Body::Panels(panels) => distinct(
                panels
                    .iter()
                    .flat_map(|p| p.series.iter().map(|s| s.0.clone())),
            ),
        }
    }

    fn draw(&self, area: &Area) -> Result<(), Error> {
        let names = self.legend();
        let (strip, body) = area.split_vertically(26);
        legend_strip(&strip, &names, &colour_slots(&names))?;
        let slots = colour_slots(&names);
        let colour = |name: &str| {
            let i = names.iter().position(|n| n == name).unwrap_or(0);
            color(slots[i])
        };
        match &self.body {
            Body::Bars { groups, series } => bars(&body, groups, series, &slots),
            Body::Panels(panels) => {
                let cols = panels.len().min(2);
                let rows = panels.len().div_ceil(cols.max(1));
                for (p, a) in panels.iter().zip(body.split_evenly((rows, cols))) {
                    lines(&a, p, &colour)?;
                }
                Ok(())
            }
        }
    }
}

/// One line of colour swatches and names, centred: the legend of every
/// panel below it.
fn legend_strip(area: &Area, names: &[String], slots: &[usize]) -> Result<(), Error> {
    let font: TextStyle = (FONT, 14).into();
    let widths: Vec<i32> = names
        .iter()
        .map(|n| {
            area.estimate_text_size(n, &font)
                .map_or(60, |(w, _)| w as i32)
                + 40
        })
        .collect();
    let total: i32 = widths.iter().sum();
    let mut x = ((area.dim_in_pixel().0 as i32 - total) / 2).max(4);
    for (i, (name, w)) in names.iter().zip(&widths).enumerate() {
        area.draw(&Rectangle::new(
            [(x, 8), (x + 18, 20)],
            color(slots[i]).filled(),
        ))?;
        area.draw(&Text::new(name.as_str(), (x + 24, 6), font.clone()))?;
        x += w;
    }
    Ok(())
}

/// Each series' colour: the same per engine in every chart (planb blue,
/// planb-routes orange, poptrie green, radix pink, ...) when the chart has
/// one series per engine; in order of appearance when it does not (two
/// kernels or two `s` of one engine).
fn colour_slots(names: &[String]) -> Vec<usize> {
    const KNOWN: [&str; 6] = [
        "planb",
        "planb-routes",
        "poptrie",
        "radix",
        "poptrie-routes",
        "poptrie-basic",
    ];
    let slot = |n: &String| {
        let base = n.split([' ', ':']).next().unwrap_or_default();
        KNOWN.iter().position(|k| *k == base)
    };
    let fixed: Vec<Option<usize>> = names.iter().map(slot).collect();
    let distinct = fixed.iter().flatten().collect::<BTreeSet<_>>().len() == names.len();
    if distinct {
        fixed.into_iter().flatten().collect()
    } else {
        (0..names.len()).collect()
    }
}

/// Y labels without decimals once values are large.
fn y_label(v: &f64) -> String {
    if v.abs() >= 20.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn bars(
    area: &Area,
    groups: &[String],
    series: &[(String, Vec<Option<Row>>)],
    slots: &[usize],
) -> Result<(), Error> {
    let ymax = series
        .iter()
        .flat_map(|(_, b)| b.iter().flatten())
        .map(|r| r.mlps_max)
        .fold(0.0f64, f64::max)
        * 1.12;
    let n = groups.len() as f64;
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(55)
        .build_cartesian_2d(-0.5..n - 0.5, 0.0..ymax.max(1.0))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.len())
        .x_label_formatter(&|x| {
            let i = x.round();
            match groups.get(i as usize) {
                Some(g) if (x - i).abs() < 1e-6 && i >= 0.0 => g.clone(),
                _ => String::new(),
            }
        })
        .y_label_formatter(&y_label)
        .y_desc("MLPS (median; IQR and min-max whiskers)")
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()?;
    let k = series.len().max(1) as f64;
    let width = 0.8 / k;
    for (j, (_, bars)) in series.iter().enumerate() {
        let c = color(slots[j]);
        let x0 = |g: usize| g as f64 - 0.4 + j as f64 * width;
        let rects = bars.iter().enumerate().filter_map(|(g, b)| {
            b.as_ref().map(|r| {
                Rectangle::new(
                    [
                        (x0(g) + width * 0.08, 0.0),
                        (x0(g) + width * 0.92, r.mlps_median),
                    ],
                    c.filled(),
                )
            })
        });
        chart.draw_series(rects)?;
        let mid = |g: usize| x0(g) + width / 2.0;
        let whiskers = bars
            .iter()
            .enumerate()
            .filter_map(|(g, b)| b.as_ref().map(|r| (g, r)));
        for (g, r) in whiskers {
            let x = mid(g);
            let cap = width * 0.2;
            chart.draw_series([
                PathElement::new(
                    vec![(x, r.mlps_min), (x, r.mlps_max)],
                    BLACK.stroke_width(1),
                ),
                PathElement::new(vec![(x, r.mlps_q1), (x, r.mlps_q3)], BLACK.stroke_width(3)),
                PathElement::new(
                    vec![(x - cap, r.mlps_max), (x + cap, r.mlps_max)],
                    BLACK.stroke_width(1),
                ),
                PathElement::new(
                    vec![(x - cap, r.mlps_min), (x + cap, r.mlps_min)],
                    BLACK.stroke_width(1),
                ),
            ])?;
            // The batch size the bar shows, above its whisker.
            chart.draw_series([Text::new(
                format!("b{}", r.batch),
                (x, r.mlps_max + ymax * 0.01),
                (FONT, 10)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            )])?;
        }
    }
    Ok(())
}

fn lines(area: &Area, p: &Panel, colour: &dyn Fn(&str) -> RGBColor) -> Result<(), Error> {
    let pts = || p.series.iter().flat_map(|(_, v)| v.iter());
    let xs = || pts().map(|q| p.x.to_pos(q.x));
    let (mut x0, mut x1) = (
        xs().fold(f64::INFINITY, f64::min),
        xs().fold(f64::NEG_INFINITY, f64::max),
    );
    if !x0.is_finite() {
        return Ok(());
    }
    let pad = ((x1 - x0) * 0.05).max(0.1);
    (x0, x1) = (x0 - pad, x1 + pad);
    let ymax = pts()
        .map(|q| q.whisker.map_or(q.y, |w| w.1).max(q.y))
        .fold(0.0f64, f64::max)
        * 1.1;
    let axis = p.x;
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, (FONT, 15))
        .margin(8)
        .x_label_area_size(35)
        .y_label_area_size(55)
        .build_cartesian_2d(x0..x1, 0.0..ymax.max(1e-9))?;
    chart
        .configure_mesh()
        .x_labels(0)
        .y_label_formatter(&y_label)
        .x_desc(axis.name())
        .y_desc(p.y_label)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .draw()?;
    // X labels at the axis's own key points (plotters would pick round
    // numbers of the logarithm), drawn under the axis by pixel.
    let base = area.get_base_pixel();
    let font = (FONT, 12)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for k in axis.key_points(x0, x1, xs().collect()) {
        let (bx, by) = chart.backend_coord(&(k, 0.0));
        let (x, y) = (bx - base.0, by - base.1);
        area.draw(&PathElement::new(vec![(x, y), (x, y + 4)], BLACK))?;
        area.draw(&Text::new(axis.label(k), (x, y + 6), font.clone()))?;
    }
    for (name, v) in &p.series {
        let c = colour(name);
        let at = |q: &Point| (axis.to_pos(q.x), q.y);
        chart.draw_series(LineSeries::new(v.iter().map(at), c.stroke_width(2)))?;
        if p.markers {
            chart.draw_series(v.iter().map(|q| Circle::new(at(q), 3, c.filled())))?;
        }
        chart.draw_series(v.iter().filter_map(|q| {
            q.whisker.map(|(lo, hi)| {
                let x = axis.to_pos(q.x);
                PathElement::new(vec![(x, lo), (x, hi)], c.stroke_width(2))
            })
        }))?;
    }
    Ok(())
}
