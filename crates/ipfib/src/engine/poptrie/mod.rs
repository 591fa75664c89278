//! Poptrie (Asai and Ohara, SIGCOMM 2015), written from the paper: a
//! 64-ary multiway trie (k = 6) whose nodes find their children and leaves
//! by counting bits (popcount) instead of storing pointers.
//!
//! - **Nodes** (§3.2): `vector` marks the slots that hold an internal
//!   child, `leafvec` the slots that start a run of leaves, `base1` is the
//!   index of the first child and `base0` of the first leaf; children and
//!   leaves of one node are contiguous, so slot `v`'s child is
//!   `nodes[base1 + popcnt(vector & mask(v)) - 1]`.
//! - **Leaf compression** (§3.3): with `leafvec`, a leaf is stored only
//!   where its value differs from the previous *leaf* slot's; slots under
//!   internal children are holes that neither store a leaf nor break a run.
//!   Without it ("basic"), every leaf slot stores its leaf (`leafvec` is
//!   then `!vector`, so the search is the same code).
//! - **Direct pointing** (§3.4): the top `s` bits index a table of `2^s`
//!   entries, each a leaf (bit 31 set) or the index of a root node;
//!   `s = 0` means a single root.
//! - **Route aggregation** (§3.5): the trie is built from the interval
//!   compiler's output, which already merges neighbours with the same
//!   payload; with value payloads equal neighbouring routes share leaves.
//!   Compiling route ordinals instead (what `Compiled` does) is "no
//!   aggregation": no two prefixes ever merge.
//!
//! IPv6 covers every length /0-/128: a node at bit offset `o` reads the 6
//! bits `o..o + 6` of the address, padded with zeros past the last bit, so
//! the deepest level is partial (e.g. `s = 18`: offsets 18, 24, ..., 126,
//! whose slots read bits 126-127 and two zeros). Such a slot covers a
//! single address and is always a leaf.
//!
//! Files: `build.rs` (from intervals to nodes and leaves), `search.rs`
//! (single and batch lookups; the one popcount dispatch point), `update.rs`
//! (§3.5: one slot's subtree rebuilt in place, for `crate::fib`),
//! `validate.rs` (the structural check of everything the lookups' unchecked
//! reads rely on, run by tests after builds and in-place updates).

#[cfg(target_arch = "x86_64")]
mod avx512;
mod build;
mod flat;
mod search;
mod update;
mod validate;
mod versioned;

use build::low_mask;
pub(crate) use build::Focus;
pub use flat::FlatPoptrie;
pub(crate) use flat::Focus as FlatFocus;

#[doc(hidden)]
pub use update::{Arena, ArenaFull, Updatable};
pub(crate) use versioned::{Version, Writer};

use crate::addr::Addr;
use crate::intervals::{Intervals, InvalidIntervals, NO_ROUTE};
use crate::mem::LookupBuf;
use std::fmt;

/// Direct-pointing entries with this bit set are leaves (their payload in
/// the low 31 bits, or `u32::MAX` for `NO_ROUTE`); others index `nodes`.
const DIRECT_LEAF: u32 = 0x8000_0000;
/// Largest payload a direct-pointing leaf can carry.
const MAX_PAYLOAD: u32 = DIRECT_LEAF - 2;

/// A node layout: how many address bits a level reads (`K`, so `2^K`
/// slots) and how a node keeps its two bit vectors and two bases.
///
/// [`Node`] is the paper's 64-ary node (`K = 6`, 24 bytes). [`Node32`] is
/// a 32-ary one (`K = 5`, 16 bytes) that packs each vector with a base in
/// one 64-bit word, so the AVX-512 batch reads a level with one gather
/// instead of two (`avx512.rs`); it takes one more level for a /48.
///
/// ```
/// use ipfib::engine::poptrie::{Node, Node32, Stride};
/// assert_eq!((Node::K, Node::NAME), (6, "poptrie"));
/// assert_eq!((Node32::K, Node32::NAME), (5, "poptrie32"));
/// ```
pub trait Stride:
    Copy + Default + fmt::Debug + PartialEq + Eq + Send + Sync + 'static + crate::plain::Plain
{
    /// Address bits per level.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Node, Node32, Stride};
    /// assert_eq!((1 << Node::K, 1 << Node32::K), (64, 32)); // slots per node
    /// ```
    const K: u32;
    /// Name suffix of the engine (`poptrie` or `poptrie32`).
    ///
    /// ```
    /// use ipfib::engine::{poptrie::{Node32, Poptrie, Stride}, Engine};
    /// let e = Poptrie::<u32, Node32>::build(&ipfib::intervals::compile([]), &Default::default())?;
    /// assert!(Engine::name(&e).starts_with(Node32::NAME));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    const NAME: &'static str;
    #[doc(hidden)]
    fn new(vector: u64, leafvec: u64, base0: u32, base1: u32) -> Self;
    #[doc(hidden)]
    fn vector(&self) -> u64;
    #[doc(hidden)]
    fn leafvec(&self) -> u64;
    #[doc(hidden)]
    fn base0(&self) -> u32;
    #[doc(hidden)]
    fn base1(&self) -> u32;
}

