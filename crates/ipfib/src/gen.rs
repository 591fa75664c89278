//! Seeded synthetic tables and address traces: the demo, the benchmarks and
//! the tests use them so nothing needs a download. Deterministic for a seed
//! on every platform (SplitMix64, no external RNG whose stream could change).
//!
//! Tables follow real ones (../shared/data) in the statistics of
//! [`shape::Shape`]: IPv4 the RouteViews 2015 table (606,138 prefixes), IPv6
//! the RouteViews 2026 one (258,956), measured by ipfib-cli's
//! `examples/table_shape.rs`. The length histogram is the real one (counts
//! allotted exactly); prefixes are placed shortest first, each either
//! - top level, in a /16 (IPv4) or /32 (IPv6) block that an earlier prefix
//!   opened (big blocks attract more) or a new one, in a /8 or /16 region
//!   likewise (IPv6: inside 2001::/16 and the RIRs' /12s, as real tables
//!   are, so most of 2000::/3 is empty);
//! - nested (each length's real nested fraction), inside the cover of an
//!   earlier prefix of its length or inside a random shorter one;
//! - or right after the previous prefix of its length, under the same
//!   cover (adjacent siblings).
//!
//! Values have real locality: a nested prefix mostly takes its cover's
//! value, a run's next prefix mostly its neighbour's, and other values are
//! mostly reused from earlier prefixes (an origin AS announces many
//! blocks). The test `shape_follows_the_real_tables` holds the output to
//! the real tables' figures within stated tolerances at the models' sizes;
//! far from those sizes the length mix and value locality hold, the
//! clustering drifts.

pub mod shape;

use crate::addr::Addr;
use crate::prefix::Prefix;
pub use crate::rng::Rng;

/// A family's table model: the length histogram with each length's nested
/// fraction (measured from a real table by `examples/table_shape.rs` in
/// ipfib-cli), the clustering and value-locality knobs (tuned so that
/// [`shape::Shape`] of the output matches the real table's; the targets and
/// tolerances are in this module's tests).
struct Model {
    /// Prefixes in the table the model was measured on: prefixes no longer
    /// than a block (/16, /32) grow slower than the table (there are only
    /// so many /8-/16s; the 2015 and 2026 tables hold about as many), so
    /// past this size their counts stay as at this size.
    size: usize,
    /// `(length, parts per million of the table, per mille of that
    /// length's prefixes that lie inside a shorter prefix)`, ascending.
    lengths: &'static [(u8, u32, u32)],
    /// A top-level prefix starts a new block (/16, /32) with this chance
    /// (per mille), else joins the block of an earlier top-level prefix
    /// (preferential attachment: big blocks grow).
    new_block: u32,
    /// A new block opens a new region (/8, /16) with this chance (per
    /// mille), else lands in the region of an earlier block.
    new_region: u32,
    /// The next prefix of a length continues the run of the previous one
    /// (placed right after it, under the same cover) with this chance.
    run: u32,
    /// A run's next prefix keeps the previous one's value with this chance.
    run_keeps_value: u32,
    /// A nested prefix goes inside the cover of an earlier prefix of its
    /// length with this chance (covers with many children get more: real
    /// tables concentrate more-specifics in a few big aggregates), else
    /// inside a random shorter prefix.
    sibling: u32,
    /// A nested prefix takes its cover's value with this chance.
    cover_value: u32,
    /// A value not inherited is one given out before with this chance (an
    /// origin AS announces many blocks), else a new one.
    reuse_value: u32,
}

/// IPv4, modelled on the RouteViews 2015 table (606,138 prefixes).
const V4_MODEL: Model = Model {
    lengths: &[
        (8, 28, 0),
        (9, 21, 615),
        (10, 59, 0),
        (11, 160, 41),
        (12, 434, 91),
        (13, 838, 169),
        (14, 1708, 123),
        (15, 2973, 192),
        (16, 21675, 242),
        (17, 13045, 457),
        (18, 21837, 482),
        (19, 45163, 457),
        (20, 65178, 521),
        (21, 69478, 508),
        (22, 107791, 469),
        (23, 94944, 606),
        (24, 534410, 565),
        (25, 1912, 987),
        (26, 1622, 997),
        (27, 1500, 996),
        (28, 1792, 995),
        (29, 2956, 996),
        (30, 3694, 994),
        (31, 112, 1000),
        (32, 6672, 992),
    ],
    size: 606_138,
    new_block: 100,
    new_region: 100,
    run: 720,
    run_keeps_value: 720,
    sibling: 850,
    cover_value: 750,
    reuse_value: 740,
};

