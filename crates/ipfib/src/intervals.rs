//! The interval compiler: one ordered walk of the routes yields the sorted
//! elementary intervals of the address space with their resolved payload
//! (PlanB §3: LPM becomes a predecessor search over interval starts).
//!
//! No global sort: routes arrive in trie pre-order (address, then shorter
//! first), and a stack of the enclosing prefixes tells which route resumes
//! when a more specific one ends. Neighbouring intervals with the same
//! payload are merged as they are emitted, so with value payloads this is
//! also route aggregation. Ends are inclusive, so nothing overflows at the
//! top of the address space.

use crate::addr::Addr;
use crate::prefix::Prefix;

/// Payload of the addresses no route covers.
///
/// ```
/// use ipfib::intervals::{compile, NO_ROUTE};
/// use ipfib::prefix::Prefix;
/// let iv = compile([("10.0.0.0/8".parse::<Prefix<u32>>()?, 7)]);
/// assert_eq!(iv.resolve(0x0a00_0001), 7);
/// assert_eq!(iv.resolve(0x0b00_0000), NO_ROUTE);
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
pub const NO_ROUTE: u32 = u32::MAX;

/// Sorted elementary intervals: interval `i` is
/// `[starts[i], starts[i + 1] - 1]` (the last one ends at the top of the
/// space) and resolves to `payloads[i]`.
///
/// [`compile`] guarantees the shape every engine relies on: at least one
/// interval, as many payloads as starts, `starts[0]` zero and starts
/// strictly increasing (and, beyond that, no two neighbours sharing a
/// payload). The fields are public, so hand-made values may break it:
/// every engine's build checks [`Intervals::validate`] first and refuses
/// them with an error.
///
/// ```
/// use ipfib::intervals::{compile, NO_ROUTE};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// let iv = compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
/// assert_eq!(iv.starts, [0, 0x0a00_0000, 0x0a01_0000, 0x0a02_0000, 0x0b00_0000]);
/// assert_eq!(iv.payloads, [NO_ROUTE, 1, 2, 1, NO_ROUTE]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Intervals<A: Addr> {
    pub starts: Vec<A>,
    pub payloads: Vec<u32>,
}

impl<A: Addr> Intervals<A> {
    /// Number of intervals.
    ///
    /// ```
    /// use ipfib::intervals::compile;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// assert_eq!(compile::<u32>([]).len(), 1); // the whole space, no route
    /// assert_eq!(compile([(p("10.0.0.0/8"), 1)]).len(), 3); // before, inside, after
    /// ```
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// False for every compiled value (the whole space is at least one
    /// interval); true only for a hand-made one, which
    /// [`Intervals::validate`] refuses.
    ///
    /// ```
    /// use ipfib::intervals::{compile, Intervals};
    /// assert!(!compile::<u128>([]).is_empty());
    /// let hand_made = Intervals::<u32> { starts: vec![], payloads: vec![] };
    /// assert!(hand_made.is_empty() && hand_made.validate().is_err());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Check the shape the engines rely on (see the type's doc): their
    /// builds index `payloads` by the rank of a start without bounds
    /// checks, which is in range exactly when this returns `Ok`.
    ///
    /// Neighbours with equal payloads are accepted: they describe the same
    /// mapping as the merged interval, only less compactly.
    ///
    /// ```
    /// use ipfib::intervals::{compile, Intervals, InvalidIntervals};
    /// assert_eq!(compile::<u32>([]).validate(), Ok(()));
    /// let repeated = Intervals { starts: vec![0u32, 5, 5], payloads: vec![1, 2, 3] };
    /// assert_eq!(repeated.validate(), Err(InvalidIntervals::NotIncreasing(2)));
    /// let late = Intervals { starts: vec![1u32], payloads: vec![1] };
    /// assert_eq!(late.validate(), Err(InvalidIntervals::FirstNotZero));
    /// // Equal neighbours are accepted: the same mapping, less compact.
    /// assert_eq!(Intervals { starts: vec![0u32, 9], payloads: vec![4, 4] }.validate(), Ok(()));
    /// ```
    pub fn validate(&self) -> Result<(), InvalidIntervals> {
        if self.starts.is_empty() {
            return Err(InvalidIntervals::Empty);
        }
        if self.starts.len() != self.payloads.len() {
            return Err(InvalidIntervals::LengthMismatch {
                starts: self.starts.len(),
                payloads: self.payloads.len(),
            });
        }
        if self.starts[0] != A::ZERO {
            return Err(InvalidIntervals::FirstNotZero);
        }
        match self.starts.windows(2).position(|w| w[0] >= w[1]) {
            Some(i) => Err(InvalidIntervals::NotIncreasing(i + 1)),
            None => Ok(()),
        }
    }

    /// Reference predecessor search (binary search); engines must agree.
    ///
    /// ```
    /// use ipfib::intervals::{compile, NO_ROUTE};
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = compile([(p("10.0.0.0/8"), 1), (p("10.1.0.0/16"), 2)]);
    /// assert_eq!(iv.resolve(0x0a01_ffff), 2);
    /// assert_eq!(iv.resolve(0x0a02_0000), 1);
    /// assert_eq!(iv.resolve(u32::MAX), NO_ROUTE);
    /// ```
    pub fn resolve(&self, addr: A) -> u32 {
        let rank = self.starts.partition_point(|&s| s <= addr);
        self.payloads[rank - 1]
    }

    fn push(&mut self, start: A, payload: u32) {
        push_merged(&mut self.starts, &mut self.payloads, start, payload);
    }
}

