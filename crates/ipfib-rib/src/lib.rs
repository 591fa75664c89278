//! A multi-peer BGP RIB fed by BMP: every route of every peer, and the
//! longest-prefix match over all of them that flow collectors and looking
//! glasses need.
//!
//! ```text
//!  BMP bytes --> bmp::Framer --> bmp::Session (one per connection) --+
//!                          ipfib_io::bgp decodes BGP UPDATE / OPEN   |
//!  MRT dump  --> mrt::load ---------------------------------------------+--> Rib
//!                                                                      |    (rib/)
//!  lookups, routes(prefix), peers  <-----------------------------------+
//! ```
//!
//! Where to start reading:
//! - `rib/`: the RIB itself (data layout, concurrency, lookup; its
//!   `mod.rs` says which file holds what).
//! - `attrs.rs`: interned path attributes; `peers.rs`: peer ids and the
//!   liveness word per peer; `seg.rs`: the append-only id -> element tables.
//! - `bmp/`: BMP framing and per-session state (RFC 7854, 9069); BGP
//!   messages are decoded by `ipfib_io::bgp`, the one BGP decoder BMP and
//!   MRT share. `mrt/`: MRT RIB dumps in and out.
//! - `target.rs`: "an address or a prefix", as queries name what they ask.

pub mod attrs;
pub mod bmp;
pub mod heap;
pub mod instance;
pub mod mrt;
pub mod peers;
pub mod rib;
mod routelist;
mod seg;
pub mod snapshot;
pub mod target;
mod walk;

pub use attrs::{AsPath, AttrSet, Origin};
pub use instance::{Instance, RibSet};
pub use peers::{NlriClass, PeerInfo, PeerInit, PeerKey, PeerOrigin, RibKind};
pub use rib::{unmap, EndOfRib, Entry, Hit, Match, PeerFilter, Query, Rib, Route, Routes};
