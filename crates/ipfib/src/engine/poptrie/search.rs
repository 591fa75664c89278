//! The Poptrie search (§3.2, Algorithm 1 with direct pointing), written once
//! and compiled twice: for the baseline target (`Kernel::Scalar`) and
//! inside a `#[target_feature(enable = "popcnt,bmi1,bmi2")]` wrapper
//! (`Kernel::Popcnt`), where `count_ones` is one instruction. `lookup` and
//! `lookup_batch` at the bottom are the one dispatch point.

#[cfg(target_arch = "x86_64")]
use super::avx512;
use super::layout::{Chunks, Poptrie, Stride, DIRECT_LEAF};
use crate::engine::kernel::Kernel;
use crate::intervals::NO_ROUTE;
use crate::mem::{prefetch, prefetch_input};

/// The payload of a direct-pointing leaf entry.
#[inline(always)]
fn direct_payload(d: u32) -> u32 {
    if d == NO_ROUTE {
        NO_ROUTE
    } else {
        d & !DIRECT_LEAF
    }
}

/// Where `addr` falls: inside the focus prefix with its bucket, or
/// outside with the leaf entry of the addresses below or above the prefix.
/// On the top 64 bits only (the prefix and `s` are at most 24 bits).
#[inline(always)]
fn focus_slot<A: Chunks, N: Stride>(e: &Poptrie<A, N>, addr: A) -> (bool, usize, u32) {
    let (f, t) = (e.focus.bits, addr.top64());
    // 0 < f <= s <= 24: the shifts are in range; two shifts so that s = f
    // (a one-entry table) gives bucket 0.
    let inside = (t ^ e.focus.first_top) >> (64 - f) == 0;
    let bucket = (((t << f) >> 1) >> (63 - (e.s - f))) as usize;
    let outside = if t < e.focus.first_top {
        e.focus.below
    } else {
        e.focus.above
    };
    (inside, bucket, outside)
}

/// The direct-pointing entry for `addr` in a single lookup: an address
/// outside the focus prefix returns before any load.
#[inline(always)]
fn direct_entry<A: Chunks, N: Stride>(e: &Poptrie<A, N>, addr: A) -> u32 {
    if e.focus.bits == 0 {
        // SAFETY: the table has 2^s entries (`Poptrie::validate` checks
        // the size) and the index is `s` bits.
        return unsafe { *e.direct.get_unchecked(addr.direct_index(e.s)) };
    }
    let (inside, bucket, outside) = focus_slot(e, addr);
    if !inside {
        return outside;
    }
    // SAFETY: the table has 2^(s - f) entries; `bucket` is `s - f` bits.
    unsafe { *e.direct.get_unchecked(bucket) }
}

/// [`direct_entry`] without a data-dependent branch, for batches (uniform
/// IPv6 traces mix addresses inside and outside 2000::/3 at random).
#[inline(always)]
fn direct_entry_branch_free<A: Chunks, N: Stride>(e: &Poptrie<A, N>, addr: A) -> u32 {
    if e.focus.bits == 0 {
        // SAFETY: as in `direct_entry`.
        return unsafe { *e.direct.get_unchecked(addr.direct_index(e.s)) };
    }
    let (inside, bucket, outside) = focus_slot(e, addr);
    // SAFETY: `bucket` is `s - f` bits, or 0 when outside.
    let d = unsafe {
        *e.direct
            .get_unchecked(bucket & (inside as usize).wrapping_neg())
    };
    if inside {
        d
    } else {
        outside
    }
}

/// Bits `0..=v` of a vector (the slots up to and including `v`).
#[inline(always)]
fn upto(v: usize) -> u64 {
    u64::MAX >> (63 - v)
}

