//! The RIB as a TABLE_DUMP_V2 file: a PEER_INDEX_TABLE of the live
//! peers, then RIB records with attributes by our own encoder.

use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipfib::prefix::AnyPrefix;
use ipfib_io::bgp::mrt::{
    PEER_INDEX_TABLE, RIB_IPV4_UNICAST, RIB_IPV4_UNICAST_ADDPATH, RIB_IPV6_UNICAST,
    RIB_IPV6_UNICAST_ADDPATH, TABLE_DUMP_V2,
};

use crate::attrs::{AsPath, AttrSet, AS_SET};
use crate::instance::{Instance, RibSet};
use crate::peers::{unix_now, PeerInfo};
use crate::rib::Rib;

/// Path attribute type codes the dump writes (RFC 4271 §5, 4760, 1997,
/// 8092).
const ORIGIN: u8 = 1;
const AS_PATH: u8 = 2;
const NEXT_HOP: u8 = 3;
const MED: u8 = 4;
const LOCAL_PREF: u8 = 5;
pub(super) const COMMUNITIES: u8 = 8;
const MP_REACH_NLRI: u8 = 14;
const LARGE_COMMUNITY: u8 = 32;

/// How [`dump_with`] names the dump.
#[derive(Clone, Debug)]
pub struct DumpOptions {
    /// PEER_INDEX_TABLE collector BGP ID.
    pub collector_bgp_id: Ipv4Addr,
    /// PEER_INDEX_TABLE view name.
    pub view_name: String,
    /// MRT header timestamp of every record (Unix seconds); `None`: now.
    pub timestamp: Option<u32>,
    /// Which instances' routes (default: the global one). MRT has no
    /// place for a route distinguisher, so a dump of a VRF read back
    /// would land in the global instance: dump one scope at a time.
    pub instance: Instance,
    /// Which RIB kinds (default: pre-policy, post-policy, Loc-RIB, MRT).
    pub ribs: RibSet,
}

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            collector_bgp_id: Ipv4Addr::UNSPECIFIED,
            view_name: "ipfib".to_string(),
            timestamp: None,
            instance: Instance::Global,
            ribs: RibSet::DEFAULT,
        }
    }
}

/// What [`dump`] wrote.
#[derive(Debug, Default, Clone)]
pub struct DumpReport {
    /// MRT records: the peer table and the RIB records.
    pub records: u64,
    pub peers: usize,
    pub routes: u64,
    pub prefixes_v4: u64,
    pub prefixes_v6: u64,
    pub bytes: u64,
    /// Routes of peers that came up after the peer table was written
    /// (writers run during a dump), left out.
    pub routes_of_new_peers: u64,
    /// Peers past the 65,535 a peer table holds (the peers up longest
    /// are kept), and their routes, left out.
    pub peers_over_limit: usize,
    pub routes_of_peers_over_limit: u64,
    /// Routes whose attributes MRT cannot carry (an AS_SET of more than
    /// 255 ASNs, attributes over 64 KiB), left out; the first reason.
    pub unencodable: u64,
    pub first_unencodable: Option<String>,
    pub elapsed: Duration,
}

/// Write `rib`'s live routes to `out` as an MRT TABLE_DUMP_V2 dump with
/// [`DumpOptions::default`].
///
/// ```
/// # use ipfib_rib::{attrs::AttrsRef, AsPath, Origin, PeerKey, Rib, RibKind};
/// # use ipfib::prefix::AnyPrefix;
/// # let key = PeerKey { peer_type: 0, distinguisher: 0, address: "192.0.2.1".parse()?,
/// #                     asn: 64500, bgp_id: 1, rib: RibKind::PrePolicy };
/// # let path = AsPath::encode([(2, &[64500, 64501][..])]);
/// # let attrs = AttrsRef { as_path: &path, communities: &[], large_communities: &[],
/// #     next_hop: Some("192.0.2.1".parse()?), origin: Origin::Igp, med: None, local_pref: None };
/// # let pfx: AnyPrefix = "10.0.0.0/8".parse()?;
/// let rib = Rib::new();
/// rib.announce(&*rib.add_peer(1, key)?, pfx, 0, &rib.intern(&attrs))?;
/// let mut out = Vec::new();
/// let report = ipfib_rib::mrt::dump(&rib, &mut out)?;
/// assert_eq!((report.peers, report.routes, report.prefixes_v4), (1, 1, 1));
/// assert_eq!(&out[4..8], [0, 13, 0, 1]); // TABLE_DUMP_V2, PEER_INDEX_TABLE
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn dump(rib: &Rib, out: impl Write) -> Result<DumpReport, io::Error> {
    dump_with(rib, out, &DumpOptions::default())
}

