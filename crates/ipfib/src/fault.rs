//! Fault injection for the crate's own unit tests: a test arms one point
//! to fail at its n-th hit, and the code under test asks [`hit`] at that
//! point. Outside `cfg(test)` every point is a constant `false`, compiled
//! away.

/// The places where a test can make ipfib fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Point {
    /// `ValueTable::acquire` refuses a new value (as at `MAX_VALUES`).
    Acquire,
    /// A Fib side built from the whole route table fails.
    FullBuild,
    /// A Fib slot update fails after the first changed slot is rebuilt
    /// (the Poptrie writer's working state is half updated).
    SlotUpdate,
}

/// Whether the test running on this thread made `point` fail now.
#[cfg(not(test))]
#[inline(always)]
pub(crate) fn hit(_point: Point) -> bool {
    false
}

#[cfg(test)]
pub(crate) use armed::{arm, disarm, hit};

#[cfg(test)]
mod armed {
    use super::Point;
    use std::cell::Cell;

    thread_local! {
        static ARMED: Cell<Option<(Point, u32)>> = const { Cell::new(None) };
    }

    /// Fail `point` at its `after`-th hit from now (0: the next one), once.
    pub(crate) fn arm(point: Point, after: u32) {
        ARMED.with(|a| a.set(Some((point, after))));
    }

    pub(crate) fn disarm() {
        ARMED.with(|a| a.set(None));
    }

    pub(crate) fn hit(point: Point) -> bool {
        ARMED.with(|a| match a.get() {
            Some((p, 0)) if p == point => {
                a.set(None);
                true
            }
            Some((p, n)) if p == point => {
                a.set(Some((p, n - 1)));
                false
            }
            _ => false,
        })
    }
}
