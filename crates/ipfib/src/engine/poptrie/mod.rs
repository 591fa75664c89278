//! Poptrie (Asai and Ohara, SIGCOMM 2015), written from the paper: a
//! 64-ary multiway trie (k = 6) whose nodes find their children and leaves
//! by counting bits (popcount) instead of storing pointers.
//!
//! - **Nodes** (§3.2): `vector` marks the slots that hold an internal
//!   child, `leafvec` the slots that start a run of leaves, `base1` is the
//!   index of the first child and `base0` of the first leaf; children and
//!   leaves of one node are contiguous, so slot `v`'s child is
//!   `nodes[base1 + popcnt(vector & mask(v)) - 1]`.
//! - **Leaf compression** (§3.3): with `leafvec`, a leaf is stored only
//!   where its value differs from the previous *leaf* slot's; slots under
//!   internal children are holes that neither store a leaf nor break a run.
//!   Without it ("basic"), every leaf slot stores its leaf (`leafvec` is
//!   then `!vector`, so the search is the same code).
//! - **Direct pointing** (§3.4): the top `s` bits index a table of `2^s`
//!   entries, each a leaf (bit 31 set) or the index of a root node;
//!   `s = 0` means a single root.
//! - **Route aggregation** (§3.5): the trie is built from the interval
//!   compiler's output, which already merges neighbours with the same
//!   payload; with value payloads equal neighbouring routes share leaves.
//!   Compiling route ordinals instead (what `Compiled` does) is "no
//!   aggregation": no two prefixes ever merge.
//!
//! IPv6 covers every length /0-/128: a node at bit offset `o` reads the 6
//! bits `o..o + 6` of the address, padded with zeros past the last bit, so
//! the deepest level is partial (e.g. `s = 18`: offsets 18, 24, ..., 126,
//! whose slots read bits 126-127 and two zeros). Such a slot covers a
//! single address and is always a leaf.
//!
//! Files: `layout.rs` (the node layouts, address families and the
//! [`Poptrie`] struct), `options.rs` (options, errors, kernels and the
//! checks every build runs first), `build.rs` (from intervals to nodes and
//! leaves), `search.rs` (single and batch lookups; the one popcount
//! dispatch point), `update.rs`
//! (§3.5: one slot's subtree rebuilt in place, for `crate::fib`),
//! `validate.rs` (the structural check of everything the lookups' unchecked
//! reads rely on, run by tests after builds and in-place updates).

#[cfg(target_arch = "x86_64")]
mod avx512;
mod build;
mod flat;
mod layout;
mod options;
mod search;
mod update;
mod validate;
mod versioned;

pub use flat::FlatPoptrie;
pub(crate) use flat::Focus as FlatFocus;
pub(crate) use layout::Focus;
pub use layout::{Chunks, Node, Node32, Poptrie, Stride};
pub use options::{PoptrieError, PoptrieOptions, KERNELS};

#[doc(hidden)]
pub use update::{Arena, ArenaFull, Updatable};
pub(crate) use versioned::{Version, Writer};

pub use crate::engine::kernel::Kernel;
use crate::intervals::Intervals;
use crate::mem::LookupBuf;
use options::checked;

