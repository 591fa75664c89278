//! What a build is asked for and how it can fail: [`PoptrieOptions`],
//! [`PoptrieError`], the kernel set and the checks every build (both
//! layouts) and every slot update run first.

use super::layout::{Chunks, MAX_PAYLOAD};
use crate::engine::kernel::{Kernel, KernelSet};
use crate::intervals::{Intervals, InvalidIntervals, NO_ROUTE};

/// Poptrie's kernels (both layouts), best first: the one choice made per
/// build (SIMD is chosen at one dispatch point, never inside the hot loop).
/// - [`Kernel::Avx512`]: [`Kernel::Popcnt`] for single lookups; batches (of
///   a multiple of 8 addresses) walk eight lanes per AVX-512 vector with
///   gathers (`avx512.rs`); needs AVX-512F, VL and VPOPCNTDQ.
/// - [`Kernel::Popcnt`]: the search compiled with `popcnt`, `bmi1` and
///   `bmi2`: one `popcnt` per level.
/// - [`Kernel::Scalar`]: `count_ones()` for the baseline target (a
///   bit-twiddling sequence on x86-64 without `popcnt`).
///
/// The features are those of the `#[target_feature]` attributes of
/// `search.rs` and `flat/search.rs` (`Popcnt`, and `Avx512` for single
/// lookups and batch remainders), plus those of `avx512.rs` and
/// `flat/avx512.rs` (`Avx512`); the tests compare the two.
///
/// ```
/// use ipfib::engine::poptrie::{FlatPoptrie, Kernel, PoptrieOptions, KERNELS};
/// assert_eq!(KERNELS.engine(), "poptrie");
/// // Every kernel this CPU supports builds both layouts.
/// let iv = ipfib::intervals::compile::<u32>([]);
/// for k in KERNELS.supported() {
///     let e = FlatPoptrie::build(&iv, &PoptrieOptions { kernel: Some(k), ..Default::default() })?;
///     assert_eq!(e.kernel(), k);
/// }
/// assert!(!KERNELS.all().any(|k| k == Kernel::Avx2));
/// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
/// ```
pub const KERNELS: KernelSet = KernelSet::new(
    "poptrie",
    &[
        (
            Kernel::Avx512,
            &[
                "popcnt",
                "bmi1",
                "bmi2",
                "avx512f",
                "avx512vl",
                "avx512vpopcntdq",
            ],
        ),
        (Kernel::Popcnt, &["popcnt", "bmi1", "bmi2"]),
        (Kernel::Scalar, &[]),
    ],
);

/// Build options for [`Poptrie`](super::Poptrie).
///
/// ```
/// use ipfib::engine::poptrie::{Kernel, Poptrie, PoptrieOptions};
/// let opts = PoptrieOptions { direct_bits: Some(16), leafvec: false, kernel: Some(Kernel::Scalar) };
/// let e = Poptrie::<u32>::build(&ipfib::intervals::compile([]), &opts)?;
/// assert_eq!((e.direct_bits(), e.has_leafvec(), e.kernel()), (16, false, Kernel::Scalar));
/// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoptrieOptions {
    /// Direct-pointing bits `s` (0 to [`PoptrieOptions::MAX_DIRECT_BITS`]);
    /// `None`: [`PoptrieOptions::DEFAULT_DIRECT_BITS`].
    pub direct_bits: Option<u8>,
    /// Leaf compression with `leafvec` (§3.3); `false` builds the basic
    /// Poptrie (one leaf per leaf slot), for comparison.
    pub leafvec: bool,
    /// Popcount kernel; `None` picks the best the CPU supports.
    pub kernel: Option<Kernel>,
}

impl Default for PoptrieOptions {
    fn default() -> Self {
        PoptrieOptions {
            direct_bits: None,
            leafvec: true,
            kernel: None,
        }
    }
}

