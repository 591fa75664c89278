//! Incremental update (Poptrie §3.5): replace the subtree of one
//! direct-pointing slot in place, in a trie no reader can reach.
//!
//! The full build lays each slot's subtree out as one block of nodes and
//! one block of leaves (depth first, so a subtree's nodes and leaves are
//! contiguous). An update rebuilds the slot from the route table's routes
//! under it, frees the old blocks and copies the new ones into free space:
//! the smallest free block that fits (split when larger), else the unused
//! tail of the arrays, which are built with room to spare; when neither
//! fits, neighbouring free blocks are merged (a free end goes back to the
//! tail) and the search runs once more. When nothing fits then,
//! [`ArenaFull`] tells the caller to build the whole trie afresh, which
//! also compacts it: memory stays within a constant factor of a fresh
//! build however many updates pass.
//!
//! `replace_slot` and `copy_slot` rewrite a trie no reader can reach
//! (`&mut`), so nothing here needs to be atomic; the hidden `Updatable`
//! exposes them to the tests. The dynamic FIB's writer
//! (`versioned.rs`) uses this module's free space, slot layout and
//! relocation, writing into memory its older versions share.

use super::build::{self, SlotBuilt};
use super::layout::{Chunks, Node, Poptrie, DIRECT_LEAF};
use super::options::{payloads_fit, PoptrieError, PoptrieOptions};
use crate::intervals::{Intervals, NO_ROUTE};
use crate::mem::LookupBuf;
use std::collections::BTreeMap;

/// No room left for a rebuilt subtree: rebuild the whole trie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArenaFull;

/// Free space of one array: blocks by size, and the untouched tail.
#[derive(Debug, Default, Clone)]
pub(super) struct Space {
    free: BTreeMap<u32, Vec<u32>>,
    free_total: usize,
    used: usize,
    capacity: usize,
}

impl Space {
    pub(super) fn new(used: usize, capacity: usize) -> Self {
        Space {
            used,
            capacity,
            ..Space::default()
        }
    }

    /// Entries below the untouched tail.
    #[cfg(test)]
    pub(super) fn used(&self) -> usize {
        self.used
    }

    /// Offset of `n` free entries (`n > 0`); when nothing fits, merge
    /// neighbouring free blocks (and give a free end back to the tail) and
    /// try once more.
    pub(super) fn alloc(&mut self, n: u32) -> Option<u32> {
        self.alloc_once(n).or_else(|| {
            self.coalesce();
            self.alloc_once(n)
        })
    }

    fn coalesce(&mut self) {
        let mut blocks: Vec<(u32, u32)> = std::mem::take(&mut self.free)
            .into_iter()
            .flat_map(|(size, offs)| offs.into_iter().map(move |o| (o, size)))
            .collect();
        blocks.sort_unstable();
        self.free_total = 0;
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(blocks.len());
        for (off, size) in blocks {
            match merged.last_mut() {
                Some((o, s)) if *o + *s == off => *s += size,
                _ => merged.push((off, size)),
            }
        }
        if let Some(&(off, size)) = merged.last() {
            if (off + size) as usize == self.used {
                self.used = off as usize;
                merged.pop();
            }
        }
        for (off, size) in merged {
            self.release(off, size);
        }
    }

    fn alloc_once(&mut self, n: u32) -> Option<u32> {
        if let Some((&size, _)) = self.free.range(n..).next() {
            let list = self.free.get_mut(&size)?;
            let off = list.pop()?;
            if list.is_empty() {
                self.free.remove(&size);
            }
            self.free_total -= size as usize;
            if size > n {
                self.release(off + n, size - n);
            }
            return Some(off);
        }
        if self.used + n as usize > self.capacity {
            return None;
        }
        let off = self.used as u32;
        self.used += n as usize;
        Some(off)
    }

    pub(super) fn release(&mut self, off: u32, n: u32) {
        if n > 0 {
            self.free.entry(n).or_default().push(off);
            self.free_total += n as usize;
        }
    }

