//! One framed record's body through bgpkit-parser
//! (`parse_mrt_body(type, subtype, Bytes)`), sorted into what the loaders
//! use. Two rewrites happen first, both keeping the RFC 6396 layout:
//! - RIB_GENERIC records for unicast IPv4/IPv6, which bgpkit-parser 0.23
//!   does not parse, become the equivalent RIB_IPV4/IPV6 record (the
//!   layouts differ only by the AFI/SAFI fields);
//! - in RIB_IPV4/IPV6_UNICAST records (the bulk of a dump), each entry's
//!   path attributes are cut to the ones a value policy reads (ORIGIN,
//!   AS_PATH, NEXT_HOP, MP_REACH_NLRI, AS4_PATH): communities and the rest
//!   are most of the parsing and allocation bgpkit-parser would do, for
//!   nothing. A body the walk cannot follow goes to bgpkit-parser whole, so
//!   its error names the problem.
//!
//! [`guarded`] runs one record's parse, and the reading of what
//! bgpkit-parser returned, with a panic turned into
//! [`RecordError::Panicked`]: third-party code on hostile bytes must not
//! unwind through our API.

use super::frame::Frame;
use super::rib::PeerInfo;
use bgpkit_parser::models::{
    Bgp4MpEnum, Bgp4MpType, MrtMessage, RibEntry, TableDumpMessage, TableDumpV2Message,
    TableDumpV2Type,
};
use bgpkit_parser::parser::mrt::mrt_record::parse_mrt_body;
use bgpkit_parser::ParserError;
use bytes::{BufMut, Bytes, BytesMut};
use ipfib::prefix::{AnyPrefix, HostBits};
use ipnet::IpNet;
use std::panic::{catch_unwind, AssertUnwindSafe};

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

/// Why one framed record was not used.
#[derive(Debug)]
pub(crate) enum RecordError {
    /// The body does not parse (bgpkit-parser's reason) or holds something
    /// we cannot take (a prefix longer than its family).
    Bad(String),
    /// bgpkit-parser, or our reading of what it returned, panicked; the
    /// panic's message.
    Panicked(String),
}

impl From<String> for RecordError {
    fn from(reason: String) -> Self {
        RecordError::Bad(reason)
    }
}

/// Run `f`, the parse of one record and the reading of its parsed form,
/// with a panic inside it (bgpkit-parser on bytes it did not expect)
/// turned into [`RecordError::Panicked`].
///
/// `AssertUnwindSafe` is sound here because nothing `f` touches is left
/// half-changed by an unwind: bgpkit-parser keeps no state between calls
/// (its input is a `Bytes` handle of the record's body, shared only
/// through an atomic reference count), and the callers' own state that `f`
/// mutates is only ever mutated by our code between calls into
/// bgpkit-parser, one whole operation at a time (a peer or an AS set
/// interned, a record's routes announced after all of them were read), so
/// a panic inside bgpkit-parser lands between two complete operations. The
/// record is then reported as skipped; the read goes on with the next one.
///
/// The panic hook still runs (the default one prints the panic to
/// stderr): silencing it would mean swapping the process-wide hook, which
/// races with every other thread that panics or sets a hook meanwhile.
/// With `panic = "abort"` nothing can be caught and the process ends.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, RecordError>) -> Result<T, RecordError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => Err(RecordError::Panicked(panic_message(payload.as_ref()))),
    }
}

