//! BGP4MP records (RFC 6396 §4.4) as typed [`Event`]s: one per announced
//! or withdrawn unicast prefix (NLRI fields and MP_REACH / MP_UNREACH
//! alike), one per state change. OPEN, KEEPALIVE, NOTIFICATION and
//! ROUTE-REFRESH messages carry no routes and yield nothing.

use super::body::prefix_of;
use super::frame::Frame;
use crate::update::{AsPath, AsSegment, Change, Event, PeerId, Update};
use bgpkit_parser::models::{
    AsPathSegment, Attributes, Bgp4MpEnum, BgpMessage, NetworkPrefix, Safi,
};
use std::net::IpAddr;
use std::sync::Arc;

/// Append the events of one BGP4MP record to `out`. A prefix that cannot be
/// ours (a length beyond its family) fails the record.
pub(crate) fn events(frame: &Frame, msg: Bgp4MpEnum, out: &mut Vec<Event>) -> Result<(), String> {
    let timestamp = frame.timestamp;
    match msg {
        Bgp4MpEnum::StateChange(s) => out.push(Event::PeerState {
            timestamp,
            peer: PeerId {
                addr: Some(s.peer_ip),
                asn: Some(s.peer_asn.to_u32()),
            },
            old: s.old_state as u16,
            new: s.new_state as u16,
        }),
        Bgp4MpEnum::Message(m) => {
            let BgpMessage::Update(u) = m.bgp_message else {
                return Ok(());
            };
            let peer = PeerId {
                addr: Some(m.peer_ip),
                asn: Some(m.peer_asn.to_u32()),
            };
            let update = |p: &NetworkPrefix, change: Change| -> Result<Event, String> {
                Ok(Event::Update(Update {
                    timestamp,
                    microseconds: frame.microseconds,
                    peer,
                    prefix: prefix_of(&p.prefix)?,
                    path_id: p.path_id,
                    change,
                }))
            };
            let attrs = &u.attributes;
            let unreach = attrs
                .get_unreachable_nlri()
                .filter(|n| n.safi == Safi::Unicast);
            for p in u
                .withdrawn_prefixes
                .iter()
                .chain(unreach.into_iter().flat_map(|n| n.prefixes.iter()))
            {
                out.push(update(p, Change::Withdraw)?);
            }
            let reach = attrs
                .get_reachable_nlri()
                .filter(|n| n.safi == Safi::Unicast);
            if u.announced_prefixes.is_empty() && reach.is_none() {
                return Ok(());
            }
            let as_path = as_path(attrs);
            let classic_next_hop = attrs.next_hop();
            for p in &u.announced_prefixes {
                let change = Change::Announce {
                    next_hop: classic_next_hop,
                    as_path: as_path.clone(),
                };
                out.push(update(p, change)?);
            }
            if let Some(n) = reach {
                let next_hop = n.next_hop.map(|h| h.global_addr()).or(classic_next_hop);
                for p in &n.prefixes {
                    let change = Change::Announce {
                        next_hop,
                        as_path: as_path.clone(),
                    };
                    out.push(update(p, change)?);
                }
            }
        }
    }
    Ok(())
}

/// The effective AS path (RFC 6793 §4.2.3 merge of AS4_PATH) as ours.
fn as_path(attrs: &Attributes) -> Option<AsPath> {
    let path = attrs.effective_as_path()?;
    let asns = |v: &[bgpkit_parser::models::Asn]| v.iter().map(|a| a.to_u32()).collect();
    let segments: Vec<AsSegment> = path
        .iter_segments()
        .map(|s| match s {
            AsPathSegment::AsSequence(v) => AsSegment::Sequence(asns(v)),
            AsPathSegment::AsSet(v) => AsSegment::Set(asns(v)),
            AsPathSegment::ConfedSequence(v) => AsSegment::ConfedSequence(asns(v)),
            AsPathSegment::ConfedSet(v) => AsSegment::ConfedSet(asns(v)),
        })
        .collect();
    Some(Arc::from(segments))
}

/// The next hop of a RIB entry's route for a prefix of `family`: IPv6
/// routes carry it in MP_REACH_NLRI (global address preferred to a link
/// local one), IPv4 routes in NEXT_HOP (RFC 5549 routes in MP_REACH).
pub(crate) fn next_hop_of(attrs: &Attributes, family: u8) -> Option<IpAddr> {
    let mp = || {
        attrs
            .get_reachable_nlri()
            .and_then(|n| n.next_hop)
            .map(|h| h.global_addr())
    };
    if family == 6 {
        mp().or_else(|| attrs.next_hop())
    } else {
        attrs.next_hop().or_else(mp)
    }
}
