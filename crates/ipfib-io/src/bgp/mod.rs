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
//!
//! One decoder for every BGP source: BMP Route Monitoring and Peer Up
//! messages, MRT RIB entries (TABLE_DUMP_V2 and TABLE_DUMP) and MRT
//! BGP4MP messages.
//!
//! Files: `cursor.rs` (the bounds-checked cursor and the errors),
//! `open.rs` (OPEN capabilities), `nlri.rs` (prefixes), `attrs.rs` (the
//! path attribute walk), `path.rs` (AS paths and ORIGIN), `update.rs`
//! ([`Update`], [`decode_update`], [`decode_rib_entry_attrs`]), `mrt.rs`
//! (the MRT record bodies that carry BGP: peer tables, RIB records,
//! TABLE_DUMP, BGP4MP).

mod attrs;
mod cursor;
mod decoded;
pub mod mrt;
mod nlri;
mod open;
mod path;
mod update;

pub use cursor::{bgp_message, AttrError, Cur, ErrorAction, WireError, OPEN, UPDATE};
pub use decoded::{family_bit, Update, WireConfig, MAX_ERRORS};
pub use open::{addpath_negotiated, addpath_negotiated_safi, decode_open, OpenCaps};
pub use path::{
    AsPath, Origin, Segment, Segments, AS_CONFED_SEQUENCE, AS_CONFED_SET, AS_SEQUENCE, AS_SET,
};
pub use update::{decode_rib_entry_attrs, decode_update};

#[cfg(test)]
mod tests;
