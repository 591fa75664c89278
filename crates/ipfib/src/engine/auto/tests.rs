//! `auto`: the shape count, the choice and its reuse, calibration.

use super::calibrate::{pick_best, samples};
use super::*;
use crate::engine::poptrie::{Node32, Poptrie, PoptrieOptions};
use crate::intervals::compile;
use crate::prefix::Prefix;

fn iv4(routes: &[&str]) -> Intervals<u32> {
    crate::intervals::of_routes(routes)
}

/// Intervals of `routes` (any order), payload = rank in prefix order.
fn iv<A: Family>(routes: impl IntoIterator<Item = Prefix<A>>) -> Intervals<A> {
    let mut ps: Vec<Prefix<A>> = routes.into_iter().collect();
    ps.sort();
    ps.dedup();
    compile(ps.into_iter().enumerate().map(|(i, p)| (p, i as u32)))
}

#[test]
fn trie_nodes_counts_unaligned_prefixes_per_level() {
    // 10.0.0.0/8: aligned at /18, so no node. 10.0.0.0/20 needs one
    // node below the /18 slot 10.0.0.0/18 (level 18); with k = 6 the
    // next level is 24, where /20's boundaries (10.0.0.0 and
    // 10.0.16.0) are aligned: one node in all.
    assert_eq!(trie_nodes(&iv4(&["10.0.0.0/8"]), 18, 6), 0);
    assert_eq!(trie_nodes(&iv4(&["10.0.0.0/20"]), 18, 6), 1);
    // A /32 at 10.0.0.1 needs a node at /18, /24 and /30.
    assert_eq!(trie_nodes(&iv4(&["10.0.0.1/32"]), 18, 6), 3);
    // Two /32s in one /30 share every node.
    assert_eq!(trie_nodes(&iv4(&["10.0.0.1/32", "10.0.0.2/32"]), 18, 6), 3);
}

#[test]
fn trie_nodes_matches_the_unfocused_poptrie() {
    // The estimate is exact for the unfocused 64-ary and 32-ary builds.
    let table = crate::gen::synthetic_v4(5000, 7);
    let iv = iv(table.iter().map(|r| r.0));
    for s in [0u8, 8, 16, 18] {
        let o = PoptrieOptions {
            direct_bits: Some(s),
            ..PoptrieOptions::default()
        };
        let p64 = Poptrie::<u32>::build_focused(&iv, &o, false).unwrap();
        assert_eq!(
            trie_nodes(&iv, s as u32, 6),
            p64.internal_nodes() as u64,
            "s={s}"
        );
        let p32 = Poptrie::<u32, Node32>::build_focused(&iv, &o, false).unwrap();
        assert_eq!(
            trie_nodes(&iv, s as u32, 5),
            p32.internal_nodes() as u64,
            "s={s}"
        );
    }
}

#[test]
fn pick_best_takes_the_best_worst_case() {
    // 0 is fastest on matched but poor on uniform; 1 is within 10% on
    // both; 2 is fastest on uniform but poor on matched.
    let rates = [[100.0, 50.0], [92.0, 95.0], [60.0, 100.0]];
    assert_eq!(pick_best(&rates), 1);
    // Ties go to the earlier candidate.
    assert_eq!(pick_best(&[[1.0, 1.0], [1.0, 1.0]]), 0);
    assert_eq!(pick_best(&[[1.0, 2.0]]), 0);
}

#[test]
fn two_engines_answer_alike_single_and_batch() {
    let table = crate::gen::synthetic_v6(3000, 11);
    let iv = iv(table.iter().map(|r| r.0));
    let opts = AutoOptions::default();
    let e = AutoEngine {
        single: Built::build(&iv, (Kind::PlanB, None), &opts).unwrap(),
        batch: Some(Built::build(&iv, (Kind::Flat, Some(DIRECT_BITS)), &opts).unwrap()),
        forced: false,
        choice: Choice {
            single: (Kind::PlanB, None),
            batch: (Kind::Flat, Some(DIRECT_BITS)),
            reason: String::new(),
            intervals: iv.len(),
        },
    };
    e.validate().unwrap();
    assert_eq!(e.choice().label(), "planb/poptrie-flat:18");
    assert!(e.name().starts_with("auto:planb["), "{}", e.name());
    let [matched, uniform] = samples(&iv);
    for addrs in [matched, uniform] {
        let mut out = vec![0; addrs.len()];
        e.lookup_batch::<32>(&addrs, &mut out);
        for (&a, &o) in addrs.iter().zip(&out) {
            assert_eq!(e.lookup(a), iv.resolve(a));
            assert_eq!(o, iv.resolve(a));
        }
    }
}

