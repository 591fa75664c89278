//! Snapshot figures (BENCHMARKS.md, "RIB snapshots"): write and load
//! times of a RIB snapshot, against loading the same routes from MRT.
//!
//! `cargo run --release -p ipfib-rib --example rib_snapshot [-- --passes 5 FILE.mrt[.bz2]...]`
//!
//! Every MRT file (default: the shared 2026 IPv4 and IPv6 dumps) is
//! loaded into one RIB. The snapshot is
//! written to the temporary directory and loaded `--passes` times (each a
//! new RIB, dropped before the next); medians and [min-max].

use std::path::PathBuf;
use std::time::Instant;

use ipfib_rib::{mrt, snapshot, Rib};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data");

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    let mut passes = 5usize;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--passes" => {
                passes = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--passes N")
            }
            f => files.push(f.into()),
        }
    }
    if files.is_empty() {
        files = [
            "rib.20260730.1400.first2MiB.mrt.bz2",
            "rib6.20260730.1400.first1MiB.mrt.bz2",
        ]
        .iter()
        .map(|f| PathBuf::from(DATA).join(f))
        .collect();
    }
    let rib = Rib::new();
    let t = Instant::now();
    for f in &files {
        if let Err(e) = mrt::load(f, &rib) {
            eprintln!("{}: {e}", f.display());
        }
    }
    rib.sync();
    let mrt_secs = t.elapsed().as_secs_f64();
    let routes = rib.route_count();
    println!(
        "MRT load (bzip2 included): {routes} routes, {} prefixes in {mrt_secs:.3} s ({:.2}M routes/s)",
        rib.prefix_count(),
        routes as f64 / mrt_secs / 1e6
    );
    let dir = std::env::temp_dir().join(format!("ipfib-snapshot-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let mut writes = Vec::new();
    let mut report = None;
    for _ in 0..passes {
        let t = Instant::now();
        report = Some(snapshot::write_to_dir(&rib, &dir).expect("write"));
        writes.push(t.elapsed().as_secs_f64());
    }
    let r = report.expect("a pass");
    drop(rib);
    let (w, wlo, whi) = stats(writes);
    println!(
        "write: {} bytes ({:.1} per route), {} sets, {} peers: {w:.3} s [{wlo:.3}-{whi:.3}] ({:.2}M routes/s)",
        r.bytes,
        r.bytes as f64 / r.routes as f64,
        r.sets,
        r.peers,
        r.routes as f64 / w / 1e6
    );
    let path = dir.join(snapshot::FILE);
    let mut loads = Vec::new();
    for _ in 0..passes {
        let t = Instant::now();
        let (rib, rep) = snapshot::load(&path).expect("load");
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(rep.routes, r.routes);
        loads.push(secs);
        drop(rib);
    }
    let (l, llo, lhi) = stats(loads);
    println!(
        "load: {l:.3} s [{llo:.3}-{lhi:.3}] ({:.2}M routes/s)",
        r.routes as f64 / l / 1e6
    );
    let _ = std::fs::remove_dir_all(&dir);
}
