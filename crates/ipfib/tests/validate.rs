//! The engines' structural validators pass on everything the library
//! builds: edge tables and random tables for every engine, layout and
//! kernel, and updatable Poptries after long random sequences of the slot
//! rebuilds and slot copies of a two-copy scheme (the one the dynamic FIB
//! used before its single shared copy, `engine/poptrie/versioned.rs`,
//! which the FIB tests validate after every publication): the spare copies
//! the slots it lags behind by from the current side and rebuilds the
//! slots changed since from the route table, then becomes current. Each step is also checked against a
//! fresh compile of the route table. (That the validators catch
//! corruption is tested next to them, where a structure can be corrupted.)

use ipfib::addr::Addr;
use ipfib::engine::planb::KERNELS as PLANB_KERNELS;
use ipfib::engine::planb::{PlanB, PlanBOptions};
use ipfib::engine::poptrie::{
    Chunks, FlatPoptrie, Node, Node32, Poptrie, PoptrieOptions, Updatable, KERNELS,
};
use ipfib::engine::Family;
use ipfib::gen::{synthetic_v4, synthetic_v6, uniform_trace, Rng};
use ipfib::intervals::{compile, Intervals};
use ipfib::prefix::Prefix;
use ipfib::route_table::RouteTable;

fn intervals<A: Addr>(routes: &[&str]) -> Intervals<A> {
    let t: RouteTable<A, u32> = routes
        .iter()
        .enumerate()
        .map(|(i, r)| (r.parse().unwrap(), i as u32))
        .collect();
    compile(t.iter_indices())
}

/// Interval starts +-1 and a few random addresses.
fn probes<A: Addr>(iv: &Intervals<A>) -> Vec<A> {
    let mut q: Vec<A> = uniform_trace(64, 1);
    q.extend([A::ZERO, A::MAX]);
    for &s in &iv.starts {
        q.push(s);
        q.extend(s.checked_pred());
        q.extend(s.checked_succ());
    }
    q
}

/// Build `iv` with every engine, layout, kernel and a spread of `s`;
/// each must validate and answer as `iv` does.
fn all_engines_validate<A: Family>(iv: &Intervals<A>, ctx: &str) {
    let q = probes(iv);
    let want: Vec<u32> = q.iter().map(|&a| iv.resolve(a)).collect();
    let check = |name: String, got: Vec<u32>, valid: Result<(), String>| {
        assert_eq!(valid, Ok(()), "{ctx}: {name}");
        assert_eq!(got, want, "{ctx}: {name}");
    };
    // The largest `s` (2^24 entries) once, with the detected kernels.
    let with_max = |k: bool, s: &[u8]| [s, if k { &[24][..] } else { &[] }].concat();
    for kernel in PLANB_KERNELS.supported() {
        for s in with_max(kernel == PLANB_KERNELS.detect(), &[1, 8, 16]) {
            let opts = PlanBOptions {
                kernel: Some(kernel),
                direct_bits: Some(s),
                sub_min_keys: Some(if s == 1 { 17 } else { usize::MAX }),
            };
            let e = PlanB::build(iv, &opts).unwrap();
            let got = q.iter().map(|&a| e.lookup(a)).collect();
            check(format!("planb {kernel} s={s}"), got, e.validate());
        }
    }
    for kernel in KERNELS.supported() {
        for s in with_max(kernel == KERNELS.detect(), &[0, 1, 16]) {
            for leafvec in [true, false] {
                if !leafvec && s > 16 {
                    continue; // basic leaves: the 2^s table adds nothing new
                }
                let opts = PoptrieOptions {
                    direct_bits: Some(s),
                    leafvec,
                    kernel: Some(kernel),
                };
                let e = Poptrie::<A, Node>::build(iv, &opts).unwrap();
                let got = q.iter().map(|&a| e.lookup(a)).collect();
                check(format!("poptrie {opts:?}"), got, e.validate());
                let e = Poptrie::<A, Node32>::build(iv, &opts).unwrap();
                let got = q.iter().map(|&a| e.lookup(a)).collect();
                check(format!("poptrie32 {opts:?}"), got, e.validate());
            }
            let opts = PoptrieOptions {
                direct_bits: Some(s),
                leafvec: true,
                kernel: Some(kernel),
            };
            for share in [501, 999] {
                let e = FlatPoptrie::build_with_share(iv, &opts, share).unwrap();
                let got = q.iter().map(|&a| e.lookup(a)).collect();
                check(format!("flat {opts:?} {share}"), got, e.validate());
            }
            let u = Updatable::build(iv, &opts).unwrap();
            let got = q.iter().map(|&a| u.trie().lookup(a)).collect();
            check(format!("updatable {opts:?}"), got, u.validate());
        }
    }
}

