//! What value a route gets when a dump holds one route per peer per prefix
//! (MRT RIB dumps, replayed update streams): [`ValuePolicy`].
//!
//! - `origin-asn` (default): the origin AS announced by the most peers for
//!   the prefix (each peer counted once per origin, ADD-PATH paths
//!   included), ties to the lowest ASN. The origin is the last ASN of the
//!   path's last AS_SEQUENCE; a path ending in an AS_SET has the set as its
//!   origin, written `{64496,64511}` (sorted, distinct: the value says it is
//!   a set, and an AS_SET never ties below a plain ASN); an empty path
//!   (a route the peer's own AS originated) has the peer's AS; with no peer
//!   table to say it, AS 0 (RFC 7607: never a real origin). Prefixes seen
//!   with more than one origin are counted (`MrtStats::multi_origin`), never
//!   dropped.
//! - `next-hop` with a peer (index in the dump's PEER_INDEX_TABLE, or in
//!   order of first appearance for TABLE_DUMP and BGP4MP; or its address):
//!   that router's FIB, its next hop per prefix; prefixes it has no route
//!   for are absent. With ADD-PATH, the first path in the record.
//! - `peer-count`: how many peers have a route for the prefix.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// How a prefix's routes from many peers become one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValuePolicy {
    #[default]
    OriginAsn,
    NextHop(PeerSelector),
    PeerCount,
}

/// A peer of a dump: by index or by address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerSelector {
    Index(u32),
    Addr(IpAddr),
}

impl FromStr for PeerSelector {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Ok(i) = s.parse::<u32>() {
            return Ok(PeerSelector::Index(i));
        }
        s.parse::<IpAddr>()
            .map(PeerSelector::Addr)
            .map_err(|_| format!("peer {s:?} is neither an index nor an address"))
    }
}

impl fmt::Display for PeerSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerSelector::Index(i) => write!(f, "index {i}"),
            PeerSelector::Addr(a) => write!(f, "address {a}"),
        }
    }
}

/// The names `--value` accepts.
pub const VALUE_POLICY_NAMES: &str = "origin-asn, next-hop, peer-count";

impl ValuePolicy {
    /// Parse a `--value` name, with the `--peer` it may need.
    pub fn from_name(name: &str, peer: Option<PeerSelector>) -> Result<Self, String> {
        match (name, peer) {
            ("origin-asn", None) => Ok(ValuePolicy::OriginAsn),
            ("peer-count", None) => Ok(ValuePolicy::PeerCount),
            ("next-hop", Some(p)) => Ok(ValuePolicy::NextHop(p)),
            ("next-hop", None) => Err("--value next-hop needs --peer ADDR|INDEX".into()),
            ("origin-asn" | "peer-count", Some(_)) => {
                Err("--peer goes with --value next-hop only".into())
            }
            _ => Err(format!(
                "unknown value policy {name:?} (expected {VALUE_POLICY_NAMES})"
            )),
        }
    }
}

/// An origin: one AS, or an AS_SET (an index into [`Origins::sets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Origin {
    Asn(u32),
    Set(u32),
}

/// Interned AS sets, so an [`Origin`] stays `Copy`.
#[derive(Debug, Default)]
pub(crate) struct Origins {
    pub sets: Vec<Vec<u32>>,
    index: std::collections::HashMap<Vec<u32>, u32>,
}

impl Origins {
    /// The origin of a set of ASNs (sorted and deduplicated here).
    pub fn set(&mut self, mut asns: Vec<u32>) -> Origin {
        asns.sort_unstable();
        asns.dedup();
        if let Some(&i) = self.index.get(&asns) {
            return Origin::Set(i);
        }
        let i = self.sets.len() as u32;
        self.index.insert(asns.clone(), i);
        self.sets.push(asns);
        Origin::Set(i)
    }

    /// Tie order: plain ASNs by number, then sets by their sorted members.
    pub fn cmp(&self, a: Origin, b: Origin) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (a, b) {
            (Origin::Asn(x), Origin::Asn(y)) => x.cmp(&y),
            (Origin::Asn(_), Origin::Set(_)) => Ordering::Less,
            (Origin::Set(_), Origin::Asn(_)) => Ordering::Greater,
            (Origin::Set(x), Origin::Set(y)) => self.members(x).cmp(self.members(y)),
        }
    }

    fn members(&self, i: u32) -> &[u32] {
        self.sets.get(i as usize).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The value text: `64496`, or `{64496,64511}` for a set.
    pub fn text(&self, o: Origin) -> String {
        match o {
            Origin::Asn(a) => a.to_string(),
            Origin::Set(i) => {
                let members: Vec<String> = self.members(i).iter().map(u32::to_string).collect();
                format!("{{{}}}", members.join(","))
            }
        }
    }
}

/// Per-origin peer counts for one prefix; small (one or two origins).
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally(pub Vec<(Origin, u32)>);

impl Tally {
    pub fn add(&mut self, o: Origin, peers: u32) {
        match self.0.iter_mut().find(|(k, _)| *k == o) {
            Some((_, n)) => *n += peers,
            None => self.0.push((o, peers)),
        }
    }

    /// The winner: most peers, ties to the lowest origin.
    pub fn winner(&self, origins: &Origins) -> Option<Origin> {
        self.0
            .iter()
            .copied()
            .reduce(|best, c| {
                if c.1 > best.1 || (c.1 == best.1 && origins.cmp(c.0, best.0).is_lt()) {
                    c
                } else {
                    best
                }
            })
            .map(|(o, _)| o)
    }
}
