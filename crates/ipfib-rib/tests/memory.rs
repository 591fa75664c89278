//! Memory follows live state: interned attributes, prefix ids and peers
//! are given back when the routes that held them go, and recycled ids
//! never let a lookup see one prefix's routes under another.

mod common;

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use ipfib::prefix::{AnyAddr, AnyPrefix, Prefix};
use ipfib_rib::attrs::{AsPath, AttrsRef, AS_SEQUENCE, PURGE_MIN};
use ipfib_rib::{PeerKey, Query, Rib, RibKind};

use common::rng::Rng;

fn key(i: u32) -> PeerKey {
    PeerKey {
        peer_type: 0,
        distinguisher: 0,
        address: IpAddr::from([127, 0, 0, 1]),
        asn: 65000,
        bgp_id: i,
        rib: RibKind::PrePolicy,
    }
}

fn v4(a: u32, len: u8) -> AnyPrefix {
    AnyPrefix::V4(Prefix::new(a, len).unwrap())
}

#[test]
fn reannouncements_with_changing_attributes_keep_the_interner_live_sized() {
    let rib = Rib::new();
    let peer = rib.add_peer(1, key(1)).unwrap();
    let p = v4(0x0a00_0000, 8);
    let words = AsPath::encode([(AS_SEQUENCE, &[64500u32, 13335][..])]);
    let n = 200_000u32;
    for i in 0..n {
        let communities = [i, 65000 << 16];
        let attrs = rib.intern(&AttrsRef {
            as_path: &words,
            communities: &communities,
            med: Some(i),
            ..Default::default()
        });
        rib.announce(&peer, p, 0, &attrs).unwrap();
    }
    let (sets, paths, communities, _) = rib.attrs().counts();
    // One set is live; the rest are garbage the amortised purge bounds.
    let bound = PURGE_MIN as usize + 2;
    assert!(
        sets <= bound,
        "{sets} attribute sets held after {n} re-announcements"
    );
    assert!(communities <= bound, "{communities} community lists held");
    assert_eq!(paths, 1);
    assert!(rib.attrs().purges() >= (n as u64 / PURGE_MIN) / 2);
    assert_eq!(rib.routes(&p)[0].attrs.med, Some(n - 1));
}