/// One 64-ary internal node (§3.2): 24 bytes.
///
/// ```
/// use ipfib::engine::poptrie::{Node, Poptrie};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
/// // The default layout: /18 to /24 is one level of 6 bits.
/// let e: Poptrie<u32, Node> = Poptrie::build(&iv, &Default::default())?;
/// assert_eq!((std::mem::size_of::<Node>(), e.internal_nodes()), (24, 1));
/// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Node {
    /// Bit `v` set: slot `v` holds an internal child.
    vector: u64,
    /// Bit `v` set: slot `v` holds a leaf that starts a run.
    leafvec: u64,
    /// Index of this node's first leaf.
    base0: u32,
    /// Index of this node's first child.
    base1: u32,
}

crate::plain::plain_bytes!(Node, Node32);

impl Stride for Node {
    const K: u32 = 6;
    const NAME: &'static str = "poptrie";
    #[inline(always)]
    fn new(vector: u64, leafvec: u64, base0: u32, base1: u32) -> Self {
        Node {
            vector,
            leafvec,
            base0,
            base1,
        }
    }
    #[inline(always)]
    fn vector(&self) -> u64 {
        self.vector
    }
    #[inline(always)]
    fn leafvec(&self) -> u64 {
        self.leafvec
    }
    #[inline(always)]
    fn base0(&self) -> u32 {
        self.base0
    }
    #[inline(always)]
    fn base1(&self) -> u32 {
        self.base1
    }
}

/// One 32-ary internal node: 16 bytes, `vector | base1 << 32` and
/// `leafvec | base0 << 32`.
///
/// ```
/// use ipfib::engine::poptrie::{Node32, Poptrie};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
/// // /18 to /24 takes two levels of 5 bits, same answers.
/// let e = Poptrie::<u32, Node32>::build(&iv, &Default::default())?;
/// assert_eq!((std::mem::size_of::<Node32>(), e.internal_nodes()), (16, 2));
/// assert_eq!((e.lookup(0x0a01_0203), e.lookup(0x0a01_0303)), (2, 1));
/// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Node32 {
    child: u64,
    leaf: u64,
}

impl Stride for Node32 {
    const K: u32 = 5;
    const NAME: &'static str = "poptrie32";
    #[inline(always)]
    fn new(vector: u64, leafvec: u64, base0: u32, base1: u32) -> Self {
        Node32 {
            child: vector | (base1 as u64) << 32,
            leaf: leafvec | (base0 as u64) << 32,
        }
    }
    #[inline(always)]
    fn vector(&self) -> u64 {
        self.child & 0xffff_ffff
    }
    #[inline(always)]
    fn leafvec(&self) -> u64 {
        self.leaf & 0xffff_ffff
    }
    #[inline(always)]
    fn base0(&self) -> u32 {
        (self.leaf >> 32) as u32
    }
    #[inline(always)]
    fn base1(&self) -> u32 {
        (self.child >> 32) as u32
    }
}

pub use crate::engine::kernel::Kernel;
use crate::engine::kernel::KernelSet;

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

/// Build options for [`Poptrie`].
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

