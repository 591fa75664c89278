//! The flat Poptrie: 32-ary Poptrie nodes (`K = 5`) whose headers live
//! inline, in the parent's entry array, next to the leaves. A lookup reads
//! one 64-bit word per level and nothing else: no separate leaf vector at
//! the node where it stops and no leaf array at the end.
//!
//! - **Entries** (8 bytes each). A *leaf* entry is `LEAF | payload`. A
//!   *node* entry is `runs | (base - 1) << 32`: bit `v` of `runs` is set
//!   where slot `v` starts a run (an internal slot, or a leaf slot whose
//!   payload differs from the previous slot's or whose previous slot is
//!   internal), and the node's entries (one per run) start at `base`, so
//!   slot `v` reads `entries[base - 1 + popcnt(runs & slots 0..=v)]`, a
//!   leaf or the header of its child node. This is Poptrie's
//!   `vector`/`leafvec` pair (§3.2, §3.3) folded into one vector over one
//!   array; runs break at internal slots, which costs a few more entries
//!   than `leafvec`, whose runs skip over them.
//! - **Direct pointing over a dominant prefix**. The direct table covers
//!   the longest prefix `F` (at most `s` bits) holding at least 99.9% of
//!   the interval boundaries, with `2^(s - |F|)` entries; a second table of
//!   `2^|F|` entries covers the whole space at `|F|` bits for the addresses
//!   outside `F` (its buckets inside `F` are never read). Real IPv6 tables
//!   sit in 2000::/4 except for a few stray prefixes (the 2015 RouteViews
//!   table has f8f0:1100::/24 and fdfe:13b9:8bf4::/48), which the outer
//!   table serves at full depth, so strays cost their own lookups a few
//!   levels and nothing else.
//! - **Depth**: a lane that starts in the outer table reads the address
//!   from bit `|F|`, one in the focus table from bit `s`; every level
//!   then reads the next 5 bits. Each lane keeps its address shifted so
//!   that the next 5 bits are its top bits (zeros shift in past the last
//!   bit, which is the padding the partial last level reads, as in
//!   [`Poptrie`](super::Poptrie)).
//!
//! Why: the AVX-512 batch of [`Poptrie`](super::Poptrie) with 32-ary nodes
//! reads one gather per level and two more at the end (the stopping node's
//! `leafvec | base0`, then the leaf); on this machine a gather costs about
//! 11 cycles whatever it loads (AMD EPYC Zen 4/5, measured with a gather
//! loop), so a /48 in the LINX table cost 9 gathers at s = 18. Here it costs 7 (direct entry and six levels), and the
//! answer is in the last word read.
//!
//! Files: `layout.rs` (the entry encoding and the [`FlatPoptrie`] struct),
//! `build.rs` (intervals to entries), `search.rs` (single and batch
//! lookups; the one kernel dispatch point), `avx512.rs` (the batch, eight
//! lanes per vector).

#[cfg(target_arch = "x86_64")]
mod avx512;
mod build;
mod layout;
mod search;
mod validate;

pub use layout::FlatPoptrie;
pub(crate) use layout::Focus;

use super::layout::Chunks;
use super::options::{checked, PoptrieError, PoptrieOptions};
use crate::engine::kernel::Kernel;
use crate::intervals::Intervals;
use crate::mem::LookupBuf;

