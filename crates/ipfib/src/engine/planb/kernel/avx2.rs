//! AVX2 kernel: AVX2 has only signed greater-than, so keys and probe are
//! biased by the sign bit (unsigned order becomes signed order), compared in
//! two 256-bit halves, and the lane masks popcounted.

use super::Count;
use std::arch::x86_64::*;

pub(crate) struct Avx2;

impl Count for Avx2 {
    #[inline(always)]
    unsafe fn count_u32(node: *const u32, probe: u32) -> usize {
        // SAFETY: the caller guarantees 64 readable bytes at `node` and that
        // this code only runs inside an `avx2,popcnt` target-feature fn.
        unsafe {
            let bias = _mm256_set1_epi32(i32::MIN);
            let p = _mm256_xor_si256(_mm256_set1_epi32(probe as i32), bias);
            let k0 = _mm256_xor_si256(_mm256_loadu_si256(node as *const __m256i), bias);
            let k1 = _mm256_xor_si256(_mm256_loadu_si256(node.add(8) as *const __m256i), bias);
            let m0 = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(p, k0))) as u32;
            let m1 = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(p, k1))) as u32;
            (m0 | (m1 << 8)).count_ones() as usize
        }
    }

    #[inline(always)]
    unsafe fn count_u64(node: *const u64, probe: u64) -> usize {
        // SAFETY: as above, for 128 bytes (two lines).
        unsafe {
            let bias = _mm256_set1_epi64x(i64::MIN);
            let p = _mm256_xor_si256(_mm256_set1_epi64x(probe as i64), bias);
            let mut mask = 0u32;
            for i in 0..4 {
                let k =
                    _mm256_xor_si256(_mm256_loadu_si256(node.add(4 * i) as *const __m256i), bias);
                let m = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(p, k))) as u32;
                mask |= m << (4 * i);
            }
            mask.count_ones() as usize
        }
    }
}
