//! The flat Poptrie search, written once and compiled for the baseline
//! target (`Kernel::Scalar`) and with `popcnt` (`Kernel::Popcnt`, and
//! `Kernel::Avx512` for single lookups); `lookup` and `lookup_batch` at
//! the bottom are the one dispatch point.

#[cfg(target_arch = "x86_64")]
use super::avx512;
use super::layout::{FlatPoptrie, K, LEAF};
use crate::engine::kernel::Kernel;
use crate::engine::poptrie::layout::Chunks;
use crate::mem::prefetch_input;

/// Bits `0..=v` (the slots up to and including `v`).
#[inline(always)]
fn upto(v: usize) -> u64 {
    u64::MAX >> (63 - v)
}

/// The first entry for `addr` and the address shifted past the bits that
/// chose it: the focus table's bucket (from bit `s`) or, outside the
/// focus prefix, the outer table's (from bit `|F|`). Branch free: batches
/// mix both kinds at random on uniform traces.
#[inline(always)]
fn start<A: Chunks>(e: &FlatPoptrie<A>, addr: A) -> (u64, A) {
    let (f, s, t) = (e.focus.bits, e.s, addr.top64());
    // f <= s <= 24: every shift below is in range; the double shifts give
    // 0 for a one-entry table.
    let inside = f == 0 || (t ^ e.focus.first_top) >> (64 - f) == 0;
    let bucket = (((t << f) >> 1) >> (63 - (s - f))) as usize;
    let outer = e.focus_len() + ((t >> 1) >> (63 - f)) as usize;
    let (idx, shift) = if inside { (bucket, s) } else { (outer, f) };
    // SAFETY: `bucket` has `s - f` bits (the focus table's 2^(s - f)
    // entries come first) and `outer` indexes the outer table of 2^f
    // entries after it, which exists whenever f > 0 (when f = 0 every
    // address is inside).
    (unsafe { *e.entries.get_unchecked(idx) }, addr.shl(shift))
}

/// One level: the entry slot `key.top(K)` of node entry `x` reads.
#[inline(always)]
fn child(x: u64, v: usize) -> usize {
    (x >> 32) as usize + (x & upto(v)).count_ones() as usize
}

#[inline(always)]
fn lookup_with<A: Chunks>(e: &FlatPoptrie<A>, addr: A) -> u32 {
    let (mut x, mut key) = start(e, addr);
    while x & LEAF == 0 {
        // SAFETY: a node entry's `base - 1` plus the runs up to any slot
        // (at least one: slot 0 always starts a run) indexes its block,
        // which build.rs allocated inside `entries` (`FlatPoptrie::validate`
        // checks both claims, and that descents end at leaves).
        x = unsafe { *e.entries.get_unchecked(child(x, key.top(K))) };
        key = key.shl(K);
    }
    x as u32
}

/// `M` lookups in flight: every lane's first entry, then one level per
/// pass over the lanes still descending, so their loads overlap.
#[inline(always)]
fn batch_with<A: Chunks, const M: usize>(e: &FlatPoptrie<A>, addrs: &[A], out: &mut [u32]) {
    let (in_chunks, in_rest) = addrs.split_at(addrs.len() - addrs.len() % M);
    for (a, o) in in_chunks.chunks_exact(M).zip(out.chunks_exact_mut(M)) {
        prefetch_input(a.as_ptr(), M);
        let mut x = [0u64; M];
        let mut key = [A::ZERO; M];
        let mut lane = [0usize; M];
        let mut n = 0;
        for i in 0..M {
            (x[i], key[i]) = start(e, a[i]);
            lane[n] = i;
            n += (x[i] & LEAF == 0) as usize;
        }
        while n > 0 {
            let mut next = 0;
            for j in 0..n {
                let i = lane[j];
                // SAFETY: as in `lookup_with`; lane `i` is at a node entry.
                x[i] = unsafe { *e.entries.get_unchecked(child(x[i], key[i].top(K))) };
                key[i] = key[i].shl(K);
                lane[next] = i;
                next += (x[i] & LEAF == 0) as usize;
            }
            n = next;
        }
        for i in 0..M {
            o[i] = x[i] as u32;
        }
    }
    let done = in_chunks.len();
    for (k, &addr) in in_rest.iter().enumerate() {
        out[done + k] = lookup_with(e, addr);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt,bmi1,bmi2")]
fn lookup_popcnt<A: Chunks>(e: &FlatPoptrie<A>, addr: A) -> u32 {
    lookup_with(e, addr)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt,bmi1,bmi2")]
fn batch_popcnt<A: Chunks, const M: usize>(e: &FlatPoptrie<A>, addrs: &[A], out: &mut [u32]) {
    batch_with::<A, M>(e, addrs, out)
}

/// Single lookup through the engine's kernel.
#[inline]
pub(super) fn lookup<A: Chunks>(e: &FlatPoptrie<A>, addr: A) -> u32 {
    match e.kernel {
        // SAFETY: `FlatPoptrie::build` only accepts kernels the CPU supports.
        #[cfg(target_arch = "x86_64")]
        Kernel::Popcnt | Kernel::Avx512 => unsafe { lookup_popcnt(e, addr) },
        _ => lookup_with(e, addr),
    }
}

/// Batch lookup through the engine's kernel.
#[inline]
pub(super) fn lookup_batch<A: Chunks, const M: usize>(
    e: &FlatPoptrie<A>,
    addrs: &[A],
    out: &mut [u32],
) {
    match e.kernel {
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Popcnt => unsafe { batch_popcnt::<A, M>(e, addrs, out) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512
            if M.is_multiple_of(avx512::LANES) && M / avx512::LANES <= avx512::MAX_GROUPS =>
        {
            // SAFETY: as above; the caller checked the output length, and M
            // fits the vector batch. The remainder (fewer than M addresses)
            // goes through the scalar batch.
            unsafe {
                let done = avx512::batch::<A, M>(e, addrs, out);
                batch_popcnt::<A, M>(e, &addrs[done..], &mut out[done..]);
            }
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { batch_popcnt::<A, M>(e, addrs, out) },
        _ => batch_with::<A, M>(e, addrs, out),
    }
}
