//! Differential property tests: random tables biased to the edge cases that
//! break LPM implementations, every engine variant against the route table
//! and the brute-force oracle, queried at random addresses and at every
//! interval boundary and boundary ±1.

use ipfib::check::{boundary_queries, check_engines};
use ipfib::compiled::Compiled;
use ipfib::engine::auto::AutoOptions;
use ipfib::engine::Family;
use ipfib::gen::{matched_trace, synthetic_v4, synthetic_v6, uniform_trace};
use ipfib::intervals::compile;
use ipfib::oracle::Oracle;
use ipfib::prefix::Prefix;
use ipfib::route_table::RouteTable;
use proptest::prelude::*;

/// Prefixes built as `base + k * 2^(BITS - unit)` masked to `len`: a small
/// pool of bases (zero, all ones, a few fixed, random) yields nesting; steps
/// of a shorter unit than the length yield adjacent prefixes of different
/// lengths (a shorter one starting exactly where a longer one ends).
fn arb_v4() -> impl Strategy<Value = Prefix<u32>> {
    let len = prop_oneof![
        Just(0u8),
        Just(1),
        Just(8),
        Just(16),
        Just(24),
        Just(31),
        Just(32),
        0u8..=32
    ];
    let base = prop_oneof![
        Just(0u32),
        Just(u32::MAX),
        Just(0x0a00_0000),
        Just(0x8000_0000),
        any::<u32>()
    ];
    (base, len, 0u8..=32, 0u32..4).prop_map(|(base, len, unit, k)| {
        let unit = unit.min(len) as u32;
        let step = 1u32.checked_shl(32 - unit).unwrap_or(0);
        Prefix::new_masked(base.wrapping_add(step.wrapping_mul(k)), len).unwrap()
    })
}

fn arb_v6() -> impl Strategy<Value = Prefix<u128>> {
    let len = prop_oneof![
        Just(0u8),
        Just(1),
        Just(16),
        Just(32),
        Just(48),
        Just(63),
        Just(64),
        Just(65),
        Just(96),
        Just(127),
        Just(128),
        0u8..=128
    ];
    let base = prop_oneof![
        Just(0u128),
        Just(u128::MAX),
        Just(0xffffu128 << 112),
        Just(0x2001_0db8u128 << 96),
        Just(0xffffu128 << 32),
        any::<u128>(),
        any::<u64>().prop_map(|h| (h as u128) << 64),
    ];
    (base, len, 0u8..=128, 0u128..4).prop_map(|(base, len, unit, k)| {
        let unit = unit.min(len) as u32;
        let step = 1u128.checked_shl(128 - unit).unwrap_or(0);
        Prefix::new_masked(base.wrapping_add(step.wrapping_mul(k)), len).unwrap()
    })
}

