//! BGP message decoding for a collector: UPDATE (RFC 4271 §4.3) with
//! MP_REACH/MP_UNREACH (RFC 4760), 4-byte ASNs and AS4_PATH (RFC 6793),
//! ADD-PATH (RFC 7911), communities (RFC 1997) and large communities
//! (RFC 8092); OPEN capabilities (RFC 5492, RFC 9072 extended optional
//! parameters).
//!
//! A pure function of bytes: every length is checked before it is used,
//! nothing panics on any input (fuzzed), errors name the byte offset
//! within the BGP message. Unicast, labeled-unicast (SAFI 4, RFC 8277)
//! and VPN (SAFI 128, RFC 4364) IPv4 and IPv6 NLRI become routes (VPN
//! routes with their route distinguisher); other address families are
//! counted and skipped.
//!
//! Errors in path attributes are handled as RFC 7606 says: the UPDATE's
//! routes withdrawn ("treat-as-withdraw"), the attribute ignored
//! ("attribute discard"), each noted in [`Update::errors`]; only errors
//! that keep the NLRI from being located end the decoding with an error
//! ("session reset").

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipfib::prefix::{AnyPrefix, Prefix};

use crate::attrs::{AsPath, Origin, AS_SEQUENCE, AS_SET};

/// How a session encodes its UPDATEs, decided from the BMP per-peer header
/// and the Peer Up OPENs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireConfig {
    /// AS_PATH carries 4-byte ASNs.
    pub four_octet: bool,
    /// NLRI carry RFC 7911 path identifiers.
    pub addpath_v4: bool,
    pub addpath_v6: bool,
    /// ADD-PATH for the other decoded families: bit [`family_bit`] of
    /// (AFI, SAFI) for SAFI 4 and 128.
    pub addpath_more: u8,
}

impl Default for WireConfig {
    fn default() -> Self {
        WireConfig {
            four_octet: true,
            addpath_v4: false,
            addpath_v6: false,
            addpath_more: 0,
        }
    }
}

impl WireConfig {
    /// Whether NLRI of (AFI, SAFI) carry path identifiers.
    pub fn addpath(&self, afi: u16, safi: u8) -> bool {
        match (afi, safi) {
            (1, 1) => self.addpath_v4,
            (2, 1) => self.addpath_v6,
            _ => family_bit(afi, safi).is_some_and(|b| self.addpath_more & (1 << b) != 0),
        }
    }
}

/// The address families decoded into routes, as bit numbers: IPv4 and
/// IPv6 unicast (0, 1), labeled unicast (2, 3), VPN (4, 5).
pub fn family_bit(afi: u16, safi: u8) -> Option<u8> {
    let a = match afi {
        1 => 0,
        2 => 1,
        _ => return None,
    };
    match safi {
        1 => Some(a),
        4 => Some(2 + a),
        128 => Some(4 + a),
        _ => None,
    }
}

/// What RFC 7606 has a receiver do about a malformed attribute (the third
/// action, "session reset", is a [`WireError`] from [`decode_update`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorAction {
    /// The attribute is ignored; the routes stand.
    AttributeDiscard,
    /// The UPDATE's announced routes are withdrawn instead.
    TreatAsWithdraw,
}

impl ErrorAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorAction::AttributeDiscard => "attribute-discard",
            ErrorAction::TreatAsWithdraw => "treat-as-withdraw",
        }
    }
}

/// One attribute error an UPDATE had (RFC 7606), with where it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrError {
    pub action: ErrorAction,
    /// Attribute type code (0 when the attribute header itself was bad).
    pub code: u8,
    /// Byte offset of the attribute within the BGP message.
    pub at: usize,
    pub what: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("BGP message truncated at byte {at}: {what} needs {need} bytes, {have} left")]
    Truncated {
        at: usize,
        what: &'static str,
        need: usize,
        have: usize,
    },
    #[error("BGP message at byte {at}: {what}")]
    Malformed { at: usize, what: String },
}

impl WireError {
    /// The error without the "BGP message" preamble, to nest in another.
    pub fn brief(&self) -> String {
        match self {
            WireError::Truncated {
                at,
                what,
                need,
                have,
            } => format!("{what} needs {need} bytes at byte {at}, {have} left"),
            WireError::Malformed { at, what } => format!("{what} at byte {at}"),
        }
    }
}

/// A cursor over a BGP message that knows its offset.
#[derive(Clone, Copy)]
pub(crate) struct Cur<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Cur<'a> {
    pub(crate) fn new(buf: &'a [u8], at: usize) -> Self {
        Cur { buf, at }
    }
    pub(crate) fn left(&self) -> usize {
        self.buf.len()
    }
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if n > self.buf.len() {
            return Err(WireError::Truncated {
                at: self.at,
                what,
                need: n,
                have: self.buf.len(),
            });
        }
        let (h, t) = self.buf.split_at(n);
        self.buf = t;
        self.at += n;
        Ok(h)
    }
    pub(crate) fn sub(&mut self, n: usize, what: &'static str) -> Result<Cur<'a>, WireError> {
        let at = self.at;
        Ok(Cur::new(self.take(n, what)?, at))
    }
    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.take(1, what)?[0])
    }
    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn bad(&self, what: impl Into<String>) -> WireError {
        WireError::Malformed {
            at: self.at,
            what: what.into(),
        }
    }
}

/// BGP message types.
pub const OPEN: u8 = 1;
pub const UPDATE: u8 = 2;

/// The BGP header (marker, length, type): the body and the type.
pub(crate) fn bgp_message(buf: &[u8]) -> Result<(u8, Cur<'_>, usize), WireError> {
    let mut c = Cur::new(buf, 0);
    let marker = c.take(16, "BGP marker")?;
    if marker.iter().any(|&b| b != 0xff) {
        return Err(WireError::Malformed {
            at: 0,
            what: "BGP marker is not all ones".into(),
        });
    }
    let len = c.u16("BGP length")? as usize;
    let kind = c.u8("BGP type")?;
    if len < 19 || len > buf.len() {
        return Err(WireError::Malformed {
            at: 16,
            what: format!("BGP length {len} outside 19..={}", buf.len()),
        });
    }
    let body = Cur::new(&buf[19..len], 19);
    Ok((kind, body, len))
}

/// Capabilities of one OPEN that decide how UPDATEs are encoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenCaps {
    pub asn: u32,
    pub bgp_id: u32,
    pub four_octet: bool,
    /// (AFI, SAFI, send/receive bits: 1 receive, 2 send) per RFC 7911.
    pub addpath: Vec<(u16, u8, u8)>,
    /// Multiprotocol capabilities (RFC 4760 §8): (AFI, SAFI).
    pub families: Vec<(u16, u8)>,
}

impl OpenCaps {
    /// Whether the OPEN carries an ADD-PATH entry for `afi` unicast with
    /// any valid send/receive value (1-3; RFC 7911 defines no 0).
    pub fn has_addpath(&self, afi: u16) -> bool {
        self.addpath
            .iter()
            .any(|&(a, s, d)| a == afi && s == 1 && d != 0)
    }

    /// As [`OpenCaps::has_addpath`], for any SAFI.
    pub fn has_addpath_safi(&self, afi: u16, safi: u8) -> bool {
        self.addpath
            .iter()
            .any(|&(a, s, d)| a == afi && s == safi && d != 0)
    }

