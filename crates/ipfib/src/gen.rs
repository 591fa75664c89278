//! Seeded synthetic tables and address traces: the demo, the benchmarks and
//! the tests use them so nothing needs a download. Deterministic for a seed
//! on every platform (SplitMix64, no external RNG whose stream could change).
//!
//! Length distributions follow real tables (../shared/data): IPv4 is
//! modelled on the 2015 RouteViews table (/24 about 55%, /22-/23 about 20%,
//! /16-/21 most of the rest); IPv6 on the 2026 one (about 45% /48, 11% /32,
//! 10% /40, 10% /44, 4% /36, the rest spread over /16-/64, a few longer),
//! inside 2000::/3. About 60% of prefixes are placed inside an earlier,
//! shorter one, so nesting looks like real tables.

use crate::addr::Addr;
use crate::prefix::Prefix;

/// SplitMix64: tiny, fast, good enough for test data.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Next 128 random bits.
    pub fn next_u128(&mut self) -> u128 {
        ((self.next_u64() as u128) << 64) | self.next_u64() as u128
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// A random address of family `A`.
    pub fn addr<A: Addr>(&mut self) -> A {
        A::from_u128_truncate(self.next_u128())
    }
}

/// Cumulative length weights: `(length, weight)`.
type LengthMix = &'static [(u8, u32)];

const V4_LENGTHS: LengthMix = &[
    (8, 1),
    (10, 2),
    (11, 4),
    (12, 8),
    (13, 14),
    (14, 25),
    (15, 35),
    (16, 230),
    (17, 60),
    (18, 100),
    (19, 170),
    (20, 230),
    (21, 250),
    (22, 560),
    (23, 500),
    (24, 5500),
    (25, 4),
    (26, 4),
    (27, 3),
    (28, 2),
    (29, 2),
    (30, 2),
    (32, 2),
];

const V6_LENGTHS: LengthMix = &[
    (16, 2),
    (19, 2),
    (20, 5),
    (24, 8),
    (28, 20),
    (29, 150),
    (30, 20),
    (32, 1100),
    (33, 40),
    (34, 40),
    (35, 30),
    (36, 400),
    (38, 30),
    (40, 1000),
    (42, 50),
    (44, 1000),
    (45, 40),
    (46, 100),
    (47, 100),
    (48, 4500),
    (52, 40),
    (56, 60),
    (60, 20),
    (64, 80),
    (96, 2),
    (112, 2),
    (126, 2),
    (128, 4),
];

fn pick_len(rng: &mut Rng, mix: LengthMix) -> u8 {
    let total: u32 = mix.iter().map(|&(_, w)| w).sum();
    let mut r = rng.below(total as u64) as u32;
    for &(len, w) in mix {
        if r < w {
            return len;
        }
        r -= w;
    }
    mix[mix.len() - 1].0
}

fn synthetic<A: Addr>(
    n: usize,
    seed: u64,
    mix: LengthMix,
    space: Prefix<A>,
    values: u32,
    accept: fn(&Prefix<A>) -> bool,
) -> Vec<(Prefix<A>, u32)> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<(Prefix<A>, u32)> = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::with_capacity(n);
    let host_bits = |rng: &mut Rng, outer: &Prefix<A>| -> A {
        let r: A = rng.addr();
        // Keep the outer prefix's bits, randomise the rest.
        outer.addr().to_u128_or(r, outer.len())
    };
    while out.len() < n {
        let len = pick_len(&mut rng, mix);
        let outer = if !out.is_empty() && rng.below(10) < 6 {
            let (p, _) = out[rng.below(out.len() as u64) as usize];
            if p.len() < len {
                p
            } else {
                space
            }
        } else {
            space
        };
        let addr = host_bits(&mut rng, &outer);
        let Ok(p) = Prefix::new_masked(addr, len.max(space.len())) else {
            continue;
        };
        if accept(&p) && seen.insert(p) {
            // Values: a pool like origin ASNs; nested prefixes often share
            // their parent's value (what makes aggregation matter).
            let v = 1 + rng.below(values as u64) as u32;
            out.push((p, v));
        }
    }
    out
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
pub fn synthetic_v4(n: usize, seed: u64) -> Vec<(Prefix<u32>, u32)> {
    // Unicast space: below 224.0.0.0 (multicast and reserved are unrouted).
    let values = (n as u32 / 8).max(1);
    synthetic(n, seed, V4_LENGTHS, Prefix::default_route(), values, |p| {
        p.addr() < 0xe000_0000
    })
}

/// `n` distinct IPv6 prefixes inside 2000::/3 shaped like the 2026 table.
pub fn synthetic_v6(n: usize, seed: u64) -> Vec<(Prefix<u128>, u32)> {
    let space = Prefix::new(0x2000u128 << 112, 3).unwrap_or_default();
    let values = (n as u32 / 8).max(1);
    synthetic(n, seed, V6_LENGTHS, space, values, |_| true)
}

/// Addresses drawn uniformly from the whole space.
pub fn uniform_trace<A: Addr>(n: usize, seed: u64) -> Vec<A> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.addr()).collect()
}

/// The Poptrie paper's "sequential" pattern (Asai and Ohara 2015, §4):
/// `n` consecutive addresses counting up by one from a random start,
/// wrapping past the top of the space. IPv4: one /24 holds 256 of them,
/// so a lookup mostly repeats its neighbour's path. IPv6: the same, only
/// more so: 2 million steps never leave the start's /64.
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
