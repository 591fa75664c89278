//! RTR: the RPKI-to-Router protocol, client side (RFC 6810, RFC 8210 and
//! the ASPA PDU of draft-ietf-sidrops-8210bis).
//!
//! Written here rather than taken from NLnet Labs' `rpki` crate: its RTR
//! client is async and generic over a target trait, built for a different
//! runtime shape than ours (one blocking thread per cache that hands
//! whole, consistent sets to a publisher), and the protocol is small (ten
//! PDU types). The tests run it against NLnet Labs' `rtrtr` as the cache.

pub mod client;
pub mod pdu;

pub use client::{Changes, Event, RtrClient, RtrOptions};
pub use pdu::{Pdu, PduError, Timers};