    /// Check this space against its array (`len` entries) and the live
    /// blocks `(offset, size)` of the trie: the tail and every free block
    /// inside the array, free blocks disjoint from each other and from
    /// every live block, live blocks below the tail.
    pub(super) fn check(&self, what: &str, len: usize, live: &[(u32, u32)]) -> Result<(), String> {
        if self.capacity != len || self.used > self.capacity {
            return Err(format!(
                "{what}: arena tail {} of capacity {} for an array of {len}",
                self.used, self.capacity
            ));
        }
        let mut free: Vec<(u64, u64)> = Vec::new();
        for (&size, offs) in &self.free {
            for &off in offs {
                if size == 0 || off as usize + size as usize > self.used {
                    return Err(format!(
                        "{what}: free block {off}+{size} outside the used {}",
                        self.used
                    ));
                }
                free.push((u64::from(off), u64::from(off) + u64::from(size)));
            }
        }
        let total: u64 = free.iter().map(|(a, b)| b - a).sum();
        if total != self.free_total as u64 {
            return Err(format!(
                "{what}: free blocks hold {total}, the arena counts {}",
                self.free_total
            ));
        }
        free.sort_unstable();
        if let Some(w) = free.windows(2).find(|w| w[0].1 > w[1].0) {
            return Err(format!(
                "{what}: free blocks {:?} and {:?} overlap",
                w[0], w[1]
            ));
        }
        for &(off, size) in live {
            let (a, b) = (u64::from(off), u64::from(off) + u64::from(size));
            if b > self.used as u64 {
                return Err(format!(
                    "{what}: live block {off}+{size} reaches past the arena tail {}",
                    self.used
                ));
            }
            // The first free block ending after `a` is the only candidate.
            let i = free.partition_point(|&(_, end)| end <= a);
            if free.get(i).is_some_and(|&(start, _)| start < b) {
                return Err(format!(
                    "{what}: live block {off}+{size} overlaps free block {:?}",
                    free[i]
                ));
            }
        }
        Ok(())
    }
}

/// Free-space bookkeeping of one updatable Poptrie (writer-only: readers
/// never touch it). [`Poptrie::validate_with_arena`] checks it against its
/// trie.
#[derive(Debug, Clone)]
pub struct Arena {
    pub(super) nodes: Space,
    pub(super) leaves: Space,
}

/// Room a fresh build gets for later subtrees: a quarter more, and at
/// least a few thousand entries so small tables do not rebuild constantly.
fn with_room(len: usize) -> usize {
    len + len / 4 + 4096
}

