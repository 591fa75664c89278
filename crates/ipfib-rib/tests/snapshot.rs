//! RIB snapshots (`ipfib_rib::snapshot`) and warm restart:
//! - the real dumps written and loaded back equal route for route, lookup
//!   for lookup, and a second write of the loaded RIB gives the same body;
//! - hostile files (truncated at many lengths, flipped bits, another
//!   version, crafted structures resealed with good checksums) refused
//!   with a byte offset, never a panic;
//! - stale peers, their takeover by a router's returning peers, End-of-RIB
//!   and the grace period, against a model (property test).

mod mrt_views;

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_rib::attrs::AttrsRef;
use ipfib_rib::snapshot::{self, reseal, SnapshotError};
use ipfib_rib::{
    mrt, AsPath, EndOfRib, NlriClass, PeerInit, PeerKey, PeerOrigin, Query, Rib, RibKind,
};
use mrt_views::{data_file, rib_lines};
use proptest::prelude::*;

fn write(rib: &Rib) -> Vec<u8> {
    let mut out = Vec::new();
    snapshot::write(rib, &mut out).expect("write to memory");
    out
}

fn loaded(bytes: &[u8]) -> Rib {
    let rib = Rib::new();
    snapshot::load_bytes(bytes, &rib, true).unwrap_or_else(|e| panic!("{e}"));
    rib.sync();
    rib
}

/// The body (bytes 16 up to the trailer): what two writes of equal RIBs
/// share (the trailer holds the time of writing).
fn body(b: &[u8]) -> &[u8] {
    &b[16..b.len() - 72]
}

/// A deterministic address stream (splitmix64).
fn addrs(n: usize, v6: bool) -> Vec<AnyAddr> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (0..n)
        .map(|_| {
            if v6 {
                // Inside 2000::/3, where the routes are.
                let hi = (next() & !(0b111u64 << 61)) | (1u64 << 61);
                AnyAddr::V6((u128::from(hi) << 64) | u128::from(next()))
            } else {
                AnyAddr::V4(next() as u32)
            }
        })
        .collect()
}

#[test]
fn real_dumps_round_trip() {
    for (name, v6) in [
        ("rib.20260730.1400.first2MiB.mrt.bz2", false),
        ("rib6.20260730.1400.first1MiB.mrt.bz2", true),
    ] {
        let Some(path) = data_file(name) else {
            continue;
        };
        let a = Rib::new();
        mrt::load(&path, &a).unwrap_or_else(|e| panic!("{name}: {e}"));
        a.sync();
        let bytes = write(&a);
        let t = std::time::Instant::now();
        let b = loaded(&bytes);
        let secs = t.elapsed().as_secs_f64();
        let lines = rib_lines(&a, false);
        println!(
            "{name}: {} routes, snapshot {} bytes, loaded in {secs:.3} s ({:.2}M routes/s)",
            lines.len(),
            bytes.len(),
            lines.len() as f64 / secs / 1e6
        );
        assert!(lines.len() > 100_000, "{name}: {} routes", lines.len());
        assert_eq!(lines, rib_lines(&b, false), "{name}: routes");
        assert_eq!(a.route_count(), b.route_count());
        assert_eq!(a.prefix_count(), b.prefix_count());
        // MRT peers come back as they were, not stale.
        assert!(b
            .peers()
            .all()
            .all(|p| !p.stale && p.key.rib == RibKind::Mrt));
        assert_eq!(b.stale_peers(), 0);
        b.validate_route_lists();
        // Longest-prefix lookups agree, including which peer's route.
        let q = Query::default();
        let mut hits = 0;
        for addr in addrs(200_000, v6) {
            let (x, y) = (a.lookup(addr, &q), b.lookup(addr, &q));
            let key = |r: &ipfib_rib::Route| {
                (r.prefix, r.peer.key.clone(), r.path_id, (*r.attrs).clone())
            };
            assert_eq!(x.as_ref().map(key), y.as_ref().map(key), "{name}: {addr:?}");
            hits += x.is_some() as usize;
        }
        assert!(hits > 1000, "{name}: only {hits} lookups matched");
        // Written again, the loaded RIB gives the same body.
        assert!(
            body(&write(&b)) == body(&bytes),
            "{name}: second write differs"
        );
    }
}

fn key(addr: &str, rib: RibKind) -> PeerKey {
    PeerKey {
        peer_type: 0,
        distinguisher: 0,
        address: addr.parse().expect("address"),
        asn: 64500,
        bgp_id: 1,
        rib,
    }
}

const ROUTER: &str = "127.0.0.9";

