//! Lookup engines: structures compiled from a route table's intervals that
//! answer a `u32` payload (or [`NO_ROUTE`]) per address.
//!
//! - [`planb`]: linearized B+-tree over elementary intervals.
//!
//! The route table itself (`crate::route_table`) is the `radix` baseline.

pub mod planb;

pub use crate::intervals::NO_ROUTE;