#[test]
fn edge_tables_validate() {
    let v4: &[&[&str]] = &[
        &[],
        &["0.0.0.0/0"],
        &["0.0.0.0/32", "255.255.255.255/32"],
        &["0.0.0.0/0", "255.255.255.255/32", "0.0.0.0/32"],
        &["10.0.0.0/25", "10.0.0.128/25", "10.0.1.0/24"],
        &["10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.1.2.3/32"],
        &["128.0.0.0/1", "0.0.0.0/1"],
    ];
    for routes in v4 {
        all_engines_validate(&intervals::<u32>(routes), &format!("{routes:?}"));
    }
    let v6: &[&[&str]] = &[
        &[],
        &["::/0"],
        &["::/128", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"],
        &[
            "2001:db8::/32",
            "2001:db8::/64",
            "2001:db8::1/128",
            "2001:db8::2/127",
        ],
        &["2001:db8::/65", "2001:db8:0:0:8000::/65", "2001:db9::/32"],
        &["::/1", "8000::/1", "fe80::/10"],
    ];
    for routes in v6 {
        all_engines_validate(&intervals::<u128>(routes), &format!("{routes:?}"));
    }
}

#[test]
fn random_tables_validate() {
    for seed in 1..=3 {
        let t: RouteTable<u32, u32> = synthetic_v4(3000, seed).into_iter().collect();
        all_engines_validate(&compile(t.iter_indices()), &format!("v4 seed {seed}"));
        let t: RouteTable<u128, u32> = synthetic_v6(3000, seed).into_iter().collect();
        all_engines_validate(&compile(t.iter_indices()), &format!("v6 seed {seed}"));
    }
}

/// A random prefix, most of them inside `near` so that updates pile up in
/// a few slots (and their arenas fill, split and coalesce).
fn random_prefix<A: Addr>(rng: &mut Rng, near: A) -> Prefix<A> {
    let bits = A::BITS as u64;
    let len = rng.below(bits + 1) as u8;
    let addr = if rng.below(4) == 0 {
        rng.addr::<A>()
    } else {
        // The top 12 bits of `near`, the rest random.
        let keep = u128::MAX << (128 - 12) >> (128 - bits);
        A::from_u128_truncate((near.to_u128() & keep) | (rng.addr::<A>().to_u128() & !keep))
    };
    Prefix::new_masked(addr, len).unwrap()
}

fn updates_validate<A: Chunks + Addr>(s: u8, rounds: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let near: A = rng.addr();
    let mut routes: RouteTable<A, u32> = RouteTable::new();
    for _ in 0..200 {
        let p = random_prefix(&mut rng, near);
        routes.insert(p, rng.below(50) as u32).unwrap();
    }
    let opts = PoptrieOptions {
        direct_bits: Some(s),
        ..Default::default()
    };
    let fresh = |routes: &RouteTable<A, u32>| {
        Updatable::build(&compile(routes.iter_indices()), &opts).unwrap()
    };
    let mut current = fresh(&routes);
    let mut spare = current.duplicate();
    let mut lag: Vec<usize> = Vec::new();
    let (mut copies, mut rebuilds, mut full) = (0, 0, 0);
    for round in 0..rounds {
        // Change a few routes; every slot they touch is dirty.
        let mut dirty: Vec<usize> = Vec::new();
        for _ in 0..1 + rng.below(6) {
            let p = random_prefix(&mut rng, near);
            if rng.below(3) == 0 {
                routes.remove(&p);
            } else {
                routes.insert(p, rng.below(50) as u32).unwrap();
            }
            let first = p.addr().direct_index(s as u32);
            let count = 1usize << (s as u32).saturating_sub(u32::from(p.len()));
            dirty.extend(first..first + count);
        }
        dirty.sort_unstable();
        dirty.dedup();
        let mut ok = true;
        for &slot in lag.iter().filter(|sl| dirty.binary_search(sl).is_err()) {
            copies += 1;
            ok = ok && spare.copy_slot(slot, &current).is_ok();
        }
        for &slot in &dirty {
            rebuilds += 1;
            ok = ok
                && spare
                    .replace_slot(slot, &routes.slot_intervals(slot as u32, s as u32))
                    .unwrap()
                    .is_ok();
        }
        if !ok {
            full += 1;
            spare = fresh(&routes);
        }
        let ctx = format!("s={s} seed={seed} round {round}");
        assert_eq!(spare.validate(), Ok(()), "{ctx}: updated side");
        assert_eq!(current.validate(), Ok(()), "{ctx}: current side");
        let iv = compile(routes.iter_indices());
        for a in probes(&iv) {
            assert_eq!(spare.trie().lookup(a), iv.resolve(a), "{ctx}: {a:?}");
        }
        std::mem::swap(&mut spare, &mut current);
        lag = dirty;
    }
    // With s = 0 the one slot is dirty every round: nothing to copy.
    let counts = format!("copies {copies}, rebuilds {rebuilds}, full {full}");
    assert!(rebuilds > 0 && (s == 0 || copies > 0), "{counts}");
}

#[test]
fn updated_poptries_validate() {
    for (s, seed) in [(0, 1), (4, 2), (8, 3), (16, 4)] {
        updates_validate::<u32>(s, 200, seed);
        updates_validate::<u128>(s, 200, seed + 100);
    }
}
