//! MRT damage, on synthetic dumps whose every byte we know (`common::mrt`)
//! and on the shared samples cut and flipped at test time.
//!
//! The documented behaviour (src/mrt/mod.rs): a record whose framing is
//! fine but whose body does not parse is skipped and counted; a header that
//! breaks framing (input ending inside a header or body, a length beyond
//! 16 MiB, an `_ET` length below 4, a type RFC 6396 does not define) stops
//! the read there, every complete record before it loaded, the damage
//! reported at the offset where the broken record starts. `strict` turns
//! either into an error. Nothing panics.

mod common;

use common::mrt::{self, ip};
use common::{data_file, DATA};
use ipfib_io::{
    load_table_from, read_updates_from, AsSegment, Change, DamageKind, Event, Format, PeerSelector,
    ReadError, TableLoad, TableOptions, ValuePolicy,
};
use std::collections::BTreeMap;
use std::io::Cursor;

fn load(bytes: &[u8], value: Option<ValuePolicy>, strict: bool) -> Result<TableLoad, ReadError> {
    let opts = TableOptions {
        format: Format::Mrt,
        value,
        strict,
        ..Default::default()
    };
    load_table_from(Cursor::new(bytes.to_vec()), "rib.mrt", &opts)
}

fn table(l: &TableLoad) -> BTreeMap<String, String> {
    l.routes
        .iter()
        .map(|r| (r.prefix.to_string(), r.value.clone()))
        .collect()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(p, v)| (p.to_string(), v.to_string()))
        .collect()
}

#[test]
fn value_policies_on_a_small_dump() {
    let (bytes, _) = mrt::small_rib();
    let l = load(&bytes, None, false).unwrap();
    assert_eq!(
        table(&l),
        map(&[
            ("10.0.0.0/8", "100"),               // two peers say 100, one 200
            ("10.1.0.0/16", "200"),              // 300 and 200 tie: the lowest
            ("192.168.0.0/22", "{65009,65010}"), // the path ends in an AS_SET
            ("198.51.100.0/24", "400"),
        ])
    );
    let m = l.report.mrt.as_ref().unwrap();
    assert_eq!((m.reduce.multi_origin, m.reduce.as_set_origins), (2, 1));
    assert_eq!(m.peers.len(), 3);
    assert_eq!(m.rib_entries, 7);
    assert!(!l.report.has_problems());
    // The input auto-detects as MRT.
    let auto = load_table_from(Cursor::new(bytes.clone()), "x", &TableOptions::default()).unwrap();
    assert_eq!(auto.report.format, Format::Mrt);

    let count = load(&bytes, Some(ValuePolicy::PeerCount), false).unwrap();
    assert_eq!(
        table(&count),
        map(&[
            ("10.0.0.0/8", "3"),
            ("10.1.0.0/16", "2"),
            ("192.168.0.0/22", "1"),
            ("198.51.100.0/24", "1"),
        ])
    );
    let by_index = Some(ValuePolicy::NextHop(PeerSelector::Index(2)));
    let by_addr = Some(ValuePolicy::NextHop(PeerSelector::Addr(
        "192.0.2.3".parse().unwrap(),
    )));
    let want = map(&[
        ("10.0.0.0/8", "192.0.2.3"),
        ("10.1.0.0/16", "192.0.2.3"),
        ("198.51.100.0/24", "192.0.2.3"),
    ]);
    for policy in [by_index, by_addr] {
        let l = load(&bytes, policy, false).unwrap();
        assert_eq!(table(&l), want);
        // The prefix that peer has no route for is left out, and counted.
        assert_eq!(l.report.mrt.as_ref().unwrap().reduce.without_value, 1);
    }
    let e = load(
        &bytes,
        Some(ValuePolicy::NextHop(PeerSelector::Index(9))),
        false,
    )
    .unwrap_err();
    assert!(matches!(e, ReadError::Policy { .. }), "{e}");
    assert!(e.to_string().contains("no peer with index 9"), "{e}");
}

#[test]
fn cut_at_every_byte_loads_every_complete_record() {
    let (bytes, starts) = mrt::small_rib();
    let full = load(&bytes, None, false).unwrap();
    let ends: Vec<usize> = starts
        .iter()
        .skip(1)
        .copied()
        .chain([bytes.len()])
        .collect();
    for cut in 0..bytes.len() {
        let l = load(&bytes[..cut], None, false).unwrap();
        let complete = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(l.report.records, complete as u64, "cut {cut}");
        match &l.report.damage {
            None => assert!(
                starts.contains(&cut) || cut == 0,
                "cut {cut}: damage missed"
            ),
            Some(d) => {
                let start = starts[complete];
                assert_eq!(d.offset, start as u64, "cut {cut}");
                assert_eq!(d.records_before, complete as u64);
                let header = cut - start < 12;
                assert!(
                    matches!(
                        (&d.kind, header),
                        (DamageKind::TruncatedHeader { .. }, true)
                            | (DamageKind::TruncatedBody { .. }, false)
                    ),
                    "cut {cut}: {d}"
                );
                let e = load(&bytes[..cut], None, true).unwrap_err();
                assert!(matches!(e, ReadError::Damaged { .. }), "cut {cut}: {e}");
                assert!(e.to_string().contains(&format!("byte {start}")), "{e}");
            }
        }
        // What loaded is exactly the complete records' prefixes.
        assert_eq!(l.routes.len(), complete.saturating_sub(1), "cut {cut}");
        for r in &l.routes {
            assert!(full.routes.iter().any(|f| f.prefix == r.prefix));
        }
    }
}

