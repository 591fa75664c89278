//! `ipfib lookup` and `ipfib info` on ranges tables (`FIRST,LAST,VALUE...`):
//! the named format and `auto`, `--value-column`, bad lines (reported by
//! file and line, exit 1, the rest answered), and the overlap count in
//! `info --json`. Answers are checked against a brute-force model: the
//! last range in the file that holds the address.

mod common;

use common::{ipfib, Run};
use ipfib::gen::Rng;
use ipfib::prefix::AnyPrefix;
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

/// A file in this test's own scratch directory, removed when the guard
/// drops (tests run in parallel: one directory each).
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("ipfib-ranges-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Range {
    first: IpAddr,
    last: IpAddr,
    asn: String,
    org: String,
}

impl Range {
    fn holds(&self, a: IpAddr) -> bool {
        match (self.first, self.last, a) {
            (IpAddr::V4(f), IpAddr::V4(l), IpAddr::V4(a)) => f <= a && a <= l,
            (IpAddr::V6(f), IpAddr::V6(l), IpAddr::V6(a)) => f <= a && a <= l,
            _ => false,
        }
    }
}

/// Ranges of both families packed into small windows so that many overlap
/// and touch; organisations with commas and quotes.
fn random_ranges(n: usize, seed: u64) -> Vec<Range> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            let a = rng.below(4096) as u32;
            let b = a + rng.below(if i % 5 == 0 { 2048 } else { 64 }) as u32;
            let (first, last) = if i % 3 == 0 {
                let base = 0x2001_0db8u128 << 96;
                let (x, y) = (u128::from(a) << 60, (u128::from(b) << 60) | ((1 << 60) - 1));
                (
                    IpAddr::V6(Ipv6Addr::from(base + x)),
                    IpAddr::V6(Ipv6Addr::from(base + y)),
                )
            } else {
                (
                    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + a)),
                    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + b)),
                )
            };
            let asn = (64496 + rng.below(6)).to_string();
            let org = match i % 4 {
                0 => format!("Org {asn}, Inc."),
                1 => format!("The \"{asn}\" Co"),
                _ => format!("Org {asn}"),
            };
            Range {
                first,
                last,
                asn,
                org,
            }
        })
        .collect()
}

fn csv(ranges: &[Range]) -> String {
    let mut out = String::from("# test ranges\n");
    for r in ranges {
        let org = format!("\"{}\"", r.org.replace('"', "\"\""));
        out.push_str(&format!("{},{},{},{org}\n", r.first, r.last, r.asn));
    }
    out
}

/// Boundary and random addresses near the ranges.
fn queries(ranges: &[Range], seed: u64) -> Vec<IpAddr> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for r in ranges {
        for a in [r.first, r.last] {
            out.push(a);
            match a {
                IpAddr::V4(a) => {
                    out.push(IpAddr::V4(Ipv4Addr::from(u32::from(a).wrapping_sub(1))));
                    out.push(IpAddr::V4(Ipv4Addr::from(u32::from(a).wrapping_add(1))));
                }
                IpAddr::V6(a) => {
                    out.push(IpAddr::V6(Ipv6Addr::from(u128::from(a).wrapping_sub(1))));
                    out.push(IpAddr::V6(Ipv6Addr::from(u128::from(a).wrapping_add(1))));
                }
            }
        }
    }
    for _ in 0..2000 {
        out.push(IpAddr::V4(Ipv4Addr::from(
            0x0a00_0000 + rng.below(8192) as u32,
        )));
        let x = (0x2001_0db8u128 << 96)
            + (u128::from(rng.below(8192)) << 60)
            + u128::from(rng.next_u64());
        out.push(IpAddr::V6(Ipv6Addr::from(x)));
    }
    out
}

