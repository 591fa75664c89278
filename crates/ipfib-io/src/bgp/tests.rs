use super::attrs::merge_as4;
use super::*;
use ipfib::prefix::AnyPrefix;
use std::net::{IpAddr, Ipv6Addr};

/// Build a BGP message of `kind` around `body`.
pub(crate) fn bgp(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

fn attr(flags: u8, code: u8, v: &[u8]) -> Vec<u8> {
    let mut a = vec![flags, code];
    if flags & 0x10 != 0 {
        a.extend_from_slice(&(v.len() as u16).to_be_bytes());
    } else {
        a.push(v.len() as u8);
    }
    a.extend_from_slice(v);
    a
}

#[test]
fn ipv4_update_with_attributes() {
    let mut attrs = attr(0x40, 1, &[0]);
    attrs.extend(attr(0x40, 2, &[2, 2, 0, 0, 0xfd, 0xe8, 0, 0, 0x34, 0x17]));
    attrs.extend(attr(0x40, 3, &[192, 0, 2, 1]));
    attrs.extend(attr(0xc0, 8, &[0xfd, 0xe9, 0, 100]));
    attrs.extend(attr(0xc0, 32, &[0, 0, 0xfd, 0xe9, 0, 0, 0, 1, 0, 0, 0, 2]));
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend(attrs);
    body.extend([24, 198, 51, 100, 0]);
    let m = bgp(UPDATE, &body);
    let mut u = Update::default();
    decode_update(&m, &WireConfig::default(), &mut u).unwrap();
    assert_eq!(u.announced.len(), 2);
    assert_eq!(u.announced[0].0.to_string(), "198.51.100.0/24");
    assert_eq!(
        u.announced[1].0.to_string(),
        "0.0.0.0/0",
        "a /0 has no bytes"
    );
    assert_eq!(u.as_path, vec![(2 << 16) | 2, 65000, 13335]);
    assert_eq!(u.next_hop_v4, Some("192.0.2.1".parse().unwrap()));
    assert_eq!(u.communities, vec![(65001 << 16) | 100]);
    assert_eq!(u.large_communities, vec![[65001, 1, 2]]);
    assert!(!u.end_of_rib);
}

/// MRT RIB entries (RFC 6396 §4.3.4): MP_REACH abbreviated to its next
/// hop, or kept whole by some writers; 2-byte AS paths merged with
/// AS4_PATH; no mandatory attributes required.
#[test]
fn rib_entry_attributes() {
    let v6: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let mut short = vec![16];
    short.extend_from_slice(&v6.octets());
    let mut whole = vec![0, 2, 1, 16];
    whole.extend_from_slice(&v6.octets());
    whole.extend([0, 32, 0x20, 0x01, 0x0d, 0xb8]);
    let mut u = Update::default();
    for mp in [&short, &whole] {
        let mut a = attr(0x40, 1, &[0]);
        a.extend(attr(0x40, 2, &[2, 1, 0, 0, 0xfd, 0xe8]));
        a.extend(attr(0x80, 14, mp));
        decode_rib_entry_attrs(&a, true, &mut u).unwrap();
        assert_eq!(u.next_hop(), Some(IpAddr::V6(v6)));
        assert_eq!(u.as_path, vec![(2 << 16) | 1, 65000]);
        assert!(u.announced.is_empty() && u.errors.is_empty());
    }
    // No next hop in it (a length byte of 0).
    decode_rib_entry_attrs(&attr(0x80, 14, &[0]), true, &mut u).unwrap();
    assert_eq!(u.next_hop(), None);
    // 2-byte AS_PATH 65000 23456 (AS_TRANS) with AS4_PATH 196608.
    let mut a = attr(0x40, 2, &[2, 2, 0xfd, 0xe8, 0x5b, 0xa0]);
    a.extend(attr(0xc0, 17, &[2, 1, 0, 3, 0, 0]));
    decode_rib_entry_attrs(&a, false, &mut u).unwrap();
    assert_eq!(
        u.as_path,
        vec![(2 << 16) | 2, 65000, 196_608],
        "one sequence"
    );
    // An attribute running past the end is an error with its offset.
    let mut a = attr(0x40, 1, &[0]);
    a.extend([0x40, 2, 9, 1]);
    let e = decode_rib_entry_attrs(&a, true, &mut u).unwrap_err();
    assert!(e.to_string().contains("byte 4"), "{e}");
}

#[test]
fn addpath_and_mp_reach_v6() {
    let mut mp = vec![0, 2, 1, 16];
    mp.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    mp.push(0);
    mp.extend([0, 0, 0, 7, 48, 0x20, 0x01, 0x0d, 0xb8, 0, 1]);
    let mut attrs = attr(0x40, 1, &[0]);
    attrs.extend(attr(0x40, 2, &[]));
    attrs.extend(attr(0x90, 14, &mp));
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend(attrs);
    let m = bgp(UPDATE, &body);
    let cfg = WireConfig {
        addpath_v6: true,
        ..WireConfig::default()
    };
    let mut u = Update::default();
    decode_update(&m, &cfg, &mut u).unwrap();
    assert_eq!(u.announced, vec![("2001:db8:1::/48".parse().unwrap(), 7)]);
    assert_eq!(u.next_hop(), Some("2001:db8::1".parse().unwrap()));
    // The same bytes without ADD-PATH are malformed (length 0 then a
    // prefix length of 0 is fine, but 7 bytes of path id are read as
    // prefixes): decoding must fail or differ, never panic.
    let r = decode_update(&m, &WireConfig::default(), &mut u);
    assert!(r.is_err() || u.announced != vec![("2001:db8:1::/48".parse().unwrap(), 7)]);
}

#[test]
fn as4_path_merged_for_two_byte_sessions() {
    // AS_PATH 65000 23456 23456, AS4_PATH 400000 400001.
    let p = merge_as4(
        &[(2 << 16) | 3, 65000, 23456, 23456],
        &[(2 << 16) | 2, 400000, 400001],
    );
    assert_eq!(AsPath(p.into()).flat(), vec![65000, 400000, 400001]);
}

#[test]
fn end_of_rib_and_errors_name_offsets() {
    let mut u = Update::default();
    decode_update(&bgp(UPDATE, &[0, 0, 0, 0]), &WireConfig::default(), &mut u).unwrap();
    assert!(u.end_of_rib);
    let e = decode_update(&bgp(UPDATE, &[0, 5, 0, 0]), &WireConfig::default(), &mut u).unwrap_err();
    assert!(matches!(e, WireError::Truncated { at: 21, .. }), "{e}");
    let e = decode_update(
        &bgp(UPDATE, &[0, 0, 0, 0, 33, 1, 2, 3, 4, 5]),
        &WireConfig::default(),
        &mut u,
    )
    .unwrap_err();
    assert!(e.to_string().contains("prefix length 33"), "{e}");
}

#[test]
fn open_capabilities() {
    // version 4, AS 23456, hold 9, id 10.0.0.1, caps: 4-octet AS
    // 400000, ADD-PATH ipv4 unicast send+receive, ipv6 receive.
    let caps = [
        2u8, 16, 65, 4, 0, 6, 0x1a, 0x80, 69, 8, 0, 1, 1, 3, 0, 2, 1, 1,
    ];
    let mut body = vec![4, 0x5b, 0xa0, 0, 9, 10, 0, 0, 1, caps.len() as u8];
    body.extend(caps);
    let o = decode_open(&bgp(OPEN, &body)).unwrap();
    assert!(o.four_octet);
    assert_eq!(o.asn, 400000);
    assert_eq!(o.bgp_id, 0x0a000001);
    assert_eq!(o.addpath, vec![(1, 1, 3), (2, 1, 1)]);
    let peer = OpenCaps {
        addpath: vec![(1, 1, 2)],
        ..OpenCaps::default()
    };
    assert!(addpath_negotiated(&peer, &o, 1));
    assert!(!addpath_negotiated(&o, &peer, 1), "peer cannot receive");
    assert!(!addpath_negotiated(&peer, &o, 2));
}

/// An UPDATE with the usual attributes of an IPv4 route (ORIGIN,
/// AS_PATH, NEXT_HOP, MED, COMMUNITIES), `replace` substituted by type
/// code or appended, and `nlri`.
fn upd(replace: &[(u8, u8, Vec<u8>)], nlri: &[u8]) -> Vec<u8> {
    let mut base: Vec<(u8, u8, Vec<u8>)> = vec![
        (0x40, 1, vec![0]),
        (0x40, 2, vec![2, 1, 0, 0, 0xfb, 0xf4]),
        (0x40, 3, vec![192, 0, 2, 1]),
        (0x80, 4, vec![0, 0, 0, 9]),
        (0xc0, 8, vec![0xfd, 0xe9, 0, 100]),
    ];
    for r in replace {
        match base.iter_mut().find(|a| a.1 == r.1) {
            Some(a) => *a = r.clone(),
            None => base.push(r.clone()),
        }
    }
    let attrs: Vec<u8> = base.iter().flat_map(|(f, c, v)| attr(*f, *c, v)).collect();
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend(attrs);
    body.extend_from_slice(nlri);
    bgp(UPDATE, &body)
}

const NLRI: [u8; 4] = [24, 198, 51, 100];

fn decode(m: &[u8]) -> (Result<(), WireError>, Update) {
    let mut u = Update::default();
    let r = decode_update(m, &WireConfig::default(), &mut u);
    (r, u)
}

/// The UPDATE decodes, its route is withdrawn instead of announced,
/// and one error of `action` for attribute `code` is noted.
fn expect(replace: (u8, u8, Vec<u8>), action: ErrorAction, code: u8) -> Update {
    let (r, u) = decode(&upd(&[replace], &NLRI));
    r.unwrap();
    assert_eq!(u.errors.len(), 1, "{:?}", u.errors);
    assert_eq!((u.errors[0].action, u.errors[0].code), (action, code));
    let p: AnyPrefix = "198.51.100.0/24".parse().unwrap();
    match action {
        ErrorAction::TreatAsWithdraw => {
            assert!(u.announced.is_empty() && u.treat_as_withdraw);
            assert_eq!(u.withdrawn, vec![(p, 0)]);
        }
        ErrorAction::AttributeDiscard => {
            assert!(!u.treat_as_withdraw && u.withdrawn.is_empty());
            assert_eq!(u.announced, vec![(p, 0)]);
        }
    }
    u
}

#[test]
fn rfc7606_origin() {
    let taw = ErrorAction::TreatAsWithdraw;
    expect((0x40, 1, vec![3]), taw, 1);
    expect((0x40, 1, vec![0, 0]), taw, 1);
    expect((0x40, 1, vec![]), taw, 1);
}

#[test]
fn rfc7606_as_path() {
    let taw = ErrorAction::TreatAsWithdraw;
    expect((0x40, 2, vec![2, 0]), taw, 2);
    expect((0x40, 2, vec![7, 1, 0, 0, 0, 1]), taw, 2);
    expect((0x40, 2, vec![2, 2, 0, 0, 0, 1]), taw, 2);
}

#[test]
fn rfc7606_next_hop_med_local_pref() {
    let taw = ErrorAction::TreatAsWithdraw;
    expect((0x40, 3, vec![192, 0, 2]), taw, 3);
    expect((0x40, 3, vec![192, 0, 2, 1, 0]), taw, 3);
    expect((0x80, 4, vec![0, 0, 9]), taw, 4);
    expect((0x40, 5, vec![0, 100]), taw, 5);
}

#[test]
fn rfc7606_atomic_aggregate_and_aggregator() {
    let discard = ErrorAction::AttributeDiscard;
    expect((0x40, 6, vec![1]), discard, 6);
    // A 4-byte session's AGGREGATOR is 8 bytes.
    expect((0xc0, 7, vec![0xfb, 0xf4, 192, 0, 2, 1]), discard, 7);
    let (r, u) = decode(&upd(
        &[(0xc0, 7, vec![0, 0, 0xfb, 0xf4, 192, 0, 2, 1])],
        &NLRI,
    ));
    r.unwrap();
    assert!(u.errors.is_empty());
}

#[test]
fn rfc7606_communities_and_large_communities() {
    let taw = ErrorAction::TreatAsWithdraw;
    expect((0xc0, 8, vec![0, 0, 0, 1, 2]), taw, 8);
    expect((0xc0, 8, vec![]), taw, 8);
    expect((0xc0, 32, vec![0; 13]), taw, 32);
    expect((0xc0, 32, vec![0; 8]), taw, 32);
}

#[test]
fn rfc6793_as4_path_and_as4_aggregator() {
    let discard = ErrorAction::AttributeDiscard;
    // 2-byte session: AS_PATH 65000 23456, AS4_PATH malformed: the
    // AS_PATH stands alone.
    let m = upd(
        &[
            (0x40, 2, vec![2, 2, 0xfd, 0xe8, 0x5b, 0xa0]),
            (0xc0, 17, vec![2, 0]),
        ],
        &NLRI,
    );
    let mut u = Update::default();
    let cfg = WireConfig {
        four_octet: false,
        ..WireConfig::default()
    };
    decode_update(&m, &cfg, &mut u).unwrap();
    assert_eq!(u.errors.len(), 1);
    assert_eq!((u.errors[0].action, u.errors[0].code), (discard, 17));
    assert_eq!(u.as_path, vec![(2 << 16) | 2, 65000, 23456]);
    assert_eq!(u.announced.len(), 1);
    expect((0xc0, 18, vec![0, 0, 0xfb, 0xf4, 192, 0, 2]), discard, 18);
}

#[test]
fn rfc7606_attribute_flags() {
    // ORIGIN marked optional: treat-as-withdraw; AS4_PATH marked
    // well-known: discarded.
    expect((0xc0, 1, vec![0]), ErrorAction::TreatAsWithdraw, 1);
    expect(
        (0x40, 17, vec![2, 1, 0, 0, 0, 1]),
        ErrorAction::AttributeDiscard,
        17,
    );
    // MP_REACH marked transitive: its NLRI are still found, and
    // withdrawn.
    let mut mp = vec![0, 2, 1, 16];
    mp.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    mp.extend([0, 32, 0x20, 0x01, 0x0d, 0xb8]);
    let (r, u) = decode(&upd(&[(0xc0, 14, mp)], &[]));
    r.unwrap();
    assert!(u.treat_as_withdraw);
    assert_eq!(u.withdrawn, vec![("2001:db8::/32".parse().unwrap(), 0)]);
}

#[test]
fn rfc7606_duplicates() {
    // §3(g): the second ORIGIN is discarded, the first stands.
    let mut attrs = attr(0x40, 1, &[2]);
    attrs.extend(attr(0x40, 1, &[0]));
    attrs.extend(attr(0x40, 2, &[]));
    attrs.extend(attr(0x40, 3, &[192, 0, 2, 1]));
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend(attrs);
    body.extend(NLRI);
    let (r, u) = decode(&bgp(UPDATE, &body));
    r.unwrap();
    assert_eq!(u.errors[0].action, ErrorAction::AttributeDiscard);
    assert_eq!(u.origin, Origin::Incomplete);
    assert_eq!(u.announced.len(), 1);
    // §3(e): MP_UNREACH twice resets the session.
    let mut attrs = attr(0x80, 15, &[0, 2, 1]);
    attrs.extend(attr(0x80, 15, &[0, 2, 1]));
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend(attrs);
    assert!(decode(&bgp(UPDATE, &body)).0.is_err());
}

#[test]
fn rfc7606_missing_mandatory() {
    let mut body = vec![0, 0];
    let attrs = attr(0x40, 1, &[0]);
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend(attrs);
    body.extend(NLRI);
    let (r, u) = decode(&bgp(UPDATE, &body));
    r.unwrap();
    assert!(u.treat_as_withdraw && u.announced.is_empty());
    assert!(
        u.errors[0].what.contains("AS_PATH, NEXT_HOP"),
        "{:?}",
        u.errors
    );
}

#[test]
fn rfc7606_attribute_overrun_and_framing() {
    // The last attribute's length reaches past the path attributes:
    // the NLRI are still located (treat-as-withdraw).
    let mut m = upd(&[], &NLRI);
    let last_len = m.len() - NLRI.len() - 5;
    m[last_len] = 200;
    let (r, u) = decode(&m);
    r.unwrap();
    assert!(u.treat_as_withdraw);
    assert_eq!(u.withdrawn.len(), 1);
    // Without conventional NLRI nor an MP attribute before the error,
    // nothing can be located: session reset.
    let mut m = upd(&[], &[]);
    let at = m.len() - 5;
    m[at] = 200;
    assert!(decode(&m).0.is_err());
    // NLRI that cannot be parsed, lengths past the message: errors.
    assert!(decode(&upd(&[], &[33, 1, 2, 3, 4, 5])).0.is_err());
    let mut m = upd(&[], &NLRI);
    m[19] = 0xff;
    assert!(decode(&m).0.is_err());
    // MP_REACH with a next hop length that hides its NLRI.
    let (r, _) = decode(&upd(
        &[(0x80, 14, vec![0, 1, 1, 5, 192, 0, 2, 1, 1, 0])],
        &[],
    ));
    assert!(r.is_err());
}

#[test]
fn end_of_rib_needs_no_nlri() {
    // No withdrawn routes, no attributes, but NLRI: not End-of-RIB
    // (and, with no attributes, treated as withdraw).
    let (r, u) = decode(&bgp(UPDATE, &[0, 0, 0, 0, 24, 198, 51, 100]));
    r.unwrap();
    assert!(!u.end_of_rib);
    assert_eq!(u.withdrawn.len(), 1);
    let (r, u) = decode(&bgp(UPDATE, &[0, 0, 0, 0]));
    r.unwrap();
    assert!(u.end_of_rib);
    // MP_UNREACH with AFI/SAFI only.
    let a = attr(0x80, 15, &[0, 2, 1]);
    let mut body = vec![0, 0, 0, a.len() as u8];
    body.extend(a);
    let (r, u) = decode(&bgp(UPDATE, &body));
    r.unwrap();
    assert!(u.end_of_rib);
    assert_eq!(u.end_of_rib_family, (2, 1));
    let (r, u) = decode(&bgp(UPDATE, &[0, 0, 0, 0]));
    r.unwrap();
    assert_eq!((u.end_of_rib, u.end_of_rib_family), (true, (1, 1)));
}

#[test]
fn vpn_and_labeled_nlri() {
    // VPN-IPv4: next hop RD 0 + 192.0.2.1, label 16 (bottom of
    // stack), RD 0:64499:11, 10.1.0.0/16.
    let mut mp = vec![0, 1, 128, 12, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1, 0];
    mp.extend([24 + 64 + 16, 0, 1, 1, 0, 0, 0xfb, 0xf3, 0, 0, 0, 11, 10, 1]);
    let (r, u) = decode(&upd(&[(0x80, 14, mp)], &[]));
    r.unwrap();
    assert!(u.errors.is_empty(), "{:?}", u.errors);
    assert_eq!(
        u.vpn_announced,
        vec![(0x0000_fbf3_0000_000b, "10.1.0.0/16".parse().unwrap(), 0)]
    );
    assert_eq!(u.next_hop_mp, Some("192.0.2.1".parse().unwrap()));
    // Labeled IPv6 unicast, two labels; then its withdrawal with the
    // one 3-byte label field of RFC 8277 §2.4.
    let mut mp = vec![0, 2, 4, 16];
    mp.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    mp.extend([0, 48 + 32, 0, 1, 0, 0, 2, 1, 0x20, 0x01, 0x0d, 0xb8]);
    let (r, u) = decode(&upd(&[(0x80, 14, mp)], &[]));
    r.unwrap();
    // Apart from unicast: the same prefix may be a unicast route too.
    assert!(u.announced.is_empty());
    assert_eq!(
        u.labeled_announced,
        vec![("2001:db8::/32".parse().unwrap(), 0)]
    );
    assert_eq!(u.labeled_nlri, 1);
    let a = attr(
        0x80,
        15,
        &[0, 2, 4, 24 + 32, 0x80, 0, 0, 0x20, 0x01, 0x0d, 0xb8],
    );
    let mut body = vec![0, 0, 0, a.len() as u8];
    body.extend(a);
    let (r, u) = decode(&bgp(UPDATE, &body));
    r.unwrap();
    assert!(u.withdrawn.is_empty());
    assert_eq!(
        u.labeled_withdrawn,
        vec![("2001:db8::/32".parse().unwrap(), 0)]
    );
    // A VPN prefix length too short for its RD: a framing error.
    let mp = vec![
        0, 1, 128, 12, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1, 0, 40, 0, 1, 1, 0, 0,
    ];
    assert!(decode(&upd(&[(0x80, 14, mp)], &[])).0.is_err());
}

/// An UPDATE whose attribute errors fill the kept list before the one that
/// withdraws its routes still says why they are withdrawn (found by the
/// `bgp` fuzz target: 17 repeated empty attributes, then a header cut by
/// the end of the attributes).
#[test]
fn withdrawal_reason_kept_past_the_error_cap() {
    let m = bgp(
        UPDATE,
        &[
            &[0u8, 0, 0, 0x34][..],
            &[0u8; 17 * 3],
            &[0],     // a lone attribute byte: the header runs past the end
            &[0][..], // NLRI: 0.0.0.0/0
        ]
        .concat(),
    );
    let mut u = Update::default();
    decode_update(&m, &WireConfig::default(), &mut u).unwrap();
    assert!(u.treat_as_withdraw);
    assert!(u.errors.len() <= MAX_ERRORS);
    assert!(
        u.errors
            .iter()
            .any(|e| e.action == ErrorAction::TreatAsWithdraw),
        "{:?}",
        u.errors
    );
    // With fewer discards, the same reason in its own place.
    let m = bgp(
        UPDATE,
        &[&[0u8, 0, 0, 0x07][..], &[0u8; 6], &[0], &[0][..]].concat(),
    );
    decode_update(&m, &WireConfig::default(), &mut u).unwrap();
    assert!(u.treat_as_withdraw);
    assert_eq!(
        u.errors.last().map(|e| e.action),
        Some(ErrorAction::TreatAsWithdraw)
    );
}