#[test]
fn sparse_long_prefixes_get_planb_without_building_a_trie() {
    // One /64 per random /32 inside 2000::/3: every boundary needs its
    // own chain of 32-ary nodes below /18.
    let mut rng = crate::rng::Rng::new(3);
    let routes: Vec<(Prefix<u128>, u32)> = (0..2000)
        .map(|i| {
            let a = (0x2000u128 << 112) | (rng.next_u128() >> 3);
            (Prefix::new(a & !((1u128 << 64) - 1), 64).unwrap(), i)
        })
        .collect();
    let iv = iv(routes.iter().map(|r| r.0));
    let shape = Shape::of(&iv);
    assert!(
        shape.nodes_per_interval() > MAX_NODES_PER_INTERVAL,
        "{shape:?}"
    );
    let e = AutoEngine::build(&iv, &AutoOptions::default()).unwrap();
    assert_eq!(e.choice().single, (Kind::PlanB, None));
    assert_eq!(e.choice().batch, (Kind::PlanB, None));
    assert!(e.choice().reason.contains("sparse long prefixes"));
}

#[test]
fn real_shaped_tables_admit_every_candidate() {
    let v4 = iv(crate::gen::synthetic_v4(20_000, 5).iter().map(|r| r.0));
    let shape = Shape::of(&v4);
    assert_eq!(decide(&shape).0, CANDIDATES.to_vec(), "{shape:?}");
}

#[test]
fn untimed_choice_is_the_family_default() {
    let t = crate::gen::synthetic_v4(2000, 5);
    let iv = iv(t.iter().map(|r| r.0));
    let o = AutoOptions {
        calibrate: false,
        ..AutoOptions::default()
    };
    let e = AutoEngine::build(&iv, &o).unwrap();
    assert_eq!(e.choice().label(), "poptrie:18");
    // Malformed intervals are refused, calibrated or not.
    let bad = Intervals {
        starts: vec![0u32, 5, 5],
        payloads: vec![0, 1, 2],
    };
    assert!(AutoEngine::build(&bad, &o).is_err());
    assert!(AutoEngine::build(&bad, &AutoOptions::default()).is_err());
}

#[test]
fn calibrated_builds_answer_right_and_reuse_repeats_the_choice() {
    let t = crate::gen::synthetic_v4(20_000, 9);
    let iv = iv(t.iter().map(|r| r.0));
    assert!(iv.len() >= MIN_CALIBRATED_INTERVALS);
    let e = AutoEngine::build(&iv, &AutoOptions::default()).unwrap();
    assert!(e.choice().reason.contains("calibrated"), "{}", e.choice());
    assert_eq!(e.choice().intervals, iv.len());
    e.validate().unwrap();
    let [matched, uniform] = samples(&iv);
    let again = AutoEngine::build(&iv, &AutoOptions::default().reuse(e.choice())).unwrap();
    assert_eq!(again.choice().label(), e.choice().label());
    assert!(again.choice().reason.contains("reused"));
    for addrs in [matched, uniform] {
        let mut out = vec![0; addrs.len()];
        for engine in [&e, &again] {
            engine.lookup_batch::<16>(&addrs, &mut out);
            for (&a, &o) in addrs.iter().zip(&out) {
                assert_eq!(engine.lookup(a), iv.resolve(a));
                assert_eq!(o, iv.resolve(a));
            }
        }
    }
    assert!(e.choice().still_fits(iv.len() * 2));
    assert!(!e.choice().still_fits(iv.len() * 2 + 1));
    assert!(!e.choice().still_fits(iv.len() / 2 - 1));
}