/// IPv6, modelled on the RouteViews 2026 table (258,956 prefixes).
const V6_MODEL: Model = Model {
    lengths: &[
        (16, 4, 0),
        (19, 4, 0),
        (20, 54, 0),
        (21, 12, 0),
        (22, 23, 0),
        (23, 23, 0),
        (24, 154, 125),
        (25, 46, 0),
        (26, 66, 294),
        (27, 70, 111),
        (28, 626, 216),
        (29, 21494, 12),
        (30, 2923, 427),
        (31, 1386, 379),
        (32, 104276, 81),
        (33, 22463, 804),
        (34, 21332, 790),
        (35, 7407, 691),
        (36, 37168, 566),
        (37, 4943, 777),
        (38, 10963, 535),
        (39, 7163, 855),
        (40, 91583, 704),
        (41, 6874, 711),
        (42, 11878, 678),
        (43, 5661, 540),
        (44, 101303, 717),
        (45, 17787, 828),
        (46, 22931, 670),
        (47, 35462, 749),
        (48, 462453, 593),
        (49, 120, 1000),
        (50, 12, 1000),
        (51, 8, 1000),
        (52, 120, 935),
        (55, 4, 1000),
        (56, 351, 989),
        (63, 4, 1000),
        (64, 792, 971),
        (80, 4, 0),
        (112, 4, 1000),
        (118, 8, 1000),
        (123, 15, 1000),
        (124, 4, 1000),
        (125, 8, 1000),
        (128, 15, 1000),
    ],
    size: 258_956,
    new_block: 120,
    new_region: 5,
    run: 550,
    run_keeps_value: 900,
    sibling: 850,
    cover_value: 780,
    reuse_value: 500,
};

/// Where fresh regions come from: a random region (/8 or /16) of the
/// family's routed space.
type RegionFn<A> = fn(&mut Rng) -> A;

/// `n` prefixes per `model`, lengths allotted exactly (largest remainder),
/// placed shortest first so every cover exists before what it covers.
fn synthetic<A: Addr>(
    n: usize,
    seed: u64,
    model: &Model,
    fresh_region: RegionFn<A>,
) -> Vec<(Prefix<A>, u32)> {
    let mut g = Generator {
        rng: Rng::new(seed),
        table: std::collections::HashMap::with_capacity(n),
        out: Vec::with_capacity(n),
        covers: Vec::with_capacity(n),
        lengths: Vec::new(),
        blocks: Vec::new(),
        regions: Vec::new(),
        next_value: 1,
        model,
        fresh_region,
    };
    let mut carry = 0;
    let block = shape::Shape::block_len::<A>();
    for (len, count) in allot(n, model, block) {
        carry = g.place_length(len, count + carry);
        g.lengths.push(len);
    }
    // File order is not length order: shuffle (Fisher-Yates).
    for i in (1..g.out.len()).rev() {
        let j = g.rng.below(i as u64 + 1) as usize;
        g.out.swap(i, j);
    }
    g.out
}

/// Per length, its share of `n` by largest remainder (the counts add up to
/// `n` exactly); past the model's size, lengths up to `block` keep the
/// model size's counts.
fn allot(n: usize, model: &Model, block: u8) -> Vec<(u8, usize)> {
    let lengths = model.lengths;
    let scale = |l: u8, w: u32| -> u64 {
        if l <= block && n > model.size {
            (w as u64 * model.size as u64).div_ceil(n as u64)
        } else {
            w as u64
        }
    };
    let total: u64 = lengths.iter().map(|&(l, w, _)| scale(l, w)).sum();
    let mut counts: Vec<(u8, usize, u64)> = lengths
        .iter()
        .map(|&(l, w, _)| {
            let x = n as u64 * scale(l, w);
            (l, (x / total) as usize, x % total)
        })
        .collect();
    let short = n - counts.iter().map(|c| c.1).sum::<usize>();
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(counts[i].2), i));
    for &i in order.iter().take(short) {
        counts[i].1 += 1;
    }
    counts.into_iter().map(|(l, c, _)| (l, c)).collect()
}

