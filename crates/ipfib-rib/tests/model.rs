//! The RIB against a deliberately simple model: random sequences of
//! announce / withdraw / peer down / sweep over a small prefix universe
//! rich in nesting, then every lookup (all routes, per peer, by next hop)
//! and every exact query compared with a brute-force answer.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_rib::attrs::{AsPath, AttrsRef, Origin, AS_SEQUENCE, AS_SET};
use ipfib_rib::{Hit, PeerFilter, PeerKey, Query, Rib, RibKind};
use proptest::prelude::*;

const PREFIXES: [&str; 10] = [
    "0.0.0.0/0",
    "10.0.0.0/8",
    "10.1.0.0/16",
    "10.1.2.0/24",
    "10.1.2.128/25",
    "10.1.2.255/32",
    "192.0.2.0/24",
    "::/0",
    "2001:db8::/32",
    "2001:db8:1::/48",
];
const ADDRS: [&str; 9] = [
    "10.1.2.255",
    "10.1.2.1",
    "10.1.3.1",
    "10.2.0.0",
    "11.0.0.0",
    "192.0.2.7",
    "2001:db8:1::1",
    "2001:db8:2::1",
    "2002::1",
];
const PEERS: usize = 4;

/// A lookup query and which model routes it allows.
type Fits = Box<dyn Fn(&(usize, usize, u32), &M) -> bool>;
const KINDS: [RibKind; 4] = [
    RibKind::PrePolicy,
    RibKind::PostPolicy,
    RibKind::LocRib,
    RibKind::PrePolicy,
];

#[derive(Clone, Debug)]
enum Op {
    Announce {
        peer: usize,
        prefix: usize,
        path_id: u32,
        lp: u8,
        path_len: u8,
        /// A trailing AS_SET of two ASNs (counts one in the path length;
        /// no origin ASN).
        set: bool,
        origin: u8,
        /// MED; `None` compares as 0.
        med: Option<u8>,
        nh: u8,
    },
    Withdraw {
        peer: usize,
        prefix: usize,
        path_id: u32,
    },
    Down {
        peer: usize,
    },
    Up {
        peer: usize,
    },
    Sweep,
    /// Announce path ids `from..from + count` (attributes varied by path
    /// id): prefixes past 512 routes, whose lists are trees.
    Bulk {
        peer: usize,
        prefix: usize,
        from: u32,
        count: u32,
        vary: u8,
    },
    /// Withdraw path ids `from..from + count`.
    BulkWithdraw {
        peer: usize,
        prefix: usize,
        from: u32,
        count: u32,
    },
    /// Compare everything with the model now (ids freed and recycled by
    /// the operations before are in use).
    Check,
}

fn op() -> impl Strategy<Value = Op> {
    op_with(0)
}

/// Ops with `bulk` weight of bulk announcements and withdrawals (and
/// checks as often).
fn op_with(bulk: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        bulk => (0..PEERS, 0..3usize, 0..300u32, 1..400u32, any::<u8>())
            .prop_map(|(peer, prefix, from, count, vary)| Op::Bulk { peer, prefix, from, count, vary }),
        bulk => (0..PEERS, 0..3usize, 0..300u32, 1..400u32)
            .prop_map(|(peer, prefix, from, count)| Op::BulkWithdraw { peer, prefix, from, count }),
        bulk => Just(Op::Check),
        8 => (
            (0..PEERS, 0..PREFIXES.len(), 0..2u32, 0..3u8),
            (1..4u8, any::<bool>(), 0..3u8, prop::option::of(0..3u8), 0..3u8),
        )
            .prop_map(|((peer, prefix, path_id, lp), (path_len, set, origin, med, nh))| Op::Announce {
                peer,
                prefix,
                path_id,
                lp,
                path_len,
                set,
                origin,
                med,
                nh
            }),
        3 => (0..PEERS, 0..PREFIXES.len(), 0..2u32).prop_map(|(peer, prefix, path_id)| Op::Withdraw { peer, prefix, path_id }),
        1 => (0..PEERS).prop_map(|peer| Op::Down { peer }),
        1 => (0..PEERS).prop_map(|peer| Op::Up { peer }),
        1 => Just(Op::Sweep),
        1 => Just(Op::Check),
    ]
}

