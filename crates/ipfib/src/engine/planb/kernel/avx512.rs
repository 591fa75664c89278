//! AVX-512 kernel: one unsigned compare of a whole line into a mask
//! register, then popcount (PlanB §4).

use super::Count;
use std::arch::x86_64::*;

pub(crate) struct Avx512;

impl Count for Avx512 {
    #[inline(always)]
    unsafe fn count_u32(node: *const u32, probe: u32) -> usize {
        // SAFETY: the caller guarantees 64 readable bytes at `node` and that
        // this code only runs inside an `avx512f,popcnt` target-feature fn.
        unsafe {
            let keys = _mm512_loadu_si512(node as *const _);
            let lt = _mm512_cmplt_epu32_mask(keys, _mm512_set1_epi32(probe as i32));
            lt.count_ones() as usize
        }
    }

    #[inline(always)]
    unsafe fn count_u64(node: *const u64, probe: u64) -> usize {
        // SAFETY: as above, for 128 bytes (two lines).
        unsafe {
            let p = _mm512_set1_epi64(probe as i64);
            let k0 = _mm512_loadu_si512(node as *const _);
            let k1 = _mm512_loadu_si512(node.add(8) as *const _);
            let lt0 = _mm512_cmplt_epu64_mask(k0, p) as u32;
            let lt1 = _mm512_cmplt_epu64_mask(k1, p) as u32;
            (lt0 | (lt1 << 8)).count_ones() as usize
        }
    }
}
