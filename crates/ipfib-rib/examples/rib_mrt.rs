//! Load an MRT RIB dump into a RIB and dump it back, with the figures:
//! load time and routes/s, bytes per route (a counting global allocator:
//! live bytes after the load minus before, over routes), distinct
//! attribute sets / AS paths / community lists, dump time and size.
//!
//! ```text
//! cargo run --release -p ipfib-rib --example rib_mrt -- [FILE.mrt[.bz2|.gz|.zst]] [--runs N]
//! ```
//! FILE defaults to ../shared/data/rib.20260730.1400.first2MiB.mrt.bz2.
//! Each run starts from an empty RIB; the summary gives the median and
//! range over the runs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

use ipfib_rib::mrt;
use ipfib_rib::Rib;

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: `p` came from this allocator with `layout`.
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above; the caller keeps realloc's contract.
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Run {
    /// `mrt::load` alone, and until lookups see every prefix.
    load_only_s: f64,
    load_cpu_s: Option<f64>,
    load_s: f64,
    routes_per_s: f64,
    bytes_per_route: f64,
    dump_s: f64,
    dump_bytes: u64,
}

fn median_range(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut file = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/rib.20260730.1400.first2MiB.mrt.bz2"
    ));
    let mut runs = 3usize;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => {
                runs = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| fail("--runs needs a number"))
            }
            _ => file = PathBuf::from(a),
        }
    }
    let out = std::env::temp_dir().join(format!("ipfib-rib-mrt-{}.mrt", std::process::id()));
    println!("file: {}", file.display());
    let mut results = Vec::new();
    for run in 1..=runs.max(1) {
        let rib = Rib::new();
        rib.sync();
        let before = LIVE.load(Ordering::Relaxed);
        let t = Instant::now();
        let cpu = thread_cpu_s();
        let report = mrt::load(&file, &rib).unwrap_or_else(|e| fail(&e.to_string()));
        let load_cpu_s = thread_cpu_s().zip(cpu).map(|(b, a)| b - a);
        // Make the prefixes visible to lookups: the FIB is part of the
        // RIB's memory.
        rib.sync();
        let load_s = t.elapsed().as_secs_f64();
        let after = LIVE.load(Ordering::Relaxed);
        let routes = report.routes.max(1) as f64;
        let (sets, paths, comms, large) = rib.attrs().counts();
        println!(
            "run {run}: {report}\n  attribute sets decoded {} (the rest reused identical bytes)\n  \
             distinct: {sets} attribute sets, {paths} AS paths, {comms} community lists, \
             {large} large-community lists ({:.1} routes per set)",
            report.attr_decodes,
            routes / sets.max(1) as f64
        );
        let t = Instant::now();
        let f = std::fs::File::create(&out).unwrap_or_else(|e| fail(&e.to_string()));
        let d = mrt::dump(&rib, f).unwrap_or_else(|e| fail(&e.to_string()));
        let dump_s = t.elapsed().as_secs_f64();
        println!(
            "  dump: {} records, {} peers, {} routes, {} bytes in {dump_s:.3} s",
            d.records, d.peers, d.routes, d.bytes
        );
        let r = Run {
            load_only_s: report.elapsed.as_secs_f64(),
            load_cpu_s,
            load_s,
            routes_per_s: routes / load_s,
            bytes_per_route: (after - before) as f64 / routes,
            dump_s,
            dump_bytes: d.bytes,
        };
        println!(
            "  mrt::load {:.3} s ({} s CPU of the loading thread); {:.3} s until visible to \
             lookups ({:.0} routes/s); {:.1} bytes/route ({} bytes live)",
            r.load_only_s,
            r.load_cpu_s.map_or("?".to_string(), |c| format!("{c:.3}")),
            r.load_s,
            r.routes_per_s,
            r.bytes_per_route,
            after - before
        );
        results.push(r);
        drop(rib);
    }
    let _ = std::fs::remove_file(&out);
    let show = |name: &str, unit: &str, v: Vec<f64>| {
        let (m, lo, hi) = median_range(v);
        println!("{name}: median {m:.3} {unit} (range {lo:.3} - {hi:.3})");
    };
    println!("over {} runs:", results.len());
    show(
        "mrt::load",
        "s",
        results.iter().map(|r| r.load_only_s).collect(),
    );
    if results.iter().all(|r| r.load_cpu_s.is_some()) {
        show(
            "mrt::load CPU (loading thread)",
            "s",
            results.iter().filter_map(|r| r.load_cpu_s).collect(),
        );
    }
    show(
        "load until visible to lookups",
        "s",
        results.iter().map(|r| r.load_s).collect(),
    );
    show(
        "routes/s",
        "",
        results.iter().map(|r| r.routes_per_s).collect(),
    );
    show(
        "bytes/route",
        "B",
        results.iter().map(|r| r.bytes_per_route).collect(),
    );
    show("dump", "s", results.iter().map(|r| r.dump_s).collect());
    show(
        "dump size",
        "bytes",
        results.iter().map(|r| r.dump_bytes as f64).collect(),
    );
}

/// CPU time of the calling thread (Linux: /proc/thread-self/schedstat,
/// nanoseconds on the CPU).
fn thread_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

fn fail(msg: &str) -> ! {
    eprintln!("rib_mrt: {msg}");
    std::process::exit(1)
}