/// A route in the model: (kind rank, local pref, path len, peer id, path id, next hop).
#[derive(Clone, Debug, PartialEq)]
struct M {
    rank: u8,
    lp: u32,
    path_len: u32,
    origin: u8,
    med: u32,
    peer: u32,
    path_id: u32,
    nh: IpAddr,
}

fn nh(i: u8, v6: bool) -> IpAddr {
    if v6 {
        format!("2001:db8::{}", i + 1).parse().unwrap()
    } else {
        format!("192.0.2.{}", i + 1).parse().unwrap()
    }
}

/// The documented preference, written independently of the RIB's code.
fn best<'a>(cands: impl Iterator<Item = &'a M>) -> Option<&'a M> {
    cands.min_by(|a, b| {
        a.rank
            .cmp(&b.rank)
            .then(b.lp.cmp(&a.lp))
            .then(a.path_len.cmp(&b.path_len))
            .then(a.origin.cmp(&b.origin))
            .then(a.med.cmp(&b.med))
            .then(a.peer.cmp(&b.peer))
            .then(a.path_id.cmp(&b.path_id))
    })
}

/// One announcement, in the RIB and (if its peer is up) in the model.
fn apply(
    rib: &Rib,
    peers: &[std::sync::Arc<ipfib_rib::PeerInfo>],
    peer_ids: &[u32],
    model: &mut BTreeMap<(usize, usize, u32), M>,
    prefixes: &[AnyPrefix],
    op: Op,
) {
    let Op::Announce {
        peer,
        prefix,
        path_id,
        lp,
        path_len,
        set,
        origin,
        med,
        nh: n,
    } = op
    else {
        unreachable!("announcements only")
    };
    let p = prefixes[prefix];
    let path: Vec<u32> = (0..path_len as u32).map(|i| 64500 + i).collect();
    let tail = [64600u32, 64601];
    let mut segments = vec![(AS_SEQUENCE, &path[..])];
    if set {
        segments.push((AS_SET, &tail[..]));
    }
    let words = AsPath::encode(segments);
    let hop = nh(n, p.family() == 6);
    let attrs = rib.intern(&AttrsRef {
        as_path: &words,
        next_hop: Some(hop),
        local_pref: Some(100 + lp as u32),
        origin: Origin::from_wire(origin).unwrap(),
        med: med.map(u32::from),
        ..Default::default()
    });
    rib.announce(&peers[peer], p, path_id, &attrs).unwrap();
    if peers[peer].is_up() {
        model.insert(
            (peer, prefix, path_id),
            M {
                rank: KINDS[peer].rank(),
                lp: 100 + lp as u32,
                path_len: path_len as u32 + set as u32,
                origin,
                med: med.unwrap_or(0) as u32,
                peer: peer_ids[peer],
                path_id,
                nh: hop,
            },
        );
    }
}

