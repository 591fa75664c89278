//! The real range files (`../shared/data/ranges/asn-ipv{4,6}.csv.gz`:
//! `FIRST,LAST,ASN,ORGANISATION`, organisations quoted when they hold a
//! comma or a quote) against an oracle that shares no code with the
//! reader: its own CSV parsing (a character state machine, RFC 4180
//! quoting), `std` address parsing, and a sweep over the range ends with
//! a heap of the ranges open at each point (the one latest in the file
//! wins), giving sorted disjoint segments that are bisected per address.
//!
//! Expected counts were checked independently with Python (`csv`,
//! `ipaddress`): 411,961 IPv4 ranges of which 78,282 are not one CIDR
//! prefix, one of them overlapping an earlier range (line 399,116,
//! `215.0.0.0-215.1.3.255`, inside `214.95.0.0-215.0.255.255`); 103,197
//! IPv6 ranges, 15,698 not one prefix, none overlapping.

mod common;

use common::data_file;
use common::ranges::{top, trie_cover};
use flate2::read::MultiGzDecoder;
use ipfib::gen::Rng;
use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib::table::Table;
use ipfib_io::{load_table, Format, TableOptions};
use std::collections::BinaryHeap;
use std::io::Read;
use std::net::IpAddr;
use std::path::Path;

/// The fields of one CSV record (RFC 4180 quoting, no embedded newlines),
/// with the one rule ipfib adds: blanks around an unquoted field are not
/// part of it (the file has `...de la Informacion y ` on line 347,677).
fn csv_fields(line: &str) -> Vec<String> {
    // (text, was quoted)
    let mut fields = vec![(String::new(), false)];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let field = fields.last_mut().unwrap();
        match (quoted, c) {
            (false, ',') => fields.push((String::new(), false)),
            (false, '"') if field.0.is_empty() => {
                quoted = true;
                field.1 = true;
            }
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.0.push('"');
            }
            (true, '"') => quoted = false,
            (_, c) => field.0.push(c),
        }
    }
    assert!(!quoted, "unterminated quote in {line:?}");
    fields
        .into_iter()
        .map(|(text, was_quoted)| {
            if was_quoted {
                text
            } else {
                text.trim_matches([' ', '\t']).to_string()
            }
        })
        .collect()
}

struct OracleRange {
    first: u128,
    last: u128,
    asn: String,
    org: String,
    line: u64,
}

fn read_oracle(path: &Path) -> (u32, Vec<OracleRange>) {
    let mut text = String::new();
    MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut bits = 0;
    let ranges = text
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let f = csv_fields(line);
            assert_eq!(f.len(), 4, "line {}: {line:?}", i + 1);
            let addr = |s: &str| match s.parse::<IpAddr>().unwrap() {
                IpAddr::V4(a) => (32, u128::from(u32::from(a))),
                IpAddr::V6(a) => (128, u128::from(a)),
            };
            let ((b1, first), (b2, last)) = (addr(&f[0]), addr(&f[1]));
            assert_eq!(b1, b2);
            bits = b1;
            OracleRange {
                first,
                last,
                asn: f[2].clone(),
                org: f[3].clone(),
                line: i as u64 + 1,
            }
        })
        .collect();
    (bits, ranges)
}

