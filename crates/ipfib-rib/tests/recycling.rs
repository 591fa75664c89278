//! Id recycling and amortised purges under the interleavings that once
//! broke them: a recycled prefix id must not answer for a more specific
//! prefix the FIB still publishes, and releases counted while a purge runs
//! must still trigger the next purge.
use std::net::IpAddr;
use std::sync::Arc;

use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_rib::attrs::{AttrsRef, PURGE_MIN};
use ipfib_rib::{PeerKey, Query, Rib, RibKind};

/// A /24 (p) is withdrawn and its id, freed by the FIB thread, is recycled
/// at once to a new /16 (q) that also covers the address, before the FIB
/// republishes. A lookup in p then loads q's array through the stale
/// snapshot; the /20 (r) between them has had a route the whole time and
/// is the right answer at every instant.
#[test]
fn recycled_id_skips_a_published_intermediate_prefix() {
    let rib = Rib::new();
    let peer = rib
        .add_peer(
            1,
            PeerKey {
                peer_type: 0,
                distinguisher: 0,
                address: IpAddr::from([127, 0, 0, 1]),
                asn: 65000,
                bgp_id: 1,
                rib: RibKind::PrePolicy,
            },
        )
        .unwrap();
    let set = rib.intern(&AttrsRef::default());
    let pfx = |s: &str| s.parse::<AnyPrefix>().unwrap();
    let (p, r, q) = (pfx("10.1.2.0/24"), pfx("10.1.0.0/20"), pfx("10.1.0.0/16"));
    let addr = AnyAddr::V4(u32::from_be_bytes([10, 1, 2, 3]));
    rib.announce(&peer, r, 0, &set).unwrap();
    let mut wrong = 0;
    let mut tries = 0;
    for _ in 0..2000 {
        rib.announce(&peer, p, 0, &set).unwrap();
        rib.sync();
        let (_, free_before) = rib.prefix_ids();
        assert!(rib.withdraw(&peer, p, 0));
        // Wait for the FIB thread to free p's id (not for its publication).
        let mut spins = 0u32;
        while rib.prefix_ids().1 == free_before && spins < 10_000_000 {
            spins += 1;
            std::hint::spin_loop();
        }
        rib.announce(&peer, q, 0, &set).unwrap();
        tries += 1;
        if let Some(hit) = rib.lookup(addr, &Query::default()) {
            if hit.prefix == q {
                wrong += 1;
            }
        }
        assert!(rib.withdraw(&peer, q, 0));
        rib.sync();
    }
    assert_eq!(wrong, 0, "{wrong} of {tries} lookups answered {q} over {r}");
}

/// Releases that land while a purge walks the sets must not stop later
/// purges: unreferenced sets would grow until the next Peer Down.
#[test]
fn releases_during_a_purge_stall_later_purges() {
    let rib = Arc::new(Rib::new());
    // 1M sets nobody holds (held = 1M, so the threshold is 500K).
    for i in 0..1_000_000u32 {
        drop(rib.intern(&AttrsRef {
            med: Some(i),
            ..Default::default()
        }));
    }
    let purger = {
        let rib = rib.clone();
        std::thread::spawn(move || {
            rib.attrs().purge();
        })
    };
    // Another writer releases routes while the purge walks (as a sweep's
    // purge races a session's churn).
    let mut spins = 0u64;
    while rib.attrs().purges() == 0 {
        spins += 1;
        assert!(spins < 1 << 32);
        std::hint::spin_loop();
    }
    for _ in 0..2 * PURGE_MIN {
        rib.attrs().released(1);
    }
    purger.join().unwrap();
    let purges = rib.attrs().purges();
    // Churn: 50,000 replaced routes, each releasing its set.
    for i in 0..50_000u32 {
        drop(rib.intern(&AttrsRef {
            med: Some(2_000_000 + i),
            ..Default::default()
        }));
        rib.attrs().released(1);
    }
    let sets = rib.attrs().counts().0;
    assert!(
        sets <= 2 * PURGE_MIN as usize + 2,
        "{sets} unreferenced sets held; purges {} -> {}",
        purges,
        rib.attrs().purges()
    );
}