fn run(ops: Vec<Op>) {
    let rib = Rib::new();
    let mut peer_ids: Vec<u32> = Vec::new();
    let mut peers = Vec::new();
    for (i, &kind) in KINDS.iter().enumerate() {
        let p = rib
            .add_peer(
                1,
                PeerKey {
                    peer_type: 0,
                    distinguisher: 0,
                    address: format!("127.0.0.{}", i + 1).parse().unwrap(),
                    asn: 65000,
                    bgp_id: i as u32,
                    rib: kind,
                },
            )
            .unwrap();
        peer_ids.push(p.id);
        peers.push(p);
    }
    // (peer slot, prefix, path id) -> route, only live peers' routes.
    let mut model: BTreeMap<(usize, usize, u32), M> = BTreeMap::new();
    let prefixes: Vec<AnyPrefix> = PREFIXES.iter().map(|p| p.parse().unwrap()).collect();
    for op in ops {
        match op {
            Op::Bulk {
                peer,
                prefix,
                from,
                count,
                vary,
            } => {
                for path_id in from..from + count {
                    let v = path_id.wrapping_mul(2_654_435_761) ^ u32::from(vary);
                    let announce = Op::Announce {
                        peer,
                        prefix,
                        path_id,
                        lp: (v % 3) as u8,
                        path_len: 1 + (v / 3 % 3) as u8,
                        set: v / 9 % 5 == 0,
                        origin: (v / 45 % 3) as u8,
                        med: (v / 135 % 4 != 0).then_some((v / 540 % 3) as u8),
                        nh: (v / 1620 % 3) as u8,
                    };
                    apply(&rib, &peers, &peer_ids, &mut model, &prefixes, announce);
                }
            }
            Op::BulkWithdraw {
                peer,
                prefix,
                from,
                count,
            } => {
                for path_id in from..from + count {
                    rib.withdraw(&peers[peer], prefixes[prefix], path_id);
                    model.remove(&(peer, prefix, path_id));
                }
            }
            announce @ Op::Announce { .. } => {
                apply(&rib, &peers, &peer_ids, &mut model, &prefixes, announce)
            }
            Op::Withdraw {
                peer,
                prefix,
                path_id,
            } => {
                rib.withdraw(&peers[peer], prefixes[prefix], path_id);
                model.remove(&(peer, prefix, path_id));
            }
            Op::Down { peer } => {
                rib.peer_down(peer_ids[peer]);
                model.retain(|k, _| k.0 != peer);
            }
            Op::Up { peer } => {
                // A new Peer Up: a new peer id for the same neighbour.
                if !peers[peer].is_up() {
                    let key = peers[peer].key.clone();
                    let p = rib.add_peer(1, key).unwrap();
                    peer_ids[peer] = p.id;
                    peers[peer] = p;
                }
            }
            Op::Sweep => {
                rib.sweep();
            }
            Op::Check => check(&rib, &peer_ids, &model, &prefixes),
        }
    }
    check(&rib, &peer_ids, &model, &prefixes);
    // After a sweep, no dead peer's entry is left anywhere, and only
    // prefixes with routes keep an id.
    rib.sweep();
    rib.sync();
    let with_routes: std::collections::BTreeSet<usize> = model.keys().map(|k| k.1).collect();
    assert_eq!(rib.prefix_count(), with_routes.len(), "prefixes kept");
    let mut left = 0;
    rib.for_each_prefix(|r| left += r.iter().filter(|e| !rib.peers().is_live(e.peer)).count());
    assert_eq!(left, 0);
}

