//! The linearized B+-tree (PlanB §3.2), cut into one small tree per
//! direct-pointing bucket and laid out for the real key count.
//!
//! Keys are the interval starts minus one (`start - 1`); a search counts the
//! keys *strictly below* the probe, which equals the number of starts at or
//! below it: the rank of the interval that holds the probe. Because a start
//! is never zero (interval 0 starts at 0 and is implicit), `start - 1`
//! never wraps, and the padding key (all ones) is never below any probe, so
//! padding can never be counted, even for the all-ones address (a padding
//! key counted as a real one would answer the wrong interval there).
//!
//! Layout:
//! - `leaves`: the sorted key array itself, plus `LANES` padding keys, so a
//!   window of `LANES` keys may start at any rank (unaligned loads);
//! - a bucket with more than `LANES` keys gets a local tree whose leaves are
//!   `LANES`-key blocks of `leaves` starting at the bucket's first rank, and
//!   whose internal levels (64-byte lines in `inner`) hold separators:
//!   separator `i` of node `j` is the smallest key below child
//!   `j * (LANES + 1) + i + 1` (padding where that child does not exist).
//!   Level sizes are `ceil(blocks / (LANES + 1))`, and so on up to one root:
//!   no padding to `ARITY^depth`; the internal levels cost about `1 / LANES`
//!   of the bucket's keys.

use super::kernel::Count;

/// One cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct Line(pub(super) [u8; 64]);

crate::plain::plain_bytes!(Line, Desc);

impl Line {
    /// A line of padding keys (all ones, for either key width).
    pub fn padding() -> Line {
        Line([0xff; 64])
    }
}

/// Most internal levels a local tree may have (16 * 17^6 = 386M keys in one
/// bucket; the build raises `s` otherwise).
pub const MAX_LEVELS: usize = 6;

/// A local tree: first rank of its bucket, number of internal levels, and
/// the first line of each internal level in `inner` (root first). 32 bytes,
/// so two share a line and none straddles one.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(32))]
pub struct Desc {
    pub r0: u32,
    pub levels: u32,
    pub line: [u32; MAX_LEVELS],
}

/// An unsigned key type of the tree: `u32` (IPv4) or `u64` (IPv6 upper half).
pub trait Key: Copy + Ord + Default + Send + Sync + 'static + crate::plain::Plain {
    /// Keys per node: 16 (one line of `u32`, two lines of `u64`).
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
    // Two lines per node: 17-ary like IPv4, one level fewer than 8 keys per
    // node on real IPv6 tables (measured in BENCHMARKS.md).
    const LANES: usize = 16;
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

/// Build the internal levels of the local tree over `keys` (the bucket's
/// keys, more than `LANES` of them, starting at rank `r0`), appending lines
/// to `inner`. `None` when the bucket needs more than [`MAX_LEVELS`].
/// Linear in `keys.len()`.
pub fn build_local<K: Key>(keys: &[K], r0: u32, inner: &mut Vec<Line>) -> Option<Desc> {
    let lanes = K::LANES;
    // Level sizes bottom-up, leaves excluded: blocks / (LANES + 1), ...
    let mut sizes = Vec::with_capacity(MAX_LEVELS);
    let mut below = keys.len().div_ceil(lanes);
    while below > 1 {
        below = below.div_ceil(lanes + 1);
        sizes.push(below);
    }
    if sizes.len() > MAX_LEVELS {
        return None;
    }
    let mut desc = Desc {
        r0,
        levels: sizes.len() as u32,
        ..Desc::default()
    };
    let mut keys_per_child = lanes; // keys under one child of the level being filled
    for (height, &n_nodes) in sizes.iter().enumerate() {
        let level = sizes.len() - 1 - height; // root is level 0
        desc.line[level] = (inner.len() / lines_per_node::<K>()) as u32;
        for j in 0..n_nodes {
            let mut node = [K::PAD; 16];
            for (i, slot) in node[..lanes].iter_mut().enumerate() {
                let child = j * (lanes + 1) + i + 1;
                if let Some(&k) = keys.get(child * keys_per_child) {
                    *slot = k;
                }
            }
            push_node(inner, &node[..lanes]);
        }
        keys_per_child *= lanes + 1;
    }
    Some(desc)
}

/// 64-byte lines per node of `K`.
pub fn lines_per_node<K: Key>() -> usize {
    K::LANES * std::mem::size_of::<K>() / 64
}

/// Append one node (`LANES` keys) as whole lines.
fn push_node<K: Key>(inner: &mut Vec<Line>, keys: &[K]) {
    for chunk in keys.chunks(64 / std::mem::size_of::<K>()) {
        let mut l = Line([0u8; 64]);
        // SAFETY: `chunk` is exactly 64 bytes of plain integers and `l` is
        // 64 bytes; the regions do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(chunk.as_ptr() as *const u8, l.0.as_mut_ptr(), 64);
        }
        inner.push(l);
    }
}

/// Rank of `probe` in a bucket: descend its local tree, then one window
/// compare over the leaf array.
///
/// # Safety
/// `desc` was built by [`build_local`] over `leaves` with internal lines in
/// `inner`; `leaves` holds `LANES` padding keys after the last real key; the
/// CPU supports kernel `C`. (`PlanB::validate` checks that every node a
/// descent can reach lies in `inner` and every final window in `leaves`.)
#[inline(always)]
pub unsafe fn rank<C: Count, K: Key>(
    desc: &Desc,
    inner: *const K,
    leaves: *const K,
    probe: K,
) -> usize {
    let lanes = K::LANES;
    let mut node = 0usize;
    for h in 0..desc.levels as usize {
        // SAFETY: node < level size (separators of missing children are
        // padding and never counted), so the line is inside `inner`.
        node = node * (lanes + 1)
            + unsafe { K::count::<C>(inner.add((desc.line[h] as usize + node) * lanes), probe) };
    }
    let pos = desc.r0 as usize + node * lanes;
    // SAFETY: pos <= r0 + keys in the bucket <= len(leaves) - LANES.
    pos + unsafe { K::count::<C>(leaves.add(pos), probe) }
}
