//! One framed record's body through bgpkit-parser
//! (`parse_mrt_body(type, subtype, Bytes)`), sorted into what the loaders
//! use. RIB_GENERIC records for unicast IPv4/IPv6, which bgpkit-parser
//! 0.23 does not parse, are rewritten as the equivalent RIB_IPV4/IPV6
//! record first (the layouts differ only by the AFI/SAFI fields).

use super::frame::Frame;
use super::rib::PeerInfo;
use bgpkit_parser::models::{
    Bgp4MpEnum, Bgp4MpType, MrtMessage, RibEntry, TableDumpMessage, TableDumpV2Message, TableDumpV2Type,
};
use bgpkit_parser::parser::mrt::mrt_record::parse_mrt_body;
use bgpkit_parser::ParserError;
use bytes::{BufMut, Bytes, BytesMut};
use ipfib::prefix::{AnyPrefix, HostBits};
use ipnet::IpNet;

const TABLE_DUMP: u16 = 12;
const TABLE_DUMP_V2: u16 = 13;
const BGP4MP: u16 = 16;
const BGP4MP_ET: u16 = 17;
const RIB_GENERIC: u16 = 6;
const RIB_GENERIC_ADDPATH: u16 = 12;

/// What a record holds, for our purposes.
pub(crate) enum Body {
    PeerTable(Vec<Option<PeerInfo>>),
    /// A unicast TABLE_DUMP_V2 RIB record.
    Rib {
        prefix: AnyPrefix,
        entries: Vec<RibEntry>,
    },
    TableDump(Vec<TableDumpMessage>),
    Bgp4mp(Bgp4MpEnum),
    /// Parsed, but holds no unicast routes (a GEO_PEER_TABLE).
    Nothing,
    /// A type or subtype we do not read: OSPF, IS-IS, legacy BGP,
    /// BGP4MP_ENTRY, multicast or non-unicast RIB_GENERIC records.
    Unsupported,
}

/// Parse one body; `Err` carries bgpkit-parser's reason.
pub(crate) fn parse(frame: &Frame) -> Result<Body, String> {
    let (entry_type, mut subtype, mut body) = (frame.entry_type, frame.subtype, frame.body.clone());
    match entry_type {
        TABLE_DUMP if matches!(subtype, 1 | 2) => {}
        BGP4MP | BGP4MP_ET if Bgp4MpType::try_from(subtype).is_ok() => {}
        TABLE_DUMP_V2 if TableDumpV2Type::try_from(subtype).is_ok() => {
            if matches!(subtype, RIB_GENERIC | RIB_GENERIC_ADDPATH) {
                match rib_generic_as_afi(subtype, &body) {
                    Some((s, b)) => (subtype, body) = (s, b),
                    None => return Ok(Body::Unsupported),
                }
            }
            if is_multicast(subtype) {
                return Ok(Body::Unsupported);
            }
        }
        _ => return Ok(Body::Unsupported),
    }
    let message = match parse_mrt_body(entry_type, subtype, body) {
        Ok(m) => m,
        Err(ParserError::Unsupported(_)) => return Ok(Body::Unsupported),
        Err(e) => return Err(e.to_string()),
    };
    Ok(match message {
        MrtMessage::TableDumpMessage(m) => Body::TableDump(vec![m]),
        MrtMessage::TableDumpMessageBatch(ms) => Body::TableDump(ms),
        MrtMessage::TableDumpV2Message(TableDumpV2Message::PeerIndexTable(t)) => {
            let len = t.id_peer_map.keys().max().map_or(0, |&m| usize::from(m) + 1);
            let mut peers = vec![None; len];
            for (&i, p) in &t.id_peer_map {
                if let Some(slot) = peers.get_mut(usize::from(i)) {
                    *slot = Some(PeerInfo {
                        addr: p.peer_ip,
                        asn: p.peer_asn.to_u32(),
                    });
                }
            }
            Body::PeerTable(peers)
        }
        MrtMessage::TableDumpV2Message(TableDumpV2Message::RibAfi(r)) => Body::Rib {
            prefix: prefix_of(&r.prefix.prefix)?,
            entries: r.rib_entries,
        },
        MrtMessage::TableDumpV2Message(_) => Body::Nothing,
        MrtMessage::Bgp4Mp(m) => Body::Bgp4mp(m),
        MrtMessage::LegacyBgp(_) => Body::Unsupported,
    })
}

/// An `ipnet` prefix as ours; host bits beyond the length (padding bits an
/// encoder left set) are cleared, as a BGP speaker would.
pub(crate) fn prefix_of(net: &IpNet) -> Result<AnyPrefix, String> {
    AnyPrefix::from_ip(net.addr(), net.prefix_len(), HostBits::Mask).map_err(|e| e.to_string())
}

fn is_multicast(subtype: u16) -> bool {
    [
        TableDumpV2Type::RibIpv4Multicast,
        TableDumpV2Type::RibIpv6Multicast,
        TableDumpV2Type::RibIpv4MulticastAddPath,
        TableDumpV2Type::RibIpv6MulticastAddPath,
    ]
    .iter()
    .any(|t| u16::from(*t) == subtype)
}

/// RFC 6396 §4.3.3: RIB_GENERIC is sequence (4), AFI (2), SAFI (1), NLRI,
/// entry count, entries; RIB_IPV4/IPV6_UNICAST is the same without AFI and
/// SAFI. For unicast IPv4/IPv6, drop those three bytes and name the
/// matching subtype (ADD-PATH kept).
fn rib_generic_as_afi(subtype: u16, body: &Bytes) -> Option<(u16, Bytes)> {
    let afi = u16::from_be_bytes([*body.get(4)?, *body.get(5)?]);
    let safi = *body.get(6)?;
    let addpath = subtype == RIB_GENERIC_ADDPATH;
    let as_subtype = match (afi, safi, addpath) {
        (1, 1, false) => TableDumpV2Type::RibIpv4Unicast,
        (2, 1, false) => TableDumpV2Type::RibIpv6Unicast,
        (1, 1, true) => TableDumpV2Type::RibIpv4UnicastAddPath,
        (2, 1, true) => TableDumpV2Type::RibIpv6UnicastAddPath,
        _ => return None,
    };
    let mut out = BytesMut::with_capacity(body.len() - 3);
    out.put_slice(body.get(..4)?);
    out.put_slice(body.get(7..)?);
    Some((u16::from(as_subtype), out.freeze()))
}
