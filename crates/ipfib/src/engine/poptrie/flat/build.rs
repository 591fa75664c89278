//! From elementary intervals to the flat entry array: both direct tables,
//! then each node's run entries, depth first (a node's block is allocated
//! when the node is built, its children's blocks after it).
//!
//! As in `poptrie/build.rs`, a slot whose whole address range lies in one
//! interval is a leaf, and the rank cursor only moves forward, so the
//! build is linear in slots plus intervals per level.

use super::layout::{Focus, K, LEAF};
use crate::engine::poptrie::build::{advance, focus_prefix, low_mask, single};
use crate::engine::poptrie::layout::Chunks;
use crate::engine::poptrie::options::PoptrieError;
use crate::intervals::Intervals;

/// Node entry blocks are named by 31 bits (`base - 1`, bit 63 clear).
const MAX_ENTRIES: usize = 1 << 31;

/// Share of interval boundaries the focus prefix must hold, in
/// thousandths: 99.9%, so a stray prefix or two beside thousands of
/// others does not cost the focus table (tests lower it, so that random
/// tables send lanes through the outer table too).
pub(super) const FOCUS_SHARE: u32 = 999;

pub(super) struct Built {
    pub entries: Vec<u64>,
    pub focus: Focus,
}

/// Build the entries for `iv` with `s` direct-pointing bits, the focus
/// prefix holding at least `share` thousandths of the boundaries.
///
/// The focus prefix is at most `ceil(s / 2)` bits long: the two tables
/// hold `2^(s - |F|) + 2^|F|` entries, least at `|F| = s / 2`, and any
/// shorter prefix of the rule's `F` holds the boundaries it holds, so
/// cutting it changes no answer, only (downwards) the footprint. Addresses
/// in `F` resolve at depth `s` whatever `|F|` is.
pub(super) fn build<A: Chunks>(
    iv: &Intervals<A>,
    s: u32,
    share: u32,
) -> Result<Built, PoptrieError> {
    let bits = A::BITS as u32;
    let (longest, first) = focus_prefix(iv, s, share);
    let fbits = longest.min(s.div_ceil(2));
    let first = first & !low_mask(bits - fbits);
    let focus_len = 1usize << (s - fbits);
    let outer_len = if fbits == 0 { 0 } else { 1usize << fbits };
    let mut b = Builder {
        starts: &iv.starts,
        payloads: &iv.payloads,
        bits,
        entries: vec![0; focus_len + outer_len],
    };
    let mut r = 0;
    for bucket in 0..focus_len {
        // The bucket's bits follow F's (bucket 0 only when s = |F|, and a
        // shift by all 128 bits when s = 0 and the family is IPv6).
        let lo = first | (bucket as u128).checked_shl(bits - s).unwrap_or(0);
        advance(b.starts, &mut r, lo);
        b.entries[bucket] = b.subtree(lo, s, r)?;
    }
    let mut r = 0;
    for bucket in 0..outer_len {
        let lo = (bucket as u128) << (bits - fbits);
        b.entries[focus_len + bucket] = if lo == first {
            // Addresses in F use the focus table: never read.
            leaf(crate::intervals::NO_ROUTE)
        } else {
            advance(b.starts, &mut r, lo);
            b.subtree(lo, fbits, r)?
        };
    }
    Ok(Built {
        entries: b.entries,
        focus: Focus {
            bits: fbits,
            first_top: ((first << (128 - bits)) >> 64) as u64,
        },
    })
}

/// The leaf entry of `payload`.
fn leaf(payload: u32) -> u64 {
    LEAF | payload as u64
}

/// What one slot of a node holds: a leaf run's payload, or a child (its
/// first address and rank).
#[derive(Clone, Copy)]
enum Slot {
    Leaf(u32),
    Node(u128, usize),
}

struct Builder<'a, A> {
    starts: &'a [A],
    payloads: &'a [u32],
    bits: u32,
    entries: Vec<u64>,
}

impl<A: Chunks> Builder<'_, A> {
    /// The entry for the addresses whose top `offset` bits are those of
    /// `first` (`r` the rank of `first`): a leaf, or the header of a node
    /// whose block this call allocates and fills.
    fn subtree(&mut self, first: u128, offset: u32, mut r: usize) -> Result<u64, PoptrieError> {
        let last = first | low_mask(self.bits.saturating_sub(offset));
        if single(self.starts, r, last) {
            return Ok(leaf(self.payloads[r]));
        }
        // offset < bits here: a range of one address is always single.
        let mut runs = 0u32;
        let mut items = [Slot::Leaf(0); 1 << K];
        let mut n = 0;
        let mut prev = None;
        for slot in 0..1u32 << K {
            let (lo, hi) = if offset + K <= self.bits {
                let w = self.bits - offset - K;
                let lo = first | (slot as u128) << w;
                (lo, lo | low_mask(w))
            } else {
                // The partial last level: slots read zeros past the end.
                let a = first | (slot >> (offset + K - self.bits)) as u128;
                (a, a)
            };
            advance(self.starts, &mut r, lo);
            if single(self.starts, r, hi) {
                let p = self.payloads[r];
                if prev != Some(p) {
                    runs |= 1 << slot;
                    items[n] = Slot::Leaf(p);
                    n += 1;
                }
                prev = Some(p);
            } else {
                runs |= 1 << slot;
                items[n] = Slot::Node(lo, r);
                n += 1;
                prev = None;
            }
        }
        let base = self.entries.len();
        if base + n > MAX_ENTRIES {
            return Err(PoptrieError::TooManyEntries(base + n));
        }
        self.entries.resize(base + n, 0);
        for (j, &item) in items[..n].iter().enumerate() {
            self.entries[base + j] = match item {
                Slot::Leaf(p) => leaf(p),
                Slot::Node(lo, r) => self.subtree(lo, offset + K, r)?,
            };
        }
        // base >= 1: the direct tables come first.
        Ok(((base as u64 - 1) << 32) | runs as u64)
    }
}
