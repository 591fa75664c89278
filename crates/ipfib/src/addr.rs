//! The `Addr` trait: one small interface over `u32` (IPv4) and `u128` (IPv6)
//! so that every structure is written once and instantiated for both
//! families. Addresses are plain integers in big-endian numeric order: the
//! most significant bit is the first bit of the address.

use std::fmt::{Debug, Display};
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An address family's integer representation.
///
/// Implemented for `u32` (IPv4) and `u128` (IPv6) only; the trait is sealed
/// in spirit: engines rely on `BITS` being 32 or 128.
///
/// ```
/// use ipfib::addr::Addr;
/// // Written once, for both families.
/// fn network<A: Addr>(a: A, len: u8) -> A {
///     a.and(A::mask(len))
/// }
/// assert_eq!(network(0x0a01_0203u32, 8), 0x0a00_0000);
/// assert_eq!(network(u128::MAX, 1), 1 << 127);
/// ```
pub trait Addr:
    Copy + Ord + Eq + Hash + Debug + Default + Send + Sync + 'static + sealed::Sealed
{
    /// Width of the address in bits (32 or 128).
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!(<u32 as Addr>::BITS, 32);
    /// assert_eq!(<u128 as Addr>::BITS, 128);
    /// ```
    const BITS: u8;
    /// The all-zero address.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// use ipfib::prefix::Prefix;
    /// assert_eq!(Prefix::<u32>::default_route().addr(), <u32 as Addr>::ZERO);
    /// assert_eq!(<u128 as Addr>::ZERO.checked_pred(), None);
    /// ```
    const ZERO: Self;
    /// The all-ones address (top of the address space).
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// use ipfib::prefix::Prefix;
    /// assert_eq!(Prefix::<u128>::default_route().last(), <u128 as Addr>::MAX);
    /// assert_eq!(<u32 as Addr>::MAX.checked_succ(), None);
    /// ```
    const MAX: Self;
    /// IP version number: 4 or 6.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!((<u32 as Addr>::FAMILY, <u128 as Addr>::FAMILY), (4, 6));
    /// ```
    const FAMILY: u8;
    /// The `std::net` type this integer stands for.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// let a: <u32 as Addr>::Std = "10.0.0.1".parse()?; // an Ipv4Addr
    /// assert_eq!(u32::from_std(a), 0x0a00_0001);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    type Std: Copy + Display + Debug + FromStr + Into<IpAddr>;

    /// Network mask with the top `len` bits set; `len` must be `<= BITS`.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!(u32::mask(8), 0xff00_0000);
    /// assert_eq!(u32::mask(0), 0);
    /// assert_eq!(u128::mask(128), u128::MAX);
    /// ```
    fn mask(len: u8) -> Self;
    /// `self & other`.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!(0x0a01_0203u32.and(u32::mask(16)), 0x0a01_0000);
    /// ```
    fn and(self, other: Self) -> Self;
    /// `self | !mask(len)`: the last address of the prefix `self/len`.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!(0x0a00_0000u32.last_of(8), 0x0aff_ffff);
    /// assert_eq!(0u32.last_of(0), u32::MAX);
    /// ```
    fn last_of(self, len: u8) -> Self;
    /// Bit `i` counted from the most significant bit (`i < BITS`).
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert!(0x8000_0001u32.bit(0));
    /// assert!(!0x8000_0001u32.bit(1));
    /// assert!(0x8000_0001u32.bit(31));
    /// ```
    fn bit(self, i: u8) -> bool;
    /// Number of leading bits that `self` and `other` share.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!(0x0a00_0000u32.common_len(0x0a80_0000), 8);
    /// assert_eq!(5u32.common_len(5), 32);
    /// ```
    fn common_len(self, other: Self) -> u8;
    /// `self + 1`, or `None` at the top of the address space.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!(Addr::checked_succ(9u32), Some(10));
    /// assert_eq!(Addr::checked_succ(u128::MAX), None);
    /// ```
    fn checked_succ(self) -> Option<Self>;
    /// `self - 1`, or `None` at zero.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!(Addr::checked_pred(10u32), Some(9));
    /// assert_eq!(Addr::checked_pred(0u128), None);
    /// ```
    fn checked_pred(self) -> Option<Self>;
    /// Whether the bits after the first `len` are all zero (`len >= BITS`:
    /// true), without a branch.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert!(0x0a00_0000u32.host_bits_clear(8));
    /// assert!(!0x0a00_0001u32.host_bits_clear(8));
    /// assert!(u32::MAX.host_bits_clear(32));
    /// ```
    fn host_bits_clear(self, len: u8) -> bool;
    /// Widen to `u128`, keeping the numeric value.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!(u32::MAX.to_u128(), 0xffff_ffff);
    /// ```
    fn to_u128(self) -> u128;
    /// Narrow from `u128`, keeping the low `BITS` bits.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!(u32::from_u128_truncate(0x1_0000_0005), 5);
    /// assert_eq!(u128::from_u128_truncate(u128::MAX), u128::MAX);
    /// ```
    fn from_u128_truncate(v: u128) -> Self;
    /// Convert from the `std::net` type.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// use std::net::{Ipv4Addr, Ipv6Addr};
    /// assert_eq!(u32::from_std(Ipv4Addr::new(10, 0, 0, 1)), 0x0a00_0001);
    /// assert_eq!(u128::from_std(Ipv6Addr::LOCALHOST), 1);
    /// ```
    fn from_std(a: Self::Std) -> Self;
    /// Convert to the `std::net` type.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// assert_eq!(0x0a00_0001u32.to_std().to_string(), "10.0.0.1");
    /// assert_eq!(1u128.to_std(), std::net::Ipv6Addr::LOCALHOST);
    /// ```
    fn to_std(self) -> Self::Std;
    /// Try to read this family's address out of any `IpAddr`.
    ///
    /// ```
    /// use ipfib::addr::Addr;
    /// use std::net::IpAddr;
    /// assert_eq!(u32::from_ip(IpAddr::from([10, 0, 0, 1])), Some(0x0a00_0001));
    /// assert_eq!(u32::from_ip("::1".parse()?), None);
    /// // No unmapping here (that is `AnyAddr`'s job): a mapped address is IPv6.
    /// assert_eq!(u32::from_ip("::ffff:10.0.0.1".parse()?), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn from_ip(a: IpAddr) -> Option<Self>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u128 {}
}

