//! Ordered walks of the prefixes under one prefix, resumable after any of
//! them: what paginated `longer` queries need without scanning every
//! prefix of the RIB or sorting them.
//!
//! The prefixes strictly after `x` inside `within`, in prefix order
//! (address, then length), are: the strict subnets of `x`, then for each
//! length `l` from `x.len()` down to `within.len() + 1` where `x`'s
//! ancestor of length `l` is a left child, every subnet of that
//! ancestor's right sibling. Each part is one subtree walk of the route
//! table, so a page costs its own size plus one descent per length, not
//! the number of prefixes before it.

use ipfib::addr::Addr;
use ipfib::fib::Fib;
use ipfib::prefix::{AnyPrefix, Prefix};
use ipfib::route_table::RouteTable;

/// Push the prefixes of `rt` under `within` (itself included), in prefix
/// order, strictly after `after` when given, until `out` holds `max`.
/// An `after` not under `within` resumes nowhere: nothing is pushed.
pub(crate) fn under<A: Addr>(
    rt: &RouteTable<A, u32>,
    within: Prefix<A>,
    after: Option<Prefix<A>>,
    max: usize,
    out: &mut Vec<Prefix<A>>,
) {
    let take = |from: Prefix<A>, skip_self: bool, out: &mut Vec<Prefix<A>>| {
        for (p, _) in rt.subnets(&from) {
            if out.len() >= max {
                return;
            }
            if skip_self && p == from {
                continue;
            }
            out.push(p);
        }
    };
    let Some(x) = after else {
        take(within, false, out);
        return;
    };
    if !within.covers(&x) {
        return;
    }
    take(x, true, out);
    for l in (within.len() + 1..=x.len()).rev() {
        if out.len() >= max {
            return;
        }
        let (p, parent) = (x.truncate(l), x.truncate(l - 1));
        if p.last() == parent.last() {
            continue; // a right child: its sibling came before it
        }
        let sibling = p.last().checked_succ().and_then(|a| Prefix::new(a, l).ok());
        if let Some(s) = sibling {
            take(s, false, out);
        }
    }
}

/// [`under`] over a FIB's two route tables (families never mix).
pub(crate) fn under_any(
    fib: &Fib<u32>,
    within: &AnyPrefix,
    after: Option<&AnyPrefix>,
    max: usize,
) -> Vec<AnyPrefix> {
    match within {
        AnyPrefix::V4(w) => {
            let after = match after {
                None => None,
                Some(AnyPrefix::V4(a)) => Some(*a),
                Some(AnyPrefix::V6(_)) => return Vec::new(),
            };
            let mut out = Vec::new();
            under(fib.routes_v4(), *w, after, max, &mut out);
            out.into_iter().map(AnyPrefix::V4).collect()
        }
        AnyPrefix::V6(w) => {
            let after = match after {
                None => None,
                Some(AnyPrefix::V6(a)) => Some(*a),
                Some(AnyPrefix::V4(_)) => return Vec::new(),
            };
            let mut out = Vec::new();
            under(fib.routes_v6(), *w, after, max, &mut out);
            out.into_iter().map(AnyPrefix::V6).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (no test dependency).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 11
        }
    }

    fn random_table(seed: u64, n: usize) -> (RouteTable<u32, u32>, Vec<Prefix<u32>>) {
        let mut g = Lcg(seed);
        let mut rt = RouteTable::new();
        let mut all = Vec::new();
        // Clustered under 10.0.0.0/8 and 192.168.0.0/16 so that subtrees
        // nest deeply, plus a few anywhere.
        for i in 0..n {
            let base: u32 = match i % 3 {
                0 => 0x0a00_0000 | (g.next() as u32 & 0x00ff_ffff),
                1 => 0xc0a8_0000 | (g.next() as u32 & 0xffff),
                _ => g.next() as u32,
            };
            let len = (g.next() % 33) as u8;
            let p = Prefix::new_masked(base, len).unwrap();
            if rt.insert(p, i as u32).unwrap().is_none() {
                all.push(p);
            }
        }
        all.sort();
        (rt, all)
    }

    #[test]
    fn pages_walk_the_subtree_once_in_order() {
        for seed in 0..20 {
            let (rt, all) = random_table(seed, 600);
            for within in [
                "0.0.0.0/0",
                "10.0.0.0/8",
                "10.0.0.0/9",
                "192.168.0.0/16",
                "11.0.0.0/8",
            ] {
                let within: Prefix<u32> = within.parse().unwrap();
                let want: Vec<Prefix<u32>> =
                    all.iter().copied().filter(|p| within.covers(p)).collect();
                for page in [1, 2, 7, 100, 10_000] {
                    let mut got = Vec::new();
                    let mut after = None;
                    for _ in 0..=want.len() {
                        let mut out = Vec::new();
                        under(&rt, within, after, page, &mut out);
                        assert!(out.len() <= page);
                        let Some(&last) = out.last() else { break };
                        got.extend(out);
                        after = Some(last);
                    }
                    assert_eq!(got, want, "seed {seed} within {within} page {page}");
                }
            }
        }
    }

    #[test]
    fn resumes_after_a_prefix_that_is_gone() {
        // The cursor's prefix may be withdrawn between two pages: the walk
        // still resumes right after where it would have been.
        let (rt, all) = random_table(99, 400);
        let within: Prefix<u32> = "0.0.0.0/0".parse().unwrap();
        let mut g = Lcg(7);
        for _ in 0..300 {
            let x = Prefix::new_masked(g.next() as u32, (g.next() % 33) as u8).unwrap();
            let want: Vec<Prefix<u32>> = all.iter().copied().filter(|p| *p > x).take(5).collect();
            let mut out = Vec::new();
            under(&rt, within, Some(x), 5, &mut out);
            assert_eq!(out, want, "after {x}");
        }
    }

    #[test]
    fn an_outside_cursor_and_the_other_family_give_nothing() {
        let (rt, _) = random_table(3, 100);
        let mut out = Vec::new();
        under(
            &rt,
            "10.0.0.0/8".parse().unwrap(),
            Some("11.0.0.0/8".parse().unwrap()),
            10,
            &mut out,
        );
        assert!(out.is_empty());
    }
}
