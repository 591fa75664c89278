//! What a query names: a prefix (`ADDR/LEN`, host bits clear) or an
//! address alone, which stands for its host prefix. One parser for every
//! front end (the collector's HTTP API and `--bmp-allow`, Python's
//! `Rib.routes`); each wraps the error in its own words.
//!
//! IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) given alone are the IPv4
//! host `a.b.c.d/32`, as lookups treat them; a mapped prefix written with
//! a length is kept as written unless the caller folds it with
//! [`fold_mapped`].

use std::net::{AddrParseError, IpAddr};

use ipfib::prefix::{AnyAddr, AnyPrefix, HostBits, PrefixError};

/// Why a target did not parse. `Display` is the underlying parser's
/// message alone, for the caller to prefix with what it was parsing.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// No `/`, and not an address.
    #[error(transparent)]
    Address(#[from] AddrParseError),
    /// A malformed prefix, or host bits set.
    #[error(transparent)]
    Prefix(#[from] PrefixError),
}

/// `text` as a prefix, or as the host prefix of the address it is
/// (`/32` or `/128`, an IPv4-mapped address as IPv4). No trimming: the
/// caller decides what surrounding text it tolerates.
pub fn parse_prefix_or_addr(text: &str) -> Result<AnyPrefix, TargetError> {
    if text.contains('/') {
        return Ok(AnyPrefix::parse(text, HostBits::Reject)?);
    }
    let a = AnyAddr::unmapped(text.parse::<IpAddr>()?).to_ip();
    let len = if a.is_ipv4() { 32 } else { 128 };
    Ok(AnyPrefix::from_ip(a, len, HostBits::Reject)?)
}

/// `::ffff:a.b.c.d/96+n` as the IPv4 prefix `a.b.c.d/n` (the mapped rule
/// lookups apply to addresses, extended to prefixes inside `::ffff:0:0/96`);
/// any other prefix unchanged.
pub fn fold_mapped(p: AnyPrefix) -> AnyPrefix {
    match p {
        AnyPrefix::V6(p6) if p6.len() >= 96 && (p6.addr() >> 32) == 0xffff => {
            ipfib::prefix::Prefix::new_masked(p6.addr() as u32, p6.len() - 96)
                .map(AnyPrefix::V4)
                .unwrap_or(p)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_addresses() {
        let p = |t: &str| parse_prefix_or_addr(t).map(|p| p.to_string());
        assert_eq!(p("192.0.2.0/24").unwrap(), "192.0.2.0/24");
        assert_eq!(p("192.0.2.1").unwrap(), "192.0.2.1/32");
        assert_eq!(p("2001:db8::1").unwrap(), "2001:db8::1/128");
        assert_eq!(p("::ffff:192.0.2.1").unwrap(), "192.0.2.1/32");
        // A mapped prefix with a length stays IPv6 until folded.
        let mapped = parse_prefix_or_addr("::ffff:192.0.2.0/120").unwrap();
        assert!(matches!(mapped, AnyPrefix::V6(_)));
        assert_eq!(fold_mapped(mapped).to_string(), "192.0.2.0/24");
        assert!(matches!(
            parse_prefix_or_addr("192.0.2.1/24"),
            Err(TargetError::Prefix(_))
        ));
        assert!(matches!(
            parse_prefix_or_addr("nonsense"),
            Err(TargetError::Address(_))
        ));
        assert!(parse_prefix_or_addr(" 192.0.2.1").is_err());
    }

    #[test]
    fn messages_are_the_parsers_own() {
        let e = parse_prefix_or_addr("nonsense").unwrap_err();
        let direct = "nonsense".parse::<IpAddr>().unwrap_err();
        assert_eq!(e.to_string(), direct.to_string());
        let e = parse_prefix_or_addr("192.0.2.1/24").unwrap_err();
        let direct = AnyPrefix::parse("192.0.2.1/24", HostBits::Reject).unwrap_err();
        assert_eq!(e.to_string(), direct.to_string());
    }
}
