//! The ranges reader against a brute-force model: random range files, rich
//! in edge cases (the ends of both address spaces, single addresses, the
//! full space, adjacent and overlapping ranges, IPv6 ranges wider than 64
//! bits), written with random separators, quoting, comments and headers.
//!
//! The model knows nothing of painting or of CIDR arithmetic as the reader
//! does them:
//! - the answer for an address is the last range in file order that holds
//!   it (a scan of every range);
//! - the painted map is rebuilt from elementary segments (every FIRST and
//!   LAST + 1 is a boundary; each segment takes the last range holding its
//!   start), and each maximal run of one value is covered by walking the
//!   binary trie top-down (a node inside the run is a prefix, a node
//!   outside it is nothing, anything else splits in two): the set of
//!   maximal aligned blocks, which is the minimal cover. The reader's
//!   prefixes must be exactly that set.

mod common;

use common::ranges::{top, trie_cover};
use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib::table::Table;
use ipfib_io::{load_table_from, Format, ReadError, TableLoad, TableOptions};
use proptest::prelude::*;
use std::io::Cursor;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One range of the model: family width (32 or 128), ends, value, line.
#[derive(Debug, Clone)]
struct Range {
    bits: u32,
    first: u128,
    last: u128,
    value: String,
    line: u64,
}

fn addr_text(bits: u32, a: u128) -> String {
    if bits == 32 {
        Ipv4Addr::from(a as u32).to_string()
    } else {
        Ipv6Addr::from(a).to_string()
    }
}

fn any_addr(bits: u32, a: u128) -> AnyAddr {
    if bits == 32 {
        AnyAddr::V4(a as u32)
    } else {
        AnyAddr::V6(a)
    }
}

/// The last range in file order holding `a`.
fn answer(ranges: &[Range], bits: u32, a: u128) -> Option<&Range> {
    ranges
        .iter()
        .rev()
        .find(|r| r.bits == bits && r.first <= a && a <= r.last)
}

