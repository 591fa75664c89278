//! [`Engine`]: the contract every engine implements (build from
//! intervals, lookup, lookup_batch, footprint, validate, name), and the
//! argument checks and method forwarding every implementation shares. A
//! leaf: the engines implement it without importing `engine` itself.

use crate::intervals::Intervals;
#[cfg(doc)]
use crate::intervals::NO_ROUTE;

/// The checks every engine's `lookup_batch` makes before its unchecked
/// search: at least one address in flight (`M > 0`, refused at compile
/// time) and an output as long as the input (else a panic).
#[inline(always)]
pub(crate) fn batch_args<const M: usize, A>(addrs: &[A], out: &[u32]) {
    const {
        assert!(
            M > 0,
            "lookup_batch needs at least one address in flight (M > 0)"
        )
    };
    assert!(out.len() >= addrs.len(), "output shorter than input");
}

/// A lookup structure compiled from elementary intervals.
///
/// Contract, for every engine:
/// - `lookup(a)` returns exactly the payload of the interval holding `a`
///   (as [`Intervals::resolve`] does), [`NO_ROUTE`] on a miss;
/// - `lookup_batch::<M>` writes the same answers for a slice of addresses,
///   working on `M` of them at a time (`out.len() >= addrs.len()`, else it
///   panics; `M = 0` does not compile);
/// - an engine is immutable once built: `Send + Sync`, and lookups neither
///   allocate nor lock.
///
/// ```
/// use ipfib::engine::{planb::PlanB, poptrie::{FlatPoptrie, Poptrie}, Engine, NO_ROUTE};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
/// // Every engine gives the intervals' answers.
/// fn answers<E: Engine<u32>>(iv: &ipfib::intervals::Intervals<u32>) -> [u32; 3] {
///     let e = E::build(iv, &Default::default()).unwrap();
///     [0x0a00_0001, 0x0a01_0001, 0x0b00_0000].map(|a| e.lookup(a))
/// }
/// assert_eq!(answers::<PlanB<u32>>(&iv), [1, 2, NO_ROUTE]);
/// assert_eq!(answers::<Poptrie<u32>>(&iv), [1, 2, NO_ROUTE]);
/// assert_eq!(answers::<FlatPoptrie<u32>>(&iv), [1, 2, NO_ROUTE]);
/// ```
pub trait Engine<A: crate::addr::Addr>: Sized + Send + Sync {
    /// Build options (`Default` is the recommended configuration).
    type Options: Clone + Default + std::fmt::Debug;
    /// Why a build failed.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Build from compiled intervals; hand-made ones that fail
    /// [`Intervals::validate`] are refused with an error.
    ///
    /// ```
    /// use ipfib::engine::{poptrie::Poptrie, Engine};
    /// use ipfib::intervals::Intervals;
    /// // Hand-made intervals that do not start at address 0: refused.
    /// let bad = Intervals { starts: vec![5u32], payloads: vec![1] };
    /// assert!(<Poptrie<u32> as Engine<u32>>::build(&bad, &Default::default()).is_err());
    /// ```
    fn build(iv: &Intervals<A>, opts: &Self::Options) -> Result<Self, Self::Error>;
    /// Payload for `addr`, or [`NO_ROUTE`].
    ///
    /// ```
    /// use ipfib::engine::{poptrie::FlatPoptrie, Engine, NO_ROUTE};
    /// let p: ipfib::prefix::Prefix<u128> = "2001:db8::/32".parse()?;
    /// let e = FlatPoptrie::build(&ipfib::intervals::compile([(p, 9)]), &Default::default())?;
    /// assert_eq!(Engine::lookup(&e, 0x2001_0db8_0000_0000_0000_0000_0000_0001), 9);
    /// assert_eq!(Engine::lookup(&e, 0x2001_0db9 << 96), NO_ROUTE);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn lookup(&self, addr: A) -> u32;
    /// Payloads for `addrs` into `out`, `M` addresses in flight.
    ///
    /// ```
    /// use ipfib::engine::{planb::PlanB, Engine, NO_ROUTE};
    /// let ten: ipfib::prefix::Prefix<u32> = "10.0.0.0/8".parse().unwrap();
    /// let iv = ipfib::intervals::compile([(ten, 7)]);
    /// let e = PlanB::build(&iv, &Default::default()).unwrap();
    /// let mut out = [0; 3];
    /// Engine::lookup_batch::<2>(&e, &[0x0a01_0203, 0x0b00_0000, 0x0a00_0000], &mut out);
    /// assert_eq!(out, [7, NO_ROUTE, 7]);
    /// ```
    ///
    /// `M` must be at least 1: `M = 0` is refused at compile time, by
    /// every engine:
    ///
    /// ```compile_fail
    /// use ipfib::engine::planb::PlanB;
    /// let iv = ipfib::intervals::compile::<u32>([]);
    /// let e = PlanB::build(&iv, &Default::default()).unwrap();
    /// e.lookup_batch::<0>(&[1, 2], &mut [0; 2]);
    /// ```
    ///
    /// ```compile_fail
    /// use ipfib::engine::poptrie::Poptrie;
    /// let iv = ipfib::intervals::compile::<u32>([]);
    /// let e = Poptrie::<u32>::build(&iv, &Default::default()).unwrap();
    /// e.lookup_batch::<0>(&[1, 2], &mut [0; 2]);
    /// ```
    ///
    /// ```compile_fail
    /// use ipfib::engine::poptrie::FlatPoptrie;
    /// let iv = ipfib::intervals::compile::<u32>([]);
    /// let e = FlatPoptrie::<u32>::build(&iv, &Default::default()).unwrap();
    /// e.lookup_batch::<0>(&[1, 2], &mut [0; 2]);
    /// ```
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]);
    /// Heap bytes of the lookup structure.
    ///
    /// ```
    /// use ipfib::engine::{poptrie::{Poptrie, PoptrieOptions}, Engine};
    /// let iv = ipfib::intervals::compile::<u32>([]);
    /// let opts = PoptrieOptions { direct_bits: Some(16), ..Default::default() };
    /// let e = Poptrie::<u32>::build(&iv, &opts)?;
    /// // At least the direct table: 2^16 entries of 4 bytes.
    /// assert!(Engine::footprint_bytes(&e) >= 4 << 16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn footprint_bytes(&self) -> usize;
    /// A short description of this build: engine name and its layout
    /// (e.g. `planb[avx512,s=20]`, `poptrie[s=18,popcnt]`).
    ///
    /// ```
    /// use ipfib::engine::{kernel::Kernel, planb::{PlanB, PlanBOptions}, Engine};
    /// let iv = ipfib::intervals::compile::<u32>([]);
    /// let opts = PlanBOptions { kernel: Some(Kernel::Scalar), direct_bits: Some(14), ..Default::default() };
    /// assert_eq!(Engine::name(&PlanB::build(&iv, &opts)?), "planb[scalar,s=14]");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn name(&self) -> String;
    /// Check every structural property the lookups' unsafe code relies
    /// on (for tests and fuzzing; linear in the structure's size).
    ///
    /// ```
    /// use ipfib::engine::{poptrie::{Node32, Poptrie}, Engine};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
    /// let e = Poptrie::<u32, Node32>::build(&iv, &Default::default())?;
    /// assert_eq!(Engine::validate(&e), Ok(()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn validate(&self) -> Result<(), String>;
    /// [`Engine::validate`], and every answer a lookup can give is
    /// [`NO_ROUTE`] or below `bound`: what a caller that indexes a route
    /// or value list with the answers relies on (a compiled table file's
    /// opener passes its route or value count).
    ///
    /// ```
    /// use ipfib::engine::{poptrie::FlatPoptrie, Engine};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 0), (p("10.1.2.0/24"), 1)]);
    /// let e = FlatPoptrie::<u32>::build(&iv, &Default::default())?;
    /// assert_eq!(Engine::validate_below(&e, 2), Ok(()));
    /// assert!(Engine::validate_below(&e, 1).is_err()); // 10.1.2.0/24 answers 1
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn validate_below(&self, bound: u32) -> Result<(), String>;
}

