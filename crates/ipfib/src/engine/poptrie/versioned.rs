//! One copy of a Poptrie for every version a dynamic FIB publishes
//! (Poptrie §3.5 with the paper's memory model): a changed slot's subtree
//! is written to free space and the new version points its slot there;
//! every version shares the node and leaf arrays, and the direct table's
//! unchanged chunks (frames).
//!
//! ```text
//!  Memory (one per build: nodes, leaves; written only where no version reaches)
//!    ▲              ▲                ▲
//!  Version 7      Version 8        Writer (working frame table, free space,
//!  (a reader's    (current)         what waits for readers)
//!   snapshot)
//! ```
//!
//! - A [`Version`] is what readers search: a small table naming, for each
//!   run of direct entries (a frame: 64 entries up to s = 18, then
//!   `2^(s - 12)`, so the table never exceeds 4,096 entries), the frame of
//!   the shared `Memory` that holds them, over the shared node and leaf
//!   arrays. A lookup reads the table (16 KiB at most: it stays in the
//!   reader's cache), the frame entry, then the nodes as in [`Poptrie`].
//! - The [`Writer`] rebuilds a slot into blocks taken from free space and
//!   sets the slot's entry in a fresh copy of its frame (copy on write: a
//!   frame is copied once per publication however many of its entries
//!   change); [`Writer::publish`] turns the working state into a
//!   `Version`, which costs a copy of the frame table.
//! - **Reclamation.** A block or frame the working state no longer
//!   reaches is not free yet: an older version may reach it. Each one
//!   records the versions that reach it: from the version its allocation
//!   first went out in (`born`) to the one before the publication that
//!   dropped it (`died - 1`). It returns to free space once no version in
//!   that range is held. The writer keeps a token (`Arc<()>`, one clone in
//!   every copy of a version) per version that may be held, and forgets a
//!   version once it holds the only clone: a version that is no longer
//!   current is never handed out again, so once unheld it stays unheld. A
//!   snapshot held for long thus pins only what its own version reaches,
//!   not everything dropped after it.
//! - When free space runs out (a reader holding an old version for long
//!   pins its blocks), [`ArenaFull`] tells the FIB to build
//!   afresh into new memory; the old memory lives on while a version
//!   points into it.
//!
//! Why one shared copy: a publication changes only the lines of the slots
//! it rebuilt and the frames holding their entries (256 bytes each), so
//! readers keep their caches across publications instead of moving to
//! another multi-MiB copy. Frames live in one huge-page buffer like the
//! other arrays, so that a version's teardown counts nothing and a
//! changed slot copies no more than its frames.

use super::build::{self, SlotBuilt};
use super::layout::{Chunks, Focus, Node, Poptrie, DIRECT_LEAF};
use super::options::{payloads_fit, PoptrieError, PoptrieOptions};
use super::search::{self, Walk};
use super::update::{relocated, subtree_size, Arena, ArenaFull, Space};
use crate::engine::kernel::Kernel;
use crate::intervals::{Intervals, NO_ROUTE};
use crate::mem::LookupBuf;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Direct entries per frame, as a power of two, for `s` direct bits: 64
/// up to s = 18, then larger so that the frame table stays at 4,096
/// entries (a version's table is copied at each publication).
fn frame_bits(s: u32) -> u32 {
    s.saturating_sub(12).max(6)
}

/// Written over released leaves and frame entries when the writer poisons
/// (tests): a version that still reached them would answer this
/// impossible payload, which no value index is.
const POISON: u32 = 0x7fff_fff0;

/// The node and leaf arrays every version of one build shares. Written
/// only by the [`Writer`], through [`LookupBuf::raw`], and only in blocks
/// no version a reader can hold reaches; never through a slice.
struct Memory {
    nodes: LookupBuf<Node>,
    leaves: LookupBuf<u32>,
    /// Direct entries, `2^frame_bits(s)` per frame.
    frames: LookupBuf<u32>,
}

/// Something the working state dropped that versions `born..died` reach.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    born: u64,
    died: u64,
    what: Item,
}

#[derive(Clone, Copy, Debug)]
enum Item {
    Block(Block),
    Frame(u32),
}

