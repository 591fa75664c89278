//! Poptrie-specific checks beyond the shared differential suite
//! (`differential.rs`, which runs every Poptrie layout against the oracle):
//! exact node and leaf counts on hand-built tables (leafvec and hole
//! punching), route aggregation never changing an answer, more distinct
//! values than 16-bit leaves could name, and typed build errors.

use ipfib::engine::poptrie::{Poptrie, PoptrieError, PoptrieOptions};
use ipfib::engine::Engine;
use ipfib::gen::{matched_trace, synthetic_v4, synthetic_v6, uniform_trace};
use ipfib::intervals::{compile, Intervals, NO_ROUTE};
use ipfib::prefix::Prefix;
use ipfib::route_table::RouteTable;
use proptest::prelude::*;

fn p4(s: &str) -> Prefix<u32> {
    s.parse().unwrap()
}

fn opts(s: u8, leafvec: bool) -> PoptrieOptions {
    PoptrieOptions {
        direct_bits: Some(s),
        leafvec,
        kernel: None,
    }
}

fn build(routes: &[(Prefix<u32>, u32)], s: u8, leafvec: bool) -> Poptrie<u32> {
    let t: RouteTable<u32, u32> = routes.iter().copied().collect();
    let iv = compile(t.iter().map(|(p, v)| (p, *v)));
    Poptrie::<_>::build(&iv, &opts(s, leafvec)).unwrap()
}

#[test]
fn counts_for_one_slash_8() {
    // s = 0: the root reads bits 0-5; 10.0.0.0/8 lies in slot 2 (8.0.0.0/6),
    // half of it, so slot 2 is internal; its child reads bits 6-11, where
    // slots 32-47 are 10.0.0.0/8 and the rest no route.
    let r = [(p4("10.0.0.0/8"), 7)];
    let e = build(&r, 0, true);
    assert_eq!((e.internal_nodes(), e.leaves()), (2, 1 + 3));
    assert_eq!(e.direct_entries(), 1);
    assert_eq!(e.footprint_bytes(), 4 + 2 * 24 + 4 * 4);
    // Basic: every leaf slot stores a leaf (63 in the root, 64 in the child).
    let basic = build(&r, 0, false);
    assert_eq!((basic.internal_nodes(), basic.leaves()), (2, 63 + 64));
    for e in [&e, &basic] {
        assert_eq!(e.lookup(0x0a00_0000), 7);
        assert_eq!(e.lookup(0x0aff_ffff), 7);
        assert_eq!(e.lookup(0x09ff_ffff), NO_ROUTE);
        assert_eq!(e.lookup(0x0b00_0000), NO_ROUTE);
        assert_eq!(e.lookup(u32::MAX), NO_ROUTE);
    }
    // s = 18: a /8 is 64 whole buckets, all direct leaves: no node at all.
    // Every boundary (10.0.0.0, 11.0.0.0) lies in 10.0.0.0/8, the focus
    // prefix: the direct table covers it alone, 2^(18 - 8) entries, and
    // addresses outside it are answered from the two outside entries.
    let d = build(&r, 18, true);
    assert_eq!(d.focus_bits(), 8);
    assert_eq!(
        (d.internal_nodes(), d.leaves(), d.direct_entries()),
        (0, 0, 1 << 10)
    );
    assert_eq!(d.lookup(0x0a12_3456), 7);
    assert_eq!(d.lookup(0x09ff_ffff), NO_ROUTE);
    assert_eq!(d.lookup(0x0b00_0000), NO_ROUTE);
    assert_eq!(d.lookup(0), NO_ROUTE);
    assert_eq!(d.lookup(u32::MAX), NO_ROUTE);
}

