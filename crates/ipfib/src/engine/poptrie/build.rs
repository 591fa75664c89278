//! From elementary intervals to the direct-pointing table, nodes and
//! leaves.
//!
//! A slot (or direct-pointing bucket) whose whole address range lies in one
//! interval is a leaf holding that interval's payload; any other slot is an
//! internal child one level (`K` bits, 6 or 5) down. Ranks are found by a cursor that
//! only moves forward: slots are visited in address order within a node,
//! and a child starts from the rank of its first address, so the build is
//! linear in slots plus intervals per level.
//!
//! Children and leaves of a node are allocated as one contiguous block each
//! when the node is built, then the children are built depth first (each
//! appending its own blocks), which is all §3.2 asks of the layout.

use super::layout::{Chunks, Focus, Stride, DIRECT_LEAF};
use super::options::PoptrieError;
use crate::intervals::{Intervals, NO_ROUTE};

/// Nodes are named by 31 bits in direct-pointing entries.
const MAX_NODES: usize = DIRECT_LEAF as usize;
/// Leaves are named by `u32` bases.
const MAX_LEAVES: usize = u32::MAX as usize;

pub(super) struct Built<N> {
    pub direct: Vec<u32>,
    pub nodes: Vec<N>,
    pub leaves: Vec<u32>,
    pub focus: Focus,
}

impl Focus {
    /// The longest focus prefix for `iv`, at most `max_bits` long: the
    /// shared rule with every boundary held ([`focus_prefix`] at 1000
    /// thousandths), since this layout has no table for the rest.
    fn of<A: Chunks>(iv: &Intervals<A>, max_bits: u32) -> Focus {
        let (common, first) = focus_prefix(iv, max_bits, 1000);
        if common == 0 {
            return Focus::default();
        }
        let bits = A::BITS as u32;
        let n = iv.starts.len();
        Focus {
            bits: common,
            first,
            first_top: ((first << (128 - bits)) >> 64) as u64,
            below: direct_leaf(iv.payloads[0]),
            above: direct_leaf(iv.payloads[n - 1]),
        }
    }
}

/// The focus rule of both layouts: the longest prefix `F` of at most
/// `max_bits` bits such that at least `share` thousandths (`share > 500`)
/// of the interval boundaries lie in `[F.first, F.last + 1]` (a boundary
/// at `F.last + 1` starts the addresses above `F`: it costs no node
/// inside), as `(|F|, F.first)`; `(0, 0)` when there is none (or no
/// boundary). More than half the boundaries lie in that range, so the
/// median boundary `m` does: it is in `F` or is `F.last + 1`, and the
/// candidates are the prefixes of `m` and of `m - 1`. At 1000 every boundary is held, the
/// 64-ary layout's rule (addresses outside `F` then share one answer below
/// and one above); the flat layout takes 999 and gives the rest an outer
/// table.
pub(super) fn focus_prefix<A: Chunks>(iv: &Intervals<A>, max_bits: u32, share: u32) -> (u32, u128) {
    let boundaries = iv.starts.get(1..).unwrap_or_default();
    let total = boundaries.len();
    if total == 0 || max_bits == 0 {
        return (0, 0);
    }
    let bits = A::BITS as u32;
    let median = boundaries[total / 2].to_u128();
    // A boundary is never address 0 (starts[0] is), so `median - 1` is one.
    for f in (1..=max_bits.min(bits)).rev() {
        for anchor in [median, median - 1] {
            let first = anchor & !low_mask(bits - f);
            let end = (first | low_mask(bits - f)).saturating_add(1);
            let lo = boundaries.partition_point(|a| a.to_u128() < first);
            let hi = boundaries.partition_point(|a| a.to_u128() <= end);
            if (hi - lo) * 1000 >= total * share as usize {
                return (f, first);
            }
        }
    }
    (0, 0)
}

/// Build the trie for `iv` with `s` direct-pointing bits, over a focus
/// prefix when `focus` is true (see [`Focus`]).
pub(super) fn build<A: Chunks, N: Stride>(
    iv: &Intervals<A>,
    s: u32,
    leafvec: bool,
    focus: bool,
) -> Result<Built<N>, PoptrieError> {
    let mut b = Builder::<A, N>::new(iv, leafvec);
    let focus = if focus {
        Focus::of(iv, s)
    } else {
        Focus::default()
    };
    let width = b.bits - s; // address bits below a bucket index
    let table_bits = s - focus.bits;
    let mut direct = Vec::with_capacity(1 << table_bits);
    let mut r = 0;
    for bucket in 0..1u128 << table_bits {
        let first = focus.first | if s == 0 { 0 } else { bucket << width };
        b.advance(&mut r, first);
        if b.single(r, first | low_mask(width)) {
            direct.push(direct_leaf(b.payloads[r]));
        } else {
            let idx = b.nodes.len();
            if idx >= MAX_NODES {
                return Err(PoptrieError::TooManyNodes(idx));
            }
            b.nodes.push(N::default());
            direct.push(idx as u32);
            b.node(idx, first, s, r)?;
        }
    }
    Ok(Built {
        direct,
        nodes: b.nodes,
        leaves: b.leaves,
        focus,
    })
}