struct Generator<'m, A: Addr> {
    rng: Rng,
    /// Every prefix placed so far: its value and index in `out`.
    table: std::collections::HashMap<Prefix<A>, (u32, usize)>,
    out: Vec<(Prefix<A>, u32)>,
    /// Per prefix of `out`, the index of its cover (`NO_COVER`: none).
    covers: Vec<usize>,
    /// Lengths placed so far, ascending (where covers can be).
    lengths: Vec<u8>,
    /// The block of every top-level prefix placed (a block appears once
    /// per prefix: picking an entry at random favours big blocks).
    blocks: Vec<A>,
    /// The region of every block opened.
    regions: Vec<A>,
    next_value: u32,
    model: &'m Model,
    fresh_region: RegionFn<A>,
}

/// A placed prefix, its value and its cover's index in `out`.
type Placed<A> = (Prefix<A>, u32, usize);

/// `Generator::covers` of a top-level prefix.
const NO_COVER: usize = usize::MAX;

/// Placement attempts per prefix and kind (nested, top level) before
/// giving up on its length (the prefix is then carried to the next
/// length): only a length whose room is nearly full runs out.
const ATTEMPTS: usize = 64;

impl<A: Addr> Generator<'_, A> {
    /// Place `count` prefixes of length `len`; returns how many found no
    /// room (only when the length's space is nearly full).
    fn place_length(&mut self, len: u8, count: usize) -> usize {
        let nested_pm = self
            .model
            .lengths
            .iter()
            .find(|m| m.0 == len)
            .map_or(0, |m| m.2);
        let shorter = self.out.len();
        let mut prev: Option<(Prefix<A>, u32)> = None;
        let mut prev_nested = false;
        for placed in 0..count {
            // The kind of placement is drawn once per prefix, so retries
            // (a taken spot) do not bias the mix; the other kind is the
            // fallback when one finds no room.
            let run = prev.filter(|_| self.chance(self.model.run));
            // A run that cannot go on keeps its kind (nested or not).
            let nested = shorter > 0
                && match run {
                    Some(_) => prev_nested,
                    None => self.chance(nested_pm),
                };
            let found = run
                .and_then(|q| self.run_next(q, len))
                .or_else(|| {
                    (0..ATTEMPTS).find_map(|_| {
                        if nested {
                            self.nested(len, shorter)
                        } else {
                            self.top_level(len)
                        }
                    })
                })
                .or_else(|| {
                    (0..ATTEMPTS).find_map(|_| {
                        if nested {
                            self.top_level(len)
                        } else {
                            self.nested(len, shorter)
                        }
                    })
                });
            let Some((p, v, cover)) = found else {
                return count - placed;
            };
            self.table.insert(p, (v, self.out.len()));
            self.out.push((p, v));
            self.covers.push(cover);
            prev = Some((p, v));
            prev_nested = cover != NO_COVER;
        }
        0
    }

    /// The prefix right after `q`, of the same length and under the same
    /// cover (adjacent siblings), if free.
    fn run_next(&mut self, (q, qv): (Prefix<A>, u32), len: u8) -> Option<Placed<A>> {
        let p = Prefix::new_masked(q.last().checked_succ()?, len).ok()?;
        let (cq, cp) = (self.cover(&q), self.cover(&p));
        if self.table.contains_key(&p) || cq.map(|c| c.0) != cp.map(|c| c.0) {
            return None;
        }
        let v = if self.chance(self.model.run_keeps_value) {
            qv
        } else {
            self.value_under(cp)
        };
        Some((p, v, cp.map_or(NO_COVER, |c| c.2)))
    }

    /// A prefix inside an earlier one: the cover of a random earlier
    /// prefix of this length (covers with many children get more: real
    /// tables concentrate more-specifics in a few big aggregates), or a
    /// random shorter prefix.
    fn nested(&mut self, len: u8, shorter: usize) -> Option<Placed<A>> {
        let x = if self.out.len() > shorter && self.chance(self.model.sibling) {
            shorter + self.rng.below((self.out.len() - shorter) as u64) as usize
        } else {
            self.rng.below(shorter as u64) as usize
        };
        let c = if x < shorter {
            self.out[x].0
        } else {
            let ci = self.covers[x];
            self.out.get(ci).filter(|c| c.0.len() < len)?.0
        };
        let p = self.inside(c, len)?;
        let cover = self.cover(&p);
        if self.table.contains_key(&p) {
            return None;
        }
        let v = self.value_under(cover);
        Some((p, v, cover.map_or(NO_COVER, |c| c.2)))
    }

    /// A prefix no earlier one covers, in a block or region.
    fn top_level(&mut self, len: u8) -> Option<Placed<A>> {
        let (room, opened) = self.top_level_room(len);
        let p = self.inside(room, len)?;
        if self.table.contains_key(&p) || self.cover(&p).is_some() {
            return None;
        }
        let block = shape::Shape::block_len::<A>();
        if len >= block {
            self.blocks.push(p.truncate(block).addr());
        }
        self.regions.extend(opened);
        Some((p, self.other_value(), NO_COVER))
    }

    /// The value of a prefix whose cover is `cover`: the cover's (often),
    /// else another.
    fn value_under(&mut self, cover: Option<(Prefix<A>, u32, usize)>) -> u32 {
        match cover {
            Some((_, cv, _)) if self.chance(self.model.cover_value) => cv,
            _ => self.other_value(),
        }
    }

    /// Where a top-level prefix of length `len` goes: an earlier block
    /// when it is longer than a block, else a new block (or a region, when
    /// shorter than a block); with the region of a new block, to remember
    /// once the prefix is placed.
    fn top_level_room(&mut self, len: u8) -> (Prefix<A>, Option<A>) {
        let (block, region) = (
            shape::Shape::block_len::<A>(),
            shape::Shape::region_len::<A>(),
        );
        let m = self.model;
        if len > block && !self.blocks.is_empty() && !self.chance(m.new_block) {
            let b = self.blocks[self.rng.below(self.blocks.len() as u64) as usize];
            return (Prefix::new_masked(b, block).unwrap_or_default(), None);
        }
        let r = if self.regions.is_empty() || self.chance(m.new_region) {
            (self.fresh_region)(&mut self.rng)
        } else {
            self.regions[self.rng.below(self.regions.len() as u64) as usize]
        };
        let room = Prefix::new_masked(r, region).unwrap_or_default();
        (room, Some(r))
    }

    /// A random prefix of length `len` inside `outer` (`outer` itself when
    /// as long; `None` when longer).
    fn inside(&mut self, outer: Prefix<A>, len: u8) -> Option<Prefix<A>> {
        if outer.len() > len {
            return None;
        }
        let r: A = self.rng.addr();
        Prefix::new_masked(outer.addr().to_u128_or(r, outer.len()), len).ok()
    }

    /// The longest prefix placed so far that covers `p` (placed lengths
    /// are all shorter than `p`'s or equal), with its value.
    fn cover(&self, p: &Prefix<A>) -> Option<(Prefix<A>, u32, usize)> {
        self.lengths
            .iter()
            .rev()
            .filter(|&&l| l < p.len())
            .find_map(|&l| {
                let c = p.truncate(l);
                self.table.get(&c).map(|&(v, i)| (c, v, i))
            })
    }

    /// A value not inherited: one given out before (often; any of them
    /// alike, so no value grows to more than a few percent of the table,
    /// as in real tables), or a new one.
    fn other_value(&mut self) -> u32 {
        if self.next_value > 1 && self.chance(self.model.reuse_value) {
            return 1 + self.rng.below(u64::from(self.next_value - 1)) as u32;
        }
        self.next_value += 1;
        self.next_value - 1
    }

    /// True with `per_mille` / 1000.
    fn chance(&mut self, per_mille: u32) -> bool {
        self.rng.below(1000) < per_mille as u64
    }
}

