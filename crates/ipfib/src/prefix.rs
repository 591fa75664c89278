//! `Prefix<A>`: an address and a length, always in canonical form (no host
//! bits set), parsed from text or built from `std::net` types.

use crate::addr::Addr;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// Why text or parts could not become a prefix.
///
/// ```
/// use ipfib::prefix::{Prefix, PrefixError};
/// let err = "10.0.0.1/8".parse::<Prefix<u32>>().unwrap_err();
/// assert_eq!(err, PrefixError::HostBitsSet {
///     text: "10.0.0.1/8".into(),
///     canonical: "10.0.0.0/8".into(),
/// });
/// assert_eq!(err.to_string(), "host bits set in 10.0.0.1/8 (did you mean 10.0.0.0/8?)");
/// let err = "10.0.0.0/33".parse::<Prefix<u32>>().unwrap_err();
/// assert_eq!(err, PrefixError::LengthTooLong { len: 33, max: 32 });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    /// The text has no `/LEN` part.
    #[error("missing '/LEN' in prefix {0:?}")]
    MissingLength(String),
    /// The address part is not an address of the expected family.
    #[error("invalid IPv{family} address {text:?}")]
    InvalidAddress { text: String, family: u8 },
    /// The text is neither an IPv4 nor an IPv6 address.
    #[error("invalid IP address {0:?}")]
    InvalidIp(String),
    /// The length part is not a number.
    #[error("invalid prefix length {0:?}")]
    InvalidLength(String),
    /// The length is beyond the family's width.
    #[error("prefix length /{len} is longer than /{max}")]
    LengthTooLong { len: u32, max: u8 },
    /// Bits beyond the length are set (e.g. `10.0.0.1/8`).
    #[error("host bits set in {text} (did you mean {canonical}?)")]
    HostBitsSet { text: String, canonical: String },
}

/// Whether host bits beyond the prefix length are an error or cleared.
///
/// ```
/// use ipfib::prefix::{HostBits, Prefix};
/// assert_eq!(HostBits::default(), HostBits::Reject);
/// assert!(Prefix::<u32>::parse("192.0.2.7/24", HostBits::Reject).is_err());
/// let p = Prefix::<u32>::parse("192.0.2.7/24", HostBits::Mask)?;
/// assert_eq!(p.to_string(), "192.0.2.0/24");
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostBits {
    /// `10.0.0.1/8` is an error (the default: it is usually a typo).
    #[default]
    Reject,
    /// `10.0.0.1/8` becomes `10.0.0.0/8`.
    Mask,
}

/// A prefix `addr/len` of one address family, with no host bits set.
///
/// Ordering is by address, then by length (shorter first): the order of a
/// pre-order walk of a binary trie, which is the order the interval compiler
/// needs.
///
/// `repr(C)` (address, then length, then padding): the layout compiled
/// table files store the route list in ([`crate::image`]).
///
/// ```
/// use ipfib::prefix::Prefix;
/// let p: Prefix<u32> = "10.0.0.0/8".parse()?;
/// assert!(p.contains(0x0a01_0203)); // 10.1.2.3
/// let mut v: Vec<Prefix<u32>> =
///     vec!["10.0.0.0/24".parse()?, "10.0.0.0/8".parse()?, "9.0.0.0/8".parse()?];
/// v.sort(); // by address, then shorter first
/// let text: Vec<String> = v.iter().map(|p| p.to_string()).collect();
/// assert_eq!(text, ["9.0.0.0/8", "10.0.0.0/8", "10.0.0.0/24"]);
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(C)]
pub struct Prefix<A: Addr> {
    addr: A,
    len: u8,
}