    fn addpath_bits(&self, afi: u16, safi: u8) -> u8 {
        self.addpath
            .iter()
            .filter(|&&(a, s, _)| a == afi && s == safi)
            .fold(0, |acc, &(_, _, b)| acc | b)
    }

    /// The address families this OPEN is about: its multiprotocol
    /// capabilities, or IPv4 unicast without any (RFC 4760 §8), plus
    /// every family it has an ADD-PATH entry for.
    pub fn families(&self) -> Vec<(u16, u8)> {
        let mut f = self.families.clone();
        if f.is_empty() {
            f.push((1, 1));
        }
        f.extend(self.addpath.iter().map(|&(a, s, _)| (a, s)));
        f.sort_unstable();
        f.dedup();
        f
    }
}

/// Decode a BGP OPEN (whole message, header included).
pub fn decode_open(buf: &[u8]) -> Result<OpenCaps, WireError> {
    let (kind, mut c, _) = bgp_message(buf)?;
    if kind != OPEN {
        return Err(c.bad(format!("expected an OPEN (type 1), got type {kind}")));
    }
    let version = c.u8("OPEN version")?;
    if version != 4 {
        return Err(c.bad(format!("BGP version {version}, expected 4")));
    }
    let mut caps = OpenCaps {
        asn: c.u16("OPEN my AS")? as u32,
        ..OpenCaps::default()
    };
    c.u16("OPEN hold time")?;
    caps.bgp_id = c.u32("OPEN BGP identifier")?;
    let short_len = c.u8("OPEN optional parameters length")? as usize;
    // RFC 9072: a length of 255 followed by type 255 means extended
    // (two-byte) lengths.
    let extended = short_len == 255 && c.buf.first() == Some(&255);
    let mut params = if extended {
        c.u8("extended parameters marker")?;
        let n = c.u16("extended parameters length")? as usize;
        c.sub(n, "optional parameters")?
    } else {
        c.sub(short_len, "optional parameters")?
    };
    // RFC 4271 §4.2: the optional parameters end the OPEN; bytes after
    // them mean its length lies (in a BMP Peer Up, it would shift the
    // next OPEN or swallow the TLVs).
    if c.left() != 0 {
        return Err(c.bad(format!("{} bytes after the optional parameters", c.left())));
    }
    while params.left() > 0 {
        let ptype = params.u8("parameter type")?;
        let plen = if extended {
            params.u16("parameter length")? as usize
        } else {
            params.u8("parameter length")? as usize
        };
        let mut p = params.sub(plen, "parameter value")?;
        if ptype != 2 {
            continue;
        }
        while p.left() > 0 {
            let code = p.u8("capability code")?;
            let clen = p.u8("capability length")? as usize;
            let mut v = p.sub(clen, "capability value")?;
            match code {
                1 if clen == 4 => {
                    let afi = v.u16("multiprotocol AFI")?;
                    v.u8("multiprotocol reserved")?;
                    let safi = v.u8("multiprotocol SAFI")?;
                    caps.families.push((afi, safi));
                }
                65 => {
                    caps.four_octet = true;
                    caps.asn = v.u32("4-octet AS capability")?;
                }
                69 => {
                    while v.left() > 0 {
                        let afi = v.u16("ADD-PATH AFI")?;
                        let safi = v.u8("ADD-PATH SAFI")?;
                        let dir = v.u8("ADD-PATH send/receive")?;
                        caps.addpath.push((afi, safi, dir & 3));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(caps)
}

/// Whether routes in UPDATEs that `sender` sent to `receiver` carry path
/// identifiers for `afi` unicast: the sender may send and the receiver may
/// receive (RFC 7911 §4).
pub fn addpath_negotiated(sender: &OpenCaps, receiver: &OpenCaps, afi: u16) -> bool {
    addpath_negotiated_safi(sender, receiver, afi, 1)
}

/// As [`addpath_negotiated`], for any SAFI.
pub fn addpath_negotiated_safi(sender: &OpenCaps, receiver: &OpenCaps, afi: u16, safi: u8) -> bool {
    sender.addpath_bits(afi, safi) & 2 != 0 && receiver.addpath_bits(afi, safi) & 1 != 0
}

/// One decoded UPDATE, in buffers reused from message to message.
#[derive(Default, Debug)]
pub struct Update {
    /// Announced (prefix, path id): unicast.
    pub announced: Vec<(AnyPrefix, u32)>,
    /// How many of `announced`, the first ones, came from MP_REACH_NLRI
    /// (they take its next hop; the rest, conventional IPv4 NLRI, take
    /// NEXT_HOP's: RFC 4760 §3, RFC 4271 §5.1.3).
    pub mp_announced: usize,
    /// Withdrawn (prefix, path id).
    pub withdrawn: Vec<(AnyPrefix, u32)>,
    /// VPN routes (RFC 4364) announced: (route distinguisher, prefix,
    /// path id); they take MP_REACH's next hop.
    pub vpn_announced: Vec<(u64, AnyPrefix, u32)>,
    pub vpn_withdrawn: Vec<(u64, AnyPrefix, u32)>,
    /// Labeled unicast (SAFI 4, RFC 8277) announced and withdrawn: a
    /// family of its own (the same prefix may be a unicast route of the
    /// same peer too), taking MP_REACH's next hop.
    pub labeled_announced: Vec<(AnyPrefix, u32)>,
    pub labeled_withdrawn: Vec<(AnyPrefix, u32)>,
    /// AS path in [`AsPath`]'s encoding.
    pub as_path: Vec<u32>,
    pub communities: Vec<u32>,
    pub large_communities: Vec<[u32; 3]>,
    pub next_hop_v4: Option<IpAddr>,
    pub next_hop_mp: Option<IpAddr>,
    pub origin: Origin,
    pub med: Option<u32>,
    pub local_pref: Option<u32>,
    /// MP_REACH/MP_UNREACH attributes of address families not decoded
    /// (neither unicast, labeled unicast nor VPN), skipped.
    pub skipped_families: u32,
    /// NLRI decoded from labeled-unicast (SAFI 4) and VPN (SAFI 128)
    /// attributes.
    pub labeled_nlri: u32,
    pub vpn_nlri: u32,
    /// End-of-RIB marker (RFC 4724 §2): an UPDATE with no withdrawn
    /// routes, no attributes and no NLRI, or one whose only content is an
    /// MP_UNREACH with AFI and SAFI alone.
    pub end_of_rib: bool,
    /// Attribute errors (RFC 7606) that did not end the decoding.
    pub errors: Vec<AttrError>,
    /// An error asked for "treat-as-withdraw": every announced route
    /// (conventional and MP_REACH) has been moved to the withdrawn lists.
    pub treat_as_withdraw: bool,
    as4_path: Vec<u32>,
}

impl Update {
    fn clear(&mut self) {
        self.announced.clear();
        self.mp_announced = 0;
        self.withdrawn.clear();
        self.vpn_announced.clear();
        self.vpn_withdrawn.clear();
        self.labeled_announced.clear();
        self.labeled_withdrawn.clear();
        self.as_path.clear();
        self.as4_path.clear();
        self.communities.clear();
        self.large_communities.clear();
        self.next_hop_v4 = None;
        self.next_hop_mp = None;
        self.origin = Origin::Igp;
        self.med = None;
        self.local_pref = None;
        self.skipped_families = 0;
        self.labeled_nlri = 0;
        self.vpn_nlri = 0;
        self.end_of_rib = false;
        self.errors.clear();
        self.treat_as_withdraw = false;
    }

    fn error(&mut self, action: ErrorAction, code: u8, at: usize, what: String) {
        // Bounded: one entry per attribute at most, and a message holds
        // at most 65,535 bytes; keep the first few for the logs.
        if self.errors.len() < 16 {
            self.errors.push(AttrError {
                action,
                code,
                at,
                what,
            });
        }
        if action == ErrorAction::TreatAsWithdraw {
            self.treat_as_withdraw = true;
        }
    }

    /// The attributes as the RIB interns them (the next hop that goes
    /// with the announced family: MP_REACH's when present; an UPDATE with
    /// both kinds of NLRI needs both, see `mp_announced`).
    pub fn attrs(&self) -> crate::attrs::AttrsRef<'_> {
        crate::attrs::AttrsRef {
            as_path: &self.as_path,
            communities: &self.communities,
            large_communities: &self.large_communities,
            next_hop: self.next_hop_mp.or(self.next_hop_v4),
            origin: self.origin,
            med: self.med,
            local_pref: self.local_pref,
        }
    }
}

/// How the NLRI of a family are encoded.
#[derive(Clone, Copy)]
struct NlriKind {
    afi: u16,
    addpath: bool,
    /// A label stack precedes the prefix (SAFI 4 and 128).
    labeled: bool,
    /// A route distinguisher follows the labels (SAFI 128).
    vpn: bool,
    /// In MP_UNREACH: one 3-byte label field, whatever its bottom-of-stack
    /// bit (RFC 8277 §2.4).
    withdraw: bool,
}

/// Read NLRI (RFC 4271 §4.3, RFC 7911 §3, RFC 8277 §2, RFC 4364 §4.3.4)
/// into `push(rd, prefix, path id)`.
fn nlri_with(
    mut c: Cur<'_>,
    k: NlriKind,
    mut push: impl FnMut(u64, AnyPrefix, u32),
) -> Result<(), WireError> {
    while c.left() > 0 {
        let path_id = if k.addpath {
            c.u32("path identifier")?
        } else {
            0
        };
        let at = c.at;
        let mut bits = c.u8("prefix length")? as usize;
        if k.labeled {
            loop {
                if bits < 24 {
                    return Err(WireError::Malformed {
                        at,
                        what: format!("prefix length {bits} leaves no room for a label"),
                    });
                }
                let l = c.take(3, "label")?;
                bits -= 24;
                if k.withdraw || l[2] & 1 != 0 {
                    break;
                }
            }
        }
        let mut rd = 0;
        if k.vpn {
            if bits < 64 {
                return Err(WireError::Malformed {
                    at,
                    what: format!("prefix length {bits} leaves no room for a route distinguisher"),
                });
            }
            let b = c.take(8, "route distinguisher")?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            rd = u64::from_be_bytes(a);
            bits -= 64;
        }
        let max = if k.afi == 1 { 32 } else { 128 };
        if bits > max {
            return Err(WireError::Malformed {
                at,
                what: format!("prefix length {bits} > {max}"),
            });
        }
        let len = bits as u8;
        let bytes = c.take(bits.div_ceil(8), "prefix")?;
        // Host bits past the length are masked, as RFC 4271 says they are
        // irrelevant.
        let prefix = if k.afi == 1 {
            let mut a = [0u8; 4];
            a[..bytes.len()].copy_from_slice(bytes);
            Prefix::new_masked(u32::from_be_bytes(a), len).map(AnyPrefix::V4)
        } else {
            let mut a = [0u8; 16];
            a[..bytes.len()].copy_from_slice(bytes);
            Prefix::new_masked(u128::from_be_bytes(a), len).map(AnyPrefix::V6)
        };
        let prefix = prefix.map_err(|e| WireError::Malformed {
            at,
            what: e.to_string(),
        })?;
        push(rd, prefix, path_id);
    }
    Ok(())
}

/// Read unicast NLRI of `afi` into `out`.
fn nlri(
    c: Cur<'_>,
    afi: u16,
    addpath: bool,
    out: &mut Vec<(AnyPrefix, u32)>,
) -> Result<(), WireError> {
    let k = NlriKind {
        afi,
        addpath,
        labeled: false,
        vpn: false,
        withdraw: false,
    };
    nlri_with(c, k, |_, p, id| out.push((p, id)))
}

fn as_path(mut c: Cur<'_>, four: bool, out: &mut Vec<u32>) -> Result<(), WireError> {
    while c.left() > 0 {
        let kind = c.u8("AS_PATH segment type")?;
        if !(1..=4).contains(&kind) {
            return Err(c.bad(format!("AS_PATH segment type {kind}")));
        }
        let n = c.u8("AS_PATH segment length")? as usize;
        if n == 0 {
            return Err(c.bad("AS_PATH segment of length 0"));
        }
        out.push(((kind as u32) << 16) | n as u32);
        for _ in 0..n {
            out.push(if four {
                c.u32("AS number")?
            } else {
                c.u16("AS number")? as u32
            });
        }
    }
    Ok(())
}

/// RFC 6793 §4.2.3: a 2-byte session's AS_PATH (with AS_TRANS) and
/// AS4_PATH combined: the leading ASNs of AS_PATH that AS4_PATH does not
/// cover, then AS4_PATH. Counts treat a set as one ASN.
fn merge_as4(as_path: &[u32], as4: &[u32]) -> Vec<u32> {
    let p = AsPath(std::sync::Arc::from(as_path));
    let p4 = AsPath(std::sync::Arc::from(as4));
    let (n2, n4) = (p.selection_len(), p4.selection_len());
    if n2 < n4 {
        return as_path.to_vec();
    }
    let mut keep = n2 - n4;
    let mut out = Vec::new();
    for s in p.segments() {
        if keep == 0 {
            break;
        }
        match s.kind {
            AS_SEQUENCE => {
                let k = (keep as usize).min(s.asns.len());
                out.push(((AS_SEQUENCE as u32) << 16) | k as u32);
                out.extend_from_slice(&s.asns[..k]);
                keep -= k as u32;
            }
            AS_SET => {
                out.push(((AS_SET as u32) << 16) | s.asns.len() as u32);
                out.extend_from_slice(s.asns);
                keep -= 1;
            }
            _ => {
                out.push(((s.kind as u32) << 16) | s.asns.len() as u32);
                out.extend_from_slice(s.asns);
            }
        }
    }
    // AS4_PATH continues the kept part: a sequence meeting a sequence
    // is one (as every other decoder shows the merged path).
    let last_seq = AsPath(std::sync::Arc::from(&out[..]))
        .segments()
        .last()
        .filter(|s| s.kind == AS_SEQUENCE)
        .map(|s| s.asns.len());
    match (last_seq, as4.first()) {
        (Some(n), Some(&h)) if h >> 16 == u32::from(AS_SEQUENCE) => {
            let head = out.len() - n - 1;
            let joined = n as u32 + (h & 0xffff);
            out[head] = (u32::from(AS_SEQUENCE) << 16) | joined;
            out.extend_from_slice(&as4[1..]);
        }
        _ => out.extend_from_slice(as4),
    }
    out
}

fn next_hop(c: &mut Cur<'_>, afi: u16) -> Result<Option<IpAddr>, WireError> {
    let at = c.at;
    let n = c.u8("next hop length")? as usize;
    let nh = c.take(n, "next hop")?;
    Ok(match n {
        0 => None,
        4 => Some(IpAddr::V4(Ipv4Addr::new(nh[0], nh[1], nh[2], nh[3]))),
        // IPv6 global, or global + link-local (RFC 2545 §3): the global.
        16 | 32 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&nh[..16]);
            Some(IpAddr::V6(Ipv6Addr::from(a)))
        }
        // RFC 8950 / VPN forms with a route distinguisher: the address
        // after the 8-byte RD.
        12 => Some(IpAddr::V4(Ipv4Addr::new(nh[8], nh[9], nh[10], nh[11]))),
        24 | 48 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&nh[8..24]);
            Some(IpAddr::V6(Ipv6Addr::from(a)))
        }
        _ => {
            return Err(WireError::Malformed {
                at,
                what: format!("next hop length {n} for AFI {afi}"),
            })
        }
    })
}

