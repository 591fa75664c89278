//! Drawing the charts `super` describes: grouped bars with whiskers,
//! panels of lines, one legend strip, an RGB buffer encoded as PNG.

use super::{distinct, Body, Chart, Error, Panel, Point, FONT};
use crate::bench::rows::Row;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Once;

type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

pub(super) fn register_font() -> Result<(), Error> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| "the embedded DejaVu Sans font did not load".into());
    });
    result
}

/// Draw into an RGB buffer, then write it as an 8-bit RGB PNG.
pub(super) fn render(
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

    pub(super) fn draw(&self, area: &Area) -> Result<(), Error> {
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