/// The message of a panic payload (`panic!` with a literal gives `&str`,
/// with arguments `String`).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Parse one body, cutting RIB entries' attributes to `kept` (attribute
/// type codes; see [`kept_attributes`]); `Err` carries bgpkit-parser's
/// reason. Call it inside [`guarded`].
pub(crate) fn parse(frame: &Frame, kept: &[u8]) -> Result<Body, RecordError> {
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
            if let Some(slim) = slim_rib(subtype, &body, kept) {
                body = slim;
            }
        }
        _ => return Ok(Body::Unsupported),
    }
    #[cfg(test)]
    tests::panic_if_armed();
    let message = match parse_mrt_body(entry_type, subtype, body) {
        Ok(m) => m,
        Err(ParserError::Unsupported(_)) => return Ok(Body::Unsupported),
        Err(e) => return Err(RecordError::Bad(e.to_string())),
    };
    Ok(match message {
        MrtMessage::TableDumpMessage(m) => Body::TableDump(vec![m]),
        MrtMessage::TableDumpMessageBatch(ms) => Body::TableDump(ms),
        MrtMessage::TableDumpV2Message(TableDumpV2Message::PeerIndexTable(t)) => {
            let len = t
                .id_peer_map
                .keys()
                .max()
                .map_or(0, |&m| usize::from(m) + 1);
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

/// The path attribute types (RFC 4271, 4760, 6793) a policy reads: ORIGIN
/// always (bgpkit-parser records a warning when a mandatory attribute is
/// missing), AS_PATH and AS4_PATH for origins, NEXT_HOP and MP_REACH_NLRI
/// for next hops.
pub(crate) fn kept_attributes(origin: bool, next_hop: bool) -> Vec<u8> {
    let mut kept = vec![1];
    if origin {
        kept.extend_from_slice(&[2, 17]);
    }
    if next_hop {
        kept.extend_from_slice(&[3, 14]);
    }
    kept
}

/// A RIB_IPV4/IPV6_UNICAST body (ADD-PATH too) with each entry's path
/// attributes cut to `kept`; `None` for other subtypes or a body whose
/// structure does not hold together.
fn slim_rib(subtype: u16, body: &[u8], kept: &[u8]) -> Option<Bytes> {
    let addpath = match subtype {
        2 | 4 => false,
        8 | 10 => true,
        _ => return None,
    };
    let mut out = BytesMut::with_capacity(body.len());
    let prefix_bytes = usize::from(*body.get(4)?).div_ceil(8);
    let head = 4 + 1 + prefix_bytes + 2; // sequence, length, prefix, entry count
    let count = u16::from_be_bytes([*body.get(head - 2)?, *body.get(head - 1)?]);
    out.put_slice(body.get(..head)?);
    let mut at = head;
    let fixed = if addpath { 10 } else { 6 }; // peer index, time, path id
    for _ in 0..count {
        out.put_slice(body.get(at..at + fixed)?);
        at += fixed;
        let len = usize::from(u16::from_be_bytes([*body.get(at)?, *body.get(at + 1)?]));
        let attrs = body.get(at + 2..at + 2 + len)?;
        at += 2 + len;
        let len_at = out.len();
        out.put_u16(0);
        let mut a = 0;
        while a < attrs.len() {
            let flags = *attrs.get(a)?;
            let kind = *attrs.get(a + 1)?;
            let (hdr, value) = if flags & 0x10 != 0 {
                (
                    4,
                    usize::from(u16::from_be_bytes([*attrs.get(a + 2)?, *attrs.get(a + 3)?])),
                )
            } else {
                (3, usize::from(*attrs.get(a + 2)?))
            };
            let whole = attrs.get(a..a + hdr + value)?;
            if kept.contains(&kind) {
                out.put_slice(whole);
            }
            a += hdr + value;
        }
        let kept = u16::try_from(out.len() - len_at - 2).ok()?;
        out.get_mut(len_at..len_at + 2)?
            .copy_from_slice(&kept.to_be_bytes());
    }
    out.put_slice(body.get(at..)?);
    Some(out.freeze())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::Cell;

    thread_local! {
        /// Set by a test to make [`super::parse`] panic where it calls
        /// bgpkit-parser (per thread: tests run in parallel).
        static ARMED: Cell<bool> = const { Cell::new(false) };
    }

    /// Make the next parses on this thread panic, as bgpkit-parser would.
    pub(crate) fn arm(on: bool) {
        ARMED.with(|a| a.set(on));
    }

    pub(super) fn panic_if_armed() {
        if ARMED.with(Cell::get) {
            panic!("injected panic standing in for bgpkit-parser");
        }
    }
}