/// One direct-pointing slot built alone (Poptrie §3.5 update): its
/// direct entry when the slot lies in one interval, else its subtree with
/// indices local to the two blocks (root node 0, first leaf 0).
pub(super) enum SlotBuilt<N> {
    Leaf(u32),
    Tree { nodes: Vec<N>, leaves: Vec<u32> },
}

/// Build bucket `slot` of an `s`-bit direct table from `iv` (which must
/// resolve every address of the slot; other addresses are not read).
pub(super) fn build_slot<A: Chunks, N: Stride>(
    iv: &Intervals<A>,
    s: u32,
    slot: u128,
    leafvec: bool,
) -> Result<SlotBuilt<N>, PoptrieError> {
    let mut b = Builder::<A, N>::new(iv, leafvec);
    let width = b.bits - s;
    let first = if s == 0 { 0 } else { slot << width };
    let r = iv
        .starts
        .partition_point(|a| a.to_u128() <= first)
        .saturating_sub(1);
    if b.single(r, first | low_mask(width)) {
        return Ok(SlotBuilt::Leaf(direct_leaf(b.payloads[r])));
    }
    b.nodes.push(N::default());
    b.node(0, first, s, r)?;
    Ok(SlotBuilt::Tree {
        nodes: b.nodes,
        leaves: b.leaves,
    })
}

/// The direct-pointing entry of a bucket inside one interval.
fn direct_leaf(payload: u32) -> u32 {
    // Payloads were checked against MAX_PAYLOAD, so `DIRECT_LEAF | p` is
    // never u32::MAX unless p is NO_ROUTE.
    if payload == NO_ROUTE {
        NO_ROUTE
    } else {
        DIRECT_LEAF | payload
    }
}

/// The low `w` bits set (`w <= 128`).
pub(super) fn low_mask(w: u32) -> u128 {
    u128::MAX
        .checked_shr(128 - w)
        .filter(|_| w > 0)
        .unwrap_or(0)
}

/// Move the rank cursor `r` to the interval of `starts` holding `addr`
/// (never back).
#[inline]
pub(super) fn advance<A: Chunks>(starts: &[A], r: &mut usize, addr: u128) {
    while *r + 1 < starts.len() && starts[*r + 1].to_u128() <= addr {
        *r += 1;
    }
}

/// Whether `r`'s interval reaches up to `last` (no interval starts after
/// `r`'s and at or before `last`).
#[inline]
pub(super) fn single<A: Chunks>(starts: &[A], r: usize, last: u128) -> bool {
    starts.get(r + 1).is_none_or(|next| next.to_u128() > last)
}

struct Builder<'a, A, N> {
    starts: &'a [A],
    payloads: &'a [u32],
    bits: u32,
    leafvec: bool,
    nodes: Vec<N>,
    leaves: Vec<u32>,
}

impl<'a, A: Chunks, N: Stride> Builder<'a, A, N> {
    fn new(iv: &'a Intervals<A>, leafvec: bool) -> Self {
        Builder {
            starts: &iv.starts,
            payloads: &iv.payloads,
            bits: A::BITS as u32,
            leafvec,
            nodes: Vec::new(),
            leaves: Vec::new(),
        }
    }

    #[inline]
    fn advance(&self, r: &mut usize, addr: u128) {
        advance(self.starts, r, addr)
    }

    #[inline]
    fn single(&self, r: usize, last: u128) -> bool {
        single(self.starts, r, last)
    }

