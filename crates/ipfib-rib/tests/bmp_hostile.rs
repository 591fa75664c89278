//! Hostile BMP input: real messages (cut from the shared recordings and
//! kept here, so these tests need no data) truncated at every byte, with
//! every length field lying, with impossible prefix lengths, and with
//! ADD-PATH that does not match the Peer Up. Every case must return an
//! error, or succeed with the meaning written next to it; none may
//! panic, and a failed message must leave the RIB as it was.

use std::sync::Arc;

use ipfib_rib::bmp::{frame, BmpError, Session, DEFAULT_MAX_MESSAGE};
use ipfib_rib::Rib;

/// GoBGP 4.8.0, `gobgp-4.8.0-rv2026-v4-full.bmp.zst`.
const INITIATION: &str = "03000000180400020005476f42475000010005342e382e30";
/// RFC 9069 Loc-RIB Peer Up: both OPENs announce ADD-PATH send/receive
/// for IPv4 and IPv6 unicast; table-name TLV "global".
const LOC_RIB_PEER_UP: &str = "03000000b00303000000000000000000000000000000000000000000000000000000fde90a0000016b0499b0000000000000000000000000000000000000000000000000ffffffffffffffffffffffffffffffff00310104fde9005a0a00000114020641040000fde9020a45080001010300020103ffffffffffffffffffffffffffffffff00310104fde9005a0a00000114020641040000fde9020a4508000101030002010300030006676c6f62616c";
/// Peer Up of neighbour 127.0.0.2 (no ADD-PATH).
const PEER_UP: &str = "03000000e603000000000000000000000000000000000000000000007f0000020000fde90a0000026b0499b2000000000000000000000000000000007f00000191d127c3ffffffffffffffffffffffffffffffff00510104fde900090a0000013402320200490402766d004b0c0b476f4247502f342e382e30060001040001000101040002000141040000fde90506000100010002ffffffffffffffffffffffffffffffff00510104fde900090a0000023402320200490402766d004b0c0b476f4247502f342e382e30060001040001000101040002000141040000fde90506000100010002";
/// Pre-policy Route Monitoring: 198.51.100.0/24.
const RM_PRE: &str = "030000006d00000000000000000000000000000000000000000000007f0000020000fde90a0000026b0499b200000000ffffffffffffffffffffffffffffffff003d02000000224001010240020602010000fbf4400304c000020140050400000064c00804fde9006418c63364";
/// Loc-RIB Route Monitoring with path id 1: 198.51.100.0/24.
const RM_LOC_RIB: &str = "03000000710003000000000000000000000000000000000000000000000000000000fde90a0000016b0499b200000000ffffffffffffffffffffffffffffffff004102000000224001010240020602010000fbf4400304c000020140050400000064c00804fde900640000000118c63364";
/// Loc-RIB Route Monitoring with every attribute the RIB keeps (ORIGIN,
/// AS_PATH, NEXT_HOP, MED, LOCAL_PREF, COMMUNITIES, LARGE_COMMUNITY).
const RM_ALL_ATTRS: &str = "03000000d30003000000000000000000000000000000000000000000000000000000fde90a0000016b0499b200000000ffffffffffffffffffffffffffffffff00a302000000844001010040021202040000e20a00001935000012930000256f400304258b8b118004040000000040050400000064c0082019350032193507d01935083419350835e20a0064fe4c1935fe4f0001fe50001fc020300000e20a00000064000019350000e20a00000065000000640000e20a00000067000000010000e20a000000680000001f0000000118010690";
/// Loc-RIB withdrawal with path id 1.
const RM_LOC_RIB_WITHDRAW: &str = "030000004f0003000000000000000000000000000000000000000000000000000000fde90a0000016b0499b700000000ffffffffffffffffffffffffffffffff001f020008000000011605b6840000";
/// Peer Down of 127.0.0.2, reason 3 with FSM event.
const PEER_DOWN: &str = "030000004602000000000000000000000000000000000000000000007f0000020000fde90a0000026b0499c70000000003ffffffffffffffffffffffffffffffff0015030603";
/// FRR 8.4.4, `frr-8.4.4-small-peerdown-repeats.bmp.zst`: its Peer Up
/// (ADD-PATH receive announced by FRR only: not negotiated).
const FRR_PEER_UP: &str = "03000000f903000000000000000000000000000000000000000000007f0000020000fde90a0000026b0495cc000ceef00000000000000000000000007f000001a12727c3ffffffffffffffffffffffffffffffff00740104fde900090a0000015702060104000100010206010400020001020280000202020002024600020641040000fde902020600020a4508000101010002010102094907056672722d610002044002c0780210470e0001018000000000020180000000ffffffffffffffffffffffffffffffff00410104fde900090a0000022402220200490402766d0001040001000101040002000141040000fde90506000100010002";
/// Post-policy, with ORIGINATOR_ID and CLUSTER_LIST and an
/// extended-length AS_PATH.
const FRR_RM_POST: &str = "030000007c00004000000000000000000000000000000000000000007f0000020000fde90a0000026b0499ee000ceeefffffffffffffffffffffffffffffffff004c0200000031400101025002000602010000fbf4400304c000020140050400000064c00804fde900648009040a000002800a040a00000118c63364";
/// Post-policy IPv6: MP_REACH_NLRI, 2001:db8:1::/48.
const FRR_RM_V6: &str = "030000008a00004000000000000000000000000000000000000000007f0000020000fde90a0000026b0499ee000ceef0ffffffffffffffffffffffffffffffff005a0200000043400101025002000602010000fbf6400504000000648009040a000002800a040a000001900e001c0002011020010db8000000000000000000000001003020010db80001";
/// Pre-policy IPv6 withdrawal: MP_UNREACH_NLRI.
const FRR_RM_V6_WITHDRAW: &str = "030000005500000000000000000000000000000000000000000000007f0000020000fde90a0000026b0499ee000ceeefffffffffffffffffffffffffffffffff0025020000000e900f000a0002013020010db80001";
/// Statistics Report.
const FRR_STATS: &str = "030000006c01000000000000000000000000000000000000000000007f0000020000fde90a0000026b0499f00002c8790000000700000004000000000004000400000000000500040000000000030004000000000002000400000000000b000400000000fffb000400000000";

