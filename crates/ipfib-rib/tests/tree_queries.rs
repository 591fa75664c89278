//! One prefix churned across the flat/tree conversions (512 up, 256
//! down) by peers of every RIB kind, three instances and shared addresses,
//! with Peer Downs, sweeps and new Peer Ups: every restricted lookup,
//! exact query and `routes_matching_in` compared with a brute force over
//! a model of the live routes.

mod common;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_rib::attrs::{AsPath, AttrsRef, Origin, AS_SEQUENCE};
use ipfib_rib::{Instance, Match, PeerFilter, PeerInfo, PeerKey, Query, Rib, RibKind, RibSet};

use common::rng::Rng;

#[derive(Clone, Debug)]
struct M {
    lp: u32,
    path_len: u32,
    origin: u8,
    med: u32,
    nh: IpAddr,
}

struct P {
    key: PeerKey,
    info: Arc<PeerInfo>,
}

const KINDS: [RibKind; 6] = [
    RibKind::LocRib,
    RibKind::PostPolicy,
    RibKind::PrePolicy,
    RibKind::Mrt,
    RibKind::AdjRibOutPre,
    RibKind::AdjRibOutPost,
];
const RD1: u64 = (64499u64 << 32) | 11;
const RD2: u64 = (64499u64 << 32) | 12;

fn pkey(i: usize, r: &mut Rng) -> PeerKey {
    let kind = KINDS[r.below(6) as usize];
    let (peer_type, distinguisher) = match r.below(5) {
        0 => (1u8, RD1),
        1 => (1, RD2),
        2 => (3, 0),
        3 => (2, RD1),
        _ => (0, 0),
    };
    PeerKey {
        peer_type,
        distinguisher,
        // a few addresses shared by several peers
        address: IpAddr::from([192, 0, 2, (i % 7) as u8 + 1]),
        asn: 65000 + i as u32,
        bgp_id: i as u32,
        rib: kind,
    }
}

fn fits(k: &PeerKey, id: u32, q: &Query) -> bool {
    q.ribs.has(k.rib)
        && q.instance.fits(k.peer_type, k.distinguisher)
        && match &q.peer {
            None => true,
            Some(PeerFilter::Id(x)) => *x == id,
            Some(PeerFilter::Address(a)) => ipfib_rib::unmap(*a) == ipfib_rib::unmap(k.address),
        }
}

type Key = (u8, std::cmp::Reverse<u32>, u32, u8, u32, u32, u32);
fn pref(k: &PeerKey, id: u32, path_id: u32, m: &M) -> Key {
    (
        k.rib.rank(),
        std::cmp::Reverse(m.lp),
        m.path_len,
        m.origin,
        m.med,
        id,
        path_id,
    )
}

