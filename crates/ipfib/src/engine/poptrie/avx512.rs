//! The AVX-512 batch search: eight lanes per vector, one trie level per
//! step for every lane at once, with gathers instead of one load per lane.
//!
//! Both node layouts: the 64-ary [`Node`] (two gathers per level) and the
//! 32-ary [`Node32`] (one).
//!
//! [`Node`]: super::Node
//! [`Node32`]: super::Node32
//!
//! The scalar batch (`search.rs`) spends about 200 instructions on a
//! matched IPv6 lookup: per lane and level it reloads the lane's state,
//! counts, prefetches and compacts a lane list. Here a level costs, for
//! eight lanes together, one or two gathers (the nodes' `vector` and
//! `base1`), one `vpopcntq` and about ten plain vector instructions (a
//! lane's `leafvec` is read once, at the node where it stops), and no lane
//! ever branches: a lane that reached a leaf slot is masked off (its
//! gathers do not load, though a gather costs the same either way). All
//! lanes of a batch sit at the same trie level in a given step, so the `K`
//! address bits a level reads are at the same offset for every lane, and
//! one shift by a scalar count extracts them.
//!
//! Addresses are held as two 64-bit halves per lane (`hi`, `lo`); an IPv4
//! address is the top 32 bits of `hi`, so one body serves both families.
//! Past the last address bit, levels read zeros, as in the scalar search.

use super::layout::{Chunks, Poptrie, Stride, DIRECT_LEAF};
use crate::intervals::NO_ROUTE;
use crate::mem::prefetch_input;
use std::arch::x86_64::*;

/// Lanes per vector.
pub(super) const LANES: usize = 8;
/// Most groups of one batch (`M <= 128`; larger batches use the scalar
/// batch, see `search.rs`).
pub(super) const MAX_GROUPS: usize = 16;

/// The state of eight lanes.
#[derive(Clone, Copy)]
struct Group {
    hi: __m512i,
    lo: __m512i,
    /// Node index of each descending lane.
    node: __m512i,
    /// Where each lane that ended at a leaf slot ended: its node's word
    /// index (`3 * node`) and the slot.
    end_word: __m512i,
    end_slot: __m512i,
    /// Payloads from the direct table (final for direct-leaf lanes).
    out: __m256i,
    /// Lanes still descending.
    active: __mmask8,
    /// Lanes that entered a node (their answer is a leaf).
    entered: __mmask8,
}

/// The two halves of eight addresses at `p`.
///
/// # Safety
/// `p` points at eight readable addresses; the CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
pub(super) unsafe fn load<A: Chunks>(p: *const A) -> (__m512i, __m512i) {
    // SAFETY: the caller guarantees eight readable addresses of type `A`,
    // which is `u32` or `u128` (`Chunks` is implemented for nothing else).
    unsafe {
        if std::mem::size_of::<A>() == 16 {
            // Little endian: lane i is (lo_i, hi_i) at u64 offsets 2i, 2i + 1.
            let a = _mm512_loadu_si512(p as *const __m512i);
            let b = _mm512_loadu_si512((p as *const __m512i).add(1));
            let lo = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), b);
            let hi = _mm512_permutex2var_epi64(a, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), b);
            (hi, lo)
        } else {
            let v = _mm256_loadu_si256(p as *const __m256i);
            (
                _mm512_slli_epi64::<32>(_mm512_cvtepu32_epi64(v)),
                _mm512_setzero_si512(),
            )
        }
    }
}

/// A vector shift count.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
pub(super) fn count(n: u32) -> __m128i {
    _mm_cvtsi32_si128(n as i32)
}

/// The `k` bits at bit offset `off` (from the top) of each lane's 128-bit
/// address `hi:lo`, zeros past bit 127.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
fn chunk(hi: __m512i, lo: __m512i, off: u32, k: u32) -> __m512i {
    let v = if off + k <= 64 {
        _mm512_srl_epi64(hi, count(64 - k - off))
    } else if off < 64 {
        _mm512_or_si512(
            _mm512_sll_epi64(hi, count(off + k - 64)),
            _mm512_srl_epi64(lo, count(128 - k - off)),
        )
    } else if off + k <= 128 {
        _mm512_srl_epi64(lo, count(128 - k - off))
    } else {
        _mm512_sll_epi64(lo, count(off + k - 128))
    };
    _mm512_and_si512(v, _mm512_set1_epi64((1 << k) - 1))
}

