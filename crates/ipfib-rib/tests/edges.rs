//! Edge cases: two sessions announcing a new prefix at
//! once (at a chunk boundary of the slot table), writers racing the FIB
//! thread, mutated BMP input, a mixed IPv4 + MP_REACH UPDATE, routes before
//! Peer Up, RFC 9069 Loc-RIB ADD-PATH, interning across purges.

mod common;

use std::net::IpAddr;
use std::sync::{Arc, Barrier};

use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_io::bgp::{decode_open, decode_update, Update, WireConfig};
use ipfib_rib::attrs::{AsPath, AttrsRef, AS_SEQUENCE};
use ipfib_rib::bmp::{frame, Session};
use ipfib_rib::{PeerKey, Query, Rib, RibKind};

use common::rng::Rng;

fn key(i: u8) -> PeerKey {
    PeerKey {
        peer_type: 0,
        distinguisher: 0,
        address: IpAddr::from([127, 0, 0, i]),
        asn: 65000,
        bgp_id: i as u32,
        rib: RibKind::PrePolicy,
    }
}

/// Two sessions announce the same brand-new prefix at the same moment.
/// When its fresh id is the first of a segment chunk (id 0 is), the loser
/// of the papaya insert finds the id in the map before the winner has
/// allocated the chunk; `edit` then finds no slot and drops the route
/// silently (no error, peer.routes not counted, no FIB event).
#[test]
fn concurrent_first_announce_of_a_new_chunk_loses_no_route() {
    let words = AsPath::encode([(AS_SEQUENCE, &[64500u32, 13335][..])]);
    let p: AnyPrefix = "10.0.0.0/8".parse().unwrap();
    let mut lost = 0;
    let trials = 1000;
    for _ in 0..trials {
        let rib = Arc::new(Rib::new());
        let a = rib.add_peer(1, key(1)).unwrap();
        let b = rib.add_peer(2, key(2)).unwrap();
        let attrs = rib.intern(&AttrsRef {
            as_path: &words,
            ..Default::default()
        });
        let barrier = Arc::new(Barrier::new(2));
        let h = {
            let (rib, b, attrs, barrier) = (rib.clone(), b.clone(), attrs.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                rib.announce(&b, p, 0, &attrs).unwrap();
            })
        };
        barrier.wait();
        rib.announce(&a, p, 0, &attrs).unwrap();
        h.join().unwrap();
        let n = rib.routes(&p).len();
        if n != 2 {
            lost += 1;
            assert_eq!(
                rib.route_count(),
                1,
                "the dropped route is not counted either"
            );
        }
    }
    assert_eq!(lost, 0, "{lost} of {trials} trials lost a route");
}

/// The FIB reconcile under two writers flipping one prefix empty /
/// non-empty: after sync, the FIB agrees with the route arrays.
#[test]
fn fib_agrees_after_racing_writers() {
    let words = AsPath::encode([(AS_SEQUENCE, &[64500u32][..])]);
    for round in 0..20 {
        let rib = Arc::new(Rib::new());
        let attrs = rib.intern(&AttrsRef {
            as_path: &words,
            ..Default::default()
        });
        let peers: Vec<_> = (1..=3)
            .map(|i| rib.add_peer(i as u64, key(i)).unwrap())
            .collect();
        let prefixes: Vec<AnyPrefix> = (0..64u32)
            .map(|i| format!("10.{i}.0.0/16").parse().unwrap())
            .collect();
        let hs: Vec<_> = peers
            .iter()
            .enumerate()
            .map(|(t, peer)| {
                let (rib, peer, attrs, prefixes) =
                    (rib.clone(), peer.clone(), attrs.clone(), prefixes.clone());
                std::thread::spawn(move || {
                    let mut x = (round * 7 + t as u64 + 1).wrapping_mul(0x9e3779b97f4a7c15);
                    for _ in 0..20_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let p = prefixes[(x % 64) as usize];
                        if x & 0x100 != 0 {
                            rib.announce(&peer, p, 0, &attrs).unwrap();
                        } else {
                            rib.withdraw(&peer, p, 0);
                        }
                    }
                })
            })
            .collect();
        // A peer goes down and is swept while the others write.
        std::thread::sleep(std::time::Duration::from_millis(2));
        rib.peer_down(peers[2].id);
        for h in hs {
            h.join().unwrap();
        }
        rib.sweep();
        rib.sync();
        let mut entries = 0u64;
        for (i, p) in prefixes.iter().enumerate() {
            let live = rib.routes(p).len();
            entries += live as u64;
            let addr = AnyAddr::V4(u32::from_be_bytes([10, i as u8, 1, 1]));
            let got = rib.lookup(addr, &Query::default()).map(|r| r.prefix);
            assert_eq!(
                got.is_some(),
                live > 0,
                "round {round} {p}: lookup {got:?}, {live} live routes"
            );
        }
        assert_eq!(rib.route_count(), entries, "round {round}: route_count");
    }
}