impl<A: Chunks> Poptrie<A> {
    /// [`Poptrie::validate`], and `arena` checked against this trie: its
    /// free ranges lie inside the arrays and overlap no live subtree's
    /// nodes or leaves (what the next update relies on to write only
    /// unreachable entries).
    ///
    /// ```
    /// use ipfib::engine::poptrie::{PoptrieOptions, Updatable};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let opts = PoptrieOptions { direct_bits: Some(8), ..Default::default() };
    /// let mut u = Updatable::build(&ipfib::intervals::compile([(p("10.0.0.0/8"), 1)]), &opts)?;
    /// // Slot 10 (10.0.0.0/8) rebuilt with a /24 inside it, in place.
    /// let slot = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
    /// assert_eq!(u.replace_slot(10, &slot)?, Ok(()));
    /// assert_eq!(u.trie().lookup(0x0a01_0203), 2);
    /// assert_eq!(u.trie().validate_with_arena(u.arena()), Ok(()));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn validate_with_arena(&self, arena: &Arena) -> Result<(), String> {
        let blocks = self.subtree_blocks(NO_ROUTE)?;
        let nodes: Vec<(u32, u32)> = blocks.iter().map(|b| (b.root, b.nodes)).collect();
        let leaves: Vec<(u32, u32)> = blocks.iter().map(|b| (b.first_leaf, b.leaves)).collect();
        arena.nodes.check("nodes", self.nodes.len(), &nodes)?;
        arena.leaves.check("leaves", self.leaves.len(), &leaves)
    }

    /// Build like [`Poptrie::build`], with room for [`Poptrie::replace_slot`].
    pub(crate) fn build_updatable(
        iv: &Intervals<A>,
        opts: &PoptrieOptions,
    ) -> Result<(Self, Arena), PoptrieError> {
        // Slots are indexed by the top `s` bits of any address.
        let mut trie = Poptrie::build_focused(iv, opts, false)?;
        let (n, l) = (trie.nodes.len(), trie.leaves.len());
        let mut nodes = trie.nodes.to_vec();
        nodes.resize(with_room(n), Node::default());
        let mut leaves = trie.leaves.to_vec();
        leaves.resize(with_room(l), NO_ROUTE);
        trie.nodes = LookupBuf::from_slice(&nodes);
        trie.leaves = LookupBuf::from_slice(&leaves);
        let arena = Arena {
            nodes: Space::new(n, nodes.len()),
            leaves: Space::new(l, leaves.len()),
        };
        Ok((trie, arena))
    }

    /// A copy with the same layout (for a second updatable copy).
    pub(crate) fn duplicate(&self) -> Self {
        Poptrie {
            direct: LookupBuf::from_slice(&self.direct),
            nodes: LookupBuf::from_slice(&self.nodes),
            leaves: LookupBuf::from_slice(&self.leaves),
            s: self.s,
            focus: self.focus,
            kernel: self.kernel,
            leafvec: self.leafvec,
            _family: std::marker::PhantomData,
        }
    }

    /// Rebuild direct-pointing slot `slot` from `iv`, which must resolve
    /// every address of the slot as the route table now does.
    ///
    /// `Ok(Err(ArenaFull))`: no room; the trie is then inconsistent and must
    /// be replaced by a fresh build.
    pub(crate) fn replace_slot(
        &mut self,
        arena: &mut Arena,
        slot: usize,
        iv: &Intervals<A>,
    ) -> Result<Result<(), ArenaFull>, PoptrieError> {
        payloads_fit(iv)?;
        let built = build::build_slot::<A, Node>(iv, self.s, slot as u128, self.leafvec)?;
        self.free_slot(arena, slot);
        let (nodes, leaves) = match built {
            SlotBuilt::Leaf(entry) => {
                self.direct.make_mut()[slot] = entry;
                return Ok(Ok(()));
            }
            SlotBuilt::Tree { nodes, leaves } => (nodes, leaves),
        };
        let Some(n_off) = arena.nodes.alloc(nodes.len() as u32) else {
            return Ok(Err(ArenaFull));
        };
        let l_off = if leaves.is_empty() {
            Some(0)
        } else {
            arena.leaves.alloc(leaves.len() as u32)
        };
        let Some(l_off) = l_off else {
            arena.nodes.release(n_off, nodes.len() as u32);
            return Ok(Err(ArenaFull));
        };
        if n_off as usize + nodes.len() > DIRECT_LEAF as usize {
            return Err(PoptrieError::TooManyNodes(n_off as usize + nodes.len()));
        }
        let (n0, l0) = (n_off as usize, l_off as usize);
        for (dst, n) in self.nodes.make_mut()[n0..n0 + nodes.len()]
            .iter_mut()
            .zip(&nodes)
        {
            *dst = relocated(n, n_off, l_off);
        }
        self.leaves.make_mut()[l0..l0 + leaves.len()].copy_from_slice(&leaves);
        self.direct.make_mut()[slot] = n_off;
        Ok(Ok(()))
    }

    /// Make `slot` what it is in `from` (a trie of the same shape): its
    /// subtree's two blocks copied and relocated, no rebuild. `Err`: no
    /// room; the trie must then be replaced by a fresh build.
    pub(crate) fn copy_slot(
        &mut self,
        arena: &mut Arena,
        slot: usize,
        from: &Poptrie<A>,
    ) -> Result<(), ArenaFull> {
        self.free_slot(arena, slot);
        let entry = from.direct[slot];
        if entry & DIRECT_LEAF != 0 {
            self.direct.make_mut()[slot] = entry;
            return Ok(());
        }
        let root = entry as usize;
        let (n_nodes, n_leaves) = from.subtree_size(root);
        let first_leaf = from.nodes[root].base0;
        let n_off = arena.nodes.alloc(n_nodes).ok_or(ArenaFull)?;
        let l_off = if n_leaves == 0 {
            0
        } else if let Some(off) = arena.leaves.alloc(n_leaves) {
            off
        } else {
            arena.nodes.release(n_off, n_nodes);
            return Err(ArenaFull);
        };
        let (n0, l0) = (n_off as usize, l_off as usize);
        let src = &from.nodes[root..root + n_nodes as usize];
        for (dst, n) in self.nodes.make_mut()[n0..n0 + src.len()]
            .iter_mut()
            .zip(src)
        {
            // Wrapping: a node without children or leaves keeps a base that
            // is never followed, possibly one past its block.
            *dst = Node {
                base0: n.base0.wrapping_sub(first_leaf).wrapping_add(l_off),
                base1: n.base1.wrapping_sub(root as u32).wrapping_add(n_off),
                ..*n
            };
        }
        let fl = first_leaf as usize;
        self.leaves.make_mut()[l0..l0 + n_leaves as usize]
            .copy_from_slice(&from.leaves[fl..fl + n_leaves as usize]);
        self.direct.make_mut()[slot] = n_off;
        Ok(())
    }

    /// Return the blocks of `slot`'s subtree to the arena.
    fn free_slot(&mut self, arena: &mut Arena, slot: usize) {
        let entry = self.direct[slot];
        if entry & DIRECT_LEAF != 0 {
            return;
        }
        let root = entry as usize;
        let (n_nodes, n_leaves) = self.subtree_size(root);
        arena.nodes.release(root as u32, n_nodes);
        arena.leaves.release(self.nodes[root].base0, n_leaves);
    }

    /// Nodes and leaves of the subtree rooted at node `idx`.
    fn subtree_size(&self, idx: usize) -> (u32, u32) {
        subtree_size(&|i| self.nodes[i], idx)
    }
}