/// Write `rib`'s live routes of one scope (`opts.instance`, `opts.ribs`;
/// by default the global instance) to `out` as an MRT TABLE_DUMP_V2 dump
/// (RFC 6396 §4.3):
/// - one PEER_INDEX_TABLE with every live peer of the scope, in the order
///   they came up, then peer id (at most 65,535: the peers up longest are kept, further
///   ones and their routes are left out and counted in the report);
/// - per prefix (IPv4 then IPv6, each in address order), a
///   RIB_IPV4/IPV6_UNICAST record of its routes without path id and a
///   RIB_IPV4/IPV6_UNICAST_ADDPATH record (RFC 8050) of those with one,
///   entries in the RIB's preference order, originated time = the peer's
///   up time; a prefix with more than 65,535 routes of one kind takes
///   several records; sequence numbers count RIB records from 0;
/// - attributes ORIGIN, AS_PATH (4-byte), NEXT_HOP (IPv4 next hop of an
///   IPv4 route) or the abbreviated MP_REACH_NLRI of §4.3.4 (any other
///   next hop), MED, LOCAL_PREF, COMMUNITIES, LARGE_COMMUNITY, in type
///   order.
///
/// A path id of 0 is written as a route without path id. Each prefix is
/// a consistent snapshot; writers may change the RIB meanwhile. `out` is
/// buffered here.
pub fn dump_with(rib: &Rib, out: impl Write, opts: &DumpOptions) -> Result<DumpReport, io::Error> {
    let started = Instant::now();
    let mut w = Writer {
        out: BufWriter::with_capacity(1 << 16, out),
        timestamp: opts.timestamp.unwrap_or_else(|| clamp_u32(unix_now())),
        body: Vec::with_capacity(1 << 12),
        report: DumpReport::default(),
    };

    // The peer table: the live peers of the scope, and peer id -> index.
    let in_scope = |p: &PeerInfo| {
        opts.ribs.has(p.key.rib) && opts.instance.fits(p.key.peer_type, p.key.distinguisher)
    };
    let mut peers: Vec<Arc<PeerInfo>> = rib
        .peers()
        .all()
        .filter(|p| p.is_up() && in_scope(p))
        .collect();
    // Longest up first: past 65,535 peers, the ones that came last (a
    // sender inventing peers) are left out, not routers up for long.
    peers.sort_unstable_by_key(|p| (p.up_since, p.id));
    let over: std::collections::HashSet<u32> = peers
        .iter()
        .skip(usize::from(u16::MAX))
        .map(|p| p.id)
        .collect();
    peers.truncate(usize::from(u16::MAX));
    w.report.peers_over_limit = over.len();
    let index: std::collections::HashMap<u32, u16> = peers
        .iter()
        .zip(0..=u16::MAX)
        .map(|(p, i)| (p.id, i))
        .collect();
    peer_index_table(&mut w.body, opts, &peers)?;
    w.record(PEER_INDEX_TABLE)?;
    w.report.peers = peers.len();

    let mut prefixes = Vec::new();
    rib.for_each_prefix(|r| {
        if r.iter().any(|e| rib.peers().is_live(e.peer)) {
            prefixes.push(r.prefix);
        }
    });
    prefixes.sort_unstable();

    let mut seq: u32 = 0;
    let mut attrs = Vec::with_capacity(256);
    let mut plain: Vec<(u16, u32, u32, Range)> = Vec::new();
    let mut with_id: Vec<(u16, u32, u32, Range)> = Vec::new();
    for prefix in prefixes {
        let routes = rib.routes(&prefix);
        attrs.clear();
        plain.clear();
        with_id.clear();
        for r in &routes {
            let Some(i) = index.get(&r.peer.id).copied() else {
                if over.contains(&r.peer.id) {
                    w.report.routes_of_peers_over_limit += 1;
                } else if in_scope(&r.peer) {
                    w.report.routes_of_new_peers += 1;
                }
                continue;
            };
            let start = attrs.len();
            if let Err(why) = encode_attrs(&mut attrs, &prefix, &r.attrs) {
                attrs.truncate(start);
                w.report.unencodable += 1;
                if w.report.first_unencodable.is_none() {
                    w.report.first_unencodable = Some(format!(
                        "{prefix} from {} (AS{}): {why}",
                        r.peer.key.address, r.peer.key.asn
                    ));
                }
                continue;
            }
            let entry = (
                i,
                clamp_u32(r.peer.up_since),
                r.path_id,
                (start, attrs.len()),
            );
            if r.path_id == 0 {
                plain.push(entry);
            } else {
                with_id.push(entry);
            }
        }
        let v6 = prefix.family() == 6;
        let kinds = [
            (
                &plain,
                false,
                if v6 {
                    RIB_IPV6_UNICAST
                } else {
                    RIB_IPV4_UNICAST
                },
            ),
            (
                &with_id,
                true,
                if v6 {
                    RIB_IPV6_UNICAST_ADDPATH
                } else {
                    RIB_IPV4_UNICAST_ADDPATH
                },
            ),
        ];
        let mut any = false;
        for (entries, addpath, subtype) in kinds {
            for chunk in entries.chunks(usize::from(u16::MAX)) {
                rib_record_body(&mut w.body, seq, &prefix, addpath, chunk, &attrs);
                seq = seq.wrapping_add(1);
                w.record(subtype)?;
                w.report.routes += chunk.len() as u64;
                any = true;
            }
        }
        if any {
            if v6 {
                w.report.prefixes_v6 += 1;
            } else {
                w.report.prefixes_v4 += 1;
            }
        }
    }
    w.out.flush()?;
    let mut report = w.report;
    report.elapsed = started.elapsed();
    Ok(report)
}