fn bgp(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

fn bmp(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![3];
    m.extend_from_slice(&((6 + body.len()) as u32).to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

fn per_peer(peer_type: u8, flags: u8) -> Vec<u8> {
    let mut h = vec![peer_type, flags];
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&[0; 12]);
    h.extend_from_slice(&[192, 0, 2, 9]);
    h.extend_from_slice(&65001u32.to_be_bytes());
    h.extend_from_slice(&[10, 0, 0, 1]);
    h.extend_from_slice(&[0; 8]);
    h
}

fn open(addpath: u8) -> Vec<u8> {
    let caps = [
        2u8, 16, 65, 4, 0, 0, 0xfd, 0xe9, 69, 8, 0, 1, 1, 0, 0, 2, 1, addpath,
    ];
    let mut body = vec![4, 0xfd, 0xe9, 0, 9, 10, 0, 0, 1, caps.len() as u8];
    body.extend(caps);
    bgp(1, &body)
}

fn update() -> Vec<u8> {
    let attr = |flags: u8, code: u8, v: &[u8]| {
        let mut a = vec![flags, code, v.len() as u8];
        a.extend_from_slice(v);
        a
    };
    let mut attrs = attr(0x40, 1, &[0]);
    attrs.extend(attr(0x40, 2, &[2, 2, 0, 0, 0xfd, 0xe8, 0, 0, 0x34, 0x17]));
    attrs.extend(attr(0x40, 3, &[192, 0, 2, 1]));
    attrs.extend(attr(0xc0, 8, &[0xfd, 0xe9, 0, 100]));
    attrs.extend(attr(0x80, 17, &[2, 1, 0, 6, 0x1a, 0x80]));
    let mut mp = vec![0, 2, 1, 32];
    mp.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    mp.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    mp.push(0);
    mp.extend([0, 0, 0, 7, 48, 0x20, 0x01, 0x0d, 0xb8, 0, 1]);
    attrs.extend(attr(0x80, 14, &mp));
    attrs.extend(attr(
        0x80,
        15,
        &[0, 2, 1, 0, 0, 0, 3, 32, 0x20, 1, 0xd, 0xb8],
    ));
    let mut body = vec![0, 3, 16, 10, 1];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend(attrs);
    body.extend([24, 198, 51, 100, 0]);
    bgp(2, &body)
}

fn seeds() -> Vec<Vec<u8>> {
    let mut init = Vec::new();
    init.extend_from_slice(&[0, 2, 0, 4, b'r', b't', b'r', b'1']);
    let up = |pt: u8, flags: u8, ap: u8| {
        let mut b = per_peer(pt, flags);
        b.extend_from_slice(&[0; 16]);
        b.extend_from_slice(&[0, 179, 0xc0, 0]);
        b.extend(open(ap));
        b.extend(open(ap));
        b.extend_from_slice(&[0, 3, 0, 4, b'm', b'a', b'i', b'n']);
        bmp(3, &b)
    };
    let rm = |pt: u8, flags: u8| {
        let mut b = per_peer(pt, flags);
        b.extend(update());
        bmp(0, &b)
    };
    vec![
        bmp(4, &init),
        up(0, 0, 3),
        up(3, 0, 3),
        up(0, 0xa0, 0),
        rm(0, 0),
        rm(0, 0x40),
        rm(0, 0x20),
        rm(3, 0),
        rm(0, 0x80),
        rm(0, 0x10),
        bmp(2, &{
            let mut b = per_peer(0, 0);
            b.push(2);
            b
        }),
        bmp(1, &{
            let mut b = per_peer(0, 0);
            b.extend_from_slice(&[0, 0, 0, 0]);
            b
        }),
        bmp(5, &[0, 1, 0, 2, 0, 0]),
    ]
}

/// Mutated messages through frame + Session::handle and the wire decoders:
/// no panic, whatever the bytes.
#[test]
fn hostile_bytes_never_panic() {
    let seeds = seeds();
    // The seeds themselves decode.
    {
        let rib = Arc::new(Rib::new());
        let mut s = Session::new(1, rib.clone());
        let mut bad = 0;
        for m in &seeds {
            assert_eq!(frame(m, 1 << 20).unwrap(), Some(m.len()));
            if let Err(e) = s.handle(m) {
                println!("seed {:?}: {e}", &m[..6]);
                bad += 1;
            }
        }
        assert!(bad <= 2, "the A-flag seed (4-byte path read as 2-byte) and the V-flag one (no ADD-PATH in its Peer Up) fail; nothing else");
        assert!(
            !rib.routes(&"198.51.100.0/24".parse().unwrap()).is_empty(),
            "the Loc-RIB route stays (the others went with the Peer Down seed)"
        );
    }
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let iters: usize = std::env::var("FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, rib.clone());
    let mut u = Update::default();
    let (mut handled_ok, mut handled_err) = (0u64, 0u64);
    for i in 0..iters {
        let mut m = seeds[rng.index(seeds.len())].clone();
        let n = 1 + rng.index(8);
        for _ in 0..n {
            match rng.index(5) {
                0 => {
                    let j = rng.index(m.len());
                    if j < m.len() {
                        m[j] = rng.next() as u8;
                    }
                }
                1 => {
                    let j = 6 + rng.index(m.len() - 6);
                    if j < m.len() {
                        m[j] = [0, 1, 0xff, 0x7f, 0x80, 16, 32, 48, 12, 24][rng.index(10)];
                    }
                }
                2 => {
                    let j = 6 + rng.index(m.len() - 6);
                    m.truncate(j.max(6));
                }
                3 => {
                    let j = 6 + rng.index(m.len() - 5);
                    for _ in 0..rng.index(40) {
                        m.insert(j.min(m.len()), rng.next() as u8);
                    }
                }
                _ => {
                    let j = 6 + rng.index(m.len() - 6);
                    let k = j + rng.index(m.len() - j);
                    m.drain(j..k);
                }
            }
        }
        // Keep the BMP header valid most of the time so the body is reached.
        if rng.index(10) != 0 {
            m[0] = 3;
            let len = m.len() as u32;
            m[1..5].copy_from_slice(&len.to_be_bytes());
            m[5] %= 7;
        }
        if let Ok(Some(n)) = frame(&m, 1 << 20) {
            match s.handle(&m[..n]) {
                Ok(()) => handled_ok += 1,
                Err(_) => handled_err += 1,
            }
        }
        let body = &m[6.min(m.len())..];
        let cut = 42.min(body.len());
        let _ = decode_update(&body[cut..], &WireConfig::default(), &mut u);
        let cfg = WireConfig {
            four_octet: i % 2 == 0,
            addpath_v4: i % 3 == 0,
            addpath_v6: i % 5 == 0,
            addpath_more: (i % 7) as u8,
        };
        let _ = decode_update(&body[cut..], &cfg, &mut u);
        let _ = decode_open(&body[cut.min(body.len())..]);
        if i % 10_000 == 0 {
            s = Session::new(i as u64, rib.clone());
        }
    }
    eprintln!(
        "{iters} inputs: {handled_ok} handled Ok, {handled_err} errors; {} routes announced",
        s.stats.announced
    );
}

fn v4_update(prefix: [u8; 3], nh: [u8; 4], with_mp_v6: bool) -> Vec<u8> {
    let attr = |flags: u8, code: u8, v: &[u8]| {
        let mut a = vec![flags, code, v.len() as u8];
        a.extend_from_slice(v);
        a
    };
    let mut attrs = attr(0x40, 1, &[0]);
    attrs.extend(attr(0x40, 2, &[2, 1, 0, 0, 0xfd, 0xe8]));
    attrs.extend(attr(0x40, 3, &nh));
    if with_mp_v6 {
        let mut mp = vec![0, 2, 1, 16];
        mp.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        mp.push(0);
        mp.extend([48, 0x20, 0x01, 0x0d, 0xb8, 0, 1]);
        attrs.extend(attr(0x80, 14, &mp));
    }
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend(attrs);
    body.push(24);
    body.extend_from_slice(&prefix);
    bgp(2, &body)
}

/// An UPDATE carrying IPv4 NLRI (NEXT_HOP 192.0.2.1) and MP_REACH IPv6
/// NLRI: the MP_REACH routes come first (`mp_announced` of them) and the
/// session gives the conventional ones NEXT_HOP (RFC 4760 §3).
#[test]
fn mixed_family_update_keeps_each_familys_next_hop() {
    let mut u = Update::default();
    decode_update(
        &v4_update([198, 51, 100], [192, 0, 2, 1], true),
        &WireConfig::default(),
        &mut u,
    )
    .unwrap();
    assert_eq!(u.announced.len(), 2);
    let (mp, conventional) = u.announced.split_at(u.mp_announced);
    assert!(mp.iter().all(|(p, _)| p.family() == 6), "{mp:?}");
    assert_eq!(conventional.len(), 1);
    assert_eq!(conventional[0].0.to_string(), "198.51.100.0/24");
    assert_eq!(u.next_hop_v4, Some("192.0.2.1".parse().unwrap()));
    assert_eq!(u.next_hop_mp, Some("2001:db8::1".parse().unwrap()));
}

/// Route Monitoring before Peer Up is accepted and counted (docs); the Peer
/// Up that follows completes that neighbour: its routes stay.
#[test]
fn routes_accepted_before_peer_up_survive_the_peer_up() {
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, rib.clone());
    let mut rm = per_peer(0, 0);
    rm.extend(v4_update([198, 51, 100], [192, 0, 2, 1], false));
    s.handle(&bmp(0, &rm)).unwrap();
    assert_eq!(s.stats.before_peer_up, 1);
    let p: AnyPrefix = "198.51.100.0/24".parse().unwrap();
    assert_eq!(rib.routes(&p).len(), 1);
    let mut up = per_peer(0, 0);
    up.extend_from_slice(&[0; 16]);
    up.extend_from_slice(&[0, 179, 0xc0, 0]);
    up.extend(open(0));
    up.extend(open(0));
    s.handle(&bmp(3, &up)).unwrap();
    assert_eq!(
        rib.routes(&p).len(),
        1,
        "the route announced before the Peer Up is gone"
    );
}

/// RFC 9069 §5.2: a Loc-RIB Peer Up's OPENs are fabricated (the received
/// one repeats the sent one) and only list capabilities the Route
/// Monitoring uses; an ADD-PATH capability there means path ids are
/// present whatever its send/receive bits. With "send" only (2) in both
/// OPENs, bmp.rs decides "no path ids", and a route with path id 0 for
/// 2001::/16 decodes silently as ::/0 (three times) plus 2001::/16.
#[test]
fn loc_rib_addpath_with_send_only_bits_is_still_addpath() {
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, rib.clone());
    let mut up = per_peer(3, 0);
    up.extend_from_slice(&[0; 16]);
    up.extend_from_slice(&[0, 0, 0, 0]);
    up.extend(open(2));
    up.extend(open(2));
    s.handle(&bmp(3, &up)).unwrap();
    let mut mp = vec![0, 2, 1, 16];
    mp.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    mp.push(0);
    mp.extend([0, 0, 0, 0, 16, 0x20, 0x01]);
    let mut attrs = vec![0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe8];
    attrs.extend([0x80, 14, mp.len() as u8]);
    attrs.extend(mp);
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend(attrs);
    let mut rm = per_peer(3, 0);
    rm.extend(bgp(2, &body));
    s.handle(&bmp(0, &rm)).unwrap();
    let default: AnyPrefix = "::/0".parse().unwrap();
    let want: AnyPrefix = "2001::/16".parse().unwrap();
    assert_eq!(
        (rib.routes(&want).len(), rib.routes(&default).len()),
        (1, 0),
        "a bogus default route from the path id's zero bytes"
    );
}

/// Interning by part addresses across purges: every interned set holds
/// exactly the requested contents, and equal contents give one set while
/// it lives (addresses freed by purge and reused never equate two sets).
#[test]
fn interning_survives_purge_and_address_reuse() {
    let attrs = ipfib_rib::attrs::Attrs::default();
    let mut rng = Rng(99);
    let mut held: Vec<Arc<ipfib_rib::AttrSet>> = Vec::new();
    for i in 0..200_000u32 {
        let n = rng.index(4);
        let path: Vec<u32> = (0..n as u32)
            .map(|k| 64500 + (rng.index(3) as u32) + k)
            .collect();
        let words = AsPath::encode([(AS_SEQUENCE, &path[..])]);
        let comms: Vec<u32> = (0..rng.index(2)).map(|_| rng.index(3) as u32).collect();
        let r = AttrsRef {
            as_path: &words,
            communities: &comms,
            med: if rng.index(2) == 0 {
                None
            } else {
                Some(rng.index(3) as u32)
            },
            ..Default::default()
        };
        let s = attrs.intern(&r);
        assert!(
            r.matches(&s),
            "iteration {i}: interned set differs from the request"
        );
        for h in &held {
            assert_eq!(
                Arc::ptr_eq(h, &s),
                r.matches(h),
                "iteration {i}: identity vs contents"
            );
        }
        if rng.index(3) == 0 && held.len() < 24 {
            held.push(s);
        } else if !held.is_empty() && rng.index(2) == 0 {
            let k = rng.index(held.len());
            held.swap_remove(k);
        }
        if rng.index(50) == 0 {
            attrs.purge();
        }
    }
}

/// A pre-policy UPDATE for 198.51.100.0/24, NLRI with an ADD-PATH path id
/// (`path_id` Some) or without.
fn v4_update_with_id(path_id: Option<u32>) -> Vec<u8> {
    let attr = |flags: u8, code: u8, v: &[u8]| {
        let mut a = vec![flags, code, v.len() as u8];
        a.extend_from_slice(v);
        a
    };
    let mut attrs = attr(0x40, 1, &[0]);
    attrs.extend(attr(0x40, 2, &[2, 1, 0, 0, 0xfd, 0xe8]));
    attrs.extend(attr(0x40, 3, &[192, 0, 2, 1]));
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend(attrs);
    if let Some(id) = path_id {
        body.extend_from_slice(&id.to_be_bytes());
    }
    body.extend([24, 198, 51, 100]);
    bgp(2, &body)
}

fn v4_withdraw(path_id: u32) -> Vec<u8> {
    let mut w = path_id.to_be_bytes().to_vec();
    w.extend([24, 198, 51, 100]);
    let mut body = (w.len() as u16).to_be_bytes().to_vec();
    body.extend(w);
    body.extend([0, 0]);
    bgp(2, &body)
}

/// An OPEN with 4-octet ASN and ADD-PATH for IPv4 unicast set to `addpath`.
fn open_v4(addpath: u8) -> Vec<u8> {
    let caps = [2u8, 12, 65, 4, 0, 0, 0xfd, 0xe9, 69, 4, 0, 1, 1, addpath];
    let mut body = vec![4, 0xfd, 0xe9, 0, 9, 10, 0, 0, 1, caps.len() as u8];
    body.extend(caps);
    bgp(1, &body)
}

fn peer_up(addpath: u8) -> Vec<u8> {
    let mut up = per_peer(0, 0);
    up.extend_from_slice(&[0; 16]);
    up.extend_from_slice(&[0, 179, 0xc0, 0]);
    up.extend(open_v4(addpath));
    up.extend(open_v4(addpath));
    bmp(3, &up)
}

/// A router that sends Route Monitoring before Peer Up on an ADD-PATH
/// session: the early UPDATE is decoded without path ids (the provisional
/// neighbour's default), so its path id's zero bytes read as 0.0.0.0/0
/// four times. The Peer Up that says ADD-PATH then replaces that
/// neighbour, so the bogus default route goes with it.
#[test]
fn provisional_routes_decoded_under_another_addpath_go_at_peer_up() {
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, rib.clone());
    let mut rm = per_peer(0, 0);
    rm.extend(v4_update_with_id(Some(0)));
    s.handle(&bmp(0, &rm)).unwrap();
    let default: AnyPrefix = "0.0.0.0/0".parse().unwrap();
    assert_eq!(
        rib.routes(&default).len(),
        1,
        "mis-decoded before Peer Up (expected)"
    );
    // Peer Up: ADD-PATH send+receive both ways (3) for IPv4 unicast.
    s.handle(&peer_up(3)).unwrap();
    // The router withdraws its one route, correctly encoded.
    let mut wd = per_peer(0, 0);
    wd.extend(v4_withdraw(0));
    s.handle(&bmp(0, &wd)).unwrap();
    rib.sync();
    let real: AnyPrefix = "198.51.100.0/24".parse().unwrap();
    assert!(rib.routes(&real).is_empty(), "withdrawn");
    let ghost = rib.lookup(AnyAddr::V4(0x08080808), &Query::default());
    assert!(ghost.is_none(), "8.8.8.8 -> {:?}", ghost.map(|r| r.prefix));
    assert_eq!(
        rib.routes(&default).len(),
        0,
        "a default route decoded before Peer Up under another ADD-PATH setting must not survive it"
    );
}

