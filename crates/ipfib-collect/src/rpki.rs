//! RPKI statuses of the RIB's routes: ROV (RFC 6811) and ASPA, computed
//! from the current [`Snapshot`] when a route is shown, and counted per
//! peer by a sweep of the whole RIB ([`count`]) after each change of the
//! VRP or ASPA set and at an interval.
//!
//! Why computed when shown rather than stored per route: a route's status
//! depends on its prefix, origin AS and path, and on the VRP and ASPA sets;
//! storing it would cost memory per route and a re-evaluation of every
//! route under each changed VRP prefix before the answers are right again.
//! Computed from the published snapshot, an answer is never stale: the
//! moment a snapshot is published every answer uses it. A status costs
//! one binary search over the VRP prefixes and a short parent walk
//! (measured in BENCHMARKS.md, "RPKI"); the per-peer counts cost one sweep.

use std::sync::Arc;
use std::time::Instant;

use ipfib::prefix::AnyPrefix;
use ipfib_rib::{AsPath, AttrSet, Entry, Rib, Route};
use ipfib_rpki::{path_origin, route_origin, AspaStatus, RouteOrigin, Rov, Snapshot};
use serde_json::{json, Value};

/// The two statuses of one route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub rov: Rov,
    pub aspa: AspaStatus,
    /// The origin ROV used (RFC 6811 §2).
    pub origin: RouteOrigin,
}

fn segments(path: &AsPath) -> impl Iterator<Item = (u8, &[u32])> + '_ {
    path.segments().map(|s| (s.kind, s.asns))
}

/// The statuses of a route of `prefix` with `attrs`, received from a
/// speaker of AS `speaker_as` (its origin when the path is empty).
pub fn status(snap: &Snapshot, prefix: &AnyPrefix, attrs: &AttrSet, speaker_as: u32) -> Status {
    let origin = route_origin(segments(&attrs.as_path), speaker_as);
    Status {
        rov: snap.vrps.validate(prefix, origin),
        aspa: snap.aspas.verify_upstream(segments(&attrs.as_path)),
        origin,
    }
}

/// Adds `rov`, `rov_reason` and `aspa` to a route's JSON, and with
/// `with_vrps` the covering VRPs (`vrps`: prefix, max_length, asn).
pub fn annotate(v: &mut Value, snap: &Snapshot, r: &Route, with_vrps: bool) {
    let s = status(snap, &r.prefix, &r.attrs, r.peer.key.asn);
    v["rov"] = s.rov.as_str().into();
    v["rov_reason"] = s.rov.reason().into();
    v["aspa"] = s.aspa.as_str().into();
    if with_vrps {
        v["vrps"] = snap
            .vrps
            .covering(&r.prefix)
            .iter()
            .map(|x| json!({"prefix": x.prefix.to_string(), "max_length": x.max_len, "asn": x.asn}))
            .collect();
    }
}

/// `rov=` and `aspa=` filters of the routes listing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Filter {
    pub rov: Option<&'static str>,
    pub aspa: Option<AspaStatus>,
}

impl Filter {
    /// From the query's `rov` (valid, invalid, not-found) and `aspa`
    /// (valid, invalid, unknown) values.
    pub fn parse(rov: Option<&str>, aspa: Option<&str>) -> Result<Filter, String> {
        let rov = match rov {
            None => None,
            Some(t) => Some(
                ["valid", "invalid", "not-found"]
                    .into_iter()
                    .find(|n| *n == t)
                    .ok_or_else(|| format!("rov {t:?}: expected valid, invalid or not-found"))?,
            ),
        };
        let aspa = match aspa {
            None => None,
            Some(t) => Some(
                AspaStatus::ALL
                    .into_iter()
                    .find(|s| s.as_str() == t)
                    .ok_or_else(|| format!("aspa {t:?}: expected valid, invalid or unknown"))?,
            ),
        };
        Ok(Filter { rov, aspa })
    }

    pub fn is_empty(&self) -> bool {
        self.rov.is_none() && self.aspa.is_none()
    }

