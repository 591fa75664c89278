//! Search kernels: count the keys of one 64-byte node that are below the
//! probe. One file per instruction set; the search algorithm in
//! `search.rs` is written once against the [`Count`] trait and instantiated
//! per kernel inside a `#[target_feature]` wrapper, so the hot loop is
//! compiled for that instruction set with the count inlined.
//!
//! The kernel is chosen once when an engine is built ([`KERNELS`], through
//! the shared [`crate::engine::kernel::KernelSet`]), never per lookup, and a
//! caller may force any supported one.

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;
#[cfg(target_arch = "aarch64")]
pub(crate) mod neon;
pub(crate) mod scalar;

pub use crate::engine::kernel::Kernel;
use crate::engine::kernel::KernelSet;

/// PlanB's kernels, best first, with the target features the
/// `#[target_feature]` wrappers in `search.rs` are compiled with (its
/// tests compare the two).
///
/// ```
/// use ipfib::engine::planb::{kernel::Kernel, PlanB, PlanBOptions, KERNELS};
/// assert_eq!(KERNELS.engine(), "planb");
/// // Every kernel this CPU supports builds, and answers alike.
/// let iv = ipfib::intervals::compile([("10.0.0.0/8".parse::<ipfib::prefix::Prefix<u32>>()?, 1)]);
/// for k in KERNELS.supported() {
///     let e = PlanB::build(&iv, &PlanBOptions { kernel: Some(k), ..Default::default() })?;
///     assert_eq!((e.kernel(), e.lookup(0x0a00_0001)), (k, 1));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const KERNELS: KernelSet = KernelSet::new(
    "planb",
    &[
        (Kernel::Avx512, &["avx512f", "popcnt"]),
        (Kernel::Avx2, &["avx2", "popcnt"]),
        (Kernel::Neon, &["neon"]),
        (Kernel::Scalar, &[]),
    ],
);

/// Count the keys of one node that are strictly below the probe.
///
/// # Safety
/// `node` must point at 16 readable keys (one 64-byte line of `u32`, two of
/// `u64`; the pointer need not be aligned), and the CPU must support the
/// kernel.
#[doc(hidden)]
pub trait Count {
    /// 16 `u32` keys.
    unsafe fn count_u32(node: *const u32, probe: u32) -> usize;
    /// 16 `u64` keys (two lines: IPv6 nodes are 17-ary like IPv4's).
    unsafe fn count_u64(node: *const u64, probe: u64) -> usize;
}
