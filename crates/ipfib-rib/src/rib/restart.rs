//! Warm restart: stale peers, the peers that take them over, and when
//! their routes go.
//!
//! A RIB restored from a snapshot (`crate::snapshot`) holds the routes
//! its routers had sent before the restart, under *stale* peers
//! ([`PeerInfo::stale`]): they answer lookups at once, marked stale,
//! until the routers say again what they hold. The semantics follow BGP
//! graceful restart (RFC 4724 §4.2), seen from the receiving side:
//!
//! - A router's BMP session registers its peers as usual. A new peer
//!   whose router address, [`PeerKey`] and [`NlriClass`] equal a stale
//!   peer's *takes it over*: from then on, each route the new peer
//!   announces or withdraws also removes the stale peer's route with the
//!   same prefix and path id, in the same copy-on-write edit, so a prefix
//!   never shows both. A stale peer has at most one successor; one new
//!   peer takes over every stale peer it matches (a router that reported
//!   one neighbour over two sessions before the restart).
//! - End-of-RIB from a neighbour (RFC 4724 §2: the router has sent its
//!   whole table of that address family) sweeps the stale peers of that
//!   neighbour, RIB kind and class once every address family they held
//!   has had its End-of-RIB: what the router did not send again is gone.
//! - The new peer going down (Peer Down, or its session's grace period
//!   over) takes the stale peers it took over with it.
//! - Whatever is still stale when the grace period ends
//!   ([`Rib::expire_stale`], called by the collector) is swept too: a
//!   router that does not come back, or sends no End-of-RIB, keeps its old
//!   routes for that long and no longer.
//!
//! A stale peer that is swept goes down like any other: its routes vanish
//! from lookups at once and the sweeper frees them.

use std::net::IpAddr;
use std::sync::Arc;

use super::{Rib, RibError};
use crate::peers::{NlriClass, PeerInfo, PeerInit, PeerKey};

/// A stale peer not yet swept.
#[derive(Debug)]
pub(super) struct Stale {
    id: u32,
    router: Option<IpAddr>,
    key: PeerKey,
    class: NlriClass,
    /// Address families it holds routes of (bit 0 IPv4, bit 1 IPv6).
    families: u8,
    /// Families whose End-of-RIB its neighbour has sent since.
    ended: u8,
    /// A new peer took it over.
    adopted: bool,
    /// Unix seconds since it is stale.
    since: i64,
}

/// The most stale peers one new peer takes over: a router reports one
/// neighbour over a few sessions at most, and each stale peer taken over
/// costs every later announcement of the new peer a lookup.
pub const MAX_TAKEN_OVER: usize = 16;

/// Bit of an AFI in [`Stale::families`].
fn family_bit(afi: u16) -> u8 {
    match afi {
        1 => 1,
        2 => 2,
        _ => 0,
    }
}

/// A neighbour's End-of-RIB, as [`Rib::end_of_rib`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct EndOfRib<'a> {
    /// The BMP session's source address.
    pub router: IpAddr,
    /// The neighbour as its per-peer header names it (`rib`: the RIB kind
    /// of the message; for VPN routes `peer_type` and `distinguisher` are
    /// the header's, not the routes').
    pub neighbour: &'a PeerKey,
    pub class: NlriClass,
    pub afi: u16,
}