    pub fn keeps(&self, snap: &Snapshot, r: &Route) -> bool {
        if self.is_empty() {
            return true;
        }
        let s = status(snap, &r.prefix, &r.attrs, r.peer.key.asn);
        self.rov.is_none_or(|w| s.rov.as_str() == w) && self.aspa.is_none_or(|w| s.aspa == w)
    }
}

/// Visits every live route of the RIB with its statuses, in no order.
/// Work is shared where real tables repeat themselves: a prefix's routes
/// with the same origin validate once, a path shared by routes verifies
/// once (memo keyed by the path's allocation, which the memo keeps alive
/// so the key cannot be reused).
pub fn for_each_route(
    rib: &Rib,
    snap: &Snapshot,
    mut f: impl FnMut(&AnyPrefix, &Entry, u32, Status),
) {
    let peers = rib.peers();
    // Peer id -> its AS while live (None: down or gone, skipped).
    let mut peer_as: Map<u32, Option<u32>> = Map::default();
    // Path allocation -> (origin unless the speaker's, ASPA status).
    let mut paths: Map<usize, (Option<RouteOrigin>, AspaStatus, AsPath)> = Map::default();
    let mut origins: Vec<(RouteOrigin, Rov)> = Vec::new();
    let mut cur = ipfib_rpki::Cursor::default();
    rib.for_each_prefix(|routes| {
        origins.clear();
        for e in routes.iter() {
            let Some(asn) = *peer_as.entry(e.peer).or_insert_with(|| {
                peers
                    .get(e.peer)
                    .filter(|_| peers.is_live(e.peer))
                    .map(|p| p.key.asn)
            }) else {
                continue;
            };
            let path = &e.attrs.as_path;
            let key = Arc::as_ptr(&path.0) as *const u32 as usize;
            if paths.len() >= MEMO_PATHS && !paths.contains_key(&key) {
                // Bounded: a RIB of more distinct paths than this starts
                // the memo over (each entry holds its path alive).
                paths.clear();
            }
            let &mut (o, aspa, _) = paths.entry(key).or_insert_with(|| {
                (
                    path_origin(segments(path)),
                    snap.aspas.verify_upstream(segments(path)),
                    path.clone(),
                )
            });
            let origin = o.unwrap_or(RouteOrigin::As(asn));
            let rov = match origins.iter().find(|(o, _)| *o == origin) {
                Some(&(_, r)) => r,
                None => {
                    let r = snap.vrps.validate_at(&routes.prefix, origin, &mut cur);
                    origins.push((origin, r));
                    r
                }
            };
            f(&routes.prefix, e, asn, Status { rov, aspa, origin });
        }
    });
}

/// The most AS paths the sweep remembers at once (about 50 MB).
const MEMO_PATHS: usize = 1 << 20;

/// A hash map with foldhash: the sweep hashes a few times per route.
type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Routes per status, per peer and in all.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Peer id -> routes per ROV state ([`Rov::index`]) and per ASPA
    /// status ([`AspaStatus::index`]).
    pub per_peer: Vec<(u32, [u64; 4], [u64; 3])>,
    pub rov: [u64; 4],
    pub aspa: [u64; 3],
    pub routes: u64,
    /// How long the sweep took, seconds.
    pub seconds: f64,
    /// The snapshot generation counted.
    pub generation: u64,
}

/// Counts every live route's statuses.
pub fn count(rib: &Rib, snap: &Snapshot) -> Counts {
    let t = Instant::now();
    let mut per: Map<u32, ([u64; 4], [u64; 3])> = Map::default();
    let mut c = Counts::default();
    for_each_route(rib, snap, |_, e, _, s| {
        let slot = per.entry(e.peer).or_default();
        slot.0[s.rov.index()] += 1;
        slot.1[s.aspa.index()] += 1;
        c.rov[s.rov.index()] += 1;
        c.aspa[s.aspa.index()] += 1;
        c.routes += 1;
    });
    c.per_peer = per.into_iter().map(|(p, (r, a))| (p, r, a)).collect();
    c.per_peer.sort_unstable_by_key(|x| x.0);
    c.seconds = t.elapsed().as_secs_f64();
    c.generation = snap.generation;
    c
}
