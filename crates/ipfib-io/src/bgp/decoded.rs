//! What decoding produces ([`Update`]) and how a session encodes its
//! UPDATEs ([`WireConfig`]): the types the attribute walk and the message
//! decoders share.

use std::net::IpAddr;

use ipfib::prefix::AnyPrefix;

use super::cursor::{AttrError, ErrorAction};
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
    /// The AFI and SAFI an End-of-RIB marker is for: `(1, 1)` (IPv4
    /// unicast) for the empty UPDATE, MP_UNREACH's otherwise.
    pub end_of_rib_family: (u16, u8),
    /// Attribute errors (RFC 7606) that did not end the decoding.
    pub errors: Vec<AttrError>,
    /// An error asked for "treat-as-withdraw": every announced route
    /// (conventional and MP_REACH) has been moved to the withdrawn lists.
    pub treat_as_withdraw: bool,
    pub(super) as4_path: Vec<u32>,
}

/// Attribute errors an [`Update`] keeps for the logs.
pub const MAX_ERRORS: usize = 16;

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
        self.end_of_rib_family = (1, 1);
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
        // at most 65,535 bytes; keep the first few for the logs. The first
        // treat-as-withdraw is always kept (in the last place when the
        // list is full of discards), so routes are never withdrawn without
        // the reason.
        let e = AttrError {
            action,
            code,
            at,
            what,
        };
        let withdraw = action == ErrorAction::TreatAsWithdraw;
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(e);
        } else if withdraw && !self.treat_as_withdraw {
            if let Some(last) = self.errors.last_mut() {
                *last = e;
            }
        }
        if withdraw {
            self.treat_as_withdraw = true;
        }
    }
}
