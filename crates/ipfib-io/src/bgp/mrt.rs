//! MRT record bodies that carry BGP (RFC 6396 §4, RFC 8050): the
//! PEER_INDEX_TABLE, RIB records (their entries framed, attributes left
//! for [`decode_rib_entry_attrs`](super::decode_rib_entry_attrs)),
//! TABLE_DUMP records and BGP4MP state changes and messages (the message
//! left for [`decode_update`](super::decode_update)).
//!
//! Offsets in errors are byte offsets within the record's body (after the
//! 12- or 16-byte MRT header). The framing of records themselves (header,
//! length bound, offsets in the stream) is `ipfib_io::Framer`'s.

use std::net::{IpAddr, Ipv4Addr};
use std::ops::Range;

use ipfib::prefix::{AnyPrefix, HostBits};

use super::cursor::{Cur, WireError};
use super::decoded::WireConfig;
use super::nlri::prefix_bits;

/// MRT types (RFC 6396 §4).
pub const TABLE_DUMP: u16 = 12;
pub const TABLE_DUMP_V2: u16 = 13;
pub const BGP4MP: u16 = 16;
pub const BGP4MP_ET: u16 = 17;

/// TABLE_DUMP_V2 subtypes (RFC 6396 §4.3, RFC 8050 §3).
pub const PEER_INDEX_TABLE: u16 = 1;
pub const RIB_IPV4_UNICAST: u16 = 2;
pub const RIB_IPV4_MULTICAST: u16 = 3;
pub const RIB_IPV6_UNICAST: u16 = 4;
pub const RIB_IPV6_MULTICAST: u16 = 5;
pub const RIB_GENERIC: u16 = 6;
pub const GEO_PEER_TABLE: u16 = 7;
pub const RIB_IPV4_UNICAST_ADDPATH: u16 = 8;
pub const RIB_IPV4_MULTICAST_ADDPATH: u16 = 9;
pub const RIB_IPV6_UNICAST_ADDPATH: u16 = 10;
pub const RIB_IPV6_MULTICAST_ADDPATH: u16 = 11;
pub const RIB_GENERIC_ADDPATH: u16 = 12;

/// One peer of a PEER_INDEX_TABLE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexedPeer {
    /// Its index, which RIB entries name.
    pub index: u16,
    pub addr: IpAddr,
    pub asn: u32,
    pub bgp_id: u32,
}

/// A PEER_INDEX_TABLE (RFC 6396 §4.3.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerIndexTable {
    /// The collector's BGP identifier.
    pub collector: Ipv4Addr,
    /// The view name (lossily decoded: RFC 6396 does not say UTF-8).
    pub view: String,
    /// The peers in index order.
    pub peers: Vec<IndexedPeer>,
}

/// Read a PEER_INDEX_TABLE body.
pub fn peer_index_table(body: &[u8]) -> Result<PeerIndexTable, WireError> {
    let mut c = Cur::new(body, 0);
    let collector = Ipv4Addr::from(c.array::<4>("collector BGP ID")?);
    let n = usize::from(c.u16("view name length")?);
    let view = String::from_utf8_lossy(c.take(n, "view name")?).into_owned();
    let count = c.u16("peer count")?;
    // Each peer takes at least 11 bytes: no allocation beyond the body.
    let mut peers = Vec::with_capacity(usize::from(count).min(c.left() / 11));
    for index in 0..count {
        let mut peer = || -> Result<IndexedPeer, WireError> {
            let kind = c.u8("peer type")?;
            let bgp_id = c.u32("peer BGP ID")?;
            let addr = ip(&mut c, kind & 1 != 0, "peer address")?;
            let asn = if kind & 2 != 0 {
                c.u32("peer AS")?
            } else {
                u32::from(c.u16("peer AS")?)
            };
            Ok(IndexedPeer {
                index,
                addr,
                asn,
                bgp_id,
            })
        };
        peers.push(peer().map_err(|e| in_part(format!("peer {index}"), e))?);
    }
    Ok(PeerIndexTable {
        collector,
        view,
        peers,
    })
}

/// One RIB entry as framed (RFC 6396 §4.3.4, RFC 8050 §4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RibEntry {
    pub peer_index: u16,
    pub originated: u32,
    /// The ADD-PATH path identifier; 0 in records without them.
    pub path_id: u32,
    /// Where its path attributes are in the body.
    pub attrs: Range<usize>,
    /// Offset of the entry within the body.
    pub at: usize,
}

