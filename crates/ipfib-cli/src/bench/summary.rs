//! The closing summary of a run: per cell (table, family, trace, batch
//! size, threads), the fastest engine, its speed-up over `radix` (the
//! baseline: single lookups, so a batch cell compares with radix's batch 1
//! row of the same table and trace), and every engine as a fraction of the
//! fastest. Engines are whatever labels the rows carry.

use super::rows::{Cell, Ratio, Row};

/// The cells of `rows`, in the order their first row appears.
pub fn cells(rows: &[Row]) -> Vec<Cell> {
    // An engine that ran several kernels is named with its kernel.
    let kernels_of = |engine: &str| {
        let mut k: Vec<&str> = rows
            .iter()
            .filter(|r| r.id.engine == engine)
            .map(|r| r.id.kernel.as_str())
            .collect();
        k.sort_unstable();
        k.dedup();
        k.len()
    };
    let label = |r: &Row| {
        if kernels_of(&r.id.engine) > 1 {
            format!("{}/{}", r.id.engine, r.id.kernel)
        } else {
            r.id.engine.clone()
        }
    };
    let same_place = |a: &Row, b: &Row| {
        a.id.table == b.id.table
            && a.id.family == b.id.family
            && a.id.prefixes == b.id.prefixes
            && a.id.trace == b.id.trace
            && a.threads == b.threads
    };
    let mut out: Vec<Cell> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.id.engine != "radix" || r.batch == 1)
    {
        let seen = out.iter().any(|c| {
            c.table == r.id.table
                && c.family == r.id.family
                && c.prefixes == r.id.prefixes
                && c.trace == r.id.trace
                && c.batch == r.batch
                && c.threads == r.threads
        });
        if seen {
            continue;
        }
        let radix = rows
            .iter()
            .find(|x| x.id.engine == "radix" && x.batch == 1 && same_place(x, r))
            .map(|x| x.mlps_median);
        // The cell's rows: its batch size, plus radix's single lookups
        // when the batch is larger (radix has no batch path).
        let mut members: Vec<(String, f64)> = rows
            .iter()
            .filter(|x| same_place(x, r))
            .filter(|x| x.batch == r.batch || (x.id.engine == "radix" && x.batch == 1))
            .map(|x| (label(x), x.mlps_median))
            .collect();
        members.sort_by(|a, b| b.1.total_cmp(&a.1));
        let Some((fastest, best)) = members.first().cloned() else {
            continue;
        };
        let ratio = |x: f64| if best > 0.0 { x / best } else { 0.0 };
        out.push(Cell {
            table: r.id.table.clone(),
            family: r.id.family,
            prefixes: r.id.prefixes,
            trace: r.id.trace.clone(),
            batch: r.batch,
            threads: r.threads,
            fastest,
            fastest_mlps: best,
            vs_radix: radix.filter(|&m| m > 0.0).map(|m| best / m),
            engines: members
                .into_iter()
                .map(|(engine, m)| Ratio {
                    engine,
                    mlps_median: m,
                    of_fastest: ratio(m),
                })
                .collect(),
        });
    }
    out
}

/// The summary as text: one line per cell.
pub fn print(cells: &[Cell]) {
    if cells.is_empty() {
        return;
    }
    println!(
        "# summary: per table, trace, batch and threads, the fastest engine (median MLPS), \
         its speed-up over radix (single lookups), and each engine's median as a fraction \
         of the fastest"
    );
    for c in cells {
        let radix = c
            .vs_radix
            .map_or("no radix row".into(), |x| format!("{x:.1}x radix"));
        let others: Vec<String> = c
            .engines
            .iter()
            .skip(1)
            .map(|e| format!("{} {:.2}", e.engine, e.of_fastest))
            .collect();
        let threads = if c.threads > 1 {
            format!(" threads {}", c.threads)
        } else {
            String::new()
        };
        println!(
            "{} IPv{} {} {} batch {}{threads}: {} {:.1} MLPS = {radix} | {}",
            c.table,
            c.family,
            c.prefixes,
            c.trace,
            c.batch,
            c.fastest,
            c.fastest_mlps,
            others.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::rows::Subject;

    fn row(engine: &str, kernel: &str, trace: &str, batch: usize, mlps: f64) -> Row {
        Row {
            id: Subject {
                engine: engine.into(),
                kernel: kernel.into(),
                family: 4,
                table: "t".into(),
                prefixes: 10,
                trace: trace.into(),
            },
            batch,
            threads: 1,
            mlps_median: mlps,
            ..Default::default()
        }
    }

    #[test]
    fn fastest_per_cell_against_radix_single_lookups() {
        let rows = vec![
            row("planb", "avx2", "uniform", 1, 50.0),
            row("planb", "avx2", "uniform", 32, 80.0),
            row("auto", "avx2", "uniform", 1, 60.0),
            row("auto", "avx2", "uniform", 32, 100.0),
            row("radix", "-", "uniform", 1, 5.0),
            row("planb", "avx2", "matched", 1, 40.0),
        ];
        let c = cells(&rows);
        assert_eq!(c.len(), 3, "uniform b1, uniform b32, matched b1");
        assert_eq!((c[0].fastest.as_str(), c[0].batch), ("auto", 1));
        assert_eq!(c[0].vs_radix, Some(12.0));
        let names: Vec<&str> = c[1].engines.iter().map(|e| e.engine.as_str()).collect();
        assert_eq!(names, ["auto", "planb", "radix"]);
        assert_eq!(c[1].vs_radix, Some(20.0));
        assert!((c[1].engines[1].of_fastest - 0.8).abs() < 1e-12);
        assert_eq!(c[2].vs_radix, None, "no radix row on matched");
        // Several kernels of one engine: the label names the kernel.
        let mut two = rows.clone();
        two.push(row("planb", "scalar", "uniform", 1, 70.0));
        assert_eq!(cells(&two)[0].fastest, "planb/scalar");
    }
}