/// Insert in order (later duplicates win) into the route table and oracle,
/// then compare every engine on boundaries and extra random queries.
fn check_routes<A: Family>(routes: &[(Prefix<A>, u32)], extra: &[A]) -> Result<(), TestCaseError> {
    let mut table = RouteTable::new();
    for (p, v) in routes {
        table.insert(*p, *v).unwrap();
    }
    let oracle = Oracle::new(routes.iter().copied());
    let mut q = boundary_queries(routes.iter().map(|r| r.0));
    q.extend_from_slice(extra);
    check_engines(&table, Some(&oracle), &q).map_err(|m| TestCaseError::fail(m.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(ipfib::check::cases(300)))]

    #[test]
    fn v4_engines_agree_with_oracle(
        routes in prop::collection::vec((arb_v4(), 0u32..4), 0..40),
        extra in prop::collection::vec(any::<u32>(), 0..64),
    ) {
        check_routes(&routes, &extra)?;
    }

    #[test]
    fn v6_engines_agree_with_oracle(
        routes in prop::collection::vec((arb_v6(), 0u32..4), 0..40),
        extra in prop::collection::vec(any::<u128>(), 0..64),
    ) {
        check_routes(&routes, &extra)?;
    }

    #[test]
    fn insertion_order_does_not_matter(
        routes in prop::collection::btree_map(arb_v6(), 0u32..4, 0..30)
            .prop_map(|m| m.into_iter().collect::<Vec<_>>())
            .prop_shuffle(),
    ) {
        let sorted: RouteTable<u128, u32> = {
            let mut r = routes.clone();
            r.sort();
            r.into_iter().collect()
        };
        let shuffled: RouteTable<u128, u32> = routes.iter().copied().collect();
        let a: Vec<_> = sorted.iter().map(|(p, v)| (p, *v)).collect();
        let b: Vec<_> = shuffled.iter().map(|(p, v)| (p, *v)).collect();
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(compile(sorted.iter_indices().map(|(p, i)| (p, *sorted.values().get(i).unwrap()))),
                        compile(shuffled.iter_indices().map(|(p, i)| (p, *shuffled.values().get(i).unwrap()))));
    }

    #[test]
    fn inserts_and_removes_match_oracle(
        ops in prop::collection::vec((arb_v4(), prop::option::of(0u32..3)), 0..80),
        extra in prop::collection::vec(any::<u32>(), 0..32),
    ) {
        // Some(v): insert; None: remove. Removal must restore glue invariants
        // and free values without disturbing other routes.
        let mut table = RouteTable::new();
        let mut oracle = Oracle::default();
        for (p, op) in &ops {
            match op {
                Some(v) => {
                    let old = table.insert(*p, *v).unwrap();
                    let want = oracle.routes().iter().find(|(q, _)| q == p).map(|(_, v)| *v);
                    prop_assert_eq!(old, want);
                    oracle.insert(*p, *v);
                }
                None => prop_assert_eq!(table.remove(p), oracle.remove(p)),
            }
            prop_assert_eq!(table.len(), oracle.routes().len());
        }
        let mut q = boundary_queries(ops.iter().map(|o| o.0));
        q.extend_from_slice(&extra);
        check_engines(&table, Some(&oracle), &q).map_err(|m| TestCaseError::fail(m.to_string()))?;
        let mut all: Vec<_> = oracle.routes().to_vec();
        all.sort();
        let listed: Vec<_> = table.iter().map(|(p, v)| (p, *v)).collect();
        prop_assert_eq!(listed, all);
    }
}