#[test]
fn flipped_bytes_never_panic() {
    let (bytes, _) = mrt::small_rib();
    for i in 0..bytes.len() {
        for mask in [0xff, 0x01, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            for policy in [None, Some(ValuePolicy::PeerCount)] {
                if let Ok(l) = load(&b, policy, false) {
                    assert!(l.report.records <= 5);
                }
                let _ = load(&b, policy, true);
            }
        }
    }
}

#[test]
fn framing_damage_kinds() {
    let (bytes, starts) = mrt::small_rib();
    // A length field beyond any record (no 4 GiB allocation follows).
    let mut huge = bytes.clone();
    huge[starts[2] + 8..starts[2] + 12].copy_from_slice(&u32::MAX.to_be_bytes());
    let l = load(&huge, None, false).unwrap();
    let d = l.report.damage.as_ref().unwrap();
    assert_eq!((d.offset, d.records_before), (starts[2] as u64, 2));
    assert_eq!(
        d.kind,
        DamageKind::Oversized {
            length: u32::MAX as u64
        }
    );
    assert_eq!(table(&l), map(&[("10.0.0.0/8", "100")]));

    // Garbage after the last record: framing lost there.
    let mut tail = bytes.clone();
    tail.extend_from_slice(b"this is not an MRT record at all");
    let l = load(&tail, None, false).unwrap();
    let d = l.report.damage.as_ref().unwrap();
    assert_eq!(d.offset, bytes.len() as u64);
    assert!(matches!(d.kind, DamageKind::UnknownType { .. }), "{d}");
    assert_eq!(l.routes.len(), 4);

    // A run of zero bytes is not thousands of empty records.
    let mut zeros = bytes.clone();
    zeros.extend_from_slice(&[0; 4096]);
    let l = load(&zeros, None, false).unwrap();
    assert!(matches!(
        l.report.damage.as_ref().unwrap().kind,
        DamageKind::UnknownType { entry_type: 0, .. }
    ));

    // An extended-timestamp record too short for its microseconds.
    let mut et = bytes.clone();
    et.extend_from_slice(&[0, 0, 0, 1, 0, 17, 0, 4, 0, 0, 0, 2, 9, 9]);
    let d = load(&et, None, false).unwrap().report.damage.unwrap();
    assert_eq!(d.kind, DamageKind::EtLengthTooShort { length: 2 });
}

#[test]
fn a_body_that_does_not_parse_is_skipped_and_counted() {
    let (mut bytes, starts) = mrt::small_rib();
    // Record 2 (10.1.0.0/16): a prefix length no IPv4 prefix has.
    bytes[starts[2] + 12 + 4] = 40; // after the header and the sequence number
    let l = load(&bytes, None, false).unwrap();
    assert_eq!(l.report.records, 5);
    assert_eq!(l.report.bad, 1);
    assert!(l.report.damage.is_none());
    let e = &l.report.errors[0];
    assert!(
        matches!(e, ReadError::BadRecord { record: 3, offset, entry_type: 13, subtype: 2, .. } if *offset == starts[2] as u64),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with(&format!("rib.mrt: MRT record 3 at byte {}", starts[2])),
        "{e}"
    );
    assert_eq!(l.routes.len(), 3, "the other records are loaded");
    let e = load(&bytes, None, true).unwrap_err();
    assert!(matches!(e, ReadError::BadRecord { .. }), "{e}");
}

#[test]
fn unicast_rib_generic_reads_like_rib_ipv4_and_the_rest_is_unsupported() {
    let peers = mrt::peer_table(&[(ip("192.0.2.1"), 64501)]);
    let rib = mrt::rib_ipv4(
        0,
        ip("10.0.0.0"),
        8,
        &[(0, mrt::attributes(&[64501, 100], &[], ip("192.0.2.1")))],
    );
    let plain = load(&[peers.clone(), rib.clone()].concat(), None, false).unwrap();
    let generic = [peers.clone(), mrt::rib_generic(1, 1, &rib)].concat();
    let l = load(&generic, None, false).unwrap();
    assert_eq!(table(&l), table(&plain));
    assert_eq!(table(&l), map(&[("10.0.0.0/8", "100")]));
    assert!(!l.report.has_problems());
    // SAFI 128 (VPN): not a unicast table; counted, not read.
    let vpn = [peers, mrt::rib_generic(1, 128, &rib)].concat();
    let l = load(&vpn, None, false).unwrap();
    assert!(l.routes.is_empty());
    assert_eq!(l.report.unsupported, [((13, 6), 1)]);
}