/// The Optional and Transitive flag bits an attribute must have (RFC 4271
/// §5, RFC 1997, RFC 4760, RFC 6793, RFC 8092), for the types decoded.
fn expected_flags(code: u8) -> Option<u8> {
    Some(match code {
        1 | 2 | 3 | 5 | 6 => 0x40,
        4 | 9 | 10 | 14 | 15 => 0x80,
        7 | 8 | 17 | 18 | 32 => 0xc0,
        _ => return None,
    })
}

/// The RFC 7606 action for a malformed attribute of type `code`.
fn action_for(code: u8) -> ErrorAction {
    match code {
        // §7.6, §7.7; RFC 6793 §6 for AS4_PATH and AS4_AGGREGATOR.
        6 | 7 | 17 | 18 => ErrorAction::AttributeDiscard,
        // §7.1-7.5, 7.8-7.10, RFC 8092 §6; §3(c) for flag errors.
        _ => ErrorAction::TreatAsWithdraw,
    }
}

/// Where path attributes come from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// An UPDATE; whether conventional NLRI follow the attributes.
    Update { nlri_follow: bool },
    /// An MRT RIB entry (RFC 6396 §4.3.4): no NLRI around them.
    RibEntry,
}

/// What the attribute walk tells the rest of an UPDATE's decoding.
struct AttrScan {
    /// Attribute types present.
    seen: [bool; 256],
    /// An MP_UNREACH with AFI and SAFI alone (End-of-RIB, RFC 4724 §2).
    mp_unreach_empty: bool,
}

