//! Scale benchmark: the RIB at N full-table peers (default 20), each
//! peer holding the whole 2026 RouteViews IPv4 + IPv6 table (1,366,894
//! prefixes, origin AS from pfx2as), attributes drawn so that sharing per
//! route matches the real 20-peer dump (rib.20260730.1400.first2MiB).
//!
//! `cargo run --release -p ipfib-rib --example rib_scale -- [--peers 20] [--passes 3] [--phases stats,load,writer-max,lookups,removal,gen-stats,snapshot] [--keep-snapshot DIR]`
//! (bench/rib-scale/run.sh runs 20 and 5 peers and prints one table).
//!
//! Phases: `stats` measures sharing on the real dump; `load` builds the
//! RIB `passes` times via intern + announce (memory from the first
//! build); `writer-max` the update writer's capacity alone; `lookups`
//! single lookups (p50/p99 of 16-lookup group means, matched addresses,
//! reader on CPU 0) without and with a writer at 200K updates/s (CPU 1),
//! and `lookup_batch_v4`; `removal` a full-table peer's Peer Down under a
//! reader and the paced writer, then alone for the memory given back;
//! `gen-stats` sharing measured on the generated RIB itself.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_rib::attrs::{AsPath, AttrSet, AttrsRef, AS_SEQUENCE};
use ipfib_rib::{Origin, PeerInfo, PeerKey, Query, Rib, RibKind};

mod common;
use common::{live, lookup_samples, median, mix, pct, pin, rss, table_2026, thread_cpu, DATA};

/// Attribute sharing of a RIB, measured by walking it.
#[derive(Default, Debug)]
struct Sharing {
    prefixes: u64,
    routes: u64,
    peers: usize,
    sets: usize,
    paths: usize,
    comms: usize,
    next_hops: usize,
    origins: usize,
    /// Peer pairs on one prefix (both have a route), and those of them
    /// whose routes point to one attribute set / one AS path.
    pairs: u64,
    pairs_same_set: u64,
    pairs_same_path: u64,
    /// Routes whose set another route of the same prefix also has.
    routes_set_shared_in_prefix: u64,
    /// Sets used by more than one peer.
    sets_multi_peer: usize,
    /// AS paths used by more than one peer.
    paths_multi_peer: usize,
    /// Distinct (peer, origin) pairs, and distinct (peer, origin, path)
    /// and (peer, origin, set).
    peer_origin: usize,
    peer_origin_path: usize,
    peer_origin_set: usize,
    /// Per route: AS path selection length (capped at 15), community list
    /// length buckets 0,1,2,3-4,5-8,9-16,17-32,33+.
    path_len: [u64; 16],
    comm_len: [u64; 8],
    med_present: u64,
    /// Distinct MED values.
    meds: usize,
    /// Routes with ORIGIN IGP, EGP, INCOMPLETE; with large communities.
    origin_attr: [u64; 3],
    large_present: u64,
    /// Routes per set: sets used by 1, 2-3, 4-7, ... routes (log2 buckets).
    set_use: [u64; 24],
}

fn comm_bucket(n: usize) -> usize {
    match n {
        0 => 0,
        1 => 1,
        2 => 2,
        3..=4 => 3,
        5..=8 => 4,
        9..=16 => 5,
        17..=32 => 6,
        _ => 7,
    }
}

fn sharing(rib: &Rib) -> Sharing {
    let mut s = Sharing::default();
    let mut sets: HashMap<usize, (u32, bool, u64)> = HashMap::new(); // ptr -> (first peer, multi, uses)
    let mut paths: HashMap<usize, (u32, bool)> = HashMap::new();
    let mut comms: HashSet<usize> = HashSet::new();
    let mut nhs = HashSet::new();
    let mut origins = HashSet::new();
    let mut meds = HashSet::new();
    let mut peers = HashSet::new();
    let mut po = HashSet::new();
    let mut pop = HashSet::new();
    let mut pos = HashSet::new();
    let mut counts: HashMap<usize, u64> = HashMap::new();
    let mut pcounts: HashMap<usize, u64> = HashMap::new();
    rib.for_each_prefix(|r| {
        if r.is_empty() {
            return;
        }
        s.prefixes += 1;
        counts.clear();
        pcounts.clear();
        let n = r.len() as u64;
        for e in r.iter() {
            let a = &e.attrs;
            let sp = Arc::as_ptr(a) as usize;
            let pp = Arc::as_ptr(&a.as_path.0) as *const u32 as usize;
            s.routes += 1;
            peers.insert(e.peer);
            let st = sets.entry(sp).or_insert((e.peer, false, 0));
            st.1 |= st.0 != e.peer;
            st.2 += 1;
            let pt = paths.entry(pp).or_insert((e.peer, false));
            pt.1 |= pt.0 != e.peer;
            comms.insert(Arc::as_ptr(&a.communities) as *const u32 as usize);
            nhs.insert(a.next_hop);
            let o = a.origin_asn.unwrap_or(0);
            origins.insert(o);
            po.insert((e.peer, o));
            pop.insert((e.peer, o, pp));
            pos.insert((e.peer, o, sp));
            s.path_len[(a.as_path.selection_len() as usize).min(15)] += 1;
            s.comm_len[comm_bucket(a.communities.len())] += 1;
            s.origin_attr[a.origin as usize] += 1;
            s.large_present += u64::from(!a.large_communities.is_empty());
            if let Some(m) = a.med {
                s.med_present += 1;
                meds.insert(m);
            }
            *counts.entry(sp).or_default() += 1;
            *pcounts.entry(pp).or_default() += 1;
        }
        s.pairs += n * (n - 1) / 2;
        for &c in counts.values() {
            s.pairs_same_set += c * (c - 1) / 2;
            if c > 1 {
                s.routes_set_shared_in_prefix += c;
            }
        }
        for &c in pcounts.values() {
            s.pairs_same_path += c * (c - 1) / 2;
        }
    });
    s.peers = peers.len();
    s.sets = sets.len();
    s.sets_multi_peer = sets.values().filter(|v| v.1).count();
    for v in sets.values() {
        s.set_use[(63 - v.2.leading_zeros() as usize).min(23)] += 1;
    }
    s.paths = paths.len();
    s.paths_multi_peer = paths.values().filter(|v| v.1).count();
    s.comms = comms.len();
    s.next_hops = nhs.len();
    s.origins = origins.len();
    s.meds = meds.len();
    s.peer_origin = po.len();
    s.peer_origin_path = pop.len();
    s.peer_origin_set = pos.len();
    s
}