/// Check `ipfib lookup` output against the model; `value` picks the
/// column the table was read with.
fn check_answers(run: &Run, ranges: &[Range], addrs: &[IpAddr], value: fn(&Range) -> &str) {
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), addrs.len(), "{}", run.stderr);
    for (line, &a) in lines.iter().zip(addrs) {
        let mut parts = line.splitn(3, ' ');
        let (addr, prefix, got) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        assert_eq!(addr.parse::<IpAddr>().unwrap(), a);
        match ranges.iter().rev().find(|r| r.holds(a)) {
            None => assert_eq!((prefix, got), ("-", "-"), "{a}"),
            Some(r) => {
                assert_eq!(got, value(r), "{a}");
                let holds = match (prefix.parse::<AnyPrefix>().unwrap(), a) {
                    (AnyPrefix::V4(p), IpAddr::V4(a)) => p.contains(u32::from(a)),
                    (AnyPrefix::V6(p), IpAddr::V6(a)) => p.contains(u128::from(a)),
                    _ => false,
                };
                assert!(holds, "{prefix} does not hold {a}");
            }
        }
    }
}

fn lookup(table: &std::path::Path, extra: &[&str], addrs: &[IpAddr]) -> Run {
    let mut args = vec![
        "lookup".to_string(),
        "--table".into(),
        table.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let input: String = addrs.iter().map(|a| format!("{a}\n")).collect();
    ipfib(&args, Some(input.as_bytes()))
}

#[test]
fn lookup_answers_as_the_last_range_holding_the_address() {
    let s = Scratch::new("model");
    let ranges = random_ranges(300, 7);
    let path = s.write("model.csv", csv(&ranges).as_bytes());
    let addrs = queries(&ranges, 11);
    for extra in [
        &["--format", "ranges"][..],
        &[],
        &["--engine", "radix"],
        &["--engine", "planb"],
        &["--engine", "poptrie"],
    ] {
        let run = lookup(&path, extra, &addrs);
        assert_eq!(run.code, 0, "{extra:?}: {}", run.stderr);
        check_answers(&run, &ranges, &addrs, |r| &r.asn);
    }
    let run = lookup(&path, &["--value-column", "4"], &addrs);
    assert_eq!(run.code, 0, "{}", run.stderr);
    check_answers(&run, &ranges, &addrs, |r| &r.org);
}

#[test]
fn the_cloudflare_line_and_iptoasn_tsv() {
    let s = Scratch::new("cf");
    let path = s.write(
        "cf.csv",
        b"1.0.0.0,1.0.0.255,13335,\"Cloudflare, Inc.\"\n1.0.4.0,1.0.7.255,38803,Gtelecom Pty Ltd\n",
    );
    let run = ipfib(
        &[
            "lookup",
            "--table",
            path.to_str().unwrap(),
            "1.0.0.1",
            "1.0.5.1",
            "1.0.8.0",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "1.0.0.1 1.0.0.0/24 13335\n1.0.5.1 1.0.4.0/22 38803\n1.0.8.0 - -\n"
    );
    let run = ipfib(
        &[
            "lookup",
            "--table",
            path.to_str().unwrap(),
            "--value-column",
            "4",
            "1.0.0.1",
        ],
        None,
    );
    assert_eq!(run.stdout, "1.0.0.1 1.0.0.0/24 Cloudflare, Inc.\n");
    let tsv = s.write(
        "ip2asn.tsv",
        b"1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET - Cloudflare, Inc.\n",
    );
    let run = ipfib(
        &[
            "lookup",
            "--table",
            tsv.to_str().unwrap(),
            "--value-column",
            "5",
            "1.0.0.9",
        ],
        None,
    );
    assert_eq!(
        run.stdout,
        "1.0.0.9 1.0.0.0/24 CLOUDFLARENET - Cloudflare, Inc.\n"
    );
}

#[test]
fn bad_lines_are_reported_and_the_rest_answers_with_exit_1() {
    let s = Scratch::new("bad");
    let path = s.write(
        "bad.csv",
        b"10.0.0.0,10.0.0.255,1\n10.0.1.0,10.0.0.255,2\n10.0.2.0,10.0.2.255\n10.0.3.0,10.0.3.255,3\n",
    );
    let p = path.to_str().unwrap();
    let run = ipfib(
        &["lookup", "--table", p, "10.0.0.1", "10.0.3.1", "10.0.1.1"],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "10.0.0.1 10.0.0.0/24 1\n10.0.3.1 10.0.3.0/24 3\n10.0.1.1 - -\n"
    );
    assert!(run.stderr.contains(&format!("{p}:2: ")), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("{p}:3: ")), "{}", run.stderr);
    assert!(
        run.stderr.contains("is after the last address"),
        "{}",
        run.stderr
    );
    // --strict: the first bad line stops everything.
    let run = ipfib(&["lookup", "--table", p, "--strict", "10.0.0.1"], None);
    assert_eq!(run.code, 2);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains(&format!("{p}:2: ")), "{}", run.stderr);
    // A bad column number cannot run.
    let run = ipfib(
        &["lookup", "--table", p, "--value-column", "2", "10.0.0.1"],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("column 3 or later"), "{}", run.stderr);
    // A column no line has: every line is bad, nothing loads; one message
    // naming the count and the first line, exit 2 (not every answer a miss).
    let run = ipfib(
        &["lookup", "--table", p, "--value-column", "9", "10.0.0.1"],
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("no route could be read")
            && run.stderr.contains("all 4 lines or records are bad")
            && run.stderr.contains("no value column 9"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

#[test]
fn info_counts_overlapping_ranges() {
    let s = Scratch::new("info");
    let ranges = random_ranges(300, 5);
    let overlapping = ranges
        .iter()
        .enumerate()
        .filter(|(i, r)| {
            ranges[..*i]
                .iter()
                .any(|e| match (e.first, e.last, r.first, r.last) {
                    (IpAddr::V4(a), IpAddr::V4(b), IpAddr::V4(c), IpAddr::V4(d)) => {
                        a <= d && c <= b
                    }
                    (IpAddr::V6(a), IpAddr::V6(b), IpAddr::V6(c), IpAddr::V6(d)) => {
                        a <= d && c <= b
                    }
                    _ => false,
                })
        })
        .count();
    assert!(overlapping > 50, "the test needs overlaps: {overlapping}");
    let path = s.write("overlap.csv", csv(&ranges).as_bytes());
    let p = path.to_str().unwrap();
    let run = ipfib(&["info", p, "--json"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["format"], "ranges");
    assert_eq!(v["ranges"], 300);
    assert_eq!(v["overlapping_ranges"], overlapping);
    assert_eq!(v["value_column"], 3);
    assert_eq!(v["records"], 301);
    let run = ipfib(&["info", p], None);
    assert!(
        run.stdout.contains(&format!(
            "ranges: 300 ({overlapping} overlapping an earlier one"
        )),
        "{}",
        run.stdout
    );
    // Other formats carry no ranges fields.
    let text = s.write("t.txt", b"10.0.0.0/8 1\n");
    let run = ipfib(&["info", text.to_str().unwrap(), "--json"], None);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["overlapping_ranges"], Value::Null);
    // Bad lines: exit 1, counted.
    let bad = s.write(
        "bad-info.csv",
        b"10.0.0.0,10.0.0.255,1\nx,y\n10.0.0.0,::,1\n",
    );
    let run = ipfib(&["info", bad.to_str().unwrap(), "--json"], None);
    assert_eq!(run.code, 1);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["bad_records"], 2);
    assert_eq!(v["ranges"], 1);
}

#[test]
fn the_real_asn_files() {
    let dir = PathBuf::from(common::DATA).join("ranges");
    for (name, ranges, unaligned, overlapping) in [
        ("asn-ipv4.csv.gz", 411_961, 78_282, 1),
        ("asn-ipv6.csv.gz", 103_197, 15_698, 0),
    ] {
        let Some(path) = common::data_file(&format!("ranges/{name}")) else {
            return;
        };
        assert!(path.starts_with(&dir));
        let run = ipfib(&["info", path.to_str().unwrap(), "--json"], None);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        let v: Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(v["format"], "ranges");
        assert_eq!(v["ranges"], ranges, "{name}");
        assert_eq!(v["unaligned_ranges"], unaligned, "{name}");
        assert_eq!(v["overlapping_ranges"], overlapping, "{name}");
    }
}
