//! The shape of real tables next to the synthetic ones: the statistics of
//! `ipfib::gen::shape::Shape` (length histogram, nesting, value locality,
//! adjacency, clustering) that `ipfib::gen` is tuned to and tested against.
//!
//! ```sh
//! cargo run --release -p ipfib-cli --example table_shape             # the real tables
//! cargo run --release -p ipfib-cli --example table_shape -- FILE...  # any tables
//! ```
//!
//! With no FILE: the five real tables of the benchmark standing, from
//! `$IPFIB_DATA` or `../shared/data`, then the synthetic tables of the same
//! sizes (seed 4 for IPv4, 6 for IPv6: what `ipfib bench` builds).

use ipfib::gen::shape::Shape;
use ipfib::gen::{synthetic_v4, synthetic_v6};
use ipfib::prefix::Prefix;
use ipfib_io::{read_routes, AnyPrefix, LoadOptions};
use std::collections::HashMap;
use std::path::PathBuf;

const REAL: &[&str] = &[
    "routeviews-20151101.ipasn.dat.gz",
    "linx-rib-ipv6.20141225.0000.p69.txt.gz",
    "routeviews-rv2-20260730-1400.pfx2as.txt.gz",
    "routeviews-rv6-20260730-1400.pfx2as.txt.gz",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut files: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let defaults = files.is_empty();
    if defaults {
        let dir = std::env::var_os("IPFIB_DATA")
            .map_or_else(|| PathBuf::from("../shared/data"), PathBuf::from);
        files = REAL.iter().map(|f| dir.join(f)).collect();
    }
    let mut sizes = Vec::new();
    for path in &files {
        let loaded = read_routes(path, &LoadOptions::default())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // Values interned per family, in order of first appearance.
        let mut ids: [HashMap<String, u32>; 2] = Default::default();
        let mut v4: Vec<(Prefix<u32>, u32)> = Vec::new();
        let mut v6: Vec<(Prefix<u128>, u32)> = Vec::new();
        for r in loaded.routes {
            let fam = usize::from(matches!(r.prefix, AnyPrefix::V6(_)));
            let next = ids[fam].len() as u32;
            let id = *ids[fam].entry(r.value).or_insert(next);
            match r.prefix {
                AnyPrefix::V4(p) => v4.push((p, id)),
                AnyPrefix::V6(p) => v6.push((p, id)),
            }
        }
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        for shape in [Shape::of(&v4), Shape::of(&v6)] {
            if shape.prefixes > 0 {
                print!("{name} {shape}");
                model(&shape);
                sizes.push((shape.family, shape.prefixes));
            }
        }
    }
    if defaults {
        for (family, n) in sizes {
            let shape = if family == 4 {
                Shape::of(&synthetic_v4(n, 4))
            } else {
                Shape::of(&synthetic_v6(n, 6))
            };
            print!("synthetic {shape}");
            model(&shape);
        }
    }
    Ok(())
}

/// Per length: parts per million of the table and the nested fraction in
/// per mille (the rows of `gen.rs`'s length models).
fn model(shape: &Shape) {
    let rows: Vec<String> = (0..shape.lengths.len())
        .filter(|&l| shape.lengths[l] > 0.0)
        .map(|l| {
            let ppm = (shape.lengths[l] * 1e6).round().max(1.0);
            let nested = (shape.nested_by_length[l] * 1e3).round();
            format!("({l}, {ppm}, {nested})")
        })
        .collect();
    println!("  (length, ppm, nested per mille): {}", rows.join(", "));
}
