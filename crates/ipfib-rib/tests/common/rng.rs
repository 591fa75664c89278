//! A tiny deterministic generator (xorshift64), so that a failing random
//! test reproduces from its seed, with no dependency. One copy for the
//! integration tests (through `common`), the route list's unit tests and
//! the soak example (both include this file by path).

#![allow(dead_code)]

/// xorshift64 (Marsaglia, "Xorshift RNGs": shifts 13, 7, 17). A zero
/// seed stays zero.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index below `n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}
