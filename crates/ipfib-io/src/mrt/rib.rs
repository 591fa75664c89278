//! From routes per peer per prefix to one value per prefix (the
//! [`ValuePolicy`]), keeping only what the policy needs.
//!
//! TABLE_DUMP_V2 RIB records hold every peer's routes for a prefix, so they
//! are reduced at once (a full table never keeps per-peer routes in memory).
//! TABLE_DUMP and BGP4MP give one peer's route per record and are replayed
//! into a per-prefix, per-peer map (announce replaces, withdraw removes, a
//! session leaving Established flushes the peer) that is reduced at the end.

use crate::policy::{Origin, Origins, PeerSelector, PeerSet, Tally, ValuePolicy};
use crate::read::Route;
pub use crate::stats::{PeerInfo, ReduceStats};
use ipfib::prefix::AnyPrefix;
use std::collections::HashMap;
use std::net::IpAddr;

/// One peer's route for a prefix, reduced to what the policy reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerRoute {
    pub peer: u32,
    pub path_id: u32,
    pub origin: Origin,
    pub next_hop: Option<IpAddr>,
}

/// A prefix's value in the making.
#[derive(Debug)]
enum Slot {
    Tally(Tally),
    Count(PeerSet),
    NextHop(Option<IpAddr>),
}

#[derive(Debug)]
pub(crate) struct RibBuilder {
    pub policy: ValuePolicy,
    pub origins: Origins,
    /// Peers by index: the PEER_INDEX_TABLE, or first appearance.
    pub peers: Vec<Option<PeerInfo>>,
    peer_index: HashMap<PeerInfo, u32>,
    /// Reduced prefixes in first-seen order, with the record they came from.
    slots: Vec<(AnyPrefix, u64, Slot)>,
    slot_index: HashMap<AnyPrefix, usize>,
    /// Replayed routes (TABLE_DUMP, BGP4MP), reduced in `finish`: the
    /// record first seen in, an arrival number (several prefixes share a
    /// record; the output order must not depend on hashing), the routes.
    replay: HashMap<AnyPrefix, (u64, u64, Vec<PeerRoute>)>,
    pub rib_entries: u64,
}

impl RibBuilder {
    pub fn new(policy: ValuePolicy) -> Self {
        RibBuilder {
            policy,
            origins: Origins::default(),
            peers: Vec::new(),
            peer_index: HashMap::new(),
            slots: Vec::new(),
            slot_index: HashMap::new(),
            replay: HashMap::new(),
            rib_entries: 0,
        }
    }

