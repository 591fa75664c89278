//! A small MRT encoder for tests (RFC 6396): just enough TABLE_DUMP_V2 and
//! BGP4MP to build fixtures whose every byte we know.

use std::net::Ipv4Addr;

/// A record: the 12-byte common header (16 for `_ET` types) and `body`.
pub fn record(entry_type: u16, subtype: u16, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + body.len());
    out.extend_from_slice(&1_400_000_000u32.to_be_bytes());
    out.extend_from_slice(&entry_type.to_be_bytes());
    out.extend_from_slice(&subtype.to_be_bytes());
    let et = matches!(entry_type, 17 | 33 | 49);
    let len = body.len() as u32 + if et { 4 } else { 0 };
    out.extend_from_slice(&len.to_be_bytes());
    if et {
        out.extend_from_slice(&123_456u32.to_be_bytes());
    }
    out.extend_from_slice(body);
    out
}

/// PEER_INDEX_TABLE with IPv4 peers `(address, asn)`.
pub fn peer_table(peers: &[(Ipv4Addr, u32)]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&[10, 0, 0, 1]); // collector BGP ID
    b.extend_from_slice(&0u16.to_be_bytes()); // view name length
    b.extend_from_slice(&(peers.len() as u16).to_be_bytes());
    for (addr, asn) in peers {
        b.push(0b10); // IPv4 address, 4-byte AS
        b.extend_from_slice(&addr.octets()); // BGP ID
        b.extend_from_slice(&addr.octets());
        b.extend_from_slice(&asn.to_be_bytes());
    }
    record(13, 1, &b)
}

/// Path attributes: ORIGIN, AS_PATH (4-byte, one AS_SEQUENCE and, if
/// given, a final AS_SET), NEXT_HOP.
pub fn attributes(path: &[u32], set: &[u32], next_hop: Ipv4Addr) -> Vec<u8> {
    let mut a = vec![0x40, 1, 1, 0]; // ORIGIN IGP
    let mut segs = vec![2, path.len() as u8];
    for asn in path {
        segs.extend_from_slice(&asn.to_be_bytes());
    }
    if !set.is_empty() {
        segs.extend_from_slice(&[1, set.len() as u8]);
        for asn in set {
            segs.extend_from_slice(&asn.to_be_bytes());
        }
    }
    a.extend_from_slice(&[0x40, 2, segs.len() as u8]);
    a.extend_from_slice(&segs);
    a.extend_from_slice(&[0x40, 3, 4]);
    a.extend_from_slice(&next_hop.octets());
    a
}

/// NLRI encoding of an IPv4 prefix.
pub fn nlri(addr: Ipv4Addr, len: u8) -> Vec<u8> {
    let mut b = vec![len];
    b.extend_from_slice(&addr.octets()[..usize::from(len).div_ceil(8)]);
    b
}

/// RIB_IPV4_UNICAST: `entries` are `(peer index, attributes)`.
pub fn rib_ipv4(seq: u32, addr: Ipv4Addr, len: u8, entries: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut b = seq.to_be_bytes().to_vec();
    b.extend_from_slice(&nlri(addr, len));
    b.extend_from_slice(&(entries.len() as u16).to_be_bytes());
    for (peer, attrs) in entries {
        b.extend_from_slice(&peer.to_be_bytes());
        b.extend_from_slice(&1_399_999_000u32.to_be_bytes());
        b.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        b.extend_from_slice(attrs);
    }
    record(13, 2, &b)
}

/// RIB_GENERIC (subtype 6) for `afi`/`safi`: the RIB_IPV4_UNICAST layout
/// with AFI and SAFI after the sequence number.
pub fn rib_generic(afi: u16, safi: u8, rib_ipv4_record: &[u8]) -> Vec<u8> {
    let body = &rib_ipv4_record[12..];
    let mut b = body[..4].to_vec();
    b.extend_from_slice(&afi.to_be_bytes());
    b.push(safi);
    b.extend_from_slice(&body[4..]);
    record(13, 6, &b)
}