/// `Plain::put` for prefixes: the address's little-endian bytes, the
/// length, zero padding (never the padding's own bytes, which are
/// uninitialised).
macro_rules! plain_prefix {
    ($($a:ty),*) => {$(
        // SAFETY: `repr(C)` of an integer and a `u8`: every bit pattern of
        // the fields is valid and padding is never read as a value (a
        // prefix from a file is checked with `is_well_formed` before use);
        // alignment is the integer's (at most 16).
        unsafe impl crate::plain::Plain for Prefix<$a> {
            fn put(items: &[Self], out: &mut Vec<u8>) {
                let size = std::mem::size_of::<Self>();
                for p in items {
                    let start = out.len();
                    out.extend_from_slice(&p.addr.to_le_bytes());
                    out.push(p.len);
                    out.resize(start + size, 0);
                }
            }
        }
    )*};
}
plain_prefix!(u32, u128);

impl<A: Addr> Prefix<A> {
    /// The prefix `addr/len`; an error if `len` is too long or host bits are set.
    ///
    /// ```
    /// use ipfib::prefix::{Prefix, PrefixError};
    /// let p = Prefix::new(0xc000_0200u32, 24)?;
    /// assert_eq!(p.to_string(), "192.0.2.0/24");
    /// let host_bits = Prefix::new(0xc000_0201u32, 24);
    /// assert!(matches!(host_bits, Err(PrefixError::HostBitsSet { .. })));
    /// let too_long = Prefix::new(0u32, 33);
    /// assert_eq!(too_long, Err(PrefixError::LengthTooLong { len: 33, max: 32 }));
    /// # Ok::<(), PrefixError>(())
    /// ```
    pub fn new(addr: A, len: u8) -> Result<Self, PrefixError> {
        Self::with_host_bits(addr, len, HostBits::Reject)
    }

    /// The prefix `addr/len` with host bits cleared; an error only if `len` is too long.
    ///
    /// ```
    /// use ipfib::prefix::Prefix;
    /// let p = Prefix::new_masked(0xc000_02ffu32, 24)?; // 192.0.2.255
    /// assert_eq!(p.to_string(), "192.0.2.0/24");
    /// assert!(Prefix::new_masked(0u128, 129).is_err());
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    pub fn new_masked(addr: A, len: u8) -> Result<Self, PrefixError> {
        Self::with_host_bits(addr, len, HostBits::Mask)
    }