/// A node of a slot built at offsets 0 (`build::build_slot`), for its
/// place at node offset `n_off` and leaf offset `l_off`.
pub(super) fn relocated(n: &Node, n_off: u32, l_off: u32) -> Node {
    Node {
        base0: n.base0 + l_off,
        base1: n.base1 + n_off,
        ..*n
    }
}

/// Nodes and leaves of the subtree rooted at node `idx` (`node(i)` reads
/// node `i`).
pub(super) fn subtree_size(node: &impl Fn(usize) -> Node, idx: usize) -> (u32, u32) {
    let n = node(idx);
    let mut nodes = 1;
    let mut leaves = n.leafvec.count_ones();
    for c in 0..n.vector.count_ones() {
        let (cn, cl) = subtree_size(node, n.base1 as usize + c as usize);
        nodes += cn;
        leaves += cl;
    }
    (nodes, leaves)
}

/// An updatable Poptrie and its arena, kept together so that no update
/// can run against another trie's free list: the in-place updates of
/// [`crate::fib`] (slot rebuilds and slot copies) for tests and fuzz
/// targets outside the crate, which check the result with
/// [`Updatable::validate`].
///
/// After an update reports [`ArenaFull`] the arena no longer matches the
/// trie (the slot's old blocks were freed but still serve lookups), so
/// every later update reports it too: build afresh.
#[doc(hidden)]
pub struct Updatable<A: Chunks> {
    trie: Poptrie<A>,
    arena: Arena,
    full: bool,
}

impl<A: Chunks> Updatable<A> {
    /// A trie over the whole space (no focus prefix) with room for updates.
    pub fn build(iv: &Intervals<A>, opts: &PoptrieOptions) -> Result<Self, PoptrieError> {
        let (trie, arena) = Poptrie::build_updatable(iv, opts)?;
        Ok(Updatable {
            trie,
            arena,
            full: false,
        })
    }

    /// The trie, for lookups.
    pub fn trie(&self) -> &Poptrie<A> {
        &self.trie
    }

    /// The arena, for [`Poptrie::validate_with_arena`].
    pub fn arena(&self) -> &Arena {
        &self.arena
    }

    /// Direct-pointing slots (`2^s`).
    pub fn slots(&self) -> usize {
        self.trie.direct.len()
    }

    /// A copy with the same layout and arena.
    pub fn duplicate(&self) -> Self {
        Updatable {
            trie: self.trie.duplicate(),
            arena: self.arena.clone(),
            full: self.full,
        }
    }

