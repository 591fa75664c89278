//! Lookup engines: structures compiled from a route table's intervals that
//! answer a `u32` payload (or [`NO_ROUTE`]) per address.
//!
//! - [`planb`]: linearized B+-tree over elementary intervals.
//! - [`poptrie`]: 64-ary multiway trie indexed by popcount (Poptrie,
//!   SIGCOMM 2015).
//!
//! Every engine implements [`Engine`], so the tests, the benchmarks, the
//! CLI and [`crate::compiled::Compiled`] treat them alike. The route table
//! itself (`crate::route_table`) is the `radix` baseline; it is not an
//! [`Engine`] because it is the source the engines are compiled from, not
//! something built from intervals.

pub mod auto;
mod contract;
pub mod kernel;
mod kind;
pub mod planb;
pub mod poptrie;
pub mod registry;

pub use crate::intervals::NO_ROUTE;
use contract::inherent_engine_methods;
pub use contract::Engine;

/// An address family every engine can search (`u32` and `u128`).
///
/// ```
/// use ipfib::engine::{planb::PlanB, Engine, Family};
/// use ipfib::prefix::Prefix;
/// // One generic function serves IPv4 and IPv6.
/// fn hit<A: Family>(route: &str, addr: A) -> u32 {
///     let p: Prefix<A> = route.parse().unwrap();
///     let iv = ipfib::intervals::compile([(p, 3)]);
///     PlanB::build(&iv, &Default::default()).unwrap().lookup(addr)
/// }
/// assert_eq!(hit::<u32>("10.0.0.0/8", 0x0a00_0001), 3);
/// assert_eq!(hit::<u128>("2001:db8::/32", 0x2001_0db8 << 96), 3);
/// ```
pub trait Family: planb::Family + poptrie::Chunks {}
impl<A: planb::Family + poptrie::Chunks> Family for A {}

impl<A: planb::Family> Engine<A> for planb::PlanB<A> {
    type Options = planb::PlanBOptions;
    type Error = planb::BuildError;
    inherent_engine_methods!();
    fn name(&self) -> String {
        format!("planb[{},s={}]", self.kernel(), self.direct_bits())
    }
}

#[cfg(test)]
mod tests {
    use super::kernel::tests::well_formed;

    #[test]
    fn kernel_sets_are_well_formed() {
        well_formed(&super::planb::KERNELS);
        well_formed(&super::poptrie::KERNELS);
    }
}
