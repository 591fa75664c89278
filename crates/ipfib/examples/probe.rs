//! Development probe: load a `PREFIX/LEN VALUE` table (plain text from
//! stdin), build PlanB for several direct-pointing sizes, time batches.
//! Usage: zcat table.gz | cargo run --release --example probe -- 16,18,20
use ipfib::engine::planb::{Family, PlanB, PlanbOptions};
use ipfib::gen::{matched_trace, uniform_trace};
use ipfib::intervals::compile;
use ipfib::prefix::{AnyPrefix, HostBits};
use ipfib::route_table::RouteTable;
use std::io::BufRead;
use std::time::Instant;

fn main() {
    let s: Vec<u8> = std::env::args()
        .nth(1)
        .unwrap_or("16,18,20".into())
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    let mut t4 = RouteTable::<u32, String>::new();
    let mut t6 = RouteTable::<u128, String>::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let mut it = line.split_whitespace();
        let (Some(p), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
        match AnyPrefix::parse(p, HostBits::Mask) {
            Ok(AnyPrefix::V4(p)) => {
                t4.insert(p, v.to_string()).unwrap();
            }
            Ok(AnyPrefix::V6(p)) => {
                t6.insert(p, v.to_string()).unwrap();
            }
            Err(_) => {}
        }
    }
    run(&t4, &s);
    run(&t6, &s);
}

fn run<A: Family>(t: &RouteTable<A, String>, ss: &[u8]) {
    if t.is_empty() {
        return;
    }
    let prefixes: Vec<_> = t.iter().map(|(p, _)| p).collect();
    let traces = [
        ("uniform", uniform_trace::<A>(1_000_000, 1)),
        ("matched", matched_trace(&prefixes, 1_000_000, 2)),
    ];
    let routes: Vec<_> = t.iter_indices().collect();
    for mode in ["values", "routes"] {
        let iv = if mode == "values" {
            compile(t.iter_indices())
        } else {
            compile(routes.iter().enumerate().map(|(i, (p, _))| (*p, i as u32)))
        };
        for &s in ss {
            let t0 = Instant::now();
            let e = PlanB::build(
                &iv,
                &PlanbOptions {
                    kernel: None,
                    direct_bits: Some(s),
                    sub_min_keys: std::env::var("SUB").ok().and_then(|v| v.parse().ok()),
                },
            )
            .unwrap();
            let build = t0.elapsed().as_secs_f64() * 1e3;
            let mut line = format!(
                "v{} {mode} n={} iv={} s={} trees={} depth={} {:.1}B/p build {build:.1}ms |",
                A::FAMILY,
                t.len(),
                e.intervals(),
                e.direct_bits(),
                e.tree_buckets(),
                e.depth(),
                e.footprint_bytes() as f64 / t.len() as f64
            );
            for (name, trace) in &traces {
                let mut out = vec![0u32; trace.len()];
                for (m, f) in [(1usize, 0), (16, 1), (32, 2)] {
                    let mut v = vec![];
                    for _ in 0..15 {
                        let t0 = Instant::now();
                        match f {
                            0 => {
                                for (o, &a) in out.iter_mut().zip(trace.iter()) {
                                    *o = e.lookup(std::hint::black_box(a));
                                }
                            }
                            1 => e.lookup_batch::<16>(trace, &mut out),
                            _ => e.lookup_batch::<32>(trace, &mut out),
                        }
                        v.push(trace.len() as f64 / t0.elapsed().as_secs_f64() / 1e6);
                    }
                    v.sort_by(|a, b| a.total_cmp(b));
                    line += &format!(" {name}/{m} {:.0}/{:.0}", v[7], v[14]);
                }
            }
            println!("{line}");
        }
    }
}