/// The Peer Up's Information TLV type 3 (table name) reaches the RIB peers
/// made before it.
#[test]
fn provisional_peer_gets_the_peer_ups_table_name() {
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, rib.clone());
    let mut rm = per_peer(0, 0);
    rm.extend(v4_update_with_id(None));
    s.handle(&bmp(0, &rm)).unwrap();
    let mut up = per_peer(0, 0);
    up.extend_from_slice(&[0; 16]);
    up.extend_from_slice(&[0, 179, 0xc0, 0]);
    up.extend(open(0));
    up.extend(open(0));
    up.extend([0, 3, 0, 4, b'v', b'r', b'f', b'1']);
    s.handle(&bmp(3, &up)).unwrap();
    // A later route of the same neighbour goes to the same RIB peer.
    let peers: Vec<_> = rib
        .peers()
        .all()
        .map(|p| (p.id, p.table_name().map(str::to_owned)))
        .collect();
    assert_eq!(peers.len(), 1);
    assert_eq!(
        peers[0].1.as_deref(),
        Some("vrf1"),
        "Peer Up's table name lost"
    );
}

/// A Peer Up's table name and an Initiation's sysName / sysDescr are cut
/// to 255 bytes (counted); Peer Up / Down flaps leave no peer behind once
/// swept.
#[test]
fn wire_strings_are_capped_and_flapped_peers_are_freed() {
    use ipfib_rib::bmp::MAX_WIRE_STRING;
    use std::sync::atomic::Ordering;
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, rib.clone());
    // Initiation: sysDescr (1) of 1,000 bytes, sysName (2) of 10 bytes
    // ending in a 2-byte character cut in half at 255 would not apply.
    let mut init = Vec::new();
    init.extend([0, 1]);
    init.extend(1000u16.to_be_bytes());
    init.extend([b'd'; 1000]);
    init.extend([0, 2, 0, 10]);
    init.extend(*b"router-one");
    s.handle(&bmp(4, &init)).unwrap();
    assert_eq!(
        s.info.sys_descr.as_deref().map(str::len),
        Some(MAX_WIRE_STRING)
    );
    assert_eq!(s.info.sys_name.as_deref(), Some("router-one"));
    assert_eq!(rib.counters().strings_cut.load(Ordering::Relaxed), 1);
    // 500 flaps, each Peer Up with a 60 KB table name and one route.
    let name = vec![0xc3u8; 60_000]; // invalid UTF-8 alone: replacement chars
    for i in 0..500 {
        let mut up = per_peer(0, 0);
        up.extend_from_slice(&[0; 16]);
        up.extend_from_slice(&[0, 179, 0xc0, 0]);
        up.extend(open(0));
        up.extend(open(0));
        up.extend([0, 3]);
        up.extend((name.len() as u16).to_be_bytes());
        up.extend_from_slice(&name);
        s.handle(&bmp(3, &up)).unwrap();
        let mut rm = per_peer(0, 0);
        rm.extend(v4_update_with_id(None));
        s.handle(&bmp(0, &rm)).unwrap();
        let peers: Vec<_> = rib.peers().all().collect();
        assert_eq!(peers.len(), 1, "flap {i}");
        let t = peers[0].table_name().unwrap();
        assert!(t.len() <= MAX_WIRE_STRING && !t.is_empty(), "{}", t.len());
        let mut down = per_peer(0, 0);
        down.push(4);
        s.handle(&bmp(2, &down)).unwrap();
        rib.sweep();
        assert_eq!(rib.peers().count(), 0, "flap {i}: peer not freed");
    }
    assert_eq!(rib.counters().strings_cut.load(Ordering::Relaxed), 501);
    assert_eq!(rib.counters().peers_freed.load(Ordering::Relaxed), 500);
    rib.sync();
    assert_eq!(rib.prefix_count(), 0);
}

