//! Structural check of a flat Poptrie: every claim the lookups' unchecked
//! reads make (`search.rs`, `avx512.rs`), verified on the entry array as
//! it is.
//!
//! What the lookups rely on, and what is checked here:
//! - the kernel runs on this CPU;
//! - `|F| <= s <= 24`, and the array holds the focus table (`2^(s - |F|)`
//!   entries) and, when `|F| > 0`, the outer table (`2^|F|`) first;
//! - a node entry's slot 0 starts a run (so every slot's count is at least
//!   one) and its block `base .. base + popcnt(runs)` lies after the tables
//!   and inside the array;
//! - node entries only where the node still reads address bits, so every
//!   descent ends at a leaf (the AVX-512 batch steps until all lanes do);
//! - leaf payloads are `NO_ROUTE` or at most `MAX_PAYLOAD`, with nothing
//!   else set in a leaf entry; with [`FlatPoptrie::validate_below`], every
//!   reachable leaf is `NO_ROUTE` or below the bound its callers index
//!   with (a compiled table file's route or value count).
//!
//! Each node's block is reached once (a tree, as `build.rs` lays it out)
//! and lies after its node's entry, which also bounds every descent; the
//! check is one pass in array order.

use super::layout::{FlatPoptrie, K, LEAF};
use crate::engine::poptrie::layout::{Chunks, MAX_PAYLOAD};
use crate::engine::poptrie::options::{PoptrieOptions, KERNELS};
use crate::intervals::NO_ROUTE;

impl<A: Chunks> FlatPoptrie<A> {
    /// Check the structure every lookup relies on (see the module doc of
    /// `flat/validate.rs`): table sizes, every entry index a lookup can
    /// follow in bounds, descents ending at leaves, payloads in range.
    /// Linear in the number of entries. A trie from
    /// [`FlatPoptrie::build`] always passes.
    ///
    /// ```
    /// use ipfib::engine::poptrie::FlatPoptrie;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u128>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("2001:db8::/32"), 1), (p("2001:db8::1:0/112"), 2)]);
    /// assert_eq!(FlatPoptrie::<u128>::build(&iv, &Default::default())?.validate(), Ok(()));
    /// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
    /// ```
    pub fn validate(&self) -> Result<(), String> {
        self.validate_below(NO_ROUTE)
    }

