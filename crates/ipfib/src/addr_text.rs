//! Addresses from ASCII bytes without a UTF-8 check or an allocation, for
//! callers that read text in blocks (the CLI's stdin).
//!
//! The grammar is exactly the one `std`'s `IpAddr::from_str` accepts, so
//! that the byte path and [`crate::prefix::AnyAddr::parse`] never disagree:
//! this is a port of `core::net::parser` (`read_ip_addr`), keeping its
//! order of attempts and its commit points:
//! - IPv4: four decimal numbers of 1-3 digits, each at most 255, no leading
//!   zero (`0` alone is fine, `00` and `01` are not), separated by `.`;
//! - IPv6: up to eight groups of 1-4 hex digits (either case, leading
//!   zeros allowed) separated by `:`, one `::` standing for at least one
//!   zero group, and optionally an embedded IPv4 address as the last 32
//!   bits (tried before each group that leaves room for two);
//! - the IPv4 form is tried first; if it matches a prefix of the input
//!   the input is not tried as IPv6 (no IPv6 address starts with a dotted
//!   IPv4 address, so this only matters for the port's faithfulness);
//! - no whitespace, zone id (`%eth0`), brackets or port: the whole input
//!   must be consumed.
//!
//! The differential tests below hold the port to `std` on edge cases and
//! random strings.

/// Parse `s` as `std` parses an `IpAddr`; `None` where it would refuse.
#[inline]
pub(crate) fn parse_ip(s: &[u8]) -> Option<Parsed> {
    let mut pos = 0;
    if let Some(v4) = read_ipv4(s, &mut pos) {
        return (pos == s.len()).then_some(Parsed::V4(v4));
    }
    let mut pos = 0;
    let v6 = read_ipv6(s, &mut pos)?;
    (pos == s.len()).then_some(Parsed::V6(v6))
}

/// An address as written (IPv4-mapped IPv6 addresses stay IPv6 here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    V4(u32),
    V6(u128),
}

/// `read_number(10, Some(3), false)` as a `u8`: 1-3 digits, no leading
/// zero, at most 255. Leaves `pos` alone on failure.
#[inline(always)]
fn read_octet(s: &[u8], pos: &mut usize) -> Option<u8> {
    let start = *pos;
    let mut p = start;
    let mut value = 0u32;
    while let Some(d) = s.get(p).map(|&b| b.wrapping_sub(b'0')).filter(|&d| d < 10) {
        value = value * 10 + u32::from(d);
        p += 1;
        if p - start > 3 {
            return None;
        }
    }
    let digits = p - start;
    if digits == 0 || (digits > 1 && s.get(start) == Some(&b'0')) {
        return None;
    }
    let octet = u8::try_from(value).ok()?;
    *pos = p;
    Some(octet)
}

/// `read_number(16, Some(4), true)`: 1-4 hex digits.
#[inline(always)]
fn read_group(s: &[u8], pos: &mut usize) -> Option<u16> {
    let start = *pos;
    let mut p = start;
    let mut value = 0u32;
    while let Some(&d) = s
        .get(p)
        .and_then(|&b| HEX.get(usize::from(b)))
        .filter(|&&d| d < 16)
    {
        value = (value << 4) | u32::from(d);
        p += 1;
        if p - start > 4 {
            return None;
        }
    }
    if p == start {
        return None;
    }
    *pos = p;
    // At most four hex digits: fits.
    u16::try_from(value).ok()
}

