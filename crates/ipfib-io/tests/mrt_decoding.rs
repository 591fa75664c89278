//! What the MRT readers take from records the shared files do not hold:
//! path identifiers in plain BGP4MP messages, AS4_PATH in 4-byte messages,
//! entries with malformed attributes, bytes after a record's entries, an
//! IPv6 next hop whose link-local address comes first.

mod common;

use common::mrt::{self, ip};
use ipfib_io::{load_table_from, Format, PeerSelector, ReadError, TableOptions, ValuePolicy};
use std::io::Cursor;

fn load(bytes: &[u8], value: ValuePolicy, strict: bool) -> Result<ipfib_io::TableLoad, ReadError> {
    let opts = TableOptions {
        format: Format::Mrt,
        value: Some(value),
        strict,
        ..Default::default()
    };
    load_table_from(Cursor::new(bytes.to_vec()), "t.mrt", &opts)
}

fn values(bytes: &[u8], value: ValuePolicy) -> Vec<(String, String)> {
    let t = load(bytes, value, false).unwrap();
    let mut v: Vec<_> = t
        .routes
        .iter()
        .map(|r| (r.prefix.to_string(), r.value.clone()))
        .collect();
    v.sort();
    v
}

/// A BGP4MP_MESSAGE_AS4 around an UPDATE of `attrs` and raw NLRI bytes.
fn bgp4mp(attrs: &[u8], nlri: &[u8]) -> Vec<u8> {
    let mut msg = vec![0xff; 16];
    let len = (19 + 2 + 2 + attrs.len() + nlri.len()) as u16;
    msg.extend_from_slice(&len.to_be_bytes());
    msg.push(2);
    msg.extend_from_slice(&[0, 0]);
    msg.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    msg.extend_from_slice(attrs);
    msg.extend_from_slice(nlri);
    let mut b = 64999u32.to_be_bytes().to_vec();
    b.extend_from_slice(&65000u32.to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 1]);
    b.extend_from_slice(&[10, 0, 0, 9, 10, 0, 0, 254]);
    b.extend_from_slice(&msg);
    mrt::record(16, 4, &b)
}

#[test]
fn path_ids_in_a_plain_message_are_recognised_by_their_leading_zero() {
    // Path id 1, then 10.1.2.0/24: read without path ids this decodes
    // too, as three /0s, a /1 and a /10 (the leading zero bytes).
    let attrs = mrt::attributes(&[64999], &[], ip("10.0.0.9"));
    let nlri = [0, 0, 0, 1, 24, 10, 1, 2];
    let got = values(&bgp4mp(&attrs, &nlri), ValuePolicy::OriginAsn);
    assert_eq!(got, [("10.1.2.0/24".to_string(), "64999".to_string())]);
    // A plain default route stays one.
    let got = values(&bgp4mp(&attrs, &[0]), ValuePolicy::OriginAsn);
    assert_eq!(got, [("0.0.0.0/0".to_string(), "64999".to_string())]);
    // And a plain list that only decodes with path ids is read with them.
    let nlri = [0, 0, 0, 7, 16, 10, 9];
    let got = values(&bgp4mp(&attrs, &nlri), ValuePolicy::OriginAsn);
    assert_eq!(got, [("10.9.0.0/16".to_string(), "64999".to_string())]);
}

#[test]
fn as4_path_is_merged_in_four_byte_messages_too() {
    // AS_PATH 65001 23456 (AS_TRANS), AS4_PATH 65001 400000.
    let mut attrs = vec![0x40, 1, 1, 0, 0x40, 2, 10, 2, 2];
    attrs.extend_from_slice(&65001u32.to_be_bytes());
    attrs.extend_from_slice(&23456u32.to_be_bytes());
    attrs.extend_from_slice(&[0x40, 3, 4, 10, 0, 0, 9, 0xc0, 17, 10, 2, 2]);
    attrs.extend_from_slice(&65001u32.to_be_bytes());
    attrs.extend_from_slice(&400000u32.to_be_bytes());
    let got = values(&bgp4mp(&attrs, &[16, 10, 7]), ValuePolicy::OriginAsn);
    assert_eq!(got, [("10.7.0.0/16".to_string(), "400000".to_string())]);
}

