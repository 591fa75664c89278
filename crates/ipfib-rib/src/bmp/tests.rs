use super::*;
use ipfib::prefix::AnyPrefix;

fn bmp(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![3];
    m.extend_from_slice(&((6 + body.len()) as u32).to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

fn peer_header(peer_type: u8, rd: u64, addr: [u8; 4]) -> Vec<u8> {
    let mut h = vec![peer_type, 0];
    h.extend_from_slice(&rd.to_be_bytes());
    h.extend_from_slice(&[0; 12]);
    h.extend_from_slice(&addr);
    h.extend_from_slice(&64500u32.to_be_bytes());
    h.extend_from_slice(&addr);
    h.extend_from_slice(&[0; 8]);
    h
}

fn bgp(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

/// An OPEN with these capabilities (4-octet AS always).
fn open(caps: &[u8]) -> Vec<u8> {
    let mut c = vec![65, 4, 0, 0, 0xfb, 0xf4];
    c.extend_from_slice(caps);
    let mut body = vec![4, 0xfb, 0xf4, 0, 90, 192, 0, 2, 9, (c.len() + 2) as u8, 2];
    body.push(c.len() as u8);
    body.extend(c);
    bgp(1, &body)
}

fn peer_up(h: &[u8], caps: &[u8]) -> Vec<u8> {
    let mut b = h.to_vec();
    b.extend_from_slice(&[0; 20]);
    b.extend(open(caps));
    b.extend(open(caps));
    bmp(PEER_UP, &b)
}

fn update(origin: &[u8], nlri: &[u8]) -> Vec<u8> {
    let mut a = vec![0x40, 1, origin.len() as u8];
    a.extend_from_slice(origin);
    a.extend([0x40, 2, 6, 2, 1, 0, 0, 0xfb, 0xf4, 0x40, 3, 4, 192, 0, 2, 1]);
    let mut body = vec![0, 0];
    body.extend_from_slice(&(a.len() as u16).to_be_bytes());
    body.extend(a);
    body.extend_from_slice(nlri);
    bgp(2, &body)
}

fn rm(h: &[u8], u: &[u8]) -> Vec<u8> {
    let mut b = h.to_vec();
    b.extend_from_slice(u);
    bmp(ROUTE_MONITORING, &b)
}

fn prefixes(rib: &Rib) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    rib.for_each_prefix(|r| {
        for e in r.iter() {
            out.push((r.prefix.to_string(), e.path_id));
        }
    });
    out.sort();
    out
}

/// An UPDATE with ORIGIN, AS_PATH and one MP attribute (14 or 15).
fn mp_update(code: u8, mp: &[u8]) -> Vec<u8> {
    let mut a = vec![0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfb, 0xf4];
    a.extend([0x80, code, mp.len() as u8]);
    a.extend_from_slice(mp);
    let mut body = vec![0, 0];
    body.extend_from_slice(&(a.len() as u16).to_be_bytes());
    body.extend(a);
    bgp(2, &body)
}

/// VPN NLRI: ADD-PATH negotiated for VPN-IPv4 is read from VPN's own
/// bit; RD 0:0 from a global peer is not the global instance; VPN and
/// labeled routes never replace the peer's unicast route of the same
/// prefix; withdrawals register no RIB peer.
#[test]
fn a_session_holds_at_most_its_rib_peers() {
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, Arc::clone(&rib));
    s.limits.max_rib_peers = Some(50);
    // MP (1,128), no ADD-PATH.
    let caps = [1, 4, 0, 1, 0, 128];
    // VPN 10.1.0.0/16 under distinguisher `rd`: one RIB peer each.
    let vpn = |rd: u32| {
        let mut mp = vec![0, 1, 128, 12, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1, 0];
        mp.extend([24 + 64 + 16, 0, 1, 1, 0, 0]);
        mp.extend(rd.to_be_bytes());
        mp.extend([0, 0, 10, 1]);
        mp_update(14, &mp)
    };
    // Two neighbours of 40 distinguishers each: 50 RIB peers at most.
    for addr in [[192, 0, 2, 1], [192, 0, 2, 2]] {
        let h = peer_header(0, 0, addr);
        s.handle(&peer_up(&h, &caps)).unwrap();
        for rd in 0..40 {
            s.handle(&rm(&h, &vpn(rd))).unwrap();
        }
    }
    assert_eq!(s.live_peers().len(), 50);
    assert_eq!(s.stats.peers_over_limit, 30);
    assert_eq!(rib.routes(&"10.1.0.0/16".parse().unwrap()).len(), 50);
    assert!(
        s.limit_notes.iter().any(|n| n.contains("50 per session")),
        "{:?}",
        s.limit_notes
    );
    // A neighbour's Peer Down gives its room back.
    let mut down = peer_header(0, 0, [192, 0, 2, 1]);
    down.push(2);
    s.handle(&bmp(PEER_DOWN, &down)).unwrap();
    let h = peer_header(0, 0, [192, 0, 2, 3]);
    s.handle(&peer_up(&h, &caps)).unwrap();
    for rd in 0..45 {
        s.handle(&rm(&h, &vpn(rd))).unwrap();
    }
    assert_eq!(s.live_peers().len(), 50);
}

#[test]
fn vpn_routes_keep_to_their_instances() {
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, Arc::clone(&rib));
    let h = peer_header(0, 0, [192, 0, 2, 1]);
    // MP (1,1), (1,128), (1,4); ADD-PATH both ways for (1,128) only.
    let caps = [
        1, 4, 0, 1, 0, 1, 1, 4, 0, 1, 0, 128, 1, 4, 0, 1, 0, 4, 69, 4, 0, 1, 128, 3,
    ];
    s.handle(&peer_up(&h, &caps)).unwrap();
    s.handle(&rm(&h, &update(&[0], &[16, 10, 1]))).unwrap();
    let vpn = |path_id: u8, rd: [u8; 8]| {
        let mut mp = vec![0, 1, 128, 12, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1, 0];
        mp.extend([0, 0, 0, path_id, 24 + 64 + 16, 0, 1, 1]);
        mp.extend(rd);
        mp.extend([10, 1]);
        mp_update(14, &mp)
    };
    s.handle(&rm(&h, &vpn(5, [0, 0, 0xfb, 0xf3, 0, 0, 0, 11])))
        .unwrap();
    s.handle(&rm(&h, &vpn(6, [0; 8]))).unwrap();
    // Labeled unicast 10.1.0.0/16 (no ADD-PATH for SAFI 4).
    let mut mp = vec![0, 1, 4, 4, 192, 0, 2, 1, 0];
    mp.extend([24 + 16, 0, 1, 1, 10, 1]);
    s.handle(&rm(&h, &mp_update(14, &mp))).unwrap();
    let p: AnyPrefix = "10.1.0.0/16".parse().unwrap();
    let mut got: Vec<(u8, u64, u32)> = rib
        .routes(&p)
        .iter()
        .map(|r| (r.peer.key.peer_type, r.peer.key.distinguisher, r.path_id))
        .collect();
    got.sort();
    // Unicast and labeled (global, path id 0), VPN RD 0:0 (as an RD
    // instance, path 6), VPN RD 64499:11 (path 5).
    assert_eq!(
        got,
        vec![
            (0, 0, 0),
            (0, 0, 0),
            (0, 0x0000_fbf3_0000_000b, 5),
            (1, 0, 6)
        ]
    );
    // A default lookup answers from the global instance only.
    rib.sync();
    let addr = ipfib::prefix::AnyAddr::V4(0x0a01_0001);
    let hit = rib.lookup(addr, &crate::rib::Query::default()).unwrap();
    assert_eq!(hit.peer.key.distinguisher, 0);
    assert_eq!(hit.peer.key.peer_type, 0);
    let peers = rib.peers().count();
    // Withdrawals under 10 distinguishers never seen: no new peer.
    let mut mp = vec![0, 1, 128];
    for i in 0..10u8 {
        mp.extend([
            0,
            0,
            0,
            1,
            24 + 64 + 16,
            0,
            1,
            1,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
            i,
            10,
            9,
        ]);
    }
    s.handle(&rm(&h, &mp_update(15, &mp))).unwrap();
    assert_eq!(rib.peers().count(), peers);
    assert_eq!(rib.routes(&p).len(), 4);
}

