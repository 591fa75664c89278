//! Conversions between ipfib's address and prefix types and `std::net`
//! (always) and `ipnet` (feature `ipnet`).
//!
//! Addresses of either family follow the IPv4-mapped rule of [`AnyAddr`]:
//! `::ffff:a.b.c.d` becomes the IPv4 address `a.b.c.d`, as text parsing
//! does, so `AnyAddr::from(ip)` and `ip.to_string().parse::<AnyAddr>()`
//! agree. The per-family types ([`Prefix<u32>`], [`Prefix<u128>`]) convert
//! as given. Prefixes refuse host bits in `TryFrom` (as [`Prefix::new`]
//! does); mask them first (`ipnet`'s `trunc()`) to accept them.

use crate::prefix::{AnyAddr, AnyPrefix, Prefix, PrefixError};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// ```
/// use ipfib::prefix::AnyAddr;
/// use std::net::IpAddr;
/// let ip: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
/// assert_eq!(AnyAddr::from(ip), AnyAddr::V4(0xc000_0201));
/// ```
impl From<IpAddr> for AnyAddr {
    fn from(ip: IpAddr) -> Self {
        AnyAddr::unmapped(ip)
    }
}

/// ```
/// use ipfib::prefix::AnyAddr;
/// assert_eq!(AnyAddr::from(std::net::Ipv4Addr::new(10, 0, 0, 1)), AnyAddr::V4(0x0a00_0001));
/// ```
impl From<Ipv4Addr> for AnyAddr {
    fn from(ip: Ipv4Addr) -> Self {
        AnyAddr::V4(u32::from(ip))
    }
}

/// IPv4-mapped addresses become IPv4 (see the module documentation).
///
/// ```
/// use ipfib::prefix::AnyAddr;
/// use std::net::Ipv6Addr;
/// assert_eq!(AnyAddr::from(Ipv6Addr::LOCALHOST), AnyAddr::V6(1));
/// ```
impl From<Ipv6Addr> for AnyAddr {
    fn from(ip: Ipv6Addr) -> Self {
        AnyAddr::unmapped(IpAddr::V6(ip))
    }
}

/// ```
/// use ipfib::prefix::AnyAddr;
/// use std::net::IpAddr;
/// assert_eq!(IpAddr::from(AnyAddr::V4(0x0808_0808)).to_string(), "8.8.8.8");
/// ```
impl From<AnyAddr> for IpAddr {
    fn from(a: AnyAddr) -> Self {
        a.to_ip()
    }
}

/// Text of either family (surrounding whitespace allowed), IPv4-mapped
/// addresses unmapped.
///
/// ```
/// use ipfib::prefix::AnyAddr;
/// assert_eq!("2001:db8::1".parse::<AnyAddr>().unwrap(), AnyAddr::V6(0x2001_0db8 << 96 | 1));
/// assert!("2001:db8::/32".parse::<AnyAddr>().is_err());
/// ```
impl FromStr for AnyAddr {
    type Err = PrefixError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AnyAddr::parse(s)
    }
}

/// ```
/// use ipfib::prefix::AnyAddr;
/// assert_eq!(AnyAddr::V4(0xc000_0201).to_string(), "192.0.2.1");
/// // The IPv4-mapped rule shows: mapped text comes back as IPv4.
/// assert_eq!("::ffff:192.0.2.1".parse::<AnyAddr>()?.to_string(), "192.0.2.1");
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
impl std::fmt::Display for AnyAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_ip().fmt(f)
    }
}

/// The host route of an address (`/32` or `/128`).
///
/// ```
/// use ipfib::prefix::AnyPrefix;
/// let p = AnyPrefix::from(std::net::IpAddr::from([192, 0, 2, 1]));
/// assert_eq!(p.to_string(), "192.0.2.1/32");
/// ```
impl From<IpAddr> for AnyPrefix {
    fn from(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(a) => AnyPrefix::V4(Prefix::host(u32::from(a))),
            IpAddr::V6(a) => AnyPrefix::V6(Prefix::host(u128::from(a))),
        }
    }
}