    /// Replace the peer table (a PEER_INDEX_TABLE record).
    pub fn set_peer_table(&mut self, peers: Vec<Option<PeerInfo>>) {
        self.peer_index = peers
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some(((*p)?, i as u32)))
            .collect();
        self.peers = peers;
    }

    /// The index of a peer named in a record (TABLE_DUMP, BGP4MP), adding
    /// it on first sight.
    pub fn peer(&mut self, info: PeerInfo) -> u32 {
        if let Some(&i) = self.peer_index.get(&info) {
            return i;
        }
        let i = self.peers.len() as u32;
        self.peers.push(Some(info));
        self.peer_index.insert(info, i);
        i
    }

    pub fn peer_asn(&self, peer: u32) -> Option<u32> {
        self.peers
            .get(peer as usize)
            .copied()
            .flatten()
            .map(|p| p.asn)
    }

    pub fn is_selected(&self, peer: u32) -> bool {
        match self.policy {
            ValuePolicy::NextHop(PeerSelector::Index(i)) => peer == i,
            ValuePolicy::NextHop(PeerSelector::Addr(a)) => {
                self.peers
                    .get(peer as usize)
                    .copied()
                    .flatten()
                    .map(|p| p.addr)
                    == Some(a)
            }
            _ => false,
        }
    }

    /// Whether the policy reads origins / next hops (to skip the work).
    pub fn wants_origin(&self) -> bool {
        self.policy == ValuePolicy::OriginAsn
    }

    /// A TABLE_DUMP_V2 record: every peer's routes for `prefix`.
    pub fn add_rib(&mut self, prefix: AnyPrefix, record: u64, routes: &[PeerRoute]) {
        self.rib_entries += routes.len() as u64;
        let slot = self.reduce(routes);
        self.put(prefix, record, slot);
    }

    /// Keep `slot` for `prefix`, merged into what the prefix already has:
    /// RFC 6396 puts a prefix's routes in one record per subtype, but bird
    /// writes a plain and an ADD-PATH record for the same prefix; merging by
    /// peer sets counts each peer once.
    fn put(&mut self, prefix: AnyPrefix, record: u64, slot: Slot) {
        match self.slot_index.get(&prefix) {
            Some(&i) => {
                if let Some((_, _, old)) = self.slots.get_mut(i) {
                    merge(old, slot);
                }
            }
            None => {
                self.slot_index.insert(prefix, self.slots.len());
                self.slots.push((prefix, record, slot));
            }
        }
    }

    /// Replay: `route` replaces the same peer's route (and path id) for `prefix`.
    pub fn announce(&mut self, prefix: AnyPrefix, record: u64, route: PeerRoute) {
        self.rib_entries += 1;
        let arrival = self.replay.len() as u64;
        let (_, _, routes) = self
            .replay
            .entry(prefix)
            .or_insert((record, arrival, Vec::new()));
        match routes
            .iter_mut()
            .find(|r| r.peer == route.peer && r.path_id == route.path_id)
        {
            Some(r) => *r = route,
            None => routes.push(route),
        }
    }

    /// Replay: remove the peer's route (and path id) for `prefix`.
    pub fn withdraw(&mut self, prefix: AnyPrefix, peer: u32, path_id: u32) {
        if let Some((_, _, routes)) = self.replay.get_mut(&prefix) {
            routes.retain(|r| !(r.peer == peer && r.path_id == path_id));
        }
    }

    /// Replay: the peer's session went down; its routes go with it.
    pub fn flush_peer(&mut self, peer: u32) {
        for (_, _, routes) in self.replay.values_mut() {
            routes.retain(|r| r.peer != peer);
        }
    }

    fn reduce(&self, routes: &[PeerRoute]) -> Slot {
        match self.policy {
            ValuePolicy::OriginAsn => {
                let mut tally = Tally::default();
                for r in routes {
                    tally.add(r.origin, r.peer);
                }
                Slot::Tally(tally)
            }
            ValuePolicy::PeerCount => {
                let mut peers = PeerSet::default();
                for r in routes {
                    peers.insert(r.peer);
                }
                Slot::Count(peers)
            }
            ValuePolicy::NextHop(_) => Slot::NextHop(
                routes
                    .iter()
                    .find(|r| self.is_selected(r.peer))
                    .and_then(|r| r.next_hop),
            ),
        }
    }

    /// The routes, in first-seen order, and what the reduction found.
    pub fn finish(mut self) -> (Vec<Route>, ReduceStats, RibBuilder) {
        let mut replay: Vec<_> = std::mem::take(&mut self.replay).into_iter().collect();
        replay.sort_by_key(|(_, (_, arrival, _))| *arrival);
        for (prefix, (record, _, routes)) in replay {
            if routes.is_empty() {
                continue;
            }
            let slot = self.reduce(&routes);
            self.put(prefix, record, slot);
        }
        let mut stats = ReduceStats::default();
        let mut out = Vec::with_capacity(self.slots.len());
        for (prefix, line, slot) in std::mem::take(&mut self.slots) {
            let value = match slot {
                Slot::Tally(t) => {
                    if t.0.len() > 1 {
                        stats.multi_origin += 1;
                    }
                    let Some(o) = t.winner(&self.origins) else {
                        stats.without_value += 1;
                        continue;
                    };
                    if matches!(o, Origin::Set(_)) {
                        stats.as_set_origins += 1;
                    }
                    self.origins.text(o)
                }
                Slot::Count(peers) => peers.len().to_string(),
                Slot::NextHop(Some(nh)) => nh.to_string(),
                Slot::NextHop(None) => {
                    stats.without_value += 1;
                    continue;
                }
            };
            out.push(Route {
                prefix,
                value,
                line,
            });
        }
        (out, stats, self)
    }
}

fn merge(old: &mut Slot, new: Slot) {
    match (old, new) {
        (Slot::Tally(a), Slot::Tally(b)) => a.merge(b),
        (Slot::Count(a), Slot::Count(b)) => a.union(&b),
        (Slot::NextHop(a @ None), Slot::NextHop(b)) => *a = b,
        _ => {}
    }
}