/// BMP common header + per-peer header: where the BGP PDU starts.
const PDU: usize = 48;
/// Where the OPENs of a Peer Up start (after local address and ports).
const OPENS: usize = PDU + 20;

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2));
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn set_u32(m: &mut [u8], at: usize, v: u32) {
    m[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

fn set_u16(m: &mut [u8], at: usize, v: u16) {
    m[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn u16_at(m: &[u8], at: usize) -> usize {
    u16::from_be_bytes([m[at], m[at + 1]]) as usize
}

/// `msg` with its BMP length field set to its length.
fn fix_len(mut msg: Vec<u8>) -> Vec<u8> {
    let n = msg.len() as u32;
    set_u32(&mut msg, 1, n);
    msg
}

/// A RIB and a session that has seen the Initiation and `ups`.
fn session(ups: &[&str]) -> (Arc<Rib>, Session) {
    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, Arc::clone(&rib));
    s.handle(&hex(INITIATION)).unwrap();
    for u in ups {
        s.handle(&hex(u)).unwrap();
    }
    (rib, s)
}

/// Every message kept here, with the Peer Ups its routes need.
fn all_messages() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    let gobgp = vec![PEER_UP, LOC_RIB_PEER_UP];
    let frr = vec![FRR_PEER_UP];
    vec![
        ("initiation", INITIATION, vec![]),
        ("loc-rib peer up", LOC_RIB_PEER_UP, vec![]),
        ("peer up", PEER_UP, vec![]),
        ("pre-policy", RM_PRE, gobgp.clone()),
        ("loc-rib", RM_LOC_RIB, gobgp.clone()),
        ("all attributes", RM_ALL_ATTRS, gobgp.clone()),
        ("loc-rib withdraw", RM_LOC_RIB_WITHDRAW, gobgp.clone()),
        ("peer down", PEER_DOWN, gobgp),
        ("frr peer up", FRR_PEER_UP, vec![]),
        ("frr post-policy", FRR_RM_POST, frr.clone()),
        ("frr ipv6", FRR_RM_V6, frr.clone()),
        ("frr ipv6 withdraw", FRR_RM_V6_WITHDRAW, frr.clone()),
        ("frr stats", FRR_STATS, frr),
    ]
}

#[test]
fn every_kept_message_is_accepted_whole() {
    for (name, m, ups) in all_messages() {
        let (rib, mut s) = session(&ups);
        let msg = hex(m);
        assert_eq!(
            frame(&msg, DEFAULT_MAX_MESSAGE),
            Ok(Some(msg.len())),
            "{name}"
        );
        s.handle(&msg).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = match name {
            "pre-policy" | "loc-rib" | "all attributes" | "frr post-policy" | "frr ipv6" => 1,
            _ => 0,
        };
        assert_eq!(rib.route_count(), want, "{name}");
    }
}

#[test]
fn frame_rejects_bad_common_headers() {
    let good = hex(RM_PRE);
    let max = DEFAULT_MAX_MESSAGE;
    // Fewer than 6 bytes: wait for more, whatever they are.
    for n in 0..6 {
        assert_eq!(frame(&good[..n], max), Ok(None), "{n} bytes");
        assert_eq!(frame(&[0xff; 6][..n], max), Ok(None), "{n} bytes");
    }
    let mut s = Session::new(1, Arc::new(Rib::new()));
    for v in (0..=255u8).filter(|&v| v != 3) {
        let mut m = good.clone();
        m[0] = v;
        assert_eq!(frame(&m, max), Err(BmpError::Version(v)));
        assert_eq!(s.handle(&m), Err(BmpError::Version(v)));
    }
    for len in [0u32, 1, 5, max as u32 + 1, u32::MAX] {
        let mut m = good.clone();
        set_u32(&mut m, 1, len);
        assert!(
            matches!(frame(&m, max), Err(BmpError::Length { len: l, min: 6, max: x }) if l == len as usize && x == max),
            "length {len}: {:?}",
            frame(&m, max)
        );
    }
    // A length of exactly 6 or exactly `max` is a valid header.
    let mut m = good.clone();
    set_u32(&mut m, 1, 6);
    assert_eq!(frame(&m, max), Ok(Some(6)));
    set_u32(&mut m, 1, max as u32);
    assert_eq!(frame(&m, max), Ok(None), "valid, incomplete");
    for t in 7..=255u8 {
        let mut m = good.clone();
        m[5] = t;
        assert_eq!(frame(&m, max), Err(BmpError::UnknownType(t)));
        assert_eq!(s.handle(&m), Err(BmpError::UnknownType(t)));
    }
    // A stream: two messages, then a partial one.
    let mut stream = good.clone();
    stream.extend_from_slice(&good);
    stream.extend_from_slice(&good[..50]);
    assert_eq!(frame(&stream, max), Ok(Some(good.len())));
    assert_eq!(frame(&stream[good.len()..], max), Ok(Some(good.len())));
    assert_eq!(frame(&stream[2 * good.len()..], max), Ok(None));
}

/// A 6-byte message of each type: the header alone.
#[test]
fn bare_headers() {
    let (rib, mut s) = session(&[PEER_UP]);
    for t in 0..=6u8 {
        let m = [3, 0, 0, 0, 6, t];
        let r = s.handle(&m);
        match t {
            // Initiation and Termination are TLV lists: empty is valid.
            4 | 5 => assert_eq!(r, Ok(()), "type {t}"),
            // The others need a per-peer header.
            _ => assert!(
                matches!(r, Err(BmpError::Truncated { .. })),
                "type {t}: {r:?}"
            ),
        }
    }
    assert_eq!(rib.route_count(), 0);
    assert!(s.info.terminated);
}

/// The message cut at every byte. As framed (the header's length
/// unchanged) every prefix is incomplete; with the header's length set to
/// the cut, the message must fail unless what is left is itself whole:
/// - Initiation (and Termination): a cut between TLVs is a shorter TLV
///   list;
/// - Peer Up: a cut after both OPENs, between TLVs, is a Peer Up with
///   fewer TLVs; fewer than 4 bytes of a TLV are ignored (they cannot
///   hold a TLV header);
/// - Peer Down and Statistics: only the per-peer header is read (the
///   reason, the NOTIFICATION and the counters are not), so any cut after
///   it succeeds.
///
/// A cut Route Monitoring message always fails and changes nothing.
#[test]
fn truncation_at_every_byte() {
    for (name, m, ups) in all_messages() {
        let whole = hex(m);
        let kind = whole[5];
        let (rib, mut s) = session(&ups);
        let routes = rib.route_count();
        for n in 0..whole.len() {
            let cut = &whole[..n];
            assert_eq!(frame(cut, DEFAULT_MAX_MESSAGE), Ok(None), "{name} at {n}");
            assert!(
                s.handle(cut).is_err(),
                "{name} cut at {n}, length unchanged"
            );
            if n < 6 {
                continue;
            }
            let short = fix_len(cut.to_vec());
            let r = s.handle(&short);
            let ok = match kind {
                4 => tlvs_whole(&short, 6),
                3 => {
                    let o1 = u16_at(&whole, OPENS + 16);
                    let o2 = u16_at(&whole, OPENS + o1 + 16);
                    let end = OPENS + o1 + o2;
                    n >= end && peer_up_tlvs(&short, end)
                }
                1 | 2 => n >= PDU,
                _ => false,
            };
            assert_eq!(r.is_ok(), ok, "{name} cut to {n} bytes: {r:?}");
            if kind == 0 {
                assert_eq!(rib.route_count(), routes, "{name} cut at {n}");
            }
        }
        // And the session still takes the whole message afterwards.
        let (rib, mut s) = session(&ups);
        s.handle(&whole).unwrap();
        assert!(rib.route_count() <= 1);
    }
}

/// Whether `m` from `start` on is a list of whole TLVs.
fn tlvs_whole(m: &[u8], start: usize) -> bool {
    let mut at = start;
    while at < m.len() {
        if at + 4 > m.len() {
            return false;
        }
        at += 4 + u16_at(m, at + 2);
    }
    at == m.len()
}

/// As [`tlvs_whole`], except that fewer than 4 bytes left at the end are
/// ignored (what the Peer Up decoder does: they cannot hold a TLV header).
fn peer_up_tlvs(m: &[u8], start: usize) -> bool {
    let mut at = start;
    while m.len() - at >= 4 {
        at += 4 + u16_at(m, at + 2);
        if at > m.len() {
            return false;
        }
    }
    true
}

/// A BMP length longer than the bytes: incomplete, never read past the
/// end. Longer than the BGP message inside: the BGP message ends where
/// its own length says and the bytes after it are ignored (where BMP v4
/// puts its TLVs).
#[test]
fn bmp_length_lies() {
    for (name, m, ups) in all_messages() {
        let whole = hex(m);
        let (_rib, mut s) = session(&ups);
        for extra in [1u32, 2, 100, 1 << 16] {
            let mut long = whole.clone();
            set_u32(&mut long, 1, whole.len() as u32 + extra);
            assert_eq!(frame(&long, DEFAULT_MAX_MESSAGE), Ok(None), "{name}");
            assert!(
                matches!(s.handle(&long), Err(BmpError::Length { .. })),
                "{name} +{extra}"
            );
        }
    }
    // Trailing bytes after a Route Monitoring message's UPDATE.
    let (rib, mut s) = session(&[PEER_UP, LOC_RIB_PEER_UP]);
    let mut m = hex(RM_LOC_RIB);
    m.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef, 0, 0]);
    s.handle(&fix_len(m)).unwrap();
    assert_eq!(rib.route_count(), 1);
    // A stream whose first length lies by 10: the first message takes 10
    // bytes of the next (ignored, as above), and framing then starts
    // inside a message and fails.
    let mut stream = hex(RM_PRE);
    let n = stream.len() as u32 + 10;
    set_u32(&mut stream, 1, n);
    stream.extend(hex(RM_PRE));
    stream.extend(hex(RM_PRE));
    let (rib, mut s) = session(&[PEER_UP]);
    let first = frame(&stream, DEFAULT_MAX_MESSAGE).unwrap().unwrap();
    assert_eq!(first, n as usize);
    s.handle(&stream[..first]).unwrap();
    assert!(frame(&stream[first..], DEFAULT_MAX_MESSAGE).is_err());
    assert_eq!(rib.route_count(), 1);
}

