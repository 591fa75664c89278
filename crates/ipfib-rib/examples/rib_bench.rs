//! The RIB's figures (BENCHMARKS.md, "Multi-peer RIB"): ingest from
//! recorded BMP per core, memory per route at 5 peers x the full 2026
//! tables, lookup latency with and without a writer, batch lookups, and
//! what removing one of 5 peers costs readers and the other writers.
//!
//! `cargo run --release -p ipfib-rib --example rib_bench [-- --peers 5 --passes 3 --phases ingest,real,scale,lookups,writer,removal]`
//! Reader pinned to CPU 0, writer to CPU 1. Latency: single lookups timed
//! in groups of 16 (a clock read costs ~20 ns), each group's mean is one
//! sample; p50/p99 over the samples.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_rib::attrs::{AsPath, AttrsRef, AS_SEQUENCE};
use ipfib_rib::bmp::{frame, Session};
use ipfib_rib::{PeerKey, Query, Rib, RibKind};

mod common;
use common::{lookup_samples, median, mix, pct, pin, read_all, table_2026, thread_cpu, DATA, LIVE};

/// Ingest from recorded BMP: one session, one thread; route operations
/// (announced + withdrawn NLRI) per second of that thread's CPU time.
fn ingest(passes: usize) {
    println!("## Ingest from recorded BMP (one session, one core)");
    for name in [
        "gobgp-4.8.0-rv2026-v4-full",
        "frr-8.4.4-rv2026-v4-full",
        "gobgp-4.8.0-rv2026-v6",
    ] {
        let buf = read_all(&format!("{DATA}/bmp/{name}.bmp.zst"));
        let mut cpu_rates = Vec::new();
        let mut wall_rates = Vec::new();
        let mut ops = 0;
        for _ in 0..passes {
            let rib = Arc::new(Rib::new());
            let mut s = Session::new(1, Arc::clone(&rib));
            let (c0, t0) = (thread_cpu(), Instant::now());
            let mut at = 0;
            while let Some(n) = frame(&buf[at..], 1 << 20).unwrap() {
                s.handle(&buf[at..at + n]).unwrap();
                at += n;
            }
            let (cpu, wall) = (
                (thread_cpu() - c0).as_secs_f64(),
                t0.elapsed().as_secs_f64(),
            );
            ops = s.stats.announced + s.stats.withdrawn;
            cpu_rates.push(ops as f64 / cpu / 1e6);
            wall_rates.push(ops as f64 / wall / 1e6);
        }
        let (lo, med, hi) = median(&mut cpu_rates);
        let (wlo, wmed, whi) = median(&mut wall_rates);
        println!(
            "{name}: {ops} route ops; {med:.2} M routes/s per core (CPU time) [{lo:.2}-{hi:.2}]; wall {wmed:.2} [{wlo:.2}-{whi:.2}]"
        );
    }
}

/// 5 peers x the full tables, AS paths made up but shared as in real
/// tables: per peer and origin, one path (peer AS, 0-2 transit ASes from a
/// pool of 60, origin); MED one of 3 by prefix; next hop per peer.
struct Scale {
    rib: Arc<Rib>,
    peers: Vec<Arc<ipfib_rib::PeerInfo>>,
    routes: Vec<(AnyPrefix, u32)>,
}

fn path_for(peer: usize, origin: u32) -> Vec<u32> {
    let h = mix(origin as u64 * 31 + peer as u64);
    let mut p = vec![64500 + peer as u32];
    for i in 0..(h % 3) {
        p.push(1000 + (mix(h + i) % 60) as u32);
    }
    p.push(origin);
    AsPath::encode([(AS_SEQUENCE, &p[..])])
}

/// A route's attributes: the peer's next hop, one community per origin,
/// one of 3 MEDs (by `salt`).
fn route_attrs<'a>(
    prefix: AnyPrefix,
    peer: usize,
    origin: u32,
    words: &'a [u32],
    salt: u64,
) -> AttrsRef<'a> {
    let nh = if prefix.family() == 6 {
        std::net::IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, peer as u16 + 1])
    } else {
        std::net::IpAddr::from([192, 0, 2, peer as u8 + 1])
    };
    AttrsRef {
        as_path: words,
        communities: &COMMS[(origin % 1000) as usize],
        next_hop: Some(nh),
        med: Some((mix(salt) % 3) as u32),
        ..Default::default()
    }
}