/// Walk path attributes into `u` (RFC 4271 §4.3, 4760, 6793, 1997, 8092),
/// handling errors as RFC 7606 says (see [`decode_update`]); the one
/// attribute decoder of BMP's UPDATEs and MRT's RIB entries.
fn attributes(
    mut attrs: Cur<'_>,
    cfg: &WireConfig,
    form: Form,
    u: &mut Update,
) -> Result<AttrScan, WireError> {
    let mut mp_unreach_empty = false;
    let mut mp_seen = false;
    let mut seen = [false; 256];
    while attrs.left() > 0 {
        let start = attrs.at;
        // RFC 7606 §4: an attribute header or length that overruns the
        // path attributes. The NLRI field is still where the total length
        // says; MP_REACH NLRI are located only if it came before.
        // Its type, for the message should it overrun.
        let code_here = attrs.buf.get(1).copied();
        let header = (|| {
            let flags = attrs.u8("attribute flags")?;
            let code = attrs.u8("attribute type")?;
            let len = if flags & 0x10 != 0 {
                attrs.u16("attribute length")? as usize
            } else {
                attrs.u8("attribute length")? as usize
            };
            let v = attrs.sub(len, "attribute value")?;
            Ok::<_, WireError>((flags, code, len, v))
        })();
        let (flags, code, len, mut v) = match header {
            Ok(h) => h,
            Err(e) => {
                // No NLRI to withdraw (a RIB entry has none around it):
                // nothing to save.
                let nlri_follow = matches!(form, Form::Update { nlri_follow: true });
                if form == Form::RibEntry {
                    return Err(WireError::Malformed {
                        at: start,
                        what: match code_here {
                            Some(code) => {
                                format!("attribute {code} runs past the end: {}", e.brief())
                            }
                            None => format!("a path attribute runs past the end: {}", e.brief()),
                        },
                    });
                }
                if !mp_seen && !nlri_follow {
                    return Err(e);
                }
                u.error(
                    ErrorAction::TreatAsWithdraw,
                    0,
                    start,
                    format!("path attributes overrun: {}", e.brief()),
                );
                break;
            }
        };
        // RFC 7606 §3(g): a repeated attribute is discarded after the
        // first; MP_REACH / MP_UNREACH repeated reset the session (§3(e)).
        if std::mem::replace(&mut seen[code as usize], true) {
            if code == 14 || code == 15 {
                return Err(WireError::Malformed {
                    at: start,
                    what: format!("attribute {code} repeated"),
                });
            }
            u.error(
                ErrorAction::AttributeDiscard,
                code,
                start,
                format!("attribute {code} repeated"),
            );
            continue;
        }
        // §3(c): Optional/Transitive bits that contradict the type.
        if let Some(want) = expected_flags(code) {
            if flags & 0xc0 != want {
                u.error(
                    action_for(code),
                    code,
                    start,
                    format!("attribute {code} flags {flags:#04x}, expected {want:#04x}"),
                );
                // The MP attributes are still read: their NLRI must be
                // located to be withdrawn.
                if code != 14 && code != 15 {
                    continue;
                }
            }
        }
        // Attribute lengths (RFC 7606 §7): fixed or a multiple.
        let len_ok = match code {
            1 => len == 1,
            3 | 4 | 5 | 9 => len == 4,
            6 => len == 0,
            7 => len == if cfg.four_octet { 8 } else { 6 },
            18 => len == 8,
            8 | 10 => len > 0 && len % 4 == 0,
            32 => len > 0 && len % 12 == 0,
            _ => true,
        };
        if !len_ok {
            u.error(
                action_for(code),
                code,
                start,
                format!("attribute {code} length {len}"),
            );
            continue;
        }
        match code {
            1 => {
                let o = v.u8("ORIGIN")?;
                match Origin::from_wire(o) {
                    Some(x) => u.origin = x,
                    None => u.error(action_for(1), 1, start, format!("ORIGIN {o}")),
                }
            }
            2 => {
                if let Err(e) = as_path(v, cfg.four_octet, &mut u.as_path) {
                    u.as_path.clear();
                    u.error(action_for(2), 2, start, format!("AS_PATH: {}", e.brief()));
                }
            }
            3 => {
                let b = v.take(4, "NEXT_HOP")?;
                u.next_hop_v4 = Some(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3])));
            }
            4 => u.med = Some(v.u32("MULTI_EXIT_DISC")?),
            5 => u.local_pref = Some(v.u32("LOCAL_PREF")?),
            8 => {
                while v.left() > 0 {
                    u.communities.push(v.u32("community")?);
                }
            }
            // A RIB entry's MP_REACH carries the next hop alone (RFC 6396
            // §4.3.4, unless a writer kept the whole attribute: it then
            // begins with an AFI, whose first byte is 0, where the
            // abbreviated form has the next hop's length); MP_UNREACH
            // means nothing there.
            14 if form == Form::RibEntry => {
                u.next_hop_mp = match v.buf {
                    [0] => None,
                    [0, ..] => {
                        let afi = v.u16("MP_REACH AFI")?;
                        v.u8("MP_REACH SAFI")?;
                        next_hop(&mut v, afi)?
                    }
                    _ => next_hop(&mut v, 0)?,
                };
            }
            15 if form == Form::RibEntry => {}
            14 | 15 => {
                mp_seen = true;
                let reach = code == 14;
                let afi = v.u16("MP_REACH/MP_UNREACH AFI")?;
                let safi = v.u8("MP_REACH/MP_UNREACH SAFI")?;
                if family_bit(afi, safi).is_none() {
                    u.skipped_families += 1;
                    continue;
                }
                if reach {
                    u.next_hop_mp = next_hop(&mut v, afi)?;
                    v.u8("MP_REACH reserved")?;
                } else if v.left() == 0 {
                    mp_unreach_empty = true;
                }
                let k = NlriKind {
                    afi,
                    addpath: cfg.addpath(afi, safi),
                    labeled: safi != 1,
                    vpn: safi == 128,
                    withdraw: !reach,
                };
                let (mut labeled, mut vpn) = (0u32, 0u32);
                if safi == 128 {
                    let out = if reach {
                        &mut u.vpn_announced
                    } else {
                        &mut u.vpn_withdrawn
                    };
                    nlri_with(v, k, |rd, p, id| {
                        vpn += 1;
                        out.push((rd, p, id))
                    })?;
                } else if safi == 4 {
                    let out = if reach {
                        &mut u.labeled_announced
                    } else {
                        &mut u.labeled_withdrawn
                    };
                    nlri_with(v, k, |_, p, id| {
                        labeled += 1;
                        out.push((p, id))
                    })?;
                } else {
                    let out = if reach {
                        &mut u.announced
                    } else {
                        &mut u.withdrawn
                    };
                    nlri_with(v, k, |_, p, id| out.push((p, id)))?;
                    if reach {
                        u.mp_announced = u.announced.len();
                    }
                }
                u.labeled_nlri += labeled;
                u.vpn_nlri += vpn;
            }
            17 => {
                // A 4-byte session's AS_PATH is already complete (RFC 6793
                // §4.1: AS4_PATH from a NEW speaker is ignored).
                if let Err(e) = as_path(v, true, &mut u.as4_path) {
                    u.as4_path.clear();
                    u.error(
                        action_for(17),
                        17,
                        start,
                        format!("AS4_PATH: {}", e.brief()),
                    );
                }
            }
            32 => {
                while v.left() > 0 {
                    u.large_communities.push([
                        v.u32("large community")?,
                        v.u32("large community")?,
                        v.u32("large community")?,
                    ]);
                }
            }
            _ => {}
        }
    }
    Ok(AttrScan {
        seen,
        mp_unreach_empty,
    })
}