/// Direct pointing for eight lanes at `a`.
///
/// # Safety
/// `a` points at eight addresses; the CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
unsafe fn start<A: Chunks, N: Stride>(e: &Poptrie<A, N>, a: *const A) -> Group {
    // SAFETY: `load` reads the caller's eight addresses; the direct table
    // has 2^(s - f) entries (f = focus bits) and the index is the `s - f`
    // bits after the focus prefix (a shift by 64 gives 0 when s = f);
    // lanes outside the focus prefix load nothing.
    unsafe {
        let (hi, lo) = load(a);
        let direct = e.direct.as_ptr() as *const i32;
        let f = e.focus.bits;
        let d = if f == 0 {
            let idx = _mm512_srl_epi64(hi, count(64 - e.s));
            _mm512_i64gather_epi32::<4>(idx, direct)
        } else {
            // The focus prefix's first address, as the top of `hi` (f <= 24).
            let first = _mm512_set1_epi64(e.focus.first_top as i64);
            let inside = _mm512_cmpeq_epi64_mask(
                _mm512_srl_epi64(_mm512_xor_si512(hi, first), count(64 - f)),
                _mm512_setzero_si512(),
            );
            let below = _mm512_cmplt_epu64_mask(hi, first);
            let outside = _mm256_mask_blend_epi32(
                below,
                _mm256_set1_epi32(e.focus.above as i32),
                _mm256_set1_epi32(e.focus.below as i32),
            );
            // Bucket: the `s - f` bits after the focus prefix (a shift by
            // 64 gives 0 when s = f).
            let idx = _mm512_srl_epi64(_mm512_sll_epi64(hi, count(f)), count(64 - (e.s - f)));
            _mm512_mask_i64gather_epi32::<4>(outside, inside, idx, direct)
        };
        let leaf_lane = _mm256_test_epi32_mask(d, _mm256_set1_epi32(DIRECT_LEAF as i32));
        // A leaf's payload is its low 31 bits, `NO_ROUTE` as it is.
        let none = _mm256_cmpeq_epi32_mask(d, _mm256_set1_epi32(NO_ROUTE as i32));
        let payload = _mm256_and_si256(d, _mm256_set1_epi32(!DIRECT_LEAF as i32));
        let out = _mm256_mask_mov_epi32(payload, none, d);
        Group {
            hi,
            lo,
            node: _mm512_cvtepu32_epi64(d),
            end_word: _mm512_setzero_si512(),
            end_slot: _mm512_setzero_si512(),
            out,
            active: !leaf_lane,
            entered: !leaf_lane,
        }
    }
}

/// Slots `0..=v` of each lane's vector.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
pub(super) fn upto(v: __m512i) -> __m512i {
    _mm512_srlv_epi64(
        _mm512_set1_epi64(-1),
        _mm512_sub_epi64(_mm512_set1_epi64(63), v),
    )
}

/// One trie level (bit offset `off`) for the group's active lanes. A lane
/// needs its node's `vector` and `base1`: one gather for [`Node32`]
/// (`vector | base1 << 32`), two for the 64-ary node (words 0 and 2). A
/// lane that stops at a leaf slot records where; its `leafvec` is read
/// once, in [`finish`].
///
/// # Safety
/// Every active lane's `node` indexes `e.nodes`; the CPU has AVX-512F and
/// AVX512-VPOPCNTDQ.
///
/// [`Node32`]: super::Node32
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
unsafe fn step<A: Chunks, N: Stride>(e: &Poptrie<A, N>, g: &mut Group, off: u32) {
    let k = g.active;
    let base = e.nodes.as_ptr() as *const i64;
    // First word of the node: 3 * node (24-byte nodes) or 2 * node (16).
    let twice = _mm512_slli_epi64::<1>(g.node);
    let w = if N::K == 6 {
        _mm512_add_epi64(twice, g.node)
    } else {
        twice
    };
    let zero = _mm512_setzero_si512();
    // SAFETY: masked-off lanes load nothing; active lanes index nodes that
    // exist (the caller's guarantee). 64-ary nodes (`#[repr(C)]`, 24 bytes)
    // hold `vector`, `leafvec`, `base0 | base1 << 32` in words 0, 1, 2;
    // 32-ary ones (16 bytes) `vector | base1 << 32`, `leafvec | base0 << 32`.
    let (vector, base1) = unsafe {
        let first = _mm512_mask_i64gather_epi64::<8>(zero, k, w, base);
        if N::K == 6 {
            let bases = _mm512_mask_i64gather_epi64::<8>(zero, k, w, base.add(2));
            (first, _mm512_srli_epi64::<32>(bases))
        } else {
            (
                _mm512_and_si512(first, _mm512_set1_epi64(0xffff_ffff)),
                _mm512_srli_epi64::<32>(first),
            )
        }
    };
    let v = chunk(g.hi, g.lo, off, N::K);
    // Whether slot v holds an internal child; its index counts the
    // internal slots 0..=v (so minus one).
    let internal =
        _mm512_mask_test_epi64_mask(k, vector, _mm512_sllv_epi64(_mm512_set1_epi64(1), v));
    let child = _mm512_add_epi64(
        base1,
        _mm512_popcnt_epi64(_mm512_and_si512(vector, upto(v))),
    );
    g.node = _mm512_sub_epi64(child, _mm512_set1_epi64(1));
    let stop = k & !internal;
    g.end_word = _mm512_mask_mov_epi64(g.end_word, stop, w);
    g.end_slot = _mm512_mask_mov_epi64(g.end_slot, stop, v);
    g.active = internal;
}