    /// The prefix `addr/len`, treating host bits as `policy` says.
    ///
    /// ```
    /// use ipfib::prefix::{HostBits, Prefix};
    /// let addr = u128::from("2001:db8::1".parse::<std::net::Ipv6Addr>()?);
    /// assert!(Prefix::with_host_bits(addr, 32, HostBits::Reject).is_err());
    /// let p = Prefix::with_host_bits(addr, 32, HostBits::Mask)?;
    /// assert_eq!(p.to_string(), "2001:db8::/32");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_host_bits(addr: A, len: u8, policy: HostBits) -> Result<Self, PrefixError> {
        if len > A::BITS {
            return Err(PrefixError::LengthTooLong {
                len: len as u32,
                max: A::BITS,
            });
        }
        let masked = addr.and(A::mask(len));
        if masked != addr && policy == HostBits::Reject {
            return Err(PrefixError::HostBitsSet {
                text: format!("{}/{}", addr.to_std(), len),
                canonical: format!("{}/{}", masked.to_std(), len),
            });
        }
        Ok(Prefix { addr: masked, len })
    }

    /// Whether the length is within the family and no host bit is set
    /// (always, for a prefix made by this module; checked for prefixes
    /// read from a file).
    ///
    /// ```
    /// use ipfib::prefix::Prefix;
    /// let p: Prefix<u32> = "10.0.0.0/8".parse()?;
    /// assert!(p.is_well_formed());
    /// assert!(Prefix::host(u128::MAX).is_well_formed());
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    #[inline]
    pub fn is_well_formed(&self) -> bool {
        // Branch-free: `checked_shl` past the width gives `None`, read as
        // zero host bits (a host route has none).
        (self.len <= A::BITS) & self.addr.host_bits_clear(self.len)
    }

    /// The host route `addr/BITS`.
    ///
    /// ```
    /// use ipfib::prefix::Prefix;
    /// let h = Prefix::host(0x0808_0808u32);
    /// assert_eq!((h.len(), h.to_string()), (32, "8.8.8.8/32".to_string()));
    /// assert_eq!(Prefix::host(1u128).to_string(), "::1/128");
    /// ```
    pub fn host(addr: A) -> Self {
        Prefix { addr, len: A::BITS }
    }

    /// The default route `/0`.
    ///
    /// ```
    /// use ipfib::prefix::Prefix;
    /// let all = Prefix::<u32>::default_route();
    /// assert_eq!(all.to_string(), "0.0.0.0/0");
    /// assert!(all.contains(0) && all.contains(u32::MAX));
    /// assert_eq!(Prefix::<u128>::default_route().to_string(), "::/0");
    /// ```
    pub fn default_route() -> Self {
        Prefix {
            addr: A::ZERO,
            len: 0,
        }
    }

    /// Parse `ADDR/LEN`, treating host bits as `policy` says.
    ///
    /// ```
    /// use ipfib::prefix::{HostBits, Prefix, PrefixError};
    /// let p = Prefix::<u128>::parse("2001:db8::/32", HostBits::Reject)?;
    /// assert_eq!(p.len(), 32);
    /// let no_len = Prefix::<u32>::parse("10.0.0.0", HostBits::Reject);
    /// assert_eq!(no_len, Err(PrefixError::MissingLength("10.0.0.0".into())));
    /// let wrong_family = Prefix::<u32>::parse("::/0", HostBits::Reject);
    /// assert!(matches!(wrong_family, Err(PrefixError::InvalidAddress { family: 4, .. })));
    /// let bad_len = Prefix::<u32>::parse("10.0.0.0/x", HostBits::Mask);
    /// assert_eq!(bad_len, Err(PrefixError::InvalidLength("x".into())));
    /// # Ok::<(), PrefixError>(())
    /// ```
    pub fn parse(text: &str, policy: HostBits) -> Result<Self, PrefixError> {
        let (a, l) = text
            .split_once('/')
            .ok_or_else(|| PrefixError::MissingLength(text.to_string()))?;
        let addr = a
            .parse::<A::Std>()
            .map_err(|_| PrefixError::InvalidAddress {
                text: a.to_string(),
                family: A::FAMILY,
            })?;
        let len = parse_len(l, A::BITS)?;
        Self::with_host_bits(A::from_std(addr), len, policy)
    }

    /// The first address of the prefix (the network address).
    ///
    /// ```
    /// let p: ipfib::prefix::Prefix<u32> = "10.1.0.0/16".parse()?;
    /// assert_eq!(p.addr(), 0x0a01_0000);
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    #[inline]
    pub fn addr(&self) -> A {
        self.addr
    }

    /// The prefix length (not a container size: there is no `is_empty`).
    ///
    /// ```
    /// let p: ipfib::prefix::Prefix<u128> = "2001:db8::/48".parse()?;
    /// assert_eq!(p.len(), 48);
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u8 {
        self.len
    }

    /// The last address covered by the prefix (inclusive, never overflows).
    ///
    /// ```
    /// use ipfib::prefix::Prefix;
    /// use std::net::Ipv4Addr;
    /// let p: Prefix<u32> = "10.0.0.0/8".parse()?;
    /// assert_eq!(Ipv4Addr::from(p.last()), Ipv4Addr::new(10, 255, 255, 255));
    /// let all: Prefix<u128> = "::/0".parse()?;
    /// assert_eq!(all.last(), u128::MAX); // inclusive: no overflow at the top
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    #[inline]
    pub fn last(&self) -> A {
        self.addr.last_of(self.len)
    }

    /// Whether `a` lies inside this prefix.
    ///
    /// ```
    /// use ipfib::prefix::Prefix;
    /// use std::net::Ipv4Addr;
    /// let p: Prefix<u32> = "192.0.2.0/24".parse()?;
    /// assert!(p.contains(Ipv4Addr::new(192, 0, 2, 200).into()));
    /// assert!(!p.contains(Ipv4Addr::new(192, 0, 3, 0).into()));
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    #[inline]
    pub fn contains(&self, a: A) -> bool {
        a.and(A::mask(self.len)) == self.addr
    }

    /// Whether `other` lies inside this prefix (a prefix covers itself).
    ///
    /// ```
    /// use ipfib::prefix::Prefix;
    /// let big: Prefix<u32> = "10.0.0.0/8".parse()?;
    /// let small: Prefix<u32> = "10.1.0.0/16".parse()?;
    /// assert!(big.covers(&small) && big.covers(&big));
    /// assert!(!small.covers(&big));
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    #[inline]
    pub fn covers(&self, other: &Prefix<A>) -> bool {
        self.len <= other.len && self.contains(other.addr)
    }

    /// The prefix of length `len` (`<= self.len()`) that covers this one.
    ///
    /// ```
    /// use ipfib::prefix::Prefix;
    /// let p: Prefix<u32> = "10.1.2.0/24".parse()?;
    /// assert_eq!(p.truncate(8).to_string(), "10.0.0.0/8");
    /// assert_eq!(p.truncate(30), p); // never longer than itself
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    pub fn truncate(&self, len: u8) -> Self {
        let len = len.min(self.len);
        Prefix {
            addr: self.addr.and(A::mask(len)),
            len,
        }
    }
}