/// What the search walks: a direct table and the node and leaf arrays.
/// [`Poptrie`] is one; a dynamic FIB's published version
/// (`super::versioned::Version`), whose arrays the next version shares, is
/// the other.
///
/// # Safety
///
/// An implementation promises what the search's unchecked reads rely on:
/// `entry` and `entry_branch_free` return a direct-leaf entry or the index
/// of a node inside `nodes()`; every child index computed from a node
/// reachable that way lies inside `nodes()`, every leaf index inside
/// `leaves()` (a node's first leaf slot starts a run); and no other thread
/// writes any of that memory while the implementor is borrowed.
pub(super) unsafe trait Walk<A: Chunks, N: Stride> {
    /// Direct-pointing bits `s`.
    fn s(&self) -> u32;
    /// The popcount kernel (checked against the CPU when built).
    fn kernel(&self) -> Kernel;
    /// The direct entry for `addr`.
    fn entry(&self, addr: A) -> u32;
    /// The same, without a data-dependent branch (the batch's first step).
    fn entry_branch_free(&self, addr: A) -> u32;
    /// The first node.
    fn nodes(&self) -> *const N;
    /// The first leaf.
    fn leaves(&self) -> *const u32;
    /// The engine for the AVX-512 batch kernel, which gathers from a
    /// `Poptrie`'s own direct table; `None`: the scalar batch.
    fn vector(&self) -> Option<&Poptrie<A, N>>;
}

// SAFETY: build.rs builds the arrays so, update.rs keeps it when it
// rewrites slots in place (in a trie no reader can reach), and
// `Poptrie::validate` (validate.rs) checks each claim, which the tests run
// after builds and after sequences of slot updates. A `Poptrie` is
// immutable while shared.
unsafe impl<A: Chunks, N: Stride> Walk<A, N> for Poptrie<A, N> {
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
        direct_entry(self, addr)
    }
    #[inline(always)]
    fn entry_branch_free(&self, addr: A) -> u32 {
        direct_entry_branch_free(self, addr)
    }
    #[inline(always)]
    fn nodes(&self) -> *const N {
        self.nodes.as_ptr()
    }
    #[inline(always)]
    fn leaves(&self) -> *const u32 {
        self.leaves.as_ptr()
    }
    #[inline(always)]
    fn vector(&self) -> Option<&Poptrie<A, N>> {
        Some(self)
    }
}

#[inline(always)]
fn lookup_with<A: Chunks, N: Stride, W: Walk<A, N>>(e: &W, addr: A) -> u32 {
    // SAFETY: `Walk`'s contract: the direct entry, every child index and
    // the leaf index of a leaf slot lie inside their arrays, and descents
    // end at a leaf slot.
    unsafe {
        let d = e.entry(addr);
        if d & DIRECT_LEAF != 0 {
            return direct_payload(d);
        }
        let (nodes, leaves) = (e.nodes(), e.leaves());
        // A reference, not a copy: the loop reads only the fields it needs.
        let mut node = &*nodes.add(d as usize);
        let mut key = addr.shl(e.s());
        loop {
            let v = key.top(N::K);
            let m = upto(v);
            if node.vector() & (1 << v) == 0 {
                let i = node.base0() as usize + (node.leafvec() & m).count_ones() as usize - 1;
                return leaves.add(i).read();
            }
            let i = node.base1() as usize + (node.vector() & m).count_ones() as usize - 1;
            node = &*nodes.add(i);
            key = key.shl(N::K);
        }
    }
}

