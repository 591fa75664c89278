//! The PlanB search, written once against the `Count` kernel trait and
//! compiled per kernel inside `#[target_feature]` wrappers: the one dispatch
//! point of this engine (STYLE §2).
//!
//! Single lookup: direct-pointing entry, then either one window compare over
//! the leaf array or a full descent; then the payload, through the IPv6
//! second stage when flagged.
//!
//! Batch lookup (PlanB §4.3): `M` addresses in flight. Window lanes are
//! answered first; the lanes that must descend are then walked level by
//! level, so the `M` loads of one level are independent and overlap in the
//! memory system instead of forming one long dependency chain.

use super::kernel::Count;
use super::tree::Key;
use super::{Family, PlanB, DIRECT_DESCEND};

#[cfg(target_arch = "aarch64")]
use super::kernel::neon::Neon;
use super::kernel::scalar::Scalar;
use super::kernel::Kernel;
#[cfg(target_arch = "x86_64")]
use super::kernel::{avx2::Avx2, avx512::Avx512};

/// Batch sizes the tests and benchmarks exercise.
pub const BATCH_SIZES: [usize; 4] = [8, 16, 32, 64];

/// # Safety
/// The CPU supports kernel `C`.
#[inline(always)]
unsafe fn lookup_with<C: Count, A: Family>(e: &PlanB<A>, addr: A) -> u32 {
    let key = addr.key();
    // SAFETY: the direct table has 2^s entries and `key >> (BITS - s)` < 2^s;
    // window starts are ranks <= len(); ranks index `payloads` (len() + 1).
    unsafe {
        let rank = match e.direct.get((key.to_u64() >> e.direct_shift) as usize) {
            Some(&d) if d & DIRECT_DESCEND == 0 => e.tree.rank_from::<C>(d as usize, key),
            _ => e.tree.rank::<C>(key),
        };
        e.stage2
            .resolve(*e.payloads.get_unchecked(rank), addr.low())
    }
}

/// # Safety
/// The CPU supports kernel `C`; `out.len() >= addrs.len()`.
#[inline(always)]
unsafe fn batch_with<C: Count, A: Family, const M: usize>(
    e: &PlanB<A>,
    addrs: &[A],
    out: &mut [u32],
) {
    let lanes = <A::Key as Key>::LANES;
    let levels = e.tree.levels();
    let raw = e.tree.raw();
    let (in_chunks, in_rest) = addrs.split_at(addrs.len() - addrs.len() % M);
    for (a, o) in in_chunks.chunks_exact(M).zip(out.chunks_exact_mut(M)) {
        let mut keys = [<A::Key>::default(); M];
        let mut rank = [0usize; M];
        let mut descend = [0usize; M];
        let mut nd = 0;
        for i in 0..M {
            keys[i] = a[i].key();
            match e.direct.get((keys[i].to_u64() >> e.direct_shift) as usize) {
                // SAFETY: window starts are ranks <= len().
                Some(&d) if d & DIRECT_DESCEND == 0 => {
                    rank[i] = unsafe { e.tree.rank_from::<C>(d as usize, keys[i]) }
                }
                _ => {
                    descend[nd] = i;
                    nd += 1;
                }
            }
        }
        let mut node = [0usize; M];
        let (leaf, inner) = levels.split_last().unwrap_or((&0, &[]));
        for &start in inner {
            for j in 0..nd {
                // SAFETY: node indices stay inside their level (see Tree::rank).
                let c = unsafe {
                    <A::Key as Key>::count::<C>(
                        raw.add((start + node[j]) * lanes),
                        keys[descend[j]],
                    )
                };
                node[j] = node[j] * (lanes + 1) + c;
            }
        }
        for j in 0..nd {
            // SAFETY: as above, for the leaf level.
            let c = unsafe {
                <A::Key as Key>::count::<C>(raw.add((leaf + node[j]) * lanes), keys[descend[j]])
            };
            rank[descend[j]] = node[j] * lanes + c;
        }
        for i in 0..M {
            // SAFETY: ranks are <= len() and `payloads` has len() + 1 entries.
            let p = unsafe { *e.payloads.get_unchecked(rank[i]) };
            o[i] = e.stage2.resolve(p, a[i].low());
        }
    }
    let done = in_chunks.len();
    for (k, &addr) in in_rest.iter().enumerate() {
        // SAFETY: forwarded.
        out[done + k] = unsafe { lookup_with::<C, A>(e, addr) };
    }
}

macro_rules! kernel_entry_points {
    ($arch:meta, $features:literal, $kernel:ty, $lookup:ident, $batch:ident) => {
        #[$arch]
        #[target_feature(enable = $features)]
        unsafe fn $lookup<A: Family>(e: &PlanB<A>, addr: A) -> u32 {
            // SAFETY: this function only runs where the features are present.
            unsafe { lookup_with::<$kernel, A>(e, addr) }
        }

        #[$arch]
        #[target_feature(enable = $features)]
        unsafe fn $batch<A: Family, const M: usize>(e: &PlanB<A>, addrs: &[A], out: &mut [u32]) {
            // SAFETY: as above; the caller checked the output length.
            unsafe { batch_with::<$kernel, A, M>(e, addrs, out) }
        }
    };
}

kernel_entry_points!(
    cfg(target_arch = "x86_64"),
    "avx512f,popcnt",
    Avx512,
    lookup_avx512,
    batch_avx512
);
kernel_entry_points!(
    cfg(target_arch = "x86_64"),
    "avx2,popcnt",
    Avx2,
    lookup_avx2,
    batch_avx2
);
kernel_entry_points!(
    cfg(target_arch = "aarch64"),
    "neon",
    Neon,
    lookup_neon,
    batch_neon
);

/// Single lookup through the engine's kernel.
#[inline]
pub(super) fn lookup<A: Family>(e: &PlanB<A>, addr: A) -> u32 {
    // SAFETY (all arms): `PlanB::build` only accepts kernels the CPU supports.
    match e.kernel {
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { lookup_avx512(e, addr) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { lookup_avx2(e, addr) },
        #[cfg(target_arch = "aarch64")]
        Kernel::Neon => unsafe { lookup_neon(e, addr) },
        _ => unsafe { lookup_with::<Scalar, A>(e, addr) },
    }
}

/// Batch lookup through the engine's kernel.
#[inline]
pub(super) fn lookup_batch<A: Family, const M: usize>(e: &PlanB<A>, addrs: &[A], out: &mut [u32]) {
    // SAFETY (all arms): supported kernel (see above); `PlanB::lookup_batch`
    // checked `out.len() >= addrs.len()`.
    match e.kernel {
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { batch_avx512::<A, M>(e, addrs, out) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { batch_avx2::<A, M>(e, addrs, out) },
        #[cfg(target_arch = "aarch64")]
        Kernel::Neon => unsafe { batch_neon::<A, M>(e, addrs, out) },
        _ => unsafe { batch_with::<Scalar, A, M>(e, addrs, out) },
    }
}