/// Why hand-made [`Intervals`] cannot be searched (see
/// [`Intervals::validate`]).
///
/// ```
/// use ipfib::intervals::{Intervals, InvalidIntervals};
/// let e = Intervals::<u32> { starts: vec![0, 1], payloads: vec![7] }.validate().unwrap_err();
/// assert_eq!(e, InvalidIntervals::LengthMismatch { starts: 2, payloads: 1 });
/// assert_eq!(e.to_string(), "2 interval starts but 1 payloads");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidIntervals {
    #[error("no intervals: the first must start at address zero")]
    Empty,
    #[error("{starts} interval starts but {payloads} payloads")]
    LengthMismatch { starts: usize, payloads: usize },
    #[error("the first interval must start at address zero")]
    FirstNotZero,
    #[error("interval start {0} is not above the one before it (starts must strictly increase)")]
    NotIncreasing(usize),
}

/// Append interval `(start, payload)` to sorted parallel vectors: an
/// interval starting where the last one starts replaces it (a more specific
/// route wins), and one with the left neighbour's payload is merged away.
pub(crate) fn push_merged<T: PartialEq>(
    starts: &mut Vec<T>,
    payloads: &mut Vec<u32>,
    start: T,
    payload: u32,
) {
    if starts.last() == Some(&start) {
        starts.pop();
        payloads.pop();
    }
    if payloads.last() == Some(&payload) {
        return;
    }
    starts.push(start);
    payloads.push(payload);
}

/// Compile routes given in pre-order (`Prefix` order, no duplicates) with
/// their payloads into elementary intervals.
///
/// ```
/// use ipfib::intervals::{compile, NO_ROUTE};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// // Routes in prefix order; equal neighbours merge (route aggregation).
/// let iv = compile([(p("192.0.2.0/24"), 5), (p("192.0.2.0/25"), 5), (p("192.0.2.128/25"), 6)]);
/// assert_eq!(iv.starts, [0, 0xc000_0200, 0xc000_0280, 0xc000_0300]);
/// assert_eq!(iv.payloads, [NO_ROUTE, 5, 6, NO_ROUTE]);
/// // A route at the top of the space ends the list: no overflow.
/// assert_eq!(compile([(p("255.255.255.255/32"), 1)]).starts, [0, u32::MAX]);
/// ```
pub fn compile<A: Addr>(routes: impl IntoIterator<Item = (Prefix<A>, u32)>) -> Intervals<A> {
    let mut out = Intervals {
        starts: vec![A::ZERO],
        payloads: vec![NO_ROUTE],
    };
    // Enclosing routes, outermost first: (last address, payload).
    let mut stack: Vec<(A, u32)> = Vec::with_capacity(A::BITS as usize + 1);
    for (prefix, payload) in routes {
        debug_assert!(
            out.starts.last().is_none_or(|&s| s <= prefix.addr()),
            "routes must arrive in prefix order"
        );
        while let Some(&(last, _)) = stack.last() {
            if last >= prefix.addr() {
                break; // still encloses this prefix
            }
            stack.pop();
            let resume = stack.last().map_or(NO_ROUTE, |&(_, p)| p);
            // last < prefix.addr() <= MAX, so last + 1 cannot overflow.
            if let Some(next) = last.checked_succ() {
                out.push(next, resume);
            }
        }
        out.push(prefix.addr(), payload);
        stack.push((prefix.last(), payload));
    }
    while let Some((last, _)) = stack.pop() {
        let resume = stack.last().map_or(NO_ROUTE, |&(_, p)| p);
        if let Some(next) = last.checked_succ() {
            out.push(next, resume);
        }
    }
    out
}

/// Test support: the intervals of `routes` (prefix text), route `i` as
/// payload `i` in sorted order.
#[cfg(test)]
pub(crate) fn of_routes<A: Addr>(routes: &[&str]) -> Intervals<A>
where
    Prefix<A>: std::str::FromStr,
    <Prefix<A> as std::str::FromStr>::Err: std::fmt::Debug,
{
    let mut ps: Vec<Prefix<A>> = routes.iter().map(|r| r.parse().unwrap()).collect();
    ps.sort();
    compile(ps.into_iter().enumerate().map(|(i, p)| (p, i as u32)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Prefix<u32> {
        s.parse().unwrap()
    }

    #[test]
    fn nested_adjacent_and_top() {
        let iv = compile([
            (p("10.0.0.0/8"), 1),
            (p("10.0.0.0/24"), 2),
            (p("10.0.1.0/24"), 3),
            (p("10.255.255.255/32"), 4),
            (p("255.255.255.255/32"), 5),
        ]);
        let want: Vec<(u32, u32)> = vec![
            (0, NO_ROUTE),
            (0x0a00_0000, 2),
            (0x0a00_0100, 3),
            (0x0a00_0200, 1),
            (0x0aff_ffff, 4),
            (0x0b00_0000, NO_ROUTE),
            (0xffff_ffff, 5),
        ];
        let got: Vec<(u32, u32)> = iv
            .starts
            .iter()
            .copied()
            .zip(iv.payloads.iter().copied())
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn merges_equal_neighbours() {
        // Two adjacent /25s with the same value inside a /24 of that value.
        let iv = compile([
            (p("0.0.0.0/0"), 7),
            (p("1.0.0.0/25"), 7),
            (p("1.0.0.128/25"), 7),
        ]);
        assert_eq!(iv.starts, vec![0]);
        assert_eq!(iv.payloads, vec![7]);
        let empty = compile::<u32>([]);
        assert_eq!(empty.payloads, vec![NO_ROUTE]);
    }
}
