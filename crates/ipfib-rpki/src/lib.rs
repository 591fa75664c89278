//! RPKI for ipfib: which routes are legitimate.
//!
//! - [`vrp`]: VRPs, the [`VrpSet`] that sources edit and the [`Vrps`]
//!   snapshot that answers "every VRP covering this prefix" and validates
//!   route origins (RFC 6811);
//! - [`aspa`]: ASPAs and AS path verification (the upstream procedure of
//!   draft-ietf-sidrops-aspa-verification);
//! - [`files`]: rpki-client and Routinator JSON, Routinator CSV, SLURM
//!   (RFC 8416);
//! - [`rtr`]: the RTR client (RFC 6810, RFC 8210, ASPA of 8210bis);
//! - [`live`]: sources and exceptions published as one snapshot.
//!
//! ```
//! use ipfib_rpki::{RouteOrigin, Rov, Vrp, Vrps};
//!
//! let vrps: Vrps = [Vrp::new("192.0.2.0/24".parse()?, 24, 64500)?].into_iter().collect();
//! let route = "192.0.2.0/24".parse()?;
//! assert_eq!(vrps.validate(&route, RouteOrigin::As(64500)), Rov::Valid);
//! assert_eq!(vrps.validate(&route, RouteOrigin::As(64501)), Rov::InvalidOrigin);
//! assert_eq!(vrps.validate(&"192.0.2.0/25".parse()?, RouteOrigin::As(64500)), Rov::InvalidLength);
//! assert_eq!(vrps.validate(&"198.51.100.0/24".parse()?, RouteOrigin::As(64500)), Rov::NotFound);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod aspa;
pub mod files;
pub mod live;
pub mod rtr;
pub mod vrp;

pub use aspa::{Aspa, AspaStatus, Aspas};
pub use files::{load_payloads, parse_payloads, LoadError, Payloads, Slurm};
pub use live::{Live, Snapshot, SourceStatus};
pub use vrp::{path_origin, route_origin, Cursor, RouteOrigin, Rov, Vrp, VrpSet, Vrps};

/// AS path segment types (RFC 4271 §4.3, RFC 5065), as `ipfib-io` numbers them.
pub const AS_SET: u8 = 1;
pub const AS_SEQUENCE: u8 = 2;
pub const AS_CONFED_SEQUENCE: u8 = 3;
pub const AS_CONFED_SET: u8 = 4;

#[cfg(test)]
mod tests;