/// Community lists `[65000:k]` for k < 1000.
static COMMS: std::sync::LazyLock<Vec<[u32; 1]>> =
    std::sync::LazyLock::new(|| (0..1000).map(|k| [(65000u32 << 16) | k]).collect());

fn announce_all(s: &Scale, peer: usize, med_salt: u64) -> usize {
    let p = &s.peers[peer];
    let mut n = 0;
    for &(prefix, origin) in &s.routes {
        let words = path_for(peer, origin);
        let attrs = s.rib.intern(&route_attrs(
            prefix,
            peer,
            origin,
            &words,
            n as u64 ^ med_salt,
        ));
        s.rib.announce(p, prefix, 0, &attrs).unwrap();
        n += 1;
    }
    n
}

fn scale(npeers: usize) -> Scale {
    println!("## Scale: {npeers} peers x the 2026 tables (1.1M IPv4 + 259K IPv6)");
    let routes = table_2026();
    let rib = Arc::new(Rib::new());
    let peers: Vec<_> = (0..npeers)
        .map(|i| {
            rib.add_peer(
                1 + i as u64,
                PeerKey {
                    peer_type: 0,
                    distinguisher: 0,
                    address: std::net::IpAddr::from([127, 0, 0, i as u8 + 2]),
                    asn: 64500 + i as u32,
                    bgp_id: i as u32,
                    rib: RibKind::PrePolicy,
                },
            )
            .unwrap()
        })
        .collect();
    let s = Scale { rib, peers, routes };
    let before = LIVE.load(Ordering::Relaxed);
    let mut rates = Vec::new();
    let mut total = 0;
    for peer in 0..npeers {
        let (c0, t0) = (thread_cpu(), Instant::now());
        let n = announce_all(&s, peer, 0);
        let cpu = (thread_cpu() - c0).as_secs_f64();
        rates.push(n as f64 / cpu / 1e6);
        total += n;
        println!(
            "  peer {peer}: {n} routes in {:.2} s wall, {:.2} M routes/s per core (CPU)",
            t0.elapsed().as_secs_f64(),
            n as f64 / cpu / 1e6
        );
    }
    s.rib.sync();
    let bytes = LIVE.load(Ordering::Relaxed) - before;
    let (sets, paths, comms, _) = s.rib.attrs().counts();
    let fib = s.rib.counters().fib_bytes.load(Ordering::Relaxed);
    println!(
        "of which the prefix-id FIB: {fib} bytes = {:.1} bytes per route, {:.1} per prefix",
        fib as f64 / total as f64,
        fib as f64 / s.rib.prefix_count() as f64
    );
    println!(
        "routes {total}, prefixes {}, attribute sets {sets}, AS paths {paths}, community lists {comms}",
        s.rib.prefix_count()
    );
    println!(
        "memory: {bytes} bytes live = {:.1} bytes per route (allocator count, FIB included)",
        bytes as f64 / total as f64
    );
    let (lo, med, hi) = median(&mut rates);
    println!("RIB API ingest: {med:.2} M routes/s per core [{lo:.2}-{hi:.2}] (intern + announce per route)");
    s
}

/// Matched addresses: the first address of random prefixes.
fn addrs(s: &Scale, n: usize, v6: bool) -> Vec<AnyAddr> {
    let cands: Vec<AnyPrefix> = s
        .routes
        .iter()
        .map(|r| r.0)
        .filter(|p| (p.family() == 6) == v6)
        .collect();
    (0..n)
        .map(
            |i| match cands[(mix(i as u64) % cands.len() as u64) as usize] {
                AnyPrefix::V4(p) => AnyAddr::V4(
                    p.addr()
                        | (mix(i as u64 + 7) as u32
                            & !(u32::MAX.checked_shl(32 - p.len() as u32).unwrap_or(0))),
                ),
                AnyPrefix::V6(p) => AnyAddr::V6(p.addr()),
            },
        )
        .collect()
}

