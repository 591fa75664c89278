//! Hand-made `Intervals` that break the shape `intervals::compile`
//! guarantees are refused by every engine's build with a typed error:
//! never a panic, never an engine whose unchecked reads leave its arrays.

use ipfib::addr::Addr;
use ipfib::engine::planb::{BuildError, PlanB};
use ipfib::engine::poptrie::{FlatPoptrie, Node, Node32, Poptrie, PoptrieError, Updatable};
use ipfib::engine::Engine;
use ipfib::intervals::{Intervals, InvalidIntervals};

/// Each malformed shape, with the error `Intervals::validate` names.
fn malformed<A: Addr>() -> Vec<(Intervals<A>, InvalidIntervals)> {
    let a = |v: u128| A::from_u128_truncate(v);
    let iv = |starts: Vec<A>, payloads: Vec<u32>| Intervals { starts, payloads };
    vec![
        // One payload too few: a lookup at the top would read payloads[1].
        (
            iv(vec![A::ZERO, A::MAX], vec![7]),
            InvalidIntervals::LengthMismatch {
                starts: 2,
                payloads: 1,
            },
        ),
        (
            iv(vec![A::ZERO], vec![7, 8]),
            InvalidIntervals::LengthMismatch {
                starts: 1,
                payloads: 2,
            },
        ),
        (iv(vec![], vec![]), InvalidIntervals::Empty),
        (iv(vec![], vec![1]), InvalidIntervals::Empty),
        (iv(vec![a(5)], vec![1]), InvalidIntervals::FirstNotZero),
        (
            iv(vec![a(1), a(9)], vec![1, 2]),
            InvalidIntervals::FirstNotZero,
        ),
        (
            iv(vec![A::ZERO, a(9), a(9)], vec![1, 2, 3]),
            InvalidIntervals::NotIncreasing(2),
        ),
        (
            iv(vec![A::ZERO, a(9), a(4)], vec![1, 2, 3]),
            InvalidIntervals::NotIncreasing(2),
        ),
        (
            iv(vec![A::ZERO, A::ZERO], vec![1, 2]),
            InvalidIntervals::NotIncreasing(1),
        ),
        (
            iv(vec![A::ZERO, A::MAX, a(7)], vec![1, 2, 3]),
            InvalidIntervals::NotIncreasing(2),
        ),
    ]
}

/// Build every malformed shape with engine `E` and hand each error to `is`.
fn refuses<A: Addr, E: Engine<A>>(is: impl Fn(&E::Error, &InvalidIntervals) -> bool) {
    for (iv, want) in malformed::<A>() {
        assert_eq!(iv.validate(), Err(want.clone()), "{iv:?}");
        let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            E::build(&iv, &E::Options::default())
        }));
        match got {
            Err(_) => panic!("{} panicked on {iv:?}", std::any::type_name::<E>()),
            Ok(Ok(e)) => panic!("{} built from {iv:?}", e.name()),
            Ok(Err(err)) => assert!(is(&err, &want), "{iv:?}: {err}"),
        }
    }
}

fn planb(err: &BuildError, want: &InvalidIntervals) -> bool {
    err == &BuildError::InvalidIntervals(want.clone())
}

fn poptrie(err: &PoptrieError, want: &InvalidIntervals) -> bool {
    err == &PoptrieError::InvalidIntervals(want.clone())
}

#[test]
fn planb_refuses_malformed_intervals() {
    refuses::<u32, PlanB<u32>>(planb);
    refuses::<u128, PlanB<u128>>(planb);
}

#[test]
fn poptrie_refuses_malformed_intervals() {
    refuses::<u32, Poptrie<u32, Node>>(poptrie);
    refuses::<u128, Poptrie<u128, Node>>(poptrie);
    refuses::<u32, Poptrie<u32, Node32>>(poptrie);
    refuses::<u128, Poptrie<u128, Node32>>(poptrie);
}

#[test]
fn flat_poptrie_refuses_malformed_intervals() {
    refuses::<u32, FlatPoptrie<u32>>(poptrie);
    refuses::<u128, FlatPoptrie<u128>>(poptrie);
}

#[test]
fn updatable_poptrie_refuses_malformed_intervals() {
    for (iv, want) in malformed::<u32>() {
        let err = PoptrieError::InvalidIntervals(want);
        assert_eq!(
            Updatable::build(&iv, &Default::default()).err(),
            Some(err.clone())
        );
        // A slot rebuild checks its intervals too, and leaves the trie as it was.
        let good = ipfib::intervals::compile::<u32>([]);
        let mut u = Updatable::build(&good, &Default::default()).unwrap();
        assert_eq!(u.replace_slot(0, &iv), Err(err));
        assert_eq!(u.validate(), Ok(()));
    }
}

#[test]
fn well_formed_intervals_still_build() {
    let iv = Intervals {
        starts: vec![0u32, 0xffff_ffff],
        payloads: vec![7, 8],
    };
    assert_eq!(iv.validate(), Ok(()));
    let e = PlanB::build(&iv, &Default::default()).unwrap();
    assert_eq!((e.lookup(0), e.lookup(u32::MAX)), (7, 8));
    // Equal neighbours are not what `compile` emits, but they describe a
    // mapping all the same: accepted, answered as given.
    let iv = Intervals {
        starts: vec![0u128, 1 << 100, 1 << 101],
        payloads: vec![3, 3, 4],
    };
    assert_eq!(iv.validate(), Ok(()));
    let p = Poptrie::<u128>::build(&iv, &Default::default()).unwrap();
    assert_eq!((p.lookup(1 << 100), p.lookup(u128::MAX)), (3, 4));
}
