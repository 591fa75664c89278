//! Every MRT file in `../shared/data` and `../shared/data/mrt-samples/`
//! against an independent parser.
//!
//! The expected numbers come from `tests/expected/mrtparse_view.py`, which
//! reads the files with mrtparse 2.2.0 (PyPI; no code shared with
//! bgpkit-parser or ipfib) and re-implements the value policies from their
//! written definition. Regenerate with
//! `python3 tests/expected/mrtparse_view.py ../../../shared/data/*.mrt.bz2
//! ../../../shared/data/mrt-samples/*`. `digest` is the order-independent
//! FNV-1a sum over "PREFIX VALUE" of the final table (`common::digest`).
//!
//! The four truncated RouteViews dumps (2014 and 2026, IPv4 and IPv6) must
//! load every complete record and report the damage at the byte offset (in
//! the decompressed stream) where the first incomplete record starts.

mod common;

use common::{data_file, digest};
use ipfib_io::{
    load_table, read_updates, Change, DamageKind, Event, Format, TableOptions, ValuePolicy,
};

/// (IPv4 prefixes, IPv6 prefixes, distinct values, digest) of one policy.
type View = (u64, u64, usize, u64);

struct Expect {
    name: &'static str,
    records: u64,
    /// Offset of the incomplete record, for the truncated dumps.
    damage_at: Option<u64>,
    peers: usize,
    multi_origin: u64,
    as_set_origins: u64,
    rib_entries: u64,
    /// (announcements, withdrawals, state changes) of BGP4MP files.
    updates: (u64, u64, u64),
    /// Records of subtypes neither tool reads (mrtparse: its error count).
    unsupported: u64,
    origin_asn: View,
    peer_count: View,
}

fn check(e: &Expect) {
    let Some(path) = data_file(e.name) else {
        return;
    };
    for (policy, want) in [
        (ValuePolicy::OriginAsn, e.origin_asn),
        (ValuePolicy::PeerCount, e.peer_count),
    ] {
        let opts = TableOptions {
            value: Some(policy),
            ..Default::default()
        };
        let loaded = load_table(&path, &opts).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let r = &loaded.report;
        assert_eq!(r.format, Format::Mrt, "{}", e.name);
        assert_eq!(r.records, e.records, "{}: complete records", e.name);
        assert_eq!(r.bad, 0, "{}: {:?}", e.name, r.errors);
        let unsupported: u64 = r.unsupported.iter().map(|(_, n)| n).sum();
        assert_eq!(unsupported, e.unsupported, "{}", e.name);
        match (&r.damage, e.damage_at) {
            (None, None) => {}
            (Some(d), Some(at)) => {
                assert_eq!(d.offset, at, "{}: damage offset", e.name);
                assert_eq!(d.records_before, e.records, "{}", e.name);
                assert!(
                    matches!(d.kind, DamageKind::TruncatedBody { .. }),
                    "{}: {d}",
                    e.name
                );
                assert!(
                    d.stream_error.is_some(),
                    "{}: the bzip2 stream is cut too",
                    e.name
                );
                assert_eq!(r.bytes, at, "{}", e.name);
            }
            (got, want) => panic!("{}: damage {got:?}, expected at {want:?}", e.name),
        }
        let m = r.mrt.as_ref().expect("MRT stats");
        assert_eq!(
            m.peers.iter().flatten().count(),
            e.peers,
            "{}: peers",
            e.name
        );
        assert_eq!(m.rib_entries, e.rib_entries, "{}: routes", e.name);
        assert_eq!(
            (m.announcements, m.withdrawals, m.state_changes),
            e.updates,
            "{}",
            e.name
        );
        if policy == ValuePolicy::OriginAsn {
            assert_eq!(
                m.reduce.multi_origin, e.multi_origin,
                "{}: multi-origin",
                e.name
            );
            assert_eq!(m.reduce.as_set_origins, e.as_set_origins, "{}", e.name);
        }
        let v4 = loaded
            .routes
            .iter()
            .filter(|r| r.prefix.family() == 4)
            .count() as u64;
        let v6 = loaded.routes.len() as u64 - v4;
        let values: std::collections::HashSet<&str> =
            loaded.routes.iter().map(|r| r.value.as_str()).collect();
        let got = (v4, v6, values.len(), digest(&loaded.routes));
        assert_eq!(got, want, "{}: {policy:?} (v4, v6, values, digest)", e.name);
    }
}