fn lookups(s: &Scale) {
    println!("## Lookups (reader on CPU 0)");
    pin(0);
    for v6 in [false, true] {
        let a = addrs(s, 1 << 20, v6);
        let _ = lookup_samples(&s.rib, &a, Duration::from_millis(300));
        let mut p50 = Vec::new();
        let mut p99 = Vec::new();
        for _ in 0..3 {
            let (mut x, _) = lookup_samples(&s.rib, &a, Duration::from_secs(1));
            p50.push(pct(&mut x, 0.5));
            p99.push(pct(&mut x, 0.99));
        }
        let (a50, m50, b50) = median(&mut p50);
        let (a99, m99, b99) = median(&mut p99);
        println!("IPv{} single, no writer: p50 {m50:.0} ns [{a50:.0}-{b50:.0}], p99 {m99:.0} ns [{a99:.0}-{b99:.0}]", if v6 { 6 } else { 4 });
    }
    // A hot set: 4,096 addresses, cache-resident after the first pass (a
    // burst of flows from a few thousand hosts; what a micro-benchmark
    // that loops over a small address list measures).
    for v6 in [false, true] {
        let a = addrs(s, 4096, v6);
        let _ = lookup_samples(&s.rib, &a, Duration::from_millis(300));
        let mut p50 = Vec::new();
        for _ in 0..3 {
            let (mut x, _) = lookup_samples(&s.rib, &a, Duration::from_secs(1));
            p50.push(pct(&mut x, 0.5));
        }
        let (a50, m50, b50) = median(&mut p50);
        println!("IPv{} single, hot set of 4,096 addresses, no writer: p50 {m50:.0} ns [{a50:.0}-{b50:.0}]", if v6 { 6 } else { 4 });
    }
    // Batch lookups (IPv4, flow enrichment path).
    let a4: Vec<u32> = addrs(s, 1 << 20, false)
        .iter()
        .map(|a| if let AnyAddr::V4(x) = a { *x } else { 0 })
        .collect();
    let mut out = vec![None; a4.len()];
    let q = Query::default();
    s.rib.lookup_batch_v4(&a4, &q, &mut out);
    let mut rates = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        s.rib.lookup_batch_v4(&a4, &q, &mut out);
        rates.push(a4.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    let (lo, med, hi) = median(&mut rates);
    let hits = out.iter().filter(|h| h.is_some()).count();
    println!("IPv4 batch (lookup_batch_v4, 1M matched): {med:.1} M lookups/s [{lo:.1}-{hi:.1}], {hits} hits");
}

/// A writer on CPU 1 re-announcing random routes of `peer` with a new MED
/// (every write copies a prefix's routes and swaps them) until stopped.
fn spawn_writer(
    s: &Scale,
    peer: usize,
) -> (Arc<AtomicBool>, Arc<AtomicU64>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let (rib, p, stop2, written2) = (
        Arc::clone(&s.rib),
        Arc::clone(&s.peers[peer]),
        Arc::clone(&stop),
        Arc::clone(&written),
    );
    let routes: Vec<(AnyPrefix, u32)> = s.routes.clone();
    let w = std::thread::Builder::new()
        .name("writer".into())
        .spawn(move || {
            pin(1);
            let mut i = 0u64;
            while !stop2.load(Ordering::Relaxed) {
                // The attribute forms of the load (one of 3 MEDs): after
                // the first pass no new attribute set is made, so memory
                // figures measure the RIB, not a growing interner.
                let (prefix, origin) = routes[(mix(i) % routes.len() as u64) as usize];
                let words = path_for(peer, origin);
                let attrs = rib.intern(&route_attrs(prefix, peer, origin, &words, i));
                rib.announce(&p, prefix, 0, &attrs).unwrap();
                i += 1;
                written2.fetch_add(1, Ordering::Relaxed);
            }
        })
        .unwrap();
    (stop, written, w)
}

/// Reader latency while a writer on CPU 1 streams updates (re-announces
/// with a new MED, so every write copies a prefix's routes and swaps).
fn with_writer(s: &Scale) {
    println!("## Lookups while one writer streams updates (writer on CPU 1)");
    let (stop, written, w) = spawn_writer(s, 1);
    pin(0);
    for v6 in [false, true] {
        let a = addrs(s, 1 << 20, v6);
        let mut p50 = Vec::new();
        let mut p99 = Vec::new();
        let w0 = written.load(Ordering::Relaxed);
        let t0 = Instant::now();
        for _ in 0..3 {
            let (mut x, _) = lookup_samples(&s.rib, &a, Duration::from_secs(1));
            p50.push(pct(&mut x, 0.5));
            p99.push(pct(&mut x, 0.99));
        }
        let wrate =
            (written.load(Ordering::Relaxed) - w0) as f64 / t0.elapsed().as_secs_f64() / 1e6;
        let (a50, m50, b50) = median(&mut p50);
        let (a99, m99, b99) = median(&mut p99);
        println!(
            "IPv{} single, 1 writer ({wrate:.2} M updates/s): p50 {m50:.0} ns [{a50:.0}-{b50:.0}], p99 {m99:.0} ns [{a99:.0}-{b99:.0}]",
            if v6 { 6 } else { 4 }
        );
    }
    stop.store(true, Ordering::Relaxed);
    w.join().unwrap();
}

/// Remove peer 0 (1.36M routes) while a reader measures latency and a
/// writer for peer 2 streams updates.
fn removal(s: &Scale) {
    println!("## Removing one of the peers while a reader and another peer's writer run");
    let (stop, written, w) = spawn_writer(s, 2);
    pin(0);
    let a = addrs(s, 1 << 20, false);
    let window = |d| {
        let w0 = written.load(Ordering::Relaxed);
        let t0 = Instant::now();
        let (mut x, _) = lookup_samples(&s.rib, &a, d);
        let rate = (written.load(Ordering::Relaxed) - w0) as f64 / t0.elapsed().as_secs_f64() / 1e6;
        (pct(&mut x, 0.5), pct(&mut x, 0.99), rate)
    };
    let (b50, b99, brate) = window(Duration::from_secs(1));
    println!("before: reader p50 {b50:.0} ns, p99 {b99:.0} ns; other peer's writer {brate:.2} M updates/s");
    let mem0 = LIVE.load(Ordering::Relaxed);
    let routes0 = s.peers[0].route_count();
    let t0 = Instant::now();
    s.rib.peer_down(s.peers[0].id);
    let hidden = t0.elapsed();
    let mut worst99: f64 = 0.0;
    let mut rates = Vec::new();
    while !s.peers[0].is_swept() && t0.elapsed() < Duration::from_secs(60) {
        let (_, p99, rate) = window(Duration::from_millis(50));
        worst99 = worst99.max(p99);
        rates.push(rate);
    }
    let swept = t0.elapsed();
    s.rib.sync();
    let freed = mem0 as f64 - LIVE.load(Ordering::Relaxed) as f64;
    let (a50, a99, arate) = window(Duration::from_secs(1));
    let (rlo, rmed, _) = if rates.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        median(&mut rates)
    };
    println!(
        "peer_down of {routes0} routes: invisible after {hidden:?}; sweeper done after {swept:?}; {:.1} MB freed ({:.0} bytes per removed route)",
        freed / 1e6,
        freed / routes0 as f64
    );
    println!("during the sweep: reader p99 worst 50-ms window {worst99:.0} ns (before {b99:.0}); writer {rmed:.2} M updates/s median, {rlo:.2} worst window (before {brate:.2})");
    println!("after: reader p50 {a50:.0} ns, p99 {a99:.0} ns; writer {arate:.2} M updates/s");
    stop.store(true, Ordering::Relaxed);
    w.join().unwrap();
    // The memory a removal gives back, measured without a writer (whose
    // new attribute sets would offset it): remove peer 3.
    s.rib.sync();
    std::thread::sleep(Duration::from_millis(100));
    let mem0 = LIVE.load(Ordering::Relaxed);
    let routes3 = s.peers[3].route_count();
    let t0 = Instant::now();
    s.rib.peer_down(s.peers[3].id);
    while !s.peers[3].is_swept() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let swept = t0.elapsed();
    std::thread::sleep(Duration::from_millis(100));
    let freed = mem0 as f64 - LIVE.load(Ordering::Relaxed) as f64;
    println!(
        "peer_down of {routes3} routes, no writer: sweeper done after {swept:?}; {:.1} MB freed ({:.0} bytes per removed route)",
        freed / 1e6,
        freed / routes3 as f64
    );
}