/// The answers of a group whose lanes all stopped: each entered lane's
/// leaf is `base0 + popcnt(leafvec & slots 0..=v) - 1` of its last node.
///
/// # Safety
/// Every entered lane's `end_word` is the first word of a node of
/// `e.nodes` whose slot `end_slot` is a leaf slot; `out` has eight slots.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
unsafe fn finish<A: Chunks, N: Stride>(e: &Poptrie<A, N>, g: &Group, out: *mut u32) {
    let k = g.entered;
    let base = e.nodes.as_ptr() as *const i64;
    let zero = _mm512_setzero_si512();
    let low32 = _mm512_set1_epi64(0xffff_ffff);
    // SAFETY: masked lanes load nothing; entered lanes name nodes (layouts
    // as in `step`), and their leaf slot's index lies inside `leaves`
    // (build.rs: a node's first leaf slot starts a run, so the count is at
    // least one; update.rs keeps it and `Poptrie::validate` checks it);
    // `out` has eight slots.
    unsafe {
        let second = _mm512_mask_i64gather_epi64::<8>(zero, k, g.end_word, base.add(1));
        let (leafvec, base0) = if N::K == 6 {
            let bases = _mm512_mask_i64gather_epi64::<8>(zero, k, g.end_word, base.add(2));
            (second, _mm512_and_si512(bases, low32))
        } else {
            (
                _mm512_and_si512(second, low32),
                _mm512_srli_epi64::<32>(second),
            )
        };
        let leaf = _mm512_sub_epi64(
            _mm512_add_epi64(
                base0,
                _mm512_popcnt_epi64(_mm512_and_si512(leafvec, upto(g.end_slot))),
            ),
            _mm512_set1_epi64(1),
        );
        let r = _mm512_mask_i64gather_epi32::<4>(g.out, k, leaf, e.leaves.as_ptr() as *const i32);
        _mm256_storeu_si256(out as *mut __m256i, r);
    }
}

/// `M` lookups (`M` a multiple of [`LANES`]) per round: every group's
/// direct entries, then one level at a time for every group with a lane
/// still descending, so the groups' gathers overlap.
///
/// # Safety
/// The CPU has AVX-512F, AVX-512VL and AVX512-VPOPCNTDQ;
/// `out.len() >= addrs.len()`; `M % LANES == 0` and `M / LANES <= MAX_GROUPS`.
/// Returns how many addresses it answered (whole batches of `M`).
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
pub(super) unsafe fn batch<A: Chunks, N: Stride, const M: usize>(
    e: &Poptrie<A, N>,
    addrs: &[A],
    out: &mut [u32],
) -> usize {
    let groups = M / LANES;
    let idle = Group {
        hi: _mm512_setzero_si512(),
        lo: _mm512_setzero_si512(),
        node: _mm512_setzero_si512(),
        end_word: _mm512_setzero_si512(),
        end_slot: _mm512_setzero_si512(),
        out: _mm256_setzero_si256(),
        active: 0,
        entered: 0,
    };
    let mut gs = [idle; MAX_GROUPS];
    let done = addrs.len() - addrs.len() % M;
    let max_off = A::BITS;
    for (a, o) in addrs[..done].chunks_exact(M).zip(out.chunks_exact_mut(M)) {
        prefetch_input(a.as_ptr(), M);
        let mut live: u32 = 0;
        for (j, slot) in gs.iter_mut().enumerate().take(groups) {
            // SAFETY: `a` has M = groups * 8 addresses.
            *slot = unsafe { start(e, a.as_ptr().add(j * LANES)) };
            live |= (slot.active != 0) as u32;
        }
        let mut off = e.s;
        while live != 0 && off < max_off as u32 {
            live = 0;
            for g in gs.iter_mut().take(groups) {
                if g.active != 0 {
                    // SAFETY: active lanes index nodes (build.rs, kept by
                    // update.rs; `Poptrie::validate` checks it, and that
                    // every descent stops at a leaf slot before the last
                    // offset this loop steps).
                    unsafe { step(e, g, off) };
                    live |= (g.active != 0) as u32;
                }
            }
            off += N::K;
        }
        for (j, g) in gs.iter().take(groups).enumerate() {
            let dst = o.as_mut_ptr().wrapping_add(j * LANES);
            if g.entered == 0 {
                // Every lane answered from the direct table (most of a
                // uniform IPv6 trace): a gather costs as much with an
                // empty mask as with a full one, so skip them.
                // SAFETY: `o` has M slots, eight of them from `dst`.
                unsafe { _mm256_storeu_si256(dst as *mut __m256i, g.out) };
            } else {
                // SAFETY: entered lanes ended at leaf slots; `o` has M slots.
                unsafe { finish(e, g, dst) };
            }
        }
    }
    done
}
