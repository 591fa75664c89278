//! Arbitrary bytes read as route-table material biased to the edges, for
//! the fuzz targets and the property tests that replay their inputs.

use crate::engine::Family;
use crate::prefix::{AnyPrefix, Prefix};

/// Reads bytes as small numbers; past the end every read is zero.
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl Bytes<'_> {
    pub(crate) fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    pub(crate) fn below(&mut self, n: u8) -> u8 {
        self.byte() % n
    }

    pub(crate) fn u64(&mut self) -> u64 {
        (0..8).fold(0, |acc, _| acc << 8 | u64::from(self.byte()))
    }
}

/// Direct-pointing bits the scripts use for Poptrie (0: every change
/// rebuilds the one slot; 4: short prefixes mark several slots; 8 and 18).
pub(crate) const DIRECT_BITS: [u8; 4] = [0, 4, 8, 18];

/// Bases that prefixes are cut from: the ends of the space and a few
/// fixed addresses, so that prefixes nest, repeat and touch.
fn base<A: Family>(k: u8) -> A {
    const BASES: [u128; 6] = [
        0,
        u128::MAX,
        0x0a00_0000_0000_0000_0000_0000_0000_0000,
        0x2001_0db8_0000_0000_0000_0000_0000_0000,
        0x8000_0000_0000_0000_0000_0000_0000_0000,
        0xc0a8_0101_ffff_0000_0000_0000_0000_0000,
    ];
    // IPv4 takes the top 32 bits of the same bases.
    A::from_u128_truncate(BASES[k as usize % BASES.len()] >> (128 - u32::from(A::BITS)))
}

pub(crate) fn prefix<A: Family>(b: &mut Bytes, s: u8) -> Prefix<A> {
    let bits = A::BITS;
    let len = match b.below(8) {
        0 => 0,
        1 => 1,
        2 => s.saturating_sub(1).min(bits),
        3 => s.min(bits),
        4 => (s + 1).min(bits),
        5 => bits - b.below(2),
        _ => b.below(bits + 1),
    };
    let addr = match b.below(4) {
        0 => A::from_u128_truncate(u128::from(b.u64()) << 64 | u128::from(b.u64())),
        _ => {
            // A base, moved by a few steps of the prefix's own size (so
            // neighbours touch) and perturbed below it.
            let base = base::<A>(b.below(6)).to_u128();
            let unit = if len == 0 { 0 } else { 1u128 << (bits - len) };
            let step = u128::from(b.below(4)).wrapping_mul(unit);
            A::from_u128_truncate(base.wrapping_add(step))
        }
    };
    // `len <= bits` by construction.
    Prefix::new_masked(addr, len).unwrap_or_default()
}

pub(crate) fn any_prefix(b: &mut Bytes, s: u8) -> AnyPrefix {
    if b.below(3) == 0 {
        prefix::<u128>(b, s).into()
    } else {
        prefix::<u32>(b, s).into()
    }
}
