//! The shared RouteViews RIB dumps (the first N MiB of real files, cut
//! inside a record) loaded into a RIB with `mrt::load`:
//! - counts: records, peers, routes, prefixes, and the damage offset where
//!   the cut record starts (the numbers mrtparse measures, see
//!   RIB-DESIGN.md and ipfib-io's tests/expected/mrtparse_view.py);
//! - every route against bgpkit-parser's elem view of the same file, read
//!   independently here;
//! - `mrt::dump` of the RIB read back route for route by bgpkit-parser's
//!   record iterator and, when Python's mrtparse is importable, by mrtparse;
//!   and loaded again by `mrt::load` into an equal RIB.

mod mrt_views;

use ipfib_io::DamageKind;
use ipfib_rib::mrt;
use ipfib_rib::Rib;
use mrt_views::{
    bgpkit_elem_lines, bgpkit_record_lines, data_file, mrtparse_lines, rib_lines, Scratch,
};

/// What a file must load as.
struct Expect {
    name: &'static str,
    /// Complete records (the peer table and one per prefix).
    records: u64,
    damage_at: u64,
    /// PEER_INDEX_TABLE entries, and those with routes in the part kept
    /// (mrtparse: distinct peer indexes of the RIB entries).
    peers: usize,
    peers_with_routes: usize,
    routes: u64,
    v4: u64,
    v6: u64,
}

/// Report the first differences between two sorted lists of lines.
pub fn assert_same(ours: &[String], theirs: &[String], what: &str) {
    if ours == theirs {
        return;
    }
    let a: std::collections::BTreeSet<&String> = ours.iter().collect();
    let b: std::collections::BTreeSet<&String> = theirs.iter().collect();
    let only_ours: Vec<_> = a.difference(&b).take(5).collect();
    let only_theirs: Vec<_> = b.difference(&a).take(5).collect();
    panic!(
        "{what}: {} routes here, {} there\n only here: {only_ours:#?}\n only there: {only_theirs:#?}",
        ours.len(),
        theirs.len()
    );
}

fn check(e: &Expect) {
    let Some(path) = data_file(e.name) else {
        return;
    };
    let rib = Rib::new();
    let r = mrt::load(&path, &rib).unwrap_or_else(|err| panic!("{}: {err}", e.name));
    println!("{}: {r}", e.name);
    assert_eq!(r.records, e.records, "{}: records", e.name);
    assert_eq!(r.peers, e.peers, "{}: peers", e.name);
    assert_eq!(r.routes, e.routes, "{}: routes", e.name);
    assert_eq!((r.prefixes_v4, r.prefixes_v6), (e.v4, e.v6), "{}", e.name);
    assert_eq!(
        (r.bad_records, r.bad_entries),
        (0, 0),
        "{}: {:?}",
        e.name,
        r.errors
    );
    assert!(r.unsupported.is_empty(), "{}: {:?}", e.name, r.unsupported);
    let d = r.damage.as_ref().expect("the file is cut inside a record");
    assert_eq!(d.offset, e.damage_at, "{}: damage offset", e.name);
    assert_eq!(d.records_before, e.records);
    assert!(
        matches!(d.kind, DamageKind::TruncatedBody { .. }),
        "{}: {d}",
        e.name
    );
    assert_eq!(r.bytes, e.damage_at);
    assert_eq!(rib.route_count(), e.routes);
    let with_routes = rib.peers().all().filter(|p| p.route_count() > 0).count();
    assert_eq!(with_routes, e.peers_with_routes, "{}", e.name);

    // Every route against bgpkit-parser's elem view (which shows a
    // missing MED / LOCAL_PREF as 0 and has no path ids).
    let elems = bgpkit_elem_lines(&path);
    assert_eq!(elems.len() as u64, e.routes, "{}: bgpkit elems", e.name);
    let elem_peers: std::collections::HashSet<&str> = elems
        .iter()
        .filter_map(|l| l.split(" id=").next())
        .map(|l| l.rsplit_once(' ').map_or(l, |(peer_as, _prefix)| peer_as))
        .collect();
    assert_eq!(
        elem_peers.len(),
        e.peers_with_routes,
        "bgpkit: peers with routes"
    );
    assert_same(&rib_lines(&rib, true), &elems, "RIB vs bgpkit elem view");
    drop(elems);

    // Dump, and read the dump back.
    let ours = rib_lines(&rib, false);
    let out = Scratch::new("rv");
    let file = std::fs::File::create(&out.0).unwrap();
    let dumped = mrt::dump(&rib, file).unwrap();
    println!("{}: dump {dumped:?}", e.name);
    assert_eq!(dumped.peers, e.peers);
    assert_eq!(dumped.routes, e.routes);
    assert_eq!((dumped.prefixes_v4, dumped.prefixes_v6), (e.v4, e.v6));
    assert_eq!(dumped.records, 1 + e.v4 + e.v6, "one RIB record per prefix");
    assert_eq!(dumped.bytes, std::fs::metadata(&out.0).unwrap().len());
    assert_eq!(
        (dumped.unencodable, dumped.routes_of_new_peers),
        (0, 0),
        "{:?}",
        dumped.first_unencodable
    );

    let (lines, peers) = bgpkit_record_lines(&out.0);
    assert_eq!(peers.len(), e.peers, "bgpkit: the dump's peer table");
    assert_same(&ours, &lines, "RIB vs bgpkit records of its dump");
    drop(lines);

    let again = Rib::new();
    let r2 = mrt::load(&out.0, &again).unwrap();
    assert!(r2.damage.is_none() && r2.errors.is_empty(), "{r2}");
    assert_eq!((r2.routes, r2.peers), (e.routes, e.peers));
    assert_same(&ours, &rib_lines(&again, false), "RIB vs its dump reloaded");
    drop(again);

    if let Some(lines) = mrtparse_lines(&out.0) {
        assert_same(&ours, &lines, "RIB vs mrtparse of its dump");
        println!(
            "{}: mrtparse reads the dump's {} routes alike",
            e.name,
            lines.len()
        );
    }
}

#[test]
fn routeviews_2026_ipv4() {
    check(&Expect {
        name: "rib.20260730.1400.first2MiB.mrt.bz2",
        records: 41_106,
        damage_at: 45_827_656,
        peers: 28,
        peers_with_routes: 20,
        routes: 679_347,
        v4: 41_105,
        v6: 0,
    });
}

#[test]
fn routeviews_2026_ipv6() {
    check(&Expect {
        name: "rib6.20260730.1400.first1MiB.mrt.bz2",
        records: 11_038,
        damage_at: 15_707_590,
        peers: 26,
        peers_with_routes: 22,
        routes: 164_279,
        v4: 0,
        v6: 11_037,
    });
}

#[test]
fn routeviews_2015_ipv6() {
    check(&Expect {
        name: "rib6.20151101.0600.first1MiB.mrt.bz2",
        records: 6_871,
        damage_at: 12_131_168,
        peers: 29,
        peers_with_routes: 27,
        routes: 149_578,
        v4: 0,
        v6: 6_870,
    });
}

#[test]
fn routeviews_2014_ipv4() {
    check(&Expect {
        name: "rib.20140523.0600.first1MiB.mrt.bz2",
        records: 9_073,
        damage_at: 15_273_283,
        peers: 47,
        peers_with_routes: 35,
        routes: 270_005,
        v4: 9_072,
        v6: 0,
    });
}
