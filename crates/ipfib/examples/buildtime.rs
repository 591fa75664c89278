//! Build-time breakdown on a synthetic table: route walk + interval compile,
//! then the PlanB build. Usage: buildtime [v6-prefixes]
use ipfib::engine::planb::{PlanB, PlanBOptions};
use ipfib::gen::synthetic_v6;
use ipfib::intervals::compile;
use ipfib::route_table::RouteTable;
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let t: RouteTable<u128, u32> = synthetic_v6(n, 6).into_iter().collect();
    for _ in 0..3 {
        let t0 = Instant::now();
        let routes: Vec<_> = t.iter_indices().collect();
        let t1 = Instant::now();
        let iv = compile(routes.iter().copied());
        let t2 = Instant::now();
        let e = PlanB::build(&iv, &PlanBOptions::default()).expect("build");
        let t3 = Instant::now();
        println!(
            "walk {:.1} ms, compile {:.1} ms, planb {:.1} ms ({} intervals, s={}, {} trees, {} sub entries)",
            (t1 - t0).as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e3,
            (t3 - t2).as_secs_f64() * 1e3,
            iv.len(),
            e.direct_bits(),
            e.tree_buckets(),
            e.sub_entries()
        );
    }
}