impl<A: Chunks> FlatPoptrie<A> {
    /// Build from compiled intervals ([`PoptrieOptions::direct_bits`] and
    /// `kernel` apply; `leafvec` does not: runs are always compressed).
    ///
    /// ```
    /// use ipfib::engine::poptrie::{FlatPoptrie, PoptrieError, PoptrieOptions};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
    /// let opts = PoptrieOptions { direct_bits: Some(16), leafvec: false, ..Default::default() };
    /// let e = FlatPoptrie::<u32>::build(&iv, &opts)?;
    /// assert_eq!((e.direct_bits(), e.lookup(0x0a01_0203), e.lookup(0x0a01_0303)), (16, 2, 1));
    /// let big = ipfib::intervals::compile([(p("10.0.0.0/8"), 0x7fff_ffff)]);
    /// let err = FlatPoptrie::<u32>::build(&big, &opts).err();
    /// assert_eq!(err, Some(PoptrieError::PayloadTooLarge(0x7fff_ffff)));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn build(iv: &Intervals<A>, opts: &PoptrieOptions) -> Result<Self, PoptrieError> {
        Self::build_focused(iv, opts, build::FOCUS_SHARE)
    }

    /// Test support (the `testing` feature): [`FlatPoptrie::build`] with
    /// the focus prefix holding at least `share` thousandths of the
    /// interval boundaries, so that tests can send many lanes through the
    /// outer table. `share` is clamped to 501..=1000: below half, the
    /// median boundary need not lie in the prefix the rule looks for
    /// (`poptrie::build::focus_prefix`).
    #[cfg(any(test, feature = "testing"))]
    pub fn build_with_share(
        iv: &Intervals<A>,
        opts: &PoptrieOptions,
        share: u32,
    ) -> Result<Self, PoptrieError> {
        Self::build_focused(iv, opts, share)
    }

    fn build_focused(
        iv: &Intervals<A>,
        opts: &PoptrieOptions,
        share: u32,
    ) -> Result<Self, PoptrieError> {
        let (kernel, s) = checked(iv, opts)?;
        let built = build::build(iv, s as u32, share.clamp(501, 1000))?;
        Ok(FlatPoptrie {
            entries: LookupBuf::from_slice(&built.entries),
            s: s as u32,
            focus: built.focus,
            kernel,
            _family: std::marker::PhantomData,
        })
    }

    /// Payload for `addr`, or [`NO_ROUTE`](crate::engine::NO_ROUTE).
    ///
    /// ```
    /// use ipfib::engine::{poptrie::FlatPoptrie, NO_ROUTE};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
    /// let e = FlatPoptrie::<u32>::build(&iv, &Default::default())?;
    /// assert_eq!([e.lookup(0x0a00_0001), e.lookup(0x0a01_ffff)], [1, 2]);
    /// assert_eq!(e.lookup(0x0b00_0000), NO_ROUTE);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    #[inline]
    pub fn lookup(&self, addr: A) -> u32 {
        search::lookup(self, addr)
    }

    /// Payloads for `addrs` into `out`, `M` addresses in flight
    /// ([`crate::engine::Engine::lookup_batch`]'s contract: `M > 0` at
    /// compile time, a panic when `out` is shorter than `addrs`).
    ///
    /// ```
    /// use ipfib::engine::poptrie::FlatPoptrie;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
    /// let e = FlatPoptrie::<u32>::build(&iv, &Default::default())?;
    /// let addrs: Vec<u32> = (0..40).map(|i| 0x0a00_0000 + i * 0x3000).collect();
    /// let mut out = vec![0; addrs.len()];
    /// e.lookup_batch::<32>(&addrs, &mut out);
    /// assert!(addrs.iter().zip(&out).all(|(&a, &o)| o == e.lookup(a)));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    #[inline]
    pub fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        crate::engine::contract::batch_args::<M, A>(addrs, out);
        search::lookup_batch::<A, M>(self, addrs, out)
    }

    /// Direct-pointing bits `s`.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{FlatPoptrie, PoptrieOptions};
    /// let e = FlatPoptrie::<u32>::build(&ipfib::intervals::compile([]), &PoptrieOptions::default())?;
    /// assert_eq!(e.direct_bits(), PoptrieOptions::DEFAULT_DIRECT_BITS);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn direct_bits(&self) -> u8 {
        self.s as u8
    }

    /// The popcount kernel in use.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{FlatPoptrie, Kernel, PoptrieOptions};
    /// let opts = PoptrieOptions { kernel: Some(Kernel::Scalar), ..Default::default() };
    /// let e = FlatPoptrie::<u32>::build(&ipfib::intervals::compile([]), &opts)?;
    /// assert_eq!(e.kernel(), Kernel::Scalar);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Length of the prefix the focus table covers (0: all addresses).
    ///
    /// ```
    /// use ipfib::engine::poptrie::{FlatPoptrie, Poptrie};
    /// use ipfib::prefix::Prefix;
    /// // 3000 boundaries in 10.0.0.0/18 and one stray route outside it.
    /// let mut routes: Vec<_> = (0..1500).map(|i| (Prefix::new(0x0a00_0000 + 2 * i, 32).unwrap(), 1)).collect();
    /// routes.push(("192.0.2.0/24".parse()?, 2));
    /// let iv = ipfib::intervals::compile(routes);
    /// let flat = FlatPoptrie::<u32>::build(&iv, &Default::default())?;
    /// // 99.9% of the boundaries lie in 10.0.0.0/18, cut to ceil(s / 2) bits
    /// // (the smallest pair of direct tables; any shorter prefix holds them).
    /// assert_eq!(flat.focus_bits(), 9);
    /// assert_eq!(Poptrie::<u32>::build(&iv, &Default::default())?.focus_bits(), 0);
    /// assert_eq!(flat.lookup(0xc000_0201), 2); // the stray: through the outer table
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn focus_bits(&self) -> u8 {
        self.focus.bits as u8
    }

    /// Entries of both direct tables and of every node.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{FlatPoptrie, PoptrieOptions};
    /// let opts = PoptrieOptions { direct_bits: Some(8), ..Default::default() };
    /// let e = FlatPoptrie::<u32>::build(&ipfib::intervals::compile([]), &opts)?;
    /// assert!(e.entries() >= 1 << (e.direct_bits() - e.focus_bits()));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// Heap bytes: 8 per entry.
    ///
    /// ```
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
    /// let e = ipfib::engine::poptrie::FlatPoptrie::<u32>::build(&iv, &Default::default())?;
    /// assert_eq!(e.footprint_bytes(), 8 * e.entries());
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn footprint_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.entries)
    }

    /// Entries of the focus table.
    fn focus_len(&self) -> usize {
        1 << (self.s - self.focus.bits)
    }
}

