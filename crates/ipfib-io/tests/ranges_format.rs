//! The ranges format's lines: CSV with quoted organisations (commas and
//! `""` inside, as in the real files), TSV in iptoasn's layout, blank
//! separated columns, comments, a header, and every kind of bad line,
//! each reported with the file and line, skipped (or fatal with `strict`).

mod common;

use common::{gzip, Scratch};
use ipfib::prefix::AnyPrefix;
use ipfib_io::{
    load_table, load_table_from, read_routes, DamageKind, Format, LoadOptions, ReadError,
    TableLoad, TableOptions, ValuePolicy,
};
use std::io::Cursor;

fn opts(format: Format, column: Option<usize>, strict: bool) -> TableOptions {
    TableOptions {
        format,
        value_column: column,
        strict,
        ..Default::default()
    }
}

fn from(text: &str, column: Option<usize>, strict: bool) -> Result<TableLoad, ReadError> {
    load_table_from(
        Cursor::new(text.as_bytes().to_vec()),
        "t.csv",
        &opts(Format::Ranges, column, strict),
    )
}

/// `(prefix, value, line)` of every route.
fn routes(l: &TableLoad) -> Vec<(String, &str, u64)> {
    l.routes
        .iter()
        .map(|r| (r.prefix.to_string(), r.value.as_str(), r.line))
        .collect()
}

const CSV: &str = "\
1.0.0.0,1.0.0.255,13335,\"Cloudflare, Inc.\"
1.0.4.0,1.0.6.255,38803,Gtelecom Pty Ltd
2.26.200.0,2.26.200.255,201907,\"LLC \"\"SPUTNIK\"\"\"
2001:200::,2001:200:1b9:ffff:ffff:ffff:ffff:ffff,2500,WIDE Project
";

/// The prefixes as Python's `ipaddress.summarize_address_range` gives
/// them for each range.
#[test]
fn csv_with_quoted_organisations() {
    let l = from(CSV, None, true).unwrap();
    assert_eq!(
        routes(&l),
        [
            ("1.0.0.0/24".into(), "13335", 1),
            ("1.0.4.0/23".into(), "38803", 2),
            ("1.0.6.0/24".into(), "38803", 2),
            ("2.26.200.0/24".into(), "201907", 3),
            ("2001:200::/40".into(), "2500", 4),
            ("2001:200:100::/41".into(), "2500", 4),
            ("2001:200:180::/43".into(), "2500", 4),
            ("2001:200:1a0::/44".into(), "2500", 4),
            ("2001:200:1b0::/45".into(), "2500", 4),
            ("2001:200:1b8::/47".into(), "2500", 4),
        ]
    );
    let l = from(CSV, Some(4), true).unwrap();
    let values: Vec<&str> = l.routes.iter().map(|r| r.value.as_str()).collect();
    assert_eq!(values[0], "Cloudflare, Inc.");
    assert_eq!(values[1], "Gtelecom Pty Ltd");
    assert_eq!(values[3], "LLC \"SPUTNIK\"");
    assert_eq!(values[4], "WIDE Project");
    let stats = l.report.ranges.unwrap();
    assert_eq!(
        (stats.ranges, stats.unaligned, stats.overlapping),
        (4, 2, 0)
    );
}

#[test]
fn iptoasn_tsv_and_blank_separated_lines() {
    let tsv = "1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET - Cloudflare, Inc.\n\
               1.0.1.0\t1.0.3.255\t0\tNone\tNot routed\n\
               2001:db8::\t2001:db8::ffff\t64496\tZZ\tDocumentation\n";
    let l = from(tsv, Some(5), true).unwrap();
    assert_eq!(
        routes(&l),
        [
            ("1.0.0.0/24".into(), "CLOUDFLARENET - Cloudflare, Inc.", 1),
            ("1.0.1.0/24".into(), "Not routed", 2),
            ("1.0.2.0/23".into(), "Not routed", 2),
            ("2001:db8::/112".into(), "Documentation", 3),
        ]
    );
    let l = from(tsv, None, true).unwrap();
    assert_eq!(l.routes[0].value, "13335");
    // Blank-separated, any run of spaces and tabs; a quoted value.
    let blank =
        "# from a script\n10.0.0.0   10.0.0.3\t  \"a b\"\n\n10.0.0.4 10.0.0.7 \"a b\" trailing\n";
    let l = from(blank, None, true).unwrap();
    // Two adjacent ranges with one value merge into one prefix.
    assert_eq!(routes(&l), [("10.0.0.0/29".into(), "a b", 2)]);
    // Separators may differ from line to line; CRLF and a BOM are fine.
    let mixed = "\u{feff}10.0.0.0,10.0.0.0,x\r\n10.0.0.1\t10.0.0.1\tx\r\n10.0.0.2 10.0.0.3 y\r\n";
    let l = from(mixed, None, true).unwrap();
    assert_eq!(
        routes(&l),
        [
            ("10.0.0.0/31".into(), "x", 1),
            ("10.0.0.2/31".into(), "y", 3)
        ]
    );
}