/// Every lookup (single, batch), exact query and count against the model.
fn check(
    rib: &Rib,
    peer_ids: &[u32],
    model: &BTreeMap<(usize, usize, u32), M>,
    prefixes: &[AnyPrefix],
) {
    rib.sync();
    rib.validate_route_lists();
    let cover = |pi: usize, a: AnyAddr| {
        let p = prefixes[pi];
        match (p, a) {
            (AnyPrefix::V4(p), AnyAddr::V4(a)) => p.contains(a),
            (AnyPrefix::V6(p), AnyAddr::V6(a)) => p.contains(a),
            _ => false,
        }
    };
    for a in ADDRS {
        let addr = AnyAddr::unmapped(a.parse().unwrap());
        let v6 = matches!(addr, AnyAddr::V6(_));
        let mut queries: Vec<(Query, Fits)> = vec![(Query::default(), Box::new(|_, _| true))];
        for &id in peer_ids {
            queries.push((
                Query {
                    peer: Some(PeerFilter::Id(id)),
                    next_hop: None,
                    ..Query::default()
                },
                Box::new(move |_, m| m.peer == id),
            ));
        }
        for n in 0..3u8 {
            queries.push((
                Query {
                    peer: None,
                    next_hop: Some(nh(n, v6)),
                    ..Query::default()
                },
                Box::new(|_, _| true),
            ));
        }
        for (q, fits) in &queries {
            // Longest covering prefix with a fitting route; among its
            // routes, the next hop first, then the preference.
            let mut want = None;
            let mut best_len = -1i32;
            for (pi, p) in prefixes.iter().enumerate() {
                if !cover(pi, addr) || (p.len() as i32) <= best_len {
                    continue;
                }
                let rs: Vec<&M> = model
                    .iter()
                    .filter(|(k, m)| k.1 == pi && fits(k, m))
                    .map(|(_, m)| m)
                    .collect();
                if rs.is_empty() {
                    continue;
                }
                let by_nh = q
                    .next_hop
                    .and_then(|h| best(rs.iter().copied().filter(|m| m.nh == h)));
                want = Some((
                    *p,
                    by_nh.or_else(|| best(rs.iter().copied())).unwrap().clone(),
                ));
                best_len = p.len() as i32;
            }
            let route = rib.lookup(addr, q);
            let got = route
                .as_ref()
                .map(|r| (r.prefix, r.peer.id, r.path_id, r.attrs.next_hop));
            // The batch path (prefetching, groups of 8) answers the same,
            // here with the address repeated across several groups.
            let hit = route.as_ref().map(|r| Hit {
                prefix_len: r.prefix.len(),
                origin_asn: r.attrs.as_path.origin_asn(),
                peer: r.peer.id,
                next_hop: r.attrs.next_hop,
            });
            let mut out = vec![None; 19];
            match addr {
                AnyAddr::V4(x) => rib.lookup_batch_v4(&[x; 19], q, &mut out),
                AnyAddr::V6(x) => rib.lookup_batch_v6(&[x; 19], q, &mut out),
            }
            assert_eq!(out, vec![hit; 19], "batch {a} {q:?}");
            let want = want.map(|(p, m)| (p, m.peer, m.path_id, Some(m.nh)));
            assert_eq!(got, want, "lookup {a} {q:?}");
        }
    }
    // Batches of distinct addresses (positions across several groups of 8
    // and chunks of 32) answer position by position as single lookups do.
    let v4: Vec<u32> = ADDRS
        .iter()
        .filter_map(|a| match AnyAddr::unmapped(a.parse().unwrap()) {
            AnyAddr::V4(x) => Some(x),
            AnyAddr::V6(_) => None,
        })
        .collect();
    let v6: Vec<u128> = ADDRS
        .iter()
        .filter_map(|a| match AnyAddr::unmapped(a.parse().unwrap()) {
            AnyAddr::V6(x) => Some(x),
            AnyAddr::V4(_) => None,
        })
        .collect();
    let batch4: Vec<u32> = (0..70).map(|i| v4[(i * 5 + i / 7) % v4.len()]).collect();
    let batch6: Vec<u128> = (0..70).map(|i| v6[(i * 2 + i / 5) % v6.len()]).collect();
    let mut queries = vec![Query::default()];
    queries.extend(peer_ids.iter().map(|&id| Query {
        peer: Some(PeerFilter::Id(id)),
        next_hop: None,
        ..Query::default()
    }));
    queries.push(Query {
        peer: None,
        next_hop: Some(nh(1, false)),
        ..Query::default()
    });
    let single = |a: AnyAddr, q: &Query| {
        rib.lookup(a, q).map(|r| Hit {
            prefix_len: r.prefix.len(),
            origin_asn: r.attrs.as_path.origin_asn(),
            peer: r.peer.id,
            next_hop: r.attrs.next_hop,
        })
    };
    for q in &queries {
        let mut out = vec![None; 70];
        rib.lookup_batch_v4(&batch4, q, &mut out);
        let want: Vec<_> = batch4.iter().map(|&x| single(AnyAddr::V4(x), q)).collect();
        assert_eq!(out, want, "IPv4 batch {q:?}");
        rib.lookup_batch_v6(&batch6, q, &mut out);
        let want: Vec<_> = batch6.iter().map(|&x| single(AnyAddr::V6(x), q)).collect();
        assert_eq!(out, want, "IPv6 batch {q:?}");
    }
    // Exact queries: every live route, in preference order.
    for (pi, p) in prefixes.iter().enumerate() {
        let got: Vec<(u32, u32)> = rib
            .routes(p)
            .iter()
            .map(|r| (r.peer.id, r.path_id))
            .collect();
        let mut rest: Vec<&M> = model
            .iter()
            .filter(|(k, _)| k.1 == pi)
            .map(|(_, m)| m)
            .collect();
        let mut want = Vec::new();
        while let Some(m) = best(rest.iter().copied()) {
            want.push((m.peer, m.path_id));
            let m = m.clone();
            rest.retain(|x| **x != m);
        }
        assert_eq!(got, want, "routes {p}");
    }
    let live: u64 = model.len() as u64;
    assert_eq!(rib.route_count(), live, "route count");
    // Ids are recycled: never more handed out than prefixes in the
    // universe plus one (a writer that re-adds a prefix while the FIB
    // thread, which frees one id at a time, has taken the id out of the
    // map and not yet onto the free list takes a new id; the freed one
    // then waits on the free list for the next such race), and every id
    // is either a known prefix's or free (`sync` waited for the frees).
    let (high, free) = rib.prefix_ids();
    assert!(high as usize <= prefixes.len() + 1, "{high} ids");
    assert_eq!(rib.prefix_count() + free, high as usize, "ids lost");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn rib_matches_model(ops in prop::collection::vec(op(), 0..120)) {
        run(ops);
    }
}