/// An address family Poptrie can search: the bit extraction it needs.
///
/// ```
/// use ipfib::engine::poptrie::{Chunks, Poptrie};
/// fn everything_to<A: Chunks>(payload: u32) -> u32 {
///     let iv = ipfib::intervals::compile([(ipfib::prefix::Prefix::<A>::default_route(), payload)]);
///     Poptrie::<A>::build(&iv, &Default::default()).unwrap().lookup(A::MAX)
/// }
/// assert_eq!((everything_to::<u32>(4), everything_to::<u128>(6)), (4, 6));
/// ```
pub trait Chunks: Addr {
    #[doc(hidden)]
    /// The top `s` bits as an index (`s <= 24`; 0 gives 0).
    fn direct_index(self, s: u32) -> usize;
    #[doc(hidden)]
    /// `self << n` (`n < BITS`).
    fn shl(self, n: u32) -> Self;
    #[doc(hidden)]
    /// The top 64 bits, left-aligned (an IPv4 address in the high half).
    fn top64(self) -> u64;
    #[doc(hidden)]
    /// The top `k` bits (`1 <= k <= 6`).
    fn top(self, k: u32) -> usize;
}

macro_rules! impl_chunks {
    ($t:ty) => {
        impl Chunks for $t {
            #[inline(always)]
            fn direct_index(self, s: u32) -> usize {
                // Two shifts so that s = 0 never shifts by the full width.
                ((self >> 1) >> (<$t>::BITS - 1 - s)) as usize
            }
            #[inline(always)]
            fn shl(self, n: u32) -> Self {
                self << n
            }
            #[inline(always)]
            fn top64(self) -> u64 {
                ((self as u128) << (128 - <$t>::BITS) >> 64) as u64
            }
            #[inline(always)]
            fn top(self, k: u32) -> usize {
                (self >> (<$t>::BITS - k)) as usize
            }
        }
    };
}
impl_chunks!(u32);
impl_chunks!(u128);

/// The Poptrie engine for one address family: answers `u32` payloads (as
/// compiled into the intervals) or [`NO_ROUTE`].
///
/// Immutable once built: `Send + Sync`, lookups never allocate or lock.
/// Payloads must be below `2^31 - 1` (so at least 2^31 - 1 distinct values
/// or routes; larger ones are refused with [`PoptrieError::PayloadTooLarge`]).
///
/// `N` is the node layout: [`Node`] (64-ary, the paper's, the default) or
/// [`Node32`] (32-ary).
///
/// ```
/// use ipfib::engine::{poptrie::Poptrie, NO_ROUTE};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u128>>().unwrap();
/// let iv = ipfib::intervals::compile([(p("2001:db8::/32"), 1), (p("2001:db8::/48"), 2)]);
/// let e = Poptrie::<u128>::build(&iv, &Default::default())?;
/// assert_eq!(e.lookup(0x2001_0db8_0000_0001 << 64), 2);
/// assert_eq!(e.lookup(0x2001_0db8_0001_0000 << 64), 1);
/// assert_eq!(e.lookup(0), NO_ROUTE);
/// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
/// ```
pub struct Poptrie<A: Chunks, N: Stride = Node> {
    // Fields crate-visible: `image::engines` stores and loads them.
    pub(crate) direct: LookupBuf<u32>,
    pub(crate) nodes: LookupBuf<N>,
    pub(crate) leaves: LookupBuf<u32>,
    pub(crate) s: u32,
    /// The prefix the direct table covers (`build::Focus`).
    pub(crate) focus: build::Focus,
    pub(crate) kernel: Kernel,
    pub(crate) leafvec: bool,
    pub(crate) _family: std::marker::PhantomData<A>,
}