    /// Rebuild slot `slot` from `iv`, which must resolve every address of
    /// the slot (as `crate::fib` computes it from the route table).
    ///
    /// # Panics
    /// If `slot` is not below [`Updatable::slots`].
    pub fn replace_slot(
        &mut self,
        slot: usize,
        iv: &Intervals<A>,
    ) -> Result<Result<(), ArenaFull>, PoptrieError> {
        assert!(slot < self.slots(), "slot {slot} out of range");
        if self.full {
            return Ok(Err(ArenaFull));
        }
        let r = self.trie.replace_slot(&mut self.arena, slot, iv)?;
        self.full = r.is_err();
        Ok(r)
    }

    /// Make slot `slot` what it is in `from`.
    ///
    /// # Panics
    /// If `from` has another shape (direct bits) or `slot` is out of range.
    pub fn copy_slot(&mut self, slot: usize, from: &Updatable<A>) -> Result<(), ArenaFull> {
        assert!(
            self.trie.s == from.trie.s && self.slots() == from.slots(),
            "copy_slot between tries of different shapes"
        );
        assert!(slot < self.slots(), "slot {slot} out of range");
        if self.full {
            return Err(ArenaFull);
        }
        let r = self.trie.copy_slot(&mut self.arena, slot, &from.trie);
        self.full = r.is_err();
        r
    }

    /// [`Poptrie::validate_with_arena`] of the pair.
    pub fn validate(&self) -> Result<(), String> {
        self.trie.validate_with_arena(&self.arena)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_reuses_splits_and_reports_full() {
        let mut s = Space::new(10, 20);
        assert_eq!(s.alloc(5), Some(10));
        assert_eq!(s.alloc(6), None, "15 + 6 > 20");
        s.release(2, 8);
        assert_eq!(s.alloc(3), Some(2));
        assert_eq!(s.free_total, 5);
        assert_eq!(s.alloc(5), Some(5), "the remainder of the split block");
        assert_eq!(s.alloc(5), Some(15));
        assert_eq!(s.alloc(1), None);
        // Neighbours merge when nothing else fits; a free end rejoins the tail.
        s.release(2, 3);
        s.release(5, 5);
        s.release(15, 5);
        assert_eq!(s.alloc(8), Some(2));
        assert_eq!((s.used, s.free_total), (15, 0));
    }

    fn updatable() -> Updatable<u32> {
        let mut ps: Vec<crate::prefix::Prefix<u32>> = ["10.0.0.0/8", "10.1.0.0/16", "10.1.2.3/32"]
            .iter()
            .map(|r| r.parse().unwrap())
            .collect();
        ps.sort();
        let iv = crate::intervals::compile(ps.into_iter().enumerate().map(|(i, p)| (p, i as u32)));
        let opts = PoptrieOptions {
            direct_bits: Some(8),
            ..Default::default()
        };
        Updatable::build(&iv, &opts).unwrap()
    }

    /// A named way to break an arena (given the corrupted slot's root).
    type Corruption = (&'static str, fn(&mut Updatable<u32>, u32));

    #[test]
    fn validate_with_arena_catches_corruption() {
        let u = updatable();
        assert_eq!(u.validate(), Ok(()));
        let slot = 10; // 10.0.0.0/8: a subtree (10.1.0.0/16 lies in it)
        let root = u.trie.direct[slot];
        assert_eq!(root & DIRECT_LEAF, 0);
        let corruptions: [Corruption; 5] = [
            ("a live node block on the free list", |u, root| {
                u.arena.nodes.release(root, 1)
            }),
            ("a live leaf block on the free list", |u, root| {
                let first = u.trie.nodes[root as usize].base0;
                u.arena.leaves.release(first, 1)
            }),
            ("the tail below a live block", |u, _| u.arena.nodes.used = 0),
            ("a free block past the tail", |u, _| {
                let used = u.arena.leaves.used as u32;
                u.arena.leaves.release(used, 1)
            }),
            ("overlapping free blocks", |u, _| {
                let used = u.arena.nodes.used as u32;
                u.arena.nodes.used += 4;
                u.arena.nodes.release(used, 3);
                u.arena.nodes.release(used + 1, 3);
            }),
        ];
        for (what, corrupt) in corruptions {
            let mut u = updatable();
            corrupt(&mut u, root);
            assert!(
                u.trie.validate().is_ok(),
                "{what}: the trie itself is intact"
            );
            assert!(u.validate().is_err(), "{what}");
        }
    }
}
