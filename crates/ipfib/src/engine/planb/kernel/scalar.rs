//! Portable kernel: a branch-free sum of comparisons.

use super::Count;

pub(crate) struct Scalar;

impl Count for Scalar {
    #[inline(always)]
    unsafe fn count_u32(node: *const u32, probe: u32) -> usize {
        // SAFETY: the caller guarantees 16 readable keys at `node`.
        let keys = unsafe { std::ptr::read_unaligned(node as *const [u32; 16]) };
        keys.iter().map(|&k| (k < probe) as usize).sum()
    }

    #[inline(always)]
    unsafe fn count_u64(node: *const u64, probe: u64) -> usize {
        // SAFETY: the caller guarantees 16 readable keys at `node`.
        let keys = unsafe { std::ptr::read_unaligned(node as *const [u64; 16]) };
        keys.iter().map(|&k| (k < probe) as usize).sum()
    }
}
