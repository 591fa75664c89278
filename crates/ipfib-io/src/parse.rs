//! One line of a text or ipasn table to a prefix and a value, without
//! allocating.
//!
//! Text: tokens are separated by any run of ASCII whitespace; a token that
//! starts with `#` begins a comment running to the end of the line. The
//! first token is `PREFIX/LEN`, the second the value (any word without `#`),
//! and nothing but a comment may follow.
//!
//! Pfx2as (CAIDA): `ADDR LEN ASN` separated by whitespace (tabs in CAIDA's
//! files); ASN is one or more ASNs joined by `_` (multi-origin) or `,`
//! (an AS set), kept as written. `#` lines are comments.
//!
//! Ipasn (pyasn's `.dat`): a line whose first token starts with `;` is a
//! comment; a data line is `PREFIX/LEN` and an ASN (decimal, fits in 32
//! bits), separated by whitespace (a tab in pyasn's files), nothing after.

use crate::format::Format;
use ipfib::prefix::{AnyPrefix, HostBits, PrefixError};

/// What one line holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// Blank or comment.
    Skip,
    Route(AnyPrefix, &'a str),
}

/// Why one line is bad; the caller adds the file, line number and text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineError<'a> {
    Prefix(PrefixError),
    MissingValue,
    InvalidValue(&'a str, &'static str),
    ExtraText(&'a str),
}

const HASH_IN_VALUE: &str = "'#' inside a value (a trailing comment needs whitespace before it)";
const NOT_AN_ASN: &str = "an ipasn value must be an ASN (a decimal integer below 2^32)";
const NOT_AN_ORIGIN: &str =
    "a pfx2as value must be ASNs (decimal, below 2^32) joined by '_' (multi-origin) or ',' (AS set)";

/// Parse one line (without its line ending) in `format`, which must be
/// `Text` or `Ipasn`.
#[inline]
pub(crate) fn parse_line(
    line: &str,
    format: Format,
    host_bits: HostBits,
) -> Result<Line<'_>, LineError<'_>> {
    let mut tokens = line.split_ascii_whitespace();
    if format == Format::Pfx2as {
        return parse_pfx2as(tokens, host_bits);
    }
    let comment = if format == Format::Ipasn { ';' } else { '#' };
    let prefix = match tokens.next() {
        None => return Ok(Line::Skip),
        Some(t) if t.starts_with(comment) => return Ok(Line::Skip),
        Some(t) => t,
    };
    let prefix = AnyPrefix::parse(prefix, host_bits).map_err(LineError::Prefix)?;
    let value = match tokens.next() {
        None => return Err(LineError::MissingValue),
        Some(t) if format == Format::Text && t.starts_with('#') => {
            return Err(LineError::MissingValue)
        }
        Some(t) => t,
    };
    if format == Format::Ipasn {
        if !is_asn(value) {
            return Err(LineError::InvalidValue(value, NOT_AN_ASN));
        }
        if let Some(extra) = tokens.next() {
            return Err(LineError::ExtraText(extra));
        }
    } else {
        if value.contains('#') {
            return Err(LineError::InvalidValue(value, HASH_IN_VALUE));
        }
        if let Some(extra) = tokens.next() {
            if !extra.starts_with('#') {
                return Err(LineError::ExtraText(extra));
            }
        }
    }
    Ok(Line::Route(prefix, value))
}

fn parse_pfx2as<'a>(
    mut tokens: std::str::SplitAsciiWhitespace<'a>,
    host_bits: HostBits,
) -> Result<Line<'a>, LineError<'a>> {
    let addr = match tokens.next() {
        None => return Ok(Line::Skip),
        Some(t) if t.starts_with('#') => return Ok(Line::Skip),
        Some(t) => t,
    };
    let addr: std::net::IpAddr = addr
        .parse()
        .map_err(|_| LineError::Prefix(PrefixError::InvalidIp(addr.to_string())))?;
    let len = tokens.next().ok_or(LineError::MissingValue)?;
    let len: u8 = len
        .parse()
        .map_err(|_| LineError::Prefix(PrefixError::InvalidLength(len.to_string())))?;
    let prefix = AnyPrefix::from_ip(addr, len, host_bits).map_err(LineError::Prefix)?;
    let value = tokens.next().ok_or(LineError::MissingValue)?;
    if !value.split(['_', ',']).all(is_asn) {
        return Err(LineError::InvalidValue(value, NOT_AN_ORIGIN));
    }
    if let Some(extra) = tokens.next() {
        return Err(LineError::ExtraText(extra));
    }
    Ok(Line::Route(prefix, value))
}

