//! One copy of a Poptrie for every version a dynamic FIB publishes
//! (Poptrie §3.5 with the paper's memory model): a changed slot's subtree
//! is written to free space and the new version points its slot there;
//! every version shares the node and leaf arrays, and the direct table's
//! unchanged chunks (frames).
//!
//! ```text
//!  Memory (one per build: nodes, leaves; written only where no version reaches)
//!    ▲              ▲                ▲
//!  Version 7      Version 8        Writer (working direct table, free space,
//!  (a reader's    (current)         freed blocks, limbo)
//!   snapshot)
//! ```
//!
//! - A [`Version`] is what readers search: a small table naming, for each
//!   run of 64 direct entries, the frame of the shared `Memory` that holds
//!   them, over the shared node and leaf arrays. A lookup reads the table
//!   (16 KiB at s = 18: it stays in the reader's cache), the frame entry,
//!   then the nodes as in [`Poptrie`].
//! - The [`Writer`] rebuilds a slot into blocks taken from free space and
//!   sets the slot's entry in a fresh copy of its frame (copy on write: a
//!   frame is copied once per publication however many of its entries
//!   change); [`Writer::publish`] turns the working state into a
//!   `Version`, which costs a copy of the frame table.
//! - **Reclamation.** A block the working state no longer reaches is not
//!   free yet: an older version may reach it. Each publication puts the
//!   blocks and frames it dropped into `limbo` with the token of the version before
//!   it; the blocks return to free space once only the writer holds that
//!   token and every older one (first in, first out: a version that is no
//!   longer current is never handed out again, so once unheld it stays
//!   unheld). A block freed at publication P was reachable only from
//!   versions up to P-1, so nothing can read it after that.
//!   Frames are reclaimed the same way.
//! - When free space runs out (a reader holding an old version for long
//!   keeps its blocks in limbo), [`ArenaFull`] tells the FIB to build
//!   afresh into new memory; the old memory lives on while a version
//!   points into it.
//!
//! Why: with two copies (left-right), readers switched between two
//! multi-MiB copies at every publication and refilled their caches each
//! time; with one, a publication changes only the lines of the slots it
//! rebuilt and the frames holding their entries (256 bytes each). Frames
//! live in one huge-page buffer like the other arrays; they were
//! `Arc`-counted 4 KiB chunks first, which put each version's teardown
//! (hundreds of counts) and 4 KiB copies per changed slot in the way.

use super::build::{self, SlotBuilt};
use super::search::{self, Walk};
use super::update::{relocated, subtree_size, with_room, Arena, ArenaFull, Space};
use super::{Chunks, Kernel, Node, Poptrie, PoptrieError, PoptrieOptions, DIRECT_LEAF};
use crate::intervals::{Intervals, NO_ROUTE};
use crate::mem::LookupBuf;
use std::collections::VecDeque;
use std::sync::Arc;

/// Direct entries per frame, as a power of two.
const FRAME_BITS: u32 = 6;
const FRAME: usize = 1 << FRAME_BITS;

/// The node and leaf arrays every version of one build shares. Written
/// only by the [`Writer`], through [`LookupBuf::raw`], and only in blocks
/// no version a reader can hold reaches; never through a slice.
struct Memory {
    nodes: LookupBuf<Node>,
    leaves: LookupBuf<u32>,
    /// Direct entries, `FRAME` per frame.
    frames: LookupBuf<u32>,
}

/// A block of one slot's subtree: its nodes and its leaves.
/// What one publication dropped.
#[derive(Debug, Default)]
struct Dropped {
    blocks: Vec<Block>,
    frames: Vec<u32>,
}

#[derive(Clone, Copy, Debug)]
struct Block {
    node: u32,
    nodes: u32,
    leaf: u32,
    leaves: u32,
}

/// One published version: what readers search.
pub(crate) struct Version<A: Chunks> {
    /// The frame of each run of `FRAME` direct entries.
    table: Box<[u32]>,
    /// `mem`'s arrays, cached for the search.
    nodes: *const Node,
    leaves: *const u32,
    frames: *const u32,
    mem: Arc<Memory>,
    s: u32,
    kernel: Kernel,
    /// The writer holds a clone while blocks this version reaches wait in
    /// limbo: the count tells it when no reader holds this version.
    _token: Arc<()>,
    _family: std::marker::PhantomData<A>,
}

