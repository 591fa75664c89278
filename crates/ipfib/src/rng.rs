//! `Rng`: the seeded generator behind the synthetic tables and traces
//! (`gen`) and the engine choice's sample addresses (`engine::auto`).
//! Deterministic for a seed on every platform.

use crate::addr::Addr;

/// SplitMix64: tiny, fast, good enough for test data.
///
/// ```
/// use ipfib::gen::Rng;
/// let mut a = Rng::new(42);
/// let mut b = a.clone(); // a clone continues the same stream
/// assert_eq!([a.next_u64(), a.next_u64()], [b.next_u64(), b.next_u64()]);
/// ```
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    ///
    /// ```
    /// use ipfib::gen::Rng;
    /// assert_eq!(Rng::new(7).next_u64(), Rng::new(7).next_u64());
    /// assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
    /// ```
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    /// Next 64 random bits.
    ///
    /// ```
    /// // The same stream on every platform.
    /// assert_eq!(ipfib::gen::Rng::new(7).next_u64(), 17_039_259_473_404_265_729);
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Next 128 random bits.
    ///
    /// ```
    /// let mut a = ipfib::gen::Rng::new(3);
    /// let mut b = a.clone();
    /// let x = a.next_u128(); // two draws, the first in the high half
    /// assert_eq!((x >> 64, x as u64), (b.next_u64() as u128, b.next_u64()));
    /// ```
    pub fn next_u128(&mut self) -> u128 {
        ((self.next_u64() as u128) << 64) | self.next_u64() as u128
    }
    /// Uniform in `0..n` (`n > 0`).
    ///
    /// ```
    /// let mut rng = ipfib::gen::Rng::new(1);
    /// let mut seen = [0; 4];
    /// (0..400).for_each(|_| seen[rng.below(4) as usize] += 1);
    /// assert!(seen.iter().all(|&n| n > 50)); // every value, none far off 100
    /// ```
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// A random address of family `A`.
    ///
    /// ```
    /// let mut a = ipfib::gen::Rng::new(5);
    /// let mut b = a.clone();
    /// assert_eq!(a.addr::<u32>(), b.next_u128() as u32); // the low bits of 128
    /// assert_eq!(a.addr::<u128>(), b.next_u128());
    /// ```
    pub fn addr<A: Addr>(&mut self) -> A {
        A::from_u128_truncate(self.next_u128())
    }
}