fn print_sharing(name: &str, s: &Sharing) {
    let r = s.routes as f64;
    println!("### Sharing: {name}");
    println!(
        "prefixes {}, routes {}, peers {}, routes/prefix {:.2}; origins {}",
        s.prefixes,
        s.routes,
        s.peers,
        r / s.prefixes as f64,
        s.origins
    );
    println!(
        "distinct sets {} ({:.4}/route, {:.2} routes/set), AS paths {} ({:.4}/route), community lists {} ({:.5}/route), next hops {}, MEDs {}",
        s.sets,
        s.sets as f64 / r,
        r / s.sets as f64,
        s.paths,
        s.paths as f64 / r,
        s.comms,
        s.comms as f64 / r,
        s.next_hops,
        s.meds
    );
    println!(
        "peer pairs on a prefix sharing one set {:.4}, one AS path {:.4}; routes whose set another route of the prefix has {:.4}; sets of >1 peer {:.4}, paths of >1 peer {:.4}",
        s.pairs_same_set as f64 / s.pairs as f64,
        s.pairs_same_path as f64 / s.pairs as f64,
        s.routes_set_shared_in_prefix as f64 / r,
        s.sets_multi_peer as f64 / s.sets as f64,
        s.paths_multi_peer as f64 / s.paths as f64
    );
    println!(
        "(peer, origin) pairs {}: {:.3} paths and {:.3} sets each; routes per (peer, origin) {:.2}",
        s.peer_origin,
        s.peer_origin_path as f64 / s.peer_origin as f64,
        s.peer_origin_set as f64 / s.peer_origin as f64,
        r / s.peer_origin as f64
    );
    let pl: Vec<String> = s
        .path_len
        .iter()
        .enumerate()
        .filter(|x| *x.1 > 0)
        .map(|(l, &c)| format!("{l}:{:.3}", c as f64 / r))
        .collect();
    let mean_len: f64 = s
        .path_len
        .iter()
        .enumerate()
        .map(|(l, &c)| l as f64 * c as f64)
        .sum::<f64>()
        / r;
    println!(
        "path length (selection, per route; 15 = 15+): mean {mean_len:.2}; {}",
        pl.join(" ")
    );
    let names = ["0", "1", "2", "3-4", "5-8", "9-16", "17-32", "33+"];
    let cl: Vec<String> = s
        .comm_len
        .iter()
        .zip(names)
        .map(|(&c, n)| format!("{n}:{:.3}", c as f64 / r))
        .collect();
    println!(
        "community list length (per route): {}; MED present {:.3}; ORIGIN igp/egp/incomplete {:.3}/{:.3}/{:.3}; large communities present {:.3}",
        cl.join(" "),
        s.med_present as f64 / r,
        s.origin_attr[0] as f64 / r,
        s.origin_attr[1] as f64 / r,
        s.origin_attr[2] as f64 / r,
        s.large_present as f64 / r
    );
    let su: Vec<String> = s
        .set_use
        .iter()
        .enumerate()
        .filter(|x| *x.1 > 0)
        .map(|(b, &c)| format!("{}+:{:.3}", 1u64 << b, c as f64 / s.sets as f64))
        .collect();
    println!("routes per set (share of sets): {}", su.join(" "));
}

fn real_stats() -> Sharing {
    let rib = Rib::new();
    let before = live();
    let r =
        ipfib_rib::mrt::load(format!("{DATA}/rib.20260730.1400.first2MiB.mrt.bz2"), &rib).unwrap();
    rib.sync();
    println!(
        "real dump: {} routes, {} peers, {} prefixes, {:.1} bytes/route",
        r.routes,
        r.peers,
        r.prefixes_v4 + r.prefixes_v6,
        (live() - before) as f64 / r.routes as f64
    );
    let (sets, paths, comms, large) = rib.attrs().counts();
    println!(
        "interner after load: {sets} sets, {paths} paths, {comms} community lists, {large} large lists; superseded peers {}",
        r.superseded_peers
    );
    for p in rib.peers().all() {
        print!("{}:AS{}:{} ", p.key.address, p.key.asn, p.route_count());
    }
    println!();
    let s = sharing(&rib);
    print_sharing("real dump rib.20260730.1400.first2MiB", &s);
    s
}

/// What the generator reproduces, measured on the real 20-peer dump
/// (`--phases stats` prints the measurement): per route.
mod target {
    /// Distinct AS paths per route (93,159 / 679,347).
    pub const PATHS_PER_ROUTE: f64 = 0.1371;
    /// Distinct attribute sets per route (100,934 / 679,347).
    pub const SETS_PER_ROUTE: f64 = 0.1486;
    /// Distinct community lists per route (11,785 / 679,347).
    pub const COMMS_PER_ROUTE: f64 = 0.01735;
    /// Distinct large-community lists per route (692 / 679,347).
    pub const LARGE_PER_ROUTE: f64 = 0.00102;
    /// Share of routes with an empty community list, with large
    /// communities, with a MED, with ORIGIN incomplete.
    pub const NO_COMMS: f64 = 0.305;
    pub const LARGE: f64 = 0.069;
    pub const MED: f64 = 0.298;
    pub const INCOMPLETE: f64 = 0.045;
    /// AS path selection length per route, lengths 2..=15 (15: 15+).
    pub const PATH_LEN: [f64; 14] = [
        0.090, 0.316, 0.302, 0.148, 0.081, 0.029, 0.012, 0.007, 0.004, 0.003, 0.002, 0.001, 0.002,
        0.002,
    ];
    /// Community list length per route among non-empty lists: buckets
    /// 1, 2, 3-4, 5-8, 9-16, 17-32, 33-64 (0.152 .. 0.001 of all routes).
    pub const COMM_LEN: [(f64, usize, usize); 7] = [
        (0.152, 1, 1),
        (0.091, 2, 2),
        (0.111, 3, 4),
        (0.192, 5, 8),
        (0.133, 9, 16),
        (0.014, 17, 32),
        (0.001, 33, 64),
    ];
    pub const COMM_WEIGHTS: [f64; 7] = [0.152, 0.091, 0.111, 0.192, 0.133, 0.014, 0.001];
}

