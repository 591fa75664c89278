//! Incremental update (Poptrie §3.5): replace the subtree of one
//! direct-pointing slot in place, in a trie no reader can reach.
//!
//! The full build lays each slot's subtree out as one block of nodes and
//! one block of leaves (depth first, so a subtree's nodes and leaves are
//! contiguous). An update rebuilds the slot from the route table's routes
//! under it, frees the old blocks and copies the new ones into free space:
//! the smallest free block that fits (split, never merged), else the unused
//! tail of the arrays, which are built with room to spare. When neither
//! fits, [`ArenaFull`] tells the caller to build the whole trie afresh,
//! which also compacts it: memory stays within a constant factor of a
//! fresh build however many updates pass.
//!
//! Only `crate::fib` calls this, on the one of its two copies that no
//! snapshot references (`Arc::get_mut` proves it), so nothing here needs to
//! be atomic.

use super::build::{self, SlotBuilt};
use super::{Chunks, Node, Poptrie, PoptrieError, PoptrieOptions, DIRECT_LEAF, MAX_PAYLOAD};
use crate::intervals::{Intervals, NO_ROUTE};
use crate::mem::LookupBuf;
use std::collections::BTreeMap;

/// No room left for a rebuilt subtree: rebuild the whole trie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ArenaFull;

/// Free space of one array: blocks by size, and the untouched tail.
#[derive(Debug, Default, Clone)]
struct Space {
    free: BTreeMap<u32, Vec<u32>>,
    free_total: usize,
    used: usize,
    capacity: usize,
}

impl Space {
    fn new(used: usize, capacity: usize) -> Self {
        Space {
            used,
            capacity,
            ..Space::default()
        }
    }

    /// Offset of `n` free entries (`n > 0`); when nothing fits, merge
    /// neighbouring free blocks (and give a free end back to the tail) and
    /// try once more.
    fn alloc(&mut self, n: u32) -> Option<u32> {
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

    fn release(&mut self, off: u32, n: u32) {
        if n > 0 {
            self.free.entry(n).or_default().push(off);
            self.free_total += n as usize;
        }
    }
}

/// Free-space bookkeeping of one updatable Poptrie.
#[derive(Debug, Clone)]
pub(crate) struct Arena {
    nodes: Space,
    leaves: Space,
}

/// Room a fresh build gets for later subtrees: a quarter more, and at
/// least a few thousand entries so small tables do not rebuild constantly.
fn with_room(len: usize) -> usize {
    len + len / 4 + 4096
}

impl<A: Chunks> Poptrie<A> {
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
        iv.validate()?;
        if let Some(&p) = iv
            .payloads
            .iter()
            .find(|&&p| p > MAX_PAYLOAD && p != NO_ROUTE)
        {
            return Err(PoptrieError::PayloadTooLarge(p));
        }
        let built = build::build_slot::<A, Node>(iv, self.s, slot as u128, self.leafvec)?;
        self.free_slot(arena, slot);
        let (nodes, leaves) = match built {
            SlotBuilt::Leaf(entry) => {
                self.direct[slot] = entry;
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
        for (dst, n) in self.nodes[n0..n0 + nodes.len()].iter_mut().zip(&nodes) {
            *dst = Node {
                base0: n.base0 + l_off,
                base1: n.base1 + n_off,
                ..*n
            };
        }
        self.leaves[l0..l0 + leaves.len()].copy_from_slice(&leaves);
        self.direct[slot] = n_off;
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
            self.direct[slot] = entry;
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
        for (dst, n) in self.nodes[n0..n0 + src.len()].iter_mut().zip(src) {
            // Wrapping: a node without children or leaves keeps a base that
            // is never followed, possibly one past its block.
            *dst = Node {
                base0: n.base0.wrapping_sub(first_leaf).wrapping_add(l_off),
                base1: n.base1.wrapping_sub(root as u32).wrapping_add(n_off),
                ..*n
            };
        }
        let fl = first_leaf as usize;
        self.leaves[l0..l0 + n_leaves as usize]
            .copy_from_slice(&from.leaves[fl..fl + n_leaves as usize]);
        self.direct[slot] = n_off;
        Ok(())
    }

    /// Every payload `slot` can answer (its leaves, or its direct leaf).
    pub(crate) fn slot_payloads(&self, slot: usize) -> impl Iterator<Item = u32> + '_ {
        let entry = self.direct[slot];
        let (direct, leaves) = if entry & DIRECT_LEAF != 0 {
            let p = if entry == NO_ROUTE {
                NO_ROUTE
            } else {
                entry & !DIRECT_LEAF
            };
            (Some(p), &self.leaves[..0])
        } else {
            let root = entry as usize;
            let (_, n) = self.subtree_size(root);
            let first = self.nodes[root].base0 as usize;
            (None, &self.leaves[first..first + n as usize])
        };
        direct.into_iter().chain(leaves.iter().copied())
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
        let n = self.nodes[idx];
        let mut nodes = 1;
        let mut leaves = n.leafvec.count_ones();
        for c in 0..n.vector.count_ones() {
            let (cn, cl) = self.subtree_size(n.base1 as usize + c as usize);
            nodes += cn;
            leaves += cl;
        }
        (nodes, leaves)
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
}
