//! BMP (RFC 7854, RFC 9069): framing and one session's state.
//!
//! The network layer frames messages ([`frame`]) and hands each to its
//! session's [`Session::handle`], a pure function of bytes plus the RIB:
//! replayable from recordings and fuzzable. A session is one TCP
//! connection; its peers are keyed by (peer type, distinguisher, address)
//! within it, never by source address across sessions.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use crate::attrs::{AttrSet, AttrsRef};
use crate::peers::{NlriClass, PeerInfo, PeerInit, PeerKey, PeerOrigin, RibKind};
use crate::rib::{EndOfRib, Rib, RibError};
use ipfib::prefix::AnyPrefix;
use ipfib_io::bgp::{self as wire, Cur, ErrorAction, OpenCaps, Update, WireConfig, WireError};

/// BMP message types (RFC 7854 §4.1).
pub const ROUTE_MONITORING: u8 = 0;
pub const STATISTICS: u8 = 1;
pub const PEER_DOWN: u8 = 2;
pub const PEER_UP: u8 = 3;
pub const INITIATION: u8 = 4;
pub const TERMINATION: u8 = 5;
pub const ROUTE_MIRRORING: u8 = 6;
/// Message type names, by type, for logs and metrics.
pub const TYPE_NAMES: [&str; 7] = [
    "route_monitoring",
    "statistics",
    "peer_down",
    "peer_up",
    "initiation",
    "termination",
    "route_mirroring",
];

/// The largest message accepted by default: a BGP message is at most
/// 65,535 bytes (RFC 8654), plus BMP headers and TLVs.
pub const DEFAULT_MAX_MESSAGE: usize = 1 << 20;

const COMMON_HEADER: usize = 6;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BmpError {
    #[error("BMP version {0}, expected 3")]
    Version(u8),
    #[error("BMP message length {len} outside {min}..={max}")]
    Length { len: usize, min: usize, max: usize },
    #[error("BMP message type {0} is unknown")]
    UnknownType(u8),
    #[error("BMP {kind} message truncated at byte {at}: {what} needs {need} bytes, {have} left")]
    Truncated {
        kind: &'static str,
        at: usize,
        what: &'static str,
        need: usize,
        have: usize,
    },
    #[error("BMP {kind} message, BGP PDU at byte {at}: {source}")]
    Bgp {
        kind: &'static str,
        at: usize,
        source: WireError,
    },
    #[error(transparent)]
    Rib(#[from] RibError),
}

/// The length of the complete message at the front of `buf`, `None` if
/// more bytes are needed; an error if the header is invalid (the stream
/// cannot be resynchronised: the session must end).
pub fn frame(buf: &[u8], max: usize) -> Result<Option<usize>, BmpError> {
    if buf.len() < COMMON_HEADER {
        return Ok(None);
    }
    if buf[0] != 3 {
        return Err(BmpError::Version(buf[0]));
    }
    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if !(COMMON_HEADER..=max).contains(&len) {
        return Err(BmpError::Length {
            len,
            min: COMMON_HEADER,
            max,
        });
    }
    if buf[5] > ROUTE_MIRRORING {
        return Err(BmpError::UnknownType(buf[5]));
    }
    Ok((buf.len() >= len).then_some(len))
}

/// The BMP per-peer header (RFC 7854 §4.2, RFC 9069 §4.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerHeader {
    pub peer_type: u8,
    pub flags: u8,
    pub distinguisher: u64,
    pub address: IpAddr,
    pub asn: u32,
    pub bgp_id: u32,
}

impl PeerHeader {
    fn parse(c: &mut Cur<'_>) -> Result<PeerHeader, WireError> {
        let peer_type = c.u8("peer type")?;
        let flags = c.u8("peer flags")?;
        let d = c.take(8, "peer distinguisher")?;
        let mut dd = [0u8; 8];
        dd.copy_from_slice(d);
        let a = c.take(16, "peer address")?;
        let mut aa = [0u8; 16];
        aa.copy_from_slice(a);
        // V flag (IPv6 peer) only for peer types 0-2; Loc-RIB (3) uses
        // its flags otherwise and has no peer address.
        let v6 = peer_type <= 2 && flags & 0x80 != 0;
        let address = if v6 {
            IpAddr::V6(Ipv6Addr::from(aa))
        } else {
            IpAddr::V4(Ipv4Addr::new(aa[12], aa[13], aa[14], aa[15]))
        };
        let asn = c.u32("peer AS")?;
        let bgp_id = c.u32("peer BGP ID")?;
        c.take(8, "timestamp")?;
        Ok(PeerHeader {
            peer_type,
            flags,
            distinguisher: u64::from_be_bytes(dd),
            address,
            asn,
            bgp_id,
        })
    }

