//! UPDATE messages and MRT RIB entries decoded into [`Update`].

use std::net::IpAddr;

use ipfib::prefix::AnyPrefix;

use super::attrs::{attributes, merge_as4, AttrScan, Form};
use super::cursor::{bgp_message, AttrError, Cur, ErrorAction, WireError, UPDATE};
use super::nlri::nlri;
use super::path::Origin;

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
    /// AS path in [`AsPath`](super::AsPath)'s encoding.
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
    pub(super) as4_path: Vec<u32>,
}

impl Update {
    pub(super) fn clear(&mut self) {
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

    /// The next hop that goes with the announced routes: MP_REACH's when
    /// present, else NEXT_HOP's (an UPDATE with both kinds of NLRI needs
    /// both, see [`Update::mp_announced`]).
    pub fn next_hop(&self) -> Option<IpAddr> {
        self.next_hop_mp.or(self.next_hop_v4)
    }

    pub(super) fn error(&mut self, action: ErrorAction, code: u8, at: usize, what: String) {
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
}

/// How the NLRI of a family are encoded.
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