fn router_peer(rib: &Rib, k: &PeerKey, class: NlriClass) -> std::sync::Arc<ipfib_rib::PeerInfo> {
    rib.add_peer_with(PeerInit {
        session: 7,
        key: k.clone(),
        origin: PeerOrigin {
            router: Some(ROUTER.parse().expect("router")),
            class,
        },
        ..PeerInit::default()
    })
    .expect("peer")
}

/// Attribute set number `n`: the same preference, another next hop.
fn attrs(rib: &Rib, n: u8) -> std::sync::Arc<ipfib_rib::AttrSet> {
    let path = AsPath::encode([(2, &[64500, 64501][..])]);
    rib.intern(&AttrsRef {
        as_path: &path,
        next_hop: Some(IpAddr::from([192, 0, 2, n])),
        ..AttrsRef::default()
    })
}

fn prefix(i: u8, v6: bool) -> AnyPrefix {
    if v6 {
        format!("2001:db8:{i:x}::/48").parse().expect("prefix")
    } else {
        format!("10.{i}.0.0/16").parse().expect("prefix")
    }
}

#[derive(Clone, Debug)]
enum Op {
    Announce(u8, bool, u32, u8),
    Withdraw(u8, bool, u32),
    EndOfRib(bool),
    Expire,
    /// The new peer goes down.
    Down,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..12, any::<bool>(), 0u32..3, 0u8..3).prop_map(|(p, v6, id, a)| Op::Announce(p, v6, id, a)),
        3 => (0u8..12, any::<bool>(), 0u32..3).prop_map(|(p, v6, id)| Op::Withdraw(p, v6, id)),
        1 => any::<bool>().prop_map(Op::EndOfRib),
        1 => Just(Op::Expire),
        1 => Just(Op::Down),
    ]
}

type Model = BTreeMap<(AnyPrefix, u32), u8>;
/// Stale routes: (prefix, which of the two old peers, path id).
type StaleModel = BTreeMap<(AnyPrefix, u8, u32), u8>;

