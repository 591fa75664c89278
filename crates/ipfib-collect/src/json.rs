//! Routes and peers as the HTTP API's JSON (ARCHITECTURE §4).

use ipfib_rib::attrs::{AS_CONFED_SET, AS_SET};
use ipfib_rib::instance;
use ipfib_rib::{PeerInfo, Route};
use serde_json::{json, Value};

/// The AS path: sequences flat, each set as a nested array.
pub fn as_path(r: &Route) -> Value {
    let mut out = Vec::new();
    for s in r.attrs.as_path.segments() {
        if s.kind == AS_SET || s.kind == AS_CONFED_SET {
            out.push(json!(s.asns));
        } else {
            out.extend(s.asns.iter().map(|&a| json!(a)));
        }
    }
    Value::Array(out)
}

pub fn communities(r: &Route) -> Value {
    r.attrs
        .communities
        .iter()
        .map(|&c| Value::String(format!("{}:{}", c >> 16, c & 0xffff)))
        .collect()
}

pub fn large_communities(r: &Route) -> Value {
    r.attrs
        .large_communities
        .iter()
        .map(|l| Value::String(format!("{}:{}:{}", l[0], l[1], l[2])))
        .collect()
}

/// One route, with its peer.
pub fn route(r: &Route) -> Value {
    json!({
        "prefix": r.prefix.to_string(),
        "origin_asn": r.attrs.as_path.origin_asn(),
        "as_path": as_path(r),
        "next_hop": r.attrs.next_hop.map(|a| a.to_string()),
        "peer": r.peer.id,
        "peer_address": r.peer.key.address.to_string(),
        "peer_asn": r.peer.key.asn,
        "peer_bgp_id": std::net::Ipv4Addr::from(r.peer.key.bgp_id).to_string(),
        "rib": r.peer.key.rib.as_str(),
        // Restored from a snapshot, not yet sent again by its router.
        "stale": r.peer.stale,
        "peer_type": instance::peer_type_name(r.peer.key.peer_type),
        "rd": rd(&r.peer),
        "path_id": r.path_id,
        "communities": communities(r),
        "large_communities": large_communities(r),
        "origin": r.attrs.origin.as_str(),
        "med": r.attrs.med,
        "local_pref": r.attrs.local_pref,
    })
}

/// The instance's route distinguisher as text; null for the global
/// instance.
pub fn rd(p: &PeerInfo) -> Option<String> {
    let k = &p.key;
    (!instance::is_global(k.peer_type, k.distinguisher))
        .then(|| instance::format_rd(k.distinguisher))
}

pub fn peer(p: &PeerInfo) -> Value {
    let down = p.down_since();
    json!({
        "id": p.id,
        "session": p.session,
        "peer_type": p.key.peer_type,
        "distinguisher": p.key.distinguisher,
        "peer_type_name": instance::peer_type_name(p.key.peer_type),
        "rd": rd(p),
        "address": p.key.address.to_string(),
        "asn": p.key.asn,
        "bgp_id": std::net::Ipv4Addr::from(p.key.bgp_id).to_string(),
        "rib": p.key.rib.as_str(),
        "table_name": p.table_name(),
        "stale": p.stale,
        "state": if down == 0 { "up" } else { "down" },
        "up_since": p.up_since,
        "down_since": (down != 0).then_some(down),
        "routes": if down == 0 { p.route_count() } else { 0 },
    })
}