impl<A: Chunks, N: Stride> Poptrie<A, N> {
    /// Build from compiled intervals: one pass over the `2^s` buckets and,
    /// per internal node, its `2^K` slots.
    ///
    /// The direct table covers only the focus prefix of the table (the
    /// longest prefix, up to `s` bits, holding every interval boundary;
    /// 2000::/3 for real IPv6 tables), so it has `2^(s - len)` entries;
    /// addresses outside it are answered without a memory access.
    ///
    /// ```
    /// use ipfib::engine::{poptrie::Poptrie, NO_ROUTE};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.1.0.0/16"), 1), (p("10.2.0.0/16"), 2)]);
    /// let e = Poptrie::<u32>::build(&iv, &Default::default())?;
    /// // Every boundary lies in 10.0.0.0/14: the direct table covers only it.
    /// assert_eq!((e.focus_bits(), e.direct_entries()), (14, 1 << (18 - 14)));
    /// assert_eq!([e.lookup(0x0a01_0001), e.lookup(0x0a02_0001)], [1, 2]);
    /// assert_eq!([e.lookup(0x0a03_0000), e.lookup(0xc000_0201)], [NO_ROUTE; 2]);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn build(iv: &Intervals<A>, opts: &PoptrieOptions) -> Result<Self, PoptrieError> {
        Self::build_focused(iv, opts, true)
    }

    /// [`Poptrie::build`], over the whole address space when `focus` is
    /// false (what in-place slot updates need: a slot of every prefix).
    pub(crate) fn build_focused(
        iv: &Intervals<A>,
        opts: &PoptrieOptions,
        focus: bool,
    ) -> Result<Self, PoptrieError> {
        let (kernel, s) = checked(iv, opts)?;
        let built = build::build::<A, N>(iv, s as u32, opts.leafvec, focus)?;
        Ok(Poptrie {
            direct: LookupBuf::from_slice(&built.direct),
            nodes: LookupBuf::from_slice(&built.nodes),
            leaves: LookupBuf::from_slice(&built.leaves),
            s: s as u32,
            focus: built.focus,
            kernel,
            leafvec: opts.leafvec,
            _family: std::marker::PhantomData,
        })
    }

    /// Payload for `addr`, or [`NO_ROUTE`](crate::intervals::NO_ROUTE).
    ///
    /// ```
    /// use ipfib::engine::{poptrie::Poptrie, NO_ROUTE};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
    /// let e = Poptrie::<u32>::build(&iv, &Default::default())?;
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
    /// use ipfib::engine::poptrie::{Node32, Poptrie};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
    /// let e = Poptrie::<u32, Node32>::build(&iv, &Default::default())?;
    /// let addrs: Vec<u32> = (0..40).map(|i| 0x0a00_0000 + i * 0x3000).collect();
    /// let mut out = vec![0; addrs.len()];
    /// e.lookup_batch::<16>(&addrs, &mut out);
    /// assert!(addrs.iter().zip(&out).all(|(&a, &o)| o == e.lookup(a)));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    #[inline]
    pub fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        super::contract::batch_args::<M, A>(addrs, out);
        search::lookup_batch::<A, N, Self, M>(self, addrs, out)
    }

    /// Direct-pointing bits `s`.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, PoptrieOptions};
    /// let opts = PoptrieOptions { direct_bits: Some(0), ..Default::default() }; // one root
    /// assert_eq!(Poptrie::<u32>::build(&ipfib::intervals::compile([]), &opts)?.direct_bits(), 0);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn direct_bits(&self) -> u8 {
        self.s as u8
    }

    /// The popcount kernel in use.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, KERNELS};
    /// let e = Poptrie::<u32>::build(&ipfib::intervals::compile([]), &Default::default())?;
    /// assert_eq!(e.kernel(), KERNELS.detect()); // the best this CPU runs
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Whether leaves are compressed with `leafvec`.
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, PoptrieOptions};
    /// let basic = PoptrieOptions { leafvec: false, ..Default::default() };
    /// assert!(!Poptrie::<u32>::build(&ipfib::intervals::compile([]), &basic)?.has_leafvec());
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn has_leafvec(&self) -> bool {
        self.leafvec
    }

    /// Internal nodes (not counting the direct-pointing table).
    ///
    /// ```
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let aligned = ipfib::intervals::compile([(p("10.0.0.0/8"), 1)]);
    /// let e = ipfib::engine::poptrie::Poptrie::<u32>::build(&aligned, &Default::default())?;
    /// assert_eq!(e.internal_nodes(), 0); // /8 fits the 18-bit direct table
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn internal_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Leaves stored in the leaf array (direct-pointing leaves not counted).
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, PoptrieOptions};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.1.2.0/24"), 2)]);
    /// // One node of 64 slots: runs of no route, the /24, no route again.
    /// assert_eq!(Poptrie::<u32>::build(&iv, &Default::default())?.leaves(), 3);
    /// let basic = PoptrieOptions { leafvec: false, ..Default::default() };
    /// assert_eq!(Poptrie::<u32>::build(&iv, &basic)?.leaves(), 64);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn leaves(&self) -> usize {
        self.leaves.len()
    }

    /// Length of the prefix the direct table covers (0: all addresses).
    ///
    /// ```
    /// use ipfib::engine::poptrie::Poptrie;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.1.2.0/24"), 2)]);
    /// assert_eq!(Poptrie::<u32>::build(&iv, &Default::default())?.focus_bits(), 18);
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("192.0.2.0/24"), 2)]);
    /// assert_eq!(Poptrie::<u32>::build(&iv, &Default::default())?.focus_bits(), 0);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn focus_bits(&self) -> u8 {
        self.focus.bits as u8
    }

    /// Entries of the direct-pointing table (`2^(s - focus bits)`).
    ///
    /// ```
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("192.0.2.0/24"), 2)]);
    /// let e = ipfib::engine::poptrie::Poptrie::<u32>::build(&iv, &Default::default())?;
    /// assert_eq!(e.direct_entries(), 1 << (e.direct_bits() - e.focus_bits()));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn direct_entries(&self) -> usize {
        self.direct.len()
    }

    /// Heap bytes: direct table (4 B/entry), nodes (24 or 16 B), leaves (4 B).
    ///
    /// ```
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
    /// let e = ipfib::engine::poptrie::Poptrie::<u32>::build(&iv, &Default::default())?;
    /// let bytes = 4 * e.direct_entries() + 24 * e.internal_nodes() + 4 * e.leaves();
    /// assert_eq!(e.footprint_bytes(), bytes);
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn footprint_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.direct)
            + std::mem::size_of_val(&*self.nodes)
            + std::mem::size_of_val(&*self.leaves)
    }
}

