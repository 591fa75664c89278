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

/// A set of peer indices: a bitmap for the first 128 (every RouteViews
/// and RIS collector today), a sorted list beyond. Sets, not counts, so
/// that a prefix spread over several records (bird writes a plain and an
/// ADD-PATH record per prefix) still counts each peer once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PeerSet {
    Bits(u128),
    List(Vec<u32>),
}

impl Default for PeerSet {
    fn default() -> Self {
        PeerSet::Bits(0)
    }
}

impl PeerSet {
    pub fn insert(&mut self, peer: u32) {
        match self {
            PeerSet::Bits(bits) if peer < 128 => *bits |= 1 << peer,
            PeerSet::Bits(bits) => {
                let mut list: Vec<u32> = (0..128).filter(|i| *bits & (1 << i) != 0).collect();
                list.push(peer);
                *self = PeerSet::List(list);
            }
            PeerSet::List(list) => {
                if let Err(at) = list.binary_search(&peer) {
                    list.insert(at, peer);
                }
            }
        }
    }

    pub fn union(&mut self, other: &PeerSet) {
        match (&mut *self, other) {
            (PeerSet::Bits(a), PeerSet::Bits(b)) => *a |= *b,
            (_, PeerSet::Bits(b)) => {
                for i in (0..128).filter(|i| b & (1 << i) != 0) {
                    self.insert(i);
                }
            }
            (_, PeerSet::List(list)) => {
                for &p in list {
                    self.insert(p);
                }
            }
        }
    }

    pub fn len(&self) -> u32 {
        match self {
            PeerSet::Bits(b) => b.count_ones(),
            PeerSet::List(l) => l.len() as u32,
        }
    }
}

/// The peers behind each origin of one prefix; small (one or two origins).
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally(pub Vec<(Origin, PeerSet)>);

impl Tally {
    pub fn add(&mut self, o: Origin, peer: u32) {
        match self.0.iter_mut().find(|(k, _)| *k == o) {
            Some((_, peers)) => peers.insert(peer),
            None => {
                let mut peers = PeerSet::default();
                peers.insert(peer);
                self.0.push((o, peers));
            }
        }
    }

    pub fn merge(&mut self, other: Tally) {
        for (o, peers) in other.0 {
            match self.0.iter_mut().find(|(k, _)| *k == o) {
                Some((_, mine)) => mine.union(&peers),
                None => self.0.push((o, peers)),
            }
        }
    }

    /// The winner: most peers, ties to the lowest origin.
    pub fn winner(&self, origins: &Origins) -> Option<Origin> {
        self.0
            .iter()
            .map(|(o, peers)| (*o, peers.len()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_sets_count_each_peer_once() {
        let mut a = PeerSet::default();
        for p in [0, 5, 5, 127] {
            a.insert(p);
        }
        assert_eq!(a.len(), 3);
        let mut b = PeerSet::default();
        b.insert(5);
        b.insert(300);
        b.insert(300);
        assert_eq!(b.len(), 2);
        a.union(&b);
        assert_eq!(a.len(), 4);
        let mut c = PeerSet::default();
        c.insert(1);
        c.union(&a);
        assert_eq!(c.len(), 5);
    }

    #[test]
    fn tally_winner_most_peers_then_lowest() {
        let mut origins = Origins::default();
        let set = origins.set(vec![7, 3, 7]);
        assert_eq!(origins.text(set), "{3,7}");
        let mut t = Tally::default();
        t.add(Origin::Asn(20), 0);
        t.add(Origin::Asn(10), 1);
        t.add(set, 2);
        assert_eq!(t.winner(&origins), Some(Origin::Asn(10)));
        t.add(set, 3);
        assert_eq!(t.winner(&origins), Some(set));
        t.add(Origin::Asn(20), 3);
        t.add(Origin::Asn(20), 3); // the same peer again: no extra vote
        assert_eq!(t.winner(&origins), Some(Origin::Asn(20)));
    }
}
