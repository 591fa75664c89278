//! Deterministic cost probe for layout experiments under cachegrind
//! (`valgrind --tool=cachegrind --branch-sim=yes`): builds one engine from a
//! `PREFIX/LEN VALUE` table on stdin and runs one batch pass over a trace.
//! Args: FAMILY(4|6) TRACE(uniform|matched) S SUB_MIN_KEYS KERNEL
use ipfib::engine::planb::{Family, PlanB, PlanbOptions};
use ipfib::gen::{matched_trace, uniform_trace};
use ipfib::intervals::compile;
use ipfib::prefix::{AnyPrefix, HostBits};
use ipfib::route_table::RouteTable;
use std::io::BufRead;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (fam, trace, s, sub, kernel) = (
        a[1].as_str(),
        a[2].as_str(),
        a[3].parse::<u8>().ok(),
        a[4].parse::<usize>().ok(),
        a[5].parse().ok(),
    );
    let mut t4 = RouteTable::<u32, String>::new();
    let mut t6 = RouteTable::<u128, String>::new();
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        let mut it = line.split_whitespace();
        let (Some(p), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
        match AnyPrefix::parse(p, HostBits::Mask) {
            Ok(AnyPrefix::V4(p)) => {
                let _ = t4.insert(p, v.to_string());
            }
            Ok(AnyPrefix::V6(p)) => {
                let _ = t6.insert(p, v.to_string());
            }
            Err(_) => {}
        }
    }
    let opts = PlanbOptions {
        kernel,
        direct_bits: s,
        sub_min_keys: sub,
    };
    if fam == "4" {
        run(&t4, trace, &opts)
    } else {
        run(&t6, trace, &opts)
    }
}

#[inline(never)]
fn pass<A: Family>(e: &PlanB<A>, trace: &[A], out: &mut [u32]) {
    e.lookup_batch::<16>(trace, out);
}

fn run<A: Family>(t: &RouteTable<A, String>, trace: &str, opts: &PlanbOptions) {
    let prefixes: Vec<_> = t.iter().map(|(p, _)| p).collect();
    let tr = if trace == "matched" {
        matched_trace(&prefixes, 1_000_000, 2)
    } else {
        uniform_trace::<A>(1_000_000, 1)
    };
    let e = PlanB::build(&compile(t.iter_indices()), opts).unwrap();
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
}