#[test]
fn announce_withdraw_cycles_give_prefixes_back() {
    let rib = Rib::new();
    let peer = rib.add_peer(1, key(1)).unwrap();
    let words = AsPath::encode([(AS_SEQUENCE, &[64500u32][..])]);
    let attrs = rib.intern(&AttrsRef {
        as_path: &words,
        ..Default::default()
    });
    // 1,000 prefixes stay; 200,000 random /24s come and go.
    let kept: Vec<AnyPrefix> = (0..1000u32).map(|i| v4(0x0b00_0000 | i << 8, 24)).collect();
    for &p in &kept {
        rib.announce(&peer, p, 0, &attrs).unwrap();
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200_000 {
        let p = v4((rng.next() as u32 & 0x00ff_ff00) | 0x0c00_0000, 24);
        rib.announce(&peer, p, 0, &attrs).unwrap();
        assert!(rib.withdraw(&peer, p, 0));
    }
    rib.sync();
    assert_eq!(rib.prefix_count(), kept.len(), "prefixes left in the map");
    let (high, free) = rib.prefix_ids();
    assert_eq!(high as usize - free, kept.len(), "slots in use");
    // Ids were reused: far fewer than the prefixes seen.
    assert!(
        high < 100_000,
        "{high} ids for {} live prefixes",
        kept.len()
    );
    let mut slots = 0;
    rib.for_each_prefix(|_| slots += 1);
    assert_eq!(slots, kept.len());
    // Every kept prefix still answers, exactly and by lookup.
    for &p in &kept {
        assert_eq!(rib.routes(&p).len(), 1);
        let AnyPrefix::V4(q) = p else { unreachable!() };
        let hit = rib.lookup(AnyAddr::V4(q.addr() | 7), &Query::default());
        assert_eq!(hit.map(|r| r.prefix), Some(p));
    }
}

/// Writers churn prefixes (ids freed and recycled all the time) while
/// readers look up: every answer's prefix covers the address, and its
/// route is that prefix's (the MED names the prefix it was announced for).
#[test]
fn recycled_ids_never_attach_a_route_to_another_prefix() {
    let rib = Arc::new(Rib::new());
    let peer = rib.add_peer(1, key(1)).unwrap();
    let words = AsPath::encode([(AS_SEQUENCE, &[64500u32][..])]);
    // 256 /24s under 10.0.0.0/16 and a covering /16, each route's MED =
    // its prefix's third octet (the /16: 1000).
    let sets: Vec<_> = (0..=256u32)
        .map(|i| {
            rib.intern(&AttrsRef {
                as_path: &words,
                med: Some(if i == 256 { 1000 } else { i }),
                ..Default::default()
            })
        })
        .collect();
    let cover = v4(0x0a00_0000, 16);
    rib.announce(&peer, cover, 0, &sets[256]).unwrap();
    rib.sync();
    let stop = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|t| {
            let (rib, stop, checked) = (rib.clone(), stop.clone(), checked.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(0x1234_5678 + t);
                let mut out = vec![None; 32];
                while !stop.load(Ordering::Relaxed) {
                    let a = 0x0a00_0000 | (rng.next() as u32 & 0xffff);
                    if let Some(r) = rib.lookup(AnyAddr::V4(a), &Query::default()) {
                        let AnyPrefix::V4(p) = r.prefix else {
                            panic!("IPv6 answer")
                        };
                        assert!(p.contains(a), "{} does not cover {a:#x}", r.prefix);
                        let want = if p.len() == 16 { 1000 } else { (a >> 8) & 0xff };
                        assert_eq!(r.attrs.med, Some(want), "route of another prefix");
                    }
                    let batch: Vec<u32> = (0..32)
                        .map(|_| 0x0a00_0000 | (rng.next() as u32 & 0xffff))
                        .collect();
                    rib.lookup_batch_v4(&batch, &Query::default(), &mut out);
                    for h in &out {
                        let h = h.expect("the /16 covers every address");
                        assert!(h.prefix_len == 16 || h.prefix_len == 24, "{h:?}");
                    }
                    checked.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut rng = Rng(42);
    for _ in 0..200_000 {
        let i = (rng.next() % 256) as u32;
        let p = v4(0x0a00_0000 | i << 8, 24);
        if rng.next().is_multiple_of(2) {
            rib.announce(&peer, p, 0, &sets[i as usize]).unwrap();
        } else {
            rib.withdraw(&peer, p, 0);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert!(checked.load(Ordering::Relaxed) > 0);
    let (high, _) = rib.prefix_ids();
    assert!(high < 100_000, "ids not reused: {high}");
}

#[test]
fn swept_peers_leave_the_registry_and_their_ids_are_not_confused() {
    let rib = Rib::new();
    let words = AsPath::encode([(AS_SEQUENCE, &[64500u32][..])]);
    let attrs = rib.intern(&AttrsRef {
        as_path: &words,
        ..Default::default()
    });
    let p = v4(0x0a00_0000, 8);
    let stay = rib.add_peer(1, key(0)).unwrap();
    rib.announce(&stay, p, 0, &attrs).unwrap();
    let mut seen = std::collections::HashSet::new();
    for i in 0..5000u32 {
        let peer = rib.add_peer(2, key(i + 1)).unwrap();
        // Generations wrap after 2,048 reuses of one slot.
        if i < 2048 {
            assert!(seen.insert(peer.id), "id {} handed out twice", peer.id);
        }
        rib.announce(&peer, p, 0, &attrs).unwrap();
        assert_eq!(rib.routes(&p).len(), 2);
        assert!(rib.peer_down(peer.id));
        // A stale handle of a freed peer writes nothing.
        rib.sweep();
        rib.announce(&peer, p, 0, &attrs).unwrap();
        assert_eq!(rib.routes(&p).len(), 1);
        assert!(rib.peers().get(peer.id).is_none(), "peer {i} not freed");
    }
    assert_eq!(rib.peers().count(), 1);
    assert_eq!(rib.peers().all().count(), 1);
    assert_eq!(rib.counters().peers_freed.load(Ordering::Relaxed), 5000);
    // The same few slots served every peer (generations differ).
    assert!(rib.peers().all().all(|p| p.id == stay.id));
    assert!(seen
        .iter()
        .all(|&id| id & ((1 << ipfib_rib::peers::SLOT_BITS) - 1) < 4));
}