// SAFETY: the raw pointers point into `mem`, which the version keeps alive
// (an `Arc`), and are only read; the writer writes no memory a live version
// reaches (the module doc's reclamation rule), so sharing a version between
// threads shares immutable data, as with a `Poptrie`.
unsafe impl<A: Chunks> Send for Version<A> {}
// SAFETY: as above.
unsafe impl<A: Chunks> Sync for Version<A> {}

// SAFETY: `Walk`'s contract holds for a version as for the `Poptrie` it was
// built as (`Poptrie::validate` holds for both; `Writer::validate` checks
// it after updates in the tests): the frame table covers 2^s entries
// (ceil(2^s / FRAME) frames, each inside `frames`) and the index is `s`
// bits; slot updates write a slot's blocks completely before
// the version that points to them exists; and no thread writes the blocks
// a live version reaches (reclamation, module doc).
unsafe impl<A: Chunks> Walk<A, Node> for Version<A> {
    #[inline(always)]
    fn s(&self) -> u32 {
        self.s
    }
    #[inline(always)]
    fn kernel(&self) -> Kernel {
        self.kernel
    }
    #[inline(always)]
    fn entry(&self, addr: A) -> u32 {
        let i = addr.direct_index(self.s);
        // SAFETY: `i < 2^s`, so `i >> FRAME_BITS` indexes the table, whose
        // frames lie inside `frames` (`Writer::validate` checks both).
        unsafe {
            let f = *self.table.get_unchecked(i >> FRAME_BITS) as usize;
            self.frames
                .add((f << FRAME_BITS) | (i & (FRAME - 1)))
                .read()
        }
    }
    #[inline(always)]
    fn entry_branch_free(&self, addr: A) -> u32 {
        self.entry(addr)
    }
    #[inline(always)]
    fn nodes(&self) -> *const Node {
        self.nodes
    }
    #[inline(always)]
    fn leaves(&self) -> *const u32 {
        self.leaves
    }
    #[inline(always)]
    fn vector(&self) -> Option<&Poptrie<A, Node>> {
        None
    }
}

impl<A: Chunks> Version<A> {
    /// Payload for `addr` (as [`Poptrie::lookup`]).
    #[inline]
    pub(crate) fn lookup(&self, addr: A) -> u32 {
        search::lookup(self, addr)
    }

    /// Payloads for `addrs` into `out` (as [`Poptrie::lookup_batch`]; the
    /// AVX-512 kernel gathers from a flat direct table, so a version's
    /// batch runs the popcount kernel).
    #[inline]
    pub(crate) fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        crate::engine::batch_args::<M, A>(addrs, out);
        search::lookup_batch::<A, Node, Self, M>(self, addrs, out)
    }

    /// This version's frame table, plus the shared arrays (counted in
    /// every version that shares them).
    pub(crate) fn footprint_bytes(&self) -> usize {
        self.table.len() * 4
            + self.mem.nodes.len() * std::mem::size_of::<Node>()
            + (self.mem.leaves.len() + self.mem.frames.len()) * 4
    }
}

/// The writer's side of a versioned Poptrie: the working direct table, the
/// shared memory's free space, and the blocks waiting for readers to
/// leave.
pub(crate) struct Writer<A: Chunks> {
    /// The working frame table, and which of its frames were copied since
    /// the last publication (written in place until then).
    table: Vec<u32>,
    fresh: Vec<bool>,
    fresh_list: Vec<u32>,
    /// Direct entries (2^s).
    slots: usize,
    mem: Arc<Memory>,
    arena: Arena,
    /// Free frames of `mem.frames`, in frames.
    frame_space: Space,
    /// Blocks and frames the working state stopped reaching since the
    /// last publication.
    freed: Dropped,
    /// Per publication, oldest first: the token of the version before it
    /// and what it dropped (see the module doc).
    limbo: VecDeque<(Arc<()>, Dropped)>,
    /// The token of the last version made.
    last: Arc<()>,
    s: u32,
    kernel: Kernel,
    leafvec: bool,
    _family: std::marker::PhantomData<A>,
}