/// Vendors send one Loc-RIB Peer Up per address family: ADD-PATH on
/// IPv4 (first Peer Up) stays when the IPv6 one (without it) follows,
/// and a repeated Peer Up keeps the routes.
#[test]
fn per_family_peer_ups_keep_addpath() {
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, Arc::clone(&rib));
    let h = peer_header(3, 0, [0; 4]);
    let v4 = [1, 4, 0, 1, 0, 1, 69, 4, 0, 1, 1, 3];
    let v6 = [1, 4, 0, 2, 0, 1];
    s.handle(&peer_up(&h, &v4)).unwrap();
    s.handle(&peer_up(&h, &v6)).unwrap();
    let nlri = [0, 0, 0, 7, 24, 198, 51, 100];
    s.handle(&rm(&h, &update(&[0], &nlri))).unwrap();
    assert_eq!(prefixes(&rib), vec![("198.51.100.0/24".into(), 7)]);
    s.handle(&peer_up(&h, &v4)).unwrap();
    assert_eq!(rib.route_count(), 1, "a repeated Peer Up keeps the routes");
    // A Peer Up that contradicts (IPv4 without ADD-PATH): a new
    // session of that neighbour, the old routes go.
    s.handle(&peer_up(&h, &v4[..6])).unwrap();
    assert_eq!(rib.route_count(), 0);
}