trait Merge: Sized {
    fn to_u128_or(self, random: Self, keep: u8) -> Self;
}

impl<A: Addr> Merge for A {
    fn to_u128_or(self, random: A, keep: u8) -> A {
        let m = A::mask(keep).to_u128();
        A::from_u128_truncate((self.to_u128() & m) | (random.to_u128() & !m))
    }
}

/// `n` distinct IPv4 prefixes shaped like a real full table, seeded.
///
/// ```
/// use ipfib::gen::synthetic_v4;
/// let t = synthetic_v4(300, 1);
/// assert_eq!(t, synthetic_v4(300, 1)); // the same table for a seed
/// let mut prefixes: Vec<_> = t.iter().map(|(p, _)| *p).collect();
/// prefixes.sort();
/// prefixes.dedup();
/// assert_eq!(prefixes.len(), 300);
/// assert!(prefixes.iter().all(|p| p.is_well_formed() && p.addr() >> 24 != 10));
/// ```
pub fn synthetic_v4(n: usize, seed: u64) -> Vec<(Prefix<u32>, u32)> {
    // Unicast /8s below 224.0.0.0, less 0/8, 10/8 and 127/8 (unrouted).
    synthetic(n, seed, &V4_MODEL, |rng| loop {
        let r = 1 + rng.below(223) as u32;
        if r != 10 && r != 127 {
            break r << 24;
        }
    })
}

