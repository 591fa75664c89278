//! Routing instances and RIB kinds: which routes a query may see.
//!
//! A route belongs to one instance: the global one (BMP peer type 0, and
//! Loc-RIB, peer type 3, with a zero distinguisher), or the instance its
//! distinguisher names (peer type 1 "RD instance", peer type 3 with a
//! route distinguisher, peer type 2 "local instance" with its locally
//! defined distinguisher, and VPN routes with the route distinguisher of
//! their NLRI). Peer type 2 is not the global instance: its routes answer
//! only `instance=all` or its distinguisher.

use crate::peers::RibKind;

/// Whether a peer of this type and distinguisher is in the global
/// instance.
///
/// ```
/// use ipfib_rib::instance::is_global;
/// assert!(is_global(0, 0) && is_global(3, 0));
/// assert!(!is_global(3, 1) && !is_global(1, 0) && !is_global(2, 0));
/// ```
pub fn is_global(peer_type: u8, distinguisher: u64) -> bool {
    (peer_type == 0 || peer_type == 3) && distinguisher == 0
}

/// The name of a BMP peer type in the JSON answers.
pub fn peer_type_name(peer_type: u8) -> &'static str {
    match peer_type {
        0 => "global",
        1 => "rd",
        2 => "local",
        3 => "loc-rib",
        _ => "unknown",
    }
}

/// A route distinguisher as text (RFC 4364 §4.2): type 0 `ASN:N` (2-byte
/// ASN), type 1 `IPv4:N`, type 2 `ASN:N` (4-byte ASN); other types as
/// `TYPE:HEX` of the value.
///
/// ```
/// use ipfib_rib::instance::format_rd;
/// assert_eq!(format_rd(0x0000_fbf3_0000_000b), "64499:11");
/// assert_eq!(format_rd(0x0001_c000_0201_0064), "192.0.2.1:100");
/// assert_eq!(format_rd(0x0002_0001_0007_0069), "65543:105");
/// ```
pub fn format_rd(rd: u64) -> String {
    let b = rd.to_be_bytes();
    match u16::from_be_bytes([b[0], b[1]]) {
        0 => format!(
            "{}:{}",
            u16::from_be_bytes([b[2], b[3]]),
            u32::from_be_bytes([b[4], b[5], b[6], b[7]])
        ),
        1 => format!(
            "{}.{}.{}.{}:{}",
            b[2],
            b[3],
            b[4],
            b[5],
            u16::from_be_bytes([b[6], b[7]])
        ),
        2 => format!(
            "{}:{}",
            u32::from_be_bytes([b[2], b[3], b[4], b[5]]),
            u16::from_be_bytes([b[6], b[7]])
        ),
        t => format!("{t}:{:#x}", rd & 0xffff_ffff_ffff),
    }
}

/// The route distinguishers `text` may mean: `IPv4:N` is type 1; `ASN:N`
/// is type 0 when the ASN fits 2 bytes and N 4 bytes, type 2 when N fits
/// 2 bytes (either may match).
///
/// ```
/// use ipfib_rib::instance::{format_rd, parse_rd};
/// let (a, b) = parse_rd("64499:11").unwrap();
/// assert_eq!((format_rd(a), format_rd(b)), ("64499:11".into(), "64499:11".into()));
/// assert_ne!(a, b);
/// assert!(parse_rd("65543:70000").is_err());
/// ```
pub fn parse_rd(text: &str) -> Result<(u64, u64), String> {
    let bad = || format!("instance {text:?}: expected ASN:N, IPv4:N or all");
    let (left, right) = text.rsplit_once(':').ok_or_else(bad)?;
    let n: u64 = right.parse().map_err(|_| bad())?;
    if let Ok(ip) = left.parse::<std::net::Ipv4Addr>() {
        if n > 0xffff {
            return Err(bad());
        }
        let rd = (1u64 << 48) | ((u32::from(ip) as u64) << 16) | n;
        return Ok((rd, rd));
    }
    let asn: u64 = left.parse().map_err(|_| bad())?;
    let t0 = (asn <= 0xffff && n <= 0xffff_ffff).then_some((asn << 32) | n);
    let t2 = (asn <= 0xffff_ffff && n <= 0xffff).then_some((2u64 << 48) | (asn << 16) | n);
    match (t0, t2) {
        (Some(a), Some(b)) => Ok((a, b)),
        (Some(a), None) | (None, Some(a)) => Ok((a, a)),
        (None, None) => Err(bad()),
    }
}