impl<A: Chunks, N: Stride> Poptrie<A, N> {
    /// Build from compiled intervals: one pass over the `2^s` buckets and,
    /// per internal node, its `2^K` slots.
    ///
    /// The direct table covers only the focus prefix of the table (the
    /// longest prefix, up to `s` bits, holding every interval boundary;
    /// 2000::/3 for real IPv6 tables), so it has `2^(s - len)` entries;
    /// addresses outside it are answered without a memory access.
    ///
    /// ```
    /// use ipfib::engine::{poptrie::Poptrie, NO_ROUTE};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.1.0.0/16"), 1), (p("10.2.0.0/16"), 2)]);
    /// let e = Poptrie::<u32>::build(&iv, &Default::default())?;
    /// // Every boundary lies in 10.0.0.0/14: the direct table covers only it.
    /// assert_eq!((e.focus_bits(), e.direct_entries()), (14, 1 << (18 - 14)));
    /// assert_eq!([e.lookup(0x0a01_0001), e.lookup(0x0a02_0001)], [1, 2]);
    /// assert_eq!([e.lookup(0x0a03_0000), e.lookup(0xc000_0201)], [NO_ROUTE; 2]);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn build(iv: &Intervals<A>, opts: &PoptrieOptions) -> Result<Self, PoptrieError> {
        Self::build_focused(iv, opts, true)
    }

    /// [`Poptrie::build`], over the whole address space when `focus` is
    /// false (what in-place slot updates need: a slot of every prefix).
    pub(crate) fn build_focused(
        iv: &Intervals<A>,
        opts: &PoptrieOptions,
        focus: bool,
    ) -> Result<Self, PoptrieError> {
        let (kernel, s) = checked(iv, opts)?;
        let built = build::build::<A, N>(iv, s as u32, opts.leafvec, focus)?;
        Ok(Poptrie {
            direct: LookupBuf::from_slice(&built.direct),
            nodes: LookupBuf::from_slice(&built.nodes),
            leaves: LookupBuf::from_slice(&built.leaves),
            s: s as u32,
            focus: built.focus,
            kernel,
            leafvec: opts.leafvec,
            _family: std::marker::PhantomData,
        })
    }

    /// Payload for `addr`, or [`NO_ROUTE`].
    ///
    /// ```
    /// use ipfib::engine::{poptrie::Poptrie, NO_ROUTE};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
    /// let e = Poptrie::<u32>::build(&iv, &Default::default())?;
    /// assert_eq!([e.lookup(0x0a00_0001), e.lookup(0x0a01_ffff)], [1, 2]);
    /// assert_eq!(e.lookup(0x0b00_0000), NO_ROUTE);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    #[inline]
    pub fn lookup(&self, addr: A) -> u32 {
        search::lookup(self, addr)
    }

    /// Payloads for `addrs` into `out`, `M` addresses in flight
    /// ([`crate::engine::Engine::lookup_batch`]'s contract: `M > 0` at
    /// compile time, a panic when `out` is shorter than `addrs`).
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Node32, Poptrie};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
    /// let e = Poptrie::<u32, Node32>::build(&iv, &Default::default())?;
    /// let addrs: Vec<u32> = (0..40).map(|i| 0x0a00_0000 + i * 0x3000).collect();
    /// let mut out = vec![0; addrs.len()];
    /// e.lookup_batch::<16>(&addrs, &mut out);
    /// assert!(addrs.iter().zip(&out).all(|(&a, &o)| o == e.lookup(a)));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    #[inline]
    pub fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        super::contract::batch_args::<M, A>(addrs, out);
        search::lookup_batch::<A, N, Self, M>(self, addrs, out)
    }

    /// Direct-pointing bits `s`.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, PoptrieOptions};
    /// let opts = PoptrieOptions { direct_bits: Some(0), ..Default::default() }; // one root
    /// assert_eq!(Poptrie::<u32>::build(&ipfib::intervals::compile([]), &opts)?.direct_bits(), 0);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn direct_bits(&self) -> u8 {
        self.s as u8
    }

    /// The popcount kernel in use.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, KERNELS};
    /// let e = Poptrie::<u32>::build(&ipfib::intervals::compile([]), &Default::default())?;
    /// assert_eq!(e.kernel(), KERNELS.detect()); // the best this CPU runs
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Whether leaves are compressed with `leafvec`.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, PoptrieOptions};
    /// let basic = PoptrieOptions { leafvec: false, ..Default::default() };
    /// assert!(!Poptrie::<u32>::build(&ipfib::intervals::compile([]), &basic)?.has_leafvec());
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn has_leafvec(&self) -> bool {
        self.leafvec
    }

    /// Internal nodes (not counting the direct-pointing table).
    ///
    /// ```
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let aligned = ipfib::intervals::compile([(p("10.0.0.0/8"), 1)]);
    /// let e = ipfib::engine::poptrie::Poptrie::<u32>::build(&aligned, &Default::default())?;
    /// assert_eq!(e.internal_nodes(), 0); // /8 fits the 18-bit direct table
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn internal_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Leaves stored in the leaf array (direct-pointing leaves not counted).
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, PoptrieOptions};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.1.2.0/24"), 2)]);
    /// // One node of 64 slots: runs of no route, the /24, no route again.
    /// assert_eq!(Poptrie::<u32>::build(&iv, &Default::default())?.leaves(), 3);
    /// let basic = PoptrieOptions { leafvec: false, ..Default::default() };
    /// assert_eq!(Poptrie::<u32>::build(&iv, &basic)?.leaves(), 64);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn leaves(&self) -> usize {
        self.leaves.len()
    }

    /// Length of the prefix the direct table covers (0: all addresses).
    ///
    /// ```
    /// use ipfib::engine::poptrie::Poptrie;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.1.2.0/24"), 2)]);
    /// assert_eq!(Poptrie::<u32>::build(&iv, &Default::default())?.focus_bits(), 18);
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("192.0.2.0/24"), 2)]);
    /// assert_eq!(Poptrie::<u32>::build(&iv, &Default::default())?.focus_bits(), 0);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn focus_bits(&self) -> u8 {
        self.focus.bits as u8
    }

    /// Entries of the direct-pointing table (`2^(s - focus bits)`).
    ///
    /// ```
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("192.0.2.0/24"), 2)]);
    /// let e = ipfib::engine::poptrie::Poptrie::<u32>::build(&iv, &Default::default())?;
    /// assert_eq!(e.direct_entries(), 1 << (e.direct_bits() - e.focus_bits()));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn direct_entries(&self) -> usize {
        self.direct.len()
    }

    /// Heap bytes: direct table (4 B/entry), nodes (24 or 16 B), leaves (4 B).
    ///
    /// ```
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
    /// let e = ipfib::engine::poptrie::Poptrie::<u32>::build(&iv, &Default::default())?;
    /// let bytes = 4 * e.direct_entries() + 24 * e.internal_nodes() + 4 * e.leaves();
    /// assert_eq!(e.footprint_bytes(), bytes);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn footprint_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.direct)
            + std::mem::size_of_val(&*self.nodes)
            + std::mem::size_of_val(&*self.leaves)
    }
}

