//! Structural check of a Poptrie: every claim the lookups' unchecked reads
//! make (`search.rs`, `avx512.rs`), verified on the arrays as they are, so
//! that tests and fuzzing can check a trie after `update.rs` has rewritten
//! it in place, not only after a fresh build.
//!
//! What the lookups rely on, and what is checked here:
//! - the kernel runs on this CPU;
//! - the direct table has `2^(s - focus bits)` entries and the entries
//!   for addresses outside the focus prefix are leaves;
//! - a non-leaf direct entry names a node;
//! - for every node reached: a child slot's index
//!   `base1 + popcnt(vector & slots 0..=v) - 1` lies in `nodes`, a leaf
//!   slot's `base0 + popcnt(leafvec & slots 0..=v) - 1` in `leaves` (so
//!   the node's first leaf slot starts a run: the count is at least one);
//! - internal slots only where the child still reads address bits
//!   (offset + K < bits), so every descent ends at a leaf slot within the
//!   levels the AVX-512 batch walks;
//! - leaf payloads are `NO_ROUTE` or at most `MAX_PAYLOAD`; with
//!   [`Poptrie::validate_below`], every answer (a direct or focus leaf
//!   entry's payload, a reached leaf) is `NO_ROUTE` or below the bound its
//!   callers index with (a compiled table file's route or value count).
//!
//! And what `update.rs` relies on: each direct slot's subtree is one block
//! of nodes (root first) and one block of leaves (the root's `base0`
//! first), and no node or leaf belongs to two subtrees.

use super::layout::{Chunks, Poptrie, Stride, DIRECT_LEAF, MAX_PAYLOAD};
use super::options::{PoptrieOptions, KERNELS};
use crate::intervals::NO_ROUTE;

/// The blocks one direct slot's subtree occupies.
#[derive(Clone, Copy, Debug)]
pub(super) struct Blocks {
    pub root: u32,
    pub nodes: u32,
    pub first_leaf: u32,
    pub leaves: u32,
}

/// The nodes and leaves one subtree walk has reached.
struct Walk {
    nodes: Vec<bool>,
    leaves: Vec<bool>,
    /// Nodes and leaves of the current subtree, and their extremes.
    n_nodes: u32,
    n_leaves: u32,
    max_node: u32,
    min_leaf: u32,
    max_leaf: u32,
}