/// A prefix length of up to three digits; `max`: the family's bits, named
/// in the error of a length past 255 (shorter ones are checked with the
/// address).
fn parse_len(l: &str, max: u8) -> Result<u8, PrefixError> {
    if l.is_empty() || l.len() > 3 || !l.bytes().all(|b| b.is_ascii_digit()) {
        return Err(PrefixError::InvalidLength(l.to_string()));
    }
    let n: u32 = l
        .parse()
        .map_err(|_| PrefixError::InvalidLength(l.to_string()))?;
    u8::try_from(n).map_err(|_| PrefixError::LengthTooLong { len: n, max })
}

/// ```
/// use ipfib::prefix::{Prefix, PrefixError};
/// let p: Prefix<u128> = "2001:db8::/32".parse()?;
/// assert_eq!(p.len(), 32);
/// // Strict: host bits are an error (see `Prefix::parse` to mask them).
/// assert!(matches!("10.0.0.1/8".parse::<Prefix<u32>>(), Err(PrefixError::HostBitsSet { .. })));
/// # Ok::<(), PrefixError>(())
/// ```
impl<A: Addr> FromStr for Prefix<A> {
    type Err = PrefixError;
    /// Strict parse: host bits set is an error.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s, HostBits::Reject)
    }
}

/// ```
/// use ipfib::prefix::Prefix;
/// assert_eq!(Prefix::new(0x0a00_0000u32, 8)?.to_string(), "10.0.0.0/8");
/// assert_eq!(Prefix::new(0x2001_0db8u128 << 96, 32)?.to_string(), "2001:db8::/32");
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
impl<A: Addr> fmt::Display for Prefix<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr.to_std(), self.len)
    }
}

/// ```
/// use ipfib::prefix::Prefix;
/// let p: Prefix<u32> = "192.0.2.0/24".parse()?;
/// assert_eq!(format!("{p:?}"), "192.0.2.0/24"); // as Display: readable in assertions
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
impl<A: Addr> fmt::Debug for Prefix<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A prefix of either family, as found in a mixed table file.
///
/// ```
/// use ipfib::prefix::AnyPrefix;
/// let p: AnyPrefix = "2001:db8::/32".parse()?;
/// assert!(matches!(p, AnyPrefix::V6(q) if q.len() == 32));
/// // Prefixes are never unmapped: this one stays IPv6.
/// assert!(matches!("::ffff:10.0.0.0/104".parse()?, AnyPrefix::V6(_)));
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum AnyPrefix {
    V4(Prefix<u32>),
    V6(Prefix<u128>),
}