/// The writer's pace while readers are measured (updates/s).
const WRITER_RATE: f64 = 200_000.0;

/// A uniform draw in [0, 1) from a hash.
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// Index drawn from weights `w` by `h`.
fn pick(w: &[f64], h: u64) -> usize {
    let total: f64 = w.iter().sum();
    let mut x = unit(h) * total;
    for (i, &v) in w.iter().enumerate() {
        if x < v {
            return i;
        }
        x -= v;
    }
    w.len() - 1
}

/// The route generator: N peers, each with the whole table (every prefix
/// with its pfx2as origin), attributes drawn by hashing so that sharing
/// per route matches the real dump.
///
/// Model (no two peers share a path or a set, as in the dump: a path
/// starts with the peer's AS, next hops are per peer):
/// - a route's path key is (peer, family, origin, variant); variant 0
///   (the peer's usual path to that origin) except for a share `u` of
///   routes that get a path of their own (traffic engineering,
///   more-specifics through another upstream); `u` is solved from the
///   table so that distinct paths per route come out at the target;
/// - per path key: path length, transit ASes (pool of 8,000), community
///   list (one of a per-peer pool sized for the target lists per route;
///   empty with the dump's share), large communities, MED, ORIGIN;
/// - per route, a share `w` flips ORIGIN (IGP <-> incomplete): a second
///   set for the same path, for the sets-per-path ratio (1.084).
struct Gen {
    routes: Vec<(AnyPrefix, u32)>,
    u: f64,
    w: f64,
    comm_pool: u64,
    large_pool: u64,
}

/// One route's attributes, owned words (borrowed by `AttrsRef`).
struct Drawn {
    path: Vec<u32>,
    comms: Vec<u32>,
    large: Vec<[u32; 3]>,
    next_hop: IpAddr,
    med: Option<u32>,
    origin: Origin,
}

impl Drawn {
    fn attrs(&self) -> AttrsRef<'_> {
        AttrsRef {
            as_path: &self.path,
            communities: &self.comms,
            large_communities: &self.large,
            next_hop: Some(self.next_hop),
            origin: self.origin,
            med: self.med,
            local_pref: None,
        }
    }
}

fn peer_asn(peer: usize) -> u32 {
    // 4-byte private ASNs: never an origin of the table's.
    4_200_000_000 + peer as u32
}

impl Gen {
    fn new() -> Gen {
        let routes = table_2026();
        // Path keys of variant 0 per peer: (family, origin) pairs; own
        // paths go to groups of 4 neighbouring table entries, shared by
        // those of one origin (neighbouring more-specifics of one
        // origin announced alike): (group, family, origin) keys.
        let keys: HashSet<(u8, u32)> = routes.iter().map(|r| (r.0.family(), r.1)).collect();
        let groups: HashSet<(usize, u8, u32)> = routes
            .iter()
            .enumerate()
            .map(|(i, r)| (i >> 2, r.0.family(), r.1))
            .collect();
        let (rp, k0) = (routes.len() as f64, keys.len() as f64);
        // paths = k0 + u * groups = target * rp (a group drawn that
        // repeats the usual path, length 2, is rare enough to ignore).
        // 1.176: measured (a group's routes of other origins, and groups
        // drawn with length 2, add no path).
        let u = ((target::PATHS_PER_ROUTE * rp - k0) / groups.len() as f64 * 1.176).max(0.0);
        let paths = target::PATHS_PER_ROUTE * rp;
        // Sets per path past one: routes whose ORIGIN is flipped, each
        // mostly a set of its own; 1.79: measured (flipped routes of one
        // path share the flipped set).
        let w = (target::SETS_PER_ROUTE - target::PATHS_PER_ROUTE) * 1.79;
        Gen {
            routes,
            u,
            w,
            comm_pool: (target::COMMS_PER_ROUTE * rp) as u64,
            large_pool: ((target::LARGE_PER_ROUTE * rp) as u64).max(1),
            }
            .tap(|g| {
                println!(
                    "generator: {} prefixes per peer, {} (family, origin) keys; own-path share u {:.4}, ORIGIN flip share w {:.4}, community pool {} and large pool {} per peer; target {:.0} paths per peer",
                    g.routes.len(), keys.len(), g.u, g.w, g.comm_pool, g.large_pool, paths
                )
            })
    }

    fn tap(self, f: impl FnOnce(&Gen)) -> Gen {
        f(&self);
        self
    }

