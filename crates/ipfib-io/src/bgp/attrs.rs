//! The path attribute walk of UPDATEs and MRT RIB entries, with RFC 7606
//! error handling, and the AS_PATH / AS4_PATH decoding it does.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::cursor::{Cur, ErrorAction, WireError};
use super::decoded::{family_bit, Update, WireConfig};
use super::nlri::{nlri_with, NlriKind};
use super::path::{AsPath, Origin, AS_SEQUENCE, AS_SET};

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
pub(super) fn merge_as4(as_path: &[u32], as4: &[u32]) -> Vec<u32> {
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
                out.extend_from_slice(s.asns.get(..k).unwrap_or(s.asns));
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
            if let Some(w) = out.get_mut(head) {
                *w = (u32::from(AS_SEQUENCE) << 16) | joined;
            }
            out.extend_from_slice(as4.get(1..).unwrap_or_default());
        }
        _ => out.extend_from_slice(as4),
    }
    out
}

fn next_hop(c: &mut Cur<'_>, afi: u16) -> Result<Option<IpAddr>, WireError> {
    let at = c.at;
    let n = c.u8("next hop length")? as usize;
    let mut nh = c.sub(n, "next hop")?;
    Ok(match n {
        0 => None,
        4 => Some(IpAddr::V4(Ipv4Addr::from(nh.array("next hop")?))),
        16 => Some(IpAddr::V6(Ipv6Addr::from(nh.array("next hop")?))),
        // Global + link-local (RFC 2545 §3): the global one, even when a
        // sender put the link-local address first.
        32 => {
            let first = Ipv6Addr::from(nh.array("next hop")?);
            let second = Ipv6Addr::from(nh.array("next hop")?);
            let link_local = Ipv6Addr::is_unicast_link_local;
            Some(IpAddr::V6(if link_local(&first) && !link_local(&second) {
                second
            } else {
                first
            }))
        }
        // RFC 8950 / VPN forms with a route distinguisher: the address
        // after the 8-byte RD.
        12 => {
            nh.take(8, "next hop route distinguisher")?;
            Some(IpAddr::V4(Ipv4Addr::from(nh.array("next hop")?)))
        }
        24 | 48 => {
            nh.take(8, "next hop route distinguisher")?;
            Some(IpAddr::V6(Ipv6Addr::from(nh.array("next hop")?)))
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
pub(super) enum Form {
    /// An UPDATE; whether conventional NLRI follow the attributes.
    Update { nlri_follow: bool },
    /// An MRT RIB entry (RFC 6396 §4.3.4): no NLRI around them.
    RibEntry,
}

/// What the attribute walk tells the rest of an UPDATE's decoding.
pub(super) struct AttrScan {
    /// Attribute types present.
    pub(super) seen: [bool; 256],
    /// An MP_UNREACH with AFI and SAFI alone (End-of-RIB, RFC 4724 §2):
    /// its AFI and SAFI.
    pub(super) mp_unreach_empty: Option<(u16, u8)>,
}

/// Walk path attributes into `u` (RFC 4271 §4.3, 4760, 6793, 1997, 8092),
/// handling errors as RFC 7606 says (see [`decode_update`]); the one
/// attribute decoder of BMP's UPDATEs and MRT's RIB entries.
pub(super) fn attributes(
    mut attrs: Cur<'_>,
    cfg: &WireConfig,
    form: Form,
    u: &mut Update,
) -> Result<AttrScan, WireError> {
    let mut mp_unreach_empty = None;
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
        let repeated = seen
            .get_mut(usize::from(code))
            .is_some_and(|s| std::mem::replace(s, true));
        if repeated {
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
                u.next_hop_v4 = Some(IpAddr::V4(Ipv4Addr::from(v.array("NEXT_HOP")?)));
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
                    mp_unreach_empty = Some((afi, safi));
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

impl Update {
    /// Merge a received AS4_PATH into AS_PATH (RFC 6793 §4.2.3).
    /// [`decode_update`](super::decode_update) does it for 2-byte
    /// sessions; MRT readers call it for 4-byte messages too, since a
    /// collector stores in them what its 2-byte peers sent.
    pub fn merge_as4_path(&mut self) {
        if !self.as4_path.is_empty() {
            self.as_path = merge_as4(&self.as_path, &self.as4_path);
            self.as4_path.clear();
        }
    }
}
