//! PlanB: elementary intervals searched in a linearized B+-tree (PlanB,
//! NSDI '26), with three changes of ours:
//! - the tree is laid out for the real key count (`tree.rs`), no padding;
//! - IPv6 searches the upper 64 bits; the rare upper slots whose intervals
//!   need the lower 64 bits point to a second stage (`stage2.rs`), so every
//!   length /0-/128 is exact;
//! - a direct-pointing table on the top `s` bits (Poptrie §3.4's trick,
//!   applied to ranks): a bucket inside one interval answers from its entry,
//!   one whose keys fit a node by one window compare over the leaf array,
//!   a heavy one through a sub-table on its next bits, the rest by a small
//!   local tree over their own keys only.
//!
//! The search itself lives in `search.rs`, written once and compiled per
//! kernel (`kernel/`); `validate.rs` checks the structure its unchecked
//! reads rely on ([`PlanB::validate`]).

pub mod kernel;
mod search;
mod stage2;
mod tree;
mod validate;

use crate::addr::Addr;
use crate::intervals::{Intervals, InvalidIntervals, NO_ROUTE};
use crate::mem::LookupBuf;
use kernel::Kernel;
pub use kernel::KERNELS;
pub(crate) use stage2::Stage2;
use tree::{build_local, lines_per_node, Desc, Key, Line};

/// Batch sizes the tests and benchmarks exercise.
///
/// ```
/// use ipfib::engine::{planb::{PlanB, BATCH_SIZES}, NO_ROUTE};
/// assert_eq!(BATCH_SIZES, [8, 16, 32, 64]);
/// let e = PlanB::build(&ipfib::intervals::compile::<u32>([]), &Default::default()).unwrap();
/// let mut out = [0; 3]; // fewer addresses than the batch size: fine
/// e.lookup_batch::<{ BATCH_SIZES[3] }>(&[1, 2, 3], &mut out);
/// assert_eq!(out, [NO_ROUTE; 3]);
/// ```
pub const BATCH_SIZES: [usize; 4] = [8, 16, 32, 64];

/// Direct-pointing entries (one `u32` per bucket of the top `s` bits):
/// - below `DP_SUB`: the bucket's first rank; one window compare is exact;
/// - `DP_SUB | t << 26 | o`: a heavy bucket split again on its next `t`
///   bits by the sub-table `sub[o..o + 2^t]` (whose entries are of the
///   other kinds, never sub-tables);
/// - `DP_TREE | i`: descend local tree `i` (`descs[i]`);
/// - `DP_PAYLOAD | p`: the whole bucket lies in one interval of payload `p`
///   (`DP_INDEX` stands for `NO_ROUTE`): no search, no further miss.
const DP_SUB: u32 = 0x4000_0000;
const DP_TREE: u32 = 0x8000_0000;
const DP_PAYLOAD: u32 = 0xC000_0000;
const DP_KIND: u32 = 0xC000_0000;
const DP_INDEX: u32 = 0x3FFF_FFFF;
const SUB_OFFSET: u32 = 0x03FF_FFFF;
/// Largest sub-table: 2^12 entries (16 KiB).
const SUB_MAX_BITS: u32 = 12;

/// The earlier name of [`PlanBOptions`].
///
/// ```
/// # use ipfib::engine::planb::PlanB;
/// #[allow(deprecated)]
/// let opts = ipfib::engine::planb::PlanbOptions { direct_bits: Some(16), ..Default::default() };
/// let e = PlanB::build(&ipfib::intervals::compile::<u32>([]), &opts)?;
/// assert_eq!(e.direct_bits(), 16);
/// # Ok::<(), ipfib::engine::planb::BuildError>(())
/// ```
#[deprecated(note = "renamed PlanBOptions, like the engine")]
pub type PlanbOptions = PlanBOptions;

/// Build options for [`PlanB`].
///
/// ```
/// use ipfib::engine::kernel::Kernel;
/// use ipfib::engine::planb::{PlanB, PlanBOptions};
/// let iv = ipfib::intervals::compile::<u32>([]);
/// let opts = PlanBOptions { kernel: Some(Kernel::Scalar), direct_bits: Some(16), ..Default::default() };
/// let e = PlanB::build(&iv, &opts)?;
/// assert_eq!((e.kernel(), e.direct_bits()), (Kernel::Scalar, 16));
/// # Ok::<(), ipfib::engine::planb::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PlanBOptions {
    /// Search kernel; `None` picks the best the CPU supports.
    pub kernel: Option<Kernel>,
    /// Direct-pointing bits `s` (1 to 24); `None` picks a default from the
    /// table size (see [`PlanBOptions::default_direct_bits`]). The build
    /// raises `s` when a bucket would need more than six tree levels.
    pub direct_bits: Option<u8>,
    /// Buckets with more keys than this are split again by a sub-table
    /// (`None`: [`PlanBOptions::DEFAULT_SUB_MIN_KEYS`]); smaller ones get a
    /// local tree when they exceed one node. `Some(usize::MAX)` disables
    /// sub-tables.
    pub sub_min_keys: Option<usize>,
}