/// The kernel and `s` of `opts`, once they and `iv` are checked (both
/// layouts, [`Poptrie`] and [`FlatPoptrie`], build under these rules).
fn checked<A: Chunks>(
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
fn payloads_fit<A: Chunks>(iv: &Intervals<A>) -> Result<(), PoptrieError> {
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

impl<A: Chunks, N: Stride> super::contract::Engine<A> for Poptrie<A, N> {
    type Options = PoptrieOptions;
    type Error = PoptrieError;
    super::contract::inherent_engine_methods!();
    fn name(&self) -> String {
        format!(
            "{}[s={},{}{}]",
            N::NAME,
            self.s,
            self.kernel,
            if self.leafvec { "" } else { ",basic" }
        )
    }
}

// The AVX-512 batch reads nodes as 64-bit words at fixed offsets.
const _: () = assert!(std::mem::size_of::<Node>() == 24 && std::mem::size_of::<Node32>() == 16);

#[cfg(test)]
mod tests {
    use super::{Kernel, KERNELS};
    use crate::cpu::target_features_in;

    /// The sorted union of every `#[target_feature]` list in `files`.
    fn union(files: &[(&str, &str)]) -> Vec<String> {
        let mut all = Vec::new();
        for (name, text) in files {
            let lists = target_features_in(text);
            assert!(!lists.is_empty(), "{name}: no #[target_feature] found");
            all.extend(lists.into_iter().flatten());
        }
        all.sort_unstable();
        all.dedup();
        all
    }

    fn sorted(k: Kernel) -> Vec<String> {
        let features = KERNELS.target_features(k).unwrap();
        let mut v: Vec<String> = features.iter().map(|f| f.to_string()).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn detection_checks_every_target_feature() {
        let popcnt = [
            ("search.rs", include_str!("search.rs")),
            ("flat/search.rs", include_str!("flat/search.rs")),
        ];
        let avx512 = [
            ("avx512.rs", include_str!("avx512.rs")),
            ("flat/avx512.rs", include_str!("flat/avx512.rs")),
        ];
        // The Popcnt kernel runs the search.rs wrappers; Avx512 runs those
        // too (single lookups, batch remainders) and the avx512.rs code.
        assert_eq!(sorted(Kernel::Popcnt), union(&popcnt), "popcnt");
        let both: Vec<(&str, &str)> = popcnt.iter().chain(&avx512).copied().collect();
        assert_eq!(sorted(Kernel::Avx512), union(&both), "avx512");
        crate::engine::kernel::tests::well_formed(&KERNELS);
    }
}
