//! The shape of a route table: the statistics the synthetic generator is
//! held to. One definition, used both to measure the real tables
//! (`cargo run -p ipfib-cli --example table_shape`) and, in the tests, to
//! check what [`super::synthetic_v4`] / [`super::synthetic_v6`] produce.
//!
//! Terms, over a set of distinct prefixes with values:
//! - the **cover** of a prefix is the longest other prefix of the table that
//!   contains it (its immediate covering prefix); prefixes with a cover are
//!   **nested**;
//! - two prefixes are **adjacent siblings** when they have the same cover
//!   (or none), and the second starts right after the first ends, with no
//!   prefix of that cover in between;
//! - a **block** is the /16 (IPv4) or /32 (IPv6) a prefix starts in (the
//!   common unit of allocation); a **region** is the /8 (IPv4) or /16
//!   (IPv6) it starts in.

use crate::addr::Addr;
use crate::prefix::Prefix;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// A cover still open in [`Shape::of`]'s walk: the prefix, its value and
/// its last child so far.
type OpenCover<A> = (Prefix<A>, u32, Option<(Prefix<A>, u32)>);

/// What [`Shape::of`] measures. Fractions are in `0.0..=1.0`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shape {
    /// 4 or 6.
    pub family: u8,
    /// Distinct prefixes.
    pub prefixes: usize,
    /// Fraction of prefixes per length (index = length).
    pub lengths: Vec<f64>,
    /// Fraction of prefixes with a cover.
    pub nested: f64,
    /// Per length, the fraction of that length's prefixes with a cover.
    pub nested_by_length: Vec<f64>,
    /// Of the nested prefixes, the fraction whose value is their cover's.
    pub same_as_cover: f64,
    /// Fraction of prefixes followed by an adjacent sibling.
    pub adjacent: f64,
    /// Of the adjacent sibling pairs, the fraction with equal values.
    pub adjacent_same: f64,
    /// Distinct values per prefix.
    pub values_per_prefix: f64,
    /// Distinct blocks (/16 or /32) the prefixes start in.
    pub blocks: usize,
    /// Prefixes per block: median, 90th and 99th percentile, maximum.
    pub per_block: [usize; 4],
    /// Distinct regions (/8 or /16) the prefixes start in.
    pub regions: usize,
    /// log2 of the number of addresses some prefix covers.
    pub covered_log2: f64,
    /// Elementary intervals after merging neighbours with the same value
    /// (what the PlanB engine stores), per prefix.
    pub intervals_per_prefix: f64,
    /// Fraction of prefixes holding the most common value.
    pub top_value_share: f64,
}

impl Shape {
    /// The block length for family `A`: /16 for IPv4, /32 for IPv6.
    pub fn block_len<A: Addr>() -> u8 {
        if A::BITS == 32 {
            16
        } else {
            32
        }
    }

    /// The region length for family `A`: /8 for IPv4, /16 for IPv6.
    pub fn region_len<A: Addr>() -> u8 {
        if A::BITS == 32 {
            8
        } else {
            16
        }
    }