impl<A: Chunks> Writer<A> {
    /// Build from `iv` (a slot for every prefix of `s` bits, with room in
    /// the arrays for updates) and the first version.
    pub(crate) fn build(
        iv: &Intervals<A>,
        opts: &PoptrieOptions,
    ) -> Result<(Self, Version<A>), PoptrieError> {
        let (trie, arena) = Poptrie::<A>::build_updatable(iv, opts)?;
        debug_assert_eq!(trie.focus.bits, 0, "an updatable build has no focus");
        let Poptrie {
            direct,
            nodes,
            leaves,
            s,
            kernel,
            leafvec,
            ..
        } = trie;
        let n = direct.len().div_ceil(FRAME);
        let mut frames = direct.to_vec();
        frames.resize(n * FRAME, NO_ROUTE);
        frames.resize(with_room(n) * FRAME, NO_ROUTE);
        let mut w = Writer {
            table: (0..n as u32).collect(),
            fresh: vec![false; n],
            fresh_list: Vec::new(),
            slots: direct.len(),
            mem: Arc::new(Memory {
                nodes,
                leaves,
                frames: LookupBuf::from_slice(&frames),
            }),
            arena,
            frame_space: Space::new(n, with_room(n)),
            freed: Dropped::default(),
            limbo: VecDeque::new(),
            last: Arc::new(()),
            s,
            kernel,
            leafvec,
            _family: std::marker::PhantomData,
        };
        let first = w.publish();
        w.limbo.clear(); // no version came before the first
        Ok((w, first))
    }

    /// The working state as a version readers can search. Blocks dropped
    /// since the last one wait in limbo until the last one is unheld.
    pub(crate) fn publish(&mut self) -> Version<A> {
        let token = Arc::new(());
        let before = std::mem::replace(&mut self.last, Arc::clone(&token));
        self.limbo
            .push_back((before, std::mem::take(&mut self.freed)));
        for &c in &self.fresh_list {
            self.fresh[c as usize] = false;
        }
        self.fresh_list.clear();
        Version {
            table: self.table.as_slice().into(),
            nodes: self.mem.nodes.raw(),
            leaves: self.mem.leaves.raw(),
            frames: self.mem.frames.raw(),
            mem: Arc::clone(&self.mem),
            s: self.s,
            kernel: self.kernel,
            _token: token,
            _family: std::marker::PhantomData,
        }
    }

    /// Give back to free space the blocks of every publication whose
    /// earlier versions no reader holds any more (oldest first).
    pub(crate) fn reclaim(&mut self) {
        while let Some((token, _)) = self.limbo.front_mut() {
            // `get_mut` reads the count with Acquire ordering: every
            // reader's use of the version happened before this.
            if Arc::get_mut(token).is_none() {
                break;
            }
            let Some((_, dropped)) = self.limbo.pop_front() else {
                break;
            };
            for b in dropped.blocks {
                self.arena.nodes.release(b.node, b.nodes);
                self.arena.leaves.release(b.leaf, b.leaves);
            }
            for f in dropped.frames {
                self.frame_space.release(f, 1);
            }
        }
    }

    /// Publications whose dropped blocks still wait for readers.
    pub(crate) fn waiting(&self) -> usize {
        self.limbo.len()
    }

    /// Node `i` of the shared memory.
    fn node(&self, i: usize) -> Node {
        assert!(i < self.mem.nodes.len(), "node {i} outside the arena");
        // SAFETY: in bounds (checked); reads race with no write, since only
        // this writer writes the arena and it is here (`&self`).
        unsafe { self.mem.nodes.raw().add(i).read() }
    }

    /// Direct entry `slot` of the working state.
    fn entry(&self, slot: usize) -> u32 {
        assert!(slot < self.slots, "slot {slot} out of range");
        let i = ((self.table[slot >> FRAME_BITS] as usize) << FRAME_BITS) | (slot & (FRAME - 1));
        assert!(
            i < self.mem.frames.len(),
            "frame entry {i} outside the frames"
        );
        // SAFETY: in bounds (checked); only this writer writes the frames
        // and it is here (`&self`).
        unsafe { self.mem.frames.raw().add(i).read() }
    }

