//! MRT RIB dumps in and out: [`load`] reads a dump into a [`Rib`](crate::Rib), [`dump`]
//! writes a RIB's live routes as one.
//!
//! ```text
//!  load:  file ─ open_maybe_compressed ─► Framer (RFC 6396 §2: header, bound, offset)
//!           PEER_INDEX_TABLE (§4.3.1) ──► one RIB peer per entry (RibKind::Mrt)
//!           RIB_IPV4/IPV6_UNICAST[_ADDPATH], RIB_GENERIC unicast
//!             entries framed by ipfib_io::bgp::mrt (RFC 6396 §4.3.2-4, RFC 8050 §4)
//!             attributes: raw bytes seen before? ─ no ─► ipfib_io::bgp ─► rib.intern
//!             ─► rib.announce(peer, prefix, path id, attributes)
//!           TABLE_DUMP (§4.2) ──► peers by (address, AS), one route each
//!  dump:  PEER_INDEX_TABLE of the live peers, then per prefix one RIB record
//!         of plain routes and one of routes with path ids (RFC 8050),
//!         attributes by our own encoder (RFC 4271 §4.3, RFC 6396 §4.3.4)
//! ```
//!
//! Record bodies are read by `ipfib_io::bgp::mrt` and path attributes by
//! `ipfib_io::bgp::decode_rib_entry_attrs`: the decoder BMP uses, and the
//! one ipfib-io's table readers use, so one decoder and one set of RFC
//! 7606 error classes serve every input. A bad entry is skipped and
//! reported with its record and byte offset, the rest of its record kept;
//! attribute bytes seen before (every prefix a peer learnt over one path
//! shares them) go to the interned set without being decoded again.
//! bgpkit-parser is the independent decoder the tests compare the real
//! dumps with.
//!
//! Damage: the shared dumps are the first N MiB of real files, cut inside
//! a record. Framing stops at the first incomplete or unframeable record
//! ([`LoadReport::damage`], with its byte offset in the decompressed
//! stream); every complete record before it is loaded. A record whose body
//! does not hold together is skipped whole, an entry whose attributes do
//! not decode is skipped alone; both are counted and their first errors
//! kept ([`LoadReport::errors`]). Only failures to open or read the file and
//! a full RIB end the load with an error.

mod dump;
mod load;
mod report;
#[cfg(test)]
mod tests;

pub use dump::{dump, dump_with, DumpOptions, DumpReport};
pub use load::load;
pub use report::{LoadReport, MrtError, KEPT_ERRORS};