impl PoptrieOptions {
    /// Largest accepted `s` (a 64 MiB direct table).
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, PoptrieError, PoptrieOptions};
    /// let s = PoptrieOptions::MAX_DIRECT_BITS + 1;
    /// let opts = PoptrieOptions { direct_bits: Some(s), ..Default::default() };
    /// let e = Poptrie::<u32>::build(&ipfib::intervals::compile([]), &opts);
    /// assert_eq!(e.err(), Some(PoptrieError::DirectBits(25)));
    /// ```
    pub const MAX_DIRECT_BITS: u8 = 24;
    /// Default `s` for both families: 18, the paper's choice, and the
    /// fastest of 0 / 16 / 18 in our measurements (BENCHMARKS.md,
    /// "Poptrie"; docs/benchmark-history.md, "Poptrie: the paper comparison
    /// and every real table").
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, PoptrieOptions};
    /// let e = Poptrie::<u32>::build(&ipfib::intervals::compile([]), &PoptrieOptions::default())?;
    /// assert_eq!(e.direct_bits(), PoptrieOptions::DEFAULT_DIRECT_BITS);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub const DEFAULT_DIRECT_BITS: u8 = 18;
}

/// Why a Poptrie could not be built (or configured).
///
/// ```
/// use ipfib::engine::poptrie::{Kernel, Poptrie, PoptrieError, PoptrieOptions};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// let big = ipfib::intervals::compile([(p("10.0.0.0/8"), 0x7fff_ffff)]);
/// let e = Poptrie::<u32>::build(&big, &Default::default());
/// assert_eq!(e.err(), Some(PoptrieError::PayloadTooLarge(0x7fff_ffff)));
/// // Poptrie has no AVX2 kernel.
/// let avx2 = PoptrieOptions { kernel: Some(Kernel::Avx2), ..Default::default() };
/// let e = Poptrie::<u32>::build(&ipfib::intervals::compile([]), &avx2);
/// assert_eq!(e.err(), Some(PoptrieError::UnsupportedKernel(Kernel::Avx2)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoptrieError {
    #[error("direct-pointing bits {0} out of range (0..={max})", max = PoptrieOptions::MAX_DIRECT_BITS)]
    DirectBits(u8),
    /// Poptrie has no such kernel, or this CPU lacks its instructions
    /// (`ipfib engines` lists Poptrie's kernels here).
    #[error("poptrie cannot run kernel {0} on this CPU (see `ipfib engines`)")]
    UnsupportedKernel(Kernel),
    #[error("payload {0} is too large (poptrie payloads must stay below 2^31 - 1)")]
    PayloadTooLarge(u32),
    #[error("{0} internal nodes is more than poptrie indexes (2^31)")]
    TooManyNodes(usize),
    #[error("{0} entries is more than the flat poptrie indexes (2^31)")]
    TooManyEntries(usize),
    #[error("{0} leaves is more than poptrie indexes (2^32)")]
    TooManyLeaves(usize),
    #[error("malformed intervals: {0}")]
    InvalidIntervals(#[from] InvalidIntervals),
}

/// The kernel and `s` of `opts`, once they and `iv` are checked (both
/// layouts, [`Poptrie`](super::Poptrie) and [`FlatPoptrie`](super::FlatPoptrie), build under these rules).
pub(super) fn checked<A: Chunks>(
    iv: &Intervals<A>,
    opts: &PoptrieOptions,
) -> Result<(Kernel, u8), PoptrieError> {
    let kernel = KERNELS
        .choose(opts.kernel)
        .map_err(PoptrieError::UnsupportedKernel)?;
    let s = opts
        .direct_bits
        .unwrap_or(PoptrieOptions::DEFAULT_DIRECT_BITS);
    if s > PoptrieOptions::MAX_DIRECT_BITS {
        return Err(PoptrieError::DirectBits(s));
    }
    payloads_fit(iv)?;
    Ok((kernel, s))
}

/// `iv` is well formed and every payload fits a leaf (below 2^31 - 1, or
/// [`NO_ROUTE`]): what a build and a slot update both check first.
pub(super) fn payloads_fit<A: Chunks>(iv: &Intervals<A>) -> Result<(), PoptrieError> {
    iv.validate()?;
    match iv
        .payloads
        .iter()
        .find(|&&p| p > MAX_PAYLOAD && p != NO_ROUTE)
    {
        Some(&p) => Err(PoptrieError::PayloadTooLarge(p)),
        None => Ok(()),
    }
}