    /// Fill node `idx`, which covers the addresses whose top `offset` bits
    /// are those of `first`; `r` is the rank of `first`.
    fn node(
        &mut self,
        idx: usize,
        first: u128,
        offset: u32,
        mut r: usize,
    ) -> Result<(), PoptrieError> {
        let mut vector = 0u64;
        let mut leafvec = 0u64;
        let base0 = self.leaves.len();
        let k = N::K;
        // Children: (first address, rank) per internal slot, in slot order.
        let mut children = [(0u128, 0usize); 64];
        let mut n_children = 0;
        let mut last_leaf: Option<u32> = None;
        for slot in 0..1u32 << k {
            let (lo, hi) = if offset + k <= self.bits {
                let w = self.bits - offset - k;
                let lo = first | ((slot as u128) << w);
                (lo, lo | low_mask(w))
            } else {
                // The last, partial level: slots read zero padding past the
                // address's end, so 2^extra slots share one address.
                let extra = offset + k - self.bits;
                let a = first | (slot >> extra) as u128;
                (a, a)
            };
            self.advance(&mut r, lo);
            if self.single(r, hi) {
                let p = self.payloads[r];
                // §3.3: a leaf is stored where it differs from the previous
                // leaf slot; internal slots in between are holes.
                if !self.leafvec || last_leaf != Some(p) {
                    leafvec |= 1 << slot;
                    self.leaves.push(p);
                    last_leaf = Some(p);
                }
            } else {
                vector |= 1 << slot;
                children[n_children] = (lo, r);
                n_children += 1;
            }
        }
        if self.leaves.len() > MAX_LEAVES {
            return Err(PoptrieError::TooManyLeaves(self.leaves.len()));
        }
        let base1 = self.nodes.len();
        if base1 + n_children > MAX_NODES {
            return Err(PoptrieError::TooManyNodes(base1 + n_children));
        }
        self.nodes.resize(base1 + n_children, N::default());
        self.nodes[idx] = N::new(vector, leafvec, base0 as u32, base1 as u32);
        for (i, &(lo, r)) in children[..n_children].iter().enumerate() {
            self.node(base1 + i, lo, offset + k, r)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(low_mask(0), 0);
        assert_eq!(low_mask(1), 1);
        assert_eq!(low_mask(32), 0xffff_ffff);
        assert_eq!(low_mask(128), u128::MAX);
    }

    /// The 64-ary layout's rule as it was written before the two layouts
    /// shared one: the common prefix of the first boundary and the
    /// address before the last one (capped at `max_bits`).
    fn common_prefix<A: Chunks>(iv: &Intervals<A>, max_bits: u32) -> (u32, u128) {
        let n = iv.starts.len();
        if n < 2 || max_bits == 0 {
            return (0, 0);
        }
        let bits = A::BITS as u32;
        let lo = iv.starts[1].to_u128() << (128 - bits);
        let hi = (iv.starts[n - 1].to_u128() - 1).max(iv.starts[1].to_u128()) << (128 - bits);
        let common = (lo ^ hi).leading_zeros().min(bits).min(max_bits);
        match common {
            0 => (0, 0),
            c => (c, iv.starts[1].to_u128() & !low_mask(bits - c)),
        }
    }

    fn intervals<A: Chunks + TryFrom<u128>>(mut starts: Vec<u128>) -> Intervals<A> {
        starts.push(0);
        starts.sort_unstable();
        starts.dedup();
        let n = starts.len();
        Intervals {
            starts: starts
                .into_iter()
                .map(|a| A::try_from(a).ok().unwrap())
                .collect(),
            payloads: (0..n as u32).collect(),
        }
    }

    proptest::proptest! {
        /// At 1000 thousandths the shared rule is exactly the common
        /// prefix of all boundaries, on both families, with boundaries
        /// clustered under a few random prefixes (long common prefixes,
        /// boundaries on prefix ends, the top and bottom of the space).
        #[test]
        fn shared_rule_holds_every_boundary(
            top in proptest::prelude::any::<u128>(),
            cut in 0u32..40,
            picks in proptest::collection::vec((proptest::prelude::any::<u128>(), 0u8..4), 0..12),
            max_bits in 0u32..=24,
        ) {
            for family in [32u32, 128] {
                let keep = low_mask(family.saturating_sub(cut).min(family));
                let base = top & low_mask(family) & !keep;
                let addrs: Vec<u128> = picks
                    .iter()
                    .map(|&(r, how)| match how {
                        0 => base | (r & keep),
                        1 => (base | keep).saturating_add(1) & low_mask(family),
                        2 => base,
                        _ => r & low_mask(family),
                    })
                    .collect();
                if family == 32 {
                    let iv = intervals::<u32>(addrs);
                    proptest::prop_assert_eq!(focus_prefix(&iv, max_bits, 1000), common_prefix(&iv, max_bits));
                } else {
                    let iv = intervals::<u128>(addrs);
                    proptest::prop_assert_eq!(focus_prefix(&iv, max_bits, 1000), common_prefix(&iv, max_bits));
                }
            }
        }
    }
}