/// `n` distinct IPv6 prefixes shaped like the 2026 table: in 2001::/16 and
/// the RIRs' /12s (2400, 2600, 2800, 2a00, 2c00), as real tables are.
///
/// ```
/// use ipfib::engine::{poptrie::FlatPoptrie, Engine};
/// let mut t = ipfib::gen::synthetic_v6(300, 1);
/// assert!(t.iter().all(|(p, _)| p.addr() >> 125 == 1)); // in 2000::/3
/// t.sort(); // prefix order, for the interval compiler
/// let iv = ipfib::intervals::compile(t);
/// assert_eq!(FlatPoptrie::build(&iv, &Default::default())?.validate(), Ok(()));
/// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
/// ```
pub fn synthetic_v6(n: usize, seed: u64) -> Vec<(Prefix<u128>, u32)> {
    synthetic(n, seed, &V6_MODEL, |rng| {
        const RIR: [u128; 6] = [0x2001, 0x2400, 0x2600, 0x2800, 0x2a00, 0x2c00];
        let top = RIR[rng.below(RIR.len() as u64) as usize];
        let r = if top == 0x2001 {
            top
        } else {
            top | rng.below(16) as u128
        };
        r << 112
    })
}

/// Addresses drawn uniformly from the whole space.
///
/// ```
/// use ipfib::gen::{uniform_trace, Rng};
/// let t: Vec<u32> = uniform_trace(100, 9);
/// let mut rng = Rng::new(9); // the seed's stream, one address a draw
/// assert!(t.iter().all(|&a| a == rng.addr::<u32>()));
/// assert!(t.iter().any(|&a| a >= 1 << 31) && t.iter().any(|&a| a < 1 << 31));
/// ```
pub fn uniform_trace<A: Addr>(n: usize, seed: u64) -> Vec<A> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.addr()).collect()
}

/// The Poptrie paper's "sequential" pattern (Asai and Ohara 2015, §4):
/// `n` consecutive addresses counting up by one from a random start,
/// wrapping past the top of the space. IPv4: one /24 holds 256 of them,
/// so a lookup mostly repeats its neighbour's path. IPv6: the same, only
/// more so: 2 million steps never leave the start's /64.
///
/// ```
/// let t: Vec<u32> = ipfib::gen::sequential_trace(300, 2);
/// assert!(t.windows(2).all(|w| w[1] == w[0].wrapping_add(1)));
/// ```
pub fn sequential_trace<A: Addr>(n: usize, seed: u64) -> Vec<A> {
    let start = Rng::new(seed).addr::<A>().to_u128();
    (0..n)
        .map(|i| A::from_u128_truncate(start.wrapping_add(i as u128)))
        .collect()
}

/// The Poptrie paper's "repeated" pattern: uniformly random addresses, each
/// looked up `times` times in a row (the paper repeats each 16 times); `n`
/// addresses in all, the last run cut short when `times` does not divide
/// `n`. `times = 0` is taken as 1.
///
/// ```
/// use ipfib::gen::repeat_trace;
/// let t: Vec<u32> = repeat_trace(10, 4, 3); // runs of 4, 4 and 2
/// assert!(t[..4].iter().all(|&a| a == t[0]) && t[4..8].iter().all(|&a| a == t[4]));
/// assert_eq!((t[8] == t[9], t[3] == t[4]), (true, false));
/// assert_eq!(repeat_trace::<u32>(5, 0, 3), repeat_trace::<u32>(5, 1, 3));
/// ```
pub fn repeat_trace<A: Addr>(n: usize, times: usize, seed: u64) -> Vec<A> {
    let mut rng = Rng::new(seed);
    let times = times.max(1);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let a: A = rng.addr();
        out.extend(std::iter::repeat_n(a, times.min(n - out.len())));
    }
    out
}