impl Rib {
    /// Register a peer described by `init`. A stale peer (`init.stale`)
    /// waits for a successor; a peer from a router
    /// (`init.origin.router`) takes over the stale peer it matches, if
    /// any (see the module documentation).
    pub fn add_peer_with(&self, init: PeerInit) -> Result<Arc<PeerInfo>, RibError> {
        let stale = init.stale;
        let p = self
            .inner
            .peers
            .add_with(init)
            .ok_or(RibError::PeersExhausted)?;
        let mut set = self.inner.stale.lock().unwrap_or_else(|e| e.into_inner());
        if stale {
            set.push(Stale {
                id: p.id,
                router: p.origin.router,
                key: p.key.clone(),
                class: p.origin.class,
                families: 0,
                ended: 0,
                adopted: false,
                since: p.stale_since(),
            });
        } else if let Some(router) = p.origin.router {
            // Every stale peer it matches: the same router may have
            // reported one neighbour over two sessions before the restart.
            let mut took: Vec<u32> = Vec::new();
            for s in set
                .iter_mut()
                .filter(|s| {
                    !s.adopted
                        && s.router == Some(router)
                        && s.class == p.origin.class
                        && s.key == p.key
                })
                .take(MAX_TAKEN_OVER)
            {
                s.adopted = true;
                took.push(s.id);
            }
            if !took.is_empty() {
                let _ = p.predecessor.set(took.into_boxed_slice());
            }
        }
        Ok(p)
    }

    /// Note that each stale peer `(id, families)` holds routes of these
    /// address families (bit 0 IPv4, bit 1 IPv6): its End-of-RIB waits
    /// for each. A stale peer that holds none has nothing to wait for: it
    /// goes at once. One pass, however many peers.
    pub(crate) fn stale_families(&self, peers: &[(u32, u8)]) {
        let of: std::collections::HashMap<u32, u8> = peers.iter().copied().collect();
        let mut gone = Vec::new();
        {
            let mut set = self.inner.stale.lock().unwrap_or_else(|e| e.into_inner());
            set.retain_mut(|s| match of.get(&s.id) {
                Some(0) => {
                    gone.push(s.id);
                    false
                }
                Some(&f) => {
                    s.families |= f;
                    true
                }
                None => true,
            });
        }
        for id in gone {
            self.peer_down(id);
        }
    }

    /// A neighbour's End-of-RIB: sweep the stale peers it completes.
    /// Returns how many were swept.
    pub fn end_of_rib(&self, eor: EndOfRib<'_>) -> usize {
        let bit = family_bit(eor.afi);
        let n = eor.neighbour;
        let mut done = Vec::new();
        {
            let mut set = self.inner.stale.lock().unwrap_or_else(|e| e.into_inner());
            set.retain_mut(|s| {
                let k = &s.key;
                let same = s.router == Some(eor.router)
                    && s.class == eor.class
                    && k.rib == n.rib
                    && k.address == n.address
                    && k.asn == n.asn
                    && k.bgp_id == n.bgp_id
                    // A VPN peer's type and distinguisher are its
                    // routes'; one End-of-RIB covers every one of them.
                    && (eor.class == NlriClass::Vpn
                        || (k.peer_type == n.peer_type && k.distinguisher == n.distinguisher));
                if !same {
                    return true;
                }
                s.ended |= bit;
                if s.families & !s.ended == 0 {
                    done.push(s.id);
                    return false;
                }
                true
            });
        }
        for &id in &done {
            self.peer_down(id);
        }
        done.len()
    }

    /// Stale peer `id` leaves the set of those waiting (it goes down).
    pub(super) fn forget_stale(&self, id: u32) {
        self.inner
            .stale
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|s| s.id != id);
    }

    /// The grace period is over: sweep every stale peer left. Returns how
    /// many.
    pub fn expire_stale(&self) -> usize {
        self.expire_stale_since(i64::MAX)
    }

    /// Sweep the stale peers stale since before `cutoff` (Unix seconds):
    /// a grace period counted from when their routes first became stale,
    /// so that restarts more often than the period do not keep them for
    /// ever. Returns how many.
    pub fn expire_stale_since(&self, cutoff: i64) -> usize {
        let left: Vec<u32> = {
            let mut set = self.inner.stale.lock().unwrap_or_else(|e| e.into_inner());
            let mut out = Vec::new();
            set.retain(|s| {
                let keep = s.since >= cutoff;
                if !keep {
                    out.push(s.id);
                }
                keep
            });
            out
        };
        for &id in &left {
            self.peer_down(id);
        }
        left.len()
    }

    /// Stale peers not yet swept.
    pub fn stale_peers(&self) -> usize {
        self.inner
            .stale
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}