#[inline(always)]
fn batch_with<A: Chunks, N: Stride, W: Walk<A, N>, const M: usize>(
    e: &W,
    addrs: &[A],
    out: &mut [u32],
) {
    let (in_chunks, in_rest) = addrs.split_at(addrs.len() - addrs.len() % M);
    let (nodes, leaves) = (e.nodes(), e.leaves());
    for (a, o) in in_chunks.chunks_exact(M).zip(out.chunks_exact_mut(M)) {
        prefetch_input(a.as_ptr(), M);
        let mut node = [0usize; M];
        let mut key = [A::ZERO; M];
        let mut lane = [0usize; M];
        let mut n = 0;
        for i in 0..M {
            let d = e.entry_branch_free(a[i]);
            o[i] = direct_payload(d);
            node[i] = d as usize;
            // Leaf entries prefetch a wild address, which is harmless; masking
            // it to node 0 was measured 1.4-1.9x slower on IPv4 batches
            // (the loop's code changed shape), so it stays unmasked.
            prefetch(nodes.wrapping_add(d as usize));
            key[i] = a[i].shl(e.s());
            lane[n] = i;
            n += (d & DIRECT_LEAF == 0) as usize;
        }
        // The lanes that enter a node, and each lane's last leaf index
        // (overwritten by every step: the one at a leaf slot stays).
        let (entered, n_entered) = (lane, n);
        let mut leaf = [0usize; M];
        while n > 0 {
            let mut next = 0;
            for j in 0..n {
                // SAFETY: `lane` holds lane numbers below M, and `j < n <= M`;
                // `node[i]` is a direct-pointing node index or a child index
                // read from a node, both inside `nodes` by construction
                // (build.rs, kept by update.rs, checked by
                // `Poptrie::validate`), and a lane is only stepped while it
                // points to a node.
                unsafe {
                    let i = *lane.get_unchecked(j);
                    let nd = nodes.add(*node.get_unchecked(i)).read();
                    let k = *key.get_unchecked(i);
                    let v = k.top(N::K);
                    let m = upto(v);
                    let internal = (nd.vector() >> v) & 1 != 0;
                    let child = (nd.base1() as usize + (nd.vector() & m).count_ones() as usize)
                        .wrapping_sub(1);
                    let lf = (nd.base0() as usize + (nd.leafvec() & m).count_ones() as usize)
                        .wrapping_sub(1);
                    // Start the next load now, not when the next pass gets here.
                    prefetch(if internal {
                        nodes.wrapping_add(child) as *const u8
                    } else {
                        leaves.wrapping_add(lf) as *const u8
                    });
                    *node.get_unchecked_mut(i) = child;
                    *leaf.get_unchecked_mut(i) = lf;
                    *key.get_unchecked_mut(i) = k.shl(N::K);
                    *lane.get_unchecked_mut(next) = i;
                    next += internal as usize;
                }
            }
            n = next;
        }
        for &i in &entered[..n_entered] {
            // SAFETY: a lane that entered a node ended at a leaf slot, whose
            // index lies inside `leaves` by construction (checked by
            // `Poptrie::validate`, as in `lookup_with`).
            o[i] = unsafe { leaves.add(leaf[i]).read() };
        }
    }
    let done = in_chunks.len();
    for (k, &addr) in in_rest.iter().enumerate() {
        out[done + k] = lookup_with(e, addr);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt,bmi1,bmi2")]
fn lookup_popcnt<A: Chunks, N: Stride, W: Walk<A, N>>(e: &W, addr: A) -> u32 {
    lookup_with(e, addr)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt,bmi1,bmi2")]
fn batch_popcnt<A: Chunks, N: Stride, W: Walk<A, N>, const M: usize>(
    e: &W,
    addrs: &[A],
    out: &mut [u32],
) {
    batch_with::<A, N, W, M>(e, addrs, out)
}

#[inline]
pub(super) fn lookup<A: Chunks, N: Stride, W: Walk<A, N>>(e: &W, addr: A) -> u32 {
    match e.kernel() {
        // SAFETY: `Poptrie::build` only accepts kernels the CPU supports
        // (and a FIB version keeps the kernel of the build it came from).
        #[cfg(target_arch = "x86_64")]
        Kernel::Popcnt | Kernel::Avx512 => unsafe { lookup_popcnt(e, addr) },
        _ => lookup_with(e, addr),
    }
}

#[inline]
pub(super) fn lookup_batch<A: Chunks, N: Stride, W: Walk<A, N>, const M: usize>(
    e: &W,
    addrs: &[A],
    out: &mut [u32],
) {
    match e.kernel() {
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Popcnt => unsafe { batch_popcnt::<A, N, W, M>(e, addrs, out) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => match e.vector() {
            Some(t)
                if M.is_multiple_of(avx512::LANES) && M / avx512::LANES <= avx512::MAX_GROUPS =>
            {
                // SAFETY: as above; `Poptrie::lookup_batch` checked the
                // output length, and M fits the vector batch. The
                // remainder (fewer than M addresses) goes through the
                // scalar batch.
                unsafe {
                    let done = avx512::batch::<A, N, M>(t, addrs, out);
                    batch_popcnt::<A, N, W, M>(e, &addrs[done..], &mut out[done..]);
                }
            }
            // SAFETY: as above.
            _ => unsafe { batch_popcnt::<A, N, W, M>(e, addrs, out) },
        },
        _ => batch_with::<A, N, W, M>(e, addrs, out),
    }
}