#[test]
fn a_malformed_attribute_costs_the_entry_only_when_the_value_comes_from_it() {
    let peers = mrt::peer_table(&[(ip("10.0.0.1"), 64500), (ip("10.0.0.2"), 64501)]);
    let good = mrt::attributes(&[64500, 65010], &[], ip("10.0.0.1"));
    // COMMUNITIES of 3 bytes (treat-as-withdraw in BMP): the policy does
    // not read it.
    let mut bad_communities = good.clone();
    bad_communities.extend_from_slice(&[0xc0, 8, 3, 1, 2, 3]);
    // AS_PATH with a segment type of 9: the origin comes from it.
    let mut bad_path = vec![0x40, 1, 1, 0, 0x40, 2, 6, 9, 1, 0, 0, 0xfd, 0xe8];
    bad_path.extend_from_slice(&[0x40, 3, 4, 10, 0, 0, 2]);
    let mut file = peers.clone();
    file.extend(mrt::rib_ipv4(
        1,
        ip("10.1.0.0"),
        16,
        &[(0, bad_communities)],
    ));
    file.extend(mrt::rib_ipv4(
        2,
        ip("10.2.0.0"),
        16,
        &[(0, good), (1, bad_path)],
    ));
    let t = load(&file, ValuePolicy::OriginAsn, false).unwrap();
    let mut got: Vec<_> = t
        .routes
        .iter()
        .map(|r| (r.prefix.to_string(), r.value.clone()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("10.1.0.0/16".to_string(), "65010".to_string()),
            ("10.2.0.0/16".to_string(), "65010".to_string()),
        ]
    );
    // The entry left out is reported, with its record and why.
    assert_eq!(t.report.bad, 1, "{:?}", t.report.errors);
    let e = t.report.errors[0].to_string();
    assert!(
        e.contains("record 3") && e.contains("entry 1 (peer index 1"),
        "{e}"
    );
    assert!(e.contains("AS_PATH"), "{e}");
    assert_eq!(t.report.mrt.as_ref().unwrap().entries_skipped, 1);
    // Strict mode stops there.
    let e = load(&file, ValuePolicy::OriginAsn, true).unwrap_err();
    assert!(matches!(e, ReadError::BadRecord { record: 3, .. }), "{e}");
    // Peer counts read no attribute: every entry counts.
    let got = values(&file, ValuePolicy::PeerCount);
    assert_eq!(got[1], ("10.2.0.0/16".to_string(), "2".to_string()));
}

#[test]
fn bytes_after_a_records_entries_are_ignored() {
    let mut file = mrt::peer_table(&[(ip("10.0.0.1"), 64500)]);
    let attrs = mrt::attributes(&[64500, 65020], &[], ip("10.0.0.1"));
    let mut rec = mrt::rib_ipv4(1, ip("10.4.0.0"), 16, &[(0, attrs)]);
    rec.extend_from_slice(&[0, 0]);
    let len = (rec.len() - 12) as u32;
    rec[8..12].copy_from_slice(&len.to_be_bytes());
    file.extend(rec);
    let t = load(&file, ValuePolicy::OriginAsn, true).unwrap();
    assert_eq!(t.routes.len(), 1);
    assert_eq!(t.routes[0].value, "65020");
}

#[test]
fn an_ipv6_next_hop_is_the_global_one_whichever_comes_first() {
    let peers = mrt::peer_table(&[(ip("10.0.0.1"), 64500)]);
    let global: std::net::Ipv6Addr = "2001:db8::99".parse().unwrap();
    let link: std::net::Ipv6Addr = "fe80::1".parse().unwrap();
    for (first, second) in [(link, global), (global, link)] {
        // MP_REACH in a RIB entry: the next hop alone (RFC 6396 §4.3.4).
        let mut mp = vec![32];
        mp.extend_from_slice(&first.octets());
        mp.extend_from_slice(&second.octets());
        let mut attrs = vec![0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfb, 0xf4];
        attrs.extend_from_slice(&[0x80, 14, mp.len() as u8]);
        attrs.extend_from_slice(&mp);
        let mut b = 1u32.to_be_bytes().to_vec();
        b.extend_from_slice(&[32, 0x20, 0x01, 0x0d, 0xb8]); // 2001:db8::/32
        b.extend_from_slice(&1u16.to_be_bytes());
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&1_399_999_000u32.to_be_bytes());
        b.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        b.extend_from_slice(&attrs);
        let mut file = peers.clone();
        file.extend(mrt::record(13, 4, &b));
        let got = values(&file, ValuePolicy::NextHop(PeerSelector::Index(0)));
        assert_eq!(got, [("2001:db8::/32".to_string(), global.to_string())]);
    }
}

#[test]
fn a_message_malformed_either_way_is_a_bad_record_not_a_default_route() {
    // A /33 read plain; with path ids, id 0x210a0000 and then a /0.
    let attrs = mrt::attributes(&[64501], &[], ip("10.0.0.9"));
    let t = load(
        &bgp4mp(&attrs, &[33, 10, 0, 0, 0]),
        ValuePolicy::OriginAsn,
        false,
    )
    .unwrap();
    assert!(t.routes.is_empty(), "{:?}", t.routes);
    assert_eq!(t.report.bad, 1);
}