/// Decode the path attributes of an MRT RIB entry (RFC 6396 §4.3.4) into
/// `u`'s attribute fields: AS numbers of 4 bytes (TABLE_DUMP_V2) or 2
/// (TABLE_DUMP). An AS4_PATH is merged in either way (RFC 6793 §4.2.3: a
/// TABLE_DUMP_V2 AS_PATH still holds AS_TRANS where a collector stored
/// what a 2-byte peer sent; bgpkit-parser and mrtparse merge too). Errors as for an
/// UPDATE: an attribute that overruns the others is an `Err`; attribute
/// errors are in `u.errors`, and `u.treat_as_withdraw` says the route
/// must not be kept. Mandatory attributes are not required (dumps omit
/// NEXT_HOP for routes whose next hop is in MP_REACH).
pub fn decode_rib_entry_attrs(
    raw: &[u8],
    four_octet: bool,
    u: &mut Update,
) -> Result<(), WireError> {
    u.clear();
    let cfg = WireConfig {
        four_octet,
        ..WireConfig::default()
    };
    attributes(Cur::new(raw, 0), &cfg, Form::RibEntry, u)?;
    if !u.as4_path.is_empty() {
        u.as_path = merge_as4(&u.as_path, &u.as4_path);
    }
    Ok(())
}