    /// Route `i` of `peer`; `churn` > 0 draws changed attributes for an
    /// update (another MED, or the other ORIGIN), as a re-announcement.
    fn draw(&self, peer: usize, i: usize, churn: u64, out: &mut Drawn) {
        let (prefix, origin) = self.routes[i];
        let fam = prefix.family() as u64;
        let hr = mix(((peer as u64) << 40) ^ (i as u64) ^ 0x5ca1e);
        let group = (i >> 2) as u64;
        let hg = mix(((peer as u64) << 40) ^ group ^ 0x960u64);
        let variant = if unit(hg) < self.u { 1 + group } else { 0 };
        let kp = mix(mix(((peer as u64) << 36) ^ (fam << 33) ^ origin as u64) ^ variant);
        // Path: peer AS, transit ASes, origin (selection length drawn).
        let len = 2 + pick(&target::PATH_LEN, mix(kp ^ 1));
        out.path.clear();
        out.path.push(((AS_SEQUENCE as u32) << 16) | len as u32);
        out.path.push(peer_asn(peer));
        for j in 0..len - 2 {
            out.path
                .push(1000 + (mix(kp ^ (0x100 + j as u64)) % 8000) as u32);
        }
        out.path.push(origin);
        debug_assert_eq!(AsPath::encode([(AS_SEQUENCE, &out.path[1..])]), out.path);
        // Communities: none, or one of the peer's pool of lists.
        out.comms.clear();
        if unit(mix(kp ^ 2)) >= target::NO_COMMS {
            let c = mix(kp ^ 3) % self.comm_pool;
            let hc = mix(((peer as u64) << 40) ^ c ^ 0xc0);
            let (_, lo, hi) = target::COMM_LEN[pick(&target::COMM_WEIGHTS, hc)];
            let n = lo + (mix(hc ^ 1) % (hi - lo + 1) as u64) as usize;
            let asn16 = 64512 + (peer as u32 % 1000);
            for j in 0..n {
                out.comms
                    .push((asn16 << 16) | (mix(hc ^ (0x10 + j as u64)) % 65536) as u32);
            }
        }
        out.large.clear();
        if unit(mix(kp ^ 4)) < target::LARGE {
            let c = mix(kp ^ 5) % self.large_pool;
            out.large.push([peer_asn(peer), 1, c as u32]);
        }
        out.med = (unit(mix(kp ^ 6)) < target::MED).then(|| (mix(kp ^ 7) % 99) as u32 * 10);
        // Per path b, flipped per route w: b + w (1 - 2b) = target.
        let b = (target::INCOMPLETE - self.w) / (1.0 - 2.0 * self.w);
        let incomplete = unit(mix(kp ^ 8)) < b;
        let flip = unit(mix(hr ^ 9)) < self.w;
        out.origin = if incomplete != flip {
            Origin::Incomplete
        } else {
            Origin::Igp
        };
        if churn > 0 {
            // An update: another MED (one of 4 per route) or ORIGIN.
            let c = mix(hr ^ churn);
            if c & 1 == 0 {
                out.med = Some(1000 + (c >> 1) as u32 % 4);
            } else {
                out.origin = if out.origin == Origin::Igp {
                    Origin::Incomplete
                } else {
                    Origin::Igp
                };
            }
        }
        out.next_hop = if fam == 6 {
            IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, peer as u16 + 1])
        } else {
            IpAddr::from([192, 0, (2 + peer / 250) as u8, (peer % 250) as u8 + 1])
        };
    }
}

fn drawn() -> Drawn {
    Drawn {
        path: Vec::new(),
        comms: Vec::new(),
        large: Vec::new(),
        next_hop: IpAddr::from([0, 0, 0, 0]),
        med: None,
        origin: Origin::Igp,
    }
}

fn add_peer(rib: &Rib, peer: usize, session: u64) -> Arc<PeerInfo> {
    rib.add_peer(
        session,
        PeerKey {
            peer_type: 0,
            distinguisher: 0,
            address: IpAddr::from([127, 1, (peer / 250) as u8, (peer % 250) as u8 + 1]),
            asn: peer_asn(peer),
            bgp_id: peer as u32 + 1,
            rib: RibKind::PrePolicy,
        },
    )
    .unwrap()
}

/// `peer`'s whole table: draw and intern every route's attributes (as a
/// BMP session interns per UPDATE; the same set twice in a row is reused
/// as the session does), then announce them. Returns (draw + intern,
/// announce) thread CPU seconds.
fn announce_table(rib: &Rib, g: &Gen, peer: usize, p: &PeerInfo) -> (f64, f64) {
    let c0 = thread_cpu();
    let mut d = drawn();
    let mut sets: Vec<Arc<AttrSet>> = Vec::with_capacity(g.routes.len());
    for i in 0..g.routes.len() {
        g.draw(peer, i, 0, &mut d);
        let a = d.attrs();
        let set = match sets.last() {
            Some(s) if a.matches(s) => Arc::clone(s),
            _ => rib.intern(&a),
        };
        sets.push(set);
    }
    let c1 = thread_cpu();
    for (i, set) in sets.iter().enumerate() {
        rib.announce(p, g.routes[i].0, 0, set).unwrap();
    }
    let c2 = thread_cpu();
    ((c1 - c0).as_secs_f64(), (c2 - c1).as_secs_f64())
}

/// Thread CPU seconds to draw one peer's table without interning (the
/// generator's own share of the load figures).
fn draw_cost(g: &Gen) -> f64 {
    let c0 = thread_cpu();
    let mut d = drawn();
    let mut x = 0usize;
    for i in 0..g.routes.len() {
        g.draw(0, i, 0, &mut d);
        x += d.path.len() + d.comms.len();
    }
    std::hint::black_box(x);
    (thread_cpu() - c0).as_secs_f64()
}

struct Loaded {
    rib: Arc<Rib>,
    peers: Vec<Arc<PeerInfo>>,
    session: u64,
}

fn fmt3((lo, med, hi): (f64, f64, f64), prec: usize) -> String {
    format!("{med:.prec$} [{lo:.prec$}-{hi:.prec$}]")
}

