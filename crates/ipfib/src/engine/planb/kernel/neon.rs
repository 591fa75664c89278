//! NEON kernel (AArch64): unsigned compares produce all-ones lanes; their
//! negated sum is the count.

use super::Count;
use std::arch::aarch64::*;

pub(crate) struct Neon;

impl Count for Neon {
    #[inline(always)]
    unsafe fn count_u32(node: *const u32, probe: u32) -> usize {
        // SAFETY: the caller guarantees 16 readable keys at `node`; NEON is
        // part of the AArch64 baseline.
        unsafe {
            let p = vdupq_n_u32(probe);
            let mut acc = vdupq_n_u32(0);
            for i in 0..4 {
                let k = vld1q_u32(node.add(i * 4));
                acc = vsubq_u32(acc, vcltq_u32(k, p));
            }
            vaddvq_u32(acc) as usize
        }
    }

    #[inline(always)]
    unsafe fn count_u64(node: *const u64, probe: u64) -> usize {
        // SAFETY: as above.
        unsafe {
            let p = vdupq_n_u64(probe);
            let mut acc = vdupq_n_u64(0);
            for i in 0..8 {
                let k = vld1q_u64(node.add(i * 2));
                acc = vsubq_u64(acc, vcltq_u64(k, p));
            }
            vaddvq_u64(acc) as usize
        }
    }
}