macro_rules! mrt_tests {
    ($($test:ident: $expect:expr;)*) => {
        $(#[test] fn $test() { check(&$expect) })*
    };
}

const NO_UPDATES: (u64, u64, u64) = (0, 0, 0);

mrt_tests! {
    routeviews_2014_ipv4_truncated: Expect {
        name: "rib.20140523.0600.first1MiB.mrt.bz2", records: 9073, damage_at: Some(15_273_283),
        peers: 47, multi_origin: 63, as_set_origins: 3, rib_entries: 270_005, updates: NO_UPDATES,
        unsupported: 0,
        origin_asn: (9072, 0, 2161, 8346460651716902461),
        peer_count: (9072, 0, 24, 12647771206980740356),
    };
    routeviews_2026_ipv4_truncated: Expect {
        name: "rib.20260730.1400.first2MiB.mrt.bz2", records: 41106, damage_at: Some(45_827_656),
        peers: 28, multi_origin: 94, as_set_origins: 6, rib_entries: 679_347, updates: NO_UPDATES,
        unsupported: 0,
        origin_asn: (41105, 0, 3892, 18347900068468508397),
        peer_count: (41105, 0, 20, 9910487831517074927),
    };
    routeviews_2015_ipv6_truncated: Expect {
        name: "rib6.20151101.0600.first1MiB.mrt.bz2", records: 6871, damage_at: Some(12_131_168),
        peers: 29, multi_origin: 80, as_set_origins: 7, rib_entries: 149_578, updates: NO_UPDATES,
        unsupported: 0,
        origin_asn: (0, 6870, 2900, 8381688877885282114),
        peer_count: (0, 6870, 24, 2389281645201919461),
    };
    routeviews_2026_ipv6_truncated: Expect {
        name: "rib6.20260730.1400.first1MiB.mrt.bz2", records: 11038, damage_at: Some(15_707_590),
        peers: 26, multi_origin: 57, as_set_origins: 3, rib_entries: 164_279, updates: NO_UPDATES,
        unsupported: 0,
        origin_asn: (0, 11037, 2505, 13644086778586466481),
        peer_count: (0, 11037, 17, 6848204703638585895),
    };
    ripe_bview_three_records_without_peer_table: Expect {
        name: "bview.20140112.1600.3samples.mrt.bz2", records: 3, damage_at: None,
        peers: 0, multi_origin: 0, as_set_origins: 0, rib_entries: 3, updates: NO_UPDATES,
        unsupported: 0,
        origin_asn: (3, 0, 3, 1883662992809668077),
        peer_count: (3, 0, 1, 10506726733617935975),
    };
    bird_bgp4mp_addpath: Expect {
        name: "mrt-samples/bird-mrtdump_bgp", records: 27, damage_at: None,
        peers: 2, multi_origin: 3, as_set_origins: 0, rib_entries: 12, updates: (12, 0, 12),
        unsupported: 0,
        origin_asn: (3, 0, 1, 15423141387475298633),
        peer_count: (3, 0, 1, 4634810455218160530),
    };
    bird_rib_addpath: Expect {
        name: "mrt-samples/bird-mrtdump_rib", records: 14, damage_at: None,
        peers: 2, multi_origin: 3, as_set_origins: 0, rib_entries: 18, updates: NO_UPDATES,
        unsupported: 0,
        origin_asn: (6, 0, 2, 9197497603828283737),
        peer_count: (6, 0, 1, 16855909645769069039),
    };
    bird6_bgp4mp_addpath: Expect {
        name: "mrt-samples/bird6-mrtdump_bgp", records: 27, damage_at: None,
        peers: 2, multi_origin: 3, as_set_origins: 0, rib_entries: 12, updates: (12, 0, 12),
        unsupported: 0,
        origin_asn: (0, 3, 1, 1258193701026047701),
        peer_count: (0, 3, 1, 13677116593931390502),
    };
    bird6_rib_addpath: Expect {
        name: "mrt-samples/bird6-mrtdump_rib", records: 9, damage_at: None,
        peers: 1, multi_origin: 3, as_set_origins: 0, rib_entries: 10, updates: NO_UPDATES,
        unsupported: 0,
        origin_asn: (0, 5, 2, 13459020334428899091),
        peer_count: (0, 5, 1, 7431201352647946698),
    };
    bird6_bgp4mp_as4: Expect {
        name: "mrt-samples/bird6_bgp", records: 29, damage_at: None,
        peers: 2, multi_origin: 3, as_set_origins: 0, rib_entries: 14, updates: (14, 0, 12),
        unsupported: 0,
        origin_asn: (0, 4, 2, 212776936240152388),
        peer_count: (0, 4, 1, 14786260587273414593),
    };
    bird_bgp4mp_as4: Expect {
        name: "mrt-samples/bird_bgp", records: 29, damage_at: None,
        peers: 2, multi_origin: 3, as_set_origins: 0, rib_entries: 14, updates: (14, 0, 12),
        unsupported: 0,
        origin_asn: (4, 0, 2, 11555743759543531886),
        peer_count: (4, 0, 1, 10077425735411522311),
    };
    openbgpd_bgp4mp: Expect {
        name: "mrt-samples/openbgpd_bgp", records: 87, damage_at: None,
        peers: 4, multi_origin: 0, as_set_origins: 0, rib_entries: 93, updates: (93, 0, 16),
        unsupported: 0,
        origin_asn: (11, 10, 2, 1372399092627777434),
        peer_count: (11, 10, 2, 8676672962760570944),
    };
    // TABLE_DUMP (v1). mrtparse counts 2 peers: it shows the IPv4 peer of
    // the IPv6 records (written in a 16-byte field, RFC 6396 §4.2 sizes it
    // by subtype) as 192.168.1.10; bgpkit-parser reads the field as the
    // IPv6 address c0a8:10a::, a third peer. Tables and digests agree.
    openbgpd_table_dump_v1: Expect {
        name: "mrt-samples/openbgpd_rib_table", records: 31, damage_at: None,
        peers: 3, multi_origin: 0, as_set_origins: 0, rib_entries: 31, updates: NO_UPDATES,
        unsupported: 0,
        origin_asn: (11, 10, 2, 1372399092627777434),
        peer_count: (11, 10, 2, 8676672962760570944),
    };
    // BGP4MP_ENTRY (subtype 2), which neither tool reads: 31 unsupported.
    openbgpd_bgp4mp_entry_unsupported: Expect {
        name: "mrt-samples/openbgpd_rib_table-mp", records: 31, damage_at: None,
        peers: 0, multi_origin: 0, as_set_origins: 0, rib_entries: 0, updates: NO_UPDATES,
        unsupported: 31,
        origin_asn: (0, 0, 0, 0),
        peer_count: (0, 0, 0, 0),
    };
    // Two RIB_GENERIC records with AFI 384 / SAFI 104 and 112 (mrtparse:
    // "Unknown", no NLRI): not unicast, so not read.
    openbgpd_table_dump_v2_with_rib_generic: Expect {
        name: "mrt-samples/openbgpd_rib_table-v2", records: 24, damage_at: None,
        peers: 3, multi_origin: 0, as_set_origins: 0, rib_entries: 31, updates: NO_UPDATES,
        unsupported: 2,
        origin_asn: (11, 10, 2, 1372399092627777434),
        peer_count: (11, 10, 2, 8676672962760570944),
    };
    quagga_bgp4mp: Expect {
        name: "mrt-samples/quagga_bgp", records: 67, damage_at: None,
        peers: 2, multi_origin: 0, as_set_origins: 0, rib_entries: 18, updates: (18, 0, 20),
        unsupported: 0,
        origin_asn: (3, 3, 1, 16681335088501346334),
        peer_count: (3, 3, 2, 18311932546707692087),
    };
    quagga_table_dump_v2: Expect {
        name: "mrt-samples/quagga_rib", records: 7, damage_at: None,
        peers: 2, multi_origin: 0, as_set_origins: 0, rib_entries: 9, updates: NO_UPDATES,
        unsupported: 0,
        origin_asn: (3, 3, 1, 16681335088501346334),
        peer_count: (3, 3, 2, 18311932546707692087),
    };
}

/// The update iterator yields what the table replay counted, in order.
#[test]
fn update_streams_as_typed_events() {
    for (name, want) in [
        ("mrt-samples/bird-mrtdump_bgp", (12, 0, 12, true)),
        ("mrt-samples/bird_bgp", (14, 0, 12, true)),
        ("mrt-samples/openbgpd_bgp", (93, 0, 16, false)),
        ("mrt-samples/quagga_bgp", (18, 0, 20, false)),
        (
            "linx-update.20141217.0000-p52.txt.gz",
            (18_141, 5_305, 0, false),
        ),
    ] {
        let Some(path) = data_file(name) else {
            return;
        };
        let mut reader = read_updates(&path, &TableOptions::default()).unwrap();
        let (mut ann, mut wd, mut states, mut path_ids) = (0, 0, 0, false);
        let mut last_time = 0;
        for ev in reader.by_ref() {
            match ev.unwrap() {
                Event::Update(u) => {
                    assert!(u.timestamp >= last_time, "{name}: stream order");
                    last_time = u.timestamp;
                    let mrt = !name.starts_with("linx");
                    assert_eq!(u.peer.addr.is_some() && u.peer.asn.is_some(), mrt);
                    // bird's sessions use ADD-PATH even where the subtype
                    // does not say so; both parsers detect it (mrtparse
                    // shows path id 2 for bird_bgp's NLRI too).
                    path_ids |= u.path_id.is_some_and(|id| id != 0);
                    match u.change {
                        Change::Announce { as_path, next_hop } => {
                            assert_eq!(as_path.is_some(), mrt, "{name}");
                            assert!(next_hop.is_some(), "{name}");
                            ann += 1
                        }
                        Change::Withdraw => wd += 1,
                    }
                }
                Event::PeerState { .. } => states += 1,
            }
        }
        assert_eq!((ann, wd, states, path_ids), want, "{name}");
        assert!(!reader.report().has_problems(), "{name}");
    }
}
