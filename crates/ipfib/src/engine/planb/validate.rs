//! Structural check of a PlanB engine: every claim the lookups' unchecked
//! reads make (`search.rs`, `tree.rs`), verified on the arrays as they are.
//!
//! What the lookups rely on, and what is checked here:
//! - the kernel runs on this CPU;
//! - `1 <= s <= 24`, the direct table has `2^s` entries and the shifts
//!   match `s`;
//! - `payloads` has one entry per rank (`keys + 1`) and `leaves` the keys
//!   plus `LANES` padding keys; real keys are strictly increasing and below
//!   the padding key, so a window compare never counts padding and every
//!   rank is at most `keys`;
//! - a window entry's first rank is at most `keys`; a sub-table entry
//!   names `2^t` entries (`1 <= t <= 12`) inside `sub`, none of them a
//!   sub-table; a tree entry names a descriptor;
//! - every descriptor has the equalised `max_levels <= 6` levels, and every
//!   node a descent can reach (a node's child is `node * (LANES + 1) + c`
//!   for `c` up to its non-padding keys) lies inside `inner`, and ends at a
//!   window whose first rank is at most `keys`; no node with separators is
//!   reached twice (which keeps this check linear in a hostile file);
//! - payloads are `NO_ROUTE`, below 2^31, or (IPv6) name a second-stage
//!   slot, whose starts begin at 0 and increase;
//! - with [`PlanB::validate_below`], every answer (a payload, a direct or
//!   sub-table entry's payload, a second-stage payload) is `NO_ROUTE` or
//!   below the bound its callers index with (a compiled table file's
//!   route or value count).

use super::stage2::STAGE2;
use super::tree::{lines_per_node, Key, MAX_LEVELS};
use super::{
    Family, PlanB, PlanBOptions, DP_INDEX, DP_KIND, DP_PAYLOAD, DP_SUB, DP_TREE, SUB_MAX_BITS,
    SUB_OFFSET,
};
use crate::intervals::NO_ROUTE;

