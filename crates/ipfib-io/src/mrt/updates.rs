//! BGP4MP records (RFC 6396 §4.4) as typed [`Event`]s: one per announced
//! or withdrawn unicast prefix (NLRI fields and MP_REACH / MP_UNREACH
//! alike), one per state change. OPEN, KEEPALIVE, NOTIFICATION and
//! ROUTE-REFRESH messages carry no routes and yield nothing. The message
//! is decoded by [`crate::bgp::decode_update`], the decoder BMP uses; an
//! UPDATE with attribute errors is handled as RFC 7606 says (its routes
//! withdrawn, or the attribute ignored).

use super::frame::Frame;
use crate::bgp::{self, mrt::Bgp4mp, AsPath as Words, AS_CONFED_SEQUENCE, AS_SEQUENCE, AS_SET};
use crate::update::{AsPath, AsSegment, Change, Event, PeerId, Update};
use std::sync::Arc;

/// Append the events of one BGP4MP record to `out`, decoding its message
/// in `u` (reused from record to record). A message that cannot be
/// decoded (the errors RFC 7606 answers with a session reset) fails the
/// record.
pub(crate) fn events(
    frame: &Frame,
    msg: Bgp4mp<'_>,
    u: &mut bgp::Update,
    out: &mut Vec<Event>,
) -> Result<(), String> {
    let timestamp = frame.timestamp;
    let (peer_addr, peer_asn, config, message) = match msg {
        Bgp4mp::StateChange {
            peer_addr,
            peer_asn,
            old,
            new,
        } => {
            out.push(Event::PeerState {
                timestamp,
                peer: PeerId {
                    addr: Some(peer_addr),
                    asn: Some(peer_asn),
                },
                old,
                new,
            });
            return Ok(());
        }
        Bgp4mp::Message {
            peer_addr,
            peer_asn,
            config,
            message,
            ..
        } => (peer_addr, peer_asn, config, message),
    };
    let (kind, _, _) = bgp::bgp_message(message).map_err(|e| e.to_string())?;
    if kind != bgp::UPDATE {
        return Ok(());
    }
    // Some writers (BIRD's older dumps among them) put path identifiers
    // in the NLRI of plain BGP4MP_MESSAGE records instead of using the
    // _ADDPATH subtypes (RFC 8050 §3). A message is read with path
    // identifiers when its reading with them holds no /0 and its plain
    // reading fails or holds a /0 (a path identifier's leading zero byte
    // read as a prefix length: the rule other MRT readers use). A message
    // that fails plain and reads with a /0 is malformed either way.
    let addpath = bgp::WireConfig {
        addpath_v4: true,
        addpath_v6: true,
        addpath_more: 0x3f,
        ..config
    };
    let has_default = |u: &bgp::Update| {
        u.announced
            .iter()
            .chain(&u.withdrawn)
            .any(|(p, _)| p.len() == 0)
    };
    let plain = bgp::decode_update(message, &config, u);
    let config = if addpath == config {
        plain.map_err(|e| e.to_string())?;
        config
    } else {
        match plain {
            Err(e) => {
                let fits = bgp::decode_update(message, &addpath, u).is_ok() && !has_default(u);
                if !fits {
                    return Err(e.to_string());
                }
                addpath
            }
            Ok(()) if has_default(u) => {
                let mut with_ids = bgp::Update::default();
                let fits = bgp::decode_update(message, &addpath, &mut with_ids).is_ok()
                    && !has_default(&with_ids);
                if fits {
                    *u = with_ids;
                    addpath
                } else {
                    config
                }
            }
            Ok(()) => config,
        }
    };
    // A 4-byte message may still carry what a 2-byte peer sent: AS_PATH
    // with AS_TRANS and the real path in AS4_PATH (RFC 6793 §4.2.3).
    u.merge_as4_path();
    let peer = PeerId {
        addr: Some(peer_addr),
        asn: Some(peer_asn),
    };
    let update = |prefix, path_id: u32, change| {
        Event::Update(Update {
            timestamp,
            microseconds: frame.microseconds,
            peer,
            prefix,
            path_id: config.addpath(prefix_afi(&prefix), 1).then_some(path_id),
            change,
        })
    };
    for &(prefix, path_id) in &u.withdrawn {
        out.push(update(prefix, path_id, Change::Withdraw));
    }
    if u.announced.is_empty() {
        return Ok(());
    }
    let as_path = segments(&u.as_path);
    // Conventional NLRI (after the MP_REACH ones in `announced`) take
    // NEXT_HOP, MP_REACH's take its own next hop (RFC 4760 §3).
    let (mp, conventional) = u.announced.split_at(u.mp_announced.min(u.announced.len()));
    for (routes, next_hop) in [
        (conventional, u.next_hop_v4),
        (mp, u.next_hop_mp.or(u.next_hop_v4)),
    ] {
        for &(prefix, path_id) in routes {
            let change = Change::Announce {
                next_hop,
                as_path: Some(Arc::clone(&as_path)),
            };
            out.push(update(prefix, path_id, change));
        }
    }
    Ok(())
}

fn prefix_afi(p: &ipfib::prefix::AnyPrefix) -> u16 {
    if p.family() == 6 {
        2
    } else {
        1
    }
}

/// A decoded AS path (RFC 6793 merge of AS4_PATH done) as update events
/// carry it.
fn segments(words: &[u32]) -> AsPath {
    let path = Words(Arc::from(words));
    let segments: Vec<AsSegment> = path
        .segments()
        .map(|s| {
            let asns = s.asns.to_vec();
            match s.kind {
                AS_SEQUENCE => AsSegment::Sequence(asns),
                AS_SET => AsSegment::Set(asns),
                AS_CONFED_SEQUENCE => AsSegment::ConfedSequence(asns),
                _ => AsSegment::ConfedSet(asns),
            }
        })
        .collect();
    Arc::from(segments)
}