    /// Measure `routes` (duplicates of a prefix: the last one counts).
    pub fn of<A: Addr>(routes: &[(Prefix<A>, u32)]) -> Shape {
        let mut last: HashMap<Prefix<A>, u32> = HashMap::with_capacity(routes.len());
        for &(p, v) in routes {
            last.insert(p, v);
        }
        let mut sorted: Vec<(Prefix<A>, u32)> = last.into_iter().collect();
        // Address order, shorter first: a cover comes before what it holds.
        sorted.sort_unstable_by_key(|(p, _)| (p.addr(), p.len()));
        let n = sorted.len();
        let mut lengths = vec![0.0f64; A::BITS as usize + 1];
        let mut nested_by_length = vec![0.0; A::BITS as usize + 1];
        let (mut nested, mut same_cover, mut adjacent, mut adjacent_same) = (0, 0, 0, 0);
        let mut covered = 0.0f64;
        // Open covers, outermost first, each with its last child so far.
        let mut stack: Vec<OpenCover<A>> = Vec::new();
        let mut top_last: Option<(Prefix<A>, u32)> = None;
        let (block, region) = (Self::block_len::<A>(), Self::region_len::<A>());
        let mut per_block: HashMap<A, usize> = HashMap::new();
        let mut regions: HashSet<A> = HashSet::new();
        let mut values: HashMap<u32, usize> = HashMap::new();
        for &(p, v) in &sorted {
            lengths[p.len() as usize] += 1.0;
            *values.entry(v).or_default() += 1;
            *per_block.entry(p.addr().and(A::mask(block))).or_default() += 1;
            regions.insert(p.addr().and(A::mask(region)));
            while stack.last().is_some_and(|(c, _, _)| !c.covers(&p)) {
                stack.pop();
            }
            let prev = match stack.last_mut() {
                Some((_, cv, last_child)) => {
                    nested += 1;
                    nested_by_length[p.len() as usize] += 1.0;
                    same_cover += usize::from(*cv == v);
                    last_child.replace((p, v))
                }
                None => {
                    covered += 2f64.powi(i32::from(A::BITS - p.len()));
                    top_last.replace((p, v))
                }
            };
            if let Some((q, qv)) = prev {
                if q.last().checked_succ() == Some(p.addr()) {
                    adjacent += 1;
                    adjacent_same += usize::from(qv == v);
                }
            }
            stack.push((p, v, None));
        }
        let frac = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        for (m, &c) in nested_by_length.iter_mut().zip(&lengths) {
            *m /= c.max(1.0);
        }
        lengths.iter_mut().for_each(|x| *x /= n.max(1) as f64);
        let mut counts: Vec<usize> = per_block.into_values().collect();
        counts.sort_unstable();
        let pct = |q: f64| {
            counts
                .get(((counts.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(0)
        };
        Shape {
            family: A::FAMILY,
            prefixes: n,
            lengths,
            nested: frac(nested, n),
            nested_by_length,
            same_as_cover: frac(same_cover, nested),
            adjacent: frac(adjacent, n),
            adjacent_same: frac(adjacent_same, adjacent),
            values_per_prefix: frac(values.len(), n),
            blocks: counts.len(),
            per_block: [pct(0.5), pct(0.9), pct(0.99), pct(1.0)],
            regions: regions.len(),
            covered_log2: if covered > 0.0 { covered.log2() } else { 0.0 },
            intervals_per_prefix: frac(crate::intervals::compile(sorted.iter().copied()).len(), n),
            top_value_share: frac(values.values().copied().max().unwrap_or(0), n),
        }
    }

    /// Distinct blocks per 1,000 prefixes (how spread out the table is,
    /// comparable across table sizes).
    pub fn blocks_per_1k(&self) -> f64 {
        1000.0 * self.blocks as f64 / self.prefixes.max(1) as f64
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (b, r) = if self.family == 4 {
            ("/16", "/8")
        } else {
            ("/32", "/16")
        };
        writeln!(f, "IPv{}: {} prefixes", self.family, self.prefixes)?;
        let hist: Vec<String> = self
            .lengths
            .iter()
            .enumerate()
            .filter(|(_, &x)| x >= 0.001)
            .map(|(l, x)| format!("/{l} {:.1}%", 100.0 * x))
            .collect();
        writeln!(f, "  lengths (>= 0.1%): {}", hist.join(", "))?;
        writeln!(
            f,
            "  nested {:.3} | same value as cover {:.3} | adjacent {:.3} | adjacent same value {:.3} | values per prefix {:.3}",
            self.nested, self.same_as_cover, self.adjacent, self.adjacent_same, self.values_per_prefix
        )?;
        let [p50, p90, p99, max] = self.per_block;
        writeln!(
            f,
            "  {b} blocks {} ({:.1} per 1k prefixes; per block p50 {p50} p90 {p90} p99 {p99} max {max}) | {r} regions {} | covered 2^{:.2} addresses",
            self.blocks,
            self.blocks_per_1k(),
            self.regions,
            self.covered_log2
        )?;
        writeln!(
            f,
            "  merged intervals per prefix {:.3} | most common value's share {:.4}",
            self.intervals_per_prefix, self.top_value_share
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p4(s: &str) -> Prefix<u32> {
        Prefix::parse(s, crate::prefix::HostBits::Reject).unwrap_or_default()
    }

    #[test]
    fn counts_covers_and_adjacent_siblings() {
        let routes = [
            (p4("10.0.0.0/8"), 1),
            (p4("10.0.0.0/16"), 1), // nested, same as cover
            (p4("10.1.0.0/16"), 2), // nested, other value; adjacent to 10.0/16
            (p4("10.1.0.0/24"), 2), // nested in 10.1/16, same
            (p4("11.0.0.0/8"), 1),  // top level, adjacent to 10/8, same value
            (p4("12.0.1.0/24"), 3), // top level, not adjacent
        ];
        let s = Shape::of(&routes);
        assert_eq!(s.prefixes, 6);
        assert!((s.nested - 0.5).abs() < 1e-9);
        assert!((s.same_as_cover - 2.0 / 3.0).abs() < 1e-9);
        assert!((s.adjacent - 2.0 / 6.0).abs() < 1e-9);
        assert!((s.adjacent_same - 0.5).abs() < 1e-9);
        assert!((s.values_per_prefix - 0.5).abs() < 1e-9);
        assert_eq!(s.blocks, 4);
        assert_eq!(s.regions, 3);
        assert!((s.lengths[16] - 2.0 / 6.0).abs() < 1e-9);
        // Two /8s and a /24 at top level.
        assert!((s.covered_log2 - (2.0 * 16777216.0f64 + 256.0).log2()).abs() < 1e-9);
    }
}