    /// Set direct entry `slot` of the working state, copying its frame
    /// first unless this publication already did. `Err(ArenaFull)`: no
    /// free frame.
    fn set_entry(&mut self, slot: usize, entry: u32) -> Result<(), ArenaFull> {
        let c = slot >> FRAME_BITS;
        if !self.fresh[c] {
            let f = match self.frame_space.alloc(1) {
                Some(f) => f,
                None => {
                    self.reclaim();
                    self.frame_space.alloc(1).ok_or(ArenaFull)?
                }
            };
            let (old, new) = (self.table[c] as usize * FRAME, f as usize * FRAME);
            assert!(new + FRAME <= self.mem.frames.len() && old + FRAME <= self.mem.frames.len());
            // SAFETY: both frames lie inside `frames` (checked). Frame `f`
            // was free (as blocks are in `replace_slot`): no version a
            // reader holds reaches it, and only this writer writes; the old
            // frame is only read. Distinct frames do not overlap.
            unsafe {
                let p = self.mem.frames.raw();
                std::ptr::copy_nonoverlapping(p.add(old), p.add(new), FRAME);
            }
            self.freed.frames.push(self.table[c]);
            self.table[c] = f;
            self.fresh[c] = true;
            self.fresh_list.push(c as u32);
        }
        let i = self.table[c] as usize * FRAME + (slot & (FRAME - 1));
        assert!(i < self.mem.frames.len());
        // SAFETY: in bounds (checked); the frame was copied in this
        // publication, so no version reaches it yet, and only this writer
        // writes.
        unsafe { self.mem.frames.raw().add(i).write(entry) };
        Ok(())
    }

    /// The blocks of slot `slot`'s subtree (`None`: a leaf entry).
    fn block_at(&self, slot: usize) -> Option<Block> {
        let entry = self.entry(slot);
        if entry & DIRECT_LEAF != 0 {
            return None;
        }
        self.block_of(entry as usize)
    }

    /// The blocks of the subtree rooted at node `root`.
    fn block_of(&self, root: usize) -> Option<Block> {
        let (nodes, leaves) = subtree_size(&|i| self.node(i), root);
        Some(Block {
            node: root as u32,
            nodes,
            leaf: self.node(root).base0,
            leaves,
        })
    }

    /// Free space for `nodes` and `leaves` entries (reclaiming first when
    /// nothing fits), or `None`.
    fn alloc(&mut self, nodes: u32, leaves: u32) -> Option<(u32, u32)> {
        let n = self.arena.nodes.alloc(nodes).or_else(|| {
            self.reclaim();
            self.arena.nodes.alloc(nodes)
        })?;
        if leaves == 0 {
            return Some((n, 0));
        }
        let l = self.arena.leaves.alloc(leaves).or_else(|| {
            self.reclaim();
            self.arena.leaves.alloc(leaves)
        });
        if l.is_none() {
            self.arena.nodes.release(n, nodes);
        }
        Some((n, l?))
    }