impl PlanBOptions {
    /// Largest accepted `s`.
    ///
    /// ```
    /// use ipfib::engine::planb::{BuildError, PlanB, PlanBOptions};
    /// let iv = ipfib::intervals::compile::<u32>([]);
    /// let s = PlanBOptions::MAX_DIRECT_BITS + 1;
    /// let opts = PlanBOptions { direct_bits: Some(s), ..Default::default() };
    /// assert_eq!(PlanB::build(&iv, &opts).err(), Some(BuildError::DirectBits(25)));
    /// ```
    pub const MAX_DIRECT_BITS: u8 = 24;

    /// Default heavy-bucket threshold: more keys than one tree level holds
    /// (16 x 17). Lower thresholds create sub-tables in tables that
    /// otherwise need none, and every lookup then pays the masked sub-table
    /// step (cachegrind, 606K IPv4, s = 20: 50 instead of 80 instructions
    /// per matched lookup at 272 rather than 32).
    ///
    /// ```
    /// use ipfib::engine::planb::{PlanB, PlanBOptions};
    /// use ipfib::prefix::Prefix;
    /// assert_eq!(PlanBOptions::DEFAULT_SUB_MIN_KEYS, 272);
    /// // 300 keys in one bucket of 10.0.0.0/12: more than 272, so split.
    /// let routes = (0..150).map(|i| (Prefix::new(0x0a00_0000 + 2 * i, 32).unwrap(), 1 + i % 2));
    /// let iv = ipfib::intervals::compile(routes);
    /// let split = PlanB::build(&iv, &PlanBOptions::default())?;
    /// let whole = PlanB::build(&iv, &PlanBOptions { sub_min_keys: Some(usize::MAX), ..Default::default() })?;
    /// assert!(split.sub_entries() > whole.sub_entries());
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    pub const DEFAULT_SUB_MIN_KEYS: usize = 16 * 17;

    /// The default `s` for a table with `keys` keys of `key_bits` bits.
    ///
    /// IPv4 (32-bit keys): one to two entries per key, 2^12 to 2^20
    /// entries: most buckets then hold at most one window of keys (measured
    /// best on the 606K and 1.1M tables; at most 4 MiB).
    /// IPv6 (64-bit keys): about one entry per eight keys, 2^12 to 2^16:
    /// IPv6 keys crowd into a few /16s, which sub-tables split better than
    /// a larger table would, and a small table stays in cache for the
    /// mostly-missing uniform trace (BENCHMARKS.md).
    ///
    /// ```
    /// use ipfib::engine::planb::PlanBOptions;
    /// assert_eq!(PlanBOptions::default_direct_bits(1000, 32), 12);
    /// assert_eq!(PlanBOptions::default_direct_bits(1 << 20, 32), 20);
    /// assert_eq!(PlanBOptions::default_direct_bits(1 << 20, 64), 16);
    /// ```
    pub fn default_direct_bits(keys: usize, key_bits: u32) -> u8 {
        let bits = usize::BITS - keys.max(1).leading_zeros();
        if key_bits <= 32 {
            (bits + 1).clamp(12, 20) as u8
        } else {
            bits.saturating_sub(3).clamp(12, 16) as u8
        }
    }
}

