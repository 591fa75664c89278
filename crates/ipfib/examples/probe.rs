//! Development probe: load a `PREFIX/LEN VALUE` table (plain text from
//! stdin), build PlanB, check against the route table, time lookups.
//! Usage: zcat table.gz | cargo run --release --example probe -- [s]
use ipfib::compiled::Compiled;
use ipfib::engine::planb::{kernel::Kernel, PlanbOptions};
use ipfib::gen::{matched_trace, uniform_trace};
use ipfib::prefix::{AnyPrefix, HostBits};
use ipfib::route_table::RouteTable;
use std::io::BufRead;
use std::time::Instant;

fn main() {
    let s: Option<u8> = std::env::args().nth(1).and_then(|a| a.parse().ok());
    let mut t4 = RouteTable::<u32, String>::new();
    let mut t6 = RouteTable::<u128, String>::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let mut it = line.split_whitespace();
        let (Some(p), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
        if p.starts_with('#') || p.starts_with(';') {
            continue;
        }
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
    if std::env::var("FULL").is_ok() {
        run(&t4, s);
        run(&t6, s);
    }
    // value-mode (aggregated) interval counts
    let iv4 = ipfib::intervals::compile(t4.iter_indices());
    let iv6 = ipfib::intervals::compile(t6.iter_indices());
    println!("value-mode intervals: v4 {} v6 {}", iv4.len(), iv6.len());
    for (name, iv) in [("v4-values", &iv4)] {
        for kernel in [Kernel::Avx512] {
            for s in [0u8, 16, 18, 20] {
                let e = ipfib::engine::planb::PlanB::build(
                    iv,
                    &PlanbOptions {
                        kernel: Some(kernel),
                        direct_bits: Some(s),
                    },
                )
                .unwrap();
                let prefixes: Vec<_> = t4.iter().map(|(p, _)| p).collect();
                let mut line = format!(
                    "{name} s={s} {:.1} B/prefix",
                    e.footprint_bytes() as f64 / t4.len() as f64
                );
                for (tn, trace) in [
                    ("uniform", uniform_trace::<u32>(4_000_000, 1)),
                    ("matched", matched_trace(&prefixes, 4_000_000, 2)),
                ] {
                    let mut out = vec![0u32; trace.len()];
                    let mut best = 0f64;
                    for _ in 0..7 {
                        let t0 = Instant::now();
                        e.lookup_batch::<16>(&trace, &mut out);
                        best = best.max(trace.len() as f64 / t0.elapsed().as_secs_f64() / 1e6);
                    }
                    line += &format!(" {tn} b16 {best:6.1}");
                }
                println!("{line}");
            }
        }
    }
}

fn run<A: ipfib::engine::planb::Family>(t: &RouteTable<A, String>, s: Option<u8>) {
    if t.is_empty() {
        return;
    }
    for kernel in Kernel::supported() {
        let t0 = Instant::now();
        let c = Compiled::build(
            t,
            &PlanbOptions {
                kernel: Some(kernel),
                direct_bits: s,
            },
        )
        .unwrap();
        let build = t0.elapsed();
        let e = c.engine();
        println!("v{} {} prefixes, {} intervals, depth {}, s={}, stage2 {}, {:.1} B/prefix, build {:.1} ms, kernel {}",
            A::FAMILY, t.len(), e.intervals(), e.depth(), e.direct_bits(), e.stage2_intervals(),
            e.footprint_bytes() as f64 / t.len() as f64, build.as_secs_f64() * 1e3, kernel);
        let prefixes: Vec<_> = t.iter().map(|(p, _)| p).collect();
        for (name, trace) in [
            ("uniform", uniform_trace::<A>(4_000_000, 1)),
            ("matched", matched_trace(&prefixes, 4_000_000, 2)),
        ] {
            // correctness
            for &a in trace.iter().take(200_000) {
                assert_eq!(c.lookup(a).map(|x| x.0), t.lookup(a).map(|x| x.0), "{a:?}");
            }
            let mut out = vec![0u32; trace.len()];
            let mut line = format!("  {name:8}");
            let t0 = Instant::now();
            let mut sum = 0u64;
            for &a in &trace {
                sum += e.lookup(a) as u64;
            }
            line += &format!(
                " single {:6.1}",
                trace.len() as f64 / t0.elapsed().as_secs_f64() / 1e6
            );
            macro_rules! b {
                ($m:literal) => {{
                    let mut best = 0f64;
                    for _ in 0..7 {
                        let t0 = Instant::now();
                        e.lookup_batch::<$m>(&trace, &mut out);
                        best = best.max(trace.len() as f64 / t0.elapsed().as_secs_f64() / 1e6);
                    }
                    sum += out.iter().map(|&x| x as u64).sum::<u64>();
                    line += &format!(" b{} {:6.1}", $m, best);
                }};
            }
            b!(8);
            b!(16);
            b!(32);
            b!(64);
            println!("{line}  (chk {})", sum % 1000);
        }
    }
}