impl AnyPrefix {
    /// Parse `ADDR/LEN` of either family, treating host bits as `policy` says.
    ///
    /// ```
    /// use ipfib::prefix::{AnyPrefix, HostBits};
    /// let p = AnyPrefix::parse("10.1.2.3/8", HostBits::Mask)?;
    /// assert_eq!(p.to_string(), "10.0.0.0/8");
    /// assert!(AnyPrefix::parse("10.1.2.3/8", HostBits::Reject).is_err());
    /// assert!(AnyPrefix::parse("2001:db8::/129", HostBits::Mask).is_err());
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    pub fn parse(text: &str, policy: HostBits) -> Result<Self, PrefixError> {
        let (a, _) = text
            .split_once('/')
            .ok_or_else(|| PrefixError::MissingLength(text.to_string()))?;
        if a.contains(':') {
            Prefix::<u128>::parse(text, policy).map(AnyPrefix::V6)
        } else {
            Prefix::<u32>::parse(text, policy).map(AnyPrefix::V4)
        }
    }

    /// Build from an `IpAddr` and a length.
    ///
    /// ```
    /// use ipfib::prefix::{AnyPrefix, HostBits};
    /// use std::net::IpAddr;
    /// let ip: IpAddr = "2001:db8::1".parse()?;
    /// let p = AnyPrefix::from_ip(ip, 64, HostBits::Mask)?;
    /// assert_eq!(p.to_string(), "2001:db8::/64");
    /// assert!(AnyPrefix::from_ip(ip, 64, HostBits::Reject).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_ip(addr: IpAddr, len: u8, policy: HostBits) -> Result<Self, PrefixError> {
        match addr {
            IpAddr::V4(a) => Prefix::with_host_bits(u32::from(a), len, policy).map(AnyPrefix::V4),
            IpAddr::V6(a) => Prefix::with_host_bits(u128::from(a), len, policy).map(AnyPrefix::V6),
        }
    }

    /// 4 or 6.
    ///
    /// ```
    /// use ipfib::prefix::AnyPrefix;
    /// assert_eq!("10.0.0.0/8".parse::<AnyPrefix>()?.family(), 4);
    /// assert_eq!("::/0".parse::<AnyPrefix>()?.family(), 6);
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    pub fn family(&self) -> u8 {
        match self {
            AnyPrefix::V4(_) => 4,
            AnyPrefix::V6(_) => 6,
        }
    }

    /// The prefix length.
    ///
    /// ```
    /// use ipfib::prefix::AnyPrefix;
    /// assert_eq!("10.0.0.0/8".parse::<AnyPrefix>()?.len(), 8);
    /// assert_eq!("2001:db8::/48".parse::<AnyPrefix>()?.len(), 48);
    /// # Ok::<(), ipfib::prefix::PrefixError>(())
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u8 {
        match self {
            AnyPrefix::V4(p) => p.len(),
            AnyPrefix::V6(p) => p.len(),
        }
    }
}

/// ```
/// use ipfib::prefix::AnyPrefix;
/// assert_eq!("10.0.0.0/8".parse::<AnyPrefix>()?.family(), 4);
/// assert_eq!("::/0".parse::<AnyPrefix>()?.family(), 6);
/// assert!("10.0.0.1/8".parse::<AnyPrefix>().is_err()); // strict, as for `Prefix`
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
impl FromStr for AnyPrefix {
    type Err = PrefixError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s, HostBits::Reject)
    }
}

/// ```
/// use ipfib::prefix::AnyPrefix;
/// let p: AnyPrefix = "2001:DB8:0::/48".parse()?;
/// assert_eq!(p.to_string(), "2001:db8::/48"); // canonical text
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
impl fmt::Display for AnyPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyPrefix::V4(p) => p.fmt(f),
            AnyPrefix::V6(p) => p.fmt(f),
        }
    }
}