/// BGP4MP_MESSAGE_AS4 (or BGP4MP_ET when `et`) carrying one UPDATE from
/// an IPv4 peer.
pub fn bgp4mp_update(
    et: bool,
    peer: (Ipv4Addr, u32),
    withdrawn: &[(Ipv4Addr, u8)],
    attrs: &[u8],
    announced: &[(Ipv4Addr, u8)],
) -> Vec<u8> {
    let mut msg = vec![0xff; 16];
    msg.extend_from_slice(&[0, 0, 2]); // length (set below), type UPDATE
    let w: Vec<u8> = withdrawn.iter().flat_map(|(a, l)| nlri(*a, *l)).collect();
    msg.extend_from_slice(&(w.len() as u16).to_be_bytes());
    msg.extend_from_slice(&w);
    msg.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    msg.extend_from_slice(attrs);
    for (a, l) in announced {
        msg.extend_from_slice(&nlri(*a, *l));
    }
    let len = (msg.len() as u16).to_be_bytes();
    msg[16] = len[0];
    msg[17] = len[1];
    let mut b = peer.1.to_be_bytes().to_vec();
    b.extend_from_slice(&65000u32.to_be_bytes()); // local AS
    b.extend_from_slice(&0u16.to_be_bytes()); // interface
    b.extend_from_slice(&1u16.to_be_bytes()); // AFI IPv4
    b.extend_from_slice(&peer.0.octets());
    b.extend_from_slice(&[10, 0, 0, 254]); // local address
    b.extend_from_slice(&msg);
    record(if et { 17 } else { 16 }, 4, &b)
}

/// BGP4MP_STATE_CHANGE_AS4.
pub fn state_change(peer: (Ipv4Addr, u32), old: u16, new: u16) -> Vec<u8> {
    let mut b = peer.1.to_be_bytes().to_vec();
    b.extend_from_slice(&65000u32.to_be_bytes());
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&1u16.to_be_bytes());
    b.extend_from_slice(&peer.0.octets());
    b.extend_from_slice(&[10, 0, 0, 254]);
    b.extend_from_slice(&old.to_be_bytes());
    b.extend_from_slice(&new.to_be_bytes());
    record(16, 5, &b)
}

pub fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

/// A small RIB dump: three peers, four prefixes (one multi-origin, one
/// ending in an AS_SET), and the byte offset where each record starts.
pub fn small_rib() -> (Vec<u8>, Vec<usize>) {
    let peers = [
        (ip("192.0.2.1"), 64501),
        (ip("192.0.2.2"), 64502),
        (ip("192.0.2.3"), 64503),
    ];
    let records = vec![
        peer_table(&peers),
        rib_ipv4(
            0,
            ip("10.0.0.0"),
            8,
            &[
                (0, attributes(&[64501, 100], &[], ip("192.0.2.1"))),
                (1, attributes(&[64502, 100], &[], ip("192.0.2.2"))),
                (2, attributes(&[64503, 200], &[], ip("192.0.2.3"))),
            ],
        ),
        rib_ipv4(
            1,
            ip("10.1.0.0"),
            16,
            &[
                (0, attributes(&[64501, 300], &[], ip("192.0.2.1"))),
                (2, attributes(&[64503, 200], &[], ip("192.0.2.3"))),
            ],
        ),
        rib_ipv4(
            2,
            ip("192.168.0.0"),
            22,
            &[(1, attributes(&[64502], &[65010, 65009], ip("192.0.2.2")))],
        ),
        rib_ipv4(
            3,
            ip("198.51.100.0"),
            24,
            &[(2, attributes(&[64503, 400], &[], ip("192.0.2.3")))],
        ),
    ];
    let mut starts = Vec::new();
    let mut bytes = Vec::new();
    for r in records {
        starts.push(bytes.len());
        bytes.extend_from_slice(&r);
    }
    (bytes, starts)
}