/// A block of one slot's subtree: its nodes and its leaves.
#[derive(Clone, Copy, Debug)]
struct Block {
    node: u32,
    nodes: u32,
    leaf: u32,
    leaves: u32,
}

/// One published version: what readers search.
pub(crate) struct Version<A: Chunks> {
    /// The frame of each run of `2^fb` direct entries.
    table: Box<[u32]>,
    fb: u32,
    /// `mem`'s arrays, cached for the search.
    nodes: *const Node,
    leaves: *const u32,
    frames: *const u32,
    mem: Arc<Memory>,
    s: u32,
    kernel: Kernel,
    /// The writer holds a clone: the count tells it when no reader holds
    /// this version.
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
// (ceil(2^s / 2^fb) frames, each inside `frames`) and the index is `s`
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
        let fb = self.fb;
        // SAFETY: `i < 2^s`, so `i >> fb` indexes the table, whose frames
        // lie inside `frames` (`Writer::validate` checks both).
        unsafe {
            let f = *self.table.get_unchecked(i >> fb) as usize;
            self.frames.add((f << fb) | (i & ((1 << fb) - 1))).read()
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
        crate::engine::contract::batch_args::<M, A>(addrs, out);
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

/// The writer's side of a versioned Poptrie: the working frame table,
/// the shared memory's free space, and what waits for readers to leave.
pub(crate) struct Writer<A: Chunks> {
    /// The working frame table, and which of its frames were copied since
    /// the last publication (written in place until then).
    table: Vec<u32>,
    fresh: Vec<bool>,
    fresh_list: Vec<u32>,
    /// Frame size, as a power of two.
    fb: u32,
    /// Direct entries (2^s).
    slots: usize,
    mem: Arc<Memory>,
    arena: Arena,
    /// Free frames of `mem.frames`, in frames.
    frame_space: Space,
    /// The number the next published version gets (the first is 0).
    next: u64,
    /// Versions that may still be held, by number, oldest first, each with
    /// its token.
    held: Vec<(u64, Arc<()>)>,
    /// Dropped blocks and frames not yet free, each under the oldest held
    /// version that reaches it (looked at again only when that version is
    /// forgotten), and those dropped since the last `reclaim`.
    waiting: BTreeMap<u64, Vec<Waiting>>,
    fresh_waiting: Vec<Waiting>,
    /// The version each block (by root node) and frame first went out in;
    /// blocks of the first build are absent (version 0).
    born_blocks: HashMap<u32, u64>,
    born_frames: Vec<u64>,
    /// Overwrite released leaves and frames with [`POISON`] (tests).
    poison: bool,
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
        let fb = frame_bits(s);
        let frame = 1usize << fb;
        let n = direct.len().div_ceil(frame);
        // Room as for the other arrays: a quarter, and 4,096 frames of 64
        // entries (as many entries in fewer, larger frames past s = 18).
        let capacity = n + n / 4 + (4096 >> (fb - 6)).max(64);
        let mut frames = direct.to_vec();
        frames.resize(capacity * frame, NO_ROUTE);
        let mut w = Writer {
            table: (0..n as u32).collect(),
            fresh: vec![false; n],
            fresh_list: Vec::new(),
            fb,
            slots: direct.len(),
            mem: Arc::new(Memory {
                nodes,
                leaves,
                frames: LookupBuf::from_slice(&frames),
            }),
            arena,
            frame_space: Space::new(n, capacity),
            next: 0,
            held: Vec::new(),
            waiting: BTreeMap::new(),
            fresh_waiting: Vec::new(),
            born_blocks: HashMap::new(),
            born_frames: vec![0; capacity],
            poison: false,
            s,
            kernel,
            leafvec,
            _family: std::marker::PhantomData,
        };
        let first = w.publish();
        Ok((w, first))
    }

    /// Overwrite released leaves and frame entries with an impossible
    /// payload, so that a version reaching memory given back too early
    /// answers wrong where the tests look (with `FibOptions::validate`).
    pub(crate) fn set_poison(&mut self, on: bool) {
        self.poison = on;
    }

    /// The working state as a version readers can search.
    pub(crate) fn publish(&mut self) -> Version<A> {
        let token = Arc::new(());
        self.held.push((self.next, Arc::clone(&token)));
        self.next += 1;
        for &c in &self.fresh_list {
            self.fresh[c as usize] = false;
        }
        self.fresh_list.clear();
        // SAFETY: a version only reads through these pointers; this
        // writer writes only blocks no held version reaches (see `raw`'s
        // callers below, each with its own argument).
        let (nodes, leaves, frames) = unsafe {
            (
                self.mem.nodes.raw(),
                self.mem.leaves.raw(),
                self.mem.frames.raw(),
            )
        };
        Version {
            table: self.table.as_slice().into(),
            fb: self.fb,
            nodes,
            leaves,
            frames,
            mem: Arc::clone(&self.mem),
            s: self.s,
            kernel: self.kernel,
            _token: token,
            _family: std::marker::PhantomData,
        }
    }

    /// Forget the versions no reader holds any more, then give back to
    /// free space every dropped block and frame that no held version
    /// reaches.
    pub(crate) fn reclaim(&mut self) {
        let mut gone = Vec::new();
        // `get_mut` reads the count with Acquire ordering: every reader's
        // use of the version happened before this.
        self.held.retain_mut(|(v, token)| {
            let unheld = Arc::get_mut(token).is_some();
            if unheld {
                gone.push(*v);
            }
            !unheld
        });
        // Only what a forgotten version pinned can be free now (a version
        // held from now on is newer than anything already dropped).
        let mut check = std::mem::take(&mut self.fresh_waiting);
        for v in gone {
            if let Some(items) = self.waiting.remove(&v) {
                check.extend(items);
            }
        }
        for w in check {
            match self.pinned_by(&w) {
                Some(v) => self.waiting.entry(v).or_default().push(w),
                None => self.release(w.what),
            }
        }
    }

    /// The oldest held version that reaches `w` (versions `born..died`).
    fn pinned_by(&self, w: &Waiting) -> Option<u64> {
        let i = self.held.partition_point(|&(v, _)| v < w.born);
        self.held.get(i).map(|&(v, _)| v).filter(|&v| v < w.died)
    }

    /// Give `what` back to free space (poisoned first when asked).
    fn release(&mut self, what: Item) {
        match what {
            Item::Block(b) => {
                if self.poison {
                    self.fill_leaves(b.leaf, b.leaves);
                }
                self.born_blocks.remove(&b.node);
                self.arena.nodes.release(b.node, b.nodes);
                self.arena.leaves.release(b.leaf, b.leaves);
            }
            Item::Frame(f) => {
                if self.poison {
                    self.fill_frame(f);
                }
                self.frame_space.release(f, 1);
            }
        }
    }

    fn fill_leaves(&mut self, first: u32, n: u32) {
        let (first, n) = (first as usize, n as usize);
        assert!(first + n <= self.mem.leaves.len());
        // SAFETY: in bounds (checked); the block is being released: no
        // held version reaches it (`pinned`), and only this writer writes.
        unsafe { std::slice::from_raw_parts_mut(self.mem.leaves.raw().add(first), n) }.fill(POISON);
    }

    fn fill_frame(&mut self, f: u32) {
        let frame = 1usize << self.fb;
        let first = f as usize * frame;
        assert!(first + frame <= self.mem.frames.len());
        // SAFETY: as in `fill_leaves`.
        unsafe { std::slice::from_raw_parts_mut(self.mem.frames.raw().add(first), frame) }
            .fill(DIRECT_LEAF | POISON);
    }

    /// Note that the working state dropped `what`, which went out first in
    /// version `born`: the versions from `born` to the last published one
    /// may reach it (none when it never went out: free at once).
    fn dropped(&mut self, born: u64, what: Item) {
        let w = Waiting {
            born,
            died: self.next,
            what,
        };
        if born >= self.next {
            self.release(what);
        } else {
            self.fresh_waiting.push(w);
        }
    }

    /// Dropped blocks and frames that still wait for readers.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.values().map(Vec::len).sum::<usize>() + self.fresh_waiting.len()
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
        let fb = self.fb;
        let i = ((self.table[slot >> fb] as usize) << fb) | (slot & ((1 << fb) - 1));
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
        let (fb, frame) = (self.fb, 1usize << self.fb);
        let c = slot >> fb;
        if !self.fresh[c] {
            let f = match self.frame_space.alloc(1) {
                Some(f) => f,
                None => {
                    self.reclaim();
                    self.frame_space.alloc(1).ok_or(ArenaFull)?
                }
            };
            let (old, new) = (self.table[c] as usize * frame, f as usize * frame);
            assert!(new + frame <= self.mem.frames.len() && old + frame <= self.mem.frames.len());
            // SAFETY: both frames lie inside `frames` (checked). Frame `f`
            // was free (as blocks are in `replace_slot`): no version a
            // reader holds reaches it, and only this writer writes; the old
            // frame is only read. Distinct frames do not overlap.
            unsafe {
                let p = self.mem.frames.raw();
                std::ptr::copy_nonoverlapping(p.add(old), p.add(new), frame);
            }
            let gone = self.table[c];
            self.dropped(self.born_frames[gone as usize], Item::Frame(gone));
            self.born_frames[f as usize] = self.next;
            self.table[c] = f;
            self.fresh[c] = true;
            self.fresh_list.push(c as u32);
        }
        let i = self.table[c] as usize * frame + (slot & (frame - 1));
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
        payloads_fit(iv)?;
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
                // SAFETY: the pointers are written below only inside the
                // blocks `alloc` handed out (the argument that follows).
                let (np, lp) = unsafe { (self.mem.nodes.raw(), self.mem.leaves.raw()) };
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
        if entry & DIRECT_LEAF == 0 {
            self.born_blocks.insert(entry, self.next);
        }
        if let Some(old) = old {
            let born = self.born_blocks.get(&old.node).copied().unwrap_or(0);
            self.dropped(born, Item::Block(old));
        }
        Ok(Ok(()))
    }