/// Why an engine could not be built.
///
/// ```
/// use ipfib::engine::planb::{BuildError, PlanB};
/// use ipfib::intervals::Intervals;
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// let big = ipfib::intervals::compile([(p("10.0.0.0/8"), 1 << 31)]);
/// let err = PlanB::build(&big, &Default::default()).err();
/// assert_eq!(err, Some(BuildError::PayloadTooLarge(1 << 31)));
/// let bad = Intervals { starts: vec![1u32], payloads: vec![0] };
/// assert!(matches!(PlanB::build(&bad, &Default::default()), Err(BuildError::InvalidIntervals(_))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// PlanB has no such kernel, or this CPU lacks its instructions
    /// (`ipfib engines` lists PlanB's kernels here).
    #[error("planb cannot run kernel {0} on this CPU (see `ipfib engines`)")]
    UnsupportedKernel(Kernel),
    #[error("direct-pointing bits {0} out of range (1..={max})", max = PlanBOptions::MAX_DIRECT_BITS)]
    DirectBits(u8),
    #[error("a direct-pointing bucket holds too many keys even with s = {max}", max = PlanBOptions::MAX_DIRECT_BITS)]
    BucketTooLarge,
    #[error("{0} intervals is more than this engine indexes (2^30)")]
    TooManyIntervals(usize),
    #[error("payload {0} is too large (payloads must stay below 2^31 - 1)")]
    PayloadTooLarge(u32),
    #[error("malformed intervals: {0}")]
    InvalidIntervals(#[from] InvalidIntervals),
}

/// An address family PlanB can search: maps an address to its tree key and
/// splits compiled intervals into the tree stage and the second stage.
///
/// ```
/// use ipfib::engine::planb::{Family, PlanB};
/// fn everything_to<A: Family>(payload: u32) -> u32 {
///     let iv = ipfib::intervals::compile([(ipfib::prefix::Prefix::<A>::default_route(), payload)]);
///     PlanB::build(&iv, &Default::default()).unwrap().lookup(A::MAX)
/// }
/// assert_eq!(everything_to::<u32>(4), 4);
/// assert_eq!(everything_to::<u128>(6), 6);
/// ```
pub trait Family: Addr {
    #[doc(hidden)]
    type Key: Key;
    #[doc(hidden)]
    fn key(self) -> Self::Key;
    #[doc(hidden)]
    fn split(iv: &Intervals<Self>) -> (Vec<Self::Key>, Vec<u32>, Stage2);
    #[doc(hidden)]
    fn low(self) -> u64;
}

impl Family for u32 {
    type Key = u32;
    #[inline(always)]
    fn key(self) -> u32 {
        self
    }
    fn split(iv: &Intervals<u32>) -> (Vec<u32>, Vec<u32>, Stage2) {
        (iv.starts.clone(), iv.payloads.clone(), Stage2::default())
    }
    #[inline(always)]
    fn low(self) -> u64 {
        0
    }
}

impl Family for u128 {
    type Key = u64;
    #[inline(always)]
    fn key(self) -> u64 {
        (self >> 64) as u64
    }
    fn split(iv: &Intervals<u128>) -> (Vec<u64>, Vec<u32>, Stage2) {
        stage2::split_v6(iv)
    }
    #[inline(always)]
    fn low(self) -> u64 {
        self as u64
    }
}

/// The PlanB engine for one address family: answers `u32` payloads (as
/// compiled into the intervals) or [`NO_ROUTE`].
///
/// Immutable once built: `Send + Sync`, lookups never allocate or lock.
///
/// ```
/// use ipfib::engine::{planb::PlanB, NO_ROUTE};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u128>>().unwrap();
/// let iv = ipfib::intervals::compile([(p("2001:db8::/32"), 1), (p("2001:db8::/48"), 2)]);
/// let e = PlanB::build(&iv, &Default::default())?;
/// assert_eq!(e.lookup(0x2001_0db8_0000_0001 << 64), 2);
/// assert_eq!(e.lookup(0x2001_0db8_0001_0000 << 64), 1);
/// assert_eq!(e.lookup(0), NO_ROUTE);
/// # Ok::<(), ipfib::engine::planb::BuildError>(())
/// ```
pub struct PlanB<A: Family> {
    // Fields crate-visible: `image::engines` stores and loads them.
    /// Sorted keys (`start - 1`) plus `LANES` padding keys.
    pub(crate) leaves: LookupBuf<A::Key>,
    /// Internal levels of the buckets' local trees.
    pub(crate) inner: LookupBuf<Line>,
    pub(crate) descs: LookupBuf<Desc>,
    pub(crate) direct: LookupBuf<u32>,
    /// `BITS - s`.
    pub(crate) direct_shift: u32,
    /// Sub-tables of heavy buckets, concatenated.
    pub(crate) sub: LookupBuf<u32>,
    /// `64 - BITS + s`: shifts a key (as u64) so its bits after the top
    /// `s` lead.
    pub(crate) sub_shift: u32,
    /// `payloads[rank]`: payload of the interval of that rank; for IPv6 a
    /// value with bit 31 set (other than `NO_ROUTE`) names a second-stage slot.
    pub(crate) payloads: LookupBuf<u32>,
    pub(crate) stage2: Stage2,
    pub(crate) kernel: Kernel,
    pub(crate) intervals: usize,
    pub(crate) max_levels: usize,
}

