//! The PlanB search, written once against the `Count` kernel trait and
//! compiled per kernel inside `#[target_feature]` wrappers: the one dispatch
//! point of this engine.
//!
//! Single lookup: direct-pointing entry (through a sub-table for heavy
//! buckets), then the entry's payload, one window compare over the leaf
//! array, or a local-tree descent; then the payload, through the IPv6
//! second stage when flagged.
//!
//! Batch lookup (PlanB §4.3): `M` addresses in flight. All entries are read
//! and window/payload lines prefetched first, windows answered next, the
//! lanes that must descend then walk their trees level by level (the `M`
//! loads of one level are independent and overlap in the memory system),
//! and payloads come last. No step branches on a lane's data: mispredicts
//! stall every lane behind them (docs/architecture.md lists what that cost).

use super::kernel::Count;
use super::tree::{rank, Desc, Key};
use super::{Family, PlanB, DP_INDEX, DP_KIND, DP_PAYLOAD, DP_SUB, DP_TREE, SUB_OFFSET};
use crate::mem::{prefetch, prefetch_input};

#[cfg(target_arch = "aarch64")]
use super::kernel::neon::Neon;
use super::kernel::scalar::Scalar;
use super::kernel::Kernel;
#[cfg(target_arch = "x86_64")]
use super::kernel::{avx2::Avx2, avx512::Avx512};

/// Placeholder for unused lanes of the batch's descriptor array.
const NO_DESC: Desc = Desc {
    r0: 0,
    levels: 0,
    line: [0; super::tree::MAX_LEVELS],
};

/// The direct-pointing entry for `key`, through the heavy bucket's
/// sub-table when it has one.
#[inline(always)]
fn entry<A: Family>(e: &PlanB<A>, key: A::Key) -> u32 {
    let k = key.to_u64();
    // SAFETY: the direct table has 2^s entries and `k >> (BITS - s)` < 2^s;
    // a sub-table entry names `2^t` entries (1 <= t <= 12) at `offset`
    // inside `sub`, and the index is `t` bits. `PlanB::validate`
    // (validate.rs) checks these and every claim below.
    unsafe {
        let d = *e.direct.get_unchecked((k >> e.direct_shift) as usize);
        if d & DP_KIND != DP_SUB {
            return d;
        }
        let t = (d >> 26) & 0xf;
        let i = ((k << e.sub_shift) >> (64 - t)) as usize;
        *e.sub.get_unchecked((d & SUB_OFFSET) as usize + i)
    }
}

/// [`entry`] without a data-dependent branch, for batches: every lane
/// reads a sub-table entry (lanes without a sub-table read the unused entry
/// 0) and keeps it only if its bucket has a sub-table. Mixed traces would
/// otherwise mispredict the branch and stall the lanes behind it (measured
/// on the 606K IPv4 table, uniform trace: 2x).
#[inline(always)]
fn entry_branch_free<A: Family>(e: &PlanB<A>, key: A::Key) -> u32 {
    let k = key.to_u64();
    // SAFETY: as in `entry`; masked lanes read `sub[0]`, which exists.
    unsafe {
        let d = *e.direct.get_unchecked((k >> e.direct_shift) as usize);
        // Engines without sub-tables (most IPv4 ones) skip the masked load:
        // this branch goes the same way for every lane.
        if e.sub.len() <= 1 {
            return d;
        }
        let is_sub = d & DP_KIND == DP_SUB;
        // All ones or zero. Hidden from the optimiser, which otherwise turns
        // the masked load back into a branch around it.
        let keep = std::hint::black_box((is_sub as usize).wrapping_neg());
        let t = ((d >> 26) & 0xf).max(1);
        let i = ((k << e.sub_shift) >> (64 - t)) as usize;
        let d2 = *e.sub.get_unchecked(((d & SUB_OFFSET) as usize + i) & keep);
        // A select the compiler cannot turn back into a branch.
        d ^ ((d ^ d2) & keep as u32)
    }
}

/// The payload a `DP_PAYLOAD` entry carries (`DP_INDEX` stands for
/// `NO_ROUTE`), without a branch.
#[inline(always)]
fn entry_payload(d: u32) -> u32 {
    let p = d & DP_INDEX;
    p | ((p == DP_INDEX) as u32).wrapping_neg()
}