    /// Which RIB the routes of a Route Monitoring message belong to:
    /// Loc-RIB (peer type 3), else Adj-RIB-In or, with the RFC 8671 O
    /// flag, Adj-RIB-Out, each before or after policy (L flag).
    fn rib(&self) -> RibKind {
        if self.peer_type == 3 {
            return RibKind::LocRib;
        }
        let post = self.flags & 0x40 != 0;
        match (self.flags & 0x10 != 0, post) {
            (true, true) => RibKind::AdjRibOutPost,
            (true, false) => RibKind::AdjRibOutPre,
            (false, true) => RibKind::PostPolicy,
            (false, false) => RibKind::PrePolicy,
        }
    }

    /// RFC 7854 A flag: the UPDATE uses 2-byte AS_PATH (types 0-2 only).
    fn legacy_as_path(&self) -> bool {
        self.peer_type <= 2 && self.flags & 0x20 != 0
    }

    fn neighbour(&self) -> NeighbourKey {
        (self.peer_type, self.distinguisher, self.address)
    }
}

type NeighbourKey = (u8, u64, IpAddr);

/// One monitored BGP neighbour of a session: what its Peer Ups said, and
/// the RIB peer of each (RIB kind, instance) its routes went to.
struct Neighbour {
    header: PeerHeader,
    /// ADD-PATH per address family ([`wire::family_bit`] bits), as the
    /// Peer Ups decided it.
    addpath: u8,
    /// The same for Adj-RIB-Out (RFC 8671): the router sends, the
    /// neighbour receives, the other direction of the OPENs.
    addpath_out: u8,
    /// The families some Peer Up spoke about (routers send one Loc-RIB
    /// Peer Up per family: each decides its own families only).
    decided: u8,
    table_name: Option<String>,
    /// Its RIB peers by (kind, route distinguisher, [`NlriClass`] class): VPN
    /// and labeled-unicast routes never share a RIB peer with the
    /// neighbour's own unicast routes (the same prefix and path id may be
    /// a route of each family).
    ribs: HashMap<(RibKind, u64, NlriClass), Arc<PeerInfo>, foldhash::fast::RandomState>,
    /// Made by a Route Monitoring before any Peer Up: the first Peer Up
    /// completes it (its routes stay) instead of replacing it.
    provisional: bool,
    /// It reached `max_routes_per_peer` (noted once).
    capped: bool,
}

/// Counters of one session (summed into the service's metrics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Messages by type ([`TYPE_NAMES`] order).
    pub messages: [u64; 7],
    pub bytes: u64,
    pub announced: u64,
    pub withdrawn: u64,
    pub end_of_rib: u64,
    /// Route Monitoring for a neighbour with no Peer Up yet (accepted).
    pub before_peer_up: u64,
    /// Peer Down for a neighbour not up (FRR repeats them): ignored.
    pub peer_down_unknown: u64,
    /// Adj-RIB-Out messages (RFC 8671), kept as their own RIB kinds.
    pub adj_rib_out: u64,
    /// MP_REACH/MP_UNREACH attributes of families not decoded, skipped.
    pub skipped_families: u64,
    /// NLRI decoded from labeled-unicast (SAFI 4) and VPN (SAFI 128)
    /// attributes.
    pub labeled_nlri: u64,
    pub vpn_nlri: u64,
    /// RFC 7606 attribute errors by action: attribute discard,
    /// treat-as-withdraw.
    pub attribute_discard: u64,
    pub treat_as_withdraw: u64,
    /// UPDATEs whose errors ended the session (RFC 7606 "session reset").
    pub session_reset: u64,
    /// Messages of neighbours past [`SessionLimits::max_peers`], dropped.
    pub peers_over_limit: u64,
    /// Announcements of new routes past
    /// [`SessionLimits::max_routes_per_peer`], dropped.
    pub routes_over_limit: u64,
    /// Announcements of new routes of a prefix that held the most routes
    /// a prefix may (`rib::MAX_ROUTES_PER_PREFIX`), dropped by the RIB.
    pub routes_prefix_full: u64,
}

