//! Ranges painted in file order onto a map of disjoint intervals (the later
//! range wins where two overlap), then each maximal run of one value cut
//! into the fewest CIDR prefixes that cover exactly it.

use crate::read::Route;
use ipfib::addr::Addr;
use ipfib::prefix::{AnyPrefix, Prefix};
use std::collections::BTreeMap;

/// One disjoint piece of the painted map: from its key to `last`
/// (inclusive, so nothing overflows at the top of the space).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece<A> {
    last: A,
    /// Index into the table's distinct values.
    value: u32,
    /// The line of the range that painted this piece.
    line: u64,
}

/// The painted map of one family, keyed by each piece's first address.
#[derive(Debug, Default)]
pub(crate) struct Painter<A: Addr> {
    pieces: BTreeMap<A, Piece<A>>,
    /// Ranges that repainted addresses an earlier range had painted.
    pub overlapping: u64,
}

impl<A: Addr> Painter<A>
where
    AnyPrefix: From<Prefix<A>>,
{
    /// Paint `[first, last]` (`first <= last`) with `value`, over whatever
    /// earlier ranges painted there.
    pub fn paint(&mut self, first: A, last: A, value: u32, line: u64) {
        let piece = Piece { last, value, line };
        // Sorted, disjoint input (the usual file) never looks back.
        if self
            .pieces
            .last_key_value()
            .is_none_or(|(_, p)| p.last < first)
        {
            self.pieces.insert(first, piece);
            return;
        }
        let after = last.checked_succ();
        let mut overlapped = false;
        // A piece starting before `first` and reaching into the range keeps
        // its head, and its tail if it reaches past `last`.
        if let Some((&start, &before)) = self.pieces.range(..first).next_back() {
            if before.last >= first {
                overlapped = true;
                if let Some(head_last) = first.checked_pred() {
                    self.pieces.insert(
                        start,
                        Piece {
                            last: head_last,
                            ..before
                        },
                    );
                }
                if let (true, Some(after)) = (before.last > last, after) {
                    self.pieces.insert(after, before);
                }
            }
        }
        // Pieces starting inside the range go, but for a tail past `last`.
        while let Some((&start, &inside)) = self.pieces.range(first..=last).next() {
            overlapped = true;
            self.pieces.remove(&start);
            if let (true, Some(after)) = (inside.last > last, after) {
                self.pieces.insert(after, inside);
            }
        }
        self.pieces.insert(first, piece);
        self.overlapping += u64::from(overlapped);
    }

    /// The routes of the painted map, in address order: each maximal run of
    /// adjacent pieces with one value becomes its minimal CIDR cover; a
    /// prefix's line is that of the piece holding its first address.
    pub fn into_routes(self, values: &[Box<str>], out: &mut Vec<Route>) {
        let mut run: Vec<(A, Piece<A>)> = Vec::new();
        for (start, piece) in self.pieces {
            let continues = run.last().is_some_and(|(_, prev)| {
                prev.value == piece.value && prev.last.checked_succ() == Some(start)
            });
            if !continues {
                flush(&run, values, out);
                run.clear();
            }
            run.push((start, piece));
        }
        flush(&run, values, out);
    }
}

/// The routes of one run of adjacent pieces sharing a value.
fn flush<A: Addr>(run: &[(A, Piece<A>)], values: &[Box<str>], out: &mut Vec<Route>)
where
    AnyPrefix: From<Prefix<A>>,
{
    let (Some(&(first, head)), Some(&(_, tail))) = (run.first(), run.last()) else {
        return;
    };
    let value = values
        .get(head.value as usize)
        .map_or_else(String::new, |v| v.to_string());
    let mut piece = 0;
    for_each_cidr(first, tail.last, |prefix| {
        let addr = prefix.addr();
        while run.get(piece + 1).is_some_and(|&(start, _)| start <= addr) {
            piece += 1;
        }
        let line = run.get(piece).map_or(head.line, |(_, p)| p.line);
        out.push(Route {
            prefix: prefix.into(),
            value: value.clone(),
            line,
        });
    });
}