/// `(address, length)` pairs, host bits refused.
///
/// ```
/// use ipfib::prefix::{AnyPrefix, Prefix};
/// use std::net::Ipv4Addr;
/// let p = Prefix::<u32>::try_from((Ipv4Addr::new(10, 0, 0, 0), 8)).unwrap();
/// assert_eq!(p.to_string(), "10.0.0.0/8");
/// assert!(Prefix::<u32>::try_from((Ipv4Addr::new(10, 0, 0, 1), 8)).is_err());
/// let any = AnyPrefix::try_from(("2001:db8::".parse::<std::net::IpAddr>().unwrap(), 32)).unwrap();
/// assert_eq!(any.family(), 6);
/// ```
impl TryFrom<(Ipv4Addr, u8)> for Prefix<u32> {
    type Error = PrefixError;
    fn try_from((a, len): (Ipv4Addr, u8)) -> Result<Self, Self::Error> {
        Prefix::new(u32::from(a), len)
    }
}

/// `(address, length)`, host bits refused.
///
/// ```
/// use ipfib::prefix::Prefix;
/// use std::net::Ipv6Addr;
/// let net: Ipv6Addr = "2001:db8::".parse()?;
/// assert_eq!(Prefix::<u128>::try_from((net, 32))?.to_string(), "2001:db8::/32");
/// assert!(Prefix::<u128>::try_from((Ipv6Addr::LOCALHOST, 64)).is_err()); // host bits
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl TryFrom<(Ipv6Addr, u8)> for Prefix<u128> {
    type Error = PrefixError;
    fn try_from((a, len): (Ipv6Addr, u8)) -> Result<Self, Self::Error> {
        Prefix::new(u128::from(a), len)
    }
}

/// `(address, length)`, host bits refused; the family is the address's.
///
/// ```
/// use ipfib::prefix::AnyPrefix;
/// use std::net::IpAddr;
/// let v4: IpAddr = "10.0.0.0".parse()?;
/// assert_eq!(AnyPrefix::try_from((v4, 8))?.family(), 4);
/// assert!(AnyPrefix::try_from((v4, 33)).is_err()); // too long for IPv4
/// // A mapped address keeps its family here: prefixes are never unmapped.
/// let mapped: IpAddr = "::ffff:10.0.0.0".parse()?;
/// assert_eq!(AnyPrefix::try_from((mapped, 104))?.family(), 6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl TryFrom<(IpAddr, u8)> for AnyPrefix {
    type Error = PrefixError;
    fn try_from((a, len): (IpAddr, u8)) -> Result<Self, Self::Error> {
        AnyPrefix::from_ip(a, len, crate::prefix::HostBits::Reject)
    }
}

/// The network address and length.
///
/// ```
/// use ipfib::prefix::{AnyPrefix, AnyAddr};
/// use std::net::IpAddr;
/// let p: AnyPrefix = "10.0.0.0/8".parse().unwrap();
/// assert_eq!(<(IpAddr, u8)>::from(p), ("10.0.0.0".parse().unwrap(), 8));
/// ```
impl From<AnyPrefix> for (IpAddr, u8) {
    fn from(p: AnyPrefix) -> Self {
        match p {
            AnyPrefix::V4(p) => (IpAddr::V4(Ipv4Addr::from(p.addr())), p.len()),
            AnyPrefix::V6(p) => (IpAddr::V6(Ipv6Addr::from(p.addr())), p.len()),
        }
    }
}

#[cfg(feature = "ipnet")]
mod with_ipnet {
    use super::*;
    use ipnet::{IpNet, Ipv4Net, Ipv6Net};