#[test]
fn fixed_edge_cases() {
    let p4 = |s: &str| s.parse::<Prefix<u32>>().unwrap();
    let p6 = |s: &str| s.parse::<Prefix<u128>>().unwrap();
    // Empty table, /0 alone, top and bottom host routes, value 0.
    check_routes::<u32>(&[], &[1, 2]).unwrap();
    check_routes(&[(p4("0.0.0.0/0"), 0)], &[7]).unwrap();
    check_routes(
        &[
            (p4("255.255.255.255/32"), 0),
            (p4("0.0.0.0/32"), 1),
            (p4("0.0.0.0/1"), 0),
            (p4("128.0.0.0/1"), 2),
        ],
        &[],
    )
    .unwrap();
    // The planb-lpm adjacency bug: a shorter prefix starting exactly where a
    // longer one ends.
    check_routes(
        &[
            (p4("10.0.1.0/24"), 1),
            (p4("10.0.2.0/23"), 2),
            (p4("10.0.4.0/22"), 1),
        ],
        &[],
    )
    .unwrap();
    check_routes(
        &[
            (p6("ffff::/16"), 1),
            (p6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"), 2),
            (p6("2001:db8::/64"), 3),
            (p6("2001:db8::1/128"), 4),
            (p6("2001:db8:0:0:8000::/65"), 5),
            (p6("2001:db8:0:1::/64"), 6),
            (p6("::/0"), 0),
        ],
        &[],
    )
    .unwrap();
    // Duplicates: the later one wins.
    let mut t = RouteTable::new();
    t.insert(p4("10.0.0.0/8"), 1).unwrap();
    t.insert(p4("10.0.0.0/8"), 2).unwrap();
    let c = Compiled::build(&t, &AutoOptions::default()).unwrap();
    assert_eq!(c.lookup(0x0a01_0101), Some((p4("10.0.0.0/8"), &2)));
}

/// Larger synthetic tables: deep trees, sub-tables, mixed window and
/// descent paths, many second-stage slots (real tables hold few prefixes
/// past /64, and so does the generator: /65-/128 are added inside every
/// 50th prefix, some with their cover's value, some not).
#[test]
fn synthetic_tables_agree() {
    for (n, seed) in [(3_000usize, 1u64), (40_000, 2)] {
        check_synthetic(synthetic_v4(n, seed), seed);
        let mut v6 = synthetic_v6(n, seed);
        let long: Vec<_> = v6
            .iter()
            .step_by(50)
            .enumerate()
            .flat_map(|(i, &(p, v))| {
                [65u8, 96, 112, 127, 128].map(|len| {
                    // A host part spread over all 128 bits (a 64-bit mix
                    // of `i` in each half), masked to below the cover.
                    let mut r = ipfib::gen::Rng::new(i as u64);
                    let host = r.next_u128();
                    let a = p.addr() | (host & (!0u128).checked_shr(p.len().into()).unwrap_or(0));
                    (
                        Prefix::new_masked(a, len).unwrap(),
                        v + u32::from(len % 2 == 0),
                    )
                })
            })
            .collect();
        v6.extend(long);
        check_synthetic(v6, seed);
    }
}

fn check_synthetic<A: Family>(routes: Vec<(Prefix<A>, u32)>, seed: u64) {
    let small = routes.len() <= 3_000;
    let table: RouteTable<A, u32> = routes.into_iter().collect();
    let prefixes: Vec<_> = table.iter().map(|(p, _)| p).collect();
    let mut q = uniform_trace::<A>(50_000, seed);
    q.extend(matched_trace(&prefixes, 50_000, seed + 1));
    q.extend(boundary_queries(prefixes.iter().copied()));
    let oracle = small.then(|| Oracle::new(table.iter().map(|(p, v)| (p, *v))));
    check_engines(&table, oracle.as_ref(), &q).unwrap();
}

/// Every input the `engines` fuzz target ever failed on (and a few
/// seeds) replays clean: `tests/fuzz_regressions/engines/`.
#[test]
fn engines_fuzz_regressions_replay_clean() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions/engines");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        if let Err(e) = ipfib::check::check_engine_bytes(&bytes) {
            panic!("{}: {e}", path.display());
        }
        n += 1;
    }
    assert!(n > 0, "no regression inputs in {}", dir.display());
}

/// `lookup_batch_par` on 1 to 5 threads (and 0: one per CPU) answers
/// each address as `lookup` does, on inputs long enough for several
/// shares (cut points then fall everywhere: a share of each size), and as
/// the oracle on a sample.
#[test]
fn batch_on_threads_agrees() {
    fn check<A: Family>(routes: Vec<(Prefix<A>, u32)>, seed: u64) {
        let table: RouteTable<A, u32> = routes.into_iter().collect();
        let c = Compiled::build(&table, &AutoOptions::default()).unwrap();
        let oracle = Oracle::new(table.iter().map(|(p, v)| (p, *v)));
        let prefixes: Vec<_> = table.iter().map(|(p, _)| p).collect();
        let mut q = boundary_queries(prefixes.iter().copied());
        q.extend(matched_trace(&prefixes, 150_000, seed));
        q.extend(uniform_trace::<A>(
            5 * ipfib::par::MIN_SHARE + 7 - q.len(),
            seed + 1,
        ));
        let want: Vec<_> = q.iter().map(|&a| c.lookup(a)).collect();
        for (i, &a) in q.iter().enumerate().step_by(17) {
            assert_eq!(
                want[i].map(|(p, v)| (p, *v)),
                oracle.lookup(a).map(|(p, v)| (p, *v))
            );
        }
        for threads in [1, 2, 3, 4, 5, 0] {
            let mut out = vec![u32::MAX - 1; q.len()];
            c.lookup_batch_par::<32>(&q, &mut out, threads);
            for (i, &o) in out.iter().enumerate() {
                assert_eq!(c.route(o), want[i], "threads {threads}, address {i}");
            }
        }
        // A longer `out` is written up to `addrs.len()`.
        let mut out = vec![7u32; q.len() + 3];
        c.lookup_batch_par::<32>(&q, &mut out, 2);
        assert_eq!(&out[q.len()..], &[7, 7, 7]);
    }
    check(synthetic_v4(500, 3), 3);
    check(synthetic_v6(500, 4), 4);
}
