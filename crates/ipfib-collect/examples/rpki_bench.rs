//! The RPKI figures (BENCHMARKS.md, "RPKI"): a full VRP reset and the
//! re-validation of every route of a RIB at Internet scale, an incremental
//! change of 100 VRPs, the cost of one route's statuses at answer time,
//! and memory per VRP.
//!
//! `cargo run --release -p ipfib-collect --example rpki_bench -- VRPS.json [--peers 8] [--max-vrps 500000] [--passes 5]`
//!
//! The RIB: `--peers` peers x the 2026 RouteViews tables (1.1M IPv4 +
//! 259K IPv6 prefixes, their real origins), AS paths peer AS, 0-2 transit
//! ASes of 60, origin. VRPS.json: `ipfib rov --generate-vrps` over the
//! same tables (capped at `--max-vrps`, every k-th kept); ASPAs drawn here
//! for 30% of origins and half the transit ASes. Pinned to CPU 1.

use std::time::{Duration, Instant};

use ipfib::prefix::AnyPrefix;
use ipfib_collect::rpki;
use ipfib_rib::attrs::{AsPath, AttrsRef, AS_SEQUENCE};
use ipfib_rib::{Match, PeerKey, Rib, RibKind};
use ipfib_rpki::{Aspa, Aspas, Snapshot, Vrp, VrpSet};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data");

fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET and sched_setaffinity
    // only read/write that local set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
    x ^ (x >> 33)
}

fn origin_of(v: &str) -> u32 {
    v.split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0)
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