#[test]
fn a_header_is_skipped_and_reported_and_auto_sees_past_it() {
    let text = "# ranges\nstart,end,asn\n10.0.0.0,10.0.0.255,1\n";
    for format in [Format::Ranges, Format::Auto] {
        let l = load_table_from(
            Cursor::new(text.as_bytes().to_vec()),
            "h.csv",
            &opts(format, None, true),
        )
        .unwrap();
        assert_eq!(l.report.format, Format::Ranges);
        assert_eq!(l.report.ranges.unwrap().header_line, Some(2));
        assert_eq!(routes(&l), [("10.0.0.0/24".into(), "1", 3)]);
    }
    // Only the first data line can be a header.
    let l = from("10.0.0.0,10.0.0.255,1\nstart,end,asn\n", None, false).unwrap();
    assert_eq!(l.report.bad, 1);
    assert_eq!(l.report.ranges.unwrap().header_line, None);
    // A misspelt address is no header.
    let l = from("10.0.0.256,10.0.0.255,1\n", None, false).unwrap();
    assert_eq!(l.report.bad, 1);
}

#[test]
fn overlapping_ranges_the_later_line_wins() {
    let text = "10.0.0.0,10.0.0.255,A\n10.0.0.128,10.0.1.255,B\n10.0.0.0,10.0.0.0,C\n";
    let l = from(text, None, true).unwrap();
    assert_eq!(
        routes(&l),
        [
            ("10.0.0.0/32".into(), "C", 3),
            ("10.0.0.1/32".into(), "A", 1),
            ("10.0.0.2/31".into(), "A", 1),
            ("10.0.0.4/30".into(), "A", 1),
            ("10.0.0.8/29".into(), "A", 1),
            ("10.0.0.16/28".into(), "A", 1),
            ("10.0.0.32/27".into(), "A", 1),
            ("10.0.0.64/26".into(), "A", 1),
            ("10.0.0.128/25".into(), "B", 2),
            ("10.0.1.0/24".into(), "B", 2),
        ]
    );
    assert_eq!(l.report.ranges.unwrap().overlapping, 2);
}

/// Every kind of bad line, skipped and reported by file and line; the
/// good lines around them still load; strict stops at the first.
#[test]
fn bad_lines_name_file_and_line() {
    let text = "\
10.0.0.0,10.0.0.255,ok
10.0.1.0,10.0.1.300,x
10.0.2.9,10.0.2.0,x
10.0.3.0,::1,x
10.0.4.0,10.0.4.255
10.0.5.0,10.0.5.255,\"unterminated
10.0.6.0,10.0.6.255,\"a\"b
10.0.7.0
10.0.8.0,10.0.8.255,,x
# fine
10.0.9.0,10.0.9.255,ok
";
    let l = from(text, None, false).unwrap();
    assert_eq!(
        routes(&l),
        [
            ("10.0.0.0/24".into(), "ok", 1),
            ("10.0.9.0/24".into(), "ok", 11)
        ]
    );
    let r = &l.report;
    assert_eq!(r.bad, 8);
    assert!(r.has_problems());
    assert_eq!(r.records, 11);
    let messages: Vec<String> = r.errors.iter().map(|e| e.to_string()).collect();
    for (e, (line, what)) in messages.iter().zip([
        (2, "invalid last address \"10.0.1.300\""),
        (
            3,
            "the first address 10.0.2.9 is after the last address 10.0.2.0",
        ),
        (4, "different families"),
        (5, "no value column 3 (the line has 2 columns)"),
        (6, "unterminated quote in column 3"),
        (7, "text after the closing quote in column 3"),
        (8, "no last address"),
        (9, "empty value in column 3"),
    ]) {
        assert!(
            e.starts_with(&format!("t.csv:{line}: ")) && e.contains(what),
            "{e:?} should name t.csv:{line} and say {what:?}"
        );
    }
    for (e, line) in r.errors.iter().zip(2..) {
        assert_eq!(e.line(), Some(line));
    }
    let e = from(text, None, true).unwrap_err();
    assert_eq!(e.line(), Some(2), "{e}");
    assert!(e.to_string().starts_with("t.csv:2: "), "{e}");
    // Not UTF-8: a bad line too.
    let l = load_table_from(
        Cursor::new(b"10.0.0.0,10.0.0.255,\xff\n10.0.1.0,10.0.1.255,ok\n".to_vec()),
        "t.csv",
        &opts(Format::Ranges, None, false),
    )
    .unwrap();
    assert_eq!((l.report.bad, l.routes.len()), (1, 1));
    assert_eq!(l.report.errors[0].line(), Some(1));
}