/// A byte range in the attribute buffer of one prefix's routes.
type Range = (usize, usize);

fn clamp_u32(t: i64) -> u32 {
    u32::try_from(t.max(0)).unwrap_or(u32::MAX)
}

struct Writer<W: Write> {
    out: BufWriter<W>,
    timestamp: u32,
    /// The body of the record being written.
    body: Vec<u8>,
    report: DumpReport,
}

impl<W: Write> Writer<W> {
    /// Write a TABLE_DUMP_V2 record of `subtype` around `self.body`.
    fn record(&mut self, subtype: u16) -> io::Result<()> {
        let len = u32::try_from(self.body.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an MRT record over 4 GiB"))?;
        let mut h = [0u8; 12];
        h[..4].copy_from_slice(&self.timestamp.to_be_bytes());
        h[4..6].copy_from_slice(&TABLE_DUMP_V2.to_be_bytes());
        h[6..8].copy_from_slice(&subtype.to_be_bytes());
        h[8..].copy_from_slice(&len.to_be_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&self.body)?;
        self.report.records += 1;
        self.report.bytes += 12 + u64::from(len);
        Ok(())
    }
}

/// RFC 6396 §4.3.1: collector BGP ID, view name, peer count, then per
/// peer its type (bit 0x01: IPv6 address, 0x02: 4-byte AS), BGP ID,
/// address and AS.
fn peer_index_table(
    body: &mut Vec<u8>,
    opts: &DumpOptions,
    peers: &[Arc<PeerInfo>],
) -> io::Result<()> {
    body.clear();
    body.extend_from_slice(&opts.collector_bgp_id.octets());
    let name = opts.view_name.as_bytes();
    let name_len = u16::try_from(name.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an MRT view name holds at most 65,535 bytes",
        )
    })?;
    body.extend_from_slice(&name_len.to_be_bytes());
    body.extend_from_slice(name);
    let count = u16::try_from(peers.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} live peers: an MRT peer table holds at most 65,535",
                peers.len()
            ),
        )
    })?;
    body.extend_from_slice(&count.to_be_bytes());
    for p in peers {
        let k = &p.key;
        let as4 = k.asn > u32::from(u16::MAX);
        let v6 = k.address.is_ipv6();
        body.push(u8::from(v6) | (u8::from(as4) << 1));
        body.extend_from_slice(&k.bgp_id.to_be_bytes());
        match k.address {
            IpAddr::V4(a) => body.extend_from_slice(&a.octets()),
            IpAddr::V6(a) => body.extend_from_slice(&a.octets()),
        }
        if as4 {
            body.extend_from_slice(&k.asn.to_be_bytes());
        } else {
            body.extend_from_slice(&(k.asn as u16).to_be_bytes());
        }
    }
    Ok(())
}