/// Every value of the BGP length field of every Route Monitoring message:
/// below 19 or beyond the BMP message it fails; shorter than the UPDATE,
/// it fails unless it cuts the UPDATE at an NLRI boundary, which is a
/// valid UPDATE with fewer routes (the rest is ignored, as above).
#[test]
fn bgp_length_lies() {
    for (name, m, ups) in all_messages() {
        let whole = hex(m);
        if whole[5] != 0 {
            continue;
        }
        let real = u16_at(&whole, PDU + 16);
        let (rib, mut s) = session(&ups);
        for len in 0..=u16::MAX {
            let mut lie = whole.clone();
            set_u16(&mut lie, PDU + 16, len);
            let before = s.stats.announced + s.stats.withdrawn;
            let r = s.handle(&lie);
            let len = len as usize;
            if len < 19 || len > whole.len() - PDU {
                assert!(r.is_err(), "{name}: BGP length {len}");
            }
            if len == real {
                r.unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            // A shorter UPDATE never holds more routes than the real one.
            assert!(
                s.stats.announced + s.stats.withdrawn - before <= 1,
                "{name}"
            );
        }
        assert!(rib.route_count() <= 1, "{name}");
    }
}

/// The offsets of the path attributes of an UPDATE at `PDU`: (offset of
/// the flags byte, extended length).
fn attributes(m: &[u8]) -> Vec<(usize, bool)> {
    let wlen = u16_at(m, PDU + 19);
    let alen_at = PDU + 21 + wlen;
    let end = alen_at + 2 + u16_at(m, alen_at);
    let mut at = alen_at + 2;
    let mut out = Vec::new();
    while at < end {
        let ext = m[at] & 0x10 != 0;
        let len = if ext {
            u16_at(m, at + 2) + 4
        } else {
            m[at + 2] as usize + 3
        };
        out.push((at, ext));
        at += len;
    }
    out
}

/// Every value of every length field of an UPDATE: withdrawn routes
/// length, path attributes length, and each attribute's length. None may
/// panic; a length that reaches past its container fails, or for an
/// attribute's length is handled as RFC 7606 §4 says (treat-as-withdraw,
/// counted); the real value succeeds.
#[test]
fn update_length_fields_lie() {
    let mut cases = 0;
    for (name, m, ups) in all_messages() {
        let whole = hex(m);
        if whole[5] != 0 {
            continue;
        }
        let (rib, mut s) = session(&ups);
        let wlen_at = PDU + 19;
        let alen_at = PDU + 21 + u16_at(&whole, wlen_at);
        let body_end = whole.len();
        let mut fields: Vec<(usize, bool, usize)> = vec![
            (wlen_at, true, body_end - (wlen_at + 2)),
            (alen_at, true, body_end - (alen_at + 2)),
        ];
        for (at, ext) in attributes(&whole) {
            let len_at = at + 2;
            let room = body_end - (len_at + if ext { 2 } else { 1 });
            fields.push((len_at, ext, room));
        }
        for (at, two, room) in fields {
            let real = if two {
                u16_at(&whole, at)
            } else {
                whole[at] as usize
            };
            let top = if two { u16::MAX as usize } else { 255 };
            for v in 0..=top {
                let mut lie = whole.clone();
                if two {
                    set_u16(&mut lie, at, v as u16);
                } else {
                    lie[at] = v as u8;
                }
                let taw = s.stats.treat_as_withdraw;
                let r = s.handle(&lie);
                cases += 1;
                if v > room {
                    let attribute = at != wlen_at && at != alen_at;
                    assert!(
                        r.is_err() || (attribute && s.stats.treat_as_withdraw > taw),
                        "{name}: field at {at} = {v} > room {room}"
                    );
                }
                if v == real {
                    r.unwrap_or_else(|e| panic!("{name}: {e}"));
                }
            }
        }
        assert!(rib.route_count() <= 1, "{name}");
    }
    assert!(cases > 1_000_000, "{cases} cases");
}

/// A path attribute: (flags, type code, value).
type Attr = (u8, u8, Vec<u8>);

/// BGP UPDATE builder for the cases below: attributes, withdrawn and
/// announced NLRI as wire bytes.
fn update(attrs: &[Attr], withdrawn: &[u8], nlri: &[u8]) -> Vec<u8> {
    let mut a = Vec::new();
    for (flags, code, v) in attrs {
        a.push(*flags);
        a.push(*code);
        if flags & 0x10 != 0 {
            a.extend_from_slice(&(v.len() as u16).to_be_bytes());
        } else {
            a.push(v.len() as u8);
        }
        a.extend_from_slice(v);
    }
    let mut body = (withdrawn.len() as u16).to_be_bytes().to_vec();
    body.extend_from_slice(withdrawn);
    body.extend_from_slice(&(a.len() as u16).to_be_bytes());
    body.extend(a);
    body.extend_from_slice(nlri);
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(2);
    m.extend(body);
    m
}

/// A Route Monitoring message with the per-peer header of `like` around
/// the BGP message `bgp`.
fn rm(like: &str, bgp: &[u8]) -> Vec<u8> {
    let mut m = hex(like)[..PDU].to_vec();
    m.extend_from_slice(bgp);
    fix_len(m)
}

/// The usual attributes of an IPv4 route, with `replace` substituted by
/// type code.
fn attrs_with(replace: &[Attr]) -> Vec<Attr> {
    let mut base = vec![
        (0x40, 1, vec![0]),
        (0x40, 2, vec![2, 1, 0, 0, 0xfb, 0xf4]),
        (0x40, 3, vec![192, 0, 2, 1]),
        (0x80, 4, vec![0, 0, 0, 9]),
        (0x40, 5, vec![0, 0, 0, 100]),
        (0xc0, 8, vec![0xfd, 0xe9, 0, 100]),
        (0xc0, 32, vec![0, 0, 0xfd, 0xe9, 0, 0, 0, 1, 0, 0, 0, 2]),
    ];
    for r in replace {
        match base.iter_mut().find(|a| a.1 == r.1) {
            Some(a) => *a = r.clone(),
            None => base.push(r.clone()),
        }
    }
    base
}

const NLRI: [u8; 4] = [24, 198, 51, 100];

/// Attributes whose length is consistent with the UPDATE but wrong for
/// their type (RFC 7606 §7): the UPDATE's route is withdrawn
/// (treat-as-withdraw) and the session goes on; MP_REACH / MP_UNREACH
/// errors that hide where the NLRI are end it (session reset).
#[test]
fn malformed_attribute_values() {
    let (rib, mut s) = session(&[PEER_UP]);
    let ok = rm(RM_PRE, &update(&attrs_with(&[]), &[], &NLRI));
    s.handle(&ok).unwrap();
    assert_eq!(rib.route_count(), 1);
    let withdraw: Vec<(&str, Attr)> = vec![
        ("ORIGIN empty", (0x40, 1, vec![])),
        ("ORIGIN 3", (0x40, 1, vec![3])),
        ("AS_PATH segment type 0", (0x40, 2, vec![0, 1, 0, 0, 0, 1])),
        ("AS_PATH segment type 5", (0x40, 2, vec![5, 1, 0, 0, 0, 1])),
        (
            "AS_PATH count past the end",
            (0x40, 2, vec![2, 2, 0, 0, 0, 1]),
        ),
        ("AS_PATH half an ASN", (0x40, 2, vec![2, 1, 0, 0])),
        ("NEXT_HOP 3 bytes", (0x40, 3, vec![192, 0, 2])),
        ("MED 3 bytes", (0x80, 4, vec![0, 0, 9])),
        ("LOCAL_PREF 2 bytes", (0x40, 5, vec![0, 100])),
        ("COMMUNITIES 5 bytes", (0xc0, 8, vec![0, 0, 0, 1, 2])),
        ("LARGE_COMMUNITY 13 bytes", (0xc0, 32, vec![0; 13])),
        ("LARGE_COMMUNITY 8 bytes", (0xc0, 32, vec![0; 8])),
    ];
    for (what, a) in withdraw {
        s.handle(&ok).unwrap();
        assert_eq!(rib.route_count(), 1, "{what}");
        let before = s.stats.treat_as_withdraw;
        let m = rm(RM_PRE, &update(&attrs_with(&[a]), &[], &NLRI));
        s.handle(&m).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(rib.route_count(), 0, "{what}: the route is withdrawn");
        assert_eq!(s.stats.treat_as_withdraw, before + 1, "{what}");
    }
    s.handle(&ok).unwrap();
    let reset: Vec<(&str, Attr)> = vec![
        ("MP_REACH 1 byte", (0x80, 14, vec![0])),
        (
            "MP_REACH next hop length 5",
            (0x80, 14, vec![0, 1, 1, 5, 192, 0, 2, 1, 1, 0]),
        ),
        (
            "MP_REACH next hop past the end",
            (0x80, 14, vec![0, 2, 1, 16, 0x20, 0x01]),
        ),
        ("MP_UNREACH 2 bytes", (0x80, 15, vec![0, 2])),
    ];
    for (what, a) in reset {
        let m = rm(RM_PRE, &update(&attrs_with(&[a]), &[], &NLRI));
        assert!(s.handle(&m).is_err(), "{what}");
    }
    // Nothing the failed messages held reached the RIB; the route is
    // still there.
    assert_eq!(rib.route_count(), 1);
}

/// Over-long fixed-size attributes (RFC 7606 §7.1-7.5): none of their
/// bytes is read as the value; the UPDATE is treated as a withdrawal.
#[test]
fn over_long_fixed_size_attributes() {
    let (rib, mut s) = session(&[PEER_UP]);
    let ok = rm(RM_PRE, &update(&attrs_with(&[]), &[], &NLRI));
    let cases: Vec<(&str, Attr)> = vec![
        ("ORIGIN 2 bytes", (0x40, 1, vec![0, 0])),
        ("NEXT_HOP 5 bytes", (0x40, 3, vec![192, 0, 2, 1, 0])),
        ("MED 8 bytes", (0x80, 4, vec![0, 0, 0, 9, 0, 0, 0, 0])),
        ("LOCAL_PREF 5 bytes", (0x40, 5, vec![0, 0, 0, 100, 0])),
    ];
    for (what, a) in cases {
        s.handle(&ok).unwrap();
        let m = rm(RM_PRE, &update(&attrs_with(&[a]), &[], &NLRI));
        s.handle(&m).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(rib.route_count(), 0, "{what}");
    }
    assert_eq!(s.stats.treat_as_withdraw, 4);
}

/// Prefix lengths past the family's width, in every place NLRI appear,
/// with and without ADD-PATH; the widest valid lengths succeed.
#[test]
fn prefix_length_beyond_the_family() {
    let v6_reach = |len: u8, path_id: Option<u32>| {
        let mut v = vec![0, 2, 1, 16];
        v.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        v.push(0);
        if let Some(id) = path_id {
            v.extend_from_slice(&id.to_be_bytes());
        }
        v.push(len);
        v.extend(std::iter::repeat_n(
            0x20,
            (len as usize).div_ceil(8).min(16),
        ));
        (0x80u8, 14u8, v)
    };
    let v6_unreach = |len: u8, path_id: Option<u32>| {
        let mut v = vec![0, 2, 1];
        if let Some(id) = path_id {
            v.extend_from_slice(&id.to_be_bytes());
        }
        v.push(len);
        v.extend(std::iter::repeat_n(
            0x20,
            (len as usize).div_ceil(8).min(16),
        ));
        (0x80u8, 15u8, v)
    };
    let v4 = |len: u8, path_id: Option<u32>| {
        let mut v = Vec::new();
        if let Some(id) = path_id {
            v.extend_from_slice(&id.to_be_bytes());
        }
        v.push(len);
        v.extend(std::iter::repeat_n(10, (len as usize).div_ceil(8).min(4)));
        v
    };
    // Adj-RIB-In without ADD-PATH, and Loc-RIB with it.
    for (like, ups, path_id) in [
        (RM_PRE, vec![PEER_UP], None),
        (RM_LOC_RIB, vec![LOC_RIB_PEER_UP], Some(7)),
    ] {
        let (rib, mut s) = session(&ups);
        let base = attrs_with(&[]);
        for len in [33u8, 40, 128, 255] {
            let what = format!("path id {path_id:?}, IPv4 /{len}");
            let m = rm(like, &update(&base, &[], &v4(len, path_id)));
            assert!(s.handle(&m).is_err(), "announced {what}");
            let m = rm(like, &update(&[], &v4(len, path_id), &[]));
            assert!(s.handle(&m).is_err(), "withdrawn {what}");
        }
        for len in [129u8, 200, 255] {
            let m = rm(
                like,
                &update(&attrs_with(&[v6_reach(len, path_id)]), &[], &[]),
            );
            assert!(s.handle(&m).is_err(), "MP_REACH /{len}");
            let m = rm(like, &update(&[v6_unreach(len, path_id)], &[], &[]));
            assert!(s.handle(&m).is_err(), "MP_UNREACH /{len}");
        }
        assert_eq!(rib.route_count(), 0);
        let m = rm(like, &update(&base, &[], &v4(32, path_id)));
        s.handle(&m).unwrap();
        let m = rm(
            like,
            &update(&attrs_with(&[v6_reach(128, path_id)]), &[], &[]),
        );
        s.handle(&m).unwrap();
        assert_eq!(rib.route_count(), 2);
        let m = rm(
            like,
            &update(&[v6_unreach(128, path_id)], &v4(32, path_id), &[]),
        );
        s.handle(&m).unwrap();
        assert_eq!(rib.route_count(), 0);
    }
}

/// Every value of the length field of each OPEN inside a Peer Up: only
/// the real one succeeds (a shorter one leaves the OPEN's optional
/// parameters past its end, a longer one runs into the next OPEN or past
/// the message, below 19 is no BGP message). A failed Peer Up changes
/// nothing: the neighbour keeps the state of its last good Peer Up.
#[test]
fn peer_up_open_length_lies() {
    for m in [PEER_UP, LOC_RIB_PEER_UP, FRR_PEER_UP] {
        let whole = hex(m);
        let o1 = u16_at(&whole, OPENS + 16);
        for at in [OPENS + 16, OPENS + o1 + 16] {
            let (rib, mut s) = session(&[]);
            let real = u16_at(&whole, at);
            for v in 0..=u16::MAX {
                let mut lie = whole.clone();
                set_u16(&mut lie, at, v);
                let r = s.handle(&lie);
                assert_eq!(r.is_ok(), v as usize == real, "OPEN length {v}: {r:?}");
            }
            assert_eq!(rib.peers().count(), 0, "a Peer Up alone adds no peer");
        }
    }
    // A Loc-RIB Peer Up that fails leaves the neighbour without ADD-PATH:
    // the Loc-RIB route (with a path id) that follows is then misread.
    let mut lie = hex(LOC_RIB_PEER_UP);
    set_u16(&mut lie, OPENS + 16, 20);
    let (rib, mut s) = session(&[]);
    assert!(s.handle(&lie).is_err());
    assert!(s.handle(&hex(RM_LOC_RIB)).is_err());
    assert_eq!(rib.route_count(), 0);
}

/// An OPEN with capabilities `caps` (code, value), 4-byte AS 65001.
fn open(caps: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut c = Vec::new();
    for (code, v) in caps {
        c.push(*code);
        c.push(v.len() as u8);
        c.extend_from_slice(v);
    }
    let mut params = vec![2, c.len() as u8];
    params.extend(c);
    let mut body = vec![4, 0xfd, 0xe9, 0, 90, 10, 0, 0, 1, params.len() as u8];
    body.extend(params);
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(1);
    m.extend(body);
    m
}

/// A Peer Up of 127.0.0.2 (the per-peer header of `PEER_UP`) with the
/// router's sent OPEN and the neighbour's received OPEN announcing
/// ADD-PATH for IPv4 unicast with these send/receive bits (0: no
/// capability).
fn peer_up_addpath(sent: u8, rcvd: u8) -> Vec<u8> {
    let caps = |dir: u8| {
        let mut c = vec![(65u8, vec![0, 0, 0xfd, 0xe9])];
        if dir != 0 {
            c.push((69, vec![0, 1, 1, dir]));
        }
        c
    };
    let mut m = hex(PEER_UP)[..OPENS].to_vec();
    m.extend(open(&caps(sent)));
    m.extend(open(&caps(rcvd)));
    fix_len(m)
}

/// ADD-PATH for an Adj-RIB-In is on only when the neighbour may send path
/// ids (received OPEN: send) and the router may receive them (sent OPEN:
/// receive), RFC 7911 §4. When the routes do not match what the Peer Up
/// said, the decoder cannot always tell: the message fails or, when the
/// misread bytes happen to form valid NLRI, yields other routes; it
/// never panics.
#[test]
fn addpath_mismatch() {
    let with_id = rm(
        RM_PRE,
        &update(&attrs_with(&[]), &[], &[0, 0, 0, 5, 24, 198, 51, 100]),
    );
    let without = rm(RM_PRE, &update(&attrs_with(&[]), &[], &NLRI));
    for (sent, rcvd, on) in [
        (1, 2, true),
        (3, 3, true),
        (1, 3, true),
        (3, 2, true),
        (2, 1, false),
        (1, 1, false),
        (2, 2, false),
        (0, 2, false),
        (1, 0, false),
        (0, 0, false),
    ] {
        let (rib, mut s) = session(&[]);
        s.handle(&peer_up_addpath(sent, rcvd)).unwrap();
        let (right, wrong) = if on {
            (&with_id, &without)
        } else {
            (&without, &with_id)
        };
        // Without ADD-PATH, [0,0,0,5,24,198,51,100] reads as 0.0.0.0/0
        // three times, then 24.0.0.0/5 (one byte: 24), then a length of
        // 198: an error. With it, [24,198,51,100] is path id 0x18c63364
        // and no prefix: an error.
        assert!(s.handle(wrong).is_err(), "sent {sent} rcvd {rcvd}");
        assert_eq!(rib.route_count(), 0);
        s.handle(right).unwrap();
        let r = rib.routes(&"198.51.100.0/24".parse().unwrap());
        assert_eq!(r.len(), 1, "sent {sent} rcvd {rcvd}");
        assert_eq!(r[0].path_id, if on { 5 } else { 0 });
    }
    // A mismatch the decoder cannot see: path id 0 and 0.0.0.0/0 sent
    // with ADD-PATH to a session without it read as five announcements
    // of 0.0.0.0/0 (a length byte of 0 and no address bytes each):
    // accepted, one route.
    let (rib, mut s) = session(&[PEER_UP]);
    let m = rm(RM_PRE, &update(&attrs_with(&[]), &[], &[0, 0, 0, 0, 0]));
    s.handle(&m).unwrap();
    assert_eq!(rib.route_count(), 1);
    assert_eq!(rib.routes(&"0.0.0.0/0".parse().unwrap()).len(), 1);
}

/// One UPDATE with both conventional IPv4 NLRI and MP_REACH_NLRI (IPv6):
/// each route takes its own next hop (RFC 4760 §3, RFC 4271 §5.1.3), as
/// routecore reads them, not MP_REACH's for both.
#[test]
fn mixed_update_next_hops() {
    let (rib, mut s) = session(&[PEER_UP]);
    let mut mp = vec![0, 2, 1, 16];
    mp.extend_from_slice(&[0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    mp.extend_from_slice(&[0, 48, 0x20, 1, 0x0d, 0xb8, 0, 1]);
    let m = rm(RM_PRE, &update(&attrs_with(&[(0x80, 14, mp)]), &[], &NLRI));
    s.handle(&m).unwrap();
    let nh = |p: &str| rib.routes(&p.parse().unwrap())[0].attrs.next_hop;
    assert_eq!(nh("198.51.100.0/24"), Some("192.0.2.1".parse().unwrap()));
    assert_eq!(nh("2001:db8:1::/48"), Some("2001:db8::1".parse().unwrap()));
    assert_eq!(s.stats.announced, 2);
}

/// Deterministic random damage to every kept message (1 to 4 bytes
/// changed, or a cut, or bytes inserted), each through a session that saw
/// the message's Peer Ups: no panic, and the RIB's counters stay equal to
/// its entries.
#[test]
fn random_damage() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut ok = 0;
    let mut err = 0;
    for (_name, m, ups) in all_messages() {
        let whole = hex(m);
        let (rib, mut s) = session(&ups);
        for _ in 0..3_000 {
            let mut d = whole.clone();
            match next() % 4 {
                0 | 1 => {
                    for _ in 0..=next() % 4 {
                        // Keep the common header valid half the time, so
                        // most cases reach the decoder.
                        let lo = if next() % 2 == 0 { 6 } else { 0 };
                        let i = lo + (next() as usize) % (d.len() - lo);
                        d[i] = next() as u8;
                    }
                }
                2 => {
                    let n = 6 + (next() as usize) % (d.len() - 6);
                    d.truncate(n);
                    d = fix_len(d);
                }
                _ => {
                    let i = 6 + (next() as usize) % (d.len() - 6);
                    let k = 1 + (next() as usize) % 8;
                    for _ in 0..k {
                        d.insert(i, next() as u8);
                    }
                    d = fix_len(d);
                }
            }
            match s.handle(&d) {
                Ok(()) => ok += 1,
                Err(_) => err += 1,
            }
        }
        rib.sync();
        let mut live = 0;
        rib.for_each_prefix(|r| {
            live += r.iter().filter(|e| rib.peers().is_live(e.peer)).count() as u64
        });
        assert_eq!(rib.route_count(), live);
    }
    assert!(ok > 1_000 && err > 1_000, "ok {ok} err {err}");
}