/// Limits on what one session may make the RIB hold (like BGP
/// maximum-prefix; `None`: no limit). Past `max_peers` neighbours, the
/// messages of further neighbours are dropped; once a RIB peer holds
/// `max_routes_per_peer` routes, its announcements of new routes are
/// dropped while changes to its existing routes and withdrawals still
/// apply. Each drop is counted in [`SessionStats`]; the first of each
/// neighbour is described in [`Session::limit_notes`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionLimits {
    pub max_peers: Option<usize>,
    pub max_routes_per_peer: Option<u64>,
    /// RIB peers the session's live neighbours may have in all: one per
    /// (neighbour, RIB kind, route distinguisher). VPN routes register one
    /// per distinguisher, so without it `max_peers` neighbours times
    /// [`MAX_RIB_PEERS_PER_NEIGHBOUR`] could fill the RIB's whole peer
    /// registry and lock every other router out.
    pub max_rib_peers: Option<usize>,
}

/// One RFC 7606 error, for the log (the service rate-limits the lines).
#[derive(Clone, Debug)]
pub struct UpdateErrorEvent {
    pub action: &'static str,
    pub peer_type: u8,
    pub distinguisher: u64,
    pub peer: IpAddr,
    /// Byte offset within the BMP message.
    pub at: usize,
    pub what: String,
}

/// The most error events a session keeps until they are taken.
const MAX_ERROR_EVENTS: usize = 64;

/// What a session learned from its Initiation message.
#[derive(Clone, Debug, Default)]
pub struct SessionInfo {
    pub sys_name: Option<String>,
    pub sys_descr: Option<String>,
    pub terminated: bool,
}

/// One BMP session's state: its neighbours and counters. Owned by the
/// task that reads the connection.
pub struct Session {
    pub id: u64,
    /// The address the session came from: a warm restart matches a
    /// router's returning peers on it (`rib/restart.rs`); `None` (a
    /// recording replayed into a program) takes over nothing.
    pub router: Option<IpAddr>,
    rib: Arc<Rib>,
    neighbours: HashMap<NeighbourKey, Neighbour, foldhash::fast::RandomState>,
    update: Update,
    /// The attributes of the last UPDATE: consecutive UPDATEs often
    /// repeat them (one prefix per message from FRR), and a comparison is
    /// cheaper than interning.
    last_attrs: Option<Arc<AttrSet>>,
    pub stats: SessionStats,
    pub info: SessionInfo,
    /// RFC 7606 errors since the last [`Session::take_errors`] (the first
    /// [`MAX_ERROR_EVENTS`]; the rest are only counted).
    errors: Vec<UpdateErrorEvent>,
    pub limits: SessionLimits,
    /// A line per limit first reached (the caller logs and drains them).
    pub limit_notes: Vec<String>,
    peers_capped: bool,
    prefix_full_noted: bool,
    /// RIB peers of the live neighbours (see [`SessionLimits::max_rib_peers`]).
    rib_peers: RibPeerRoom,
}

/// How many RIB peers a session holds, against its limit.
#[derive(Default)]
struct RibPeerRoom {
    used: usize,
    max: Option<usize>,
    /// Refused since the last note: the session's limit, the RIB's
    /// registry full.
    over_limit: bool,
    registry_full: bool,
    /// Whether each was noted (once per session).
    noted: [bool; 2],
}

/// The longest string kept from the wire (Initiation sysName, sysDescr;
/// Peer Up table name): a sender's TLV of up to 64 KiB per message would
/// otherwise stay in memory for as long as its session or peer does.
pub const MAX_WIRE_STRING: usize = 255;

