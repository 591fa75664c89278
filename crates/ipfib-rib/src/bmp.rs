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

use crate::attrs::AttrSet;
use crate::peers::{PeerInfo, PeerKey, RibKind};
use crate::rib::{Rib, RibError};
use crate::wire::{self, Cur, OpenCaps, Update, WireConfig, WireError};

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

    /// Which RIB the routes of a Route Monitoring message belong to;
    /// `None` for Adj-RIB-Out (RFC 8671 O flag), which the RIB does not
    /// keep.
    fn rib(&self) -> Option<RibKind> {
        if self.peer_type == 3 {
            return Some(RibKind::LocRib);
        }
        if self.flags & 0x10 != 0 {
            return None;
        }
        Some(if self.flags & 0x40 != 0 {
            RibKind::PostPolicy
        } else {
            RibKind::PrePolicy
        })
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

/// One monitored BGP neighbour of a session: what its Peer Up said, and
/// the RIB peer of each kind its routes went to.
struct Neighbour {
    header: PeerHeader,
    addpath_v4: bool,
    addpath_v6: bool,
    table_name: Option<String>,
    ribs: [Option<Arc<PeerInfo>>; 3],
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
    /// Adj-RIB-Out messages (RFC 8671), counted and not kept.
    pub adj_rib_out: u64,
    /// NLRI of other address families, skipped.
    pub skipped_families: u64,
    /// Messages of neighbours past [`SessionLimits::max_peers`], dropped.
    pub peers_over_limit: u64,
    /// Announcements of new routes past
    /// [`SessionLimits::max_routes_per_peer`], dropped.
    pub routes_over_limit: u64,
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
}

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
    rib: Arc<Rib>,
    neighbours: HashMap<NeighbourKey, Neighbour, foldhash::fast::RandomState>,
    update: Update,
    /// The attributes of the last UPDATE: consecutive UPDATEs often
    /// repeat them (one prefix per message from FRR), and a comparison is
    /// cheaper than interning.
    last_attrs: Option<Arc<AttrSet>>,
    pub stats: SessionStats,
    pub info: SessionInfo,
    pub limits: SessionLimits,
    /// A line per limit first reached (the caller logs and drains them).
    pub limit_notes: Vec<String>,
    peers_capped: bool,
}

fn tlv_string(v: &[u8]) -> String {
    String::from_utf8_lossy(v).into_owned()
}

impl Session {
    pub fn new(id: u64, rib: Arc<Rib>) -> Session {
        Session {
            id,
            rib,
            neighbours: HashMap::default(),
            update: Update::default(),
            last_attrs: None,
            stats: SessionStats::default(),
            info: SessionInfo::default(),
            limits: SessionLimits::default(),
            limit_notes: Vec::new(),
            peers_capped: false,
        }
    }

