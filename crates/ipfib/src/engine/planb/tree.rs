//! The linearized B+-tree (PlanB §3.2), laid out for the real key count.
//!
//! Keys are the interval starts minus one (`start - 1`); a search counts the
//! keys *strictly below* the probe, which equals the number of starts at or
//! below it: the rank of the interval that holds the probe. Because a start
//! is never zero (interval 0 starts at 0 and is implicit), `start - 1`
//! never wraps, and the padding key (all ones) is never below any probe, so
//! padding can never be counted, even for the all-ones address (the bug
//! STYLE §7 warns about).
//!
//! Layout, one `Vec` of 64-byte lines, levels from the root down:
//! - the bottom level is the sorted key array itself, cut into nodes of
//!   `LANES` keys (16 x u32 or 8 x u64), plus one line of padding so a
//!   window of `LANES` keys may start at any rank;
//! - a node at height `h >= 1` has `LANES` separators: separator `i` of
//!   node `j` is the smallest key below child `j * (LANES + 1) + i + 1`
//!   (padding where that child does not exist).
//!
//! Level sizes are `ceil(n / LANES)`, then `ceil(prev / (LANES + 1))` up to a
//! single root: no padding to `ARITY^depth`, so the tree costs the key array
//! plus about `1 / LANES` of it.

use super::kernel::Count;
use crate::mem::LookupBuf;

/// One cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct Line([u8; 64]);

/// An unsigned key type of the tree: `u32` (IPv4) or `u64` (IPv6 upper half).
pub trait Key: Copy + Ord + Default + Send + Sync + 'static {
    /// Keys per 64-byte line.
    const LANES: usize;
    /// Key width in bits.
    const BITS: u32;
    /// Padding key: never below any probe.
    const PAD: Self;
    /// Count keys below `probe` in the line at `node` with kernel `C`.
    ///
    /// # Safety
    /// `node` points at `LANES` readable keys; the CPU supports `C`.
    unsafe fn count<C: Count>(node: *const Self, probe: Self) -> usize;
    fn to_u64(self) -> u64;
    fn from_u64(v: u64) -> Self;
}

impl Key for u32 {
    const LANES: usize = 16;
    const BITS: u32 = 32;
    const PAD: u32 = u32::MAX;
    #[inline(always)]
    unsafe fn count<C: Count>(node: *const u32, probe: u32) -> usize {
        // SAFETY: forwarded from the caller.
        unsafe { C::count_u32(node, probe) }
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_u64(v: u64) -> u32 {
        v as u32
    }
}

impl Key for u64 {
    const LANES: usize = 8;
    const BITS: u32 = 64;
    const PAD: u64 = u64::MAX;
    #[inline(always)]
    unsafe fn count<C: Count>(node: *const u64, probe: u64) -> usize {
        // SAFETY: forwarded from the caller.
        unsafe { C::count_u64(node, probe) }
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_u64(v: u64) -> u64 {
        v
    }
}

/// A static B+-tree over sorted keys.
pub(crate) struct Tree<K: Key> {
    lines: LookupBuf<Line>,
    /// First line of each level, root first; the last entry is the leaves.
    level_start: Vec<usize>,
    _key: std::marker::PhantomData<K>,
}

impl<K: Key> Tree<K> {
    /// Build over `keys` (sorted ascending, already `start - 1`, none equal
    /// to `K::PAD`). Linear in the number of keys.
    pub(crate) fn build(keys: &[K]) -> Self {
        let lanes = K::LANES;
        let mut sizes = vec![keys.len().div_ceil(lanes).max(1)];
        while let Some(&last) = sizes.last() {
            if last == 1 {
                break;
            }
            sizes.push(last.div_ceil(lanes + 1));
        }
        // `sizes` is bottom-up; lay levels out root first.
        let mut level_start = Vec::with_capacity(sizes.len());
        let mut at = 0;
        for &s in sizes.iter().rev() {
            level_start.push(at);
            at += s;
        }
        let total_lines = at + 1; // + one padding line for windows
        let mut lines = vec![Line([0xff; 64]); total_lines];
        // SAFETY: `lines` is `total_lines * 64` bytes, 64-aligned, and every
        // bit pattern is a valid `K` (u32 / u64).
        let flat: &mut [K] = unsafe {
            std::slice::from_raw_parts_mut(lines.as_mut_ptr() as *mut K, total_lines * lanes)
        };
        let leaf = *level_start.last().unwrap_or(&0) * lanes;
        flat[leaf..leaf + keys.len()].copy_from_slice(keys);
        // Internal levels: height h (1 = just above the leaves).
        let mut keys_per_child = lanes; // keys under one node at height h - 1
        for (h, &n_nodes) in sizes.iter().enumerate().skip(1) {
            let base = level_start[sizes.len() - 1 - h] * lanes;
            for j in 0..n_nodes {
                for i in 0..lanes {
                    let child = j * (lanes + 1) + i + 1;
                    let first = child * keys_per_child;
                    flat[base + j * lanes + i] = keys.get(first).copied().unwrap_or(K::PAD);
                }
            }
            keys_per_child *= lanes + 1;
        }
        Tree {
            lines: LookupBuf::from_slice(&lines),
            level_start,
            _key: std::marker::PhantomData,
        }
    }

    /// Levels including the leaves.
    pub(crate) fn depth(&self) -> usize {
        self.level_start.len()
    }

    /// Bytes of key storage.
    pub(crate) fn footprint_bytes(&self) -> usize {
        self.lines.len() * 64 + self.level_start.len() * 8
    }

    #[inline(always)]
    fn base(&self) -> *const K {
        self.lines.as_ptr() as *const K
    }

    /// Pointer to the sorted key array (the leaf level).
    #[inline(always)]
    pub(crate) fn leaves(&self) -> *const K {
        // SAFETY (of the add): the leaf level starts inside `lines`.
        unsafe {
            self.base()
                .add(self.level_start[self.level_start.len() - 1] * K::LANES)
        }
    }

    /// The rank of `probe`: number of keys below it. Full descent.
    ///
    /// # Safety
    /// The CPU supports kernel `C`.
    #[inline(always)]
    pub(crate) unsafe fn rank<C: Count>(&self, probe: K) -> usize {
        let lanes = K::LANES;
        let base = self.base();
        let mut node = 0usize;
        let (leaf_level, inner) = self.level_start.split_last().unwrap_or((&0, &[]));
        for &start in inner {
            // SAFETY: `node` < level size by construction (separators of
            // missing children are padding and never counted), so the line
            // is inside `lines`.
            node = node * (lanes + 1)
                + unsafe { K::count::<C>(base.add((start + node) * lanes), probe) };
        }
        // SAFETY: as above, for the leaf level.
        node * lanes + unsafe { K::count::<C>(base.add((leaf_level + node) * lanes), probe) }
    }

    /// Rank of `probe` given that it lies at most `LANES` keys after `from`:
    /// one window compare over the leaf array.
    ///
    /// # Safety
    /// `from <= len()`; the CPU supports kernel `C`.
    #[inline(always)]
    pub(crate) unsafe fn rank_from<C: Count>(&self, from: usize, probe: K) -> usize {
        // SAFETY: the leaf level plus the padding line hold at least
        // `len() + LANES` keys.
        from + unsafe { K::count::<C>(self.leaves().add(from), probe) }
    }

    /// Line index of the root and the levels, for batch descents.
    #[inline(always)]
    pub(crate) fn levels(&self) -> &[usize] {
        &self.level_start
    }

    /// Raw key pointer for batch descents.
    #[inline(always)]
    pub(crate) fn raw(&self) -> *const K {
        self.base()
    }
}
