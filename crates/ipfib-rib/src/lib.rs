//! A multi-peer BGP RIB fed by BMP: every route of every peer, and the
//! longest-prefix match over all of them that flow collectors and looking
//! glasses need.
//!
//! ```text
//!  BMP bytes --> bmp::Framer --> bmp::Session (one per connection) --+
//!                                  wire:: decodes BGP UPDATE / OPEN   |
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
//! - `wire.rs`: BGP message decoding (RFC 4271, 4760, 6793, 7911, 1997,
//!   8092); `bmp.rs`: BMP framing and per-session state (RFC 7854, 9069).

pub mod attrs;
pub mod bmp;
pub mod heap;
pub mod instance;
pub mod mrt;
pub mod peers;
pub mod rib;
mod routelist;
mod seg;
mod walk;
pub mod wire;

pub use attrs::{AsPath, AttrSet, Origin};
pub use instance::{Instance, RibSet};
pub use peers::{PeerInfo, PeerKey, RibKind};
pub use rib::{unmap, Entry, Hit, Match, PeerFilter, Query, Rib, Route, Routes};