/// RFC 7606: an attribute error withdraws the UPDATE's route and the
/// session goes on; other peers keep theirs. A framing error ends it.
#[test]
fn session_survives_attribute_errors() {
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, Arc::clone(&rib));
    let (a, b) = (
        peer_header(0, 0, [192, 0, 2, 1]),
        peer_header(0, 0, [192, 0, 2, 2]),
    );
    for h in [&a, &b] {
        s.handle(&peer_up(h, &[])).unwrap();
        s.handle(&rm(h, &update(&[0], &[24, 198, 51, 100])))
            .unwrap();
    }
    assert_eq!(rib.route_count(), 2);
    s.handle(&rm(&a, &update(&[7], &[24, 198, 51, 100])))
        .unwrap();
    assert_eq!(s.stats.treat_as_withdraw, 1);
    let p: AnyPrefix = "198.51.100.0/24".parse().unwrap();
    let left = rib.routes(&p);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].peer.key.address.to_string(), "192.0.2.2");
    let errors = s.take_errors();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].peer.to_string(), "192.0.2.1");
    assert_eq!(errors[0].action, "treat-as-withdraw");
    // The ORIGIN attribute starts after the BMP headers (48 bytes),
    // the BGP header (19) and the two length fields (4).
    assert_eq!(errors[0].at, 48 + 23);
    // NLRI that cannot be parsed: the session ends.
    assert!(s
        .handle(&rm(&a, &update(&[0], &[33, 1, 2, 3, 4, 5])))
        .is_err());
    assert_eq!(s.stats.session_reset, 1);
    assert_eq!(rib.route_count(), 1);
}

/// Loc-RIB of a VRF (peer type 3 with a route distinguisher), an RD
/// instance peer (type 1) and Adj-RIB-Out stay out of default
/// queries.
#[test]
fn instances_and_rib_kinds_apart() {
    use crate::{Instance, Query, RibSet};
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, Arc::clone(&rib));
    let vrf = peer_header(3, 0x0000_fbf3_0000_000b, [0; 4]);
    let rd1 = peer_header(1, 0x0000_fbf3_0000_000c, [192, 0, 2, 3]);
    let mut out = peer_header(0, 0, [192, 0, 2, 4]);
    out[1] = 0x10;
    for h in [&vrf, &rd1, &out] {
        s.handle(&peer_up(h, &[])).unwrap();
        s.handle(&rm(h, &update(&[0], &[8, 10]))).unwrap();
    }
    rib.sync();
    let addr = ipfib::prefix::AnyAddr::V4(0x0a01_0203);
    assert!(rib.lookup(addr, &Query::default()).is_none());
    let q = |instance, ribs| Query {
        instance,
        ribs,
        ..Query::default()
    };
    let r = rib
        .lookup(
            addr,
            &q(Instance::parse("64499:11").unwrap(), RibSet::DEFAULT),
        )
        .unwrap();
    assert_eq!(r.peer.key.peer_type, 3);
    assert!(rib
        .lookup(
            addr,
            &q(Instance::parse("64499:12").unwrap(), RibSet::DEFAULT)
        )
        .is_some());
    let r = rib
        .lookup(
            addr,
            &q(Instance::Global, RibSet::parse("adj-rib-out-pre").unwrap()),
        )
        .unwrap();
    assert_eq!(r.peer.key.rib, RibKind::AdjRibOutPre);
    let all = rib.routes_matching_in(
        &"10.0.0.0/8".parse().unwrap(),
        crate::Match::Exact,
        10,
        &q(Instance::All, RibSet::DEFAULT),
    );
    assert_eq!(all.len(), 2);
}