    /// The working state as a plain `Poptrie` (a copy), for checks.
    fn materialize(&self) -> Poptrie<A> {
        let (nodes, leaves, frames) = (&self.mem.nodes, &self.mem.leaves, &self.mem.frames);
        // SAFETY: reads of the whole arrays while readers may read them
        // too; only this writer writes them, and it is here (`&self`).
        let (nodes, leaves, frames) = unsafe {
            (
                std::slice::from_raw_parts(nodes.raw(), nodes.len()),
                std::slice::from_raw_parts(leaves.raw(), leaves.len()),
                std::slice::from_raw_parts(frames.raw(), frames.len()),
            )
        };
        let frame = 1usize << self.fb;
        let mut direct: Vec<u32> = Vec::with_capacity(self.table.len() * frame);
        for &f in &self.table {
            // A frame outside the array leaves the table short, which
            // `validate` reports (it checks the table first).
            if let Some(run) = frames.get(f as usize * frame..(f as usize + 1) * frame) {
                direct.extend_from_slice(run);
            }
        }
        direct.truncate(self.slots);
        Poptrie {
            direct: LookupBuf::from_slice(&direct),
            nodes: LookupBuf::from_slice(nodes),
            leaves: LookupBuf::from_slice(leaves),
            s: self.s,
            focus: Focus::default(),
            kernel: self.kernel,
            leafvec: self.leafvec,
            _family: std::marker::PhantomData,
        }
    }

