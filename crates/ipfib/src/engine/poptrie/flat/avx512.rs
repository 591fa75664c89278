//! The flat Poptrie's AVX-512 batch: eight lanes per vector, one gather
//! per level and nothing else.
//!
//! A lane holds its address shifted so that the bits its next level reads
//! are on top (`hi:lo`; an IPv4 address is the top 32 bits of `hi` and
//! `lo` stays zero), and the entry it last read (`x`). A level, for eight
//! lanes together: the top 5 bits, the slots up to them, one `vpopcntq`,
//! an add, one masked gather, and a 5-bit shift of the address. Lanes at
//! a leaf are masked off (their entry, the answer, stays), and lanes may
//! sit at different depths (inside or outside the focus prefix), since
//! nothing in a level depends on it.

use super::super::avx512::{count, load, upto};
pub(super) use super::super::avx512::{LANES, MAX_GROUPS};
use super::layout::{FlatPoptrie, K, LEAF};
use crate::engine::poptrie::layout::Chunks;
use crate::mem::prefetch_input;
use std::arch::x86_64::*;

/// The state of eight lanes.
#[derive(Clone, Copy)]
struct Group {
    hi: __m512i,
    lo: __m512i,
    /// The entry each lane read last.
    x: __m512i,
    /// Lanes whose `x` is a node entry.
    active: __mmask8,
}

/// First entries for the eight addresses at `a`.
///
/// # Safety
/// `a` points at eight addresses; the CPU has AVX-512F, AVX-512VL and
/// AVX512-VPOPCNTDQ.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
unsafe fn start<A: Chunks>(e: &FlatPoptrie<A>, a: *const A) -> Group {
    let (f, s) = (e.focus.bits, e.s);
    // SAFETY: `load` reads the caller's eight addresses. Indices: the
    // focus bucket has `s - f` bits (shifts by 64 give 0, as when s = f),
    // the outer one `f` bits after the focus table's 2^(s - f) entries,
    // and lanes use the outer one only when f > 0.
    unsafe {
        let (hi, lo) = load(a);
        let bucket = _mm512_srl_epi64(_mm512_sll_epi64(hi, count(f)), count(64 - (s - f)));
        let (idx, shift) = if f == 0 {
            (bucket, _mm512_set1_epi64(s as i64))
        } else {
            let first = _mm512_set1_epi64(e.focus.first_top as i64);
            let inside = _mm512_cmpeq_epi64_mask(
                _mm512_srl_epi64(_mm512_xor_si512(hi, first), count(64 - f)),
                _mm512_setzero_si512(),
            );
            let outer = _mm512_add_epi64(
                _mm512_srl_epi64(hi, count(64 - f)),
                _mm512_set1_epi64(e.focus_len() as i64),
            );
            (
                _mm512_mask_blend_epi64(inside, outer, bucket),
                _mm512_mask_blend_epi64(
                    inside,
                    _mm512_set1_epi64(f as i64),
                    _mm512_set1_epi64(s as i64),
                ),
            )
        };
        let x = _mm512_i64gather_epi64::<8>(idx, e.entries.as_ptr() as *const i64);
        // hi:lo << shift (0 <= shift <= 24; `lo >> 64` gives 0 when 0).
        let back = _mm512_sub_epi64(_mm512_set1_epi64(64), shift);
        let hi = _mm512_or_si512(_mm512_sllv_epi64(hi, shift), _mm512_srlv_epi64(lo, back));
        let lo = _mm512_sllv_epi64(lo, shift);
        Group {
            hi,
            lo,
            x,
            active: _mm512_testn_epi64_mask(x, _mm512_set1_epi64(LEAF as i64)),
        }
    }
}

/// One level for the group's active lanes.
///
/// # Safety
/// Every active lane's `x` is a node entry of `e`; the CPU has AVX-512F,
/// AVX-512VL and AVX512-VPOPCNTDQ.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
unsafe fn step<A: Chunks>(e: &FlatPoptrie<A>, g: &mut Group) {
    let v = _mm512_srli_epi64::<{ 64 - K }>(g.hi);
    let idx = _mm512_add_epi64(
        _mm512_srli_epi64::<32>(g.x),
        _mm512_popcnt_epi64(_mm512_and_si512(g.x, upto(v))),
    );
    // SAFETY: masked-off lanes load nothing; an active lane's index lies
    // in its node's block (build.rs: slot 0 always starts a run, so the
    // count is at least one and `base - 1 + count` is inside;
    // `FlatPoptrie::validate` checks it).
    g.x = unsafe {
        _mm512_mask_i64gather_epi64::<8>(g.x, g.active, idx, e.entries.as_ptr() as *const i64)
    };
    if std::mem::size_of::<A>() == 16 {
        g.hi = _mm512_or_si512(
            _mm512_slli_epi64::<K>(g.hi),
            _mm512_srli_epi64::<{ 64 - K }>(g.lo),
        );
        g.lo = _mm512_slli_epi64::<K>(g.lo);
    } else {
        g.hi = _mm512_slli_epi64::<K>(g.hi);
    }
    g.active = _mm512_mask_testn_epi64_mask(g.active, g.x, _mm512_set1_epi64(LEAF as i64));
}

/// `M` lookups (`M` a multiple of [`LANES`]) per round: every group's
/// first entries, then one level at a time for every group with a lane
/// still descending, so the groups' gathers overlap.
///
/// # Safety
/// The CPU has AVX-512F, AVX-512VL and AVX512-VPOPCNTDQ;
/// `out.len() >= addrs.len()`; `M % LANES == 0` and `M / LANES <= MAX_GROUPS`.
/// Returns how many addresses it answered (whole batches of `M`).
#[target_feature(enable = "avx512f,avx512vl,avx512vpopcntdq")]
pub(super) unsafe fn batch<A: Chunks, const M: usize>(
    e: &FlatPoptrie<A>,
    addrs: &[A],
    out: &mut [u32],
) -> usize {
    let groups = M / LANES;
    let idle = Group {
        hi: _mm512_setzero_si512(),
        lo: _mm512_setzero_si512(),
        x: _mm512_setzero_si512(),
        active: 0,
    };
    let mut gs = [idle; MAX_GROUPS];
    let done = addrs.len() - addrs.len() % M;
    for (a, o) in addrs[..done].chunks_exact(M).zip(out.chunks_exact_mut(M)) {
        let mut live = false;
        prefetch_input(a.as_ptr(), M);
        for (j, g) in gs.iter_mut().enumerate().take(groups) {
            // SAFETY: `a` has M = groups * 8 addresses.
            *g = unsafe { start(e, a.as_ptr().add(j * LANES)) };
            live |= g.active != 0;
        }
        // Every group steps while any lane of the batch descends: a group
        // with no active lane gathers nothing and changes nothing, and
        // deciding per group would be a branch on the data at each level.
        while live {
            live = false;
            for g in gs.iter_mut().take(groups) {
                // SAFETY: active lanes hold node entries (build.rs).
                unsafe { step(e, g) };
                live |= g.active != 0;
            }
        }
        for (j, g) in gs.iter().take(groups).enumerate() {
            // A leaf entry's payload is its low 32 bits.
            // SAFETY: `o` has M slots, eight of them from `j * LANES`.
            unsafe {
                _mm256_storeu_si256(
                    o.as_mut_ptr().add(j * LANES) as *mut __m256i,
                    _mm512_cvtepi64_epi32(g.x),
                )
            };
        }
    }
    done
}