/// The real multi-peer dump (2026 RouteViews, 20 peers with routes):
/// lookups of uniformly random IPv4 addresses (every one matches: the dump
/// has a default route), single and batch.
fn real_dump() {
    println!("## The 2026 RouteViews RIB dump (mrt::load), random IPv4 addresses");
    let rib = Rib::new();
    let before = LIVE.load(Ordering::Relaxed);
    let t = Instant::now();
    let r =
        ipfib_rib::mrt::load(format!("{DATA}/rib.20260730.1400.first2MiB.mrt.bz2"), &rib).unwrap();
    rib.sync();
    let load = t.elapsed();
    let bytes = LIVE.load(Ordering::Relaxed) - before;
    println!(
        "{} routes of {} peers, {} prefixes: loaded in {:.2} s, {:.1} bytes per route",
        r.routes,
        r.peers,
        r.prefixes_v4 + r.prefixes_v6,
        load.as_secs_f64(),
        bytes as f64 / r.routes as f64
    );
    pin(0);
    let a4: Vec<u32> = (0..1u64 << 20).map(|i| mix(i ^ 0x5eed) as u32).collect();
    let a: Vec<AnyAddr> = a4.iter().map(|&x| AnyAddr::V4(x)).collect();
    let _ = lookup_samples(&rib, &a, Duration::from_millis(300));
    let mut p50 = Vec::new();
    for _ in 0..3 {
        let (mut x, _) = lookup_samples(&rib, &a, Duration::from_secs(1));
        p50.push(pct(&mut x, 0.5));
    }
    let (lo, med, hi) = median(&mut p50);
    println!("single: p50 {med:.0} ns [{lo:.0}-{hi:.0}]");
    let q = Query::default();
    let mut out = vec![None; a4.len()];
    rib.lookup_batch_v4(&a4, &q, &mut out);
    let mut rates = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        rib.lookup_batch_v4(&a4, &q, &mut out);
        rates.push(a4.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    let (lo, med, hi) = median(&mut rates);
    println!("batch (lookup_batch_v4): {med:.1} M lookups/s [{lo:.1}-{hi:.1}]");
}

fn main() {
    let mut npeers = 5;
    let mut passes = 3;
    let mut phases = "ingest,real,scale,lookups,writer,removal".to_string();
    let args: Vec<String> = std::env::args().collect();
    for (i, a) in args.iter().enumerate() {
        match a.as_str() {
            "--peers" => npeers = args[i + 1].parse().unwrap(),
            "--passes" => passes = args[i + 1].parse().unwrap(),
            "--phases" => phases = args[i + 1].clone(),
            _ => {}
        }
    }
    if !std::path::Path::new(DATA).is_dir() {
        println!("SKIPPED: {DATA} not found");
        return;
    }
    let on = |p: &str| phases.split(',').any(|x| x == p);
    if on("ingest") {
        ingest(passes);
    }
    if on("real") {
        real_dump();
    }
    // The later phases need the loaded RIB.
    if !(on("scale") || on("lookups") || on("writer") || on("removal")) {
        return;
    }
    let s = scale(npeers);
    if on("lookups") {
        lookups(&s);
    }
    if on("writer") {
        with_writer(&s);
    }
    if on("removal") {
        removal(&s);
    }
}
