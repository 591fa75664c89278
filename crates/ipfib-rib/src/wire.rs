//! BGP message decoding for a collector: UPDATE (RFC 4271 §4.3) with
//! MP_REACH/MP_UNREACH (RFC 4760), 4-byte ASNs and AS4_PATH (RFC 6793),
//! ADD-PATH (RFC 7911), communities (RFC 1997) and large communities
//! (RFC 8092); OPEN capabilities (RFC 5492, RFC 9072 extended optional
//! parameters).
//!
//! A pure function of bytes: every length is checked before it is used,
//! nothing panics on any input (fuzzed), errors name the byte offset
//! within the BGP message. Only unicast IPv4 and IPv6 NLRI become routes;
//! other address families are counted and skipped.

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
}

impl Default for WireConfig {
    fn default() -> Self {
        WireConfig {
            four_octet: true,
            addpath_v4: false,
            addpath_v6: false,
        }
    }
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
}

impl OpenCaps {
    /// Whether the OPEN carries an ADD-PATH entry for `afi` unicast with
    /// any valid send/receive value (1-3; RFC 7911 defines no 0).
    pub fn has_addpath(&self, afi: u16) -> bool {
        self.addpath
            .iter()
            .any(|&(a, s, d)| a == afi && s == 1 && d != 0)
    }