/// One prefix announced by more peers than a prefix may hold: the first
/// `max` are kept, the rest dropped (`announce` says so) and counted; a
/// held route can still change and be withdrawn, a withdrawal makes room,
/// and a lookup answers from what is held.
#[test]
fn a_prefix_holds_at_most_max_routes_and_counts_the_rest() {
    use std::sync::atomic::Ordering;
    for (max, n) in [(100usize, 110usize), (0, 300)] {
        let rib = Rib::new();
        rib.set_max_routes_per_prefix(max);
        let held = if max == 0 { n } else { max };
        let p: AnyPrefix = "192.0.2.0/24".parse().unwrap();
        let path = |asn: u32| AsPath::encode([(AS_SEQUENCE, &[asn, 64496][..])]);
        let mut peers = Vec::new();
        for i in 0..n {
            let key = PeerKey {
                peer_type: 0,
                distinguisher: 0,
                address: IpAddr::from([10, 0, (i >> 8) as u8, i as u8]),
                asn: 65000 + i as u32,
                bgp_id: i as u32,
                rib: RibKind::PrePolicy,
            };
            let peer = rib.add_peer(i as u64, key).unwrap();
            let words = path(65000 + i as u32);
            let attrs = rib.intern(&AttrsRef {
                as_path: &words,
                ..Default::default()
            });
            assert_eq!(rib.announce(&peer, p, 0, &attrs).unwrap(), i < held);
            peers.push(peer);
        }
        assert_eq!(rib.routes(&p).len(), held);
        assert_eq!(rib.route_count(), held as u64);
        let c = rib.counters();
        assert_eq!(
            c.over_prefix_limit.load(Ordering::Relaxed),
            (n - held) as u64
        );
        if max == 0 {
            continue;
        }
        // The dropped peers hold nothing; a held route still changes.
        assert_eq!(peers[max].route_count(), 0);
        let words = path(64999);
        let changed = rib.intern(&AttrsRef {
            as_path: &words,
            ..Default::default()
        });
        assert!(rib.announce(&peers[7], p, 0, &changed).unwrap());
        let routes = rib.routes(&p);
        assert_eq!(routes.len(), max);
        let mine = routes.iter().find(|r| r.peer.id == peers[7].id).unwrap();
        assert!(Arc::ptr_eq(&mine.attrs, &changed));
        assert_eq!(
            c.over_prefix_limit.load(Ordering::Relaxed),
            (n - max) as u64
        );
        // A withdrawal makes room for one more.
        assert!(rib.withdraw(&peers[0], p, 0));
        let last = &peers[n - 1];
        let words = path(65000);
        let attrs = rib.intern(&AttrsRef {
            as_path: &words,
            ..Default::default()
        });
        assert!(rib.announce(last, p, 0, &attrs).unwrap());
        assert_eq!(rib.routes(&p).len(), max);
        assert_eq!(
            c.over_prefix_limit.load(Ordering::Relaxed),
            (n - max) as u64
        );
        // Lookups answer from what is held: the new route for its peer,
        // nothing for a dropped peer, the prefix for everyone.
        rib.sync();
        let addr = AnyAddr::unmapped("192.0.2.9".parse().unwrap());
        let by = |id: u32| Query {
            peer: Some(ipfib_rib::PeerFilter::Id(id)),
            ..Query::default()
        };
        let hit = rib
            .lookup(addr, &by(last.id))
            .expect("the last peer's route");
        assert_eq!(hit.prefix, p);
        assert!(Arc::ptr_eq(&hit.attrs, &attrs));
        assert!(rib.lookup(addr, &by(peers[max].id)).is_none());
        assert_eq!(
            rib.lookup(addr, &Query::default()).map(|r| r.prefix),
            Some(p)
        );
    }
}