/// RFC 6396 §4.3.2 (and RFC 8050 §4 for `addpath`): sequence number,
/// prefix, entry count, entries (peer index, originated time, path id,
/// attribute length, attributes).
fn rib_record_body(
    body: &mut Vec<u8>,
    seq: u32,
    prefix: &AnyPrefix,
    addpath: bool,
    entries: &[(u16, u32, u32, Range)],
    attrs: &[u8],
) {
    body.clear();
    body.extend_from_slice(&seq.to_be_bytes());
    put_prefix(body, prefix);
    // Callers pass at most 65,535 entries.
    body.extend_from_slice(&(entries.len() as u16).to_be_bytes());
    for &(index, time, path_id, (start, end)) in entries {
        body.extend_from_slice(&index.to_be_bytes());
        body.extend_from_slice(&time.to_be_bytes());
        if addpath {
            body.extend_from_slice(&path_id.to_be_bytes());
        }
        let a = attrs.get(start..end).unwrap_or_default();
        // encode_attrs keeps a route's attributes under 64 KiB.
        body.extend_from_slice(&(a.len() as u16).to_be_bytes());
        body.extend_from_slice(a);
    }
}

/// NLRI encoding: the length, then the bytes that hold it.
fn put_prefix(out: &mut Vec<u8>, prefix: &AnyPrefix) {
    let len = prefix.len();
    out.push(len);
    let n = usize::from(len).div_ceil(8);
    match prefix {
        AnyPrefix::V4(p) => out.extend_from_slice(&p.addr().to_be_bytes()[..n]),
        AnyPrefix::V6(p) => out.extend_from_slice(&p.addr().to_be_bytes()[..n]),
    }
}

/// Append one path attribute (RFC 4271 §4.3): the extended-length flag
/// when the value is over 255 bytes.
pub(super) fn put_attr(out: &mut Vec<u8>, flags: u8, code: u8, value: &[u8]) -> Result<(), String> {
    match u8::try_from(value.len()) {
        Ok(len) => out.extend_from_slice(&[flags, code, len]),
        Err(_) => {
            let len = u16::try_from(value.len())
                .map_err(|_| format!("attribute {code} is {} bytes long", value.len()))?;
            out.extend_from_slice(&[flags | 0x10, code]);
            out.extend_from_slice(&len.to_be_bytes());
        }
    }
    out.extend_from_slice(value);
    Ok(())
}

/// Attribute flags (RFC 4271 §4.3): well-known, optional transitive,
/// optional non-transitive.
const WELL_KNOWN: u8 = 0x40;
pub(super) const OPTIONAL_TRANSITIVE: u8 = 0xc0;
const OPTIONAL: u8 = 0x80;