    fn addpath_bits(&self, afi: u16) -> u8 {
        self.addpath
            .iter()
            .filter(|&&(a, s, _)| a == afi && s == 1)
            .fold(0, |acc, &(_, _, b)| acc | b)
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
    sender.addpath_bits(afi) & 2 != 0 && receiver.addpath_bits(afi) & 1 != 0
}

/// One decoded UPDATE, in buffers reused from message to message.
#[derive(Default, Debug)]
pub struct Update {
    /// Announced (prefix, path id).
    pub announced: Vec<(AnyPrefix, u32)>,
    /// How many of `announced`, the first ones, came from MP_REACH_NLRI
    /// (they take its next hop; the rest, conventional IPv4 NLRI, take
    /// NEXT_HOP's: RFC 4760 §3, RFC 4271 §5.1.3).
    pub mp_announced: usize,
    /// Withdrawn (prefix, path id).
    pub withdrawn: Vec<(AnyPrefix, u32)>,
    /// AS path in [`AsPath`]'s encoding.
    pub as_path: Vec<u32>,
    pub communities: Vec<u32>,
    pub large_communities: Vec<[u32; 3]>,
    pub next_hop_v4: Option<IpAddr>,
    pub next_hop_mp: Option<IpAddr>,
    pub origin: Origin,
    pub med: Option<u32>,
    pub local_pref: Option<u32>,
    /// NLRI of address families other than unicast IPv4/IPv6, skipped.
    pub skipped_families: u32,
    /// End-of-RIB marker (RFC 4724): an empty UPDATE, or MP_UNREACH with
    /// no NLRI.
    pub end_of_rib: bool,
    as4_path: Vec<u32>,
}

impl Update {
    fn clear(&mut self) {
        self.announced.clear();
        self.mp_announced = 0;
        self.withdrawn.clear();
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
        self.end_of_rib = false;
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

/// Read NLRI (RFC 4271 §4.3, RFC 7911 §3) of `afi` into `out`.
fn nlri(
    mut c: Cur<'_>,
    afi: u16,
    addpath: bool,
    out: &mut Vec<(AnyPrefix, u32)>,
) -> Result<(), WireError> {
    while c.left() > 0 {
        let path_id = if addpath {
            c.u32("path identifier")?
        } else {
            0
        };
        let at = c.at;
        let len = c.u8("prefix length")?;
        let max = if afi == 1 { 32 } else { 128 };
        if len > max {
            return Err(WireError::Malformed {
                at,
                what: format!("prefix length {len} > {max}"),
            });
        }
        let bytes = c.take(len.div_ceil(8) as usize, "prefix")?;
        // Host bits past the length are masked, as RFC 4271 says they are
        // irrelevant.
        let prefix = if afi == 1 {
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
        out.push((prefix, path_id));
    }
    Ok(())
}

fn as_path(mut c: Cur<'_>, four: bool, out: &mut Vec<u32>) -> Result<(), WireError> {
    while c.left() > 0 {
        let kind = c.u8("AS_PATH segment type")?;
        if !(1..=4).contains(&kind) {
            return Err(c.bad(format!("AS_PATH segment type {kind}")));
        }
        let n = c.u8("AS_PATH segment length")? as usize;
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
    out.extend_from_slice(as4);
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

/// Decode one UPDATE (whole message, header included) into `u`.
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
    let mut attrs = c.sub(alen, "path attributes")?;
    let announced = c;
    let mut saw_mp_unreach_empty = false;
    let mut seen = [false; 256];
    while attrs.left() > 0 {
        let flags = attrs.u8("attribute flags")?;
        let code = attrs.u8("attribute type")?;
        let len = if flags & 0x10 != 0 {
            attrs.u16("attribute length")? as usize
        } else {
            attrs.u8("attribute length")? as usize
        };
        let mut v = attrs.sub(len, "attribute value")?;
        // RFC 7606 §3(g): a repeated attribute is ignored after the first
        // (MP_REACH / MP_UNREACH repeated are malformed).
        if std::mem::replace(&mut seen[code as usize], true) {
            if code == 14 || code == 15 {
                return Err(v.bad(format!("attribute {code} repeated")));
            }
            continue;
        }
        // RFC 4271 §6.3, RFC 7606 §7.1-7.5: these have one length; any
        // other is an Attribute Length Error, not a value to read the
        // front of.
        let exact = match code {
            1 => 1,
            3..=5 => 4,
            _ => len,
        };
        if len != exact {
            return Err(v.bad(format!("attribute {code} length {len}, expected {exact}")));
        }
        match code {
            1 => {
                let o = v.u8("ORIGIN")?;
                u.origin = Origin::from_wire(o).ok_or_else(|| v.bad(format!("ORIGIN {o}")))?;
            }
            2 => as_path(v, cfg.four_octet, &mut u.as_path)?,
            3 => {
                let b = v.take(4, "NEXT_HOP")?;
                u.next_hop_v4 = Some(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3])));
            }
            4 => u.med = Some(v.u32("MULTI_EXIT_DISC")?),
            5 => u.local_pref = Some(v.u32("LOCAL_PREF")?),
            8 => {
                if len % 4 != 0 {
                    return Err(v.bad(format!("COMMUNITIES length {len} not a multiple of 4")));
                }
                while v.left() > 0 {
                    u.communities.push(v.u32("community")?);
                }
            }
            14 => {
                let afi = v.u16("MP_REACH AFI")?;
                let safi = v.u8("MP_REACH SAFI")?;
                if safi != 1 || !(afi == 1 || afi == 2) {
                    u.skipped_families += 1;
                    continue;
                }
                u.next_hop_mp = next_hop(&mut v, afi)?;
                v.u8("MP_REACH reserved")?;
                let addpath = if afi == 1 {
                    cfg.addpath_v4
                } else {
                    cfg.addpath_v6
                };
                nlri(v, afi, addpath, &mut u.announced)?;
                u.mp_announced = u.announced.len();
            }
            15 => {
                let afi = v.u16("MP_UNREACH AFI")?;
                let safi = v.u8("MP_UNREACH SAFI")?;
                if safi != 1 || !(afi == 1 || afi == 2) {
                    u.skipped_families += 1;
                    continue;
                }
                if v.left() == 0 {
                    saw_mp_unreach_empty = true;
                }
                let addpath = if afi == 1 {
                    cfg.addpath_v4
                } else {
                    cfg.addpath_v6
                };
                nlri(v, afi, addpath, &mut u.withdrawn)?;
            }
            17 => as_path(v, true, &mut u.as4_path)?,
            32 => {
                if len % 12 != 0 {
                    return Err(v.bad(format!("LARGE_COMMUNITY length {len} not a multiple of 12")));
                }
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
    nlri(announced, 1, cfg.addpath_v4, &mut u.announced)?;
    if !cfg.four_octet && !u.as4_path.is_empty() {
        u.as_path = merge_as4(&u.as_path, &u.as4_path);
    }
    u.end_of_rib = (wlen == 0 && alen == 0)
        || (saw_mp_unreach_empty && u.announced.is_empty() && u.withdrawn.is_empty());
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

    #[test]
    fn addpath_and_mp_reach_v6() {
        let mut mp = vec![0, 2, 1, 16];
        mp.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        mp.push(0);
        mp.extend([0, 0, 0, 7, 48, 0x20, 0x01, 0x0d, 0xb8, 0, 1]);
        let attrs = attr(0x90, 14, &mp);
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
}