fn tree_queries(seed: u64) -> (usize, usize, usize) {
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let rib = Rib::new();
    rib.set_max_routes_per_prefix(0);
    let p: AnyPrefix = "10.0.0.0/8".parse().unwrap();
    let addr = AnyAddr::unmapped("10.1.2.3".parse().unwrap());
    let npeers = 48;
    let mut peers: Vec<P> = (0..npeers)
        .map(|i| {
            let key = pkey(i, &mut r);
            let info = rib.add_peer(1, key.clone()).unwrap();
            P { key, info }
        })
        .collect();
    // (peer index, path id) -> attributes; only live peers' routes.
    let mut model: BTreeMap<(usize, u32), M> = BTreeMap::new();
    let nhs: Vec<IpAddr> = (1..=4).map(|i| IpAddr::from([198, 51, 100, i])).collect();
    let mut queries: Vec<Query> = vec![Query::default(), Query::everything()];
    for inst in [
        Instance::Global,
        Instance::Rd(RD1, RD1),
        Instance::Rd(RD2, RD1),
        Instance::All,
    ] {
        for ribs in [
            RibSet::DEFAULT,
            RibSet::ALL,
            RibSet::of([RibKind::LocRib]),
            RibSet::of([RibKind::PrePolicy, RibKind::AdjRibOutPost]),
        ] {
            queries.push(Query {
                instance: inst,
                ribs,
                ..Query::default()
            });
        }
    }
    let (mut max_len, mut trees_seen, mut checks) = (0, 0, 0);
    let mut target = 900usize;
    for step in 0..6000 {
        if step % 1500 == 0 {
            target = [900, 100, 1200, 0][(step / 1500) % 4];
        }
        let i = r.below(npeers as u64) as usize;
        let path_id = r.below(40) as u32;
        let grow = model.len() < target || r.below(5) == 0;
        match r.below(200) {
            0 => {
                // Peer Down (sweeper thread runs), sometimes an explicit sweep,
                // and a new Peer Up of the same neighbour under a new id.
                rib.peer_down(peers[i].info.id);
                model.retain(|k, _| k.0 != i);
                if r.below(2) == 0 {
                    rib.sweep();
                }
                let info = rib.add_peer(1, peers[i].key.clone()).unwrap();
                peers[i].info = info;
            }
            _ if grow => {
                let m = M {
                    lp: 100 + r.below(3) as u32,
                    path_len: 1 + r.below(3) as u32,
                    origin: r.below(3) as u8,
                    med: r.below(3) as u32,
                    nh: nhs[r.below(4) as usize],
                };
                let path: Vec<u32> = (0..m.path_len).map(|x| 64500 + x).collect();
                let words = AsPath::encode([(AS_SEQUENCE, &path[..])]);
                let set = rib.intern(&AttrsRef {
                    as_path: &words,
                    next_hop: Some(m.nh),
                    local_pref: Some(m.lp),
                    origin: Origin::from_wire(m.origin).unwrap(),
                    med: Some(m.med),
                    ..Default::default()
                });
                assert!(rib.announce(&peers[i].info, p, path_id, &set).unwrap());
                model.insert((i, path_id), m);
            }
            _ => {
                // An existing route most of the time (so lists shrink fast).
                let (i, path_id) = if !model.is_empty() && r.below(4) != 0 {
                    *model
                        .keys()
                        .nth(r.below(model.len() as u64) as usize)
                        .unwrap()
                } else {
                    (i, path_id)
                };
                rib.withdraw(&peers[i].info, p, path_id);
                model.remove(&(i, path_id));
            }
        }
        if step % 53 != 0 {
            continue;
        }
        checks += 1;
        rib.sync();
        rib.validate_route_lists();
        let mut len = 0;
        rib.for_each_prefix(|rt| {
            if rt.prefix == p {
                len = rt.len();
            }
        });
        max_len = max_len.max(len);
        if len > 512 {
            trees_seen += 1;
        }
        if std::env::var("TRACE").is_ok() {
            eprint!("{len} ");
        }
        let live: Vec<(Key, usize, u32)> = model
            .iter()
            .map(|(&(i, pid), m)| (pref(&peers[i].key, peers[i].info.id, pid, m), i, pid))
            .collect();
        // Exact query: every live route, in preference order.
        let mut want: Vec<(Key, usize, u32)> = live.clone();
        want.sort();
        let got: Vec<(u32, u32)> = rib
            .routes(&p)
            .iter()
            .map(|x| (x.peer.id, x.path_id))
            .collect();
        let want_ids: Vec<(u32, u32)> = want.iter().map(|w| (peers[w.1].info.id, w.2)).collect();
        assert_eq!(got, want_ids, "seed {seed} step {step}: routes()");
        let mut qs = queries.clone();
        for pi in [i, (i + 1) % npeers] {
            qs.push(Query {
                peer: Some(PeerFilter::Id(peers[pi].info.id)),
                instance: Instance::All,
                ribs: RibSet::ALL,
                ..Query::default()
            });
            qs.push(Query {
                peer: Some(PeerFilter::Address(peers[pi].key.address)),
                ..Query::default()
            });
        }
        for nh in &nhs {
            qs.push(Query {
                next_hop: Some(*nh),
                ..Query::default()
            });
            qs.push(Query {
                next_hop: Some(*nh),
                instance: Instance::All,
                ribs: RibSet::ALL,
                ..Query::default()
            });
        }
        for q in &qs {
            let fit: Vec<&(Key, usize, u32)> = want
                .iter()
                .filter(|w| fits(&peers[w.1].key, peers[w.1].info.id, q))
                .collect();
            let by_nh = q
                .next_hop
                .and_then(|h| fit.iter().find(|w| model[&(w.1, w.2)].nh == h).copied());
            let best = by_nh
                .or(fit.first().copied())
                .map(|w| (peers[w.1].info.id, w.2));
            let got = rib
                .lookup(addr, q)
                .filter(|x| x.prefix == p)
                .map(|x| (x.peer.id, x.path_id));
            assert_eq!(got, best, "seed {seed} step {step} len {len}: lookup {q:?}");
            let got: Vec<(u32, u32)> = rib
                .routes_matching_in(&p, Match::Exact, usize::MAX, q)
                .iter()
                .map(|x| (x.peer.id, x.path_id))
                .collect();
            let want_q: Vec<(u32, u32)> = fit.iter().map(|w| (peers[w.1].info.id, w.2)).collect();
            assert_eq!(
                got, want_q,
                "seed {seed} step {step}: routes_matching_in {q:?}"
            );
        }
    }
    (max_len, trees_seen, checks)
}

#[test]
fn restricted_queries_on_trees_match_a_brute_force() {
    let mut trees = 0;
    for seed in 1..=5 {
        let (max_len, trees_seen, checks) = tree_queries(seed);
        assert!(checks > 100, "seed {seed}: {checks} checks");
        assert!(
            max_len > 512,
            "seed {seed}: the prefix never became a tree ({max_len})"
        );
        trees += trees_seen;
    }
    assert!(trees > 20, "{trees} checks on trees");
}