/// The [`Engine`] methods every engine answers with its inherent ones of
/// the same name (build, lookup, lookup_batch, footprint_bytes, validate):
/// written once here, so an engine's `impl Engine` holds only its types
/// and its `name`. `Self::method` resolves to the inherent method first; an
/// engine lacking one would make it the trait method calling itself, which
/// `unconditional_recursion` (denied on each) refuses to compile.
macro_rules! inherent_engine_methods {
    () => {
        #[deny(unconditional_recursion)]
        fn build(
            iv: &crate::intervals::Intervals<A>,
            opts: &Self::Options,
        ) -> Result<Self, Self::Error> {
            Self::build(iv, opts)
        }
        #[deny(unconditional_recursion)]
        #[inline]
        fn lookup(&self, addr: A) -> u32 {
            Self::lookup(self, addr)
        }
        #[deny(unconditional_recursion)]
        #[inline]
        fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
            Self::lookup_batch::<M>(self, addrs, out)
        }
        #[deny(unconditional_recursion)]
        fn footprint_bytes(&self) -> usize {
            Self::footprint_bytes(self)
        }
        #[deny(unconditional_recursion)]
        fn validate(&self) -> Result<(), String> {
            Self::validate(self)
        }
        #[deny(unconditional_recursion)]
        fn validate_below(&self, bound: u32) -> Result<(), String> {
            Self::validate_below(self, bound)
        }
    };
}
pub(crate) use inherent_engine_methods;
