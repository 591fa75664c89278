//! What `ipfib lookup` asks of a compiled table, whatever the engine:
//! route ordinals for batches of addresses of each family, and the route
//! behind an ordinal. [`Tails`] caches each route's formatted
//! ` PREFIX VALUE\n`, so an answer is two copies: the address as written,
//! then its route's tail.

use ipfib::engine::NO_ROUTE;
use ipfib::prefix::{AnyPrefix, Prefix};
use ipfib::table::Table;
use std::io::Write as _;

/// Addresses in flight per engine batch (`lookup_batch::<M>`).
/// The two compiled table types answered the same way: batch lookups to
/// route ordinals, and each ordinal's prefix and value (the trait the
/// classifier uses, under the name this module gives it).
pub use ipfib_classify::Networks as Answer;

/// The route table itself (`--engine radix`), one lookup at a time; the
/// ordinal of a route is its place in the sorted prefix list.
pub struct Radix<'a> {
    table: &'a Table<String>,
    v4: Vec<Prefix<u32>>,
    v6: Vec<Prefix<u128>>,
}

impl<'a> Radix<'a> {
    pub fn new(table: &'a Table<String>) -> Self {
        let mut v4: Vec<_> = table.v4.iter_indices().map(|(p, _)| p).collect();
        let mut v6: Vec<_> = table.v6.iter_indices().map(|(p, _)| p).collect();
        // Already in walk order (the `Prefix` order); sorted anyway, since
        // the ordinals come from binary searches.
        v4.sort_unstable();
        v6.sort_unstable();
        Radix { table, v4, v6 }
    }
}

impl Answer for Radix<'_> {
    fn batch_v4(&self, addrs: &[u32], ordinals: &mut [u32]) {
        for (a, o) in addrs.iter().zip(ordinals) {
            *o = self.table.v4.lookup_index(*a).map_or(NO_ROUTE, |(p, _)| {
                self.v4.binary_search(&p).map_or(NO_ROUTE, |i| i as u32)
            });
        }
    }
    fn batch_v6(&self, addrs: &[u128], ordinals: &mut [u32]) {
        for (a, o) in addrs.iter().zip(ordinals) {
            *o = self.table.v6.lookup_index(*a).map_or(NO_ROUTE, |(p, _)| {
                self.v6.binary_search(&p).map_or(NO_ROUTE, |i| i as u32)
            });
        }
    }
    fn route_v4(&self, ordinal: u32) -> Option<(Prefix<u32>, &str)> {
        let p = self.v4.get(ordinal as usize)?;
        self.table.v4.get(p).map(|v| (*p, v.as_str()))
    }
    fn route_v6(&self, ordinal: u32) -> Option<(Prefix<u128>, &str)> {
        let p = self.v6.get(ordinal as usize)?;
        self.table.v6.get(p).map(|v| (*p, v.as_str()))
    }
    fn routes_v4(&self) -> usize {
        self.v4.len()
    }
    fn routes_v6(&self) -> usize {
        self.v6.len()
    }
}

/// Zero bytes kept after every buffer [`put`] copies from, so it may copy
/// a fixed width past a short piece's end.
pub const PAD: usize = 64;

/// The answer to a miss, padded.
const MISS: [u8; 5 + PAD] = {
    let mut m = [0; 5 + PAD];
    let text = b" - -\n";
    let mut i = 0;
    while i < text.len() {
        m[i] = text[i];
        i += 1;
    }
    m
};

/// A slot's first byte when its tail is in `Tails::long`.
const LONG: u8 = u8::MAX;

/// Formatted ` PREFIX VALUE\n` tails of one family's routes, made on first
/// use, in slots of `W` bytes indexed by route ordinal: one cache line
/// holds an answer's length and text, so a batch's tails are found with one
/// (overlapping) cache miss each. The slots are allocated zeroed, so a
/// table of a million routes costs only the pages its answers touch.
pub struct Tails<const W: usize> {
    /// Slot `o` is `slots[o * W..(o + 1) * W]`: the tail's length (0: not
    /// made yet, `LONG`: in `long`), then its text; `PAD` zeros at the end.
    slots: Vec<u8>,
    /// Tails of `W` bytes or more: slot bytes 1..9 and 9..17 hold their
    /// start and end here (little-endian u64). `PAD` zeros at the end.
    long: Vec<u8>,
}

impl<const W: usize> Tails<W> {
    const _FITS: () = assert!(W >= 17 && W < LONG as usize);

    pub fn new(routes: usize) -> Self {
        let () = Self::_FITS;
        Tails {
            slots: vec![0; routes.saturating_mul(W).saturating_add(PAD)],
            long: vec![0; PAD],
        }
    }

    /// Read the slot of each of a batch's ordinals ahead of
    /// [`Tails::piece`], so that their cache misses overlap.
    #[inline]
    pub fn touch(&self, ordinal: u32) -> u8 {
        self.slots
            .get((ordinal as usize).wrapping_mul(W))
            .copied()
            .unwrap_or(0)
    }