impl<A: Family> PlanB<A> {
    /// Check the structure every lookup relies on (see the module doc of
    /// `planb/validate.rs`): table sizes, every index a lookup can follow
    /// in bounds, padding never counted, payloads in range. Linear in the
    /// engine's size. An engine from [`PlanB::build`] always passes.
    ///
    /// ```
    /// use ipfib::engine::planb::PlanB;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u128>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("2001:db8::/32"), 1), (p("2001:db8::1:0/112"), 2)]);
    /// let e = PlanB::build(&iv, &Default::default())?;
    /// assert_eq!(e.validate(), Ok(()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn validate(&self) -> Result<(), String> {
        self.validate_below(NO_ROUTE)
    }

    /// [`PlanB::validate`], and every answer a lookup can give is
    /// [`NO_ROUTE`] or below `bound` (what a compiled table file's opener
    /// asks: an answer indexes the file's routes or values).
    ///
    /// ```
    /// use ipfib::engine::planb::PlanB;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 0), (p("10.1.0.0/16"), 1)]);
    /// let e = PlanB::build(&iv, &Default::default())?;
    /// assert_eq!(e.validate_below(2), Ok(()));
    /// assert!(e.validate_below(1).unwrap_err().contains("answer 1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn validate_below(&self, bound: u32) -> Result<(), String> {
        if !super::KERNELS.is_supported(self.kernel) {
            return Err(format!("kernel {} is not supported here", self.kernel));
        }
        let bits = <A::Key as Key>::BITS;
        let s = bits.saturating_sub(self.direct_shift);
        if s == 0 || s > u32::from(PlanBOptions::MAX_DIRECT_BITS) {
            return Err(format!(
                "direct shift {} gives s out of range",
                self.direct_shift
            ));
        }
        if self.direct.len() != 1 << s || self.sub_shift != 64 - bits + s {
            return Err(format!(
                "direct table of {} entries, sub shift {} for s = {s}",
                self.direct.len(),
                self.sub_shift
            ));
        }
        let keys = self.check_keys()?;
        for (i, &d) in self.direct.iter().enumerate() {
            self.check_entry(d, keys, false, bound)
                .map_err(|e| format!("direct entry {i}: {e}"))?;
        }
        // Entry 0 is read (and discarded) by batch lanes without a
        // sub-table; every other entry belongs to a sub-table.
        for (i, &d) in self.sub.iter().enumerate().skip(1) {
            self.check_entry(d, keys, true, bound)
                .map_err(|e| format!("sub-table entry {i}: {e}"))?;
        }
        if self.max_levels > MAX_LEVELS {
            return Err(format!("{} tree levels", self.max_levels));
        }
        // Inner nodes with separators, claimed by the first descent that
        // reaches them: see `check_tree`.
        let mut claimed = vec![false; self.inner.len() / lines_per_node::<A::Key>()];
        for (i, desc) in self.descs.iter().enumerate() {
            self.check_tree(desc, keys, &mut claimed)
                .map_err(|e| format!("local tree {i}: {e}"))?;
        }
        let slots = self.stage2.validate(bound)?;
        for (r, &p) in self.payloads.iter().enumerate() {
            if p != NO_ROUTE && p >= STAGE2 && (p - STAGE2) as usize >= slots {
                return Err(format!(
                    "payload of rank {r}: {p:#x} names no second-stage slot"
                ));
            }
            if p < STAGE2 && p >= bound {
                return Err(format!(
                    "payload of rank {r}: answer {p}, not below {bound}"
                ));
            }
        }
        Ok(())
    }

    /// The number of real keys, once the key and payload arrays agree.
    fn check_keys(&self) -> Result<usize, String> {
        let lanes = <A::Key as Key>::LANES;
        let keys = self.payloads.len().checked_sub(1).ok_or("no payloads")?;
        if self.leaves.len() != keys + lanes {
            return Err(format!(
                "{} leaf keys for {} payloads (want payloads - 1 + {lanes})",
                self.leaves.len(),
                self.payloads.len()
            ));
        }
        let pad = <A::Key as Key>::PAD;
        if let Some(i) = self.leaves[keys..].iter().position(|&k| k != pad) {
            return Err(format!("padding key {} is not the padding value", keys + i));
        }
        if let Some(i) = self.leaves[..keys].windows(2).position(|w| w[0] >= w[1]) {
            return Err(format!("keys {i} and {} are not increasing", i + 1));
        }
        if keys > 0 && self.leaves[keys - 1] == pad {
            return Err("a real key equals the padding key".into());
        }
        Ok(keys)
    }

    /// One direct-pointing or sub-table entry.
    fn check_entry(&self, d: u32, keys: usize, in_sub: bool, bound: u32) -> Result<(), String> {
        match d & DP_KIND {
            _ if d < DP_SUB => {
                if d as usize > keys {
                    return Err(format!("window at rank {d} of {keys} keys"));
                }
            }
            DP_SUB => {
                if in_sub {
                    return Err("a sub-table names another".into());
                }
                let t = (d >> 26) & 0xf;
                let off = (d & SUB_OFFSET) as usize;
                if t == 0 || t > SUB_MAX_BITS || off == 0 || off + (1 << t) > self.sub.len() {
                    return Err(format!(
                        "sub-table of 2^{t} entries at {off} in {}",
                        self.sub.len()
                    ));
                }
            }
            DP_TREE => {
                if (d & DP_INDEX) as usize >= self.descs.len() {
                    return Err(format!("tree {} of {}", d & DP_INDEX, self.descs.len()));
                }
            }
            _ => {
                debug_assert!(d >= DP_PAYLOAD); // any payload entry decodes
                let p = d & DP_INDEX; // `DP_INDEX` stands for `NO_ROUTE`
                if p != DP_INDEX && p >= bound {
                    return Err(format!("answer {p}, not below {bound}"));
                }
            }
        }
        Ok(())
    }

    /// Every node a descent of `desc` can reach, level by level.
    ///
    /// A node with separators (one that can send a descent to more than one
    /// child) belongs to one tree and is reached once: the build gives
    /// every tree its own lines and shares only the all-padding node that
    /// tops shallow trees (`equalise_levels`), which has one child. Without
    /// this, descriptors repeating one deep tree would each cost the whole
    /// tree, so a file of `n` descriptors and `m` tree nodes would take
    /// `n * m` steps to check; with it the check is linear (each claimed
    /// node adds at most `LANES` nodes to the next level, and an unclaimed
    /// one a single node).
    fn check_tree(
        &self,
        desc: &super::tree::Desc,
        keys: usize,
        claimed: &mut [bool],
    ) -> Result<(), String> {
        let lanes = <A::Key as Key>::LANES;
        if desc.levels as usize != self.max_levels {
            return Err(format!(
                "{} levels, not the equalised {}",
                desc.levels, self.max_levels
            ));
        }
        let inner_nodes = self.inner.len() / lines_per_node::<A::Key>();
        // SAFETY: `inner` is `Line`s (64 plain bytes each) and `A::Key` is
        // u32 or u64, whose alignment a line's 64 satisfies; the slice
        // covers exactly the lines' bytes.
        let inner: &[A::Key] = unsafe {
            std::slice::from_raw_parts(self.inner.as_ptr() as *const A::Key, inner_nodes * lanes)
        };
        let pad = <A::Key as Key>::PAD;
        let mut level = vec![0usize];
        for h in 0..self.max_levels {
            let mut next = Vec::new();
            for &node in &level {
                let line = desc.line[h] as usize + node;
                if line >= inner_nodes {
                    return Err(format!("level {h} node {line} of {inner_nodes}"));
                }
                let c = inner[line * lanes..(line + 1) * lanes]
                    .iter()
                    .filter(|&&k| k != pad)
                    .count();
                if c > 0 && std::mem::replace(&mut claimed[line], true) {
                    return Err(format!("level {h} node {line} is reached twice"));
                }
                next.extend((0..=c).map(|i| node * (lanes + 1) + i));
            }
            level = next;
        }
        for &node in &level {
            let pos = desc.r0 as usize + node * lanes;
            if pos > keys {
                return Err(format!("leaf window at rank {pos} of {keys} keys"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernel::Kernel;
    use super::*;
    use crate::gen::synthetic_v6;
    use crate::intervals::compile;
    use crate::route_table::RouteTable;

    /// An IPv6 engine with windows, sub-tables, local trees and second-stage
    /// slots.
    fn engine() -> PlanB<u128> {
        let mut routes: Vec<_> = synthetic_v6(20_000, 7);
        routes.push(("2001:db8::1/128".parse().unwrap(), 1));
        let t: RouteTable<u128, u32> = routes.into_iter().collect();
        let iv = compile(t.iter().map(|(p, v)| (p, *v)));
        let opts = PlanBOptions {
            kernel: Some(Kernel::Scalar),
            direct_bits: Some(8),
            sub_min_keys: Some(300),
        };
        PlanB::build(&iv, &opts).unwrap()
    }

    /// The first direct or sub-table entry of `kind`.
    fn entry_mut(e: &mut PlanB<u128>, kind: u32) -> &mut u32 {
        let hit = |d: &u32| *d & DP_KIND == kind && *d >= DP_SUB;
        if let Some(i) = e.direct.iter().position(hit) {
            return &mut e.direct.make_mut()[i];
        }
        let i = e.sub.iter().skip(1).position(hit).unwrap() + 1;
        &mut e.sub.make_mut()[i]
    }

    /// A named way to break an engine.
    type Corruption = (&'static str, fn(&mut PlanB<u128>));

    #[test]
    fn validate_catches_corruption() {
        let e = engine();
        assert_eq!(e.validate(), Ok(()));
        assert!(e.tree_buckets() > 0 && e.sub_entries() > 1 && e.stage2_intervals() > 0);
        let corruptions: [Corruption; 10] = [
            ("window past the keys", |e| {
                e.direct.make_mut()[0] = (e.payloads.len() + 5) as u32;
            }),
            ("tree naming no descriptor", |e| {
                let n = e.descs.len() as u32;
                *entry_mut(e, DP_TREE) = DP_TREE | n;
            }),
            ("sub-table past the array", |e| {
                let n = e.sub.len() as u32;
                *entry_mut(e, DP_SUB) = DP_SUB | (12 << 26) | (n - 1);
            }),
            ("sub-table of zero bits", |e| {
                *entry_mut(e, DP_SUB) &= !(0xf << 26);
            }),
            ("descriptor window past the keys", |e| {
                e.descs.make_mut()[0].r0 = e.payloads.len() as u32;
            }),
            ("descriptor level past inner", |e| {
                let l = e.max_levels - 1;
                e.descs.make_mut()[0].line[l] = (e.inner.len() / lines_per_node::<u64>()) as u32;
            }),
            ("padding overwritten", |e| {
                let n = e.leaves.len();
                e.leaves.make_mut()[n - 1] = 0;
            }),
            ("payload naming no slot", |e| {
                e.payloads.make_mut()[0] = STAGE2 + 1_000_000;
            }),
            ("a real key equal to the padding key", |e| {
                let keys = e.payloads.len() - 1;
                e.leaves.make_mut()[keys - 1] = u64::MAX;
            }),
            ("no payloads", |e| {
                e.payloads = crate::mem::LookupBuf::from_slice(&[]);
            }),
        ];
        for (what, corrupt) in corruptions {
            let mut e = engine();
            corrupt(&mut e);
            assert!(e.validate().is_err(), "{what}");
        }
    }

    /// Descriptors that all name one deep tree: each is a valid descent,
    /// but checking them one by one would cost descriptors x tree nodes
    /// (a file of a few MB: minutes). The second one is refused at once.
    #[test]
    fn validate_refuses_descriptors_sharing_a_tree() {
        use super::super::tree::{Desc, Line};
        use crate::mem::LookupBuf;
        // Three levels of all-zero separators (17, then 289 children) over
        // 17^3 windows of 16 keys each.
        let keys = 17usize.pow(3) * 16;
        let mut leaves: Vec<u32> = (0..keys as u32).collect();
        leaves.resize(keys + 16, u32::MAX);
        let tree = Desc {
            r0: 0,
            levels: 3,
            line: [0, 1, 18, 0, 0, 0],
        };
        let mut e = PlanB::<u32> {
            leaves: LookupBuf::from_slice(&leaves),
            inner: LookupBuf::from_slice(&vec![Line([0; 64]); 1 + 17 + 289]),
            descs: LookupBuf::from_slice(&[tree]),
            direct: LookupBuf::from_slice(&[DP_PAYLOAD | 1; 2]),
            direct_shift: 31,
            sub: LookupBuf::from_slice(&[]),
            sub_shift: 33,
            payloads: LookupBuf::from_slice(&vec![0; keys + 1]),
            stage2: Default::default(),
            kernel: Kernel::Scalar,
            intervals: keys + 1,
            max_levels: 3,
        };
        assert_eq!(e.validate(), Ok(()));
        e.descs = LookupBuf::from_slice(&vec![tree; 100_000]);
        let t = std::time::Instant::now();
        let err = e.validate().unwrap_err();
        assert!(err.contains("reached twice"), "{err}");
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    }
}