proptest! {
    // Prefixes of up to 2,800 routes (trees past 512), and back down.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn rib_matches_model_with_thousands_of_routes_per_prefix(
        ops in prop::collection::vec(op_with(4), 0..60)
    ) {
        run(ops);
    }
}

#[test]
fn peer_down_hides_routes_at_once_and_sweep_frees_them() {
    let rib = Rib::new();
    let key = |i: u8| PeerKey {
        peer_type: 0,
        distinguisher: 0,
        address: IpAddr::from([127, 0, 0, i]),
        asn: 65000,
        bgp_id: i as u32,
        rib: RibKind::PrePolicy,
    };
    let a = rib.add_peer(1, key(1)).unwrap();
    let b = rib.add_peer(2, key(2)).unwrap();
    let words = AsPath::encode([(AS_SEQUENCE, &[64500u32, 13335][..])]);
    let attrs = rib.intern(&AttrsRef {
        as_path: &words,
        ..Default::default()
    });
    for i in 0..1000u32 {
        let p: AnyPrefix = format!("10.{}.{}.0/24", i / 256, i % 256).parse().unwrap();
        rib.announce(&a, p, 0, &attrs).unwrap();
        if i % 2 == 0 {
            rib.announce(&b, p, 0, &attrs).unwrap();
        }
    }
    rib.sync();
    let addr = AnyAddr::V4(u32::from_be_bytes([10, 0, 1, 1]));
    assert_eq!(rib.lookup(addr, &Query::default()).unwrap().peer.id, a.id);
    assert!(rib.peer_down(a.id));
    assert!(!rib.peer_down(a.id), "idempotent");
    // Invisible at once, before any sweep: odd prefixes had only `a`.
    assert!(rib.lookup(addr, &Query::default()).is_none());
    let even = AnyAddr::V4(u32::from_be_bytes([10, 0, 0, 1]));
    assert_eq!(rib.lookup(even, &Query::default()).unwrap().peer.id, b.id);
    assert_eq!(rib.route_count(), 500);
    // The sweeper thread or this call removes them; either way they go.
    rib.sweep();
    rib.sync();
    let mut entries = 0;
    rib.for_each_prefix(|r| entries += r.len());
    assert_eq!(entries, 500);
    assert_eq!(rib.attrs().counts().0, 1);
}