/// The model's routes of one family: `(addr, len, value)`, sorted.
fn model_routes(ranges: &[Range], bits: u32) -> Vec<(u128, u32, String)> {
    let mut cuts: Vec<u128> = vec![0];
    for r in ranges.iter().filter(|r| r.bits == bits) {
        cuts.push(r.first);
        if r.last < top(bits) {
            cuts.push(r.last + 1);
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    // Elementary segments with their value, neighbours of one value merged.
    let mut runs: Vec<(u128, u128, Option<String>)> = Vec::new();
    for (i, &start) in cuts.iter().enumerate() {
        let end = cuts.get(i + 1).map_or(top(bits), |&n| n - 1);
        let value = answer(ranges, bits, start).map(|r| r.value.clone());
        match runs.last_mut() {
            Some(run) if run.2 == value => run.1 = end,
            _ => runs.push((start, end, value)),
        }
    }
    let mut out = Vec::new();
    for (lo, hi, value) in runs {
        if let Some(v) = value {
            for (a, l) in trie_cover(bits, lo, hi) {
                out.push((a, l, v.clone()));
            }
        }
    }
    out.sort();
    out
}

/// Addresses rich in edges: the ends of the space, powers of two and their
/// neighbours, a few close together (so ranges touch and overlap), any.
fn arb_addr(bits: u32) -> impl Strategy<Value = u128> {
    let t = top(bits);
    prop_oneof![
        Just(0u128),
        Just(t),
        Just(t - 1),
        Just(1u128),
        (0..bits).prop_map(|k| 1u128 << k),
        (0..bits).prop_map(move |k| (1u128 << k) - 1),
        (0..bits, 0u128..3).prop_map(move |(k, d)| ((1u128 << k) + d) & t),
        (0u128..40).prop_map(move |d| (t / 2 - 20 + d) & t),
        any::<u128>().prop_map(move |a| a & t),
    ]
}

/// A range of one family: any two edge-rich addresses in order, a single
/// address, the full space, or (IPv6) a block wider than 64 bits.
fn arb_span(bits: u32) -> impl Strategy<Value = (u128, u128)> {
    let t = top(bits);
    let wide = if bits == 128 { 64u32..100 } else { 8u32..24 };
    prop_oneof![
        6 => (arb_addr(bits), arb_addr(bits)).prop_map(|(a, b)| (a.min(b), a.max(b))),
        2 => arb_addr(bits).prop_map(|a| (a, a)),
        1 => Just((0u128, t)),
        2 => (any::<u128>(), wide, 0u128..5, 0u128..5).prop_map(move |(a, w, x, y)| {
            let a = (a & t) >> w << w;
            let b = a.saturating_add((1u128 << w).saturating_mul(1 + x)) & t;
            (a.saturating_add(y).min(b), b.max(a))
        }),
    ]
}

#[derive(Debug, Clone)]
struct Spec {
    bits: u32,
    first: u128,
    last: u128,
    /// Index into VALUES.
    value: usize,
    /// 0: comma, 1: tab, 2: blanks.
    sep: u8,
    quote: bool,
}

/// Few values, so runs of one value happen; some need quotes in CSV.
const VALUES: [&str; 5] = ["13335", "Cloudflare, Inc.", "64496", "LLC \"X\"", "a b"];

fn arb_spec() -> impl Strategy<Value = Spec> {
    (
        prop_oneof![Just(32u32), Just(128u32)],
        0usize..5,
        0u8..3,
        any::<bool>(),
    )
        .prop_flat_map(|(bits, value, sep, quote)| {
            arb_span(bits).prop_map(move |(first, last)| Spec {
                bits,
                first,
                last,
                value,
                sep,
                quote,
            })
        })
}

/// A field as written: quoted when asked, or when the separator needs it.
fn field(text: &str, sep: u8, quote: bool) -> String {
    let needs = match sep {
        0 => text.contains([',', '"']),
        1 => text.contains(['\t', '"']),
        _ => text.contains([' ', '\t', '"']),
    };
    if quote || needs {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The file, and the model's ranges with their lines. The value is in
/// column 3 or 4 (`value_column`), an ASN-like filler in the other.
fn render(specs: &[Spec], header: bool, value_column: usize) -> (String, Vec<Range>) {
    let mut text = String::new();
    let mut line = 0u64;
    let mut ranges = Vec::new();
    let mut push = |text: &mut String, s: &str| {
        text.push_str(s);
        text.push('\n');
        line += 1;
        line
    };
    push(&mut text, "# generated ranges");
    if header {
        push(&mut text, "start,end,asn,name");
    }
    for (i, s) in specs.iter().enumerate() {
        if i % 7 == 3 {
            push(&mut text, "");
        }
        let sep = [",", "\t", "  "][s.sep as usize];
        let value = VALUES[s.value];
        let mut cols = [
            field(&addr_text(s.bits, s.first), s.sep, s.quote && i % 3 == 0),
            field(&addr_text(s.bits, s.last), s.sep, false),
            field("filler", s.sep, false),
            field("more", s.sep, false),
        ];
        cols[value_column - 1] = field(value, s.sep, s.quote);
        let n = push(&mut text, &cols.join(sep));
        ranges.push(Range {
            bits: s.bits,
            first: s.first,
            last: s.last,
            value: value.to_string(),
            line: n,
        });
    }
    (text, ranges)
}

fn load(
    text: &str,
    format: Format,
    value_column: Option<usize>,
    strict: bool,
) -> Result<TableLoad, ReadError> {
    let opts = TableOptions {
        format,
        value_column,
        strict,
        ..Default::default()
    };
    load_table_from(Cursor::new(text.as_bytes().to_vec()), "ranges.csv", &opts)
}

fn route_parts(p: &AnyPrefix) -> (u32, u128, u32) {
    match p {
        AnyPrefix::V4(p) => (32, u128::from(p.addr()), u32::from(p.len())),
        AnyPrefix::V6(p) => (128, p.addr(), u32::from(p.len())),
    }
}

fn check(specs: &[Spec], header: bool, value_column: usize, extra: &[(u32, u128)]) {
    let (text, ranges) = render(specs, header, value_column);
    let column = (value_column != 3).then_some(value_column);
    let loaded = load(&text, Format::Ranges, column, true).unwrap();
    // Auto finds the same format and routes (given a range to sniff).
    if !ranges.is_empty() {
        let auto = load(&text, Format::Auto, column, true).unwrap();
        assert_eq!(auto.report.format, Format::Ranges, "{text}");
        assert_eq!(auto.routes, loaded.routes);
    }

    let stats = loaded.report.ranges.unwrap();
    assert_eq!(stats.ranges, ranges.len() as u64);
    assert_eq!(stats.header_line, header.then_some(2));
    let overlapping = ranges
        .iter()
        .enumerate()
        .filter(|(i, r)| {
            ranges[..*i]
                .iter()
                .any(|e| e.bits == r.bits && e.first <= r.last && r.first <= e.last)
        })
        .count();
    assert_eq!(stats.overlapping, overlapping as u64, "overlapping ranges");
    let unaligned = ranges
        .iter()
        .filter(|r| trie_cover(r.bits, r.first, r.last).len() != 1)
        .count();
    assert_eq!(
        stats.unaligned, unaligned as u64,
        "ranges that are not one prefix"
    );

    // Exactly the minimal cover of every painted run, nothing else.
    for bits in [32, 128] {
        let mut got: Vec<(u128, u32, String)> = loaded
            .routes
            .iter()
            .map(|r| (route_parts(&r.prefix), r.value.clone()))
            .filter(|((b, _, _), _)| *b == bits)
            .map(|((_, a, l), v)| (a, l, v))
            .collect();
        got.sort();
        assert_eq!(
            got,
            model_routes(&ranges, bits),
            "IPv{}",
            if bits == 32 { 4 } else { 6 }
        );
    }
    // Each prefix's line: the range that painted its first address.
    for r in &loaded.routes {
        let (bits, a, _) = route_parts(&r.prefix);
        let owner = answer(&ranges, bits, a).unwrap();
        assert_eq!(r.line, owner.line, "{}", r.prefix);
    }

    // Longest-prefix match answers as the last range holding the address.
    let mut table: Table<String> = Table::new();
    for r in &loaded.routes {
        table.insert(r.prefix, r.value.clone()).unwrap();
    }
    let mut queries: Vec<(u32, u128)> = extra.to_vec();
    for r in &ranges {
        let t = top(r.bits);
        queries.extend([
            (r.bits, r.first),
            (r.bits, r.last),
            (r.bits, r.first.wrapping_sub(1) & t),
            (r.bits, r.last.wrapping_add(1) & t),
        ]);
    }
    for bits in [32, 128] {
        queries.extend([(bits, 0), (bits, top(bits))]);
    }
    for (bits, a) in queries {
        let want = answer(&ranges, bits, a).map(|r| r.value.as_str());
        let got = table.lookup(any_addr(bits, a)).map(|(_, v)| v.as_str());
        assert_eq!(got, want, "{}", addr_text(bits, a));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(ipfib::check::cases(400)))]

    #[test]
    fn ranges_load_as_the_model_paints_them(
        specs in prop::collection::vec(arb_spec(), 0..40),
        header in any::<bool>(),
        column4 in any::<bool>(),
        random in prop::collection::vec((prop_oneof![Just(32u32), Just(128u32)], any::<u128>()), 64),
    ) {
        let extra: Vec<(u32, u128)> = random.into_iter().map(|(b, a)| (b, a & top(b))).collect();
        check(&specs, header, if column4 { 4 } else { 3 }, &extra);
    }
}

/// The model's own cover on known cases, so a model bug cannot hide a
/// reader bug.
#[test]
fn the_model_cover_is_the_textbook_one() {
    assert_eq!(trie_cover(32, 0, top(32)), [(0, 0)]);
    assert_eq!(trie_cover(128, 0, u128::MAX), [(0, 0)]);
    assert_eq!(trie_cover(32, 5, 5), [(5, 32)]);
    // 10.0.0.1 - 10.0.0.6: .1/32, .2/31, .4/31, .6/32
    let ten = 0x0a00_0000u128;
    assert_eq!(
        trie_cover(32, ten + 1, ten + 6),
        [(ten + 1, 32), (ten + 2, 31), (ten + 4, 31), (ten + 6, 32)]
    );
    assert_eq!(trie_cover(32, 1, top(32)).len(), 32);
    assert_eq!(trie_cover(128, 1, u128::MAX - 1).len(), 2 * 127);
}