    /// Rebuild slot `slot` from `iv` (the routes under it) into free
    /// space and point the working direct table at it. `Ok(Err(ArenaFull))`:
    /// no room; nothing changed, and the caller builds afresh.
    pub(crate) fn replace_slot(
        &mut self,
        slot: usize,
        iv: &Intervals<A>,
    ) -> Result<Result<(), ArenaFull>, PoptrieError> {
        assert!(slot < self.slots, "slot {slot} out of range");
        super::payloads_fit(iv)?;
        let entry = match build::build_slot::<A, Node>(iv, self.s, slot as u128, self.leafvec)? {
            SlotBuilt::Leaf(entry) => entry,
            SlotBuilt::Tree { nodes, leaves } => {
                let Some((n_off, l_off)) = self.alloc(nodes.len() as u32, leaves.len() as u32)
                else {
                    return Ok(Err(ArenaFull));
                };
                if n_off as usize + nodes.len() > DIRECT_LEAF as usize {
                    return Err(PoptrieError::TooManyNodes(n_off as usize + nodes.len()));
                }
                let (np, lp) = (self.mem.nodes.raw(), self.mem.leaves.raw());
                // SAFETY: `alloc` handed out `nodes.len()` nodes from
                // `n_off` and `leaves.len()` leaves from `l_off`, inside the
                // arrays (a `Space`'s capacity is its array's length, which
                // `validate` checks). Those blocks were free: never reached,
                // or released by `reclaim` once no version that reached
                // them was held. So no reader reads them, and only this
                // writer (`&mut self`) writes the arena: no data race. The
                // version that points to them is made after these writes
                // and reaches readers through a release store
                // (`ArcSwap::store`), which orders them first.
                unsafe {
                    for (k, n) in nodes.iter().enumerate() {
                        np.add(n_off as usize + k).write(relocated(n, n_off, l_off));
                    }
                    std::ptr::copy_nonoverlapping(
                        leaves.as_ptr(),
                        lp.add(l_off as usize),
                        leaves.len(),
                    );
                }
                n_off
            }
        };
        let old = self.block_at(slot);
        if let Err(full) = self.set_entry(slot, entry) {
            // Not pointed to: the new blocks go straight back.
            if entry & DIRECT_LEAF == 0 {
                if let Some(b) = self.block_of(entry as usize) {
                    self.arena.nodes.release(b.node, b.nodes);
                    self.arena.leaves.release(b.leaf, b.leaves);
                }
            }
            return Ok(Err(full));
        }
        if let Some(old) = old {
            self.freed.blocks.push(old);
        }
        Ok(Ok(()))
    }

    /// The working state as a plain `Poptrie` (a copy), for checks.
    fn materialize(&self) -> Poptrie<A> {
        let direct: Vec<u32> = (0..self.slots).map(|i| self.entry(i)).collect();
        let (nodes, leaves) = (&self.mem.nodes, &self.mem.leaves);
        // SAFETY: reads of the whole arrays while readers may read them
        // too; only this writer writes them, and it is here (`&self`).
        let (nodes, leaves) = unsafe {
            (
                std::slice::from_raw_parts(nodes.raw(), nodes.len()),
                std::slice::from_raw_parts(leaves.raw(), leaves.len()),
            )
        };
        Poptrie {
            direct: LookupBuf::from_slice(&direct),
            nodes: LookupBuf::from_slice(nodes),
            leaves: LookupBuf::from_slice(leaves),
            s: self.s,
            focus: build::Focus::default(),
            kernel: self.kernel,
            leafvec: self.leafvec,
            _family: std::marker::PhantomData,
        }
    }

    /// Check the working state: the trie's structure (`Poptrie::validate`),
    /// the frame table (every frame inside the frames), free space
    /// disjoint from every block and frame the working state reaches and
    /// from every one still waiting (freed or in limbo), and no two of
    /// those overlapping.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let frames = self.mem.frames.len() / FRAME;
        if self.table.len() != self.slots.div_ceil(FRAME) {
            return Err(format!(
                "frame table of {} for {} slots",
                self.table.len(),
                self.slots
            ));
        }
        if let Some(f) = self.table.iter().find(|&&f| f as usize >= frames) {
            return Err(format!("frame {f} outside the {frames} frames"));
        }
        let trie = self.materialize();
        let blocks = trie.subtree_blocks()?;
        let waiting = std::iter::once(&self.freed).chain(self.limbo.iter().map(|(_, d)| d));
        let mut nodes: Vec<(u32, u32)> = blocks.iter().map(|b| (b.root, b.nodes)).collect();
        let mut leaves: Vec<(u32, u32)> = blocks.iter().map(|b| (b.first_leaf, b.leaves)).collect();
        let mut live_frames: Vec<(u32, u32)> = self.table.iter().map(|&f| (f, 1)).collect();
        for d in waiting {
            for b in &d.blocks {
                nodes.push((b.node, b.nodes));
                leaves.push((b.leaf, b.leaves));
            }
            live_frames.extend(d.frames.iter().map(|&f| (f, 1)));
        }
        self.arena.nodes.check("nodes", trie.nodes.len(), &nodes)?;
        self.arena
            .leaves
            .check("leaves", trie.leaves.len(), &leaves)?;
        self.frame_space.check("frames", frames, &live_frames)?;
        disjoint("nodes", &mut nodes)?;
        disjoint("leaves", &mut leaves)?;
        disjoint("frames", &mut live_frames)
    }
}

