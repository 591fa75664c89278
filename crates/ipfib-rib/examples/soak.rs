//! A month of a full-table feed in minutes: does the RIB's memory follow
//! its live state?
//!
//! `cargo run --release -p ipfib-rib --example soak [-- --prefixes 500000 --peers 4 --days 30 --ops-per-day 400000]`
//! `cargo run --release -p ipfib-rib --example soak -- --burst 1000000`
//!
//! It runs on the `ipfib` command's allocator (jemalloc, through the
//! command's own `alloc.rs`); `--features system-malloc` runs it on
//! glibc's instead.
//!
//! Peers load a table of `--prefixes` random IPv4 prefixes, then each
//! simulated day runs `--ops-per-day` operations: re-announcements with a
//! new MED or community list (attribute churn), withdrawals of one prefix
//! and announcements of a never-seen one (prefix churn), and one peer's
//! flap (Peer Down, its table swept, a new Peer Up announcing the table
//! again). RSS is sampled after each day.
//!
//! At the end the live routes are written to a file and a new process of
//! this example (`--fresh FILE`) loads them into a fresh RIB: the churned
//! process's RSS growth should be within 10% of the fresh one's. Both
//! count growth over the RSS they had before their RIB took its first
//! route, with their own bookkeeping (the workload's model, the file's
//! routes) allocated and touched before that, and fixed in size after,
//! so that the difference is the RIB's alone. The RSS of the last day
//! (before the final purge and trim) is reported too. `--burst N`, in a
//! process of its own, measures what giving the heap back to the OS
//! (`heap::trim`) does after N routes come and go.

use std::collections::HashSet;
use std::io::{BufRead, Read, Write};
use std::net::IpAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipfib::prefix::{AnyPrefix, Prefix};
use ipfib_rib::attrs::{AsPath, AttrsRef, AS_SEQUENCE};
use ipfib_rib::{PeerInfo, PeerKey, Rib, RibKind};

// The integration tests' generator (one copy of it).
#[path = "../tests/common/rng.rs"]
mod rng;
use rng::Rng;

/// Resident bytes of this process.
pub fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// The `ipfib` command's allocator and its hooks (unless the
/// `system-malloc` feature asks for glibc's).
#[cfg(not(feature = "system-malloc"))]
#[path = "../../ipfib-cli/src/alloc.rs"]
mod alloc;

/// Use the allocator this example runs under; its name.
pub fn allocator() -> &'static str {
    #[cfg(not(feature = "system-malloc"))]
    {
        alloc::install();
        "jemalloc (as the ipfib command)"
    }
    #[cfg(feature = "system-malloc")]
    {
        "the system's malloc"
    }
}

/// Workload size.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub prefixes: u32,
    pub peers: u32,
    pub days: u32,
    pub ops_per_day: u32,
    pub seed: u64,
}

/// One route's attributes, as plain values: the workload's model (fixed
/// size, so that the model's own memory does not move with the churn).
#[derive(Clone, Copy, Debug, Default)]
pub struct A {
    origin: u32,
    med: Option<u32>,
    community: Option<u32>,
}

/// The live routes: `tables[peer][slot]` is the route of peer `peer` for
/// `universe[slot]`; every peer holds every prefix of the universe.
#[derive(Debug, Default)]
pub struct Live {
    pub universe: Vec<AnyPrefix>,
    pub tables: Vec<Vec<A>>,
}

impl Live {
    pub fn routes(&self) -> usize {
        self.tables.iter().map(Vec::len).sum()
    }
}

/// What a RIB held at the end of a run, and what it cost.
#[derive(Debug, Default)]
pub struct Held {
    /// RSS growth over the process's RSS before the RIB's first route.
    pub rss: u64,
    /// Heap bytes in use, the same way.
    pub heap: u64,
    pub prefixes: usize,
    pub sets: usize,
    pub peers: u32,
    /// The prefix-id FIB's heap bytes.
    pub fib: u64,
}

/// What a run measured.
#[derive(Debug)]
pub struct Report {
    /// RSS growth after each day, bytes.
    pub days: Vec<u64>,
    pub churned: Held,
    pub live: Live,
}

fn key(i: u32) -> PeerKey {
    PeerKey {
        peer_type: 0,
        distinguisher: 0,
        address: IpAddr::from([192, 0, 2, (i % 250) as u8 + 1]),
        asn: 64500 + i,
        bgp_id: i,
        rib: RibKind::PrePolicy,
    }
}