    /// [`FlatPoptrie::validate`], and every answer a lookup can give is
    /// [`NO_ROUTE`] or below `bound` (what a compiled table file's opener
    /// asks: an answer indexes the file's routes or values).
    ///
    /// ```
    /// use ipfib::engine::poptrie::FlatPoptrie;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 0), (p("10.1.2.0/24"), 1)]);
    /// let e = FlatPoptrie::<u32>::build(&iv, &Default::default())?;
    /// assert_eq!(e.validate_below(2), Ok(()));
    /// assert!(e.validate_below(1).unwrap_err().contains("answer 1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn validate_below(&self, bound: u32) -> Result<(), String> {
        if !KERNELS.is_supported(self.kernel) {
            return Err(format!("kernel {} is not supported here", self.kernel));
        }
        let (f, s) = (self.focus.bits, self.s);
        if s > u32::from(PoptrieOptions::MAX_DIRECT_BITS) || f > s {
            return Err(format!("focus bits {f} and s = {s} out of range"));
        }
        let outer = if f == 0 { 0 } else { 1usize << f };
        let tables = self.focus_len() + outer;
        if self.entries.len() < tables {
            return Err(format!(
                "{} entries cannot hold the direct tables' {tables}",
                self.entries.len()
            ));
        }
        // One pass in array order. Every node's block lies after the node
        // entry itself (the build appends a block when it reaches the
        // entry), so when entry `i` comes up, every entry pointing at it
        // has been seen and its bit offset is known; an entry reached
        // twice, or a block before its node, is refused. That bounds every
        // descent (indices strictly increase), keeps each at one offset,
        // and checks exactly the entries a lookup can reach. Linear and
        // sequential: this is what opening a compiled table file costs.
        const UNREACHED: u8 = u8::MAX;
        let mut off = vec![UNREACHED; self.entries.len()];
        let focus = self.focus_len();
        off[..focus].fill(s as u8);
        off[focus..tables].fill(f as u8);
        for i in 0..self.entries.len() {
            let o = off[i];
            if o == UNREACHED {
                continue;
            }
            let x = self.entries[i];
            if x & LEAF != 0 {
                let p = x as u32;
                if x & !(LEAF | 0xffff_ffff) != 0 || (p != NO_ROUTE && p > MAX_PAYLOAD) {
                    return Err(format!("leaf entry {i}: {x:#x} is not a valid payload"));
                }
                if p != NO_ROUTE && p >= bound {
                    return Err(format!("leaf entry {i}: answer {p}, not below {bound}"));
                }
                continue;
            }
            if u32::from(o) >= A::BITS as u32 {
                return Err(format!("node entry {i} at bit {o}, past the address"));
            }
            let runs = x as u32;
            if runs & 1 == 0 {
                return Err(format!("node entry {i}: slot 0 starts no run"));
            }
            // Slot v reads entries[base - 1 + popcnt(runs & slots 0..=v)].
            let first = (x >> 32) as usize + 1;
            let end = first + runs.count_ones() as usize;
            if first <= i || first < tables || end > self.entries.len() {
                return Err(format!(
                    "node entry {i}: block {first}..{end} not after it inside {tables}..{}",
                    self.entries.len()
                ));
            }
            let block = &mut off[first..end];
            if let Some(j) = block.iter().position(|&b| b != UNREACHED) {
                return Err(format!("entry {} is reached twice", first + j));
            }
            block.fill(o + K as u8);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intervals::compile;
    use crate::prefix::Prefix;

    fn flat(s: u8) -> FlatPoptrie<u128> {
        let mut ps: Vec<Prefix<u128>> = [
            "2001:db8::/32",
            "2001:db8:1::/48",
            "2001:db8::1/128",
            "::1/128",
        ]
        .iter()
        .map(|r| r.parse().unwrap())
        .collect();
        ps.sort();
        let iv = compile(ps.into_iter().enumerate().map(|(i, p)| (p, i as u32)));
        let opts = PoptrieOptions {
            direct_bits: Some(s),
            ..Default::default()
        };
        FlatPoptrie::build_with_share(&iv, &opts, 501).unwrap()
    }

    /// The first node entry after the direct tables.
    fn node(e: &FlatPoptrie<u128>) -> usize {
        (0..e.entries.len())
            .rev()
            .find(|&i| e.entries[i] & LEAF == 0)
            .unwrap()
    }

    /// A named way to break a trie.
    type Corruption = (&'static str, fn(&mut FlatPoptrie<u128>));

    #[test]
    fn validate_catches_corruption() {
        let corruptions: [Corruption; 6] = [
            ("block past the array", |e| {
                let i = node(e);
                e.entries.make_mut()[i] = (e.entries.len() as u64) << 32 | 1;
            }),
            ("slot 0 starts no run", |e| {
                let i = node(e);
                e.entries.make_mut()[i] &= !1;
            }),
            ("block inside the direct tables", |e| {
                let i = node(e);
                e.entries.make_mut()[i] &= 0xffff_ffff;
            }),
            ("leaf with a payload out of range", |e| {
                let i = (0..e.entries.len())
                    .find(|&i| e.entries[i] & LEAF != 0)
                    .unwrap();
                e.entries.make_mut()[i] = LEAF | (MAX_PAYLOAD as u64 + 1);
            }),
            ("a node entry that points at its own block", |e| {
                let i = node(e);
                let first = (e.entries[i] >> 32) as usize + 1;
                e.entries.make_mut()[first] = e.entries[i];
            }),
            ("a focus wider than s", |e| {
                e.focus.bits = e.s + 1;
            }),
        ];
        for s in [0, 13, 24] {
            assert_eq!(flat(s).validate(), Ok(()), "s = {s}");
            for (what, corrupt) in corruptions {
                let mut e = flat(s);
                corrupt(&mut e);
                assert!(e.validate().is_err(), "s = {s}: {what}");
            }
        }
    }
}