macro_rules! impl_addr {
    ($t:ty, $bits:expr, $family:expr, $std:ty, $variant:ident) => {
        impl Addr for $t {
            const BITS: u8 = $bits;
            const ZERO: Self = 0;
            const MAX: Self = <$t>::MAX;
            const FAMILY: u8 = $family;
            type Std = $std;

            #[inline(always)]
            fn mask(len: u8) -> Self {
                debug_assert!(len <= $bits);
                // checked_shl avoids the overflow at len == 0 (shift by BITS).
                <$t>::MAX.checked_shl(($bits - len) as u32).unwrap_or(0)
            }
            #[inline(always)]
            fn and(self, other: Self) -> Self {
                self & other
            }
            #[inline(always)]
            fn last_of(self, len: u8) -> Self {
                self | !Self::mask(len)
            }
            #[inline(always)]
            fn bit(self, i: u8) -> bool {
                (self >> ($bits - 1 - i as u32)) & 1 == 1
            }
            #[inline(always)]
            fn common_len(self, other: Self) -> u8 {
                (self ^ other).leading_zeros() as u8
            }
            #[inline(always)]
            fn checked_succ(self) -> Option<Self> {
                self.checked_add(1)
            }
            #[inline(always)]
            fn checked_pred(self) -> Option<Self> {
                self.checked_sub(1)
            }
            #[inline(always)]
            fn host_bits_clear(self, len: u8) -> bool {
                self.checked_shl(u32::from(len)).unwrap_or(0) == 0
            }
            #[inline(always)]
            fn to_u128(self) -> u128 {
                self as u128
            }
            #[inline(always)]
            fn from_u128_truncate(v: u128) -> Self {
                v as $t
            }
            #[inline]
            fn from_std(a: $std) -> Self {
                <$t>::from(a)
            }
            #[inline]
            fn to_std(self) -> $std {
                <$std>::from(self)
            }
            #[inline]
            fn from_ip(a: IpAddr) -> Option<Self> {
                match a {
                    IpAddr::$variant(x) => Some(Self::from_std(x)),
                    _ => None,
                }
            }
        }
    };
}

impl_addr!(u32, 32, 4, Ipv4Addr, V4);
impl_addr!(u128, 128, 6, Ipv6Addr, V6);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_at_the_edges() {
        assert_eq!(u32::mask(0), 0);
        assert_eq!(u32::mask(32), u32::MAX);
        assert_eq!(u32::mask(8), 0xff00_0000);
        assert_eq!(u128::mask(0), 0);
        assert_eq!(u128::mask(128), u128::MAX);
        assert_eq!(u128::mask(1), 1u128 << 127);
        assert_eq!(0x0a00_0000u32.last_of(8), 0x0aff_ffff);
        assert_eq!(0u32.last_of(0), u32::MAX);
    }

    #[test]
    fn bits_and_common_length() {
        assert!(0x8000_0000u32.bit(0));
        assert!(!0x8000_0000u32.bit(1));
        assert!(1u32.bit(31));
        assert_eq!(0xff00_0000u32.common_len(0xff80_0000), 8);
        assert_eq!(5u32.common_len(5), 32);
        assert_eq!(u32::MAX.checked_succ(), None);
        assert_eq!(0u128.checked_pred(), None);
    }
}