/// # Safety
/// The CPU supports kernel `C`.
#[inline(always)]
unsafe fn lookup_with<C: Count, A: Family>(e: &PlanB<A>, addr: A) -> u32 {
    let key = addr.key();
    let leaves = e.leaves.as_ptr();
    // SAFETY: window starts are ranks <= len(); tree indices name built
    // descriptors; ranks index `payloads` (len() + 1 entries), because
    // the `LANES` padding keys after the real ones are never counted
    // (all checked by `PlanB::validate`).
    unsafe {
        let d = entry(e, key);
        let r = if d < DP_SUB {
            d as usize + <A::Key as Key>::count::<C>(leaves.add(d as usize), key)
        } else if d >= DP_PAYLOAD {
            return entry_payload(d);
        } else {
            let desc = e.descs.get_unchecked((d & DP_INDEX) as usize);
            rank::<C, A::Key>(desc, e.inner.as_ptr() as *const A::Key, leaves, key)
        };
        e.stage2.resolve(*e.payloads.get_unchecked(r), addr.low())
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
    let leaves = e.leaves.as_ptr();
    let inner = e.inner.as_ptr() as *const A::Key;
    let payloads = e.payloads.as_ptr();
    let (in_chunks, in_rest) = addrs.split_at(addrs.len() - addrs.len() % M);
    for (a, o) in in_chunks.chunks_exact(M).zip(out.chunks_exact_mut(M)) {
        prefetch_input(a.as_ptr(), M);
        // Pass 0: direct pointing for every lane, with the window and
        // payload lines prefetched, so the lanes' misses overlap instead of
        // each lane waiting for its entry, then its keys, then its payload.
        // (The prefetches also keep this loop from being auto-vectorised
        // into AVX-512 gathers, which are slow on Zen 4.)
        // Payload lanes are answered here (their entry's payload is written
        // for every lane, then overwritten for the others); the rest are
        // listed in `search_lane` by a conditional increment, so the later
        // passes cost payload lanes nothing.
        let mut keys = [<A::Key>::default(); M];
        let mut win = [0usize; M];
        let mut ent = [0u32; M];
        let mut search_lane = [0usize; M];
        let mut ns = 0;
        for i in 0..M {
            let k = a[i].key();
            keys[i] = k;
            let d = entry_branch_free(e, k);
            // Tree lanes get window 0: a harmless compare of a hot line.
            let w = (d as usize) & ((d >= DP_SUB) as usize).wrapping_sub(1);
            prefetch(leaves.wrapping_add(w));
            prefetch(payloads.wrapping_add(w));
            win[i] = w;
            ent[i] = d;
            o[i] = entry_payload(d);
            search_lane[ns] = i;
            ns += (d < DP_PAYLOAD) as usize;
        }
        // Pass 1: windows answered, tree lanes collected, all without a
        // data-dependent branch (window and tree lanes mix at random in real
        // traces, and a mispredicted branch stalls every lane behind it).
        let mut rank_of = [0usize; M];
        let mut tree_lane = [0usize; M];
        let mut nt = 0;
        for &i in &search_lane[..ns] {
            let w = win[i];
            // SAFETY: window starts are ranks <= len().
            rank_of[i] = w + unsafe { <A::Key as Key>::count::<C>(leaves.add(w), keys[i]) };
            tree_lane[nt] = i;
            nt += (ent[i] & DP_KIND == DP_TREE) as usize;
        }
        // Pass 2: local trees, level by level across lanes.
        if nt > 0 {
            let mut desc: [&Desc; M] = [&NO_DESC; M];
            let mut node = [0usize; M];
            for j in 0..nt {
                // SAFETY: tree entries name built descriptors.
                desc[j] = unsafe {
                    e.descs
                        .get_unchecked((ent[tree_lane[j]] & DP_INDEX) as usize)
                };
            }
            // Every tree has `max_levels` levels (equalised at build), so
            // no lane takes a data-dependent branch here.
            for h in 0..e.max_levels {
                for j in 0..nt {
                    let line = desc[j].line[h] as usize + node[j];
                    // SAFETY: node indices stay inside their level.
                    let c = unsafe {
                        <A::Key as Key>::count::<C>(inner.add(line * lanes), keys[tree_lane[j]])
                    };
                    node[j] = node[j] * (lanes + 1) + c;
                }
            }
            for j in 0..nt {
                let pos = desc[j].r0 as usize + node[j] * lanes;
                prefetch(payloads.wrapping_add(pos));
                // SAFETY: pos + LANES <= len(leaves).
                rank_of[tree_lane[j]] = pos
                    + unsafe { <A::Key as Key>::count::<C>(leaves.add(pos), keys[tree_lane[j]]) };
            }
        }
        // Pass 3: payloads of the searched lanes.
        for &i in &search_lane[..ns] {
            // SAFETY: ranks are <= len() and `payloads` has len() + 1 entries.
            let p = unsafe { *payloads.add(rank_of[i]) };
            o[i] = e.stage2.resolve(p, a[i].low());
        }
    }
    let done = in_chunks.len();
    for (k, &addr) in in_rest.iter().enumerate() {
        // SAFETY: forwarded.
        out[done + k] = unsafe { lookup_with::<C, A>(e, addr) };
    }
}

/// The `#[target_feature]` wrappers of one kernel. `$list` names a
/// constant holding the same feature string, which the tests compare with
/// `KERNELS.target_features` (what `KERNELS.is_supported` checks).
macro_rules! kernel_entry_points {
    ($arch:meta, $list:ident = $features:literal, $kernel:ty, $lookup:ident, $batch:ident) => {
        #[$arch]
        #[cfg(test)]
        const $list: &str = $features;

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
    AVX512_FEATURES = "avx512f,popcnt",
    Avx512,
    lookup_avx512,
    batch_avx512
);
kernel_entry_points!(
    cfg(target_arch = "x86_64"),
    AVX2_FEATURES = "avx2,popcnt",
    Avx2,
    lookup_avx2,
    batch_avx2
);
kernel_entry_points!(
    cfg(target_arch = "aarch64"),
    NEON_FEATURES = "neon",
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

impl<A: Family> PlanB<A> {
    /// Payload for `addr`, or [`NO_ROUTE`](crate::engine::NO_ROUTE).
    ///
    /// ```
    /// use ipfib::engine::{planb::PlanB, NO_ROUTE};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
    /// let e = PlanB::build(&iv, &Default::default())?;
    /// assert_eq!([e.lookup(0x0a00_0001), e.lookup(0x0a01_ffff)], [1, 2]);
    /// assert_eq!(e.lookup(0x0b00_0000), NO_ROUTE);
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    #[inline]
    pub fn lookup(&self, addr: A) -> u32 {
        lookup(self, addr)
    }

    /// Payloads for `addrs` into `out`, traversing `M` addresses level
    /// by level ([`crate::engine::Engine::lookup_batch`]'s contract: `M >
    /// 0` at compile time, a panic when `out` is shorter than `addrs`).
    /// `M` is any of [`BATCH_SIZES`](super::BATCH_SIZES) or another size; 16 or 32 are usually
    /// best.
    ///
    /// ```
    /// use ipfib::engine::planb::{PlanB, BATCH_SIZES};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
    /// let e = PlanB::build(&iv, &Default::default())?;
    /// let addrs: Vec<u32> = (0..40).map(|i| 0x0a00_0000 + i * 0x3000).collect();
    /// let mut out = vec![0; addrs.len()];
    /// e.lookup_batch::<{ BATCH_SIZES[1] }>(&addrs, &mut out);
    /// assert!(addrs.iter().zip(&out).all(|(&a, &o)| o == e.lookup(a)));
    /// # Ok::<(), ipfib::engine::planb::BuildError>(())
    /// ```
    #[inline]
    pub fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        crate::engine::contract::batch_args::<M, A>(addrs, out);
        lookup_batch::<A, M>(self, addrs, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::planb::KERNELS;

    /// `kernel`'s detection list against its wrappers' attribute string.
    #[allow(dead_code)] // no wrappers on other architectures
    fn same_features(kernel: Kernel, attribute: &str) {
        let mut want: Vec<&str> = attribute.split(',').collect();
        want.sort_unstable();
        let mut got = KERNELS.target_features(kernel).unwrap().to_vec();
        got.sort_unstable();
        assert_eq!(got, want, "{kernel}: detection vs #[target_feature]");
    }

    #[test]
    fn detection_checks_every_target_feature() {
        #[cfg(target_arch = "x86_64")]
        {
            same_features(Kernel::Avx512, AVX512_FEATURES);
            same_features(Kernel::Avx2, AVX2_FEATURES);
        }
        #[cfg(target_arch = "aarch64")]
        same_features(Kernel::Neon, NEON_FEATURES);
        // Scalar last and featureless, every feature detectable here.
        crate::engine::kernel::tests::well_formed(&KERNELS);
    }
}