impl<A: Chunks> crate::engine::contract::Engine<A> for FlatPoptrie<A> {
    type Options = PoptrieOptions;
    type Error = PoptrieError;
    crate::engine::contract::inherent_engine_methods!();
    fn name(&self) -> String {
        format!("poptrie-flat[s={},{}]", self.s, self.kernel)
    }
}

#[cfg(test)]
mod tests {
    //! The direct tables' corner cases, chosen rather than drawn: focus
    //! prefixes of length 0, between 0 and `s`, and `s`, for `s` at 0, 1,
    //! 13 and 24, both families, every kernel; every outer bucket's first
    //! and last address and every boundary +-1 are checked against
    //! `Intervals::resolve`. (Random tables go through `check_engines`.)
    use super::*;

    fn intervals<A: Chunks>(routes: &[&str]) -> Intervals<A> {
        crate::intervals::of_routes(routes)
    }

    /// Every boundary +-1, both ends of each of the first 2^12 outer
    /// buckets of width `BITS - f`, and the ends of the space.
    fn queries<A: Chunks>(iv: &Intervals<A>, f: u32) -> Vec<A> {
        let mut q = vec![A::ZERO, A::MAX];
        for &b in &iv.starts {
            q.push(b);
            q.extend(b.checked_pred());
            q.extend(b.checked_succ());
        }
        let w = A::BITS as u32 - f;
        for bucket in 0..(1u128 << f.min(12)) {
            let first = bucket.checked_shl(w).unwrap_or(0);
            q.push(A::from_u128_truncate(first));
            q.push(A::from_u128_truncate(first | (u128::MAX >> (128 - w))));
        }
        q
    }