impl<A: Chunks, N: Stride> super::contract::Engine<A> for Poptrie<A, N> {
    type Options = PoptrieOptions;
    type Error = PoptrieError;
    super::contract::inherent_engine_methods!();
    fn name(&self) -> String {
        format!(
            "{}[s={},{}{}]",
            N::NAME,
            self.s,
            self.kernel,
            if self.leafvec { "" } else { ",basic" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{Kernel, KERNELS};
    use crate::cpu::target_features_in;

    /// The sorted union of every `#[target_feature]` list in `files`.
    fn union(files: &[(&str, &str)]) -> Vec<String> {
        let mut all = Vec::new();
        for (name, text) in files {
            let lists = target_features_in(text);
            assert!(!lists.is_empty(), "{name}: no #[target_feature] found");
            all.extend(lists.into_iter().flatten());
        }
        all.sort_unstable();
        all.dedup();
        all
    }

    fn sorted(k: Kernel) -> Vec<String> {
        let features = KERNELS.target_features(k).unwrap();
        let mut v: Vec<String> = features.iter().map(|f| f.to_string()).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn detection_checks_every_target_feature() {
        let popcnt = [
            ("search.rs", include_str!("search.rs")),
            ("flat/search.rs", include_str!("flat/search.rs")),
        ];
        let avx512 = [
            ("avx512.rs", include_str!("avx512.rs")),
            ("flat/avx512.rs", include_str!("flat/avx512.rs")),
        ];
        // The Popcnt kernel runs the search.rs wrappers; Avx512 runs those
        // too (single lookups, batch remainders) and the avx512.rs code.
        assert_eq!(sorted(Kernel::Popcnt), union(&popcnt), "popcnt");
        let both: Vec<(&str, &str)> = popcnt.iter().chain(&avx512).copied().collect();
        assert_eq!(sorted(Kernel::Avx512), union(&both), "avx512");
        crate::engine::kernel::tests::well_formed(&KERNELS);
    }
}