#[test]
fn bgp4mp_replay_and_events() {
    let peer_a = (ip("192.0.2.1"), 64501);
    let peer_b = (ip("192.0.2.2"), 64502);
    let attrs = |origin| mrt::attributes(&[64501, origin], &[], ip("192.0.2.1"));
    let attrs_b = mrt::attributes(&[64502, 777], &[64800, 64700], ip("192.0.2.2"));
    let stream = [
        mrt::bgp4mp_update(
            false,
            peer_a,
            &[],
            &attrs(100),
            &[(ip("10.0.0.0"), 8), (ip("10.2.0.0"), 16)],
        ),
        mrt::bgp4mp_update(
            true,
            peer_b,
            &[],
            &attrs_b,
            &[(ip("10.0.0.0"), 8), (ip("10.3.0.0"), 16)],
        ),
        mrt::bgp4mp_update(false, peer_a, &[(ip("10.2.0.0"), 16)], &[], &[]),
        mrt::state_change(peer_b, 6, 1), // B's session drops: its routes go
        mrt::bgp4mp_update(false, peer_a, &[], &attrs(200), &[(ip("10.4.0.0"), 16)]),
    ]
    .concat();
    let l = load(&stream, None, false).unwrap();
    assert_eq!(
        table(&l),
        map(&[("10.0.0.0/8", "100"), ("10.4.0.0/16", "200")])
    );
    let m = l.report.mrt.as_ref().unwrap();
    assert_eq!((m.announcements, m.withdrawals, m.state_changes), (5, 1, 1));

    let opts = TableOptions {
        format: Format::Auto,
        ..Default::default()
    };
    let events: Vec<Event> = read_updates_from(Cursor::new(stream), "u.mrt", &opts)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(events.len(), 7);
    let Event::Update(u) = &events[2] else {
        panic!("{:?}", events[2])
    };
    assert_eq!(u.prefix.to_string(), "10.0.0.0/8");
    assert_eq!(u.microseconds, Some(123_456), "BGP4MP_ET");
    assert_eq!(u.peer.asn, Some(64502));
    let Change::Announce { next_hop, as_path } = &u.change else {
        panic!()
    };
    assert_eq!(next_hop.unwrap().to_string(), "192.0.2.2");
    assert_eq!(
        as_path.as_deref().unwrap(),
        [
            AsSegment::Sequence(vec![64502, 777]),
            AsSegment::Set(vec![64800, 64700])
        ]
    );
    assert!(matches!(
        events[4],
        Event::Update(Update {
            change: Change::Withdraw,
            ..
        })
    ));
    assert!(matches!(events[5], Event::PeerState { old: 6, new: 1, .. }));
}

use ipfib_io::Update;

/// The shared samples, cut at many points and with bytes flipped: the
/// lenient load keeps every complete record and never panics.
#[test]
fn shared_samples_cut_and_flipped() {
    let Some(dir) = data_file("mrt-samples") else {
        return;
    };
    assert!(dir.starts_with(DATA));
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let whole = load(&bytes, None, false).unwrap();
        let starts = record_starts(&bytes);
        assert_eq!(
            starts.len() as u64,
            whole.report.records,
            "{}",
            path.display()
        );
        for cut in (0..bytes.len()).step_by(7) {
            let l = load(&bytes[..cut], None, false).unwrap();
            let complete = starts
                .iter()
                .filter(|&&s| s + 12 <= cut && end(&bytes, s) <= cut)
                .count();
            assert_eq!(
                l.report.records,
                complete as u64,
                "{} cut {cut}",
                path.display()
            );
            let at_boundary = cut == 0 || starts.contains(&cut);
            assert_eq!(
                l.report.damage.is_none(),
                at_boundary,
                "{} cut {cut}",
                path.display()
            );
        }
        for i in (0..bytes.len()).step_by(3) {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            let _ = load(&b, None, false);
            let _ = load(&b, Some(ValuePolicy::PeerCount), true);
            let opts = TableOptions::default();
            if let Ok(ev) = read_updates_from(Cursor::new(b), "x", &opts) {
                ev.take(10_000).for_each(drop);
            }
        }
    }
}

fn end(bytes: &[u8], start: usize) -> usize {
    let len = u32::from_be_bytes(bytes[start + 8..start + 12].try_into().unwrap()) as usize;
    start + 12 + len
}

fn record_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        starts.push(at);
        at = end(bytes, at);
    }
    starts
}