/// Sorted disjoint segments `(start, winner)` of the whole space, the
/// winner an index into `ranges` (the latest range open there) or `None`.
fn sweep(bits: u32, ranges: &[OracleRange]) -> Vec<(u128, Option<usize>)> {
    let mut by_start: Vec<usize> = (0..ranges.len()).collect();
    by_start.sort_by_key(|&i| ranges[i].first);
    let mut cuts: Vec<u128> = vec![0];
    for r in ranges {
        cuts.push(r.first);
        if r.last < top(bits) {
            cuts.push(r.last + 1);
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut open: BinaryHeap<usize> = BinaryHeap::new();
    let mut next = 0;
    let mut segments = Vec::with_capacity(cuts.len());
    for &cut in &cuts {
        while next < by_start.len() && ranges[by_start[next]].first <= cut {
            open.push(by_start[next]);
            next += 1;
        }
        while open.peek().is_some_and(|&i| ranges[i].last < cut) {
            open.pop();
        }
        segments.push((cut, open.peek().copied()));
    }
    segments
}

fn winner(segments: &[(u128, Option<usize>)], a: u128) -> Option<usize> {
    let i = segments.partition_point(|&(s, _)| s <= a);
    segments[i - 1].1
}

fn any_addr(bits: u32, a: u128) -> AnyAddr {
    if bits == 32 {
        AnyAddr::V4(a as u32)
    } else {
        AnyAddr::V6(a)
    }
}

fn prefix_start(p: &AnyPrefix) -> u128 {
    match p {
        AnyPrefix::V4(p) => u128::from(p.addr()),
        AnyPrefix::V6(p) => p.addr(),
    }
}

struct Expect {
    name: &'static str,
    ranges: u64,
    unaligned: u64,
    overlapping: u64,
}

fn check(want: Expect) {
    let Some(path) = data_file(want.name) else {
        return;
    };
    let (bits, ranges) = read_oracle(&path);
    assert_eq!(ranges.len() as u64, want.ranges, "{}", want.name);
    let segments = sweep(bits, &ranges);

    // The file's own facts, by the oracle: it is sorted by FIRST, so a
    // range overlaps an earlier one exactly when it starts at or before
    // the furthest end so far.
    assert!(ranges.windows(2).all(|w| w[0].first <= w[1].first));
    let mut furthest: Option<u128> = None;
    let mut overlapping = 0;
    for r in &ranges {
        overlapping += u64::from(furthest.is_some_and(|f| r.first <= f));
        furthest = Some(furthest.map_or(r.last, |f| f.max(r.last)));
    }
    assert_eq!(overlapping, want.overlapping, "{}", want.name);
    let unaligned = ranges
        .iter()
        .filter(|r| trie_cover(bits, r.first, r.last).len() != 1)
        .count() as u64;
    assert_eq!(unaligned, want.unaligned, "{}", want.name);

    for (format, column) in [(Format::Ranges, None), (Format::Auto, Some(4))] {
        let opts = TableOptions {
            format,
            value_column: column,
            strict: true,
            ..Default::default()
        };
        let loaded = load_table(&path, &opts).unwrap();
        let report = &loaded.report;
        assert_eq!(report.format, Format::Ranges, "{}", want.name);
        assert!(!report.has_problems(), "{}: {:?}", want.name, report.errors);
        assert_eq!(report.records, want.ranges);
        let stats = report.ranges.unwrap();
        assert_eq!(
            (
                stats.ranges,
                stats.unaligned,
                stats.overlapping,
                stats.header_line
            ),
            (want.ranges, want.unaligned, want.overlapping, None),
            "{}",
            want.name
        );
        assert_eq!(stats.value_column, column.unwrap_or(3));
        let value = |i: usize| -> &str {
            if column == Some(4) {
                &ranges[i].org
            } else {
                &ranges[i].asn
            }
        };

        // The minimal cover of each run of one value, counted by the
        // oracle's segments.
        let mut expected_prefixes = 0;
        let mut run: Option<(u128, u128, &str)> = None;
        for (k, &(start, w)) in segments.iter().enumerate() {
            let end = segments.get(k + 1).map_or(top(bits), |s| s.0 - 1);
            let v = w.map(value);
            match (&mut run, v) {
                (Some(r), Some(v)) if r.2 == v => r.1 = end,
                _ => {
                    if let Some((lo, hi, _)) = run.take() {
                        expected_prefixes += trie_cover(bits, lo, hi).len();
                    }
                    run = v.map(|v| (start, end, v));
                }
            }
        }
        if let Some((lo, hi, _)) = run {
            expected_prefixes += trie_cover(bits, lo, hi).len();
        }
        assert_eq!(loaded.routes.len(), expected_prefixes, "{}", want.name);

        // Each prefix's line is the range that painted its first address.
        for r in &loaded.routes {
            let w = winner(&segments, prefix_start(&r.prefix)).unwrap();
            assert_eq!(r.line, ranges[w].line, "{}: {}", want.name, r.prefix);
        }

        let mut table: Table<String> = Table::new();
        for r in loaded.routes {
            table.insert(r.prefix, r.value).unwrap();
        }
        let mut rng = Rng::new(0x5eed ^ u64::from(bits));
        let mut queries: Vec<u128> = Vec::new();
        for _ in 0..100_000 {
            queries.push(rng.next_u128() & top(bits));
            // Inside a random range, where the answers are.
            let r = &ranges[rng.below(ranges.len() as u64) as usize];
            queries.push(r.first + rng.next_u128() % (r.last - r.first).saturating_add(1).max(1));
        }
        for r in &ranges {
            queries.extend([
                r.first,
                r.last,
                r.first.wrapping_sub(1),
                r.last.wrapping_add(1),
            ]);
        }
        queries.extend([0, top(bits)]);
        let mut answered = 0;
        for a in queries {
            let a = a & top(bits);
            let want_value = winner(&segments, a).map(value);
            let got = table.lookup(any_addr(bits, a)).map(|(_, v)| v.as_str());
            assert_eq!(got, want_value, "{}: address {a:#x}", want.name);
            answered += usize::from(got.is_some());
        }
        // Every in-range query, FIRST and LAST at least.
        let floor = 100_000 + 2 * ranges.len();
        assert!(answered >= floor, "{}: {answered} answered", want.name);
    }
}

#[test]
fn real_ipv4_ranges_answer_as_the_oracle() {
    check(Expect {
        name: "ranges/asn-ipv4.csv.gz",
        ranges: 411_961,
        unaligned: 78_282,
        overlapping: 1,
    });
}

#[test]
fn real_ipv6_ranges_answer_as_the_oracle() {
    check(Expect {
        name: "ranges/asn-ipv6.csv.gz",
        ranges: 103_197,
        unaligned: 15_698,
        overlapping: 0,
    });
}

#[test]
fn the_oracle_reads_csv_as_rfc_4180_says() {
    assert_eq!(
        csv_fields(r#"1.0.0.0,1.0.0.255,13335,"Cloudflare, Inc.""#),
        ["1.0.0.0", "1.0.0.255", "13335", "Cloudflare, Inc."]
    );
    assert_eq!(
        csv_fields(r#"a,b,1,"LLC ""SPUTNIK""""#),
        ["a", "b", "1", "LLC \"SPUTNIK\""]
    );
    assert_eq!(csv_fields("a,,c"), ["a", "", "c"]);
    assert_eq!(csv_fields("a,b ,\" c \""), ["a", "b", " c "]);
}