/// A random prefix /16 to /24 (the shape of a full table).
fn random_prefix(rng: &mut Rng) -> AnyPrefix {
    let r = rng.next();
    let len = 16 + (r % 9) as u8;
    AnyPrefix::V4(Prefix::host((r >> 16) as u32 & 0xdfff_ffff).truncate(len))
}

fn intern(rib: &Rib, peer: u32, a: &A) -> Arc<ipfib_rib::AttrSet> {
    let path = AsPath::encode([(AS_SEQUENCE, &[64500 + peer, 174, a.origin][..])]);
    let communities: Vec<u32> = a.community.into_iter().collect();
    rib.intern(&AttrsRef {
        as_path: &path,
        communities: &communities,
        med: a.med,
        next_hop: Some(IpAddr::from([192, 0, 2, 1])),
        ..Default::default()
    })
}

fn attrs_for(rng: &mut Rng) -> A {
    let r = rng.next();
    // About 2,000 distinct paths per peer (real tables share heavily).
    A {
        origin: 64512 + (r % 2000) as u32,
        med: (r >> 20)
            .is_multiple_of(4)
            .then_some((r >> 24) as u32 % 100),
        community: (r >> 30)
            .is_multiple_of(3)
            .then_some(174 << 16 | ((r >> 32) as u32 % 50)),
    }
}

fn settle(rib: &Rib) {
    rib.sweep();
    rib.sync();
    rib.attrs().purge();
    ipfib_rib::heap::trim();
}

/// Settle twice around a pause (the sweeper and FIB threads' last round),
/// then measure against `base` (RSS, heap in use).
fn held(rib: &Rib, base: (u64, u64)) -> Held {
    settle(rib);
    std::thread::sleep(Duration::from_millis(200));
    settle(rib);
    Held {
        rss: rss().saturating_sub(base.0),
        heap: ipfib_rib::heap::in_use().saturating_sub(base.1),
        prefixes: rib.prefix_count(),
        sets: rib.attrs().counts().0,
        peers: rib.peers().count(),
        fib: rib.counters().fib_bytes.load(Relaxed),
    }
}

/// A fresh RIB loaded with `live`, measured as [`run`] measures the
/// churned one. Run it in a process of its own for RSS that means
/// anything (see the module's documentation).
pub fn fresh(live: &Live) -> Held {
    let rib = Rib::new();
    settle(&rib);
    let base = (rss(), ipfib_rib::heap::in_use());
    load(&rib, &live.universe, &live.tables);
    held(&rib, base)
}

/// A peer per table, each announcing its route for every prefix of the
/// universe; the peers.
fn load(rib: &Rib, universe: &[AnyPrefix], tables: &[Vec<A>]) -> Vec<Arc<PeerInfo>> {
    let mut peers = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        let peer = rib.add_peer(1, key(i as u32)).expect("peer");
        for (pfx, a) in universe.iter().zip(t) {
            rib.announce(&peer, *pfx, 0, &intern(rib, i as u32, a))
                .expect("announce");
        }
        peers.push(peer);
    }
    peers
}