/// ```
/// use ipfib::prefix::{AnyPrefix, Prefix};
/// let p = Prefix::<u32>::default_route();
/// assert_eq!(AnyPrefix::from(p), AnyPrefix::V4(p));
/// ```
impl From<Prefix<u32>> for AnyPrefix {
    fn from(p: Prefix<u32>) -> Self {
        AnyPrefix::V4(p)
    }
}

/// ```
/// use ipfib::prefix::{AnyPrefix, Prefix};
/// let p = Prefix::host(1u128);
/// assert_eq!(AnyPrefix::from(p).to_string(), "::1/128");
/// ```
impl From<Prefix<u128>> for AnyPrefix {
    fn from(p: Prefix<u128>) -> Self {
        AnyPrefix::V6(p)
    }
}

/// An address of either family, with the IPv4-mapped rule applied.
///
/// Decision (documented in docs/architecture.md): an IPv6 address in
/// `::ffff:0:0/96` (`::ffff:a.b.c.d`) is looked up as the IPv4 address
/// `a.b.c.d`, as bart advises and akvorado does, because flow exporters and
/// dual-stack sockets hand out IPv4 peers in that form. The per-family
/// engines themselves take addresses as given; only the mixed-family edges
/// (the `Table` type, the CLI, the bindings) unmap.
///
/// ```
/// use ipfib::prefix::AnyAddr;
/// assert_eq!("192.0.2.1".parse::<AnyAddr>()?, AnyAddr::V4(0xc000_0201));
/// // IPv4-mapped IPv6 is IPv4; IPv4-compatible (`::a.b.c.d`) stays IPv6.
/// assert_eq!("::ffff:192.0.2.1".parse::<AnyAddr>()?, AnyAddr::V4(0xc000_0201));
/// assert_eq!("::192.0.2.1".parse::<AnyAddr>()?, AnyAddr::V6(0xc000_0201));
/// # Ok::<(), ipfib::prefix::PrefixError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AnyAddr {
    V4(u32),
    V6(u128),
}

