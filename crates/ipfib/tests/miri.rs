//! Small cases meant for Miri (`scripts/miri`), which checks the unsafe
//! code underneath them for undefined behaviour: out-of-bounds and
//! unaligned reads in the engines' unchecked lookups, the aligned buffers
//! of `mem.rs`, the Fib's snapshot handover between threads. Under Miri
//! no SIMD kernel is detected, so the scalar kernels run; the AVX2 and
//! AVX-512 paths are covered by the differential tests and fuzzing
//! instead (docs/architecture.md, "Validation"). Also part of the normal
//! test run, where they take milliseconds.

use ipfib::check::{boundary_queries, check_engines_small, check_fib_script, FibScript};
use ipfib::fib::{Fib, FibEngine, FibOptions};
use ipfib::oracle::Oracle;
use ipfib::prefix::{AnyPrefix, Prefix};
use ipfib::route_table::RouteTable;

fn table<A: ipfib::engine::Family>(routes: &[(&str, u32)]) -> Vec<(Prefix<A>, u32)>
where
    Prefix<A>: std::str::FromStr,
    <Prefix<A> as std::str::FromStr>::Err: std::fmt::Debug,
{
    routes
        .iter()
        .map(|&(p, v)| (p.parse().unwrap(), v))
        .collect()
}

fn engines_agree<A: ipfib::engine::Family>(routes: &[(Prefix<A>, u32)]) {
    let mut t = RouteTable::new();
    for &(p, v) in routes {
        t.insert(p, v).unwrap();
    }
    let oracle = Oracle::new(routes.iter().copied());
    let q = boundary_queries(routes.iter().map(|r| r.0));
    if let Err(m) = check_engines_small(&t, Some(&oracle), &q) {
        panic!("{m}");
    }
}

#[test]
fn every_engine_on_edge_tables_v4() {
    engines_agree::<u32>(&table(&[
        ("0.0.0.0/0", 1),
        ("0.0.0.0/1", 2),
        ("255.255.255.255/32", 3),
        ("10.0.0.0/8", 4),
        ("10.1.0.0/16", 5),
        ("10.1.2.3/32", 6),
        ("11.0.0.0/8", 4),
        ("128.0.0.0/9", 7),
    ]));
    engines_agree::<u32>(&[]);
}

#[test]
fn every_engine_on_edge_tables_v6() {
    engines_agree::<u128>(&table(&[
        ("::/0", 1),
        ("2000::/3", 2),
        ("2001:db8::/32", 3),
        ("2001:db8::1/128", 4),
        ("2001:db8:0:1::/64", 5),
        ("2001:db8:0:1:8000::/65", 6),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 7),
    ]));
}

#[test]
fn fib_scripts_on_small_direct_tables() {
    // First byte: engine (0 PlanB, 1..=3 Poptrie s = 0, 4, 8); then
    // max_pending, max_delay, patience; the rest are operations.
    for engine in 0..4u8 {
        let mut bytes = vec![engine, 1, 1, 0];
        let mut x = 0x9e37_79b9u32.wrapping_mul(u32::from(engine) + 1);
        for _ in 0..160 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            bytes.push(x as u8);
        }
        let script = FibScript::decode(&bytes, 40);
        if let Err(e) = check_fib_script(&script) {
            panic!("engine byte {engine}: {e}");
        }
    }
}

#[test]
fn a_reader_thread_sees_whole_versions() {
    for engine in [FibEngine::PlanB, FibEngine::Poptrie] {
        let mut opts = FibOptions::with_engine(engine);
        opts.max_pending = 1;
        opts.poptrie.direct_bits = Some(4);
        opts.validate = true;
        let mut fib: Fib<u32> = Fib::new(opts).unwrap();
        let reader = fib.reader();
        let t = std::thread::spawn(move || {
            let (mut last, mut seen) = (0, 0);
            for _ in 0..20 {
                let s = reader.snapshot();
                assert!(s.version() >= last);
                last = s.version();
                // Every version holds 10.0.0.0/8 with the latest value
                // written before it (a version published after several
                // writes shows a later one), none at 0.
                let got = s.lookup_v4(0x0a01_0203).copied();
                assert_eq!(got.is_some(), last > 0);
                let v = got.unwrap_or(0);
                assert!(v >= seen && v as u64 >= last);
                seen = v;
                std::thread::yield_now();
            }
        });
        let p: AnyPrefix = "10.0.0.0/8".parse().unwrap();
        for k in 1..=10u32 {
            fib.insert(p, k).unwrap();
        }
        t.join().unwrap();
    }
}