impl<A: Family> PlanB<A> {
    /// Build from compiled intervals. Linear in the number of intervals
    /// (plus `2^s` for the direct-pointing table).
    ///
    /// ```
    /// use ipfib::engine::planb::{PlanB, PlanBOptions};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
    /// let e = PlanB::build(&iv, &PlanBOptions::default())?;
    /// assert_eq!((e.lookup(0x0a01_0203), e.lookup(0x0a01_0303)), (2, 1));
    /// assert_eq!(e.intervals(), iv.len());
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    pub fn build(iv: &Intervals<A>, opts: &PlanBOptions) -> Result<Self, BuildError> {
        let kernel = KERNELS
            .choose(opts.kernel)
            .map_err(BuildError::UnsupportedKernel)?;
        // Keys are `start - 1` of starts[1..] and ranks index `payloads`
        // unchecked: both need the shape `validate` checks.
        iv.validate()?;
        if let Some(&p) = iv
            .payloads
            .iter()
            .find(|&&p| p >= stage2::STAGE2 && p != NO_ROUTE)
        {
            return Err(BuildError::PayloadTooLarge(p));
        }
        let (starts, payloads, stage2) = A::split(iv);
        // Tree keys: every start but the first (which is zero), minus one.
        let mut keys: Vec<A::Key> = Vec::with_capacity(starts.len() + A::Key::LANES);
        keys.extend(
            starts[1..]
                .iter()
                .map(|&s| A::Key::from_u64(s.to_u64() - 1)),
        );
        let n_keys = keys.len();
        if n_keys >= DP_SUB as usize {
            return Err(BuildError::TooManyIntervals(n_keys));
        }
        let mut s = match opts.direct_bits {
            Some(s) if s == 0 || s > PlanBOptions::MAX_DIRECT_BITS => {
                return Err(BuildError::DirectBits(s))
            }
            Some(s) => s,
            None => PlanBOptions::default_direct_bits(n_keys, A::Key::BITS),
        };
        let buckets = loop {
            match Buckets::build(
                &keys,
                &payloads,
                s,
                opts.sub_min_keys
                    .unwrap_or(PlanBOptions::DEFAULT_SUB_MIN_KEYS),
            ) {
                Some(b) => break b,
                None if s + 2 <= PlanBOptions::MAX_DIRECT_BITS => s += 2,
                None => return Err(BuildError::BucketTooLarge),
            }
        };
        keys.resize(n_keys + A::Key::LANES, A::Key::PAD);
        Ok(PlanB {
            leaves: LookupBuf::from_slice(&keys),
            inner: LookupBuf::from_slice(&buckets.inner),
            descs: LookupBuf::from_slice(&buckets.descs),
            direct: LookupBuf::from_slice(&buckets.direct),
            direct_shift: A::Key::BITS - s as u32,
            sub: LookupBuf::from_slice(&buckets.sub),
            sub_shift: 64 - A::Key::BITS + s as u32,
            payloads: LookupBuf::from_slice(&payloads),
            stage2,
            kernel,
            intervals: iv.len(),
            max_levels: buckets.max_levels,
        })
    }

    /// The kernel in use.
    ///
    /// ```
    /// use ipfib::engine::planb::{PlanB, KERNELS};
    /// let e = PlanB::build(&ipfib::intervals::compile::<u32>([]), &Default::default())?;
    /// assert_eq!(e.kernel(), KERNELS.detect()); // the best this CPU runs
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Direct-pointing bits `s`.
    ///
    /// ```
    /// use ipfib::engine::planb::{PlanB, PlanBOptions};
    /// let iv = ipfib::intervals::compile::<u32>([]);
    /// let e = PlanB::build(&iv, &PlanBOptions { direct_bits: Some(16), ..Default::default() })?;
    /// assert_eq!(e.direct_bits(), 16);
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    pub fn direct_bits(&self) -> u8 {
        (A::Key::BITS - self.direct_shift) as u8
    }

