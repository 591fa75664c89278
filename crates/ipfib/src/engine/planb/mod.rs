//! PlanB: elementary intervals searched in a linearized B+-tree (PlanB,
//! NSDI '26), with three changes of ours:
//! - the tree is laid out for the real key count (`tree.rs`), no padding;
//! - IPv6 searches the upper 64 bits; the rare upper slots whose intervals
//!   need the lower 64 bits point to a second stage (`stage2.rs`), so every
//!   length /0-/128 is exact;
//! - an optional direct-pointing table on the top `s` bits (Poptrie §3.4's
//!   trick, applied to ranks): a bucket whose keys fit one line is answered by
//!   one window compare over the leaf array instead of a full descent.
//!
//! The search itself lives in `search.rs`, written once and compiled per
//! kernel (`kernel/`).

pub mod kernel;
mod search;
mod stage2;
mod tree;

use crate::addr::Addr;
use crate::intervals::{Intervals, NO_ROUTE};
use crate::mem::LookupBuf;
use kernel::Kernel;
use stage2::Stage2;
use tree::{Key, Tree};

pub use search::BATCH_SIZES;

/// A direct-pointing entry with this bit set means: descend the whole tree.
const DIRECT_DESCEND: u32 = 1 << 31;

/// Build options for [`PlanB`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanbOptions {
    /// Search kernel; `None` picks the best the CPU supports.
    pub kernel: Option<Kernel>,
    /// Direct-pointing bits `s` (0 disables); `None` picks a default from
    /// the table size (see [`PlanbOptions::default_direct_bits`]).
    pub direct_bits: Option<u8>,
}

impl Default for PlanbOptions {
    fn default() -> Self {
        PlanbOptions {
            kernel: None,
            direct_bits: None,
        }
    }
}

impl PlanbOptions {
    /// Largest accepted `s`.
    pub const MAX_DIRECT_BITS: u8 = 24;

    /// The default `s` for a table with `keys` tree keys: about one
    /// direct-pointing entry per key, between 2^12 and 2^20 entries, so the
    /// table costs at most 4 bytes per key. Chosen by measurement
    /// (BENCHMARKS.md, "direct pointing").
    pub fn default_direct_bits(keys: usize) -> u8 {
        let bits = usize::BITS - keys.max(1).leading_zeros();
        bits.clamp(12, 20) as u8
    }
}

/// Why an engine could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("kernel {0} is not supported by this CPU")]
    UnsupportedKernel(Kernel),
    #[error("direct-pointing bits {0} out of range (0..={max})", max = PlanbOptions::MAX_DIRECT_BITS)]
    DirectBits(u8),
    #[error("payload {0} is too large (payloads must stay below 2^31 - 1)")]
    PayloadTooLarge(u32),
}

/// An address family PlanB can search: maps an address to its tree key and
/// splits compiled intervals into the tree stage and the second stage.
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
pub struct PlanB<A: Family> {
    tree: Tree<A::Key>,
    /// `payloads[rank]`: payload of the interval of that rank; for IPv6 a
    /// value with bit 31 set (other than `NO_ROUTE`) names a second-stage slot.
    payloads: LookupBuf<u32>,
    stage2: Stage2,
    direct: LookupBuf<u32>,
    direct_shift: u32,
    kernel: Kernel,
    intervals: usize,
}