impl AnyAddr {
    /// Classify an `IpAddr`, unmapping `::ffff:a.b.c.d` to IPv4.
    ///
    /// ```
    /// use ipfib::prefix::AnyAddr;
    /// use std::net::{IpAddr, Ipv4Addr};
    /// let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
    /// assert_eq!(AnyAddr::unmapped(mapped), AnyAddr::V4(0x0a00_0001));
    /// assert_eq!(AnyAddr::unmapped("::1".parse()?), AnyAddr::V6(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unmapped(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(a) => AnyAddr::V4(u32::from(a)),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => AnyAddr::V4(u32::from(v4)),
                None => AnyAddr::V6(u128::from(a)),
            },
        }
    }

    /// Parse text of either family, unmapping IPv4-mapped IPv6 addresses.
    /// Surrounding whitespace is ignored.
    ///
    /// ```
    /// use ipfib::prefix::{AnyAddr, PrefixError};
    /// assert_eq!(AnyAddr::parse(" 10.0.0.1\n")?, AnyAddr::V4(0x0a00_0001));
    /// assert_eq!(AnyAddr::parse("::ffff:10.0.0.1")?, AnyAddr::V4(0x0a00_0001));
    /// let err = AnyAddr::parse("10.0.0.0/8");
    /// assert_eq!(err, Err(PrefixError::InvalidIp("10.0.0.0/8".into())));
    /// # Ok::<(), PrefixError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, PrefixError> {
        let t = text.trim();
        t.parse::<IpAddr>()
            .map(Self::unmapped)
            .map_err(|_| PrefixError::InvalidIp(t.to_string()))
    }

    /// Parse ASCII bytes with no surrounding whitespace, unmapping
    /// IPv4-mapped IPv6 addresses: `Some` exactly where [`AnyAddr::parse`]
    /// of the same text succeeds, with the same address (the grammar of
    /// `std`'s `IpAddr::from_str`, see `addr_text.rs`), `None` elsewhere,
    /// including for any whitespace or non-ASCII byte. Neither checks UTF-8
    /// nor allocates: for readers of large inputs, which fall back to
    /// [`AnyAddr::parse`] for the error message (or for text that other
    /// Unicode whitespace surrounds).
    ///
    /// ```
    /// use ipfib::prefix::AnyAddr;
    /// assert_eq!(AnyAddr::parse_ascii(b"::ffff:10.0.0.1"), Some(AnyAddr::V4(0x0a00_0001)));
    /// assert_eq!(AnyAddr::parse_ascii(b"2001:db8::1"), AnyAddr::parse("2001:db8::1").ok());
    /// assert_eq!(AnyAddr::parse_ascii(b" 10.0.0.1"), None); // whitespace: `parse` trims it
    /// assert_eq!(AnyAddr::parse_ascii(b"010.0.0.1"), None); // std's grammar: no leading zeros
    /// assert!(AnyAddr::parse("010.0.0.1").is_err());
    /// ```
    #[inline]
    pub fn parse_ascii(bytes: &[u8]) -> Option<Self> {
        Some(match crate::addr_text::parse_ip(bytes)? {
            crate::addr_text::Parsed::V4(a) => AnyAddr::V4(a),
            crate::addr_text::Parsed::V6(a) => match Ipv6Addr::from(a).to_ipv4_mapped() {
                Some(v4) => AnyAddr::V4(u32::from(v4)),
                None => AnyAddr::V6(a),
            },
        })
    }

    /// Back to an `IpAddr` (IPv4 stays IPv4).
    ///
    /// ```
    /// use ipfib::prefix::AnyAddr;
    /// use std::net::IpAddr;
    /// assert_eq!(AnyAddr::V6(1).to_ip(), "::1".parse::<IpAddr>()?);
    /// // A mapped address comes back as IPv4, not as the text it was parsed from.
    /// assert_eq!(AnyAddr::parse("::ffff:10.0.0.1")?.to_ip(), "10.0.0.1".parse::<IpAddr>()?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_ip(self) -> IpAddr {
        match self {
            AnyAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(a)),
            AnyAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(a)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays() {
        let p: Prefix<u32> = "10.0.0.0/8".parse().unwrap();
        assert_eq!(p.addr(), 0x0a00_0000);
        assert_eq!(p.len(), 8);
        assert_eq!(p.to_string(), "10.0.0.0/8");
        assert_eq!(p.last(), 0x0aff_ffff);
        let q: Prefix<u128> = "2001:db8::/32".parse().unwrap();
        assert_eq!(q.to_string(), "2001:db8::/32");
        let top: Prefix<u128> = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"
            .parse()
            .unwrap();
        assert_eq!(top.last(), u128::MAX);
        let all: Prefix<u32> = "0.0.0.0/0".parse().unwrap();
        assert_eq!(all.last(), u32::MAX);
    }

    #[test]
    fn rejects_bad_text_with_typed_errors() {
        assert!(matches!(
            "10.0.0.1/8".parse::<Prefix<u32>>(),
            Err(PrefixError::HostBitsSet { .. })
        ));
        assert_eq!(
            Prefix::<u32>::parse("10.0.0.1/8", HostBits::Mask).unwrap(),
            "10.0.0.0/8".parse().unwrap()
        );
        assert!(matches!(
            "10.0.0.0/33".parse::<Prefix<u32>>(),
            Err(PrefixError::LengthTooLong { len: 33, max: 32 })
        ));
        assert!(matches!(
            "::/129".parse::<Prefix<u128>>(),
            Err(PrefixError::LengthTooLong { len: 129, max: 128 })
        ));
        assert_eq!(
            "10.0.0.0/300".parse::<Prefix<u32>>(),
            Err(PrefixError::LengthTooLong { len: 300, max: 32 })
        );
        assert_eq!(
            "::/999".parse::<Prefix<u128>>(),
            Err(PrefixError::LengthTooLong { len: 999, max: 128 })
        );
        assert!(matches!(
            "10.0.0.0".parse::<Prefix<u32>>(),
            Err(PrefixError::MissingLength(_))
        ));
        assert!(matches!(
            "10.0.0/8".parse::<Prefix<u32>>(),
            Err(PrefixError::InvalidAddress { .. })
        ));
        assert!(matches!(
            "10.0.0.0/x".parse::<Prefix<u32>>(),
            Err(PrefixError::InvalidLength(_))
        ));
        assert!(matches!(
            "10.0.0.0/-1".parse::<Prefix<u32>>(),
            Err(PrefixError::InvalidLength(_))
        ));
        assert!(matches!(
            "::/8".parse::<Prefix<u32>>(),
            Err(PrefixError::InvalidAddress { family: 4, .. })
        ));
    }

    #[test]
    fn any_prefix_picks_the_family() {
        assert!(matches!(
            "1.2.3.0/24".parse::<AnyPrefix>(),
            Ok(AnyPrefix::V4(_))
        ));
        assert!(matches!(
            "::ffff:1.2.3.0/120".parse::<AnyPrefix>(),
            Ok(AnyPrefix::V6(_))
        ));
    }

    #[test]
    fn mapped_addresses_are_unmapped() {
        assert_eq!(
            AnyAddr::parse("::ffff:1.2.3.4").unwrap(),
            AnyAddr::V4(0x0102_0304)
        );
        assert!(matches!(
            AnyAddr::parse("::1.2.3.4").unwrap(),
            AnyAddr::V6(_)
        ));
        assert!(AnyAddr::parse("1.2.3").is_err());
        assert_eq!(
            AnyAddr::parse_ascii(b"::ffff:1.2.3.4"),
            Some(AnyAddr::V4(0x0102_0304))
        );
        assert_eq!(
            AnyAddr::parse_ascii(b"::1.2.3.4"),
            Some(AnyAddr::V6(0x0102_0304))
        );
    }

    /// `parse_ascii` answers what `parse` answers on whitespace-free ASCII
    /// (the byte grammar itself is held to `std` in `addr_text.rs`).
    #[test]
    fn parse_ascii_agrees_with_parse() {
        let mut rng = crate::rng::Rng::new(3);
        for _ in 0..20_000 {
            let a = rng.next_u128();
            for text in [
                Ipv6Addr::from(a).to_string(),
                Ipv6Addr::from(a & 0xffff_ffff | 0xffff << 32).to_string(),
                Ipv4Addr::from(a as u32).to_string(),
                format!("{}x", Ipv4Addr::from(a as u32)),
            ] {
                assert_eq!(
                    AnyAddr::parse_ascii(text.as_bytes()),
                    AnyAddr::parse(&text).ok(),
                    "{text}"
                );
            }
        }
    }

    /// The file form of a prefix: address, length, zeroed padding.
    #[test]
    fn prefixes_are_written_with_zeroed_padding() {
        use crate::plain::Plain;
        let mut out = Vec::new();
        Prefix::<u32>::put(&["10.0.0.0/8".parse().unwrap()], &mut out);
        assert_eq!(out, [0, 0, 0, 10, 8, 0, 0, 0]);
    }

    #[test]
    fn ordering_is_trie_preorder() {
        let mut v: Vec<Prefix<u32>> = ["10.0.0.0/24", "10.0.0.0/8", "9.0.0.0/8", "0.0.0.0/0"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        v.sort();
        let s: Vec<String> = v.iter().map(|p| p.to_string()).collect();
        assert_eq!(s, ["0.0.0.0/0", "9.0.0.0/8", "10.0.0.0/8", "10.0.0.0/24"]);
    }
}
