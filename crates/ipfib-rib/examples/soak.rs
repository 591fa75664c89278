//! A month of a full-table feed in minutes: does the RIB's memory follow
//! its live state?
//!
//! `cargo run --release -p ipfib-rib --example soak [-- --prefixes 500000 --peers 4 --days 30 --ops-per-day 400000]`
//!
//! Peers load a table of `--prefixes` random IPv4 prefixes, then each
//! simulated day runs `--ops-per-day` operations: re-announcements with a
//! new MED or community list (attribute churn), withdrawals of one prefix
//! and announcements of a never-seen one (prefix churn), and one peer's
//! flap (Peer Down, its table swept, a new Peer Up announcing the table
//! again). RSS is sampled after each day. At the end the live routes are
//! copied out, the churned RIB dropped, and a fresh RIB loaded with the
//! same routes: the churned RIB's memory should be within 10% of the
//! fresh one's. A burst phase then measures what giving the heap back to
//! the OS (malloc_trim) does after a million routes come and go.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use ipfib::prefix::{AnyPrefix, Prefix};
use ipfib_rib::attrs::{AsPath, AttrsRef, AS_SEQUENCE};
use ipfib_rib::{PeerInfo, PeerKey, Rib, RibKind};

/// Resident bytes of this process.
pub fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// Heap bytes in use (glibc's count), to tell held memory from free
/// memory the allocator keeps.
pub fn heap_in_use() -> u64 {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 takes no arguments and returns a plain struct
        // of counters; it only reads the allocator's statistics.
        let m = unsafe { libc::mallinfo2() };
        m.uordblks as u64
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        0
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

/// What a run measured.
#[derive(Debug)]
pub struct Report {
    /// RSS after each day, bytes.
    pub days: Vec<u64>,
    /// RSS growth of the churned RIB over the baseline, and of a fresh RIB
    /// holding the same live routes.
    pub churned: u64,
    pub fresh: u64,
    pub live_routes: usize,
    pub prefixes_churned: usize,
    pub prefixes_fresh: usize,
    pub sets_churned: usize,
    pub sets_fresh: usize,
    pub peers_churned: u32,
    /// The prefix-id FIB's heap bytes, churned and fresh.
    pub fib_churned: u64,
    pub fib_fresh: u64,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
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

/// One route's attributes, as plain values (to rebuild a fresh RIB).
#[derive(Clone)]
struct A {
    path: Vec<u32>,
    med: Option<u32>,
    communities: Vec<u32>,
}

fn intern(rib: &Rib, a: &A) -> std::sync::Arc<ipfib_rib::AttrSet> {
    rib.intern(&AttrsRef {
        as_path: &a.path,
        communities: &a.communities,
        med: a.med,
        next_hop: Some(IpAddr::from([192, 0, 2, 1])),
        ..Default::default()
    })
}

fn attrs_for(rng: &mut Rng, peer: u32) -> A {
    let r = rng.next();
    // About 2,000 distinct paths per peer (real tables share heavily).
    let origin = 64512 + (r % 2000) as u32;
    A {
        path: AsPath::encode([(AS_SEQUENCE, &[64500 + peer, 174, origin][..])]),
        med: (r >> 20)
            .is_multiple_of(4)
            .then_some((r >> 24) as u32 % 100),
        communities: if (r >> 30).is_multiple_of(3) {
            vec![174 << 16 | ((r >> 32) as u32 % 50)]
        } else {
            Vec::new()
        },
    }
}

fn settle(rib: &Rib) {
    rib.sweep();
    rib.sync();
    rib.attrs().purge();
    ipfib_rib::heap::trim();
}

/// Run the soak; `log` prints progress.
pub fn run(p: Params, log: bool) -> Report {
    let mut rng = Rng(p.seed | 1);
    settle(&Rib::new());
    let base = rss();
    let rib = Rib::new();
    let mut peers: Vec<std::sync::Arc<PeerInfo>> = Vec::new();
    // Each peer's table: prefix -> attrs (the live state, also the model).
    let mut tables: Vec<std::collections::HashMap<AnyPrefix, A>> = Vec::new();
    let mut universe: Vec<AnyPrefix> = (0..p.prefixes).map(|_| random_prefix(&mut rng)).collect();
    universe.sort_unstable();
    universe.dedup();
    for i in 0..p.peers {
        let peer = rib.add_peer(1, key(i)).expect("peer");
        let mut t = std::collections::HashMap::new();
        for &pfx in &universe {
            let a = attrs_for(&mut rng, i);
            rib.announce(&peer, pfx, 0, &intern(&rib, &a))
                .expect("announce");
            t.insert(pfx, a);
        }
        peers.push(peer);
        tables.push(t);
    }
    settle(&rib);
    if log {
        println!(
            "loaded: {} peers x {} prefixes, RSS +{} MB",
            p.peers,
            universe.len(),
            (rss() - base) >> 20
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
                if let Some(a) = tables[i].get_mut(&pfx) {
                    a.med = Some((rng.next() % 1_000_000) as u32);
                    if rng.next().is_multiple_of(2) {
                        a.communities = vec![(rng.next() as u32) & 0xffff];
                    }
                    let set = intern(&rib, a);
                    rib.announce(&peers[i], pfx, 0, &set).expect("announce");
                }
            } else {
                // Prefix churn: the prefix goes from every peer; a new one
                // takes its place in the universe.
                for (j, peer) in peers.iter().enumerate() {
                    if tables[j].remove(&pfx).is_some() {
                        rib.withdraw(peer, pfx, 0);
                    }
                }
                let new = random_prefix(&mut rng);
                universe[slot] = new;
                for (j, peer) in peers.iter().enumerate() {
                    let a = attrs_for(&mut rng, j as u32);
                    rib.announce(peer, new, 0, &intern(&rib, &a))
                        .expect("announce");
                    tables[j].insert(new, a);
                }
            }
        }
        // One flap a day: Peer Down, swept, a new Peer Up with its table.
        let i = day as usize % peers.len();
        rib.peer_down(peers[i].id);
        rib.sweep();
        let peer = rib.add_peer(1, key(i as u32)).expect("peer");
        for (pfx, a) in &tables[i] {
            rib.announce(&peer, *pfx, 0, &intern(&rib, a))
                .expect("announce");
        }
        peers[i] = peer;
        rib.sync();
        let now = rss();
        days.push(now);
        if log {
            println!(
                "day {:2}: RSS +{:4} MB, prefixes {}, attribute sets {}, peers {}, ids {:?} ({:.0?})",
                day + 1,
                (now.saturating_sub(base)) >> 20,
                rib.prefix_count(),
                rib.attrs().counts().0,
                rib.peers().count(),
                rib.prefix_ids(),
                t0.elapsed()
            );
        }
    }
    // Give the sweeper and the FIB thread their last round, then measure.
    settle(&rib);
    std::thread::sleep(Duration::from_millis(200));
    settle(&rib);
    let with_churned = rss();
    let fib_churned = rib
        .counters()
        .fib_bytes
        .load(std::sync::atomic::Ordering::Relaxed);
    let live_routes: usize = tables.iter().map(|t| t.len()).sum();
    let prefixes_churned = rib.prefix_count();
    let sets_churned = rib.attrs().counts().0;
    let peers_churned = rib.peers().count();
    assert_eq!(
        rib.route_count() as usize,
        live_routes,
        "the RIB lost or kept routes"
    );
    drop(peers);
    drop(rib);
    settle(&Rib::new());
    let base2 = rss();
    // What the churned RIB held: what dropping it gave back.
    let churned = with_churned.saturating_sub(base2);
    let fresh_rib = Rib::new();
    for (i, t) in tables.iter().enumerate() {
        let peer = fresh_rib.add_peer(1, key(i as u32)).expect("peer");
        for (pfx, a) in t {
            fresh_rib
                .announce(&peer, *pfx, 0, &intern(&fresh_rib, a))
                .expect("announce");
        }
    }
    settle(&fresh_rib);
    std::thread::sleep(Duration::from_millis(200));
    settle(&fresh_rib);
    let fresh = rss().saturating_sub(base2);
    let fib_fresh = fresh_rib
        .counters()
        .fib_bytes
        .load(std::sync::atomic::Ordering::Relaxed);
    let report = Report {
        days,
        churned,
        fresh,
        live_routes,
        prefixes_churned,
        prefixes_fresh: fresh_rib.prefix_count(),
        sets_churned,
        sets_fresh: fresh_rib.attrs().counts().0,
        peers_churned,
        fib_churned,
        fib_fresh,
    };
    if log {
        println!(
            "end: churned RIB +{} MB, fresh RIB with the same {} routes +{} MB ({:+.1}%); \
             prefixes {} vs {}, attribute sets {} vs {}, peers {}, FIB {} vs {} MB",
            churned >> 20,
            live_routes,
            fresh >> 20,
            (churned as f64 / fresh.max(1) as f64 - 1.0) * 100.0,
            report.prefixes_churned,
            report.prefixes_fresh,
            report.sets_churned,
            report.sets_fresh,
            peers_churned,
            report.fib_churned >> 20,
            report.fib_fresh >> 20
        );
    }
    report
}

/// A burst of `n` extra routes that come and go: RSS before, at the
/// peak, after they are withdrawn (untrimmed), after malloc_trim.
pub fn burst(n: u32, log: bool) -> [u64; 4] {
    let rib = Rib::new();
    let peer = rib.add_peer(1, key(0)).expect("peer");
    let mut rng = Rng(7);
    let keep: Vec<AnyPrefix> = (0..n / 10).map(|_| random_prefix(&mut rng)).collect();
    for &pfx in &keep {
        rib.announce(&peer, pfx, 0, &intern(&rib, &attrs_for(&mut rng, 0)))
            .expect("announce");
    }
    settle(&rib);
    let before = rss();
    let mut burst = Vec::new();
    for k in 0..n {
        let pfx = AnyPrefix::V4(Prefix::new(0xe000_0000 | k << 4, 28).expect("len"));
        rib.announce(&peer, pfx, 0, &intern(&rib, &attrs_for(&mut rng, 0)))
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
            "burst of {n} routes over {}: RSS {} MB, peak {} MB, withdrawn {} MB, after malloc_trim {} MB \
             (heap in use {} MB, prefix-id FIB {} MB, prefixes {}, ids {:?})",
            keep.len(),
            before >> 20,
            peak >> 20,
            untrimmed >> 20,
            trimmed >> 20,
            heap_in_use() >> 20,
            rib.counters().fib_bytes.load(std::sync::atomic::Ordering::Relaxed) >> 20,
            rib.prefix_count(),
            rib.prefix_ids(),
        );
    }
    [before, peak, untrimmed, trimmed]
}

#[allow(dead_code)]
fn main() {
    let mut p = Params {
        prefixes: 500_000,
        peers: 4,
        days: 30,
        ops_per_day: 400_000,
        seed: 0x5eed,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
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
                burst(v(), true);
                return;
            }
            other => panic!("unknown option {other}"),
        }
    }
    burst(1_000_000, true);
    let r = run(p, true);
    let ratio = r.churned as f64 / r.fresh.max(1) as f64;
    println!("churned / fresh = {ratio:.3} (target <= 1.10)");
}