    /// Number of elementary intervals compiled in.
    ///
    /// ```
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1)]); // before, inside, after
    /// assert_eq!(ipfib::engine::planb::PlanB::build(&iv, &Default::default())?.intervals(), 3);
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    pub fn intervals(&self) -> usize {
        self.intervals
    }

    /// Most memory accesses of one lookup: direct table, tree levels, leaf
    /// window, payload.
    ///
    /// ```
    /// use ipfib::engine::planb::PlanB;
    /// use ipfib::prefix::Prefix;
    /// let small = PlanB::build(&ipfib::intervals::compile::<u32>([]), &Default::default())?;
    /// assert_eq!(small.depth(), 3); // no tree levels
    /// let routes = (0..150).map(|i| (Prefix::new(0x0a00_0000 + 2 * i, 32).unwrap(), 1 + i % 2));
    /// let crowded = PlanB::build(&ipfib::intervals::compile(routes), &Default::default())?;
    /// assert!(crowded.depth() > 3);
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    pub fn depth(&self) -> usize {
        self.max_levels + 3
    }

    /// Buckets that need a local tree (more than one node of keys).
    ///
    /// ```
    /// use ipfib::engine::planb::PlanB;
    /// use ipfib::prefix::Prefix;
    /// // 60 keys in one bucket of 10.0.0.0/12: more than a node holds.
    /// let routes = (0..30u32).map(|i| (Prefix::new(0x0a00_0000 + 2 * i, 32).unwrap(), 1));
    /// let e = PlanB::build(&ipfib::intervals::compile(routes), &Default::default())?;
    /// assert_eq!(e.tree_buckets(), 1);
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    pub fn tree_buckets(&self) -> usize {
        self.descs.len()
    }

    /// Entries of the sub-tables array: the heavy buckets' sub-tables
    /// after one leading padding entry (batch lanes read it), so 1 when no
    /// bucket was split.
    ///
    /// ```
    /// use ipfib::engine::planb::PlanB;
    /// use ipfib::prefix::Prefix;
    /// // 300 keys in one bucket: a heavy one, split on its next bits.
    /// let routes = (0..150).map(|i| (Prefix::new(0x0a00_0000 + 2 * i, 32).unwrap(), 1 + i % 2));
    /// let e = PlanB::build(&ipfib::intervals::compile(routes), &Default::default())?;
    /// assert!(e.sub_entries() >= 1 + 256);
    /// let light = PlanB::build(&ipfib::intervals::compile::<u32>([]), &Default::default())?;
    /// assert_eq!(light.sub_entries(), 1); // the padding entry alone
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    pub fn sub_entries(&self) -> usize {
        self.sub.len()
    }

    /// Intervals resolved by the IPv6 second stage.
    ///
    /// ```
    /// use ipfib::engine::planb::PlanB;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u128>>().unwrap();
    /// let short = ipfib::intervals::compile([(p("2001:db8::/48"), 1)]);
    /// assert_eq!(PlanB::build(&short, &Default::default())?.stage2_intervals(), 0);
    /// let long = ipfib::intervals::compile([(p("2001:db8::1:0/112"), 1)]);
    /// let e = PlanB::build(&long, &Default::default())?;
    /// assert!(e.stage2_intervals() > 0);
    /// assert_eq!(e.lookup(0x2001_0db8_0000_0000_0000_0000_0001_0005), 1);
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    pub fn stage2_intervals(&self) -> usize {
        self.stage2.len()
    }

    /// Heap bytes of the lookup structure (keys, tree lines, payloads,
    /// direct table, second stage).
    ///
    /// ```
    /// use ipfib::engine::planb::{PlanB, PlanBOptions};
    /// let iv = ipfib::intervals::compile::<u32>([]);
    /// let e = PlanB::build(&iv, &PlanBOptions { direct_bits: Some(16), ..Default::default() })?;
    /// assert!(e.footprint_bytes() >= 4 << 16); // 2^16 direct entries of 4 bytes
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    pub fn footprint_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.leaves)
            + std::mem::size_of_val(&*self.inner)
            + std::mem::size_of_val(&*self.descs)
            + std::mem::size_of_val(&*self.direct)
            + std::mem::size_of_val(&*self.sub)
            + std::mem::size_of_val(&*self.payloads)
            + self.stage2.footprint_bytes()
    }
}

/// The direct-pointing table, the sub-tables and the buckets' local trees.
struct Buckets {
    sub_min_keys: usize,
    direct: Vec<u32>,
    sub: Vec<u32>,
    descs: Vec<Desc>,
    inner: Vec<Line>,
    max_levels: usize,
}