impl<A: Chunks, N: Stride> Poptrie<A, N> {
    /// Check the structure every lookup relies on (see the module doc of
    /// `validate.rs`): direct table size, every index a lookup can follow
    /// in bounds, descents ending at leaves, payloads in range, and each
    /// direct slot's subtree in one block of nodes and one of leaves.
    /// Linear in the trie's size.
    ///
    /// A trie from [`Poptrie::build`] always passes; tests and fuzz
    /// targets run it after in-place slot updates.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Node32, Poptrie};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u128>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("2001:db8::/32"), 1), (p("2001:db8::1:0/112"), 2)]);
    /// assert_eq!(Poptrie::<u128>::build(&iv, &Default::default())?.validate(), Ok(()));
    /// assert_eq!(Poptrie::<u128, Node32>::build(&iv, &Default::default())?.validate(), Ok(()));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn validate(&self) -> Result<(), String> {
        self.subtree_blocks(NO_ROUTE).map(|_| ())
    }

    /// [`Poptrie::validate`], and every answer a lookup can give is
    /// [`NO_ROUTE`] or below `bound` (what a compiled table file's opener
    /// asks: an answer indexes the file's routes or values).
    ///
    /// ```
    /// use ipfib::engine::poptrie::Poptrie;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 0), (p("10.1.2.0/24"), 1)]);
    /// let e = Poptrie::<u32>::build(&iv, &Default::default())?;
    /// assert_eq!(e.validate_below(2), Ok(()));
    /// assert!(e.validate_below(1).unwrap_err().contains("answer 1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn validate_below(&self, bound: u32) -> Result<(), String> {
        self.subtree_blocks(bound).map(|_| ())
    }

    /// [`Poptrie::validate_below`], returning every direct slot's blocks.
    pub(super) fn subtree_blocks(&self, bound: u32) -> Result<Vec<Blocks>, String> {
        if !KERNELS.is_supported(self.kernel) {
            return Err(format!("kernel {} is not supported here", self.kernel));
        }
        if self.s > u32::from(PoptrieOptions::MAX_DIRECT_BITS) {
            return Err(format!("direct bits {} out of range", self.s));
        }
        let f = self.focus.bits;
        if f > self.s {
            return Err(format!("focus bits {f} above s = {}", self.s));
        }
        let want = 1usize << (self.s - f);
        if self.direct.len() != want {
            return Err(format!(
                "direct table has {} entries, not 2^(s - focus) = {want}",
                self.direct.len()
            ));
        }
        // What a leaf entry answers (`search.rs`: `direct_payload`).
        let leaf_answer = |d: u32| match d {
            NO_ROUTE => NO_ROUTE,
            d => d & !DIRECT_LEAF,
        };
        if f > 0 {
            for (side, d) in [("below", self.focus.below), ("above", self.focus.above)] {
                if d & DIRECT_LEAF == 0 {
                    return Err(format!("the entry {side} the focus prefix is not a leaf"));
                }
                let p = leaf_answer(d);
                if p != NO_ROUTE && p >= bound {
                    return Err(format!(
                        "the entry {side} the focus prefix: answer {p}, not below {bound}"
                    ));
                }
            }
        }
        let mut walk = Walk {
            nodes: vec![false; self.nodes.len()],
            leaves: vec![false; self.leaves.len()],
            n_nodes: 0,
            n_leaves: 0,
            max_node: 0,
            min_leaf: u32::MAX,
            max_leaf: 0,
        };
        let mut blocks = Vec::new();
        for (slot, &d) in self.direct.iter().enumerate() {
            if d & DIRECT_LEAF != 0 {
                // Any leaf entry decodes to a payload at most MAX_PAYLOAD.
                let p = leaf_answer(d);
                if p != NO_ROUTE && p >= bound {
                    return Err(format!("direct slot {slot}: answer {p}, not below {bound}"));
                }
                continue;
            }
            let root = d as usize;
            if root >= self.nodes.len() {
                return Err(format!(
                    "direct slot {slot} names node {root} of {}",
                    self.nodes.len()
                ));
            }
            (walk.n_nodes, walk.n_leaves) = (0, 0);
            (walk.max_node, walk.min_leaf, walk.max_leaf) = (0, u32::MAX, 0);
            self.node(&mut walk, root, self.s, bound)
                .map_err(|e| format!("direct slot {slot}: {e}"))?;
            let b = Blocks {
                root: d,
                nodes: walk.n_nodes,
                first_leaf: self.nodes[root].base0(),
                leaves: walk.n_leaves,
            };
            // Nodes are distinct (marked once), so `n_nodes` of them in
            // root..=max tile the block exactly; likewise for leaves.
            if walk.max_node as u64 + 1 != u64::from(d) + u64::from(walk.n_nodes) {
                return Err(format!(
                    "direct slot {slot}: its {} nodes are not one block from node {d}",
                    walk.n_nodes
                ));
            }
            if walk.n_leaves > 0
                && (walk.min_leaf != b.first_leaf
                    || walk.max_leaf as u64 + 1 != b.first_leaf as u64 + walk.n_leaves as u64)
            {
                return Err(format!(
                    "direct slot {slot}: its {} leaves are not one block from its root's base0 {}",
                    walk.n_leaves, b.first_leaf
                ));
            }
            blocks.push(b);
        }
        Ok(blocks)
    }

    /// Check node `idx` (reached at bit offset `off`) and its subtree.
    fn node(&self, walk: &mut Walk, idx: usize, off: u32, bound: u32) -> Result<(), String> {
        if std::mem::replace(&mut walk.nodes[idx], true) {
            return Err(format!("node {idx} is reached twice"));
        }
        walk.n_nodes += 1;
        walk.max_node = walk.max_node.max(idx as u32);
        let n = self.nodes[idx];
        let slots = u64::MAX >> (64 - (1u32 << N::K));
        let (vector, leafvec) = (n.vector(), n.leafvec());
        if (vector | leafvec) & !slots != 0 || vector & leafvec != 0 {
            return Err(format!(
                "node {idx}: vector {vector:#x} and leafvec {leafvec:#x} overlap or exceed 2^K slots"
            ));
        }
        if vector != 0 && off + N::K >= A::BITS as u32 {
            return Err(format!(
                "node {idx} at bit {off}: an internal slot past the last address bit"
            ));
        }
        let leaf_slots = !vector & slots;
        if leaf_slots != 0 {
            // The first leaf slot must start a run, or its count is zero.
            if leafvec & (1 << leaf_slots.trailing_zeros()) == 0 {
                return Err(format!("node {idx}: its first leaf slot starts no run"));
            }
            let (base0, count) = (n.base0() as usize, leafvec.count_ones() as usize);
            if base0 + count > self.leaves.len() {
                return Err(format!(
                    "node {idx}: leaves {base0}..{} outside {}",
                    base0 + count,
                    self.leaves.len()
                ));
            }
            for l in base0..base0 + count {
                if std::mem::replace(&mut walk.leaves[l], true) {
                    return Err(format!("leaf {l} is reached twice"));
                }
                let p = self.leaves[l];
                if p != NO_ROUTE && p > MAX_PAYLOAD {
                    return Err(format!("leaf {l}: payload {p:#x} out of range"));
                }
                if p != NO_ROUTE && p >= bound {
                    return Err(format!("leaf {l}: answer {p}, not below {bound}"));
                }
            }
            walk.n_leaves += count as u32;
            walk.min_leaf = walk.min_leaf.min(base0 as u32);
            walk.max_leaf = walk.max_leaf.max((base0 + count - 1) as u32);
        }
        if vector == 0 {
            return Ok(());
        }
        let (base1, count) = (n.base1() as usize, vector.count_ones() as usize);
        if base1 + count > self.nodes.len() {
            return Err(format!(
                "node {idx}: children {base1}..{} outside {}",
                base1 + count,
                self.nodes.len()
            ));
        }
        for child in base1..base1 + count {
            self.node(walk, child, off + N::K, bound)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::poptrie::layout::{Node, Node32};
    use crate::intervals::Intervals;

    fn intervals<A: Chunks>(routes: &[&str]) -> Intervals<A> {
        crate::intervals::of_routes(routes)
    }

    fn trie<N: Stride>(s: u8) -> Poptrie<u32, N> {
        let iv = intervals::<u32>(&["10.0.0.0/8", "10.1.0.0/16", "10.1.2.3/32", "192.0.2.0/24"]);
        let opts = PoptrieOptions {
            direct_bits: Some(s),
            ..Default::default()
        };
        Poptrie::build(&iv, &opts).unwrap()
    }

    /// A named way to break a trie.
    type Corruption<N> = (&'static str, fn(&mut Poptrie<u32, N>));

    /// Corruptions the validator must catch, each on a fresh trie.
    fn corruptions<N: Stride>() -> Vec<Corruption<N>> {
        fn first_node<N: Stride>(t: &Poptrie<u32, N>) -> usize {
            t.direct
                .iter()
                .find(|&&d| d & DIRECT_LEAF == 0)
                .copied()
                .unwrap() as usize
        }
        fn set<N: Stride>(t: &mut Poptrie<u32, N>, f: impl Fn(&mut (u64, u64, u32, u32))) {
            let i = first_node(t);
            let n = t.nodes[i];
            let mut parts = (n.vector(), n.leafvec(), n.base0(), n.base1());
            f(&mut parts);
            t.nodes.make_mut()[i] = N::new(parts.0, parts.1, parts.2, parts.3);
        }
        vec![
            ("direct entry past the nodes", |t| {
                let i = t.direct.iter().position(|&d| d & DIRECT_LEAF == 0).unwrap();
                t.direct.make_mut()[i] = t.nodes.len() as u32;
            }),
            ("children past the nodes", |t| {
                set(t, |p| p.3 = u32::MAX - 1);
            }),
            ("leaves past the leaf array", |t| {
                let len = t.leaves.len() as u32;
                set(t, |p| p.2 = len);
            }),
            ("first leaf slot starts no run", |t| {
                set(t, |p| {
                    let first = (!p.0).trailing_zeros();
                    p.1 &= !(1 << first);
                })
            }),
            ("leaf payload out of range", |t| {
                let i = first_node(t);
                let l = t.nodes[i].base0() as usize;
                t.leaves.make_mut()[l] = MAX_PAYLOAD + 1;
            }),
            ("a node reached twice", |t| {
                // A child of the first node points back at it.
                let i = first_node(t) as u32;
                set(t, |p| p.3 = i);
            }),
            ("direct table of the wrong size", |t| {
                t.s += 1;
            }),
        ]
    }

    fn catches<N: Stride>() {
        for s in [0, 8, 16] {
            assert_eq!(trie::<N>(s).validate(), Ok(()), "s = {s}");
            for (what, corrupt) in corruptions::<N>() {
                let mut t = trie::<N>(s);
                corrupt(&mut t);
                assert!(t.validate().is_err(), "{} s = {s}: {what}", N::NAME);
            }
        }
    }

    #[test]
    fn validate_catches_corruption() {
        catches::<Node>();
        catches::<Node32>();
    }

    #[test]
    fn validate_catches_an_internal_slot_at_the_last_level() {
        // IPv6 /128: the deepest node (s = 18: bit 126) has only leaves.
        let iv = intervals::<u128>(&["2001:db8::1/128"]);
        let mut t = Poptrie::<u128>::build(&iv, &PoptrieOptions::default()).unwrap();
        assert_eq!(t.validate(), Ok(()));
        // One chain of nodes, built depth first: the last is the deepest.
        let deepest = t.nodes.len() - 1;
        let n = t.nodes[deepest];
        t.nodes.make_mut()[deepest] = Node::new(1, n.leafvec & !1, n.base0, 0);
        let err = t.validate().unwrap_err();
        assert!(err.contains("past the last address bit"), "{err}");
    }
}
