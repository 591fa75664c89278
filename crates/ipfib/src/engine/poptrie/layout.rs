//! The data layout shared by the build, the searches, the updates and the
//! checks: the node layouts ([`Stride`]), the address families
//! ([`Chunks`]), the direct-pointing leaf encoding and the [`Poptrie`]
//! struct itself. Nothing here depends on the code that fills or reads it.

use crate::addr::Addr;
use crate::engine::kernel::Kernel;
use crate::mem::LookupBuf;
use std::fmt;

/// Direct-pointing entries with this bit set are leaves (their payload in
/// the low 31 bits, or `u32::MAX` for `NO_ROUTE`); others index `nodes`.
pub(super) const DIRECT_LEAF: u32 = 0x8000_0000;
/// Largest payload a direct-pointing leaf can carry.
pub(super) const MAX_PAYLOAD: u32 = DIRECT_LEAF - 2;

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
    pub(super) vector: u64,
    /// Bit `v` set: slot `v` holds a leaf that starts a run.
    pub(super) leafvec: u64,
    /// Index of this node's first leaf.
    pub(super) base0: u32,
    /// Index of this node's first child.
    pub(super) base1: u32,
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
/// compiled into the intervals) or [`NO_ROUTE`](crate::intervals::NO_ROUTE).
///
/// Immutable once built: `Send + Sync`, lookups never allocate or lock.
/// Payloads must be below `2^31 - 1` (so at least 2^31 - 1 distinct values
/// or routes; larger ones are refused with [`PoptrieError::PayloadTooLarge`](super::PoptrieError::PayloadTooLarge)).
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
    /// The prefix the direct table covers.
    pub(crate) focus: Focus,
    pub(crate) kernel: Kernel,
    pub(crate) leafvec: bool,
    pub(crate) _family: std::marker::PhantomData<A>,
}

/// The focus prefix `F` of a trie: every interval boundary lies in
/// `[F.first, F.last + 1]`, so addresses below `F` share one answer and
/// addresses above it another, and the direct table need only cover `F`:
/// `2^(s - bits)` entries instead of `2^s`. Real IPv6 tables lie in
/// 2000::/3 (bits = 3): s = 18 then costs 128 KiB instead of 1 MiB.
/// `bits == 0`: no focus (the whole address space).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Focus {
    // Fields crate-visible: `image::engines` stores and loads them.
    /// Length of `F`, at most `s`.
    pub(crate) bits: u32,
    /// `F.first`.
    pub(crate) first: u128,
    /// `F.first` left-aligned in 64 bits (its top 64 bits; `F` is at most
    /// 24 bits long, so they decide membership and order).
    pub(crate) first_top: u64,
    /// Direct entries (leaf form) for the addresses below and above `F`.
    pub(crate) below: u32,
    pub(crate) above: u32,
}

// The AVX-512 batch reads nodes as 64-bit words at fixed offsets.
const _: () = assert!(std::mem::size_of::<Node>() == 24 && std::mem::size_of::<Node32>() == 16);