/// Run the soak; `log` prints progress.
pub fn run(p: Params, log: bool) -> Report {
    let mut rng = Rng(p.seed | 1);
    // The model, allocated and touched before the baseline: the universe
    // of prefixes (distinct), a set of them with room to spare (so it
    // never grows), and each peer's route per prefix.
    let mut present: HashSet<AnyPrefix> = HashSet::with_capacity(2 * p.prefixes as usize);
    let mut universe = Vec::with_capacity(p.prefixes as usize);
    while universe.len() < p.prefixes as usize {
        let pfx = random_prefix(&mut rng);
        if present.insert(pfx) {
            universe.push(pfx);
        }
    }
    let mut tables: Vec<Vec<A>> = (0..p.peers)
        .map(|_| (0..p.prefixes).map(|_| attrs_for(&mut rng)).collect())
        .collect();
    let rib = Rib::new();
    settle(&rib);
    let base = (rss(), ipfib_rib::heap::in_use());
    let mut peers = load(&rib, &universe, &tables);
    settle(&rib);
    let loaded = rss().saturating_sub(base.0);
    if log {
        println!(
            "loaded: {} peers x {} prefixes, RSS +{} MB",
            p.peers,
            universe.len(),
            loaded >> 20
        );
    }
    let mut days = Vec::new();
    let t0 = Instant::now();
    for day in 0..p.days {
        for _ in 0..p.ops_per_day {
            let i = (rng.next() % p.peers as u64) as usize;
            let r = rng.next() % 10;
            let slot = (rng.next() % universe.len() as u64) as usize;
            let pfx = universe[slot];
            if r < 6 {
                // Attribute churn: a new MED or community on a live route.
                let a = &mut tables[i][slot];
                a.med = Some((rng.next() % 1_000_000) as u32);
                if rng.next().is_multiple_of(2) {
                    a.community = Some((rng.next() as u32) & 0xffff);
                }
                let set = intern(&rib, i as u32, a);
                rib.announce(&peers[i], pfx, 0, &set).expect("announce");
            } else {
                // Prefix churn: the prefix goes from every peer; a prefix
                // not in the universe takes its place.
                for peer in &peers {
                    rib.withdraw(peer, pfx, 0);
                }
                present.remove(&pfx);
                let new = loop {
                    let new = random_prefix(&mut rng);
                    if present.insert(new) {
                        break new;
                    }
                };
                universe[slot] = new;
                for (j, peer) in peers.iter().enumerate() {
                    let a = attrs_for(&mut rng);
                    rib.announce(peer, new, 0, &intern(&rib, j as u32, &a))
                        .expect("announce");
                    tables[j][slot] = a;
                }
            }
        }
        // One flap a day: Peer Down, swept, a new Peer Up with its table.
        let i = day as usize % peers.len();
        rib.peer_down(peers[i].id);
        rib.sweep();
        let peer = rib.add_peer(1, key(i as u32)).expect("peer");
        for (pfx, a) in universe.iter().zip(&tables[i]) {
            rib.announce(&peer, *pfx, 0, &intern(&rib, i as u32, a))
                .expect("announce");
        }
        peers[i] = peer;
        rib.sync();
        let now = rss().saturating_sub(base.0);
        days.push(now);
        if log {
            println!(
                "day {:2}: RSS +{:4} MB, heap in use +{:4} MB, prefixes {}, attribute sets {} (room {:?}), peers {}, ids {:?}, FIB full builds {} waiting {} ({:.0?})",
                day + 1,
                now >> 20,
                ipfib_rib::heap::in_use().saturating_sub(base.1) >> 20,
                rib.prefix_count(),
                rib.attrs().counts().0,
                rib.attrs().capacities(),
                rib.peers().count(),
                rib.prefix_ids(),
                rib.fib_stats().full_builds,
                rib.fib_stats().waiting,
                t0.elapsed()
            );
        }
    }
    let churned = held(&rib, base);
    let live = Live { universe, tables };
    assert_eq!(
        rib.route_count() as usize,
        live.routes(),
        "the RIB lost or kept routes"
    );
    Report {
        days,
        churned,
        live,
    }
}

/// `live` as a file for `--fresh`: one line a route slot,
/// `prefix origin med community` per peer (`-` for none).
fn write_live(live: &Live, path: &std::path::Path) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let mut w = std::io::BufWriter::new(file);
    writeln!(w, "{}", live.tables.len())?;
    let opt = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
    for (slot, pfx) in live.universe.iter().enumerate() {
        write!(w, "{pfx}")?;
        for t in &live.tables {
            let a = t[slot];
            write!(w, " {} {} {}", a.origin, opt(a.med), opt(a.community))?;
        }
        writeln!(w)?;
    }
    w.flush()
}

fn read_live(path: &std::path::Path) -> Live {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .expect("read the live routes");
    let mut lines = text.lines();
    let peers: usize = lines.next().and_then(|l| l.parse().ok()).expect("peers");
    let mut live = Live {
        universe: Vec::new(),
        tables: vec![Vec::new(); peers],
    };
    let opt = |s: &str| (s != "-").then(|| s.parse::<u32>().expect("number"));
    for line in lines {
        let f: Vec<&str> = line.split(' ').collect();
        live.universe.push(f[0].parse().expect("prefix"));
        for (j, t) in live.tables.iter_mut().enumerate() {
            let g = &f[1 + 3 * j..4 + 3 * j];
            t.push(A {
                origin: g[0].parse().expect("origin"),
                med: opt(g[1]),
                community: opt(g[2]),
            });
        }
    }
    live
}

/// Load `live` into a fresh RIB in a new process of this example.
fn fresh_in_child(live: &Live) -> Held {
    let path = std::env::temp_dir().join(format!("ipfib-soak-{}.txt", std::process::id()));
    write_live(live, &path).expect("write the live routes");
    let out = std::process::Command::new(std::env::current_exe().expect("this example"))
        .arg("--fresh")
        .arg(&path)
        .output()
        .expect("run the fresh load");
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success(), "fresh load: {:?}", out);
    let line = out
        .stdout
        .lines()
        .map_while(Result::ok)
        .last()
        .expect("a report");
    let n: Vec<u64> = line
        .split_whitespace()
        .map(|w| w.parse().expect("number"))
        .collect();
    Held {
        rss: n[0],
        heap: n[1],
        prefixes: n[2] as usize,
        sets: n[3] as usize,
        peers: n[4] as u32,
        fib: n[5],
    }
}