/// Build the N-peer RIB `passes` times (dropping all but the last):
/// load time and rate, memory per route from the first build.
fn load(g: &Gen, npeers: usize, passes: usize, res: &mut Vec<(String, String)>) -> Loaded {
    println!("## Load: {npeers} peers x {} prefixes", g.routes.len());
    pin(0);
    let mut walls = Vec::new();
    let mut rates = Vec::new();
    let mut cpu_rates = Vec::new();
    let mut ann_rates = Vec::new();
    let mut int_rates = Vec::new();
    let dc = draw_cost(g);
    println!(
        "generator alone: {:.2} s CPU per peer table ({:.2} M routes/s), inside the intern figures",
        dc,
        g.routes.len() as f64 / dc / 1e6
    );
    let mut kept = None;
    let rss0 = rss();
    let live0 = live();
    for pass in 0..passes {
        drop(kept.take()); // drop the previous build first
        let rib = Arc::new(Rib::new());
        let t0 = Instant::now();
        let mut peers = Vec::new();
        let (mut cpu_i, mut cpu_a) = (0.0, 0.0);
        for peer in 0..npeers {
            let p = add_peer(&rib, peer, 1 + peer as u64);
            let (ci, ca) = announce_table(&rib, g, peer, &p);
            cpu_i += ci;
            cpu_a += ca;
            peers.push(p);
        }
        let cpu = cpu_i + cpu_a;
        rib.sync();
        let wall = t0.elapsed().as_secs_f64();
        let n = rib.route_count() as f64;
        walls.push(wall);
        rates.push(n / wall / 1e6);
        cpu_rates.push(n / cpu / 1e6);
        ann_rates.push(n / cpu_a / 1e6);
        int_rates.push(n / (cpu_i - npeers as f64 * dc).max(1e-3) / 1e6);
        println!(
            "pass {pass}: {n} routes in {wall:.1} s: {:.2} M routes/s wall, {:.2} per core (loader CPU: draw + intern {cpu_i:.1} s, announce {cpu_a:.1} s = {:.2} M routes/s)",
            n / wall / 1e6,
            n / cpu / 1e6,
            n / cpu_a / 1e6
        );
        if pass == 0 {
            // Let the sweeper and FIB thread settle, then count.
            std::thread::sleep(Duration::from_millis(500));
            let bytes = (live() - live0) as f64;
            let rss1 = rss();
            let (sets, paths, comms, large) = rib.attrs().counts();
            let fib = rib.counters().fib_bytes.load(Ordering::Relaxed) as f64;
            println!(
                "routes {n}, prefixes {}, interned: {sets} sets, {paths} paths, {comms} community lists, {large} large lists",
                rib.prefix_count()
            );
            println!(
                "memory: {:.1} bytes/route live heap (counting allocator; FIB {:.1}); RSS {:.0} MB = {:.1} bytes/route (growth {:.1} bytes/route)",
                bytes / n,
                fib / n,
                rss1 as f64 / 1e6,
                rss1 as f64 / n,
                (rss1 - rss0) as f64 / n
            );
            res.push(("routes".into(), format!("{n}")));
            res.push(("prefixes".into(), format!("{}", rib.prefix_count())));
            res.push((
                "distinct sets / paths / community lists".into(),
                format!("{sets} / {paths} / {comms}"),
            ));
            res.push((
                "heap bytes/route (counting allocator)".into(),
                format!("{:.1}", bytes / n),
            ));
            res.push((
                "RSS bytes/route (process RSS / routes)".into(),
                format!("{:.1}", rss1 as f64 / n),
            ));
            res.push(("RSS (MB)".into(), format!("{:.0}", rss1 as f64 / 1e6)));
        }
        kept = Some(Loaded {
            rib,
            peers,
            session: 1 + npeers as u64,
        });
    }
    res.push(("load wall time (s)".into(), fmt3(median(&mut walls), 1)));
    res.push((
        "load rate, wall (M routes/s)".into(),
        fmt3(median(&mut rates), 2),
    ));
    res.push((
        "load rate, loader CPU, draw + intern + announce (M routes/s per core)".into(),
        fmt3(median(&mut cpu_rates), 2),
    ));
    res.push((
        "announce alone, loader CPU (M routes/s per core)".into(),
        fmt3(median(&mut ann_rates), 2),
    ));
    res.push((
        "intern alone (generator's draw cost taken out), loader CPU (M routes/s per core)".into(),
        fmt3(median(&mut int_rates), 2),
    ));
    kept.unwrap()
}

/// Matched addresses: a random address inside random prefixes.
fn addrs(g: &Gen, n: usize, v6: bool) -> Vec<AnyAddr> {
    let cands: Vec<AnyPrefix> = g
        .routes
        .iter()
        .map(|r| r.0)
        .filter(|p| (p.family() == 6) == v6)
        .collect();
    (0..n)
        .map(|i| {
            let h = mix(i as u64 ^ 0xadd);
            match cands[(h % cands.len() as u64) as usize] {
                AnyPrefix::V4(p) => AnyAddr::V4(
                    p.addr()
                        | (mix(h) as u32
                            & !(u32::MAX.checked_shl(32 - p.len() as u32).unwrap_or(0))),
                ),
                AnyPrefix::V6(p) => AnyAddr::V6(
                    p.addr()
                        | (((mix(h) as u128) << 64 | mix(h ^ 1) as u128)
                            & !(u128::MAX.checked_shl(128 - p.len() as u32).unwrap_or(0))),
                ),
            }
        })
        .collect()
}

/// A writer thread on CPU 1 for `peer`: re-announces random routes with
/// changed attributes, and every 10th update withdraws one (re-announced
/// 64 updates later); `rate` updates/s (0: as fast as it can). Returns
/// the stop flag, the update count and the thread.
fn spawn_writer(
    l: &Loaded,
    g: &Arc<Gen>,
    peer: usize,
    rate: f64,
) -> (Arc<AtomicBool>, Arc<AtomicU64>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let (rib, p, g) = (
        Arc::clone(&l.rib),
        Arc::clone(&l.peers[peer]),
        Arc::clone(g),
    );
    let (stop2, written2) = (Arc::clone(&stop), Arc::clone(&written));
    let w = std::thread::Builder::new()
        .name("writer".into())
        .spawn(move || {
            pin(1);
            let mut d = drawn();
            let mut withdrawn = VecDeque::new();
            let t0 = Instant::now();
            let mut n = 0u64;
            while !stop2.load(Ordering::Relaxed) {
                if rate > 0.0 && n as f64 > rate * t0.elapsed().as_secs_f64() {
                    std::thread::sleep(Duration::from_micros(200));
                    continue;
                }
                for _ in 0..64 {
                    let h = mix(n ^ 0x3417e5);
                    let i = (h % g.routes.len() as u64) as usize;
                    if n % 10 == 9 {
                        rib.withdraw(&p, g.routes[i].0, 0);
                        withdrawn.push_back(i);
                    } else if withdrawn.len() > 64 {
                        let j = withdrawn.pop_front().unwrap();
                        g.draw(peer, j, 0, &mut d);
                        rib.announce(&p, g.routes[j].0, 0, &rib.intern(&d.attrs()))
                            .unwrap();
                    } else {
                        g.draw(peer, i, 1 + (n >> 20), &mut d);
                        rib.announce(&p, g.routes[i].0, 0, &rib.intern(&d.attrs()))
                            .unwrap();
                    }
                    n += 1;
                }
                written2.fetch_add(64, Ordering::Relaxed);
            }
            // Give back what was withdrawn: the RIB is whole again.
            for j in withdrawn {
                g.draw(peer, j, 0, &mut d);
                rib.announce(&p, g.routes[j].0, 0, &rib.intern(&d.attrs()))
                    .unwrap();
            }
        })
        .unwrap();
    (stop, written, w)
}