    /// The RIB peers this session created and that are still up.
    pub fn live_peers(&self) -> Vec<u32> {
        self.neighbours
            .values()
            .flat_map(|n| n.ribs.iter().flatten())
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
                            1 => self.info.sys_descr = Some(tlv_string(v)),
                            2 => self.info.sys_name = Some(tlv_string(v)),
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
                        for p in n.ribs.iter().flatten() {
                            self.rib.peer_down(p.id);
                        }
                    }
                    None => self.stats.peer_down_unknown += 1,
                }
                Ok(())
            }
            ROUTE_MONITORING => {
                let h = PeerHeader::parse(&mut c).map_err(trunc)?;
                let at = c.at;
                self.route_monitoring(h, c.buf).map_err(|e| match e {
                    BmpError::Bgp { source, .. } => BmpError::Bgp {
                        kind: kname,
                        at,
                        source,
                    },
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
                table_name = Some(tlv_string(v));
            }
        }
        // Adj-RIB-In: what the neighbour sent us (RFC 7911 §4: it may send,
        // the router may receive). Loc-RIB (RFC 9069 §5.2): the OPENs are
        // fabricated, and "the capability intent of advertise, receive or
        // both can be ignored since the presence of the capability
        // indicates enough that add-paths will be used".
        let negotiated = |afi| {
            if h.peer_type == 3 {
                sent.has_addpath(afi) || rcvd.has_addpath(afi)
            } else {
                wire::addpath_negotiated(&rcvd, &sent, afi)
            }
        };
        let key = h.neighbour();
        let (addpath_v4, addpath_v6) = (negotiated(1), negotiated(2));
        if !self.neighbours.contains_key(&key) && !self.room_for_neighbour(&h) {
            return Ok(Ok(()));
        }
        match self.neighbours.get_mut(&key) {
            // Routes that came before the first Peer Up stay: this Peer Up
            // describes the session they belong to.
            // Routes that came before the first Peer Up stay when they were
            // decoded as this Peer Up says (same ADD-PATH): it completes
            // that neighbour. Decoded otherwise, they may be wrong: they go
            // (below), as for a neighbour replaced.
            Some(n)
                if n.provisional && (n.addpath_v4, n.addpath_v6) == (addpath_v4, addpath_v6) =>
            {
                n.provisional = false;
                if let Some(t) = &table_name {
                    for p in n.ribs.iter().flatten() {
                        let _ = p.table_name.set(t.clone());
                    }
                }
                n.header = h;
                n.table_name = table_name;
                return Ok(Ok(()));
            }
            // A Peer Up for a neighbour already up: the old one went down
            // without a Peer Down.
            Some(_) => {
                if let Some(old) = self.neighbours.remove(&key) {
                    for p in old.ribs.iter().flatten() {
                        self.rib.peer_down(p.id);
                    }
                }
            }
            None => {}
        }
        self.neighbours.insert(
            key,
            Neighbour {
                addpath_v4,
                addpath_v6,
                header: h,
                table_name,
                ribs: [None, None, None],
                provisional: false,
                capped: false,
            },
        );
        Ok(Ok(()))
    }

    fn route_monitoring(&mut self, h: PeerHeader, pdu: &[u8]) -> Result<(), BmpError> {
        let Some(rib_kind) = h.rib() else {
            self.stats.adj_rib_out += 1;
            return Ok(());
        };
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
                    addpath_v4: false,
                    addpath_v6: false,
                    table_name: None,
                    ribs: [None, None, None],
                    provisional: true,
                    capped: false,
                })
            }
        };
        let cfg = WireConfig {
            four_octet: !h.legacy_as_path(),
            addpath_v4: n.addpath_v4,
            addpath_v6: n.addpath_v6,
        };
        wire::decode_update(pdu, &cfg, &mut self.update).map_err(|source| BmpError::Bgp {
            kind: "route_monitoring",
            at: 0,
            source,
        })?;
        let u = &self.update;
        self.stats.skipped_families += u.skipped_families as u64;
        if u.end_of_rib {
            self.stats.end_of_rib += 1;
            return Ok(());
        }
        let slot = rib_kind.rank() as usize;
        let peer = match &n.ribs[slot] {
            Some(p) => Arc::clone(p),
            None => {
                let hh = &n.header;
                let p = self.rib.add_peer(
                    self.id,
                    PeerKey {
                        peer_type: hh.peer_type,
                        distinguisher: hh.distinguisher,
                        address: hh.address,
                        asn: hh.asn,
                        bgp_id: hh.bgp_id,
                        rib: rib_kind,
                    },
                )?;
                if let Some(t) = &n.table_name {
                    let _ = p.table_name.set(t.clone());
                }
                n.ribs[slot] = Some(Arc::clone(&p));
                p
            }
        };
        for &(prefix, path_id) in &u.withdrawn {
            self.rib.withdraw(&peer, prefix, path_id);
        }
        self.stats.withdrawn += u.withdrawn.len() as u64;
        let (mp, conventional) = u.announced.split_at(u.mp_announced);
        for (nlri, next_hop) in [(mp, u.next_hop_mp), (conventional, u.next_hop_v4)] {
            if nlri.is_empty() {
                continue;
            }
            let wanted = crate::attrs::AttrsRef {
                next_hop,
                ..u.attrs()
            };
            let attrs = match &self.last_attrs {
                Some(a) if wanted.matches(a) => Arc::clone(a),
                _ => {
                    let a = self.rib.intern(&wanted);
                    self.last_attrs = Some(Arc::clone(&a));
                    a
                }
            };
            for &(prefix, path_id) in nlri {
                if let Some(max) = self.limits.max_routes_per_peer {
                    if peer.routes.load(std::sync::atomic::Ordering::Relaxed) >= max
                        && !self
                            .rib
                            .routes(&prefix)
                            .iter()
                            .any(|r| r.peer.id == peer.id && r.path_id == path_id)
                    {
                        self.stats.routes_over_limit += 1;
                        if !n.capped {
                            n.capped = true;
                            self.limit_notes.push(format!(
                                "peer {} AS{} ({}) reached {max} routes: its new routes are dropped",
                                h.address,
                                h.asn,
                                rib_kind.as_str()
                            ));
                        }
                        continue;
                    }
                }
                self.rib.announce(&peer, prefix, path_id, &attrs)?;
            }
        }
        self.stats.announced += u.announced.len() as u64;
        Ok(())
    }
}

impl Session {
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