impl Buckets {
    /// One merge walk over the keys and the `2^s` buckets. `None` when a
    /// bucket needs more than `MAX_LEVELS` levels.
    fn build<K: Key>(keys: &[K], payloads: &[u32], s: u8, sub_min_keys: usize) -> Option<Buckets> {
        let mut b = Buckets {
            sub_min_keys,
            direct: Vec::new(),
            // Entry 0 is never named by a sub-table: batch lanes without a
            // sub-table read it instead of branching (see search.rs).
            sub: vec![0],
            descs: Vec::new(),
            // Node 0: all padding, the root of every level a shallow tree
            // lacks (see `equalise_levels`).
            inner: vec![Line::padding(); lines_per_node::<K>()],
            max_levels: 0,
        };
        b.direct = b.table(keys, payloads, 0, 0, 0, s as u32, true)?;
        b.equalise_levels();
        Some(b)
    }

    /// Entries for the `2^bits` buckets that split the span of addresses
    /// sharing their top `fixed` bits with `base`; no key below rank `from`
    /// lies in the span.
    #[allow(clippy::too_many_arguments)]
    fn table<K: Key>(
        &mut self,
        keys: &[K],
        payloads: &[u32],
        from: usize,
        base: u64,
        fixed: u32,
        bits: u32,
        allow_sub: bool,
    ) -> Option<Vec<u32>> {
        let width = K::BITS - fixed - bits; // bits below the bucket index
        let mut out = Vec::with_capacity(1 << bits);
        let mut r0 = from; // keys below the bucket's first address
        for bucket in 0..1u64 << bits {
            let first = base | (bucket << width);
            let last = first | (1u64 << width).wrapping_sub(1);
            while r0 < keys.len() && keys[r0].to_u64() < first {
                r0 += 1;
            }
            // Keys below `last` are the only ones a probe in the bucket can
            // count: its rank lies in r0..=r1.
            let mut r1 = r0;
            while r1 < keys.len() && keys[r1].to_u64() < last {
                r1 += 1;
            }
            out.push(self.entry(keys, payloads, r0, r1, first, fixed + bits, allow_sub)?);
        }
        Some(out)
    }

    /// The entry for one bucket whose keys are `keys[r0..r1]`.
    #[allow(clippy::too_many_arguments)]
    fn entry<K: Key>(
        &mut self,
        keys: &[K],
        payloads: &[u32],
        r0: usize,
        r1: usize,
        first: u64,
        fixed: u32,
        allow_sub: bool,
    ) -> Option<u32> {
        let n = r1 - r0;
        if n == 0 {
            // The bucket lies inside one interval: its payload goes in the
            // entry (batches select it without a branch, see search.rs).
            match payloads[r0] {
                NO_ROUTE => return Some(DP_PAYLOAD | DP_INDEX),
                p if p < DP_INDEX => return Some(DP_PAYLOAD | p),
                _ => {} // too large or a second-stage slot: a window
            }
        }
        if n <= K::LANES {
            return Some(r0 as u32);
        }
        let room = K::BITS - fixed;
        if allow_sub && n > self.sub_min_keys && room > 0 {
            // About one key per sub-bucket, at most 2^12 of them.
            let t = (usize::BITS - (n / 2).leading_zeros())
                .clamp(4, SUB_MAX_BITS)
                .min(room);
            let offset = self.sub.len();
            if offset + (1 << t) <= SUB_OFFSET as usize {
                let table = self.table(keys, payloads, r0, first, fixed, t, false)?;
                self.sub.extend(table);
                return Some(DP_SUB | (t << 26) | offset as u32);
            }
        }
        let desc = build_local(&keys[r0..r1], r0 as u32, &mut self.inner)?;
        self.max_levels = self.max_levels.max(desc.levels as usize);
        self.descs.push(desc);
        Some(DP_TREE | (self.descs.len() - 1) as u32)
    }

    /// Give every local tree the same number of levels by stacking the
    /// all-padding line on top of shallower ones: a padding node counts
    /// zero, so the descent stays at node 0 until the tree's real root.
    /// Batch lookups then walk every tree lane through the same levels with
    /// no data-dependent branch (which, mispredicted, stalls every lane).
    fn equalise_levels(&mut self) {
        let max = self.max_levels;
        for d in &mut self.descs {
            let levels = d.levels as usize;
            if levels < max {
                d.line.copy_within(0..levels, max - levels);
                d.line[..max - levels].fill(0);
                d.levels = max as u32;
            }
        }
    }
}
