//! Helpers the RIB benchmarks share (rib_bench.rs, rib_scale.rs): the
//! counting allocator, CPU pinning, timing and percentiles, the data
//! directory, matched addresses. Not an example itself (a directory
//! without main.rs), included with `mod common;`.
#![allow(dead_code)] // each example uses a subset

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ipfib::prefix::AnyAddr;
use ipfib_rib::{Query, Rib};

pub struct Counting;
pub static LIVE: AtomicUsize = AtomicUsize::new(0);
// SAFETY: forwards to the system allocator unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: `p` came from `alloc` with this layout.
        unsafe { System.dealloc(p, l) }
    }
}
#[global_allocator]
static A: Counting = Counting;

/// Bytes live on the heap (the counting allocator's count).
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

pub const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data");

pub fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET and sched_setaffinity
    // only read/write that local set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the current thread's CPU clock into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Process resident set size in bytes (/proc/self/statm), 0 if unknown.
pub fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf only reads a system constant.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// (min, median, max); sorts `v`.
pub fn median(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

/// The `p` quantile (0..=1); sorts `v`.
pub fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p) as usize]
}

pub fn read_all(path: &str) -> Vec<u8> {
    let mut b = Vec::new();
    ipfib_io::open_maybe_compressed(std::path::Path::new(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .read_to_end(&mut b)
        .unwrap();
    b
}

/// The origin AS of a pfx2as value (the first of a multi-origin `a_b`).
pub fn origin_of(v: &str) -> u32 {
    v.split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0)
}

/// A 64-bit mixer (splitmix64's finaliser): deterministic pseudo-random
/// draws keyed by what they are for.
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
    x ^ (x >> 33)
}

/// Group means of single lookups (ns), for `dur`: lookups timed in
/// groups of 16 (a clock read costs ~20 ns), each group's mean one sample.
pub fn lookup_samples(rib: &Rib, a: &[AnyAddr], dur: Duration) -> (Vec<f64>, u64) {
    let q = Query::default();
    let mut samples = Vec::new();
    let mut found = 0u64;
    let t0 = Instant::now();
    let mut i = 0;
    while t0.elapsed() < dur {
        let t = Instant::now();
        for _ in 0..16 {
            found += rib
                .lookup_with(a[i % a.len()], &q, |p, e| {
                    p.len() as u64 + e.attrs.origin_asn.unwrap_or(0) as u64
                })
                .unwrap_or(0);
            i += 1;
        }
        samples.push(t.elapsed().as_nanos() as f64 / 16.0);
    }
    (samples, found)
}

/// The 2026 RouteViews IPv4 and IPv6 tables as (prefix, origin AS).
pub fn table_2026() -> Vec<(ipfib::prefix::AnyPrefix, u32)> {
    let mut routes = Vec::new();
    for f in [
        "routeviews-rv2-20260730-1400.pfx2as.txt.gz",
        "routeviews-rv6-20260730-1400.pfx2as.txt.gz",
    ] {
        let l = ipfib_io::read_routes(
            std::path::Path::new(&format!("{DATA}/{f}")),
            &Default::default(),
        )
        .unwrap();
        routes.extend(l.routes.iter().map(|r| (r.prefix, origin_of(&r.value))));
    }
    routes
}