    /// `want_focus`: the longest prefix the rule finds; the build cuts it
    /// to `ceil(s / 2)` bits (the smallest pair of tables).
    fn check<A: Chunks>(routes: &[&str], s: u8, share: u32, want_focus: u8) {
        let want_focus = want_focus.min(s.div_ceil(2));
        let iv = intervals::<A>(routes);
        for kernel in crate::engine::poptrie::options::KERNELS.supported() {
            let opts = PoptrieOptions {
                direct_bits: Some(s),
                kernel: Some(kernel),
                ..Default::default()
            };
            let e = FlatPoptrie::build_with_share(&iv, &opts, share).unwrap();
            let ctx = format!("{routes:?} s={s} share={share} {kernel}");
            assert_eq!(e.focus_bits(), want_focus, "{ctx}");
            let q = queries(&iv, e.focus_bits() as u32);
            let want: Vec<u32> = q.iter().map(|&a| iv.resolve(a)).collect();
            let single: Vec<u32> = q.iter().map(|&a| e.lookup(a)).collect();
            assert_eq!(single, want, "{ctx}");
            let mut out = vec![0; q.len()];
            e.lookup_batch::<8>(&q, &mut out);
            assert_eq!(out, want, "{ctx} batch 8");
            e.lookup_batch::<32>(&q, &mut out);
            assert_eq!(out, want, "{ctx} batch 32");
        }
    }

    #[test]
    fn ipv6_focus_lengths() {
        // No prefix holds all boundaries: |F| = 0, every s.
        let spread = [
            "1000::/4",
            "f000::/4",
            "::/128",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128",
        ];
        for s in [0, 1, 13, 24] {
            check::<u128>(&spread, s, 999, 0);
        }
        // Everything in 2001:db8::/32: |F| = s for s <= 32.
        let inside = [
            "2001:db8::/32",
            "2001:db8:1::/48",
            "2001:db8:ffff::/48",
            "2001:db8::1/128",
        ];
        for s in [0, 1, 13, 24] {
            check::<u128>(&inside, s, 999, s);
        }
        // Eight /32s in eight /24s of 2001::/16 and two /128 strays at the
        // bottom and top of the space: twenty boundaries, the median
        // 2001:500::. With a share of 501, 2001::/21 holds 14 (the /22
        // around the median 8), ::/1 18; the strays go through the outer
        // table and walk its trie from bit |F|.
        let strays = [
            "2001:100::/32",
            "2001:200::/32",
            "2001:300::/32",
            "2001:400::/32",
            "2001:500::/32",
            "2001:600::/32",
            "2001:700::/32",
            "2001:800::/32",
            "::1/128",
            "ffff::1/128",
        ];
        for (s, f) in [(1, 1), (13, 13), (24, 21)] {
            check::<u128>(&strays, s, 501, f);
        }
        // The same strays with a 99.9% rule: no focus.
        check::<u128>(&strays, 13, 999, 0);
    }

    #[test]
    fn ipv4_focus_lengths() {
        let spread = [
            "0.0.0.0/32",
            "255.255.255.255/32",
            "10.0.0.0/8",
            "192.168.0.0/16",
        ];
        for s in [0, 1, 13, 24] {
            check::<u32>(&spread, s, 999, 0);
        }
        // Boundaries from 10.1.0.0 to 10.1.128.0: all in 10.1.0.0/17 or
        // at the address after it (10.1.128.0 starts what lies above F).
        let inside = ["10.1.0.0/17", "10.1.2.0/24", "10.1.2.3/32", "10.1.127.0/25"];
        for s in [0, 1, 13, 16, 17] {
            check::<u32>(&inside, s, 999, s);
        }
        // |F| = 17 with s = 24: between 0 and s.
        check::<u32>(&inside, 24, 999, 17);
        // One more boundary past 10.1.128.0 and F is the /16 again.
        let past = [
            "10.1.0.0/17",
            "10.1.2.0/24",
            "10.1.2.3/32",
            "10.1.127.0/25",
            "10.1.128.0/24",
        ];
        check::<u32>(&past, 24, 1000, 16);
        // The same shape: eight /24s in eight /16s of 10.0.0.0/8 and two
        // /32 strays; the median boundary 10.5.0.0, 10.0.0.0/13 holds 14 of
        // 20 (the /14 around the median 8), 0.0.0.0/1 18.
        let strays = [
            "10.1.0.0/24",
            "10.2.0.0/24",
            "10.3.0.0/24",
            "10.4.0.0/24",
            "10.5.0.0/24",
            "10.6.0.0/24",
            "10.7.0.0/24",
            "10.8.0.0/24",
            "0.0.0.1/32",
            "255.255.255.254/32",
        ];
        for (s, f) in [(1, 1), (13, 13), (24, 13)] {
            check::<u32>(&strays, s, 501, f);
        }
    }
}