fn is_asn(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) && value.parse::<u32>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &str) -> Result<Line<'_>, LineError<'_>> {
        parse_line(line, Format::Text, HostBits::Reject)
    }

    fn ipasn(line: &str) -> Result<Line<'_>, LineError<'_>> {
        parse_line(line, Format::Ipasn, HostBits::Reject)
    }

    fn p(s: &str) -> AnyPrefix {
        s.parse().unwrap()
    }

    #[test]
    fn text_lines() {
        assert_eq!(text(""), Ok(Line::Skip));
        assert_eq!(text(" \t "), Ok(Line::Skip));
        assert_eq!(text("# 10.0.0.0/8 1"), Ok(Line::Skip));
        assert_eq!(text("  #x"), Ok(Line::Skip));
        assert_eq!(text("10.0.0.0/8 1"), Ok(Line::Route(p("10.0.0.0/8"), "1")));
        assert_eq!(
            text("\t10.0.0.0/8 \t  core-1  "),
            Ok(Line::Route(p("10.0.0.0/8"), "core-1"))
        );
        assert_eq!(
            text("2001:db8::/32 7 # note"),
            Ok(Line::Route(p("2001:db8::/32"), "7"))
        );
        assert_eq!(
            text("2001:db8::/32 7 #"),
            Ok(Line::Route(p("2001:db8::/32"), "7"))
        );
        assert_eq!(text("10.0.0.0/8"), Err(LineError::MissingValue));
        assert_eq!(text("10.0.0.0/8 # no value"), Err(LineError::MissingValue));
        assert_eq!(text("10.0.0.0/8 1 2"), Err(LineError::ExtraText("2")));
        assert_eq!(
            text("10.0.0.0/8 1#x"),
            Err(LineError::InvalidValue("1#x", HASH_IN_VALUE))
        );
        assert!(matches!(
            text("10.0.0.1/8 1"),
            Err(LineError::Prefix(PrefixError::HostBitsSet { .. }))
        ));
        assert_eq!(
            parse_line("10.0.0.1/8 1", Format::Text, HostBits::Mask),
            Ok(Line::Route(p("10.0.0.0/8"), "1"))
        );
        // ';' is no comment in text tables.
        assert!(matches!(text("; header"), Err(LineError::Prefix(_))));
    }

    #[test]
    fn ipasn_lines() {
        assert_eq!(ipasn("; IP-ASN32-DAT file"), Ok(Line::Skip));
        assert_eq!(ipasn(";"), Ok(Line::Skip));
        assert_eq!(ipasn(""), Ok(Line::Skip));
        assert_eq!(
            ipasn("1.0.0.0/24\t15169"),
            Ok(Line::Route(p("1.0.0.0/24"), "15169"))
        );
        assert_eq!(
            ipasn("1.0.0.0/24\t4294967295"),
            Ok(Line::Route(p("1.0.0.0/24"), "4294967295"))
        );
        assert_eq!(
            ipasn("1.0.0.0/24\t4294967296"),
            Err(LineError::InvalidValue("4294967296", NOT_AN_ASN))
        );
        assert_eq!(
            ipasn("1.0.0.0/24\tAS1"),
            Err(LineError::InvalidValue("AS1", NOT_AN_ASN))
        );
        assert_eq!(
            ipasn("1.0.0.0/24\t+1"),
            Err(LineError::InvalidValue("+1", NOT_AN_ASN))
        );
        assert_eq!(ipasn("1.0.0.0/24"), Err(LineError::MissingValue));
        assert_eq!(ipasn("1.0.0.0/24\t1\t# x"), Err(LineError::ExtraText("#")));
        assert!(matches!(ipasn("# x"), Err(LineError::Prefix(_))));
    }
}