/// Single lookups p50/p99 (passes of 1 s after a warm-up), then the same
/// with a writer at 200K updates/s; IPv4 batch lookups.
fn lookups(l: &Loaded, g: &Arc<Gen>, passes: usize, res: &mut Vec<(String, String)>) {
    pin(0);
    let a4 = addrs(g, 1 << 20, false);
    let a6 = addrs(g, 1 << 20, true);
    for writer in [false, true] {
        let w = writer.then(|| spawn_writer(l, g, 1, WRITER_RATE));
        let t0 = Instant::now();
        for (fam, a) in [("IPv4", &a4), ("IPv6", &a6)] {
            let _ = lookup_samples(&l.rib, a, Duration::from_millis(300));
            let (mut p50, mut p99) = (Vec::new(), Vec::new());
            for _ in 0..passes {
                let (mut x, _) = lookup_samples(&l.rib, a, Duration::from_secs(1));
                p50.push(pct(&mut x, 0.5));
                p99.push(pct(&mut x, 0.99));
            }
            let tag = if writer {
                "writer 200K updates/s"
            } else {
                "no writer"
            };
            println!(
                "{fam} single lookup, {tag}: p50 {} ns, p99 {} ns",
                fmt3(median(&mut p50), 0),
                fmt3(median(&mut p99), 0)
            );
            res.push((
                format!("{fam} single lookup p50 (ns), {tag}"),
                fmt3(median(&mut p50), 0),
            ));
            res.push((
                format!("{fam} single lookup p99 (ns), {tag}"),
                fmt3(median(&mut p99), 0),
            ));
        }
        if let Some((stop, written, h)) = w {
            let rate = written.load(Ordering::Relaxed) as f64 / t0.elapsed().as_secs_f64();
            stop.store(true, Ordering::Relaxed);
            h.join().unwrap();
            println!("writer achieved {:.0} updates/s", rate);
            res.push((
                "writer achieved (updates/s, target 200K)".into(),
                format!("{rate:.0}"),
            ));
        }
    }
    let b4: Vec<u32> = a4
        .iter()
        .map(|a| if let AnyAddr::V4(x) = a { *x } else { 0 })
        .collect();
    let q = Query::default();
    let mut out = vec![None; b4.len()];
    l.rib.lookup_batch_v4(&b4, &q, &mut out);
    let mut rates = Vec::new();
    for _ in 0..passes.max(3) * 2 {
        let t = Instant::now();
        l.rib.lookup_batch_v4(&b4, &q, &mut out);
        rates.push(b4.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    let hits = out.iter().filter(|h| h.is_some()).count();
    println!(
        "IPv4 batch (1M matched): {} M lookups/s, {hits} hits",
        fmt3(median(&mut rates), 1)
    );
    res.push((
        "IPv4 batch lookup_batch_v4, 1M matched (M lookups/s)".into(),
        fmt3(median(&mut rates), 1),
    ));
}

/// Reader latency over 50-ms windows: (p99 per window, lookups).
fn window(rib: &Rib, a: &[AnyAddr], d: Duration) -> f64 {
    let (mut x, _) = lookup_samples(rib, a, d);
    pct(&mut x, 0.99)
}

/// Re-add `peer` under a new id and reload its table (after a removal).
fn reload(l: &mut Loaded, g: &Gen, peer: usize) {
    l.session += 1;
    let p = add_peer(&l.rib, peer, l.session);
    announce_table(&l.rib, g, peer, &p);
    l.peers[peer] = p;
    l.rib.sync();
}

/// Remove peer 0 (a full table) while a reader (CPU 0) and peer 1's
/// writer (CPU 1, 200K updates/s as in the lookup phase) run; then again with nothing else running, for
/// the memory given back. Each pass reloads the peer after.
fn removal(l: &mut Loaded, g: &Arc<Gen>, passes: usize, res: &mut Vec<(String, String)>) {
    pin(0);
    let a = addrs(g, 1 << 20, false);
    let win = Duration::from_millis(50);
    let (mut before99, mut before_worst99, mut during99) = (Vec::new(), Vec::new(), Vec::new());
    let (mut wmed_before, mut wworst_during, mut wmed_during) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut wworst_before = Vec::new();
    let (mut sweep_s, mut freed_live, mut rss_b, mut rss_a, mut quiet_s) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut live_b, mut live_a) = (Vec::new(), Vec::new());
    for pass in 0..passes {
        let (stop, written, w) = spawn_writer(l, g, 1, WRITER_RATE);
        let _ = window(&l.rib, &a, Duration::from_millis(300));
        // 1 s before: 20 windows.
        let mut p99s = Vec::new();
        let mut wr = Vec::new();
        for _ in 0..20 {
            let (w0, t0) = (written.load(Ordering::Relaxed), Instant::now());
            p99s.push(window(&l.rib, &a, win));
            wr.push((written.load(Ordering::Relaxed) - w0) as f64 / t0.elapsed().as_secs_f64());
        }
        let (_, b99, bw99) = median(&mut p99s);
        let (bwlo, bw, _) = median(&mut wr);
        let purges0 = l.rib.attrs().purges();
        let routes0 = l.peers[0].route_count();
        let t0 = Instant::now();
        l.rib.peer_down(l.peers[0].id);
        let (mut worst, mut rates) = (0.0f64, Vec::new());
        // Windows for at most 60 s; then the sweep finishes alone.
        while !l.peers[0].is_swept() && t0.elapsed() < Duration::from_secs(60) {
            let (w0, t1) = (written.load(Ordering::Relaxed), Instant::now());
            worst = worst.max(window(&l.rib, &a, win));
            rates.push((written.load(Ordering::Relaxed) - w0) as f64 / t1.elapsed().as_secs_f64());
        }
        let under_load = l.peers[0].is_swept();
        let purges = l.rib.attrs().purges() - purges0;
        stop.store(true, Ordering::Relaxed);
        w.join().unwrap();
        while !l.peers[0].is_swept() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let swept = t0.elapsed().as_secs_f64();
        if !under_load {
            println!(
                "(the sweep outlasted 60 s of reader and writer; it finished after they stopped)"
            );
        }
        let (rlo, rmed, _) = median(&mut rates);
        println!(
            "pass {pass}: peer_down of {routes0} routes under load: swept after {swept:.2} s; reader p99 worst 50-ms window {worst:.0} ns (before: median window {b99:.0}, worst {bw99:.0}); writer worst window {:.2} M/s, median during {:.2} (before: median {:.2}, worst {:.2}); interner purges during the windows {purges}",
            rlo / 1e6,
            rmed / 1e6,
            bw / 1e6,
            bwlo / 1e6
        );
        wworst_before.push(bwlo / 1e6);
        before99.push(b99);
        before_worst99.push(bw99);
        during99.push(worst);
        wmed_before.push(bw / 1e6);
        wworst_during.push(rlo / 1e6);
        wmed_during.push(rmed / 1e6);
        sweep_s.push(swept);
        reload(l, g, 0);
        // Quiet removal: the memory given back.
        std::thread::sleep(Duration::from_millis(300));
        let (m0, r0) = (live(), rss());
        let routes0 = l.peers[0].route_count();
        let t0 = Instant::now();
        l.rib.peer_down(l.peers[0].id);
        while !l.peers[0].is_swept() && t0.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(2));
        }
        let swept = t0.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(300));
        let (m1, r1) = (live(), rss());
        println!(
            "pass {pass}: quiet peer_down of {routes0} routes: swept after {swept:.2} s; heap {:.0} -> {:.0} MB ({:.0} bytes/removed route); RSS {:.0} -> {:.0} MB",
            m0 as f64 / 1e6,
            m1 as f64 / 1e6,
            (m0 as f64 - m1 as f64) / routes0 as f64,
            r0 as f64 / 1e6,
            r1 as f64 / 1e6
        );
        quiet_s.push(swept);
        freed_live.push((m0 as f64 - m1 as f64) / routes0 as f64);
        live_b.push(m0 as f64 / 1e6);
        live_a.push(m1 as f64 / 1e6);
        rss_b.push(r0 as f64 / 1e6);
        rss_a.push(r1 as f64 / 1e6);
        reload(l, g, 0);
    }
    let r = res;
    r.push((
        "removal: reader p99 (ns), 50-ms windows before (median window)".into(),
        fmt3(median(&mut before99), 0),
    ));
    r.push((
        "removal: reader p99 (ns), worst 50-ms window before".into(),
        fmt3(median(&mut before_worst99), 0),
    ));
    r.push((
        "removal: reader p99 (ns), worst 50-ms window during sweep".into(),
        fmt3(median(&mut during99), 0),
    ));
    r.push((
        "removal: other writer, median 50-ms window before (M updates/s)".into(),
        fmt3(median(&mut wmed_before), 2),
    ));
    r.push((
        "removal: other writer, worst 50-ms window before (M updates/s)".into(),
        fmt3(median(&mut wworst_before), 2),
    ));
    r.push((
        "removal: other writer, median 50-ms window during (M updates/s)".into(),
        fmt3(median(&mut wmed_during), 2),
    ));
    r.push((
        "removal: other writer, worst 50-ms window during (M updates/s)".into(),
        fmt3(median(&mut wworst_during), 2),
    ));
    r.push((
        "removal under load: peer_down to swept (s)".into(),
        fmt3(median(&mut sweep_s), 2),
    ));
    r.push((
        "quiet removal: peer_down to swept (s)".into(),
        fmt3(median(&mut quiet_s), 2),
    ));
    r.push((
        "quiet removal: heap before -> after (MB)".into(),
        format!(
            "{} -> {}",
            fmt3(median(&mut live_b), 0),
            fmt3(median(&mut live_a), 0)
        ),
    ));
    r.push((
        "quiet removal: heap freed per removed route (bytes)".into(),
        fmt3(median(&mut freed_live), 0),
    ));
    r.push((
        "quiet removal: RSS before -> after (MB)".into(),
        format!(
            "{} -> {}",
            fmt3(median(&mut rss_b), 0),
            fmt3(median(&mut rss_a), 0)
        ),
    ));
}