/// A unicast RIB record's prefix, and whether its entries carry path
/// identifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RibRecord {
    pub prefix: AnyPrefix,
    pub addpath: bool,
}

/// Read a TABLE_DUMP_V2 RIB record of unicast routes (RFC 6396 §4.3.2;
/// RIB_GENERIC §4.3.3 with AFI 1 or 2 and SAFI 1; their ADD-PATH forms),
/// its entries into `entries` (cleared first). `Ok(None)` for another
/// subtype or a RIB_GENERIC of another family. Bytes after the declared
/// entries are ignored.
pub fn rib_record(
    subtype: u16,
    body: &[u8],
    entries: &mut Vec<RibEntry>,
) -> Result<Option<RibRecord>, WireError> {
    entries.clear();
    let mut c = Cur::new(body, 0);
    c.u32("sequence number")?;
    let (v6, addpath) = match subtype {
        RIB_IPV4_UNICAST => (false, false),
        RIB_IPV6_UNICAST => (true, false),
        RIB_IPV4_UNICAST_ADDPATH => (false, true),
        RIB_IPV6_UNICAST_ADDPATH => (true, true),
        RIB_GENERIC | RIB_GENERIC_ADDPATH => {
            let afi = c.u16("AFI")?;
            let safi = c.u8("SAFI")?;
            let v6 = match (afi, safi) {
                (1, 1) => false,
                (2, 1) => true,
                _ => return Ok(None),
            };
            (v6, subtype == RIB_GENERIC_ADDPATH)
        }
        _ => return Ok(None),
    };
    let prefix = nlri_prefix(&mut c, v6)?;
    let count = c.u16("entry count")?;
    for i in 0..count {
        let at = c.at;
        let mut entry = || -> Result<RibEntry, WireError> {
            let peer_index = c.u16("peer index")?;
            let originated = c.u32("originated time")?;
            let path_id = if addpath {
                c.u32("path identifier")?
            } else {
                0
            };
            let len = usize::from(c.u16("attribute length")?);
            let start = c.at;
            c.take(len, "attributes")?;
            Ok(RibEntry {
                peer_index,
                originated,
                path_id,
                attrs: start..start + len,
                at,
            })
        };
        entries.push(entry().map_err(|e| in_part(format!("entry {i}"), e))?);
    }
    // Bytes after the declared entries (seen in the wild) are ignored:
    // every entry the record declares is whole.
    Ok(Some(RibRecord { prefix, addpath }))
}

/// A TABLE_DUMP record (RFC 6396 §4.2): one route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableDump<'a> {
    pub prefix: AnyPrefix,
    pub originated: u32,
    pub peer_addr: IpAddr,
    pub peer_asn: u32,
    /// Its path attributes (2-byte AS numbers).
    pub attrs: &'a [u8],
}

/// Read a TABLE_DUMP body (subtype 1 IPv4, 2 IPv6); `Ok(None)` for
/// another subtype.
pub fn table_dump(subtype: u16, body: &[u8]) -> Result<Option<TableDump<'_>>, WireError> {
    let v6 = match subtype {
        1 => false,
        2 => true,
        _ => return Ok(None),
    };
    let mut c = Cur::new(body, 0);
    c.u16("view number")?;
    c.u16("sequence number")?;
    let net_at = c.at;
    let net = ip(&mut c, v6, "prefix")?;
    let len = c.u8("prefix length")?;
    c.u8("status")?;
    let originated = c.u32("originated time")?;
    let peer_addr = ip(&mut c, v6, "peer address")?;
    let peer_asn = u32::from(c.u16("peer AS")?);
    let n = usize::from(c.u16("attribute length")?);
    // Bytes after the attributes are ignored, as after a RIB record's
    // entries.
    let attrs = c.take(n, "attributes")?;
    let prefix =
        AnyPrefix::from_ip(net, len, HostBits::Mask).map_err(|e| WireError::Malformed {
            at: net_at,
            what: e.to_string(),
        })?;
    Ok(Some(TableDump {
        prefix,
        originated,
        peer_addr,
        peer_asn,
        attrs,
    }))
}

/// BGP4MP subtypes (RFC 6396 §4.4, RFC 8050 §3).
const STATE_CHANGE: u16 = 0;
const MESSAGE: u16 = 1;
const MESSAGE_AS4: u16 = 4;
const STATE_CHANGE_AS4: u16 = 5;
const MESSAGE_LOCAL: u16 = 6;
const MESSAGE_AS4_LOCAL: u16 = 7;
const MESSAGE_ADDPATH: u16 = 8;
const MESSAGE_AS4_ADDPATH: u16 = 9;
const MESSAGE_LOCAL_ADDPATH: u16 = 10;
const MESSAGE_AS4_LOCAL_ADDPATH: u16 = 11;

