//! `--format auto`: which format a stream is in, from its first bytes
//! (after decompression).
//!
//! - **mrt**: a binary head whose first 12 bytes are a plausible MRT common
//!   header (a type RFC 6396 defines, a length within the bound);
//! - **ipasn**: the first non-blank line starts with `;` (every pyasn file
//!   does);
//! - then the first data line (after `#` comments) decides:
//!   `UNIXTIME a|w PREFIX/LEN NEXTHOP` is **updates**,
//!   two addresses of one family as its first two fields (separated by a
//!   comma, a tab or blanks) is **ranges**, and so is a first line that is
//!   a ranges header (`start,end,asn`) followed by such a line,
//!   `ADDR LEN ASN` (an address without `/`, then a length) is **pfx2as**,
//!   anything else **text** (whose reader names the line if it is not
//!   `PREFIX/LEN VALUE`).
//!
//! Binary input that is not MRT matches nothing, and the error lists every
//! format tried and why each was rejected.

use crate::format::Format;
use crate::mrt::frame::{known_type, MAX_BODY};
use crate::ranges::fields::{is_header, looks_like_range};
use std::net::IpAddr;

/// How much of the stream the sniffer looks at.
pub(crate) const HEAD_BYTES: usize = 64 * 1024;

/// The format of a stream starting with `head`, or why none fits.
pub(crate) fn sniff(head: &[u8]) -> Result<Format, String> {
    if ipfib::image::is_image(head) {
        return Ok(Format::Compiled);
    }
    let binary = head
        .iter()
        .take(512)
        .any(|&b| (b < 0x20 && !b.is_ascii_whitespace()) || b == 0x7f);
    let mrt = mrt_header(head);
    if binary {
        return match mrt {
            Ok(()) => Ok(Format::Mrt),
            Err(why) => Err(format!(
                "mrt ({why}); ipasn, pfx2as, updates, text, ranges (binary input, not text)"
            )),
        };
    }
    // As the readers do, a UTF-8 byte order mark is no part of the first
    // line (spreadsheet CSV exports start with one).
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let first = head
        .split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|l| !l.is_empty());
    let Some(first) = first else {
        return Ok(Format::Text);
    };
    if first.starts_with(b";") {
        return Ok(Format::Ipasn);
    }
    let mut data = head
        .split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|l| !l.is_empty() && !l.starts_with(b"#"));
    let Some(first) = data.next() else {
        return Ok(Format::Text);
    };
    let format = line_format(first);
    if format == Format::Text
        && is_header(&String::from_utf8_lossy(first))
        && data.next().map(line_format) == Some(Format::Ranges)
    {
        return Ok(Format::Ranges);
    }
    Ok(format)
}

/// The format a data line reads as (no `;` check: see `sniff`).
pub(crate) fn line_format(line: &[u8]) -> Format {
    if line.starts_with(b";") {
        return Format::Ipasn;
    }
    let text = String::from_utf8_lossy(line);
    if looks_like_range(&text) {
        return Format::Ranges;
    }
    let tokens: Vec<&str> = text.split_ascii_whitespace().take(5).collect();
    match tokens.as_slice() {
        [time, "a" | "w", prefix, _]
            if time.bytes().all(|b| b.is_ascii_digit()) && prefix.contains('/') =>
        {
            Format::Updates
        }
        [addr, len, _] if addr.parse::<IpAddr>().is_ok() && len.parse::<u8>().is_ok() => {
            Format::Pfx2as
        }
        _ => Format::Text,
    }
}

/// Whether `head` starts with a plausible MRT common header.
fn mrt_header(head: &[u8]) -> Result<(), String> {
    let Some(&[_, _, _, _, t0, t1, _, _, l0, l1, l2, l3]) = head.first_chunk::<12>() else {
        return Err(format!("{} bytes, shorter than an MRT header", head.len()));
    };
    let t = u16::from_be_bytes([t0, t1]);
    let len = u64::from(u32::from_be_bytes([l0, l1, l2, l3]));
    if !known_type(t) {
        return Err(format!("type {t} is not an MRT type"));
    }
    if len > MAX_BODY {
        return Err(format!("length {len} is beyond any MRT record"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_each_format() {
        assert_eq!(sniff(b""), Ok(Format::Text));
        assert_eq!(sniff(b"\n  \n"), Ok(Format::Text));
        assert_eq!(sniff(b"; IP-ASN32-DAT\n1.0.0.0/24\t1\n"), Ok(Format::Ipasn));
        assert_eq!(sniff(b"# c\n1.0.0.0/24 13335\n"), Ok(Format::Text));
        assert_eq!(sniff(b"1.0.0.0\t24\t13335\n"), Ok(Format::Pfx2as));
        assert_eq!(sniff(b"2001:db8::\t32\t1_2\n"), Ok(Format::Pfx2as));
        assert_eq!(
            sniff(b"1418774413 w 202.70.88.0/21 0.0.0.0\n"),
            Ok(Format::Updates)
        );
        assert_eq!(
            sniff(b"1.0.0.0,1.0.0.255,13335,\"Cloudflare, Inc.\"\n"),
            Ok(Format::Ranges)
        );
        assert_eq!(
            sniff(b"# c\n2001::\t2001::ff\t6939\tUS\tHE\n"),
            Ok(Format::Ranges)
        );
        assert_eq!(sniff(b"1.0.0.0 1.0.0.255 1\n"), Ok(Format::Ranges));
        assert_eq!(
            sniff(b"\xef\xbb\xbf1.0.0.0,1.0.0.255,1\r\n"),
            Ok(Format::Ranges)
        );
        assert_eq!(sniff(b"\xef\xbb\xbf1.0.0.0\t24\t1\n"), Ok(Format::Pfx2as));
        assert_eq!(
            sniff(b"start,end,asn\n1.0.0.0,1.0.0.255,1\n"),
            Ok(Format::Ranges)
        );
        assert_eq!(sniff(b"start,end,asn\n1.0.0.0/24 1\n"), Ok(Format::Text));
        assert_eq!(sniff(b"1.0.0.0,::1,1\n"), Ok(Format::Text));
        let mrt = [0, 0, 0, 1, 0, 13, 0, 1, 0, 0, 0, 4, 1, 2, 3, 4];
        assert_eq!(sniff(&mrt), Ok(Format::Mrt));
    }

    #[test]
    fn binary_that_is_not_mrt_lists_what_was_tried() {
        let e = sniff(&[0, 0, 0, 1, 0, 99, 0, 1, 0, 0, 0, 4]).unwrap_err();
        assert!(e.contains("type 99 is not an MRT type"), "{e}");
        assert!(e.contains("ipasn, pfx2as, updates, text, ranges"), "{e}");
        let e = sniff(&[0, 0, 0, 1, 0, 13]).unwrap_err();
        assert!(e.contains("shorter than an MRT header"), "{e}");
    }
}