/// Warm restart at this scale: the RIB written as a snapshot, then
/// loaded back `passes` times, each into a new RIB; "serving" is the load
/// plus the FIB's publication (what `ipfib collect --state` does before
/// it listens). `keep`: leave the snapshot there (for timing the
/// collector itself on it).
fn snapshot_phase(l: &Loaded, passes: usize, keep: Option<&str>, res: &mut Vec<(String, String)>) {
    use ipfib_rib::snapshot;
    let dir = match keep {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join(format!("rib-scale-snapshot-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).expect("snapshot directory");
    let routes = l.rib.route_count() as f64;
    let mut writes = Vec::new();
    let mut report = None;
    for _ in 0..passes {
        let t = Instant::now();
        report = Some(snapshot::write_to_dir(&l.rib, &dir).expect("snapshot write"));
        writes.push(t.elapsed().as_secs_f64());
    }
    let r = report.expect("a pass");
    let path = dir.join(snapshot::FILE);
    let probe: Vec<AnyAddr> = (0..1000u32)
        .map(|i| AnyAddr::V4(i.wrapping_mul(2_654_435_761)))
        .collect();
    let q = Query::default();
    let want: Vec<_> = probe
        .iter()
        .map(|&a| {
            l.rib
                .lookup(a, &q)
                .map(|r| (r.prefix, r.peer.key.clone(), r.path_id))
        })
        .collect();
    let (mut loads, mut serving) = (Vec::new(), Vec::new());
    for _ in 0..passes {
        let t = Instant::now();
        let (rib, rep) = snapshot::load(&path).expect("snapshot load");
        loads.push(t.elapsed().as_secs_f64());
        rib.sync();
        serving.push(t.elapsed().as_secs_f64());
        assert_eq!(rep.routes as f64, routes);
        let got: Vec<_> = probe
            .iter()
            .map(|&a| {
                rib.lookup(a, &q)
                    .map(|r| (r.prefix, r.peer.key.clone(), r.path_id))
            })
            .collect();
        assert!(got == want, "the loaded RIB answers otherwise");
        drop(rib);
    }
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let w = median(&mut writes);
    let ld = median(&mut loads);
    let sv = median(&mut serving);
    println!(
        "snapshot: {} bytes ({:.1} per route), write {:.2} s, load {:.2} s ({:.2} M routes/s), serving {:.2} s",
        r.bytes,
        r.bytes as f64 / routes,
        w.1,
        ld.1,
        routes / ld.1 / 1e6,
        sv.1
    );
    res.push((
        "snapshot: file size (bytes per route)".into(),
        format!(
            "{:.0} MB ({:.1})",
            r.bytes as f64 / 1e6,
            r.bytes as f64 / routes
        ),
    ));
    res.push(("snapshot: write (s)".into(), fmt3(w, 2)));
    res.push((
        "snapshot: load (s); M routes/s".into(),
        format!("{}; {:.2}", fmt3(ld, 2), routes / ld.1 / 1e6),
    ));
    res.push((
        "snapshot: load + FIB published, serving (s)".into(),
        fmt3(sv, 2),
    ));
}

fn main() {
    let mut npeers = 20;
    let mut passes = 3;
    let mut phases = "stats,load,writer-max,lookups,removal,gen-stats,snapshot".to_string();
    let mut keep: Option<String> = None;
    let args: Vec<String> = std::env::args().collect();
    for (i, a) in args.iter().enumerate() {
        match a.as_str() {
            "--peers" => npeers = args[i + 1].parse().unwrap(),
            "--passes" => passes = args[i + 1].parse().unwrap(),
            "--phases" => phases = args[i + 1].clone(),
            "--keep-snapshot" => keep = Some(args[i + 1].clone()),
            "--help" | "-h" => {
                println!("rib_scale [--peers N (20)] [--passes K (3)] [--phases stats,load,writer-max,lookups,removal,gen-stats,snapshot] [--keep-snapshot DIR]");
                return;
            }
            _ => {}
        }
    }
    if !std::path::Path::new(DATA).is_dir() {
        println!("SKIPPED: {DATA} not found");
        return;
    }
    let on = |p: &str| phases.split(',').any(|x| x == p);
    let t_start = Instant::now();
    if on("stats") {
        real_stats();
    }
    if !(on("load") || on("lookups") || on("removal") || on("gen-stats") || on("snapshot")) {
        return;
    }
    let g = Arc::new(Gen::new());
    let mut res = Vec::new();
    let mut l = load(&g, npeers, if on("load") { passes } else { 1 }, &mut res);
    // Sharing of the RIB as loaded (the writers below change attributes).
    if on("gen-stats") {
        let s = sharing(&l.rib);
        print_sharing(&format!("generated, {npeers} peers"), &s);
        let r = s.routes as f64;
        res.push((
            "generated RIB: sets / paths / community lists per route (real dump: 0.1486 / 0.1371 / 0.01735)".into(),
            format!("{:.4} / {:.4} / {:.5}", s.sets as f64 / r, s.paths as f64 / r, s.comms as f64 / r),
        ));
        res.push((
            "generated RIB: peer pairs on a prefix sharing a set / a path (real: 0 / 0)".into(),
            format!(
                "{:.4} / {:.4}",
                s.pairs_same_set as f64 / s.pairs as f64,
                s.pairs_same_path as f64 / s.pairs as f64
            ),
        ));
    }
    if on("snapshot") {
        snapshot_phase(&l, passes, keep.as_deref(), &mut res);
    }
    if on("writer-max") {
        // The writer's capacity alone (unpaced, nothing else running).
        let (stop, written, w) = spawn_writer(&l, &g, 1, 0.0);
        std::thread::sleep(Duration::from_millis(500));
        let (w0, t0) = (written.load(Ordering::Relaxed), Instant::now());
        std::thread::sleep(Duration::from_secs(2));
        let rate = (written.load(Ordering::Relaxed) - w0) as f64 / t0.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        w.join().unwrap();
        println!("writer alone, unpaced: {:.0} updates/s", rate);
        res.push((
            "writer alone, unpaced (updates/s)".into(),
            format!("{rate:.0}"),
        ));
    }
    if on("lookups") {
        lookups(&l, &g, passes, &mut res);
    }
    if on("removal") {
        removal(&mut l, &g, passes, &mut res);
    }
    println!(
        "## Results: {npeers} peers, {passes} passes, run took {:.0} s",
        t_start.elapsed().as_secs_f64()
    );
    println!("| figure | {npeers} peers |");
    println!("|---|---|");
    for (k, v) in &res {
        println!("| {k} | {v} |");
    }
}