/// Hex digit values (`char::to_digit(16)`), 255 for other bytes.
const HEX: [u8; 256] = {
    let mut t = [u8::MAX; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// `read_given_char`: consume `c` if it is next.
#[inline(always)]
fn eat(s: &[u8], pos: &mut usize, c: u8) -> bool {
    if s.get(*pos) == Some(&c) {
        *pos += 1;
        true
    } else {
        false
    }
}

/// `read_ipv4_addr`: four octets separated by `.`; need not reach the end.
#[inline(always)]
fn read_ipv4(s: &[u8], pos: &mut usize) -> Option<u32> {
    let mut p = *pos;
    let mut addr = 0u32;
    for i in 0..4 {
        if i > 0 && !eat(s, &mut p, b'.') {
            return None;
        }
        addr = (addr << 8) | u32::from(read_octet(s, &mut p)?);
    }
    *pos = p;
    Some(addr)
}

/// `read_ipv6_addr`'s `read_groups`: fill `groups` from the front; how
/// many were read and whether the last two came from an embedded IPv4
/// address.
fn read_groups(s: &[u8], pos: &mut usize, groups: &mut [u16]) -> (usize, bool) {
    let limit = groups.len();
    // An embedded IPv4 address needs dots after `pos`: without one, every
    // attempt below would fail, so none is made (same answers, faster).
    let dotted = s.get(*pos..).is_some_and(|rest| rest.contains(&b'.'));
    for i in 0..limit {
        if dotted && i + 1 < limit {
            let mut p = *pos;
            if i == 0 || eat(s, &mut p, b':') {
                if let Some(v4) = read_ipv4(s, &mut p) {
                    *pos = p;
                    groups[i] = (v4 >> 16) as u16;
                    groups[i + 1] = v4 as u16;
                    return (i + 2, true);
                }
            }
        }
        let mut p = *pos;
        if !(i == 0 || eat(s, &mut p, b':')) {
            return (i, false);
        }
        match read_group(s, &mut p) {
            Some(g) => {
                *pos = p;
                groups[i] = g;
            }
            None => return (i, false),
        }
    }
    (limit, false)
}

/// `read_ipv6_addr`: head groups, then `::` and tail groups unless the
/// head has all eight.
fn read_ipv6(s: &[u8], pos: &mut usize) -> Option<u128> {
    let mut p = *pos;
    let mut head = [0u16; 8];
    let (head_size, head_ipv4) = read_groups(s, &mut p, &mut head);
    if head_size < 8 {
        // An embedded IPv4 address may not come before `::`.
        if head_ipv4 || !(eat(s, &mut p, b':') && eat(s, &mut p, b':')) {
            return None;
        }
        // `::` stands for at least one zero group: at most seven remain.
        let mut tail = [0u16; 7];
        let limit = 8 - (head_size + 1);
        let (tail_size, _) = read_groups(s, &mut p, &mut tail[..limit]);
        head[8 - tail_size..].copy_from_slice(&tail[..tail_size]);
    }
    *pos = p;
    Some(head.iter().fold(0u128, |a, &g| (a << 16) | u128::from(g)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::net::IpAddr;

    /// What `std` says, in the port's terms.
    fn std_parse(s: &[u8]) -> Option<Parsed> {
        match std::str::from_utf8(s).ok()?.parse::<IpAddr>().ok()? {
            IpAddr::V4(a) => Some(Parsed::V4(u32::from(a))),
            IpAddr::V6(a) => Some(Parsed::V6(u128::from(a))),
        }
    }

    fn check(s: &[u8]) {
        assert_eq!(
            parse_ip(s),
            std_parse(s),
            "{:?}",
            String::from_utf8_lossy(s)
        );
    }

    const EDGES: &[&str] = &[
        "",
        "0.0.0.0",
        "255.255.255.255",
        "256.0.0.0",
        "1.2.3",
        "1.2.3.4.",
        "1.2.3.4.5",
        ".1.2.3.4",
        "01.2.3.4",
        "00.2.3.4",
        "1.2.3.04",
        "1.2.3.000",
        "1.2.3.0000",
        "1.2.3.1234",
        "1..2.3",
        "1.2.3.4 ",
        " 1.2.3.4",
        "1.2.3.4\r",
        "1.2.3.4\n",
        "1.2.3.4/24",
        "1.2.3.4:80",
        "+1.2.3.4",
        "1.2.3.-4",
        "1.2.3.4a",
        "::",
        ":::",
        "::1",
        "1::",
        ":1",
        "1:",
        "1:2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7:8:9",
        "1:2:3:4:5:6:7::",
        "::1:2:3:4:5:6:7",
        "::1:2:3:4:5:6:7:8",
        "1:2:3:4:5:6:7::8",
        "1::2::3",
        "1:2:3:4:5:6:7:8::",
        "::ffff:1.2.3.4",
        "::FFFF:1.2.3.4",
        "::ffff:01.2.3.4",
        "::ffff:1.2.3.4.5",
        "::ffff:1.2.3",
        "::1.2.3.4",
        "1.2.3.4::",
        "1.2.3.4::1",
        "1:2:3:4:5:6:1.2.3.4",
        "1:2:3:4:5:6:7:1.2.3.4",
        "1:2:3:4:5::1.2.3.4",
        "1:2:3:4:5:6::1.2.3.4",
        "::1:2:3:4:5:1.2.3.4",
        "::1:2:3:4:5:6:1.2.3.4",
        "::1234",
        "::12345",
        "::0000",
        "::00000",
        "::abcd",
        "::ABCD",
        "::abcg",
        "fe80::1%eth0",
        "fe80::1%1",
        "[::1]",
        "2001:db8::1 ",
        "2001:0db8:0000:0000:0000:0000:0000:0001",
        "2001:db8:0:0:0:0:0:1",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
        "::255.255.255.256",
        "::1.2.3.4:5",
        "1:2:3:4:5:6:7:8%",
        "\u{a0}1.2.3.4",
        "１.2.3.4",
    ];

    #[test]
    fn edge_cases_agree_with_std() {
        for s in EDGES {
            check(s.as_bytes());
        }
        check(b"1.2.3.\xff");
        check(b"\xff::1");
        // The port accepts what it should (not only refuses alike).
        assert_eq!(parse_ip(b"1.2.3.4"), Some(Parsed::V4(0x0102_0304)));
        assert_eq!(
            parse_ip(b"::ffff:1.2.3.4"),
            Some(Parsed::V6(0xffff_0102_0304))
        );
    }

    /// Random strings over the grammar's alphabet and a few strangers.
    #[test]
    fn random_strings_agree_with_std() {
        const ALPHABET: &[u8] = b"0123456789abcdefABCDEF.:::...%gx \r\t/\xc2\xa0";
        let mut rng = Rng::new(7);
        let mut s = Vec::new();
        for _ in 0..300_000 {
            s.clear();
            let len = rng.below(42) as usize;
            for _ in 0..len {
                s.push(ALPHABET[rng.below(ALPHABET.len() as u64) as usize]);
            }
            check(&s);
        }
    }

    /// Valid addresses in many spellings, then random edits of them.
    #[test]
    fn valid_addresses_and_their_mutations_agree_with_std() {
        const EDIT: &[u8] = b"0123456789afAF.:%x ";
        let mut rng = Rng::new(11);
        for _ in 0..100_000 {
            let text = match rng.below(6) {
                0 => std::net::Ipv4Addr::from(rng.next_u64() as u32).to_string(),
                1 => std::net::Ipv6Addr::from(rng.next_u128()).to_string(),
                // Sparse IPv6: runs of zero groups, so `::` in every place.
                2 => {
                    let mut a = rng.next_u128();
                    for g in 0..8 {
                        if rng.below(2) == 0 {
                            a &= !(0xffffu128 << (16 * g));
                        }
                    }
                    std::net::Ipv6Addr::from(a).to_string()
                }
                // Full eight groups with leading zeros, either case.
                3 => {
                    let a = rng.next_u128();
                    let groups: Vec<String> = (0..8)
                        .map(|g| format!("{:04x}", (a >> (112 - 16 * g)) as u16))
                        .collect();
                    groups.join(":").to_uppercase()
                }
                // IPv4-mapped and embedded IPv4.
                4 => format!("::ffff:{}", std::net::Ipv4Addr::from(rng.next_u64() as u32)),
                _ => format!(
                    "{:x}:{:x}::{}",
                    rng.below(0x10000),
                    rng.below(0x10000),
                    std::net::Ipv4Addr::from(rng.next_u64() as u32)
                ),
            };
            let mut s = text.into_bytes();
            check(&s);
            assert!(parse_ip(&s).is_some());
            for _ in 0..rng.below(3) + 1 {
                let at = rng.below(s.len() as u64 + 1) as usize;
                let c = EDIT[rng.below(EDIT.len() as u64) as usize];
                match rng.below(3) {
                    0 => s.insert(at, c),
                    1 if at < s.len() => {
                        s.remove(at);
                    }
                    _ if at < s.len() => s[at] = c,
                    _ => s.push(c),
                }
                check(&s);
            }
        }
    }
}