    /// ```
    /// use ipfib::prefix::Prefix;
    /// let n: ipnet::Ipv4Net = "10.1.0.0/16".parse().unwrap();
    /// let p = Prefix::<u32>::try_from(n).unwrap();
    /// assert_eq!(ipnet::Ipv4Net::from(p), n);
    /// // Host bits: refused, unless truncated first.
    /// let h: ipnet::Ipv4Net = "10.1.2.3/16".parse().unwrap();
    /// assert!(Prefix::<u32>::try_from(h).is_err());
    /// assert!(Prefix::<u32>::try_from(h.trunc()).is_ok());
    /// ```
    impl TryFrom<Ipv4Net> for Prefix<u32> {
        type Error = PrefixError;
        fn try_from(n: Ipv4Net) -> Result<Self, Self::Error> {
            Prefix::new(u32::from(n.addr()), n.prefix_len())
        }
    }

    impl TryFrom<Ipv6Net> for Prefix<u128> {
        type Error = PrefixError;
        fn try_from(n: Ipv6Net) -> Result<Self, Self::Error> {
            Prefix::new(u128::from(n.addr()), n.prefix_len())
        }
    }

    /// ```
    /// use ipfib::prefix::AnyPrefix;
    /// let n: ipnet::IpNet = "2001:db8::/32".parse().unwrap();
    /// let p = AnyPrefix::try_from(n).unwrap();
    /// assert_eq!(p.to_string(), "2001:db8::/32");
    /// assert_eq!(ipnet::IpNet::from(p), n);
    /// ```
    impl TryFrom<IpNet> for AnyPrefix {
        type Error = PrefixError;
        fn try_from(n: IpNet) -> Result<Self, Self::Error> {
            match n {
                IpNet::V4(n) => Prefix::try_from(n).map(AnyPrefix::V4),
                IpNet::V6(n) => Prefix::try_from(n).map(AnyPrefix::V6),
            }
        }
    }

    impl From<Prefix<u32>> for Ipv4Net {
        fn from(p: Prefix<u32>) -> Self {
            // A prefix's length is at most 32: `new` cannot fail.
            Ipv4Net::new_assert(Ipv4Addr::from(p.addr()), p.len())
        }
    }

    impl From<Prefix<u128>> for Ipv6Net {
        fn from(p: Prefix<u128>) -> Self {
            Ipv6Net::new_assert(Ipv6Addr::from(p.addr()), p.len())
        }
    }

    impl From<AnyPrefix> for IpNet {
        fn from(p: AnyPrefix) -> Self {
            match p {
                AnyPrefix::V4(p) => IpNet::V4(p.into()),
                AnyPrefix::V6(p) => IpNet::V6(p.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round trips on random addresses and prefixes, against text.
    #[test]
    fn round_trips_agree_with_text() {
        let mut rng = crate::rng::Rng::new(5);
        for i in 0..20_000 {
            let a6 = if i % 7 == 0 {
                (0xffffu128 << 32) | u128::from(rng.next_u64() as u32)
            } else {
                rng.next_u128()
            };
            for ip in [
                IpAddr::V4(Ipv4Addr::from(rng.next_u64() as u32)),
                IpAddr::V6(Ipv6Addr::from(a6)),
            ] {
                let a = AnyAddr::from(ip);
                assert_eq!(a, ip.to_string().parse::<AnyAddr>().unwrap());
                assert_eq!(a.to_string().parse::<AnyAddr>().unwrap(), a);
                if let IpAddr::V6(v6) = ip {
                    assert_eq!(AnyAddr::from(v6), a);
                }
                let len = (rng.below(if ip.is_ipv4() { 33 } else { 129 })) as u8;
                let masked = AnyPrefix::from_ip(ip, len, crate::prefix::HostBits::Mask).unwrap();
                let (net, l) = <(IpAddr, u8)>::from(masked);
                assert_eq!(AnyPrefix::try_from((net, l)).unwrap(), masked);
                assert_eq!(
                    AnyPrefix::try_from((ip, len)).is_ok(),
                    AnyPrefix::parse(&format!("{ip}/{len}"), crate::prefix::HostBits::Reject)
                        .is_ok()
                );
                #[cfg(feature = "ipnet")]
                {
                    let n = ipnet::IpNet::from(masked);
                    assert_eq!(n.to_string(), masked.to_string());
                    assert_eq!(AnyPrefix::try_from(n).unwrap(), masked);
                }
            }
        }
    }
}