/// Addresses inside prefixes drawn uniformly from `prefixes` ("matched").
///
/// ```
/// use ipfib::gen::{matched_trace, uniform_trace};
/// use ipfib::prefix::Prefix;
/// let prefixes: Vec<Prefix<u32>> = vec!["10.0.0.0/8".parse()?, "192.0.2.0/24".parse()?];
/// let t = matched_trace(&prefixes, 200, 4);
/// assert!(t.iter().all(|&a| prefixes.iter().any(|p| p.contains(a))));
/// assert_eq!(matched_trace::<u32>(&[], 5, 4), uniform_trace::<u32>(5, 4)); // none: uniform
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
pub fn matched_trace<A: Addr>(prefixes: &[Prefix<A>], n: usize, seed: u64) -> Vec<A> {
    let mut rng = Rng::new(seed);
    if prefixes.is_empty() {
        return uniform_trace(n, seed);
    }
    (0..n)
        .map(|_| {
            let p = prefixes[rng.below(prefixes.len() as u64) as usize];
            let r: A = rng.addr();
            p.addr().to_u128_or(r, p.len())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shape::Shape;

    /// A real table's figures (`examples/table_shape.rs` in ipfib-cli).
    struct Target {
        nested: f64,
        same_as_cover: f64,
        adjacent: f64,
        adjacent_same: f64,
        values_per_prefix: f64,
        blocks: usize,
        /// Prefixes per block: 90th and 99th percentile.
        per_block_p90_p99: [usize; 2],
        regions: usize,
        covered_log2: f64,
        intervals_per_prefix: f64,
        top_value_share: f64,
    }

    /// Fractions within 0.04 absolute (values per prefix: 0.02); block and
    /// region counts within 15%; per-block percentiles within a factor of
    /// two; covered space within 2^0.3; merged intervals per prefix within
    /// 15%; the most common value's share within a factor of three; the
    /// length histogram exact to 0.2% (total variation).
    fn check(what: &str, got: &Shape, model: &Model, want: &Target) {
        let close = |name: &str, g: f64, w: f64, tol: f64| {
            assert!(
                (g - w).abs() <= tol,
                "{what} {name}: {g:.3}, real {w:.3} (tolerance {tol})"
            );
        };
        close("nested", got.nested, want.nested, 0.04);
        close(
            "same value as cover",
            got.same_as_cover,
            want.same_as_cover,
            0.04,
        );
        close("adjacent", got.adjacent, want.adjacent, 0.04);
        close(
            "adjacent same value",
            got.adjacent_same,
            want.adjacent_same,
            0.04,
        );
        close(
            "values per prefix",
            got.values_per_prefix,
            want.values_per_prefix,
            0.02,
        );
        close(
            "blocks",
            got.blocks as f64,
            want.blocks as f64,
            0.15 * want.blocks as f64,
        );
        close(
            "regions",
            got.regions as f64,
            want.regions as f64,
            0.15 * want.regions as f64,
        );
        close("covered log2", got.covered_log2, want.covered_log2, 0.3);
        let w = want.intervals_per_prefix;
        close(
            "intervals per prefix",
            got.intervals_per_prefix,
            w,
            0.15 * w,
        );
        let r = got.top_value_share / want.top_value_share;
        assert!(
            (1.0 / 3.0..=3.0).contains(&r),
            "{what} top value share {:.4}",
            got.top_value_share
        );
        for (i, (&g, &w)) in got.per_block[1..3]
            .iter()
            .zip(&want.per_block_p90_p99)
            .enumerate()
        {
            let r = g as f64 / w as f64;
            assert!(
                (0.5..=2.0).contains(&r),
                "{what} per-block p{}: {g}, real {w}",
                [90, 99][i]
            );
        }
        let total: f64 = model.lengths.iter().map(|m| m.1 as f64).sum();
        let tv: f64 = model
            .lengths
            .iter()
            .map(|&(l, w, _)| (got.lengths[l as usize] - w as f64 / total).abs())
            .sum::<f64>()
            / 2.0;
        assert!(
            tv <= 0.002,
            "{what} length histogram off by {tv:.4} (total variation)"
        );
    }

    #[test]
    fn shape_follows_the_real_tables() {
        // RouteViews 2015 IPv4 (routeviews-20151101.ipasn.dat.gz).
        let v4 = Shape::of(&synthetic_v4(V4_MODEL.size, 4));
        let real_v4 = Target {
            nested: 0.543,
            same_as_cover: 0.756,
            adjacent: 0.710,
            adjacent_same: 0.730,
            values_per_prefix: 0.085,
            blocks: 31_921,
            per_block_p90_p99: [58, 150],
            regions: 213,
            covered_log2: 31.39,
            intervals_per_prefix: 0.457,
            top_value_share: 0.0093,
        };
        check("IPv4", &v4, &V4_MODEL, &real_v4);
        // RouteViews 2026 IPv6 (routeviews-rv6-20260730-1400.pfx2as.txt.gz).
        let v6 = Shape::of(&synthetic_v6(V6_MODEL.size, 6));
        let real_v6 = Target {
            nested: 0.573,
            same_as_cover: 0.778,
            adjacent: 0.567,
            adjacent_same: 0.912,
            values_per_prefix: 0.141,
            blocks: 43_310,
            per_block_p90_p99: [7, 74],
            regions: 66,
            covered_log2: 113.83,
            intervals_per_prefix: 0.578,
            top_value_share: 0.0275,
        };
        check("IPv6", &v6, &V6_MODEL, &real_v6);
    }

    #[test]
    fn seeded_distinct_and_exactly_sized() {
        for n in [0, 1, 7, 400, 5_000] {
            let a = synthetic_v4(n, 3);
            assert_eq!(a.len(), n);
            assert_eq!(a, synthetic_v4(n, 3), "seeded");
            let set: std::collections::HashSet<_> = a.iter().map(|r| r.0).collect();
            assert_eq!(set.len(), n, "distinct");
            assert!(a.iter().all(|(p, _)| p.addr() < 0xe000_0000), "unicast");
            let b = synthetic_v6(n, 3);
            assert_eq!(b.len(), n);
            let set: std::collections::HashSet<_> = b.iter().map(|r| r.0).collect();
            assert_eq!(set.len(), n, "distinct");
            assert!(
                b.iter().all(|(p, _)| p.addr() >> 125 == 1),
                "inside 2000::/3"
            );
        }
        assert_ne!(synthetic_v4(1000, 1), synthetic_v4(1000, 2));
    }

    #[test]
    fn sequential_counts_up_by_one_and_wraps() {
        let t: Vec<u32> = sequential_trace(1000, 7);
        assert_eq!(t.len(), 1000);
        for w in t.windows(2) {
            assert_eq!(w[1], w[0].wrapping_add(1));
        }
        assert_eq!(t, sequential_trace::<u32>(1000, 7), "seeded");
        assert_ne!(
            t[0],
            sequential_trace::<u32>(1, 8)[0],
            "the start is random"
        );
        let t6: Vec<u128> = sequential_trace(300, 3);
        for w in t6.windows(2) {
            assert_eq!(w[1], w[0].wrapping_add(1));
        }
        // Past the top of the space the count wraps to zero (IPv4 truncates).
        let mut seed = 0;
        let start = loop {
            let s: u32 = Rng::new(seed).addr();
            if s > u32::MAX - 2_000_000 {
                break seed;
            }
            seed += 1;
        };
        let t: Vec<u32> = sequential_trace(2_000_000, start);
        assert!(t.contains(&u32::MAX) && t.contains(&0));
    }

    #[test]
    fn repeat_holds_runs_of_the_same_random_address() {
        let t: Vec<u32> = repeat_trace(100, 16, 5);
        assert_eq!(t.len(), 100);
        let runs: Vec<&[u32]> = t.chunk_by(|a, b| a == b).collect();
        // 6 runs of 16 and a last one of 4 (adjacent runs differ: random).
        assert_eq!(runs.len(), 7);
        assert!(runs[..6].iter().all(|r| r.len() == 16));
        assert_eq!(runs[6].len(), 4);
        let t6: Vec<u128> = repeat_trace(64, 16, 5);
        assert_eq!(t6.chunk_by(|a, b| a == b).count(), 4);
        assert_eq!(repeat_trace::<u32>(5, 0, 1).len(), 5, "0 repeats = 1");
    }

    #[test]
    fn matched_addresses_stay_inside_their_prefix() {
        let p = Prefix::new(0x2001_0db8u128 << 96, 32).unwrap_or_default();
        for a in matched_trace(&[p], 10_000, 3) {
            assert!(p.contains(a), "{a:x} outside {p}");
        }
        let q = Prefix::new(0x0a00_0000u32, 8).unwrap_or_default();
        assert!(matched_trace(&[q], 10_000, 4)
            .iter()
            .all(|&a| q.contains(a)));
    }
}