/// No two non-empty blocks `(offset, size)` overlap.
fn disjoint(what: &str, blocks: &mut [(u32, u32)]) -> Result<(), String> {
    blocks.sort_unstable();
    let mut end = 0u64;
    let mut last = (0, 0);
    for &(off, size) in blocks.iter().filter(|b| b.1 > 0) {
        if u64::from(off) < end {
            return Err(format!(
                "{what}: blocks {last:?} and {:?} overlap (a live or waiting block reused too early)",
                (off, size)
            ));
        }
        end = u64::from(off) + u64::from(size);
        last = (off, size);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intervals::compile;
    use crate::prefix::Prefix;

    fn p(s: &str) -> Prefix<u32> {
        s.parse().unwrap()
    }

    /// A held version keeps answering as it did, its blocks are not
    /// reused while it is held, and they are once it is dropped.
    #[test]
    fn held_versions_keep_their_blocks_until_dropped() {
        let opts = PoptrieOptions {
            direct_bits: Some(8),
            ..Default::default()
        };
        let routes = |v: u32| {
            compile([
                (p("10.0.0.0/8"), 1),
                (p("10.1.2.0/24"), v),
                (p("10.1.2.128/25"), v + 1),
            ])
        };
        let (mut w, v0) = Writer::build(&routes(2), &opts).unwrap();
        assert_eq!(v0.lookup(0x0a01_0203), 2);
        let mut held = vec![v0];
        for v in 3..40 {
            assert_eq!(w.replace_slot(10, &routes(v)).unwrap(), Ok(()));
            w.validate().unwrap();
            held.push(w.publish());
            w.reclaim();
            for (k, h) in held.iter().enumerate() {
                let want = 2 + k as u32;
                assert_eq!(h.lookup(0x0a01_0203), want, "version {k}");
                assert_eq!(h.lookup(0x0a01_0281), want + 1, "version {k}");
                let mut out = [0; 2];
                h.lookup_batch::<2>(&[0x0a01_0203, 0x0a01_0281], &mut out);
                assert_eq!(out, [want, want + 1]);
            }
        }
        assert_eq!(
            w.waiting(),
            37,
            "every publication waits while version 0 is held"
        );
        held.remove(0);
        w.reclaim();
        assert_eq!(w.waiting(), 36, "the oldest publication's blocks are free");
        held.clear();
        w.reclaim();
        assert_eq!(w.waiting(), 0);
        w.validate().unwrap();
        // Dropped blocks are reused: the arrays do not grow.
        let used = w.arena.nodes.used();
        for v in 40..200 {
            assert_eq!(w.replace_slot(10, &routes(v)).unwrap(), Ok(()));
            let now = w.publish();
            w.reclaim();
            assert_eq!(now.lookup(0x0a01_0281), v + 1);
        }
        assert!(
            w.arena.nodes.used() <= used + 8,
            "{} > {used}",
            w.arena.nodes.used()
        );
        w.validate().unwrap();
    }

    /// With every version held, free space runs out and the writer says
    /// so instead of reusing a held block.
    #[test]
    fn held_versions_fill_the_arena_then_arena_full() {
        let opts = PoptrieOptions {
            direct_bits: Some(8),
            ..Default::default()
        };
        let routes = |v: u32| compile([(p("10.1.2.0/24"), v), (p("10.1.2.128/25"), v + 1)]);
        let (mut w, v0) = Writer::build(&routes(1), &opts).unwrap();
        let mut held = vec![v0];
        let mut full = false;
        for v in 2..100_000 {
            match w.replace_slot(10, &routes(v)).unwrap() {
                Ok(()) => held.push(w.publish()),
                Err(ArenaFull) => {
                    full = true;
                    break;
                }
            }
        }
        assert!(full, "the arena never filled");
        w.validate().unwrap();
        for (k, h) in held.iter().enumerate() {
            assert_eq!(h.lookup(0x0a01_0203), 1 + k as u32);
        }
    }
}