    /// The answer for `ordinal` as `(bytes, start, end)` (made first if
    /// need be; `route` says what route it is), for [`put`].
    #[inline]
    pub fn piece<'a>(
        &mut self,
        ordinal: u32,
        route: impl FnOnce() -> Option<(AnyPrefix, &'a str)>,
    ) -> (&[u8], usize, usize) {
        let at = (ordinal as usize).wrapping_mul(W);
        // NO_ROUTE (and nothing else: ordinals are below `routes`).
        let Some(&len) = self
            .slots
            .get(at)
            .filter(|_| at + W <= self.slots.len() - PAD)
        else {
            return (&MISS, 0, 5);
        };
        let len = if len == 0 {
            let Some((prefix, value)) = route() else {
                return (&MISS, 0, 5);
            };
            self.make(at, prefix, value)
        } else {
            len
        };
        if len != LONG {
            return (&self.slots, at + 1, at + 1 + len as usize);
        }
        let word = |i: usize| {
            self.slots
                .get(at + i..at + i + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map_or(0, |b| u64::from_le_bytes(b) as usize)
        };
        (&self.long, word(1), word(9))
    }

    /// Format a tail into slot `at` (or `long`); the slot's first byte.
    #[cold]
    fn make(&mut self, at: usize, prefix: AnyPrefix, value: &str) -> u8 {
        let start = self.long.len() - PAD;
        self.long.truncate(start);
        write_tail(&mut self.long, prefix, value);
        let end = self.long.len();
        let Some(slot) = self.slots.get_mut(at..at + W) else {
            return LONG;
        };
        if end - start < W {
            // Short: into the slot, and out of `long` again.
            slot[0] = (end - start) as u8;
            slot[1..1 + end - start].copy_from_slice(&self.long[start..end]);
            self.long.truncate(start);
        } else {
            slot[0] = LONG;
            slot[1..9].copy_from_slice(&(start as u64).to_le_bytes());
            slot[9..17].copy_from_slice(&(end as u64).to_le_bytes());
        }
        self.long.resize(self.long.len() + PAD, 0);
        slot[0]
    }
}

/// ` PREFIX VALUE\n` as `writeln!(" {prefix} {value}")` writes it; IPv4
/// prefixes by hand (a first answer of a route costs mostly this when a
/// large input hits hundreds of thousands of routes).
fn write_tail(out: &mut Vec<u8>, prefix: AnyPrefix, value: &str) {
    match prefix {
        AnyPrefix::V4(p) => {
            out.push(b' ');
            for (i, octet) in p.addr().to_be_bytes().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                decimal(out, octet);
            }
            out.push(b'/');
            decimal(out, p.len());
            out.push(b' ');
            out.extend_from_slice(value.as_bytes());
            out.push(b'\n');
        }
        // Writing into a Vec cannot fail.
        AnyPrefix::V6(_) => {
            let _ = writeln!(out, " {prefix} {value}");
        }
    }
}

/// `n` in decimal, as `Display` writes it.
fn decimal(out: &mut Vec<u8>, n: u8) {
    if n >= 100 {
        out.push(b'0' + n / 100);
    }
    if n >= 10 {
        out.push(b'0' + n / 10 % 10);
    }
    out.push(b'0' + n % 10);
}

/// Append `src[start..end]` to `dst[*at..]`, growing `dst` if need be.
/// Short pieces are copied at a fixed width of 32 or 64 bytes when both
/// sides have that much room (one or two vector moves, where an exact copy
/// of a length known only at run time is a call to `memcpy`): the bytes
/// beyond `end` land past `*at` and are overwritten by the next piece.
#[inline(always)]
pub fn put(dst: &mut Vec<u8>, at: &mut usize, src: &[u8], start: usize, end: usize) {
    let len = end.saturating_sub(start);
    if dst.len() < *at + len + PAD {
        dst.resize((*at + len + PAD).max(dst.len() * 2), 0);
    }
    if !fixed::<32>(dst, *at, src, start, len) && !fixed::<64>(dst, *at, src, start, len) {
        if let (Some(d), Some(s)) = (dst.get_mut(*at..*at + len), src.get(start..end)) {
            d.copy_from_slice(s);
        }
    }
    *at += len;
}

#[inline(always)]
fn fixed<const W: usize>(dst: &mut [u8], at: usize, src: &[u8], start: usize, len: usize) -> bool {
    if len > W {
        return false;
    }
    match (dst.get_mut(at..at + W), src.get(start..start + W)) {
        (Some(d), Some(s)) => {
            d.copy_from_slice(s);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_are_written_as_display_writes_them() {
        let mut rng = ipfib::gen::Rng::new(1);
        for i in 0..100_000u32 {
            let addr = if i < 256 {
                i * 0x0101_0101
            } else {
                rng.next_u64() as u32
            };
            let len = (i % 33) as u8;
            let p = AnyPrefix::V4(Prefix::new_masked(addr, len).unwrap());
            let mut got = Vec::new();
            write_tail(&mut got, p, "v");
            assert_eq!(String::from_utf8(got).unwrap(), format!(" {p} v\n"));
        }
    }
}