/// A BGP4MP record (types BGP4MP and BGP4MP_ET).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bgp4mp<'a> {
    /// A session's state changed (RFC 4271 §8 numbering: 1 Idle ... 6
    /// Established).
    StateChange {
        peer_addr: IpAddr,
        peer_asn: u32,
        old: u16,
        new: u16,
    },
    /// A BGP message, whole (header included), between the peer and the
    /// collector; `config` says how its UPDATEs are encoded (4-byte AS
    /// numbers in the `_AS4` subtypes, path identifiers in the `_ADDPATH`
    /// ones).
    Message {
        peer_addr: IpAddr,
        peer_asn: u32,
        /// The `_LOCAL` subtypes: a message the collector sent.
        local: bool,
        config: WireConfig,
        message: &'a [u8],
    },
}

/// Read a BGP4MP body; `Ok(None)` for a subtype this reader does not
/// decode (BGP4MP_ENTRY, BGP4MP_SNAPSHOT).
pub fn bgp4mp(subtype: u16, body: &[u8]) -> Result<Option<Bgp4mp<'_>>, WireError> {
    let (as4, message, local, addpath) = match subtype {
        STATE_CHANGE => (false, false, false, false),
        STATE_CHANGE_AS4 => (true, false, false, false),
        MESSAGE => (false, true, false, false),
        MESSAGE_AS4 => (true, true, false, false),
        MESSAGE_LOCAL => (false, true, true, false),
        MESSAGE_AS4_LOCAL => (true, true, true, false),
        MESSAGE_ADDPATH => (false, true, false, true),
        MESSAGE_AS4_ADDPATH => (true, true, false, true),
        MESSAGE_LOCAL_ADDPATH => (false, true, true, true),
        MESSAGE_AS4_LOCAL_ADDPATH => (true, true, true, true),
        _ => return Ok(None),
    };
    let mut c = Cur::new(body, 0);
    let asn = |c: &mut Cur<'_>, what| -> Result<u32, WireError> {
        if as4 {
            c.u32(what)
        } else {
            c.u16(what).map(u32::from)
        }
    };
    let peer_asn = asn(&mut c, "peer AS")?;
    asn(&mut c, "local AS")?;
    c.u16("interface index")?;
    let afi_at = c.at;
    let v6 = match c.u16("address family")? {
        1 => false,
        2 => true,
        afi => {
            return Err(WireError::Malformed {
                at: afi_at,
                what: format!("address family {afi}"),
            })
        }
    };
    let peer_addr = ip(&mut c, v6, "peer address")?;
    ip(&mut c, v6, "local address")?;
    if !message {
        let old = c.u16("old state")?;
        let new = c.u16("new state")?;
        return Ok(Some(Bgp4mp::StateChange {
            peer_addr,
            peer_asn,
            old,
            new,
        }));
    }
    let config = WireConfig {
        four_octet: as4,
        addpath_v4: addpath,
        addpath_v6: addpath,
        addpath_more: if addpath { 0x3f } else { 0 },
    };
    let message = c.take(c.left(), "BGP message")?;
    Ok(Some(Bgp4mp::Message {
        peer_addr,
        peer_asn,
        local,
        config,
        message,
    }))
}

/// A prefix in NLRI encoding: its length, then the bytes that hold it.
fn nlri_prefix(c: &mut Cur<'_>, v6: bool) -> Result<AnyPrefix, WireError> {
    let at = c.at;
    let bits = usize::from(c.u8("prefix length")?);
    prefix_bits(c, v6, bits, at)
}

/// An IPv4 or IPv6 address.
fn ip(c: &mut Cur<'_>, v6: bool, what: &'static str) -> Result<IpAddr, WireError> {
    Ok(if v6 {
        IpAddr::from(c.array::<16>(what)?)
    } else {
        IpAddr::from(c.array::<4>(what)?)
    })
}

/// `e` inside a named part of the record ("entry 3", "peer 7").
fn in_part(part: String, e: WireError) -> WireError {
    let (at, what) = match e {
        WireError::Truncated {
            at,
            what,
            need,
            have,
        } => (
            at,
            format!("{part}: {what} needs {need} bytes, {have} left"),
        ),
        WireError::Malformed { at, what } => (at, format!("{part}: {what}")),
    };
    WireError::Malformed { at, what }
}