/// Which instances a query sees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Instance {
    /// The global instance only (the default).
    #[default]
    Global,
    /// One instance: any peer not in the global instance whose
    /// distinguisher is one of these (see [`parse_rd`]).
    Rd(u64, u64),
    /// Every instance.
    All,
}

impl Instance {
    /// `all`, or a route distinguisher.
    pub fn parse(text: &str) -> Result<Instance, String> {
        if text == "all" {
            return Ok(Instance::All);
        }
        if text == "global" {
            return Ok(Instance::Global);
        }
        parse_rd(text).map(|(a, b)| Instance::Rd(a, b))
    }

    #[inline]
    pub fn fits(&self, peer_type: u8, distinguisher: u64) -> bool {
        match *self {
            Instance::Global => is_global(peer_type, distinguisher),
            Instance::Rd(a, b) => {
                !is_global(peer_type, distinguisher) && (distinguisher == a || distinguisher == b)
            }
            Instance::All => true,
        }
    }
}

/// A set of RIB kinds (one bit per [`RibKind::index`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RibSet(u8);

impl RibSet {
    /// Pre-policy, post-policy, Loc-RIB and MRT: what the router received
    /// and chose, not what it sends (Adj-RIB-Out).
    pub const DEFAULT: RibSet = RibSet(
        1 << RibKind::PrePolicy as u8
            | 1 << RibKind::PostPolicy as u8
            | 1 << RibKind::LocRib as u8
            | 1 << RibKind::Mrt as u8,
    );
    pub const ALL: RibSet = RibSet(0x3f);

    /// The set of these kinds.
    ///
    /// ```
    /// use ipfib_rib::{RibKind, RibSet};
    /// let s = RibSet::of([RibKind::LocRib, RibKind::Mrt]);
    /// assert!(s.has(RibKind::Mrt) && !s.has(RibKind::PrePolicy));
    /// assert_eq!(RibSet::of(RibKind::ALL), RibSet::ALL);
    /// ```
    pub fn of(kinds: impl IntoIterator<Item = RibKind>) -> RibSet {
        RibSet(kinds.into_iter().fold(0, |s, k| s | 1 << k.index()))
    }

    #[inline]
    pub fn has(self, k: RibKind) -> bool {
        self.0 & (1 << k.index()) != 0
    }

    /// A comma list of kind names (`pre-policy,loc-rib`).
    ///
    /// ```
    /// use ipfib_rib::{RibKind, RibSet};
    /// let s = RibSet::parse("adj-rib-out-pre,loc-rib").unwrap();
    /// assert!(s.has(RibKind::AdjRibOutPre) && s.has(RibKind::LocRib) && !s.has(RibKind::Mrt));
    /// assert!(!RibSet::default().has(RibKind::AdjRibOutPost));
    /// assert!(RibSet::parse("adj-rib-in").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<RibSet, String> {
        let mut s = 0u8;
        for name in text.split(',').map(str::trim) {
            let k = RibKind::parse(name).ok_or_else(|| {
                format!(
                    "rib {name:?}: expected a comma list of pre-policy, post-policy, loc-rib, \
                     adj-rib-out-pre, adj-rib-out-post, mrt"
                )
            })?;
            s |= 1 << k.index();
        }
        Ok(RibSet(s))
    }
}

impl Default for RibSet {
    fn default() -> Self {
        RibSet::DEFAULT
    }
}