    /// Check the working state: the trie's structure (`Poptrie::validate`),
    /// the frame table (every frame inside the frames), free space
    /// disjoint from every block and frame the working state reaches and
    /// from every one still waiting for readers, and no two of
    /// those overlapping.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let frames = self.mem.frames.len() >> self.fb;
        if self.table.len() != self.slots.div_ceil(1 << self.fb) {
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
        let blocks = trie.subtree_blocks(NO_ROUTE)?;
        let waiting = self.waiting.values().flatten().chain(&self.fresh_waiting);
        let mut nodes: Vec<(u32, u32)> = blocks.iter().map(|b| (b.root, b.nodes)).collect();
        let mut leaves: Vec<(u32, u32)> = blocks.iter().map(|b| (b.first_leaf, b.leaves)).collect();
        let mut live_frames: Vec<(u32, u32)> = self.table.iter().map(|&f| (f, 1)).collect();
        for w in waiting {
            match w.what {
                Item::Block(b) => {
                    nodes.push((b.node, b.nodes));
                    leaves.push((b.leaf, b.leaves));
                }
                Item::Frame(f) => live_frames.push((f, 1)),
            }
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
                "{what}: blocks {last:?} and {:?} overlap (live or waiting for readers)",
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
    use std::sync::mpsc;

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
        let pinned = w.waiting();
        assert!(
            pinned >= 37,
            "every dropped block waits while every version is held"
        );
        held.remove(0);
        w.reclaim();
        assert!(w.waiting() < pinned, "what only version 0 reached is free");
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

    /// Frames run out (leaf-only updates, every version held) while nodes
    /// are plentiful: a tree update then fails in `set_entry`, after its
    /// blocks were written. Every held version must still answer, the
    /// writer must validate, and once released everything is reusable.
    #[test]
    fn frames_exhausted_tree_update_fails_in_set_entry() {
        let opts = PoptrieOptions {
            direct_bits: Some(8),
            ..Default::default()
        };
        let routes = |leaf: u32, v: u32| {
            compile([
                (p("10.1.2.0/24"), v),
                (p("10.1.2.128/25"), v + 1),
                (p("20.0.0.0/8"), leaf),
            ])
        };
        let (mut w, v0) = Writer::build(&routes(1, 2), &opts).unwrap();
        let mut held = vec![(1u32, 2u32, v0)];
        let mut leaf = 1;
        loop {
            leaf += 1;
            match w.replace_slot(20, &routes(leaf, 2)).unwrap() {
                Ok(()) => held.push((leaf, 2, w.publish())),
                Err(ArenaFull) => break,
            }
        }
        w.validate().unwrap();
        let nodes_before = w.arena.nodes.used();
        // A tree update: nodes fit, the frame does not.
        assert_eq!(
            w.replace_slot(10, &routes(leaf - 1, 50)).unwrap(),
            Err(ArenaFull)
        );
        w.validate().unwrap();
        for (l, v, h) in &held {
            assert_eq!(h.lookup(0x1400_0001), *l);
            assert_eq!(h.lookup(0x0a01_0203), *v);
            assert_eq!(h.lookup(0x0a01_0281), *v + 1);
        }
        let last = held.pop().unwrap();
        held.clear();
        w.reclaim();
        assert_eq!(w.waiting(), 0);
        assert_eq!(w.replace_slot(10, &routes(last.0, 50)).unwrap(), Ok(()));
        let now = w.publish();
        assert_eq!(now.lookup(0x0a01_0281), 51);
        assert_eq!(last.2.lookup(0x0a01_0281), 3);
        assert!(w.arena.nodes.used() <= nodes_before + 8);
        w.validate().unwrap();
    }
    /// A reader thread holds versions (dropping them out of order) while
    /// the writer rewrites slots into reclaimed space: Miri's race detector
    /// and aliasing model over the raw-pointer writes.
    #[test]
    fn reader_thread_holds_versions_while_the_writer_reuses_blocks() {
        let opts = PoptrieOptions {
            direct_bits: Some(6),
            ..Default::default()
        };
        let routes = |v: u32| {
            compile([
                (p("8.1.2.0/24"), v),
                (p("8.1.2.128/25"), v + 1),
                (p("12.0.0.0/8"), v + 2),
            ])
        };
        let (mut w, v0) = Writer::build(&routes(10), &opts).unwrap();
        w.set_poison(true);
        let (tx, rx) = mpsc::sync_channel::<(u32, Arc<Version<u32>>)>(0);
        let t = std::thread::spawn(move || {
            let mut held: Vec<(u32, Arc<Version<u32>>)> = Vec::new();
            let mut k = 0usize;
            for (v, ver) in rx {
                held.push((v, ver));
                k += 1;
                if held.len() > 3 {
                    held.remove((k * 7) % held.len());
                }
                for (v, h) in &held {
                    assert_eq!(h.lookup(0x0801_0203), *v);
                    assert_eq!(h.lookup(0x0801_0281), v + 1);
                    assert_eq!(h.lookup(0x0c00_0001), v + 2);
                    let mut out = [0; 3];
                    h.lookup_batch::<2>(&[0x0801_0203, 0x0801_0281, 0x0c00_0001], &mut out);
                    assert_eq!(out, [*v, v + 1, v + 2]);
                }
                std::thread::yield_now();
            }
        });
        tx.send((10, Arc::new(v0))).unwrap();
        for v in 11..40u32 {
            assert_eq!(w.replace_slot(2, &routes(v)).unwrap(), Ok(()));
            assert_eq!(w.replace_slot(3, &routes(v)).unwrap(), Ok(()));
            tx.send((v, Arc::new(w.publish()))).unwrap();
            std::thread::yield_now();
            w.reclaim();
        }
        drop(tx);
        t.join().unwrap();
        // (How many blocks were reused here depends on the threads'
        // timing; `held_versions_keep_their_blocks_until_dropped` checks
        // reuse. The rendezvous channel keeps the writer at most one
        // version ahead of the reader, so reuse happens.)
    }

    /// A block that lives across several versions is freed while an old
    /// version that reaches it is held but the versions just before the
    /// free are not: the block's range of versions, from the one it first
    /// went out in, keeps it from reuse.
    #[test]
    fn an_old_held_version_keeps_its_blocks_when_newer_ones_are_dropped() {
        let opts = PoptrieOptions {
            direct_bits: Some(8),
            ..Default::default()
        };
        let routes = |a: u32, b: u32| {
            compile([
                (p("10.1.2.0/24"), a),
                (p("11.1.2.0/24"), b),
                (p("11.1.2.128/25"), b + 1),
            ])
        };
        let (mut w, v0) = Writer::build(&routes(1, 100), &opts).unwrap();
        assert_eq!(w.replace_slot(11, &routes(1, 101)).unwrap(), Ok(()));
        let v1 = w.publish();
        assert_eq!(w.replace_slot(10, &routes(2, 101)).unwrap(), Ok(()));
        let v2 = w.publish(); // held: reaches slot 11's block born at v1
        assert_eq!(w.replace_slot(10, &routes(3, 101)).unwrap(), Ok(()));
        let v3 = w.publish();
        drop((v0, v1, v3));
        for b in 102..140 {
            assert_eq!(w.replace_slot(11, &routes(3, b)).unwrap(), Ok(()));
            let now = w.publish();
            w.reclaim();
            assert_eq!(now.lookup(0x0b01_0203), b);
            assert_eq!(v2.lookup(0x0b01_0203), 101, "held v2 changed at {b}");
            assert_eq!(v2.lookup(0x0b01_0281), 102, "held v2 changed at {b}");
        }
    }
    /// One version held for good pins only what it reaches: what later
    /// publications drop is reused, so the writer never runs out of room
    /// (a first-in-first-out rule kept everything dropped after the held
    /// version, and ran out within a few thousand publications).
    #[test]
    fn one_held_version_pins_only_its_own_blocks() {
        let opts = PoptrieOptions {
            direct_bits: Some(8),
            ..Default::default()
        };
        let routes = |v: u32| {
            compile([
                (p("10.1.2.0/24"), v),
                (p("10.1.2.128/25"), v + 1),
                (p("11.0.0.0/8"), v),
                (p("11.1.0.0/16"), v + 2),
            ])
        };
        let (mut w, v0) = Writer::build(&routes(1), &opts).unwrap();
        w.set_poison(true);
        for v in 2..20_000u32 {
            let slot = if v % 2 == 0 { 10 } else { 11 };
            assert_eq!(
                w.replace_slot(slot, &routes(v)).unwrap(),
                Ok(()),
                "full at {v}"
            );
            drop(w.publish());
            w.reclaim();
            assert!(w.waiting() <= 4, "{} waiting at {v}", w.waiting());
        }
        w.validate().unwrap();
        assert_eq!(v0.lookup(0x0a01_0203), 1);
        assert_eq!(v0.lookup(0x0a01_0281), 2);
        assert_eq!(v0.lookup(0x0b01_0001), 3);
    }
}