impl<A: Family> PlanB<A> {
    /// Build from compiled intervals. Linear in the number of intervals.
    pub fn build(iv: &Intervals<A>, opts: &PlanbOptions) -> Result<Self, BuildError> {
        let kernel = opts.kernel.unwrap_or_else(Kernel::detect);
        if !kernel.is_supported() {
            return Err(BuildError::UnsupportedKernel(kernel));
        }
        if let Some(&p) = iv
            .payloads
            .iter()
            .find(|&&p| p >= stage2::STAGE2 && p != NO_ROUTE)
        {
            return Err(BuildError::PayloadTooLarge(p));
        }
        let (starts, payloads, stage2) = A::split(iv);
        // Tree keys: every start but the first (which is zero), minus one.
        let keys: Vec<A::Key> = starts[1..]
            .iter()
            .map(|&s| A::Key::from_u64(s.to_u64() - 1))
            .collect();
        let tree = Tree::build(&keys);
        let s = match opts.direct_bits {
            Some(s) if s > PlanbOptions::MAX_DIRECT_BITS => return Err(BuildError::DirectBits(s)),
            Some(s) => s,
            None => PlanbOptions::default_direct_bits(keys.len()),
        };
        let (direct, direct_shift) = build_direct::<A::Key>(&keys, s);
        Ok(PlanB {
            tree,
            payloads: LookupBuf::from_slice(&payloads),
            stage2,
            direct: LookupBuf::from_slice(&direct),
            direct_shift,
            kernel,
            intervals: iv.len(),
        })
    }

    /// The kernel in use.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Direct-pointing bits `s` (0 when disabled).
    pub fn direct_bits(&self) -> u8 {
        if self.direct.is_empty() {
            0
        } else {
            (A::Key::BITS - self.direct_shift) as u8
        }
    }

    /// Number of elementary intervals compiled in.
    pub fn intervals(&self) -> usize {
        self.intervals
    }

    /// Tree levels (including the leaves).
    pub fn depth(&self) -> usize {
        self.tree.depth()
    }

    /// Intervals resolved by the IPv6 second stage.
    pub fn stage2_intervals(&self) -> usize {
        self.stage2.len()
    }

    /// Heap bytes of the lookup structure (tree, payloads, direct table,
    /// second stage).
    pub fn footprint_bytes(&self) -> usize {
        self.tree.footprint_bytes()
            + self.payloads.len() * 4
            + self.direct.len() * 4
            + self.stage2.footprint_bytes()
    }

    /// Payload for `addr`, or [`NO_ROUTE`].
    #[inline]
    pub fn lookup(&self, addr: A) -> u32 {
        search::lookup(self, addr)
    }

    /// Payloads for `addrs` into `out` (`out.len() >= addrs.len()`),
    /// traversing `M` addresses level by level. `M` is any of
    /// [`BATCH_SIZES`] or another size; 16 or 32 are usually best.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    #[inline]
    pub fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        search::lookup_batch::<A, M>(self, addrs, out)
    }
}

/// Direct-pointing table over the top `s` key bits: entry `b` is the rank of
/// the bucket's first address when the bucket holds at most `LANES` keys
/// (a window search from there is exact), else [`DIRECT_DESCEND`].
fn build_direct<K: Key>(keys: &[K], s: u8) -> (Vec<u32>, u32) {
    if s == 0 || keys.len() >= DIRECT_DESCEND as usize {
        // Shift by BITS - 1 (never by the full width, which would overflow):
        // the index is then 0 or 1 and misses the empty table.
        return (Vec::new(), K::BITS - 1);
    }
    let shift = K::BITS - s as u32;
    let buckets = 1usize << s;
    let mut direct = Vec::with_capacity(buckets);
    let mut lo_rank = 0usize; // keys below the bucket's first address
    for b in 0..buckets as u64 {
        let first = b << shift;
        let last = first | ((1u64 << shift) - 1);
        while lo_rank < keys.len() && keys[lo_rank].to_u64() < first {
            lo_rank += 1;
        }
        let mut hi_rank = lo_rank; // keys below the bucket's last address
        while hi_rank < keys.len() && keys[hi_rank].to_u64() < last && hi_rank - lo_rank <= K::LANES
        {
            hi_rank += 1;
        }
        direct.push(if hi_rank - lo_rank <= K::LANES {
            lo_rank as u32
        } else {
            DIRECT_DESCEND
        });
    }
    (direct, shift)
}