/// What the bindings do per change: reuse the previous choice while
/// the table is within a factor of two of the one that was measured.
fn grow(routes: &[Prefix<u32>], steps: &[usize]) -> Vec<Choice> {
    let mut prev: Option<Choice> = None;
    let mut seen = Vec::new();
    for &n in steps {
        let iv = iv(routes[..n].iter().copied());
        let mut o = AutoOptions::default();
        if let Some(c) = prev.as_ref().filter(|c| c.still_fits(iv.len())) {
            o = o.reuse(c);
        }
        let e = AutoEngine::build(&iv, &o).unwrap();
        for a in samples(&iv).concat() {
            assert_eq!(e.lookup(a), iv.resolve(a));
        }
        seen.push(e.choice().clone());
        prev = Some(e.choice().clone());
    }
    seen
}

#[test]
fn a_growing_table_is_chosen_for_again_once_it_has_doubled() {
    let routes: Vec<Prefix<u32>> = crate::gen::synthetic_v4(60_000, 2)
        .into_iter()
        .map(|r| r.0)
        .collect();
    // 10% steps from 12K routes to 60K.
    let mut steps = vec![12_000usize];
    while *steps.last().unwrap() < 60_000 {
        steps.push((steps.last().unwrap() * 11 / 10).min(60_000));
    }
    let seen = grow(&routes, &steps);
    assert!(seen[0].reason.contains("calibrated"), "{}", seen[0]);
    assert!(seen[1].reason.starts_with("reused"), "{}", seen[1]);
    // Reuse keeps the measured table's count, so somewhere before the
    // table has grown 2x past it, it is measured again.
    let mut measured = seen[0].intervals;
    for c in &seen[1..] {
        if c.reason.starts_with("reused") {
            assert_eq!(c.intervals, measured, "{c}");
        } else {
            assert!(c.reason.contains("calibrated"), "{c}");
            measured = c.intervals;
        }
    }
    let recalibrated = seen[1..]
        .iter()
        .filter(|c| !c.reason.starts_with("reused"))
        .count();
    assert!(recalibrated >= 1, "{seen:?}");
}

#[test]
fn a_reused_trie_gives_way_when_the_shape_turns_sparse() {
    // Start dense (real-shaped), then add sparse IPv6 /64s until a
    // trie would need more than MAX_NODES_PER_INTERVAL per interval.
    let dense: Vec<Prefix<u128>> = crate::gen::synthetic_v6(3000, 4)
        .into_iter()
        .map(|r| r.0)
        .collect();
    let mut rng = crate::rng::Rng::new(8);
    let sparse: Vec<Prefix<u128>> = (0..20_000)
        .map(|_| {
            let a = (0x2000u128 << 112) | (rng.next_u128() >> 3);
            Prefix::new(a & !((1u128 << 64) - 1), 64).unwrap()
        })
        .collect();
    let first = AutoEngine::build(&iv(dense.iter().copied()), &AutoOptions::default()).unwrap();
    assert_ne!(first.choice().single.0, Kind::PlanB);
    // Reused within a factor of two would keep the trie; the shape
    // verdict overrides it.
    let mixed: Vec<Prefix<u128>> = dense.iter().chain(&sparse[..3000]).copied().collect();
    let mixed_iv = iv(mixed);
    assert!(Shape::of(&mixed_iv).nodes_per_interval() > MAX_NODES_PER_INTERVAL);
    let o = AutoOptions::default().reuse(first.choice());
    let e = AutoEngine::build(&mixed_iv, &o).unwrap();
    assert_eq!(e.choice().single, (Kind::PlanB, None), "{}", e.choice());
    assert!(e.choice().reason.contains("sparse long prefixes"));
}

#[test]
fn named_engines_keep_their_own_name() {
    let iv = iv(crate::gen::synthetic_v4(100, 1).iter().map(|r| r.0));
    let named = AutoOptions {
        force: Some((Kind::PlanB, None)),
        ..AutoOptions::default()
    };
    let e = AutoEngine::build(&iv, &named).unwrap();
    assert!(e.name().starts_with("planb["), "{}", e.name());
    let chosen = AutoEngine::build(&iv, &AutoOptions::default()).unwrap();
    assert!(
        chosen.name().starts_with("auto:poptrie["),
        "{}",
        chosen.name()
    );
}