/// A TLV's text, cut to [`MAX_WIRE_STRING`] bytes (at a character
/// boundary; the cut counted in the RIB's `strings_cut`).
fn tlv_string(rib: &Rib, v: &[u8]) -> String {
    let cut = v.len() > MAX_WIRE_STRING;
    let mut s = String::from_utf8_lossy(&v[..v.len().min(MAX_WIRE_STRING)]).into_owned();
    if s.len() > MAX_WIRE_STRING {
        // Replacement characters (3 bytes) for invalid bytes can lengthen it.
        let mut end = MAX_WIRE_STRING;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    if cut {
        rib.counters()
            .strings_cut
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    s
}

impl Session {
    pub fn new(id: u64, rib: Arc<Rib>) -> Session {
        Session {
            id,
            router: None,
            rib,
            neighbours: HashMap::default(),
            update: Update::default(),
            last_attrs: None,
            stats: SessionStats::default(),
            info: SessionInfo::default(),
            errors: Vec::new(),
            limits: SessionLimits::default(),
            limit_notes: Vec::new(),
            peers_capped: false,
            prefix_full_noted: false,
            rib_peers: RibPeerRoom::default(),
        }
    }

    /// The RFC 7606 error events noted since the last call.
    pub fn take_errors(&mut self) -> Vec<UpdateErrorEvent> {
        std::mem::take(&mut self.errors)
    }

    /// The RIB peers this session created and that are still up.
    pub fn live_peers(&self) -> Vec<u32> {
        self.neighbours
            .values()
            .flat_map(|n| n.ribs.values())
            .filter(|p| p.is_up())
            .map(|p| p.id)
            .collect()
    }

    /// Apply one complete message (as [`frame`] delimited it).
    pub fn handle(&mut self, msg: &[u8]) -> Result<(), BmpError> {
        let len = frame(msg, usize::MAX)?.ok_or(BmpError::Length {
            len: msg.len(),
            min: COMMON_HEADER,
            max: usize::MAX,
        })?;
        let kind = msg[5];
        let kname = TYPE_NAMES[kind as usize];
        self.stats.messages[kind as usize] += 1;
        self.stats.bytes += len as u64;
        let mut c = Cur::new(&msg[COMMON_HEADER..len], COMMON_HEADER);
        let trunc = |e: WireError| match e {
            WireError::Truncated {
                at,
                what,
                need,
                have,
            } => BmpError::Truncated {
                kind: kname,
                at,
                what,
                need,
                have,
            },
            other => BmpError::Bgp {
                kind: kname,
                at: 0,
                source: other,
            },
        };
        match kind {
            INITIATION | TERMINATION => {
                while c.left() > 0 {
                    let t = c.u16("information TLV type").map_err(trunc)?;
                    let n = c.u16("information TLV length").map_err(trunc)? as usize;
                    let v = c.take(n, "information TLV value").map_err(trunc)?;
                    if kind == INITIATION {
                        match t {
                            1 => self.info.sys_descr = Some(tlv_string(&self.rib, v)),
                            2 => self.info.sys_name = Some(tlv_string(&self.rib, v)),
                            _ => {}
                        }
                    }
                }
                if kind == TERMINATION {
                    self.info.terminated = true;
                }
                Ok(())
            }
            PEER_UP => self.peer_up(c).map_err(trunc).and_then(|r| r),
            PEER_DOWN => {
                let h = PeerHeader::parse(&mut c).map_err(trunc)?;
                match self.neighbours.remove(&h.neighbour()) {
                    Some(n) => {
                        for p in n.ribs.values() {
                            self.rib.peer_down(p.id);
                        }
                        self.rib_peers.used -= n.ribs.len();
                    }
                    None => self.stats.peer_down_unknown += 1,
                }
                Ok(())
            }
            ROUTE_MONITORING => {
                let h = PeerHeader::parse(&mut c).map_err(trunc)?;
                let at = c.at;
                self.route_monitoring(h, c.buf, at).map_err(|e| match e {
                    BmpError::Bgp { source, .. } => {
                        self.stats.session_reset += 1;
                        BmpError::Bgp {
                            kind: kname,
                            at,
                            source,
                        }
                    }
                    other => other,
                })
            }
            STATISTICS | ROUTE_MIRRORING => {
                // Counted; mirrored messages are verbatim copies for
                // troubleshooting, not route state (RFC 7854 §4.7).
                PeerHeader::parse(&mut c).map_err(trunc)?;
                Ok(())
            }
            _ => Err(BmpError::UnknownType(kind)),
        }
    }

    fn peer_up(&mut self, mut c: Cur<'_>) -> Result<Result<(), BmpError>, WireError> {
        let h = PeerHeader::parse(&mut c)?;
        c.take(16, "local address")?;
        c.u16("local port")?;
        c.u16("remote port")?;
        let sent = open_at(&mut c)?;
        let rcvd = open_at(&mut c)?;
        let mut table_name = None;
        while c.left() >= 4 {
            let t = c.u16("information TLV type")?;
            let n = c.u16("information TLV length")? as usize;
            let v = c.take(n, "information TLV value")?;
            if t == 3 {
                table_name = Some(tlv_string(&self.rib, v));
            }
        }
        // Adj-RIB-In: what the neighbour sent us (RFC 7911 §4: it may send,
        // the router may receive). Loc-RIB (RFC 9069 §5.2): the OPENs are
        // fabricated, and "the capability intent of advertise, receive or
        // both can be ignored since the presence of the capability
        // indicates enough that add-paths will be used".
        let negotiated = |afi, safi| {
            if h.peer_type == 3 {
                sent.has_addpath_safi(afi, safi) || rcvd.has_addpath_safi(afi, safi)
            } else {
                wire::addpath_negotiated_safi(&rcvd, &sent, afi, safi)
            }
        };
        let negotiated_out =
            |afi, safi| h.peer_type != 3 && wire::addpath_negotiated_safi(&sent, &rcvd, afi, safi);
        // The families this Peer Up speaks about decide their ADD-PATH;
        // the others keep what an earlier Peer Up of the same neighbour
        // said (vendors send one Loc-RIB Peer Up per family).
        let (mut covers, mut addpath, mut addpath_out) = (0u8, 0u8, 0u8);
        for (afi, safi) in sent.families().into_iter().chain(rcvd.families()) {
            if let Some(b) = wire::family_bit(afi, safi) {
                covers |= 1 << b;
                if negotiated(afi, safi) {
                    addpath |= 1 << b;
                }
                if negotiated_out(afi, safi) {
                    addpath_out |= 1 << b;
                }
            }
        }
        let key = h.neighbour();
        if !self.neighbours.contains_key(&key) && !self.room_for_neighbour(&h) {
            return Ok(Ok(()));
        }
        match self.neighbours.get_mut(&key) {
            // Routes that came before the first Peer Up stay when they were
            // decoded as this Peer Up says (no ADD-PATH): it completes that
            // neighbour. Decoded otherwise, they may be wrong: they go
            // (below), as for a neighbour replaced.
            Some(n) if n.provisional && addpath == 0 => {
                n.provisional = false;
                n.decided = covers;
                n.addpath = 0;
                n.addpath_out = addpath_out;
                complete(n, h, table_name);
                return Ok(Ok(()));
            }
            // Another Peer Up of a neighbour that is up: the same again
            // (idempotent), or about other families (merged). Routes stay.
            Some(n) if !n.provisional && (n.addpath ^ addpath) & n.decided & covers == 0 => {
                n.addpath = (n.addpath & !covers) | addpath;
                n.addpath_out = (n.addpath_out & !covers) | addpath_out;
                n.decided |= covers;
                complete(n, h, table_name);
                return Ok(Ok(()));
            }
            // A Peer Up that contradicts an earlier one: the old session
            // went down without a Peer Down.
            Some(_) => {
                if let Some(old) = self.neighbours.remove(&key) {
                    for p in old.ribs.values() {
                        self.rib.peer_down(p.id);
                    }
                    self.rib_peers.used -= old.ribs.len();
                }
            }
            None => {}
        }
        self.neighbours.insert(
            key,
            Neighbour {
                addpath,
                addpath_out,
                decided: covers,
                header: h,
                table_name,
                ribs: HashMap::default(),
                provisional: false,
                capped: false,
            },
        );
        Ok(Ok(()))
    }

    fn route_monitoring(
        &mut self,
        h: PeerHeader,
        pdu: &[u8],
        pdu_at: usize,
    ) -> Result<(), BmpError> {
        let rib_kind = h.rib();
        if matches!(rib_kind, RibKind::AdjRibOutPre | RibKind::AdjRibOutPost) {
            self.stats.adj_rib_out += 1;
        }
        let key = h.neighbour();
        if !self.neighbours.contains_key(&key) && !self.room_for_neighbour(&h) {
            return Ok(());
        }
        let n = match self.neighbours.get_mut(&key) {
            Some(n) => n,
            None => {
                self.stats.before_peer_up += 1;
                self.neighbours.entry(key).or_insert(Neighbour {
                    header: h.clone(),
                    addpath: 0,
                    addpath_out: 0,
                    decided: 0,
                    table_name: None,
                    ribs: HashMap::default(),
                    provisional: true,
                    capped: false,
                })
            }
        };
        let mask = if matches!(rib_kind, RibKind::AdjRibOutPre | RibKind::AdjRibOutPost) {
            n.addpath_out
        } else {
            n.addpath
        };
        let cfg = WireConfig {
            four_octet: !h.legacy_as_path(),
            addpath_v4: mask & 1 != 0,
            addpath_v6: mask & 2 != 0,
            // Bit `family_bit` of the mask, as `WireConfig::addpath` reads it.
            addpath_more: mask,
        };
        wire::decode_update(pdu, &cfg, &mut self.update).map_err(|source| BmpError::Bgp {
            kind: "route_monitoring",
            at: 0,
            source,
        })?;
        let u = &self.update;
        let st = &mut self.stats;
        st.skipped_families += u.skipped_families as u64;
        st.labeled_nlri += u.labeled_nlri as u64;
        st.vpn_nlri += u.vpn_nlri as u64;
        for e in &u.errors {
            match e.action {
                ErrorAction::AttributeDiscard => st.attribute_discard += 1,
                ErrorAction::TreatAsWithdraw => st.treat_as_withdraw += 1,
            }
            if self.errors.len() < MAX_ERROR_EVENTS {
                self.errors.push(UpdateErrorEvent {
                    action: e.action.as_str(),
                    peer_type: h.peer_type,
                    distinguisher: h.distinguisher,
                    peer: h.address,
                    at: pdu_at + e.at,
                    what: e.what.clone(),
                });
            }
        }
        if u.end_of_rib {
            st.end_of_rib += 1;
            let (afi, safi) = u.end_of_rib_family;
            if let (Some(router), Some(class)) = (self.router, NlriClass::of_safi(safi)) {
                let neighbour = PeerKey {
                    peer_type: h.peer_type,
                    distinguisher: h.distinguisher,
                    address: h.address,
                    asn: h.asn,
                    bgp_id: h.bgp_id,
                    rib: rib_kind,
                };
                self.rib.end_of_rib(EndOfRib {
                    router,
                    neighbour: &neighbour,
                    class,
                    afi,
                });
            }
            return Ok(());
        }
        let (rib, session) = (&self.rib, (self.id, self.router));
        let own = n.header.distinguisher;
        // Past the per-peer route limit, only routes the peer already has
        // may change (like BGP maximum-prefix, without ending anything).
        let max_routes = self.limits.max_routes_per_peer;
        let over_limit = |peer: &PeerInfo, prefix: AnyPrefix, path_id: u32| {
            max_routes.is_some_and(|max| {
                peer.routes.load(std::sync::atomic::Ordering::Relaxed) >= max
                    && !rib.holds(peer.id, &prefix, path_id)
            })
        };
        let mut dropped = 0u64;
        let (mut prefix_full, mut full) = (0u64, None::<AnyPrefix>);
        // Withdrawals only reach RIB peers that exist: a withdrawal never
        // registers one (a sender could otherwise make a peer per
        // distinguisher without holding a route).
        for (rd, class, prefix, path_id) in u
            .withdrawn
            .iter()
            .map(|&(p, id)| (own, NlriClass::Unicast, p, id))
            .chain(
                u.labeled_withdrawn
                    .iter()
                    .map(|&(p, id)| (own, NlriClass::Labeled, p, id)),
            )
            .chain(
                u.vpn_withdrawn
                    .iter()
                    .map(|&(rd, p, id)| (rd, NlriClass::Vpn, p, id)),
            )
        {
            if let Some(peer) = n.ribs.get(&(rib_kind, rd, class)) {
                rib.withdraw(peer, prefix, path_id);
            }
        }
        // Routes dropped because their neighbour has its most RIB peers.
        let mut no_peer = 0u64;
        let room = &mut self.rib_peers;
        room.max = self.limits.max_rib_peers;
        let mut peer_of = |rd: u64, class: NlriClass| {
            Ok::<_, RibError>(rib_peer(rib, session, n, rib_kind, rd, class, room))
        };
        st.withdrawn +=
            (u.withdrawn.len() + u.labeled_withdrawn.len() + u.vpn_withdrawn.len()) as u64;
        let (mp, conventional) = u.announced.split_at(u.mp_announced);
        let groups = [
            (mp, u.next_hop_mp, NlriClass::Unicast, None),
            (conventional, u.next_hop_v4, NlriClass::Unicast, None),
            (
                &u.labeled_announced[..],
                u.next_hop_mp,
                NlriClass::Labeled,
                None,
            ),
            (
                &[][..],
                u.next_hop_mp,
                NlriClass::Vpn,
                Some(&u.vpn_announced[..]),
            ),
        ];
        for (nlri, next_hop, class, vpn) in groups {
            if nlri.is_empty() && vpn.is_none_or(|v| v.is_empty()) {
                continue;
            }
            let wanted = AttrsRef {
                next_hop,
                ..AttrsRef::from(u)
            };
            let attrs = match &self.last_attrs {
                Some(a) if wanted.matches(a) => Arc::clone(a),
                _ => {
                    let a = rib.intern(&wanted);
                    self.last_attrs = Some(Arc::clone(&a));
                    a
                }
            };
            // One route into the RIB, past the per-peer and per-prefix
            // limits (each drop counted).
            let mut put = |peer: &PeerInfo, prefix: AnyPrefix, path_id: u32| {
                if over_limit(peer, prefix, path_id) {
                    dropped += 1;
                } else if !rib.announce(peer, prefix, path_id, &attrs)? {
                    full.get_or_insert(prefix);
                    prefix_full += 1;
                }
                Ok::<(), RibError>(())
            };
            if !nlri.is_empty() {
                let Some(peer) = peer_of(own, class)? else {
                    no_peer += nlri.len() as u64;
                    continue;
                };
                for &(prefix, path_id) in nlri {
                    put(&peer, prefix, path_id)?;
                }
            }
            for &(rd, prefix, path_id) in vpn.unwrap_or(&[]) {
                let Some(peer) = peer_of(rd, NlriClass::Vpn)? else {
                    no_peer += 1;
                    continue;
                };
                put(&peer, prefix, path_id)?;
            }
        }
        let announced = u.announced.len() + u.labeled_announced.len() + u.vpn_announced.len();
        st.announced += (announced as u64).saturating_sub(dropped + no_peer + prefix_full);
        st.peers_over_limit += no_peer;
        let room = &mut self.rib_peers;
        for (i, (hit, what)) in [
            (
                room.over_limit,
                format!(
                    "RIB peers (RIB kinds x route distinguishers) reached their limit \
                     ({MAX_RIB_PEERS_PER_NEIGHBOUR} per neighbour, {} per session): routes \
                     needing another are dropped",
                    room.max.map_or("no limit".to_string(), |m| m.to_string())
                ),
            ),
            (
                room.registry_full,
                "the RIB's peer registry is full: routes needing a new RIB peer are dropped"
                    .to_string(),
            ),
        ]
        .into_iter()
        .enumerate()
        {
            if hit && !room.noted[i] {
                room.noted[i] = true;
                self.limit_notes.push(what);
            }
        }
        st.routes_prefix_full += prefix_full;
        if let Some(prefix) = full.filter(|_| !self.prefix_full_noted) {
            self.prefix_full_noted = true;
            self.limit_notes.push(format!(
                "prefix {prefix} holds the most routes a prefix may: new routes of \
                 full prefixes are dropped (first from peer {} AS{})",
                h.address, h.asn
            ));
        }
        if dropped > 0 {
            st.routes_over_limit += dropped;
            if !n.capped {
                n.capped = true;
                self.limit_notes.push(format!(
                    "peer {} AS{} ({}) reached {} routes: its new routes are dropped",
                    h.address,
                    h.asn,
                    rib_kind.as_str(),
                    max_routes.unwrap_or_default()
                ));
            }
        }
        Ok(())
    }

    /// Whether a new neighbour fits [`SessionLimits::max_peers`]; counts
    /// and notes (once) the ones that do not.
    fn room_for_neighbour(&mut self, h: &PeerHeader) -> bool {
        let Some(max) = self.limits.max_peers else {
            return true;
        };
        if self.neighbours.len() < max {
            return true;
        }
        self.stats.peers_over_limit += 1;
        if !self.peers_capped {
            self.peers_capped = true;
            self.limit_notes.push(format!(
                "{max} neighbours reached: messages of further ones (first: {} AS{}) are dropped",
                h.address, h.asn
            ));
        }
        false
    }
}

/// A later Peer Up of a known neighbour: its header and table name.
fn complete(n: &mut Neighbour, h: PeerHeader, table_name: Option<String>) {
    if let Some(t) = &table_name {
        for p in n.ribs.values() {
            let _ = p.table_name.set(t.clone());
        }
    }
    n.header = h;
    if table_name.is_some() {
        n.table_name = table_name;
    }
}

/// The most RIB peers one neighbour may have: its (RIB kind, route
/// distinguisher) pairs, VPN distinguishers included. Routes that would
/// need another are dropped and counted (`peers_over_limit`): one
/// neighbour's VPN routes with a new distinguisher each would otherwise
/// register a peer per route.
pub const MAX_RIB_PEERS_PER_NEIGHBOUR: usize = 4096;

/// The RIB peer of neighbour `n`'s routes of `kind` in the instance `rd`
/// that came as `class` NLRI, registered on first use; `None` past
/// [`MAX_RIB_PEERS_PER_NEIGHBOUR`].
fn rib_peer(
    rib: &Rib,
    (session, router): (u64, Option<IpAddr>),
    n: &mut Neighbour,
    kind: RibKind,
    rd: u64,
    class: NlriClass,
    room: &mut RibPeerRoom,
) -> Option<Arc<PeerInfo>> {
    if let Some(p) = n.ribs.get(&(kind, rd, class)) {
        return Some(Arc::clone(p));
    }
    if n.ribs.len() >= MAX_RIB_PEERS_PER_NEIGHBOUR || room.max.is_some_and(|m| room.used >= m) {
        room.over_limit = true;
        return None;
    }
    let hh = &n.header;
    // A full registry drops the routes (counted) rather than ending the
    // session: the router's other peers keep working.
    let Ok(p) = rib.add_peer_with(PeerInit {
        session,
        origin: PeerOrigin { router, class },
        key: PeerKey {
            // A VPN route belongs to its distinguisher's instance, never
            // to the global one: RD 0:0 from a global or Loc-RIB peer is
            // reported as an RD instance (peer type 1).
            peer_type: if class == NlriClass::Vpn && crate::instance::is_global(hh.peer_type, rd) {
                1
            } else {
                hh.peer_type
            },
            distinguisher: rd,
            address: hh.address,
            asn: hh.asn,
            bgp_id: hh.bgp_id,
            rib: kind,
        },
        ..PeerInit::default()
    }) else {
        room.registry_full = true;
        return None;
    };
    room.used += 1;
    if let Some(t) = &n.table_name {
        let _ = p.table_name.set(t.clone());
    }
    n.ribs.insert((kind, rd, class), Arc::clone(&p));
    Some(p)
}

/// A BGP OPEN inside a Peer Up: its length comes from its own header.
fn open_at(c: &mut Cur<'_>) -> Result<OpenCaps, WireError> {
    let at = c.at;
    let head = c.buf.get(..19).ok_or(WireError::Truncated {
        at,
        what: "BGP OPEN header",
        need: 19,
        have: c.left(),
    })?;
    let len = u16::from_be_bytes([head[16], head[17]]) as usize;
    let m = c.take(len.max(19), "BGP OPEN")?;
    wire::decode_open(m).map_err(|e| match e {
        WireError::Truncated {
            at: a,
            what,
            need,
            have,
        } => WireError::Truncated {
            at: at + a,
            what,
            need,
            have,
        },
        WireError::Malformed { at: a, what } => WireError::Malformed { at: at + a, what },
    })
}

#[cfg(test)]
mod tests;