#[test]
fn holes_under_internal_children_do_not_break_runs() {
    // Root slots: 0 = A, 1 = internal (4.0.0.0/8 inside 4.0.0.0/6), 2-63 =
    // A. Slot 2's leaf equals slot 0's across the hole: one root leaf.
    let r = [(p4("0.0.0.0/0"), 1), (p4("4.0.0.0/8"), 2)];
    let e = build(&r, 0, true);
    // Root: 1 leaf; child: 4.0/8 (slots 0-15) and the rest (16-63): 2.
    assert_eq!((e.internal_nodes(), e.leaves()), (2, 3));
    assert_eq!(e.lookup(0x0000_0001), 1);
    assert_eq!(e.lookup(0x0400_0001), 2);
    assert_eq!(e.lookup(0x0500_0000), 1);
    assert_eq!(e.lookup(0x0800_0000), 1);
    assert_eq!(e.lookup(u32::MAX), 1);
}

#[test]
fn deepest_level_is_partial_and_exact() {
    // IPv6, s = 18: levels at 18, 24, ..., 126; the last reads bits
    // 126-127 and four zeros of padding. Host routes at the very top and
    // /127 neighbours must still resolve exactly.
    let p6 = |s: &str| s.parse::<Prefix<u128>>().unwrap();
    let routes = [
        (p6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"), 1),
        (p6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/127"), 2),
        (p6("::/128"), 3),
        (p6("::2/127"), 4),
    ];
    let t: RouteTable<u128, u32> = routes.iter().copied().collect();
    let iv = compile(t.iter().map(|(p, v)| (p, *v)));
    for s in [0, 16, 18] {
        for leafvec in [true, false] {
            let e = Poptrie::<_>::build(&iv, &opts(s, leafvec)).unwrap();
            let want = [
                (u128::MAX, 1),
                (u128::MAX - 1, NO_ROUTE),
                (u128::MAX - 2, 2),
                (u128::MAX - 3, 2),
                (u128::MAX - 4, NO_ROUTE),
                (0, 3),
                (1, NO_ROUTE),
                (2, 4),
                (3, 4),
                (4, NO_ROUTE),
            ];
            for (a, w) in want {
                assert_eq!(e.lookup(a), w, "s={s} leafvec={leafvec} addr={a:#x}");
            }
        }
    }
}

/// Route payloads (no aggregation) resolved to values must equal value
/// payloads (aggregation) everywhere, and aggregation never adds nodes or
/// leaves.
fn aggregation_preserves<A: ipfib::engine::Family>(
    routes: Vec<(Prefix<A>, u32)>,
    queries: &[A],
) -> Result<(), TestCaseError> {
    let t: RouteTable<A, u32> = routes.into_iter().collect();
    let ordinals: Vec<u32> = t.iter().map(|(_, v)| *v).collect();
    let by_route: Intervals<A> = compile(t.iter().enumerate().map(|(i, (p, _))| (p, i as u32)));
    let by_value: Intervals<A> = compile(t.iter().map(|(p, v)| (p, *v)));
    for s in [0, 16, 18] {
        let routes = Poptrie::<_>::build(&by_route, &opts(s, true)).unwrap();
        let values = Poptrie::<_>::build(&by_value, &opts(s, true)).unwrap();
        prop_assert!(values.internal_nodes() <= routes.internal_nodes());
        prop_assert!(values.leaves() <= routes.leaves());
        for &a in queries {
            let r = routes.lookup(a);
            let r = if r == NO_ROUTE {
                NO_ROUTE
            } else {
                ordinals[r as usize]
            };
            prop_assert_eq!(r, values.lookup(a), "s={} at {:?}", s, a);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(ipfib::check::cases(64)))]

    #[test]
    fn aggregation_never_changes_an_answer(seed in any::<u64>(), n in 1usize..400) {
        // Few values, so neighbours often share one and merge.
        let v4: Vec<_> = synthetic_v4(n, seed).into_iter().map(|(p, v)| (p, v % 3)).collect();
        let v6: Vec<_> = synthetic_v6(n, seed).into_iter().map(|(p, v)| (p, v % 3)).collect();
        let pf4: Vec<_> = v4.iter().map(|r| r.0).collect();
        let pf6: Vec<_> = v6.iter().map(|r| r.0).collect();
        let mut q4 = uniform_trace::<u32>(2_000, seed);
        q4.extend(matched_trace(&pf4, 2_000, seed));
        q4.extend(ipfib::check::boundary_queries(pf4.iter().copied()));
        let mut q6 = uniform_trace::<u128>(2_000, seed);
        q6.extend(matched_trace(&pf6, 2_000, seed));
        q6.extend(ipfib::check::boundary_queries(pf6.iter().copied()));
        aggregation_preserves(v4, &q4)?;
        aggregation_preserves(v6, &q6)?;
    }
}

#[test]
fn more_distinct_values_than_sixteen_bit_leaves() {
    // 100,000 adjacent /24s with distinct values, nested in /16s with
    // values of their own: the reference C code's 16-bit leaf indices
    // would wrap at 65,536.
    let mut routes: Vec<(Prefix<u32>, u32)> = Vec::new();
    for i in 0..100_000u32 {
        routes.push((Prefix::new(0x0100_0000 + (i << 8), 24).unwrap(), i));
    }
    for j in 0..(100_000 >> 8) {
        routes.push((
            Prefix::new(0x0100_0000 + (j << 16), 16).unwrap(),
            1_000_000 + j,
        ));
    }
    for (s, leafvec) in [(0, true), (16, true), (18, true), (18, false)] {
        let e = build(&routes, s, leafvec);
        assert!(e.leaves() >= 100_000, "s={s}: {} leaves", e.leaves());
        for i in 0..100_000u32 {
            let a = 0x0100_0000 + (i << 8);
            assert_eq!(e.lookup(a), i, "s={s} leafvec={leafvec}");
            assert_eq!(e.lookup(a | 0xff), i, "s={s} leafvec={leafvec}");
        }
        let mut out = vec![0; 100_000];
        let addrs: Vec<u32> = (0..100_000u32).map(|i| 0x0100_0080 + (i << 8)).collect();
        e.lookup_batch::<16>(&addrs, &mut out);
        assert!(out.iter().enumerate().all(|(i, &v)| v == i as u32));
    }
}

#[test]
fn typed_errors_instead_of_panics() {
    let iv = compile([(p4("10.0.0.0/8"), 0x7fff_ffff)]);
    assert_eq!(
        Poptrie::<_>::build(&iv, &PoptrieOptions::default()).err(),
        Some(PoptrieError::PayloadTooLarge(0x7fff_ffff))
    );
    let iv = compile([(p4("10.0.0.0/8"), 0x7fff_fffe)]);
    let e = Poptrie::<_>::build(&iv, &PoptrieOptions::default()).unwrap();
    assert_eq!(e.lookup(0x0a00_0001), 0x7fff_fffe);
    assert_eq!(
        Poptrie::<u32>::build(&iv, &opts(25, true)).err(),
        Some(PoptrieError::DirectBits(25))
    );
    for bad in [
        Intervals {
            starts: vec![],
            payloads: vec![],
        },
        Intervals {
            starts: vec![0u32],
            payloads: vec![],
        },
        Intervals {
            starts: vec![5u32],
            payloads: vec![1],
        },
        Intervals {
            starts: vec![0u32, 9, 9],
            payloads: vec![1, 2, 3],
        },
    ] {
        assert!(matches!(
            Poptrie::<_>::build(&bad, &PoptrieOptions::default()),
            Err(PoptrieError::InvalidIntervals(_))
        ));
    }
    assert_eq!(
        "sse9".parse::<ipfib::engine::poptrie::Kernel>().err(),
        Some(ipfib::engine::kernel::UnknownKernel("sse9".into()))
    );
}

#[test]
fn engine_trait_names_the_layout() {
    let e = build(&[(p4("10.0.0.0/8"), 1)], 16, false);
    let name = Engine::<u32>::name(&e);
    assert!(
        name.starts_with("poptrie[s=16,") && name.ends_with(",basic]"),
        "{name}"
    );
}