/// The fewest prefixes covering exactly `[first, last]` (`first <= last`),
/// in address order: from the start, each time the largest block that is
/// aligned at the current address and ends within the range. Any cover by
/// disjoint prefixes must split the range at least where this does, so it
/// is minimal.
pub(crate) fn for_each_cidr<A: Addr>(first: A, last: A, mut f: impl FnMut(Prefix<A>)) {
    let bits = u32::from(A::BITS);
    let (mut a, last) = (first.to_u128(), last.to_u128());
    while a <= last {
        let span = last - a; // the block may hold at most span + 1 addresses
        let fits = match span.checked_add(1) {
            Some(n) => 127 - n.leading_zeros(),
            None => 128,
        };
        let aligned = if a == 0 { bits } else { a.trailing_zeros() };
        let k = fits.min(aligned).min(bits);
        // k <= bits: the length fits in u8 and is within the family.
        if let Ok(p) = Prefix::new_masked(A::from_u128_truncate(a), (bits - k) as u8) {
            f(p);
        }
        let block_last = if k == 128 {
            u128::MAX
        } else {
            a | ((1u128 << k) - 1)
        };
        match block_last.checked_add(1) {
            Some(next) if block_last < last => a = next,
            _ => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidrs<A: Addr>(first: A, last: A) -> Vec<String>
    where
        Prefix<A>: std::fmt::Display,
    {
        let mut v = Vec::new();
        for_each_cidr(first, last, |p| v.push(p.to_string()));
        v
    }

    #[test]
    fn cidr_cover_at_the_ends_of_the_space() {
        assert_eq!(cidrs(0u32, u32::MAX), ["0.0.0.0/0"]);
        assert_eq!(cidrs(0u128, u128::MAX), ["::/0"]);
        assert_eq!(cidrs(u32::MAX, u32::MAX), ["255.255.255.255/32"]);
        assert_eq!(cidrs(u128::MAX, u128::MAX).len(), 1);
        assert_eq!(cidrs(1u32, u32::MAX).len(), 32);
        assert_eq!(cidrs(0u32, u32::MAX - 1).len(), 32);
        assert_eq!(cidrs(1u128, u128::MAX).len(), 128);
        assert_eq!(cidrs(0x0100_0000u32, 0x0100_00ff), ["1.0.0.0/24"]);
        assert_eq!(
            cidrs(0x0100_8000u32, 0x0100_c4ff),
            ["1.0.128.0/18", "1.0.192.0/22", "1.0.196.0/24"]
        );
    }

    #[test]
    fn later_ranges_win_and_overlaps_are_counted() {
        let mut p = Painter::<u32>::default();
        p.paint(10, 20, 0, 1);
        p.paint(30, 40, 1, 2);
        p.paint(50, 50, 1, 3);
        assert_eq!(p.overlapping, 0);
        p.paint(15, 35, 2, 4); // over the end of one and the start of another
        p.paint(0, 12, 3, 5); // over the start of the first
        p.paint(22, 24, 0, 6); // inside one piece: it keeps head and tail
        p.paint(45, 49, 4, 7); // in a gap
        assert_eq!(p.overlapping, 3);
        let got: Vec<_> = p
            .pieces
            .iter()
            .map(|(&s, q)| (s, q.last, q.value, q.line))
            .collect();
        assert_eq!(
            got,
            [
                (0, 12, 3, 5),
                (13, 14, 0, 1),
                (15, 21, 2, 4),
                (22, 24, 0, 6),
                (25, 35, 2, 4),
                (36, 40, 1, 2),
                (45, 49, 4, 7),
                (50, 50, 1, 3),
            ]
        );
        p.paint(0, u32::MAX, 9, 8);
        assert_eq!(p.pieces.len(), 1);
        assert_eq!(p.overlapping, 4);
    }
}
