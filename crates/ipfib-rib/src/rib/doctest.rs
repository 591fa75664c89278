//! Builders the RIB's documentation examples share (hidden from the
//! documentation: examples call them from hidden `# ` lines, so that each
//! shows only what it is about).

use ipfib::prefix::{AnyAddr, AnyPrefix};

use crate::attrs::AttrsRef;
use crate::{Origin, PeerKey, RibKind};

/// A global-instance peer at `addr` (AS 64500, BGP ID 1) in RIB `rib`.
///
/// # Panics
/// If `addr` is not an IP address.
pub fn key(addr: &str, rib: RibKind) -> PeerKey {
    PeerKey {
        peer_type: 0,
        distinguisher: 0,
        address: addr.parse().expect("a peer address"),
        asn: 64500,
        bgp_id: 1,
        rib,
    }
}

/// Attributes with AS path `path` (encoded, see [`crate::AsPath::encode`])
/// and next hop `next_hop`, ORIGIN IGP, nothing else.
///
/// # Panics
/// If `next_hop` is not an IP address.
pub fn attrs<'a>(path: &'a [u32], next_hop: &str) -> AttrsRef<'a> {
    AttrsRef {
        as_path: path,
        communities: &[],
        large_communities: &[],
        next_hop: Some(next_hop.parse().expect("a next hop")),
        origin: Origin::Igp,
        med: None,
        local_pref: None,
    }
}

/// An address as lookups take it (IPv4-mapped IPv6 as IPv4).
///
/// # Panics
/// If `s` is not an IP address.
pub fn addr(s: &str) -> AnyAddr {
    AnyAddr::unmapped(s.parse().expect("an address"))
}

/// A prefix.
///
/// # Panics
/// If `s` is not a prefix.
pub fn pfx(s: &str) -> AnyPrefix {
    s.parse().expect("a prefix")
}