/// Append a route's attributes in type order (RFC 4271 §5: SHOULD); on
/// error `out` may hold part of them (the caller truncates).
fn encode_attrs(out: &mut Vec<u8>, prefix: &AnyPrefix, a: &AttrSet) -> Result<(), String> {
    let start = out.len();
    let mut v = Vec::with_capacity(64);
    // NEXT_HOP only for an IPv4 next hop of an IPv4 route; any other next
    // hop (IPv6 routes, RFC 8950 IPv4 routes over IPv6) in MP_REACH_NLRI,
    // which RFC 6396 §4.3.4 cuts to the next hop length and address (AFI,
    // SAFI and NLRI are the record's).
    let (classic, mp): (Option<[u8; 4]>, Option<&[u8]>) = match (prefix, &a.next_hop) {
        (AnyPrefix::V4(_), Some(IpAddr::V4(nh))) => (Some(nh.octets()), None),
        (_, Some(IpAddr::V4(nh))) => {
            v.push(4);
            v.extend_from_slice(&nh.octets());
            (None, Some(&v[..]))
        }
        (_, Some(IpAddr::V6(nh))) => {
            v.push(16);
            v.extend_from_slice(&nh.octets());
            (None, Some(&v[..]))
        }
        (_, None) => (None, None),
    };
    let mut w = Vec::with_capacity(64);
    put_attr(out, WELL_KNOWN, ORIGIN, &[a.origin as u8])?;
    encode_as_path(&a.as_path, &mut w)?;
    put_attr(out, WELL_KNOWN, AS_PATH, &w)?;
    if let Some(nh) = classic {
        put_attr(out, WELL_KNOWN, NEXT_HOP, &nh)?;
    }
    if let Some(med) = a.med {
        put_attr(out, OPTIONAL, MED, &med.to_be_bytes())?;
    }
    if let Some(lp) = a.local_pref {
        put_attr(out, WELL_KNOWN, LOCAL_PREF, &lp.to_be_bytes())?;
    }
    if !a.communities.is_empty() {
        w.clear();
        for c in a.communities.iter() {
            w.extend_from_slice(&c.to_be_bytes());
        }
        put_attr(out, OPTIONAL_TRANSITIVE, COMMUNITIES, &w)?;
    }
    if let Some(mp) = mp {
        put_attr(out, OPTIONAL, MP_REACH_NLRI, mp)?;
    }
    if !a.large_communities.is_empty() {
        w.clear();
        for l in a.large_communities.iter() {
            for x in l {
                w.extend_from_slice(&x.to_be_bytes());
            }
        }
        put_attr(out, OPTIONAL_TRANSITIVE, LARGE_COMMUNITY, &w)?;
    }
    if out.len() - start > usize::from(u16::MAX) {
        return Err(format!(
            "attributes take {} bytes, a RIB entry holds 65,535",
            out.len() - start
        ));
    }
    Ok(())
}

/// AS_PATH with 4-byte ASNs (RFC 6396 §4.3.4, RFC 6793): a segment holds
/// at most 255 ASNs, so a longer sequence becomes consecutive sequences
/// (the same path); a longer set cannot be split without changing the
/// path and is refused.
pub(super) fn encode_as_path(p: &AsPath, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    for s in p.segments() {
        if s.asns.len() > 255 && matches!(s.kind, AS_SET | crate::attrs::AS_CONFED_SET) {
            return Err(format!("an AS set of {} ASNs", s.asns.len()));
        }
        if s.asns.is_empty() {
            out.extend_from_slice(&[s.kind, 0]);
        }
        for chunk in s.asns.chunks(255) {
            out.extend_from_slice(&[s.kind, chunk.len() as u8]);
            for asn in chunk {
                out.extend_from_slice(&asn.to_be_bytes());
            }
        }
    }
    Ok(())
}
