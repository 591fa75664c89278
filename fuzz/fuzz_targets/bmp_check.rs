// The check of the `bmp_session` target: arbitrary bytes as one BMP
// session's stream into a fresh RIB, then what must hold whatever the
// bytes were. Shared with crates/ipfib-rib/tests/fuzz_regressions.rs,
// which replays the kept inputs and the seeds in the normal test run.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_rib::bmp::{frame, Session};
use ipfib_rib::{Query, Rib};

/// The largest message framed: above every real BGP message (4,096
/// bytes, or 65,535 with RFC 8654) plus the BMP headers, below the
/// default so that a lying length is refused rather than waited for.
pub const MAX_MESSAGE: usize = 1 << 17;

/// Feed `data` through `frame` and `Session::handle`: a framing error
/// ends the stream (as it ends a connection); a message that fails is
/// skipped and the session goes on (the state it leaves must still be
/// consistent). Then check the RIB.
pub fn bmp_session(data: &[u8]) {
    let rib = Arc::new(Rib::new());
    let mut session = Session::new(1, Arc::clone(&rib));
    let mut at = 0;
    while let Ok(Some(n)) = frame(&data[at..], MAX_MESSAGE) {
        assert!(n >= 6 && at + n <= data.len(), "frame gave {n} at {at}");
        let (taw, routes) = (session.stats.treat_as_withdraw, rib.route_count());
        let r = session.handle(&data[at..at + n]);
        // RFC 7606: an UPDATE treated as a withdrawal is handled (the
        // session survives it) and only takes routes away.
        if session.stats.treat_as_withdraw > taw {
            assert!(r.is_ok(), "treat-as-withdraw ended the message: {r:?}");
            assert!(
                rib.route_count() <= routes,
                "an UPDATE treated as withdraw added routes"
            );
        }
        at += n;
    }
    rib.sync();
    check(&rib);
    // A sweep drops every dead peer's entry and leaves the live ones.
    let before = rib.route_count();
    rib.sweep();
    rib.sync();
    let mut dead = 0;
    rib.for_each_prefix(|r| dead += r.iter().filter(|e| !rib.peers().is_live(e.peer)).count());
    assert_eq!(dead, 0, "dead peers' entries left after a sweep");
    assert_eq!(rib.route_count(), before, "a sweep changed the live routes");
    check(&rib);
}

/// The RIB's counters agree with its entries, and its lookups with its
/// prefixes.
pub fn check(rib: &Rib) {
    rib.validate_route_lists();
    let mut live: HashMap<u32, u64> = HashMap::new();
    let mut prefixes: Vec<AnyPrefix> = Vec::new();
    rib.for_each_prefix(|r| {
        let mut seen = HashSet::new();
        let mut any_live = false;
        for e in r.iter() {
            assert!(
                seen.insert((e.peer, e.path_id)),
                "{}: peer {} path {} twice",
                r.prefix,
                e.peer,
                e.path_id
            );
            if rib.peers().is_live(e.peer) {
                *live.entry(e.peer).or_default() += 1;
                any_live = true;
            }
        }
        if any_live {
            prefixes.push(r.prefix);
        }
    });
    let total: u64 = live.values().sum();
    assert_eq!(
        rib.route_count(),
        total,
        "route_count vs the live peers' entries"
    );
    for p in rib.peers().all() {
        assert_eq!(
            p.is_up(),
            rib.peers().is_live(p.id),
            "peer {}: state vs the dead bitmap",
            p.id
        );
        if p.is_up() {
            assert_eq!(
                p.route_count(),
                live.get(&p.id).copied().unwrap_or(0),
                "peer {}: route counter vs its live entries",
                p.id
            );
        }
    }
    // After `sync`, the FIB holds every prefix with a live route: a
    // lookup of its first address finds it or a longer one.
    for p in prefixes {
        let addr = match p {
            AnyPrefix::V4(q) => AnyAddr::V4(q.addr()),
            AnyPrefix::V6(q) => AnyAddr::V6(q.addr()),
        };
        let got = rib.lookup(addr, &Query::everything());
        let got = got.unwrap_or_else(|| panic!("{p}: no route for {addr:?}"));
        assert!(
            got.prefix.len() >= p.len(),
            "{p}: lookup of its first address gave {}",
            got.prefix
        );
        assert!(!rib.routes(&p).is_empty(), "{p}: routes()");
    }
}
