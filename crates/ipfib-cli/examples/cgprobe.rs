//! Deterministic cost probe for PlanB layout experiments under cachegrind:
//! builds PlanB for one family of a table file (any format `ipfib` reads)
//! and runs one batch pass over a synthetic trace, so that
//! `valgrind --tool=cachegrind --branch-sim=yes` counts instructions,
//! cache misses and mispredicts of one layout (counts repeat exactly where
//! timings on a shared machine swing).
//!
//! ```sh
//! cargo build --release -p ipfib-cli --example cgprobe
//! valgrind --tool=cachegrind --branch-sim=yes target/release/examples/cgprobe \
//!     ../shared/data/routeviews-rv2-20260730-1400.pfx2as.txt.gz 4 matched 18 0 avx2
//! ```
//!
//! Arguments: `TABLE FAMILY(4|6) TRACE(uniform|matched) [S [SUB_MIN_KEYS
//! [KERNEL]]]`; `-` (or leaving one out) keeps PlanB's own choice. Prints
//! the layout (direct bits, tree buckets, sub-table entries, bytes per
//! prefix) and a checksum of the answers to stderr.

use ipfib::engine::planb::{Family, PlanB, PlanBOptions};
use ipfib::gen::{matched_trace, uniform_trace};
use ipfib::intervals::compile;
use ipfib::route_table::RouteTable;
use ipfib_io::{read_routes, AnyPrefix, LoadOptions};
use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "usage: cgprobe TABLE FAMILY(4|6) TRACE(uniform|matched) \
                     [S [SUB_MIN_KEYS [KERNEL]]]   ('-' keeps PlanB's choice)";

fn main() -> ExitCode {
    match probe(&std::env::args().skip(1).collect::<Vec<_>>()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cgprobe: {e}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// `args[i]` parsed, or `None` when absent or `-`.
fn opt<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<Option<T>, String> {
    match args.get(i).map(String::as_str) {
        None | Some("-") => Ok(None),
        Some(s) => s
            .parse()
            .map(Some)
            .map_err(|_| format!("{what}: cannot read {s:?}")),
    }
}

fn probe(args: &[String]) -> Result<(), String> {
    let [table, family, trace, ..] = args else {
        return Err("TABLE, FAMILY and TRACE are required".into());
    };
    if !matches!(trace.as_str(), "uniform" | "matched") {
        return Err(format!("TRACE must be uniform or matched, not {trace:?}"));
    }
    let opts = PlanBOptions {
        direct_bits: opt(args, 3, "S")?,
        sub_min_keys: opt(args, 4, "SUB_MIN_KEYS")?,
        kernel: opt(args, 5, "KERNEL")?,
    };
    let loaded = read_routes(Path::new(table), &LoadOptions::default())
        .map_err(|e| format!("{table}: {e}"))?;
    let mut t4 = RouteTable::<u32, String>::new();
    let mut t6 = RouteTable::<u128, String>::new();
    for r in loaded.routes {
        // The later line wins, as the formats specify.
        let done = match r.prefix {
            AnyPrefix::V4(p) => t4.insert(p, r.value).map(drop),
            AnyPrefix::V6(p) => t6.insert(p, r.value).map(drop),
        };
        done.map_err(|e| format!("{table}: {e}"))?;
    }
    match family.as_str() {
        "4" => run(&t4, trace, &opts),
        "6" => run(&t6, trace, &opts),
        _ => Err(format!("FAMILY must be 4 or 6, not {family:?}")),
    }
}

#[inline(never)]
fn pass<A: Family>(e: &PlanB<A>, trace: &[A], out: &mut [u32]) {
    e.lookup_batch::<16>(trace, out);
}

fn run<A: Family>(
    t: &RouteTable<A, String>,
    trace: &str,
    opts: &PlanBOptions,
) -> Result<(), String> {
    if t.is_empty() {
        return Err("the table has no route of this family".into());
    }
    let prefixes: Vec<_> = t.iter().map(|(p, _)| p).collect();
    let tr = if trace == "matched" {
        matched_trace(&prefixes, 1_000_000, 2)
    } else {
        uniform_trace::<A>(1_000_000, 1)
    };
    let e = PlanB::build(&compile(t.iter_indices()), opts).map_err(|e| e.to_string())?;
    let mut out = vec![0u32; tr.len()];
    pass(&e, &tr, &mut out);
    eprintln!(
        "s={} trees={} sub={} B/p={:.1} chk={}",
        e.direct_bits(),
        e.tree_buckets(),
        e.sub_entries(),
        e.footprint_bytes() as f64 / t.len() as f64,
        out.iter().map(|&x| x as u64).sum::<u64>()
    );
    Ok(())
}