/// A burst of `n` extra routes that come and go: RSS before, at the
/// peak, after they are withdrawn (untrimmed), after `heap::trim`.
pub fn burst(n: u32, log: bool) -> [u64; 4] {
    let rib = Rib::new();
    let peer = rib.add_peer(1, key(0)).expect("peer");
    let mut rng = Rng(7);
    let keep: Vec<AnyPrefix> = (0..n / 10).map(|_| random_prefix(&mut rng)).collect();
    for &pfx in &keep {
        rib.announce(&peer, pfx, 0, &intern(&rib, 0, &attrs_for(&mut rng)))
            .expect("announce");
    }
    settle(&rib);
    let before = rss();
    let mut burst = Vec::new();
    for k in 0..n {
        let pfx = AnyPrefix::V4(Prefix::new(0xe000_0000 | k << 4, 28).expect("len"));
        rib.announce(&peer, pfx, 0, &intern(&rib, 0, &attrs_for(&mut rng)))
            .expect("announce");
        burst.push(pfx);
    }
    rib.sync();
    let peak = rss();
    for pfx in burst {
        rib.withdraw(&peer, pfx, 0);
    }
    rib.sync();
    rib.attrs().purge();
    let untrimmed = rss();
    ipfib_rib::heap::trim();
    let trimmed = rss();
    if log {
        println!(
            "burst of {n} routes over {}: RSS {} MB, peak {} MB, withdrawn {} MB, after heap::trim {} MB \
             (heap in use {} MB, prefix-id FIB {} MB, prefixes {}, ids {:?})",
            keep.len(),
            before >> 20,
            peak >> 20,
            untrimmed >> 20,
            trimmed >> 20,
            ipfib_rib::heap::in_use() >> 20,
            rib.counters().fib_bytes.load(Relaxed) >> 20,
            rib.prefix_count(),
            rib.prefix_ids(),
        );
    }
    [before, peak, untrimmed, trimmed]
}

#[allow(dead_code)]
pub fn main() {
    let mut p = Params {
        prefixes: 500_000,
        peers: 4,
        days: 30,
        ops_per_day: 400_000,
        seed: 0x5eed,
    };
    let alloc = allocator();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, path] = &args[..] {
        if flag == "--fresh" {
            let live = read_live(std::path::Path::new(path));
            let h = fresh(&live);
            println!(
                "{} {} {} {} {} {}",
                h.rss, h.heap, h.prefixes, h.sets, h.peers, h.fib
            );
            return;
        }
    }
    for w in args.chunks(2) {
        let v = || {
            w.get(1)
                .and_then(|v| v.parse::<u32>().ok())
                .expect("a number")
        };
        match w[0].as_str() {
            "--prefixes" => p.prefixes = v(),
            "--peers" => p.peers = v(),
            "--days" => p.days = v(),
            "--ops-per-day" => p.ops_per_day = v(),
            "--burst" => {
                println!("allocator: {alloc}");
                burst(v(), true);
                return;
            }
            other => panic!("unknown option {other}"),
        }
    }
    println!("allocator: {alloc}");
    let r = run(p, true);
    let f = fresh_in_child(&r.live);
    let c = &r.churned;
    println!(
        "end: churned RIB RSS +{} MB (heap in use +{} MB), a fresh process with the same {} routes +{} MB (+{} MB); \
         prefixes {} vs {}, attribute sets {} vs {}, peers {} vs {}, FIB {} vs {} MB",
        c.rss >> 20,
        c.heap >> 20,
        r.live.routes(),
        f.rss >> 20,
        f.heap >> 20,
        c.prefixes,
        f.prefixes,
        c.sets,
        f.sets,
        c.peers,
        f.peers,
        c.fib >> 20,
        f.fib >> 20
    );
    let ratio = c.rss as f64 / f.rss.max(1) as f64;
    let last = r.days.last().copied().unwrap_or(0);
    println!(
        "churned / fresh RSS = {ratio:.3} (target <= 1.10); on the last day, before the final purge and trim: +{} MB ({:.3})",
        last >> 20,
        last as f64 / f.rss.max(1) as f64
    );
}