fn median(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.parse().expect("a number"))
    };
    let vrp_file = args
        .get(1)
        .filter(|a| !a.starts_with("--"))
        .expect("usage: rpki_bench VRPS.json [--peers N] [--max-vrps N] [--passes N]");
    let npeers = flag("--peers", 8);
    let max_vrps = flag("--max-vrps", 500_000);
    let passes = flag("--passes", 5);
    pin(1);

    // The routes.
    let mut routes: Vec<(AnyPrefix, u32)> = Vec::new();
    for f in [
        "routeviews-rv2-20260730-1400.pfx2as.txt.gz",
        "routeviews-rv6-20260730-1400.pfx2as.txt.gz",
    ] {
        let l = ipfib_io::read_routes(
            std::path::Path::new(&format!("{DATA}/{f}")),
            &Default::default(),
        )
        .expect("the 2026 tables");
        routes.extend(l.routes.iter().map(|r| (r.prefix, origin_of(&r.value))));
    }
    let rib = Rib::new();
    let t = Instant::now();
    for peer in 0..npeers {
        let p = rib
            .add_peer(
                1 + peer as u64,
                PeerKey {
                    peer_type: 0,
                    distinguisher: 0,
                    address: std::net::IpAddr::from([127, 0, 0, peer as u8 + 2]),
                    asn: 64500 + peer as u32,
                    bgp_id: peer as u32,
                    rib: RibKind::PrePolicy,
                },
            )
            .unwrap();
        for &(prefix, origin) in &routes {
            let words = path_for(peer, origin);
            let attrs = rib.intern(&AttrsRef {
                as_path: &words,
                ..Default::default()
            });
            rib.announce(&p, prefix, 0, &attrs).unwrap();
        }
    }
    rib.sync();
    println!(
        "RIB: {} routes ({npeers} peers x {} prefixes) in {:.1} s",
        rib.route_count(),
        routes.len(),
        secs(t.elapsed())
    );

    // The VRPs (capped) and ASPAs.
    let all = ipfib_rpki::load_payloads(std::path::Path::new(vrp_file)).expect("the VRP file");
    // Exactly `max_vrps` spread evenly over the file (or all of them).
    let n = all.vrps.len();
    let keep = max_vrps.min(n);
    let vrps: Vec<Vrp> = (0..n)
        .filter(|&i| (i + 1) * keep / n != i * keep / n)
        .map(|i| all.vrps[i])
        .collect();
    let mut aspas = Aspas::new();
    let mut origins: Vec<u32> = routes.iter().map(|r| r.1).collect();
    origins.sort_unstable();
    origins.dedup();
    let peers_as: Vec<u32> = (0..npeers as u32).map(|i| 64500 + i).collect();
    for &o in &origins {
        if mix(o as u64) % 10 < 3 {
            let mut ps: Vec<u32> = (0..20)
                .map(|k| 1000 + (mix(o as u64 + k) % 60) as u32)
                .collect();
            ps.extend(&peers_as);
            aspas.insert(Aspa::new(o, ps));
        }
    }
    for t in 1000..1060u32 {
        if t % 2 == 0 {
            let mut ps: Vec<u32> = (1000..1060).filter(|&x| x != t).collect();
            ps.extend(&peers_as);
            aspas.insert(Aspa::new(t, ps));
        }
    }
    println!(
        "VRPs: {} (spread over the {n} of {vrp_file}); ASPAs: {}",
        vrps.len(),
        aspas.len()
    );

    // A full reset: the set from scratch, the snapshot, every route counted.
    let mut builds = Vec::new();
    let mut sweeps = Vec::new();
    let mut counts = None;
    let mut snap = Snapshot::default();
    for _ in 0..passes {
        let t = Instant::now();
        let set: VrpSet = vrps.iter().copied().collect();
        let v = set.snapshot();
        builds.push(secs(t.elapsed()));
        snap = Snapshot {
            vrps: v.into(),
            aspas: aspas.clone().into(),
            ..Default::default()
        };
        let t = Instant::now();
        let c = rpki::count(&rib, &snap);
        sweeps.push(secs(t.elapsed()));
        counts = Some(c);
    }
    let c = counts.unwrap();
    let (lo, med, hi) = median(&mut builds);
    println!(
        "full reset: set + snapshot of {} VRPs: median {:.3} s [{lo:.3}-{hi:.3}]",
        vrps.len(),
        med
    );
    let (lo, med, hi) = median(&mut sweeps);
    println!(
        "re-validation of every route (ROV + ASPA, counted per peer): {} routes, median {med:.3} s [{lo:.3}-{hi:.3}] = {:.1} M routes/s",
        c.routes,
        c.routes as f64 / med / 1e6
    );
    println!(
        "  ROV not-found/valid/invalid-as/invalid-length: {:?}; ASPA unknown/valid/invalid: {:?}",
        c.rov, c.aspa
    );

    // An incremental change through the publication path an RTR update
    // takes (`Live`): 50 VRPs removed, 50 added (at prefixes that have
    // routes), published; then the routes under the changed prefixes
    // re-validated.
    let set: VrpSet = vrps.iter().copied().collect();
    let live = ipfib_rpki::Live::new(Vec::new());
    let t = Instant::now();
    let src = live.add_set("bench".into(), set.clone(), aspas.clone());
    println!(
        "a whole set published through Live: {:.3} s",
        secs(t.elapsed())
    );
    let mut inc = Vec::new();
    let mut affected_n = 0;
    for pass in 0..passes {
        let removed: Vec<Vrp> = (0..50)
            .map(|k| vrps[(mix(pass as u64 * 1000 + k) as usize) % vrps.len()])
            .collect();
        let added: Vec<Vrp> = (0..50)
            .map(|k| {
                let (p, o) = routes[(mix(pass as u64 * 7777 + k) as usize) % routes.len()];
                Vrp::new(p, p.len(), o.wrapping_add(1)).unwrap()
            })
            .collect();
        let base = live.load();
        let t = Instant::now();
        let merged = base.vrps.with_changes(&added, &removed);
        let merge_only = t.elapsed();
        drop(merged);
        if pass == 0 {
            println!("  (the merge alone: {:.1} ms)", secs(merge_only) * 1e3);
        }
        let t = Instant::now();
        live.change_set(src, &added, &removed);
        let snap2 = live.load();
        let built = t.elapsed();
        let mut n = 0u64;
        for v in removed.iter().chain(&added) {
            for p in rib.prefixes_under(&v.prefix, None, usize::MAX) {
                for r in rib.routes_matching(&p, Match::Exact, usize::MAX) {
                    let _ = rpki::status(&snap2, &r.prefix, &r.attrs, r.peer.key.asn);
                    n += 1;
                }
            }
        }
        inc.push((secs(built), secs(t.elapsed())));
        affected_n = n;
    }
    let mut b: Vec<f64> = inc.iter().map(|x| x.0).collect();
    let mut a: Vec<f64> = inc.iter().map(|x| x.1).collect();
    let (blo, bmed, bhi) = median(&mut b);
    let (alo, amed, ahi) = median(&mut a);
    println!(
        "incremental (100 VRPs): published in median {:.1} ms [{:.1}-{:.1}]; with the {affected_n} routes under the changed prefixes re-validated: {:.1} ms [{:.1}-{:.1}]",
        bmed * 1e3, blo * 1e3, bhi * 1e3, amed * 1e3, alo * 1e3, ahi * 1e3
    );

    // One route's statuses at answer time.
    let sample: Vec<_> = (0..200_000u64)
        .map(|k| routes[(mix(k) as usize) % routes.len()].0)
        .filter_map(|p| rib.routes(&p).into_iter().next())
        .collect();
    let mut per = Vec::new();
    for _ in 0..passes {
        let t = Instant::now();
        let mut acc = 0usize;
        for r in &sample {
            let s = rpki::status(&snap, &r.prefix, &r.attrs, r.peer.key.asn);
            acc += s.rov.index() + s.aspa.index();
        }
        std::hint::black_box(acc);
        per.push(secs(t.elapsed()) / sample.len() as f64 * 1e9);
    }
    let (lo, med, hi) = median(&mut per);
    println!(
        "one route's statuses (random routes, out of cache): median {med:.0} ns [{lo:.0}-{hi:.0}]"
    );

    // Memory.
    let snap_bytes = snap.vrps.footprint_bytes();
    let set_bytes = set.len() * (std::mem::size_of::<Vrp>() + 1) * 8 / 7;
    println!(
        "memory: snapshot {snap_bytes} bytes = {:.1} bytes per VRP; the mutable set about {:.1} bytes per VRP more; ASPAs {} bytes",
        snap_bytes as f64 / snap.vrps.len() as f64,
        set_bytes as f64 / set.len() as f64,
        snap.aspas.footprint_bytes()
    );
}