/// Decode one UPDATE (whole message, header included) into `u`.
///
/// Errors (session reset, RFC 7606 §3-5): the message framing (lengths
/// that overrun the message, withdrawn routes or NLRI that cannot be
/// parsed), a repeated or unparsable MP_REACH/MP_UNREACH, an MP_REACH
/// next hop of a length that hides where its NLRI start. Every other
/// attribute error is noted in `u.errors` and handled by its action.
pub fn decode_update(buf: &[u8], cfg: &WireConfig, u: &mut Update) -> Result<(), WireError> {
    u.clear();
    let (kind, mut c, _) = bgp_message(buf)?;
    if kind != UPDATE {
        return Err(c.bad(format!("expected an UPDATE (type 2), got type {kind}")));
    }
    let wlen = c.u16("withdrawn routes length")? as usize;
    let withdrawn = c.sub(wlen, "withdrawn routes")?;
    nlri(withdrawn, 1, cfg.addpath_v4, &mut u.withdrawn)?;
    let alen = c.u16("path attributes length")? as usize;
    let attrs = c.sub(alen, "path attributes")?;
    let announced = c;
    let form = Form::Update {
        nlri_follow: announced.left() > 0,
    };
    let AttrScan {
        seen,
        mp_unreach_empty,
    } = attributes(attrs, cfg, form, u)?;
    nlri(announced, 1, cfg.addpath_v4, &mut u.announced)?;
    // §3(d): missing well-known mandatory attributes, when there are
    // routes to announce (NEXT_HOP only for conventional NLRI).
    let conventional = u.announced.len() > u.mp_announced;
    if !u.treat_as_withdraw
        && (!u.announced.is_empty()
            || !u.vpn_announced.is_empty()
            || !u.labeled_announced.is_empty())
    {
        let mut missing: Vec<&str> = Vec::new();
        if !seen[1] {
            missing.push("ORIGIN");
        }
        if !seen[2] {
            missing.push("AS_PATH");
        }
        if conventional && !seen[3] {
            missing.push("NEXT_HOP");
        }
        if !missing.is_empty() {
            u.error(
                ErrorAction::TreatAsWithdraw,
                0,
                19,
                format!("missing mandatory attributes: {}", missing.join(", ")),
            );
        }
    }
    if !cfg.four_octet && !u.as4_path.is_empty() {
        u.as_path = merge_as4(&u.as_path, &u.as4_path);
    }
    if u.treat_as_withdraw {
        let Update {
            announced,
            withdrawn,
            vpn_announced,
            vpn_withdrawn,
            labeled_announced,
            labeled_withdrawn,
            ..
        } = u;
        withdrawn.append(announced);
        vpn_withdrawn.append(vpn_announced);
        labeled_withdrawn.append(labeled_announced);
        u.mp_announced = 0;
    }
    u.end_of_rib = (wlen == 0 && alen == 0 && announced.left() == 0)
        || (mp_unreach_empty
            && u.announced.is_empty()
            && u.withdrawn.is_empty()
            && u.vpn_withdrawn.is_empty()
            && u.vpn_announced.is_empty()
            && u.labeled_withdrawn.is_empty()
            && u.labeled_announced.is_empty()
            && u.errors.is_empty());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Build a BGP message of `kind` around `body`.
    pub(crate) fn bgp(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![0xff; 16];
        m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
        m.push(kind);
        m.extend_from_slice(body);
        m
    }

    fn attr(flags: u8, code: u8, v: &[u8]) -> Vec<u8> {
        let mut a = vec![flags, code];
        if flags & 0x10 != 0 {
            a.extend_from_slice(&(v.len() as u16).to_be_bytes());
        } else {
            a.push(v.len() as u8);
        }
        a.extend_from_slice(v);
        a
    }

    #[test]
    fn ipv4_update_with_attributes() {
        let mut attrs = attr(0x40, 1, &[0]);
        attrs.extend(attr(0x40, 2, &[2, 2, 0, 0, 0xfd, 0xe8, 0, 0, 0x34, 0x17]));
        attrs.extend(attr(0x40, 3, &[192, 0, 2, 1]));
        attrs.extend(attr(0xc0, 8, &[0xfd, 0xe9, 0, 100]));
        attrs.extend(attr(0xc0, 32, &[0, 0, 0xfd, 0xe9, 0, 0, 0, 1, 0, 0, 0, 2]));
        let mut body = vec![0, 0];
        body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        body.extend(attrs);
        body.extend([24, 198, 51, 100, 0]);
        let m = bgp(UPDATE, &body);
        let mut u = Update::default();
        decode_update(&m, &WireConfig::default(), &mut u).unwrap();
        assert_eq!(u.announced.len(), 2);
        assert_eq!(u.announced[0].0.to_string(), "198.51.100.0/24");
        assert_eq!(
            u.announced[1].0.to_string(),
            "0.0.0.0/0",
            "a /0 has no bytes"
        );
        assert_eq!(u.as_path, vec![(2 << 16) | 2, 65000, 13335]);
        assert_eq!(u.next_hop_v4, Some("192.0.2.1".parse().unwrap()));
        assert_eq!(u.communities, vec![(65001 << 16) | 100]);
        assert_eq!(u.large_communities, vec![[65001, 1, 2]]);
        assert!(!u.end_of_rib);
    }

    /// MRT RIB entries (RFC 6396 §4.3.4): MP_REACH abbreviated to its next
    /// hop, or kept whole by some writers; 2-byte AS paths merged with
    /// AS4_PATH; no mandatory attributes required.
    #[test]
    fn rib_entry_attributes() {
        let v6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let mut short = vec![16];
        short.extend_from_slice(&v6.octets());
        let mut whole = vec![0, 2, 1, 16];
        whole.extend_from_slice(&v6.octets());
        whole.extend([0, 32, 0x20, 0x01, 0x0d, 0xb8]);
        let mut u = Update::default();
        for mp in [&short, &whole] {
            let mut a = attr(0x40, 1, &[0]);
            a.extend(attr(0x40, 2, &[2, 1, 0, 0, 0xfd, 0xe8]));
            a.extend(attr(0x80, 14, mp));
            decode_rib_entry_attrs(&a, true, &mut u).unwrap();
            assert_eq!(u.attrs().next_hop, Some(IpAddr::V6(v6)));
            assert_eq!(u.as_path, vec![(2 << 16) | 1, 65000]);
            assert!(u.announced.is_empty() && u.errors.is_empty());
        }
        // No next hop in it (a length byte of 0).
        decode_rib_entry_attrs(&attr(0x80, 14, &[0]), true, &mut u).unwrap();
        assert_eq!(u.attrs().next_hop, None);
        // 2-byte AS_PATH 65000 23456 (AS_TRANS) with AS4_PATH 196608.
        let mut a = attr(0x40, 2, &[2, 2, 0xfd, 0xe8, 0x5b, 0xa0]);
        a.extend(attr(0xc0, 17, &[2, 1, 0, 3, 0, 0]));
        decode_rib_entry_attrs(&a, false, &mut u).unwrap();
        assert_eq!(
            u.as_path,
            vec![(2 << 16) | 2, 65000, 196_608],
            "one sequence"
        );
        // An attribute running past the end is an error with its offset.
        let mut a = attr(0x40, 1, &[0]);
        a.extend([0x40, 2, 9, 1]);
        let e = decode_rib_entry_attrs(&a, true, &mut u).unwrap_err();
        assert!(e.to_string().contains("byte 4"), "{e}");
    }

    #[test]
    fn addpath_and_mp_reach_v6() {
        let mut mp = vec![0, 2, 1, 16];
        mp.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        mp.push(0);
        mp.extend([0, 0, 0, 7, 48, 0x20, 0x01, 0x0d, 0xb8, 0, 1]);
        let mut attrs = attr(0x40, 1, &[0]);
        attrs.extend(attr(0x40, 2, &[]));
        attrs.extend(attr(0x90, 14, &mp));
        let mut body = vec![0, 0];
        body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        body.extend(attrs);
        let m = bgp(UPDATE, &body);
        let cfg = WireConfig {
            addpath_v6: true,
            ..WireConfig::default()
        };
        let mut u = Update::default();
        decode_update(&m, &cfg, &mut u).unwrap();
        assert_eq!(u.announced, vec![("2001:db8:1::/48".parse().unwrap(), 7)]);
        assert_eq!(u.attrs().next_hop, Some("2001:db8::1".parse().unwrap()));
        // The same bytes without ADD-PATH are malformed (length 0 then a
        // prefix length of 0 is fine, but 7 bytes of path id are read as
        // prefixes): decoding must fail or differ, never panic.
        let r = decode_update(&m, &WireConfig::default(), &mut u);
        assert!(r.is_err() || u.announced != vec![("2001:db8:1::/48".parse().unwrap(), 7)]);
    }

    #[test]
    fn as4_path_merged_for_two_byte_sessions() {
        // AS_PATH 65000 23456 23456, AS4_PATH 400000 400001.
        let p = merge_as4(
            &[(2 << 16) | 3, 65000, 23456, 23456],
            &[(2 << 16) | 2, 400000, 400001],
        );
        assert_eq!(AsPath(p.into()).flat(), vec![65000, 400000, 400001]);
    }

    #[test]
    fn end_of_rib_and_errors_name_offsets() {
        let mut u = Update::default();
        decode_update(&bgp(UPDATE, &[0, 0, 0, 0]), &WireConfig::default(), &mut u).unwrap();
        assert!(u.end_of_rib);
        let e =
            decode_update(&bgp(UPDATE, &[0, 5, 0, 0]), &WireConfig::default(), &mut u).unwrap_err();
        assert!(matches!(e, WireError::Truncated { at: 21, .. }), "{e}");
        let e = decode_update(
            &bgp(UPDATE, &[0, 0, 0, 0, 33, 1, 2, 3, 4, 5]),
            &WireConfig::default(),
            &mut u,
        )
        .unwrap_err();
        assert!(e.to_string().contains("prefix length 33"), "{e}");
    }

    #[test]
    fn open_capabilities() {
        // version 4, AS 23456, hold 9, id 10.0.0.1, caps: 4-octet AS
        // 400000, ADD-PATH ipv4 unicast send+receive, ipv6 receive.
        let caps = [
            2u8, 16, 65, 4, 0, 6, 0x1a, 0x80, 69, 8, 0, 1, 1, 3, 0, 2, 1, 1,
        ];
        let mut body = vec![4, 0x5b, 0xa0, 0, 9, 10, 0, 0, 1, caps.len() as u8];
        body.extend(caps);
        let o = decode_open(&bgp(OPEN, &body)).unwrap();
        assert!(o.four_octet);
        assert_eq!(o.asn, 400000);
        assert_eq!(o.bgp_id, 0x0a000001);
        assert_eq!(o.addpath, vec![(1, 1, 3), (2, 1, 1)]);
        let peer = OpenCaps {
            addpath: vec![(1, 1, 2)],
            ..OpenCaps::default()
        };
        assert!(addpath_negotiated(&peer, &o, 1));
        assert!(!addpath_negotiated(&o, &peer, 1), "peer cannot receive");
        assert!(!addpath_negotiated(&peer, &o, 2));
    }

    /// An UPDATE with the usual attributes of an IPv4 route (ORIGIN,
    /// AS_PATH, NEXT_HOP, MED, COMMUNITIES), `replace` substituted by type
    /// code or appended, and `nlri`.
    fn upd(replace: &[(u8, u8, Vec<u8>)], nlri: &[u8]) -> Vec<u8> {
        let mut base: Vec<(u8, u8, Vec<u8>)> = vec![
            (0x40, 1, vec![0]),
            (0x40, 2, vec![2, 1, 0, 0, 0xfb, 0xf4]),
            (0x40, 3, vec![192, 0, 2, 1]),
            (0x80, 4, vec![0, 0, 0, 9]),
            (0xc0, 8, vec![0xfd, 0xe9, 0, 100]),
        ];
        for r in replace {
            match base.iter_mut().find(|a| a.1 == r.1) {
                Some(a) => *a = r.clone(),
                None => base.push(r.clone()),
            }
        }
        let attrs: Vec<u8> = base.iter().flat_map(|(f, c, v)| attr(*f, *c, v)).collect();
        let mut body = vec![0, 0];
        body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        body.extend(attrs);
        body.extend_from_slice(nlri);
        bgp(UPDATE, &body)
    }

    const NLRI: [u8; 4] = [24, 198, 51, 100];

    fn decode(m: &[u8]) -> (Result<(), WireError>, Update) {
        let mut u = Update::default();
        let r = decode_update(m, &WireConfig::default(), &mut u);
        (r, u)
    }

    /// The UPDATE decodes, its route is withdrawn instead of announced,
    /// and one error of `action` for attribute `code` is noted.
    fn expect(replace: (u8, u8, Vec<u8>), action: ErrorAction, code: u8) -> Update {
        let (r, u) = decode(&upd(&[replace], &NLRI));
        r.unwrap();
        assert_eq!(u.errors.len(), 1, "{:?}", u.errors);
        assert_eq!((u.errors[0].action, u.errors[0].code), (action, code));
        let p: AnyPrefix = "198.51.100.0/24".parse().unwrap();
        match action {
            ErrorAction::TreatAsWithdraw => {
                assert!(u.announced.is_empty() && u.treat_as_withdraw);
                assert_eq!(u.withdrawn, vec![(p, 0)]);
            }
            ErrorAction::AttributeDiscard => {
                assert!(!u.treat_as_withdraw && u.withdrawn.is_empty());
                assert_eq!(u.announced, vec![(p, 0)]);
            }
        }
        u
    }

    #[test]
    fn rfc7606_origin() {
        let taw = ErrorAction::TreatAsWithdraw;
        expect((0x40, 1, vec![3]), taw, 1);
        expect((0x40, 1, vec![0, 0]), taw, 1);
        expect((0x40, 1, vec![]), taw, 1);
    }

    #[test]
    fn rfc7606_as_path() {
        let taw = ErrorAction::TreatAsWithdraw;
        expect((0x40, 2, vec![2, 0]), taw, 2);
        expect((0x40, 2, vec![7, 1, 0, 0, 0, 1]), taw, 2);
        expect((0x40, 2, vec![2, 2, 0, 0, 0, 1]), taw, 2);
    }

    #[test]
    fn rfc7606_next_hop_med_local_pref() {
        let taw = ErrorAction::TreatAsWithdraw;
        expect((0x40, 3, vec![192, 0, 2]), taw, 3);
        expect((0x40, 3, vec![192, 0, 2, 1, 0]), taw, 3);
        expect((0x80, 4, vec![0, 0, 9]), taw, 4);
        expect((0x40, 5, vec![0, 100]), taw, 5);
    }

    #[test]
    fn rfc7606_atomic_aggregate_and_aggregator() {
        let discard = ErrorAction::AttributeDiscard;
        expect((0x40, 6, vec![1]), discard, 6);
        // A 4-byte session's AGGREGATOR is 8 bytes.
        expect((0xc0, 7, vec![0xfb, 0xf4, 192, 0, 2, 1]), discard, 7);
        let (r, u) = decode(&upd(
            &[(0xc0, 7, vec![0, 0, 0xfb, 0xf4, 192, 0, 2, 1])],
            &NLRI,
        ));
        r.unwrap();
        assert!(u.errors.is_empty());
    }

    #[test]
    fn rfc7606_communities_and_large_communities() {
        let taw = ErrorAction::TreatAsWithdraw;
        expect((0xc0, 8, vec![0, 0, 0, 1, 2]), taw, 8);
        expect((0xc0, 8, vec![]), taw, 8);
        expect((0xc0, 32, vec![0; 13]), taw, 32);
        expect((0xc0, 32, vec![0; 8]), taw, 32);
    }

    #[test]
    fn rfc6793_as4_path_and_as4_aggregator() {
        let discard = ErrorAction::AttributeDiscard;
        // 2-byte session: AS_PATH 65000 23456, AS4_PATH malformed: the
        // AS_PATH stands alone.
        let m = upd(
            &[
                (0x40, 2, vec![2, 2, 0xfd, 0xe8, 0x5b, 0xa0]),
                (0xc0, 17, vec![2, 0]),
            ],
            &NLRI,
        );
        let mut u = Update::default();
        let cfg = WireConfig {
            four_octet: false,
            ..WireConfig::default()
        };
        decode_update(&m, &cfg, &mut u).unwrap();
        assert_eq!(u.errors.len(), 1);
        assert_eq!((u.errors[0].action, u.errors[0].code), (discard, 17));
        assert_eq!(u.as_path, vec![(2 << 16) | 2, 65000, 23456]);
        assert_eq!(u.announced.len(), 1);
        expect((0xc0, 18, vec![0, 0, 0xfb, 0xf4, 192, 0, 2]), discard, 18);
    }

    #[test]
    fn rfc7606_attribute_flags() {
        // ORIGIN marked optional: treat-as-withdraw; AS4_PATH marked
        // well-known: discarded.
        expect((0xc0, 1, vec![0]), ErrorAction::TreatAsWithdraw, 1);
        expect(
            (0x40, 17, vec![2, 1, 0, 0, 0, 1]),
            ErrorAction::AttributeDiscard,
            17,
        );
        // MP_REACH marked transitive: its NLRI are still found, and
        // withdrawn.
        let mut mp = vec![0, 2, 1, 16];
        mp.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        mp.extend([0, 32, 0x20, 0x01, 0x0d, 0xb8]);
        let (r, u) = decode(&upd(&[(0xc0, 14, mp)], &[]));
        r.unwrap();
        assert!(u.treat_as_withdraw);
        assert_eq!(u.withdrawn, vec![("2001:db8::/32".parse().unwrap(), 0)]);
    }

    #[test]
    fn rfc7606_duplicates() {
        // §3(g): the second ORIGIN is discarded, the first stands.
        let mut attrs = attr(0x40, 1, &[2]);
        attrs.extend(attr(0x40, 1, &[0]));
        attrs.extend(attr(0x40, 2, &[]));
        attrs.extend(attr(0x40, 3, &[192, 0, 2, 1]));
        let mut body = vec![0, 0];
        body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        body.extend(attrs);
        body.extend(NLRI);
        let (r, u) = decode(&bgp(UPDATE, &body));
        r.unwrap();
        assert_eq!(u.errors[0].action, ErrorAction::AttributeDiscard);
        assert_eq!(u.origin, Origin::Incomplete);
        assert_eq!(u.announced.len(), 1);
        // §3(e): MP_UNREACH twice resets the session.
        let mut attrs = attr(0x80, 15, &[0, 2, 1]);
        attrs.extend(attr(0x80, 15, &[0, 2, 1]));
        let mut body = vec![0, 0];
        body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        body.extend(attrs);
        assert!(decode(&bgp(UPDATE, &body)).0.is_err());
    }

    #[test]
    fn rfc7606_missing_mandatory() {
        let mut body = vec![0, 0];
        let attrs = attr(0x40, 1, &[0]);
        body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        body.extend(attrs);
        body.extend(NLRI);
        let (r, u) = decode(&bgp(UPDATE, &body));
        r.unwrap();
        assert!(u.treat_as_withdraw && u.announced.is_empty());
        assert!(
            u.errors[0].what.contains("AS_PATH, NEXT_HOP"),
            "{:?}",
            u.errors
        );
    }

    #[test]
    fn rfc7606_attribute_overrun_and_framing() {
        // The last attribute's length reaches past the path attributes:
        // the NLRI are still located (treat-as-withdraw).
        let mut m = upd(&[], &NLRI);
        let last_len = m.len() - NLRI.len() - 5;
        m[last_len] = 200;
        let (r, u) = decode(&m);
        r.unwrap();
        assert!(u.treat_as_withdraw);
        assert_eq!(u.withdrawn.len(), 1);
        // Without conventional NLRI nor an MP attribute before the error,
        // nothing can be located: session reset.
        let mut m = upd(&[], &[]);
        let at = m.len() - 5;
        m[at] = 200;
        assert!(decode(&m).0.is_err());
        // NLRI that cannot be parsed, lengths past the message: errors.
        assert!(decode(&upd(&[], &[33, 1, 2, 3, 4, 5])).0.is_err());
        let mut m = upd(&[], &NLRI);
        m[19] = 0xff;
        assert!(decode(&m).0.is_err());
        // MP_REACH with a next hop length that hides its NLRI.
        let (r, _) = decode(&upd(
            &[(0x80, 14, vec![0, 1, 1, 5, 192, 0, 2, 1, 1, 0])],
            &[],
        ));
        assert!(r.is_err());
    }

    #[test]
    fn end_of_rib_needs_no_nlri() {
        // No withdrawn routes, no attributes, but NLRI: not End-of-RIB
        // (and, with no attributes, treated as withdraw).
        let (r, u) = decode(&bgp(UPDATE, &[0, 0, 0, 0, 24, 198, 51, 100]));
        r.unwrap();
        assert!(!u.end_of_rib);
        assert_eq!(u.withdrawn.len(), 1);
        let (r, u) = decode(&bgp(UPDATE, &[0, 0, 0, 0]));
        r.unwrap();
        assert!(u.end_of_rib);
        // MP_UNREACH with AFI/SAFI only.
        let a = attr(0x80, 15, &[0, 2, 1]);
        let mut body = vec![0, 0, 0, a.len() as u8];
        body.extend(a);
        let (r, u) = decode(&bgp(UPDATE, &body));
        r.unwrap();
        assert!(u.end_of_rib);
    }

    #[test]
    fn vpn_and_labeled_nlri() {
        // VPN-IPv4: next hop RD 0 + 192.0.2.1, label 16 (bottom of
        // stack), RD 0:64499:11, 10.1.0.0/16.
        let mut mp = vec![0, 1, 128, 12, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1, 0];
        mp.extend([24 + 64 + 16, 0, 1, 1, 0, 0, 0xfb, 0xf3, 0, 0, 0, 11, 10, 1]);
        let (r, u) = decode(&upd(&[(0x80, 14, mp)], &[]));
        r.unwrap();
        assert!(u.errors.is_empty(), "{:?}", u.errors);
        assert_eq!(
            u.vpn_announced,
            vec![(0x0000_fbf3_0000_000b, "10.1.0.0/16".parse().unwrap(), 0)]
        );
        assert_eq!(u.next_hop_mp, Some("192.0.2.1".parse().unwrap()));
        // Labeled IPv6 unicast, two labels; then its withdrawal with the
        // one 3-byte label field of RFC 8277 §2.4.
        let mut mp = vec![0, 2, 4, 16];
        mp.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        mp.extend([0, 48 + 32, 0, 1, 0, 0, 2, 1, 0x20, 0x01, 0x0d, 0xb8]);
        let (r, u) = decode(&upd(&[(0x80, 14, mp)], &[]));
        r.unwrap();
        // Apart from unicast: the same prefix may be a unicast route too.
        assert!(u.announced.is_empty());
        assert_eq!(
            u.labeled_announced,
            vec![("2001:db8::/32".parse().unwrap(), 0)]
        );
        assert_eq!(u.labeled_nlri, 1);
        let a = attr(
            0x80,
            15,
            &[0, 2, 4, 24 + 32, 0x80, 0, 0, 0x20, 0x01, 0x0d, 0xb8],
        );
        let mut body = vec![0, 0, 0, a.len() as u8];
        body.extend(a);
        let (r, u) = decode(&bgp(UPDATE, &body));
        r.unwrap();
        assert!(u.withdrawn.is_empty());
        assert_eq!(
            u.labeled_withdrawn,
            vec![("2001:db8::/32".parse().unwrap(), 0)]
        );
        // A VPN prefix length too short for its RD: a framing error.
        let mp = vec![
            0, 1, 128, 12, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1, 0, 40, 0, 1, 1, 0, 0,
        ];
        assert!(decode(&upd(&[(0x80, 14, mp)], &[])).0.is_err());
    }
}