#[test]
fn value_column_is_checked() {
    for column in [0, 1, 2] {
        let e = from(CSV, Some(column), false).unwrap_err();
        assert!(e.to_string().contains("column 3 or later"), "{e}");
    }
    // A column past every line's end: every line is bad.
    let l = from(CSV, Some(9), false).unwrap();
    assert_eq!((l.report.bad, l.routes.len()), (4, 0));
    // Other formats refuse it; ranges refuse a value policy.
    let e = load_table_from(
        Cursor::new(b"10.0.0.0/8 1\n".to_vec()),
        "t.txt",
        &opts(Format::Auto, Some(4), false),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("--value-column applies to ranges"),
        "{e}"
    );
    let policy = TableOptions {
        format: Format::Ranges,
        value: Some(ValuePolicy::OriginAsn),
        ..Default::default()
    };
    let e = load_table_from(Cursor::new(CSV.as_bytes().to_vec()), "t.csv", &policy).unwrap_err();
    assert!(e.to_string().contains("carries its own value"), "{e}");
}

#[test]
fn files_compressed_truncated_and_the_line_readers() {
    let s = Scratch::new("ranges");
    let path = s.write_gz("r.csv.gz", CSV.as_bytes());
    let l = load_table(&path, &opts(Format::Auto, None, true)).unwrap();
    assert_eq!(l.report.format, Format::Ranges);
    assert_eq!(l.routes.len(), 10);
    // The line readers do not paint: they point to load_table.
    let e = read_routes(&path, &LoadOptions::default()).unwrap_err();
    assert!(
        matches!(
            e,
            ReadError::UnsupportedFormat {
                format: Format::Ranges
            }
        ),
        "{e}"
    );
    // A truncated stream: every complete line before the damage loads.
    let big: String = (0..20_000u32)
        .map(|i| {
            let a = std::net::Ipv4Addr::from(0x0a00_0000 + i * 4);
            let b = std::net::Ipv4Addr::from(0x0a00_0000 + i * 4 + 2);
            format!("{a},{b},{i}\n")
        })
        .collect();
    let bytes = gzip(big.as_bytes());
    let path = s.write("cut.csv.gz", &bytes[..bytes.len() * 3 / 5]);
    let l = load_table(&path, &opts(Format::Ranges, None, false)).unwrap();
    let d = l.report.damage.as_ref().expect("damage");
    assert_eq!(d.kind, DamageKind::Stream);
    let stats = l.report.ranges.unwrap();
    assert_eq!(d.records_before, stats.ranges);
    assert_eq!(l.report.records, stats.ranges);
    // Each 3-address range is a /31 and a /32: no cut line was read.
    assert_eq!(l.routes.len() as u64, 2 * stats.ranges);
    for r in &l.routes {
        let i: u32 = r.value.parse().unwrap();
        assert_eq!(u64::from(i) + 1, r.line);
        let AnyPrefix::V4(p) = r.prefix else { panic!() };
        assert_eq!(p.addr() & !3, 0x0a00_0000 + i * 4);
    }
    let e = load_table(&path, &opts(Format::Ranges, None, true)).unwrap_err();
    assert!(matches!(e, ReadError::DamagedStream { .. }), "{e}");
}