/// The live routes of `prefix` as (stale, path id, next hop's last byte),
/// in the RIB's preference order.
fn seen(rib: &Rib, p: &AnyPrefix) -> Vec<(bool, u32, u8)> {
    rib.routes(p)
        .iter()
        .map(|r| {
            let nh = match r.attrs.next_hop {
                Some(IpAddr::V4(a)) => a.octets()[3],
                _ => 255,
            };
            (r.peer.stale, r.path_id, nh)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Before the restart, the router's peer holds `before`, over two
    /// sessions (the same neighbour reported twice); the snapshot
    /// restores both stale; a peer with the same router, key and class
    /// takes both over and runs `ops`. After every step each prefix shows
    /// the new peer's routes, then the stale routes not yet replaced,
    /// withdrawn or swept, in that order (same preference otherwise).
    #[test]
    fn takeover_follows_the_model(
        before in proptest::collection::vec((0u8..12, any::<bool>(), 0u32..3, 0u8..3, 0u8..2), 0..30),
        ops in proptest::collection::vec(op(), 0..40),
        other_class in any::<bool>(),
    ) {
        let k = key("192.0.2.1", RibKind::PrePolicy);
        let a = Rib::new();
        let old = [router_peer(&a, &k, NlriClass::Unicast), router_peer(&a, &k, NlriClass::Unicast)];
        let mut stale = StaleModel::new();
        for &(p, v6, id, n, which) in &before {
            a.announce(&old[which as usize], prefix(p, v6), id, &attrs(&a, n)).expect("announce");
            stale.insert((prefix(p, v6), which, id), n);
        }
        let rib = loaded(&write(&a));
        let held: std::collections::BTreeSet<u8> = stale.keys().map(|k| k.1).collect();
        prop_assert_eq!(rib.stale_peers(), held.len());
        // A peer of another class (labeled) takes nothing over.
        let class = if other_class { NlriClass::Labeled } else { NlriClass::Unicast };
        let new = router_peer(&rib, &k, class);
        let takes_over = !other_class;
        // Per old peer, the families it holds.
        let families = |which: u8| -> u8 {
            stale.keys().filter(|k| k.1 == which).map(|(p, _, _)| if p.family() == 4 { 1 } else { 2 }).fold(0, |a, b| a | b)
        };
        let families = [families(0), families(1)];
        let mut ended = 0u8;
        let mut swept_peers: [Option<bool>; 2] = [None; 2];
        let mut fresh = Model::new();
        let universe: Vec<AnyPrefix> = (0..12).flat_map(|i| [prefix(i, false), prefix(i, true)]).collect();
        let mut down = false;
        for o in &ops {
            match *o {
                // A peer that is down takes no routes; what it withdraws
                // is invisible already.
                Op::Announce(p, v6, id, n) if down => {
                    prop_assert!(!rib.announce(&new, prefix(p, v6), id, &attrs(&rib, n)).expect("announce"));
                }
                Op::Withdraw(p, v6, id) if down => {
                    rib.withdraw(&new, prefix(p, v6), id);
                }
                Op::Down => {
                    rib.peer_down(new.id);
                    down = true;
                    fresh.clear();
                    // The stale peers it took over go with it.
                    if takes_over {
                        stale.clear();
                        swept_peers = [Some(true); 2];
                    }
                }
                Op::Announce(p, v6, id, n) => {
                    rib.announce(&new, prefix(p, v6), id, &attrs(&rib, n)).expect("announce");
                    fresh.insert((prefix(p, v6), id), n);
                    if takes_over {
                        stale.remove(&(prefix(p, v6), 0, id));
                        stale.remove(&(prefix(p, v6), 1, id));
                    }
                }
                Op::Withdraw(p, v6, id) => {
                    rib.withdraw(&new, prefix(p, v6), id);
                    fresh.remove(&(prefix(p, v6), id));
                    if takes_over {
                        stale.remove(&(prefix(p, v6), 0, id));
                        stale.remove(&(prefix(p, v6), 1, id));
                    }
                }
                Op::EndOfRib(v6) => {
                    let swept = rib.end_of_rib(EndOfRib {
                        router: ROUTER.parse().expect("router"),
                        neighbour: &k,
                        class,
                        afi: if v6 { 2 } else { 1 },
                    });
                    // End-of-RIB needs no takeover: the neighbour has sent
                    // its table of that family, whatever class it was.
                    if takes_over {
                        ended |= if v6 { 2 } else { 1 };
                        let mut n = 0;
                        for which in 0..2u8 {
                            if families[which as usize] != 0
                                && families[which as usize] & !ended == 0
                                && swept_peers[which as usize].replace(true) != Some(true)
                            {
                                stale.retain(|k, _| k.1 != which);
                                n += 1;
                            }
                        }
                        prop_assert_eq!(swept, n);
                    } else {
                        prop_assert_eq!(swept, 0);
                    }
                }
                Op::Expire => {
                    rib.expire_stale();
                    stale.clear();
                    swept_peers = [Some(true); 2];
                }
            }
            for p in &universe {
                let mut want: Vec<(bool, u32, u8)> = fresh
                    .range((*p, 0)..=(*p, u32::MAX))
                    .map(|(&(_, id), &n)| (false, id, n))
                    .collect();
                want.extend(stale.range((*p, 0, 0)..=(*p, 1, u32::MAX)).map(|(&(_, _, id), &n)| (true, id, n)));
                prop_assert_eq!(seen(&rib, p), want, "{} after {:?}", p, o);
            }
            if !down {
                prop_assert_eq!(new.route_count(), fresh.len() as u64);
            }
            rib.validate_route_lists();
        }
    }
}

fn small() -> Vec<u8> {
    let a = Rib::new();
    let k = key("192.0.2.1", RibKind::PrePolicy);
    let p = router_peer(&a, &k, NlriClass::Unicast);
    let m = a.add_peer(0, key("192.0.2.2", RibKind::Mrt)).expect("peer");
    for i in 0..40u8 {
        a.announce(&p, prefix(i, i % 2 == 0), 0, &attrs(&a, i % 5))
            .expect("announce");
        a.announce(&m, prefix(i, i % 3 == 0), 1, &attrs(&a, i % 7))
            .expect("announce");
    }
    write(&a)
}

fn refused(b: &[u8], verify: bool) -> Option<SnapshotError> {
    let rib = Rib::new();
    match snapshot::load_bytes(b, &rib, verify) {
        Ok(_) => {
            rib.validate_route_lists();
            None
        }
        Err(e) => Some(e),
    }
}

#[test]
fn hostile_files_are_refused_with_an_offset() {
    let good = small();
    // The fuzz target's seed (fuzz/seeds/rib_snapshot), written on request.
    if let Ok(dir) = std::env::var("IPFIB_SNAPSHOT_SEED_DIR") {
        std::fs::write(std::path::Path::new(&dir).join("small"), &good).expect("seed");
    }
    assert!(refused(&good, true).is_none());
    // Truncated: at every length near either end, every 11th between;
    // refused, never a panic.
    let lens = (0..good.len()).filter(|&n| n < 128 || n + 128 > good.len() || n % 11 == 0);
    for n in lens {
        let e = refused(&good[..n], true).unwrap_or_else(|| panic!("{n} bytes loaded"));
        let text = e.to_string();
        assert!(
            n < 8 || text.contains("byte offset"),
            "truncated to {n}: {text}"
        );
    }
    // Every bit flipped somewhere in the file: the checksums refuse it.
    for at in (0..good.len()).step_by(13) {
        let mut b = good.clone();
        b[at] ^= 1 << (at % 8);
        assert!(refused(&b, true).is_some(), "bit flipped at {at} loaded");
        // Unverified, the structure checks alone: no panic, and a file
        // that loads holds well-formed route lists.
        let _ = refused(&b, false);
    }
    // Another version.
    let mut b = good.clone();
    b[8] = 2;
    reseal(&mut b);
    assert!(matches!(
        refused(&b, true),
        Some(SnapshotError::Version { found: 2 })
    ));
    // Not a snapshot at all.
    assert!(matches!(
        refused(b"not a snapshot, just text", true),
        Some(SnapshotError::NotASnapshot)
    ));
}

#[test]
fn crafted_structures_name_their_offset() {
    let good = small();
    // The first prefix record: family, length, address, route count,
    // then its first route (peer, path id, set).
    let fam = good[16];
    let addr = if fam == 4 { 4 } else { 16 };
    let route = 16 + 2 + addr + 4;
    let cases: Vec<(usize, Vec<u8>, &str)> = vec![
        (route, 999u32.to_le_bytes().to_vec(), "peer 999"),
        (
            route + 8,
            7777u32.to_le_bytes().to_vec(),
            "attribute set 7777",
        ),
        (16, vec![5], "prefix family 5"),
        (17, vec![129], "prefix"),
        (route - 4, 0u32.to_le_bytes().to_vec(), "without routes"),
        (route - 4, u32::MAX.to_le_bytes().to_vec(), "does not fit"),
    ];
    for (at, bytes, what) in cases {
        let mut b = good.clone();
        b[at..at + bytes.len()].copy_from_slice(&bytes);
        reseal(&mut b);
        let e = refused(&b, true).unwrap_or_else(|| panic!("{what}: loaded"));
        let text = e.to_string();
        assert!(text.contains(what), "{what}: {text}");
        match e {
            SnapshotError::Corrupt { offset, .. } => {
                assert!(
                    offset as usize <= at + 8 && offset as usize >= 16,
                    "{what}: offset {offset}, changed {at}"
                )
            }
            other => panic!("{what}: {other}"),
        }
    }
    // Host bits set in the first prefix.
    let mut b = good.clone();
    b[18 + addr - 1] |= 1;
    reseal(&mut b);
    let e = refused(&b, true).expect("host bits loaded").to_string();
    assert!(e.contains("byte offset 16"), "{e}");
}

/// Stale since the first load that restored a route, kept across later
/// writes and loads: restarts more often than the grace period do not
/// keep a router's old routes for ever.
#[test]
fn stale_since_survives_restarts() {
    let a = Rib::new();
    let k = key("192.0.2.1", RibKind::PrePolicy);
    let p = router_peer(&a, &k, NlriClass::Unicast);
    a.announce(&p, prefix(1, false), 0, &attrs(&a, 1))
        .expect("announce");
    assert_eq!(p.stale_since(), 0);
    let b = loaded(&write(&a));
    let since = b
        .peers()
        .all()
        .map(|p| p.stale_since())
        .max()
        .expect("a peer");
    assert!(since > 0);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let c = loaded(&write(&b));
    let peer = c.peers().all().next().expect("a peer");
    assert!(peer.stale && peer.stale_since() == since);
    // A grace period counted from then.
    assert_eq!(c.expire_stale_since(since), 0);
    assert_eq!(c.stale_peers(), 1);
    assert_eq!(c.expire_stale_since(since + 1), 1);
    assert!(c.routes(&prefix(1, false)).is_empty());
}

/// The bound on routes per prefix applies to a load: a lowered bound (or
/// a crafted file) keeps the first routes, counts the rest.
#[test]
fn load_applies_the_route_bound() {
    let a = Rib::new();
    let peers: Vec<_> = (0..6)
        .map(|i| {
            a.add_peer(0, key(&format!("192.0.2.{}", i + 1), RibKind::Mrt))
                .expect("peer")
        })
        .collect();
    for p in &peers {
        a.announce(p, prefix(1, false), 0, &attrs(&a, 1))
            .expect("announce");
    }
    let bytes = write(&a);
    let b = Rib::new();
    b.set_max_routes_per_prefix(4);
    snapshot::load_bytes(&bytes, &b, true).expect("load");
    assert_eq!(b.routes(&prefix(1, false)).len(), 4);
    assert_eq!(b.route_count(), 4);
    assert_eq!(
        b.counters()
            .over_prefix_limit
            .load(std::sync::atomic::Ordering::Relaxed),
        2
    );
}
