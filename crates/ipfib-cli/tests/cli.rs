//! The `ipfib` binary end to end (ARCHITECTURE §4): the real executable is
//! run with `std::process::Command` against table files written to a unique
//! scratch directory, and its stdout bytes, stderr and exit status are
//! checked against the contract.
//!
//! Exit status: 0 success, 1 some address lines were bad (the rest was
//! answered), 2 the command could not run.

use ipfib::engine::kernel::Kernel;
use ipfib::engine::{planb, poptrie};
use ipfib::gen::{matched_trace, synthetic_v4, synthetic_v6, uniform_trace, Rng};
use ipfib::oracle::Oracle;
use ipfib::prefix::{AnyAddr, Prefix};
use ipfib::table::Table;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

mod common;

use common::{ipfib, Run, IPFIB};

/// Every engine `ipfib lookup` takes, with a non-default Poptrie `s`.
/// (`poptrie5` is `poptrie32`'s old name, still accepted.)
const ENGINES: [&str; 12] = [
    "auto",
    "planb",
    "poptrie",
    "poptrie:16",
    "poptrie:0",
    "poptrie32",
    "poptrie32:13",
    "poptrie5:12",
    "poptrie-flat",
    "poptrie-flat:13",
    "poptrie-flat:0",
    "radix",
];

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// A unique scratch directory under the system temp dir, removed on drop.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "ipfib-cli-{tag}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch { dir }
    }

    fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cut = |s: &str| s.chars().take(2000).collect::<String>();
        write!(
            f,
            "exit {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code,
            cut(&self.stdout),
            cut(&self.stderr)
        )
    }
}

/// `ipfib lookup --table TABLE EXTRA... ADDRS...`.
fn lookup(table: &Path, extra: &[&str], addrs: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut args: Vec<String> = vec!["lookup".into(), "--table".into(), path_arg(table)];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(addrs.iter().map(|s| s.to_string()));
    ipfib(&args, stdin)
}

fn path_arg(p: &Path) -> String {
    p.to_str().expect("scratch paths are UTF-8").to_string()
}

/// Assert a run failed to start its work: exit 2, nothing on stdout, and
/// stderr holding every one of `needles`.
fn assert_cannot_run(run: &Run, needles: &[&str]) {
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "", "nothing may be printed on exit 2: {run:?}");
    for n in needles {
        assert!(
            run.stderr.contains(n),
            "stderr should mention {n:?}: {run:?}"
        );
    }
}

/// A mixed IPv4 + IPv6 table in the text format, with comments, a blank
/// line, a word value and an integer value, host routes, and no default
/// route (so both families have misses).
const TABLE: &str = "\
# a comment line
10.0.0.0/8 A
10.1.0.0/16 B

192.0.2.0/24 65000   # a trailing comment
203.0.113.7/32 HOST4
2001:db8::/32 C
2001:db8:1::/48 D
2001:db8:1::1/128 HOST6
";

/// Addresses and the exact line the contract prints for each.
const CASES: &[(&str, &str)] = &[
    ("10.1.2.3", "10.1.2.3 10.1.0.0/16 B\n"),
    ("10.200.0.1", "10.200.0.1 10.0.0.0/8 A\n"),
    ("10.255.255.255", "10.255.255.255 10.0.0.0/8 A\n"),
    ("9.255.255.255", "9.255.255.255 - -\n"),
    ("11.0.0.0", "11.0.0.0 - -\n"),
    ("192.0.2.255", "192.0.2.255 192.0.2.0/24 65000\n"),
    ("203.0.113.7", "203.0.113.7 203.0.113.7/32 HOST4\n"),
    ("203.0.113.8", "203.0.113.8 - -\n"),
    ("0.0.0.0", "0.0.0.0 - -\n"),
    ("255.255.255.255", "255.255.255.255 - -\n"),
    ("2001:db8:1:2::3", "2001:db8:1:2::3 2001:db8:1::/48 D\n"),
    ("2001:db8:1::1", "2001:db8:1::1 2001:db8:1::1/128 HOST6\n"),
    ("2001:db8:ffff::1", "2001:db8:ffff::1 2001:db8::/32 C\n"),
    ("2001:db9::1", "2001:db9::1 - -\n"),
    ("::", ":: - -\n"),
    (
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff - -\n",
    ),
];

fn expected_cases() -> String {
    CASES.iter().map(|(_, line)| *line).collect()
}

fn case_addrs() -> Vec<&'static str> {
    CASES.iter().map(|(a, _)| *a).collect()
}

/// Write `(prefix, value)` routes of both families as a text table.
fn text_table(v4: &[(Prefix<u32>, u32)], v6: &[(Prefix<u128>, u32)]) -> String {
    let mut s = String::from("# synthetic\n");
    for (p, v) in v4 {
        writeln!(s, "{p} {v}").unwrap();
    }
    for (p, v) in v6 {
        writeln!(s, "{p} {v}").unwrap();
    }
    s
}

/// A random mixed trace as text lines: uniform and matched addresses of
/// both families, plus IPv4-mapped IPv6 ones.
fn random_addresses(
    v4: &[(Prefix<u32>, u32)],
    v6: &[(Prefix<u128>, u32)],
    n: usize,
    seed: u64,
) -> Vec<String> {
    let p4: Vec<Prefix<u32>> = v4.iter().map(|r| r.0).collect();
    let p6: Vec<Prefix<u128>> = v6.iter().map(|r| r.0).collect();
    let q = n / 8;
    let mut out: Vec<String> = Vec::with_capacity(n);
    out.extend(
        uniform_trace::<u32>(q * 2, seed)
            .into_iter()
            .map(|a| Ipv4Addr::from(a).to_string()),
    );
    out.extend(
        matched_trace(&p4, q * 2, seed + 1)
            .into_iter()
            .map(|a| Ipv4Addr::from(a).to_string()),
    );
    out.extend(
        uniform_trace::<u128>(q, seed + 2)
            .into_iter()
            .map(|a| Ipv6Addr::from(a).to_string()),
    );
    out.extend(
        matched_trace(&p6, q * 2, seed + 3)
            .into_iter()
            .map(|a| Ipv6Addr::from(a).to_string()),
    );
    out.extend(
        matched_trace(&p4, n - out.len(), seed + 4)
            .into_iter()
            .map(|a| format!("::ffff:{}", Ipv4Addr::from(a))),
    );
    // Interleave the kinds so families alternate in the input.
    let mut rng = Rng::new(seed + 5);
    for i in (1..out.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        out.swap(i, j);
    }
    out
}

/// The contract output for `addrs`, computed in-process by the brute-force
/// oracle (IPv4-mapped addresses unmapped, as `AnyAddr` does).
fn oracle_output(
    v4: &[(Prefix<u32>, u32)],
    v6: &[(Prefix<u128>, u32)],
    addrs: &[String],
) -> String {
    let o4 = Oracle::new(v4.iter().copied());
    let o6 = Oracle::new(v6.iter().copied());
    let mut s = String::new();
    for a in addrs {
        let hit = match AnyAddr::parse(a).unwrap() {
            AnyAddr::V4(x) => o4.lookup(x).map(|(p, v)| (p.to_string(), *v)),
            AnyAddr::V6(x) => o6.lookup(x).map(|(p, v)| (p.to_string(), *v)),
        };
        match hit {
            Some((p, v)) => writeln!(s, "{a} {p} {v}").unwrap(),
            None => writeln!(s, "{a} - -").unwrap(),
        }
    }
    s
}

fn lines(addrs: &[String]) -> Vec<u8> {
    let mut s = addrs.join("\n");
    s.push('\n');
    s.into_bytes()
}

// ---------------------------------------------------------------------------
// The lookup contract
// ---------------------------------------------------------------------------

#[test]
fn contract_output_from_arguments() {
    let s = Scratch::new("args");
    let table = s.write("table.txt", TABLE);
    for engine in ENGINES {
        let run = lookup(&table, &["--engine", engine], &case_addrs(), None);
        assert_eq!(run.code, 0, "{engine}: {run:?}");
        assert_eq!(run.stdout, expected_cases(), "{engine}");
        assert_eq!(run.stderr, "", "{engine}");
    }
}

#[test]
fn contract_output_from_stdin() {
    let s = Scratch::new("stdin");
    let table = s.write("table.txt", TABLE);
    let want = expected_cases();
    // LF lines; CRLF lines; the last line without its newline.
    let lf = format!("{}\n", case_addrs().join("\n"));
    let crlf = format!("{}\r\n", case_addrs().join("\r\n"));
    let unterminated = case_addrs().join("\n");
    for engine in ENGINES {
        for input in [&lf, &crlf, &unterminated] {
            let run = lookup(&table, &["--engine", engine], &[], Some(input.as_bytes()));
            assert_eq!(run.code, 0, "{engine} {input:?}: {run:?}");
            assert_eq!(run.stdout, want, "{engine} {input:?}");
            assert_eq!(run.stderr, "", "{engine} {input:?}");
        }
    }
}

#[test]
fn explicit_formats_read_the_same_table() {
    let s = Scratch::new("formats");
    let table = s.write("table.txt", TABLE);
    for format in ["auto", "text"] {
        let run = lookup(&table, &["--format", format], &case_addrs(), None);
        assert_eq!(run.code, 0, "{format}: {run:?}");
        assert_eq!(run.stdout, expected_cases(), "{format}");
    }
    // pyasn IPASN: `;` header, tab separated, integer values.
    let ipasn = s.write(
        "table.dat",
        "; IP-ASN32-DAT file\n; Prefixes-v4 : 2\n10.0.0.0/8\t64500\n10.1.0.0/16\t64501\n2001:db8::/32\t64502\n",
    );
    let want =
        "10.1.2.3 10.1.0.0/16 64501\n10.9.9.9 10.0.0.0/8 64500\n2001:db8::9 2001:db8::/32 64502\n";
    for format in ["auto", "ipasn"] {
        let run = lookup(
            &ipasn,
            &["--format", format],
            &["10.1.2.3", "10.9.9.9", "2001:db8::9"],
            None,
        );
        assert_eq!(run.code, 0, "{format}: {run:?}");
        assert_eq!(run.stdout, want, "{format}");
    }
}

#[test]
fn the_later_duplicate_line_wins() {
    let s = Scratch::new("dup");
    let table = s.write(
        "table.txt",
        "10.0.0.0/8 FIRST\n\
         10.1.0.0/16 INNER\n\
         2001:db8::/32 FIRST6\n\
         10.0.0.0/8 SECOND\n\
         2001:db8::/32 SECOND6\n\
         10.0.0.0/8 THIRD\n",
    );
    let want = "10.200.0.1 10.0.0.0/8 THIRD\n\
                10.1.0.1 10.1.0.0/16 INNER\n\
                2001:db8::1 2001:db8::/32 SECOND6\n";
    for engine in ENGINES {
        let run = lookup(
            &table,
            &["--engine", engine],
            &["10.200.0.1", "10.1.0.1", "2001:db8::1"],
            None,
        );
        assert_eq!(run.code, 0, "{engine}: {run:?}");
        assert_eq!(run.stdout, want, "{engine}");
    }
}

#[test]
fn host_bits_in_the_table_stop_the_command() {
    let s = Scratch::new("hostbits");
    let table = s.write(
        "hosty.txt",
        "# header\n10.0.0.0/8 A\n10.1.2.3/16 B\n2001:db8::/32 C\n",
    );
    let run = lookup(&table, &[], &["10.1.2.3"], None);
    assert_cannot_run(
        &run,
        &[&path_arg(&table), ":3:", "host bits", "10.1.2.3/16"],
    );

    let v6 = s.write("hosty6.txt", "2001:db8::1/32 C\n");
    let run = lookup(&v6, &[], &["2001:db8::1"], None);
    assert_cannot_run(&run, &[&path_arg(&v6), ":1:", "host bits"]);
}

#[test]
fn mask_host_bits_accepts_them() {
    let s = Scratch::new("mask");
    let table = s.write(
        "hosty.txt",
        "# header\n10.0.0.0/8 A\n10.1.2.3/16 B\n2001:db8::1/32 C\n",
    );
    let run = lookup(
        &table,
        &["--mask-host-bits"],
        &["10.1.200.1", "10.2.0.0", "2001:db8:5::"],
        None,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "10.1.200.1 10.1.0.0/16 B\n10.2.0.0 10.0.0.0/8 A\n2001:db8:5:: 2001:db8::/32 C\n"
    );
}

// ---------------------------------------------------------------------------
// Bad input: reported, the rest still answered, exit 1
// ---------------------------------------------------------------------------

#[test]
fn bad_stdin_lines_are_reported_and_the_rest_is_answered() {
    let s = Scratch::new("badstdin");
    let table = s.write("table.txt", TABLE);
    let input = "10.1.2.3\n\
                 garbage\n\
                 \n\
                 1.2.3\n\
                 \x20 \t \n\
                 1.2.3.4/24\n\
                 2001:db8:1::5\n\
                 10.1.2.3 10.1.2.4\n\
                 \x20 192.0.2.1\t\n\
                 11.0.0.0\n";
    for engine in ENGINES {
        let run = lookup(&table, &["--engine", engine], &[], Some(input.as_bytes()));
        assert_eq!(run.code, 1, "{engine}: {run:?}");
        assert_eq!(
            run.stdout,
            "10.1.2.3 10.1.0.0/16 B\n\
             2001:db8:1::5 2001:db8:1::/48 D\n\
             192.0.2.1 192.0.2.0/24 65000\n\
             11.0.0.0 - -\n",
            "{engine}: answers in input order, surrounding whitespace trimmed"
        );
        let err: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(err.len(), 4, "one error per bad line: {run:?}");
        for (msg, (line, text)) in err.iter().zip([
            (2, "garbage"),
            (4, "1.2.3"),
            (6, "1.2.3.4/24"),
            (8, "10.1.2.3 10.1.2.4"),
        ]) {
            assert!(
                msg.contains(&format!("line {line}:")) && msg.contains(text),
                "{engine}: error {msg:?} should name line {line} and {text:?}"
            );
        }
        // Blank and whitespace-only lines (3 and 5) are skipped silently.
        assert!(!run.stderr.contains("line 3"), "{run:?}");
        assert!(!run.stderr.contains("line 5"), "{run:?}");
    }
}

#[test]
fn invalid_utf8_on_stdin_is_a_bad_line() {
    let s = Scratch::new("utf8");
    let table = s.write("table.txt", TABLE);
    let run = lookup(&table, &[], &[], Some(b"10.1.2.3\n\xff\xfe\n11.0.0.0\n"));
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "10.1.2.3 10.1.0.0/16 B\n11.0.0.0 - -\n");
    assert!(run.stderr.contains("line 2"), "{run:?}");
}

#[test]
fn an_over_long_stdin_line_is_a_bad_line_read_in_bounded_memory() {
    let s = Scratch::new("longline");
    let table = s.write("table.txt", TABLE);
    let limit = ipfib_io::MAX_LINE_BYTES;
    let mut input = b"10.1.2.3\n".to_vec();
    input.resize(input.len() + limit as usize + 1, b'a');
    input.extend_from_slice(b"\n11.0.0.0\n");
    let run = lookup(&table, &[], &[], Some(&input));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "10.1.2.3 10.1.0.0/16 B\n11.0.0.0 - -\n");
    assert_eq!(
        run.stderr.trim_end(),
        format!("ipfib: stdin line 2: line longer than {limit} bytes (skipped)")
    );
    // A last line of exactly the bound, with no newline, is a line.
    let mut input = b"10.1.2.3
"
    .to_vec();
    input.resize(input.len() + limit as usize, b' ');
    let run = lookup(&table, &[], &[], Some(&input));
    assert!(!run.stderr.contains("longer than"), "{}", run.stderr);
}

/// What `ipfib lookup` answered on stdin when it read one bounded line at
/// a time (`read_until`, `str::trim`, `AnyAddr::parse`, the radix table,
/// `writeln!`): the reference the block reader must match byte for byte.
/// Stdout, stderr, exit status.
fn per_line_reference(table: &Table<u32>, input: &[u8]) -> (String, String, i32) {
    use std::io::{BufRead, Read};
    let limit = ipfib_io::MAX_LINE_BYTES;
    let (mut out, mut err, mut bad) = (String::new(), String::new(), 0);
    let mut input = std::io::BufReader::new(input);
    let mut buf = Vec::new();
    let mut line_no = 0;
    loop {
        buf.clear();
        let n = input
            .by_ref()
            .take(limit + 1)
            .read_until(b'\n', &mut buf)
            .unwrap();
        if n == 0 {
            break;
        }
        line_no += 1;
        if n as u64 > limit && buf.last() != Some(&b'\n') {
            input.read_until(b'\n', &mut Vec::new()).unwrap();
            bad += 1;
            writeln!(
                err,
                "ipfib: stdin line {line_no}: line longer than {limit} bytes (skipped)"
            )
            .unwrap();
            continue;
        }
        let Ok(text) = std::str::from_utf8(&buf).map(str::trim) else {
            bad += 1;
            writeln!(err, "ipfib: stdin line {line_no}: not valid UTF-8").unwrap();
            continue;
        };
        if text.is_empty() {
            continue;
        }
        match AnyAddr::parse(text) {
            Ok(a) => match table.lookup(a) {
                Some((p, v)) => writeln!(out, "{text} {p} {v}").unwrap(),
                None => writeln!(out, "{text} - -").unwrap(),
            },
            Err(e) => {
                bad += 1;
                writeln!(err, "ipfib: stdin line {line_no}: {e}").unwrap();
            }
        }
    }
    (out, err, i32::from(bad > 0))
}

/// Several megabytes of messy input (so lines straddle every read and
/// block boundary): addresses of both families in many spellings, with
/// surrounding whitespace, CR LF, bad text, zone ids, non-UTF-8, non-ASCII
/// whitespace, blank lines, over-long lines (with and without a newline
/// after them), and no newline at the end. Every engine answers, reports
/// and exits exactly as the per-line reader did.
#[test]
fn the_block_reader_answers_as_the_per_line_reader_did() {
    let s = Scratch::new("blocks");
    let v4 = synthetic_v4(3000, 41);
    let v6 = synthetic_v6(1500, 61);
    let path = s.write("synthetic.txt", text_table(&v4, &v6));
    let mut table: Table<u32> = Table::new();
    for &(p, v) in &v4 {
        table.insert(p.into(), v).unwrap();
    }
    for &(p, v) in &v6 {
        table.insert(p.into(), v).unwrap();
    }
    let addrs = random_addresses(&v4, &v6, 200_000, 23);
    let limit = ipfib_io::MAX_LINE_BYTES as usize;
    let mut rng = Rng::new(29);
    let mut input = Vec::new();
    for (i, a) in addrs.iter().enumerate() {
        match rng.below(40) {
            0 => input.extend_from_slice(a.to_uppercase().as_bytes()),
            1 => input.extend_from_slice(format!(" \t{a}\x0b\x0c ").as_bytes()),
            2 => input.extend_from_slice(format!("{a}\r").as_bytes()),
            3 => input.extend_from_slice(format!("\u{a0}{a}\u{2003}").as_bytes()),
            4 => input.extend_from_slice(format!("{a}%eth0").as_bytes()),
            5 => input.extend_from_slice(format!("0{a}").as_bytes()),
            6 => input.extend_from_slice(format!("{a} {a}").as_bytes()),
            7 => input.extend_from_slice(b"\xff\xfe"),
            8 => input.extend_from_slice(b"  \t \r"),
            9 => input.extend_from_slice(b"1.2.3.256"),
            _ => input.extend_from_slice(a.as_bytes()),
        }
        if i % 50_000 == 7 {
            // Over-long lines: just over the bound, then far over it,
            // then exactly the bound (a line).
            input.extend_from_slice(b"\n");
            input.resize(input.len() + limit + 1, b'1');
            input.extend_from_slice(b"\n");
            input.resize(input.len() + 3 * limit, b' ');
            input.extend_from_slice(b"\r\n");
            input.resize(input.len() + limit - a.len(), b' ');
            input.extend_from_slice(a.as_bytes());
        }
        input.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
    }
    for tail in [&b""[..], b"10.1.2.3", b"  ", b"\xff"] {
        let mut input = input.clone();
        input.extend_from_slice(tail);
        let (out, err, code) = per_line_reference(&table, &input);
        assert!(err.lines().count() > 10_000, "the input has bad lines");
        assert!(err.contains("longer than"), "and over-long ones");
        assert!(out.lines().count() > 150_000);
        for engine in if tail.is_empty() {
            &ENGINES[..]
        } else {
            &ENGINES[..1]
        } {
            let run = lookup(&path, &["--engine", engine], &[], Some(&input));
            assert_lines_eq(&run.stdout, &out, engine);
            // The first bad lines are named, then their total.
            let bad = err.lines().count();
            let shown = ipfib_io::KEPT_ERRORS;
            let mut want_err: String = err.lines().take(shown).map(|l| format!("{l}\n")).collect();
            want_err += &format!("ipfib: {bad} bad stdin lines in all (the first {shown} shown)\n");
            assert_lines_eq(&run.stderr, &want_err, engine);
            assert_eq!(run.stderr.lines().count(), shown + 1, "{engine}");
            assert_eq!(run.code, code, "{engine}");
        }
    }
    // The last line's fate, alone: answered without its newline.
    let run = lookup(&path, &[], &[], Some(b"\n\n10.1.2.3"));
    assert_eq!(run.stdout, per_line_reference(&table, b"10.1.2.3").0);
}

#[test]
fn bad_argument_is_reported_by_its_number() {
    let s = Scratch::new("badarg");
    let table = s.write("table.txt", TABLE);
    let run = lookup(
        &table,
        &[],
        &["10.1.2.3", "not-an-ip", "2001:db8::1", "1.2.3.4/24"],
        None,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stdout,
        "10.1.2.3 10.1.0.0/16 B\n2001:db8::1 2001:db8::/32 C\n"
    );
    let err: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(err.len(), 2, "{run:?}");
    assert!(
        err[0].contains("argument 2") && err[0].contains("not-an-ip"),
        "{run:?}"
    );
    assert!(
        err[1].contains("argument 4") && err[1].contains("1.2.3.4/24"),
        "{run:?}"
    );
}

#[test]
fn empty_stdin_prints_nothing() {
    let s = Scratch::new("empty");
    let table = s.write("table.txt", TABLE);
    for input in [&b""[..], b"\n\n  \n\t\r\n"] {
        let run = lookup(&table, &[], &[], Some(input));
        assert_eq!(run.code, 0, "{input:?}: {run:?}");
        assert_eq!(run.stdout, "", "{input:?}");
        assert_eq!(run.stderr, "", "{input:?}");
    }
}

// ---------------------------------------------------------------------------
// The command cannot run: exit 2
// ---------------------------------------------------------------------------

#[test]
fn missing_table_exits_2_naming_the_path() {
    let s = Scratch::new("missing");
    let path = s.dir.join("no-such-table.txt");
    let run = lookup(&path, &[], &["10.1.2.3"], None);
    assert_cannot_run(&run, &[&path_arg(&path)]);
    // Also when stdin would have been read.
    let run = lookup(&path, &[], &[], Some(b"10.1.2.3\n"));
    assert_cannot_run(&run, &[&path_arg(&path)]);
}

#[cfg(unix)]
#[test]
fn unreadable_table_exits_2_naming_the_path() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("unreadable");
    // A path through a regular file (ENOTDIR): unreadable even for root.
    let file = s.write("table.txt", TABLE);
    let through = file.join("x");
    let run = lookup(&through, &[], &["10.1.2.3"], None);
    assert_cannot_run(&run, &[&path_arg(&through)]);
    // No read permission, unless we run as a user that ignores permissions.
    let secret = s.write("secret.txt", TABLE);
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&secret).is_ok() {
        eprintln!("SKIPPED: permission part (running as a user that ignores permissions)");
        return;
    }
    let run = lookup(&secret, &[], &["10.1.2.3"], None);
    assert_cannot_run(&run, &[&path_arg(&secret)]);
}

#[test]
fn directory_as_table_exits_2() {
    let s = Scratch::new("dir");
    let run = lookup(&s.dir, &[], &["10.1.2.3"], None);
    assert_cannot_run(&run, &[&path_arg(&s.dir)]);
}

#[test]
fn unknown_engine_exits_2() {
    let s = Scratch::new("engine");
    let table = s.write("table.txt", TABLE);
    let run = lookup(&table, &["--engine", "bogus"], &["10.1.2.3"], None);
    assert_cannot_run(&run, &["bogus"]);
    // Checked before anything is read: a missing table changes nothing.
    let run = lookup(
        &s.dir.join("missing.txt"),
        &["--engine", "bogus"],
        &[],
        Some(b"10.1.2.3\n"),
    );
    assert_cannot_run(&run, &["bogus"]);
}

#[test]
fn bad_poptrie_direct_bits_exit_2() {
    let s = Scratch::new("poptrie-bits");
    let table = s.write("table.txt", TABLE);
    for bad in ["poptrie:x", "poptrie:25", "poptrie:", "poptrie:-1"] {
        let run = lookup(&table, &["--engine", bad], &["10.1.2.3"], None);
        assert_cannot_run(&run, &[bad, "direct-pointing bits", "0 to 24"]);
    }
    // Bench-only variants are named as such.
    let run = lookup(&table, &["--engine", "poptrie-basic"], &["10.1.2.3"], None);
    assert_cannot_run(&run, &["poptrie-basic", "bench"]);
    // The same parser serves `ipfib bench`.
    let run = ipfib(
        &[
            "bench",
            "--table",
            &path_arg(&table),
            "--engines",
            "poptrie:x",
        ],
        None,
    );
    assert_cannot_run(&run, &["poptrie:x", "direct-pointing bits"]);
}

#[test]
fn many_bad_arguments_are_named_up_to_ten_then_counted() {
    let s = Scratch::new("badargs");
    let table = s.write("table.txt", TABLE);
    let mut args: Vec<String> = (0..25).map(|i| format!("bad{i}")).collect();
    args.push("10.1.2.3".into());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = lookup(&table, &[], &refs, None);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "10.1.2.3 10.1.0.0/16 B\n");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 11, "{run:?}");
    assert!(lines[9].contains("argument 10") && lines[9].contains("bad9"));
    assert_eq!(
        lines[10],
        "ipfib: 25 bad arguments in all (the first 10 shown)"
    );
}

#[test]
fn wrong_and_unknown_formats() {
    let s = Scratch::new("mrt");
    let table = s.write("table.txt", TABLE);
    // A text file read as MRT: framing fails at byte 0 and nothing loads:
    // not a table at all, one message naming the format and why (exit 2),
    // rather than every answer a miss.
    let run = lookup(&table, &["--format", "mrt"], &["10.1.2.3"], None);
    assert_cannot_run(
        &run,
        &[
            "no route could be read (--format mrt",
            "damaged at byte 0",
            "unknown MRT type",
        ],
    );
    assert_eq!(run.stdout, "");
    let run = lookup(
        &table,
        &["--format", "mrt", "--strict"],
        &["10.1.2.3"],
        None,
    );
    assert_cannot_run(&run, &["damaged at byte 0"]);
    let run = lookup(&table, &["--format", "csv"], &["10.1.2.3"], None);
    assert_cannot_run(&run, &["csv"]);
}

#[test]
fn bad_command_lines_exit_2() {
    let s = Scratch::new("usage");
    let table = s.write("table.txt", TABLE);
    // No --table.
    let run = ipfib(&["lookup", "10.1.2.3"], None);
    assert_cannot_run(&run, &["--table"]);
    // An unknown flag.
    let run = lookup(&table, &["--no-such-flag"], &["10.1.2.3"], None);
    assert_cannot_run(&run, &["--no-such-flag"]);
    // An unknown subcommand.
    let run = ipfib(&["frobnicate"], None);
    assert_cannot_run(&run, &["frobnicate"]);
    // --help is not an error.
    let run = ipfib(&["lookup", "--help"], None);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("--table"), "{run:?}");
}

#[test]
fn edges_of_the_address_space_and_empty_tables() {
    let s = Scratch::new("edges");
    let edges = s.write(
        "edges.txt",
        "0.0.0.0/32 Z\n255.255.255.255/32 M\n0.0.0.0/1 LOW\n128.0.0.0/1 HIGH\n\
         ::/128 Z6\nffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128 M6\n\
         ffff:ffff:ffff:ffff::/64 T64\n::1/128 ONE\n::/127 P127\n8000::/1 H6\n",
    );
    let cases = [
        ("0.0.0.0", "0.0.0.0/32 Z"),
        ("0.0.0.1", "0.0.0.0/1 LOW"),
        ("127.255.255.255", "0.0.0.0/1 LOW"),
        ("128.0.0.0", "128.0.0.0/1 HIGH"),
        ("255.255.255.254", "128.0.0.0/1 HIGH"),
        ("255.255.255.255", "255.255.255.255/32 M"),
        ("::", "::/128 Z6"),
        ("::1", "::1/128 ONE"),
        ("::2", "- -"),
        ("7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "- -"),
        ("8000::", "8000::/1 H6"),
        ("ffff:ffff:ffff:fffe:ffff:ffff:ffff:ffff", "8000::/1 H6"),
        (
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe",
            "ffff:ffff:ffff:ffff::/64 T64",
        ),
        (
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128 M6",
        ),
    ];
    let addrs: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let want: String = cases.iter().map(|(a, r)| format!("{a} {r}\n")).collect();
    let misses: String = addrs.iter().map(|a| format!("{a} - -\n")).collect();
    let empty = s.write("empty.txt", "");
    let comments = s.write("comments.txt", "# nothing but comments\n\n");
    for k in kernels_here() {
        // Every engine with every kernel it runs here (a named engine
        // refuses one it lacks: tested below).
        for engine in ENGINES.into_iter().filter(|e| runs(e, k)) {
            let extra = ["--engine", engine, "--kernel", k.name()];
            let run = lookup(&edges, &extra, &addrs, None);
            assert_eq!(run.code, 0, "{engine} {k}: {run:?}");
            assert_eq!(run.stdout, want, "{engine} {k}");
            for t in [&empty, &comments] {
                let run = lookup(t, &extra, &addrs, None);
                assert_eq!(run.code, 0, "{engine} {k} {t:?}: {run:?}");
                assert_eq!(run.stdout, misses, "{engine} {k} {t:?}");
            }
        }
    }
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    use std::io::BufRead;
    let s = Scratch::new("pipe");
    let table = s.write("table.txt", TABLE);
    // Enough output to overflow the pipe after the reader has gone.
    let input: String = (0..300_000u32)
        .map(|i| format!("{}\n", Ipv4Addr::from(0x0a00_0000 | i)))
        .collect();
    let mut child = Command::new(IPFIB)
        .args(["lookup", "--table", &path_arg(&table)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let mut first = String::new();
    {
        // `| head -1`: read one line, then close the pipe.
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut first).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(first, "10.0.0.0 10.0.0.0/8 A\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stderr, "", "no error or panic for a closed stdout");
}

// ---------------------------------------------------------------------------
// Engines and kernels agree (and agree with the oracle)
// ---------------------------------------------------------------------------

/// A synthetic table plus one dense cluster per family (so some
/// direct-pointing buckets hold a local tree several nodes deep, as real
/// tables' busy regions do), and a few thousand random addresses over it.
fn synthetic_case(s: &Scratch) -> (PathBuf, Vec<String>, String) {
    let mut v4 = synthetic_v4(3000, 41);
    let mut v6 = synthetic_v6(1500, 61);
    // 100.64.0.0/16 cut into 1024 /26s, every third with a /28 inside.
    for i in 0..1024u32 {
        let base = 0x6440_0000 | (i << 6);
        v4.push((Prefix::new(base, 26).unwrap(), 900_000 + i));
        if i % 3 == 0 {
            v4.push((Prefix::new(base | 0x10, 28).unwrap(), 800_000 + i));
        }
    }
    // 2001:db8::/32 cut into 1024 /42s, every third with a /56 inside.
    for i in 0..1024u128 {
        let base = (0x2001_0db8u128 << 96) | (i << 86);
        v6.push((Prefix::new(base, 42).unwrap(), 700_000 + i as u32));
        if i % 3 == 0 {
            let inner = base | (0x5u128 << 72);
            v6.push((Prefix::new(inner, 56).unwrap(), 600_000 + i as u32));
        }
    }
    let table = s.write("synthetic.txt", text_table(&v4, &v6));
    let addrs = random_addresses(&v4, &v6, 6000, 7);
    let want = oracle_output(&v4, &v6, &addrs);
    (table, addrs, want)
}

#[test]
fn radix_and_planb_agree_with_the_oracle_on_random_addresses() {
    let s = Scratch::new("engines");
    let (table, addrs, want) = synthetic_case(&s);
    let hits = want.lines().filter(|l| !l.ends_with(" - -")).count();
    assert!(
        hits > addrs.len() / 3 && hits < addrs.len(),
        "the trace should mix hits ({hits}) and misses"
    );
    let input = lines(&addrs);
    for engine in ENGINES {
        let run = lookup(&table, &["--engine", engine], &[], Some(&input));
        assert_eq!(run.code, 0, "{engine}: {run:?}");
        assert_eq!(run.stderr, "", "{engine}");
        assert_lines_eq(&run.stdout, &want, engine);
    }
}

#[test]
fn every_supported_kernel_gives_identical_output() {
    let s = Scratch::new("kernels");
    let (table, addrs, want) = synthetic_case(&s);
    let input = lines(&addrs);
    let supported = kernels_here();
    assert!(supported.contains(&Kernel::Scalar));
    assert!(supported.contains(&planb::KERNELS.detect()));
    assert!(supported.contains(&poptrie::KERNELS.detect()));
    for k in &supported {
        let run = lookup(&table, &["--kernel", k.name()], &[], Some(&input));
        assert_eq!(run.code, 0, "{k}: {run:?}");
        assert_lines_eq(&run.stdout, &want, k.name());
    }
    eprintln!(
        "kernels checked: {}",
        supported
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

#[test]
fn unsupported_or_unknown_kernel_exits_2() {
    let s = Scratch::new("badkernel");
    let table = s.write("table.txt", TABLE);
    let run = lookup(&table, &["--kernel", "sse9"], &["10.1.2.3"], None);
    assert_cannot_run(&run, &["sse9"]);
    match Kernel::ALL
        .into_iter()
        .find(|k| !kernels_here().contains(k))
    {
        Some(k) => {
            for engine in ENGINES {
                let extra = ["--engine", engine, "--kernel", k.name()];
                let run = lookup(&table, &extra, &["10.1.2.3"], None);
                assert_cannot_run(&run, &[k.name(), "not supported"]);
            }
        }
        None => eprintln!("SKIPPED: this CPU supports every kernel"),
    }
    // A named engine refuses a kernel it does not have (PlanB has no
    // popcnt kernel, Poptrie no avx2); auto runs it where it can.
    let run = lookup(
        &table,
        &["--engine", "planb", "--kernel", "popcnt"],
        &["10.1.2.3"],
        None,
    );
    if kernels_here().contains(&Kernel::Popcnt) {
        assert_cannot_run(&run, &["planb has no kernel popcnt", "here: "]);
        let run = lookup(&table, &["--kernel", "popcnt"], &["10.1.2.3"], None);
        assert_eq!(run.code, 0, "{run:?}");
    }
    if kernels_here().contains(&Kernel::Avx2) {
        let run = lookup(
            &table,
            &["--engine", "poptrie-flat", "--kernel", "avx2"],
            &["10.1.2.3"],
            None,
        );
        assert_cannot_run(&run, &["poptrie-flat has no kernel avx2"]);
    }
}

#[test]
fn engines_lists_the_registry() {
    let run = ipfib(&["engines"], None);
    assert_eq!(run.code, 0, "{run:?}");
    for e in ipfib::engine::registry::ENGINES {
        let line = run
            .stdout
            .lines()
            .find(|l| {
                l.split_whitespace().next().map(|n| n.split('[').next()) == Some(Some(e.name))
            })
            .unwrap_or_else(|| panic!("{} not listed:\n{}", e.name, run.stdout));
        assert!(line.contains(e.summary), "{line}");
        assert_eq!(line.contains("[:S]"), e.takes_bits, "{line}");
    }
    let run = ipfib(&["engines", "--json"], None);
    assert_eq!(run.code, 0, "{run:?}");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let names: Vec<&str> = v["engines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), ipfib::engine::registry::ENGINES.len());
    assert!(names.contains(&"poptrie32"));
    for (set, here) in [("planb", &planb::KERNELS), ("poptrie", &poptrie::KERNELS)] {
        let k = &v["kernels"][set];
        assert_eq!(k["default"], here.detect().name(), "{set}");
        let supported: Vec<&str> = k["supported"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        let want: Vec<&str> = here.supported().iter().map(|k| k.name()).collect();
        assert_eq!(supported, want, "{set}");
    }
    // One error, naming the valid engines, for an unknown name anywhere.
    let run = ipfib(
        &[
            "lookup",
            "--table",
            "/nonexistent",
            "--engine",
            "poptree",
            "10.0.0.1",
        ],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("unknown engine \"poptree\" (available: auto, planb, poptrie[:S]")
            && !run.stderr.contains("basic"),
        "{}",
        run.stderr
    );
    let run = ipfib(&["bench", "--engines", "planb,poptree"], None);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("poptrie-basic[:S]"), "{}", run.stderr);
}

/// `compile`'s list of engines leaves out radix, which it refuses.
#[test]
fn compile_lists_the_engines_a_file_holds() {
    let run = ipfib(
        &[
            "compile",
            "--engine",
            "poptree",
            "/nonexistent",
            "-o",
            "/nonexistent.ipfib",
        ],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("unknown engine \"poptree\" (available: auto, planb, poptrie[:S]")
            && !run.stderr.contains("radix"),
        "{}",
        run.stderr
    );
}

/// Whether `ipfib lookup --engine engine --kernel k` runs here: auto and
/// radix take any kernel some engine runs, a named engine only its own.
fn runs(engine: &str, k: Kernel) -> bool {
    use ipfib::engine::registry::EngineSpec;
    match engine.parse::<EngineSpec>().unwrap() {
        EngineSpec::Engine { kind, .. } => kind.kernels().is_supported(k),
        _ => kernels_here().contains(&k),
    }
}

/// Every kernel some engine runs on this CPU (`--kernel` takes these).
fn kernels_here() -> Vec<Kernel> {
    Kernel::ALL
        .into_iter()
        .filter(|&k| planb::KERNELS.is_supported(k) || poptrie::KERNELS.is_supported(k))
        .collect()
}

/// Compare outputs line by line so a failure names the first bad line.
fn assert_lines_eq(got: &str, want: &str, what: &str) {
    let g: Vec<&str> = got.lines().collect();
    let w: Vec<&str> = want.lines().collect();
    if let Some(i) = (0..g.len().min(w.len())).find(|&i| g[i] != w[i]) {
        panic!(
            "{what}: line {} differs:\n  got  {:?}\n  want {:?}",
            i + 1,
            g[i],
            w[i]
        );
    }
    assert_eq!(g.len(), w.len(), "{what}: line count");
    assert_eq!(got, want, "{what}: bytes (line endings?)");
}

// ---------------------------------------------------------------------------
// IPv4-mapped addresses, compressed tables
// ---------------------------------------------------------------------------

#[test]
fn ipv4_mapped_addresses_are_answered_from_the_ipv4_table() {
    let s = Scratch::new("mapped");
    let table = s.write(
        "table.txt",
        "8.8.8.0/24 GOOGLE\n::ffff:0:0/96 MAPPED6\n::/0 V6DEFAULT\n",
    );
    let addrs = [
        "::ffff:8.8.8.8",
        "::FFFF:8.8.8.9",
        "0:0:0:0:0:ffff:808:80a",
        "::ffff:9.9.9.9",
        "8.8.8.8",
        "::8.8.8.8",
        "2001:db8::1",
    ];
    let want = "::ffff:8.8.8.8 8.8.8.0/24 GOOGLE\n\
                ::FFFF:8.8.8.9 8.8.8.0/24 GOOGLE\n\
                0:0:0:0:0:ffff:808:80a 8.8.8.0/24 GOOGLE\n\
                ::ffff:9.9.9.9 - -\n\
                8.8.8.8 8.8.8.0/24 GOOGLE\n\
                ::8.8.8.8 ::/0 V6DEFAULT\n\
                2001:db8::1 ::/0 V6DEFAULT\n";
    for engine in ENGINES {
        let run = lookup(&table, &["--engine", engine], &addrs, None);
        assert_eq!(run.code, 0, "{engine}: {run:?}");
        assert_eq!(run.stdout, want, "{engine} (arguments)");
        let input = format!("{}\n", addrs.join("\n"));
        let run = lookup(&table, &["--engine", engine], &[], Some(input.as_bytes()));
        assert_eq!(run.code, 0, "{engine}: {run:?}");
        assert_eq!(run.stdout, want, "{engine} (stdin)");
    }
}

#[test]
fn gzip_tables_are_read_transparently() {
    use flate2::write::GzEncoder;
    use flate2::Compression;
    let s = Scratch::new("gzip");
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(TABLE.as_bytes()).unwrap();
    let gz = enc.finish().unwrap();
    assert_eq!(&gz[..2], b"\x1f\x8b");
    // By content, not by name: with and without the .gz suffix.
    for name in ["table.txt.gz", "table.txt"] {
        let table = s.write(name, &gz);
        let run = lookup(&table, &[], &case_addrs(), None);
        assert_eq!(run.code, 0, "{name}: {run:?}");
        assert_eq!(run.stdout, expected_cases(), "{name}");
    }
    // A truncated gzip stream: what is complete is loaded, the damage is
    // reported naming the file and the byte offset, exit 1; --strict: exit 2.
    // (A table long enough that half the stream holds whole lines.)
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    let long: String = (0..20_000u32)
        .map(|i| format!("10.{}.{}.0/24 {i}\n", i >> 8, i & 255))
        .collect();
    enc.write_all(long.as_bytes()).unwrap();
    let long_gz = enc.finish().unwrap();
    let cut = s.write("cut.txt.gz", &long_gz[..long_gz.len() / 2]);
    let run = lookup(&cut, &[], &["10.0.1.3"], None);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "10.0.1.3 10.0.1.0/24 1\n");
    assert!(run.stderr.contains(&path_arg(&cut)), "{run:?}");
    assert!(run.stderr.contains("damaged at byte "), "{run:?}");
    let run = lookup(&cut, &["--strict"], &["10.0.1.3"], None);
    assert_cannot_run(&run, &[&path_arg(&cut), "damaged gzip stream"]);
    // Cut before any whole line: nothing loaded, one message, exit 2.
    let cut = s.write("cut-early.txt.gz", &gz[..gz.len() / 2]);
    let run = lookup(&cut, &[], &["10.1.2.3"], None);
    assert_cannot_run(&run, &[&path_arg(&cut), "no route could be read"]);
}

// ---------------------------------------------------------------------------
// ipfib bench --json
// ---------------------------------------------------------------------------

/// `ipfib bench ARGS --json FILE` in a scratch directory: the run (which
/// must succeed) and the parsed JSON.
fn bench_json(tag: &str, args: &[&str]) -> (Run, serde_json::Value) {
    let s = Scratch::new(tag);
    let out = s.dir.join("bench.json");
    let mut all = vec!["bench".to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    all.extend(["--json".to_string(), path_arg(&out)]);
    let run = ipfib(&all, None);
    assert_eq!(run.code, 0, "{run:?}");
    let json = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    (run, json)
}

fn engine_name(r: &serde_json::Value) -> &str {
    r["engine"].as_str().unwrap_or_default()
}

#[test]
fn bench_json_has_the_contract_fields_and_agreeing_checksums() {
    let (run, json) = bench_json(
        "bench",
        &[
            "--v4-prefixes",
            "2000",
            "--v6-prefixes",
            "1000",
            "--trace-len",
            "20000",
            "--runs",
            "1",
        ],
    );
    assert!(json["machine"].is_object(), "machine: {json}");
    let results = json["results"].as_array().expect("results is a list");
    assert!(!results.is_empty());

    let mut checksums: HashMap<(u64, String), Vec<(String, u64)>> = HashMap::new();
    let mut engines = std::collections::BTreeSet::new();
    for r in results {
        for field in [
            "engine",
            "family",
            "table",
            "prefixes",
            "trace",
            "batch",
            "threads",
            "mlps_min",
            "mlps_median",
            "mlps_max",
            "build_ms",
            "footprint_bytes",
            "checksum",
            // Quartiles, memory growth across the build,
            // worker CPUs.
            "mlps_q1",
            "mlps_q3",
            "mlps_iqr",
            "rss_delta_bytes",
            "cpus",
        ] {
            assert!(r.get(field).is_some(), "result lacks {field:?}: {r}");
        }
        let engine = r["engine"]
            .as_str()
            .expect("engine is a string")
            .to_string();
        let family = r["family"].as_u64().expect("family is a number");
        let trace = r["trace"].as_str().expect("trace is a string").to_string();
        let prefixes = r["prefixes"].as_u64().unwrap();
        assert!(r["table"].is_string(), "{r}");
        assert!(r["batch"].as_u64().unwrap() >= 1, "{r}");
        assert!(r["threads"].as_u64().unwrap() >= 1, "{r}");
        assert!(r["footprint_bytes"].as_u64().unwrap() > 0, "{r}");
        assert!(r["build_ms"].as_f64().unwrap() >= 0.0, "{r}");
        let (min, med, max) = (
            r["mlps_min"].as_f64().unwrap(),
            r["mlps_median"].as_f64().unwrap(),
            r["mlps_max"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= med && med <= max, "{r}");
        let (q1, q3) = (
            r["mlps_q1"].as_f64().unwrap(),
            r["mlps_q3"].as_f64().unwrap(),
        );
        assert!(min <= q1 && q1 <= med && med <= q3 && q3 <= max, "{r}");
        assert!(
            (r["mlps_iqr"].as_f64().unwrap() - (q3 - q1)).abs() < 1e-9,
            "{r}"
        );
        // Built engines report their memory growth; radix is not built.
        if cfg!(target_os = "linux") {
            let radix = engine_name(r) == "radix";
            assert_eq!(r["rss_delta_bytes"].is_null(), radix, "{r}");
        }
        match family {
            4 => assert_eq!(prefixes, 2000, "{r}"),
            6 => assert_eq!(prefixes, 1000, "{r}"),
            _ => panic!("family must be 4 or 6: {r}"),
        }
        engines.insert(engine.clone());
        checksums
            .entry((family, trace))
            .or_default()
            .push((engine, r["checksum"].as_u64().expect("checksum is a u64")));
    }
    let mut keys: Vec<_> = checksums.keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            (4, "matched".to_string()),
            (4, "uniform".to_string()),
            (6, "matched".to_string()),
            (6, "uniform".to_string())
        ],
        "one group per family and trace"
    );
    for (key, rows) in &checksums {
        assert!(
            rows.iter().all(|r| r.1 == rows[0].1),
            "{key:?}: checksums differ: {rows:?}"
        );
    }
    for e in ["planb", "planb-routes", "poptrie:18", "radix"] {
        assert!(
            engines.contains(e),
            "default engines include {e}: {engines:?}"
        );
    }
    // The human-readable table went to stdout.
    assert!(run.stdout.contains("checksum"), "{run:?}");
}

#[test]
fn bench_runs_poptrie_variants_with_counts_and_prefix_traces() {
    let (_, json) = bench_json(
        "bench-poptrie",
        &[
            "--v4-prefixes",
            "3000",
            "--v6-prefixes",
            "1000",
            "--trace-len",
            "5000",
            "--runs",
            "1",
            "--batch",
            "1,16",
            "--trace",
            "uniform,uniform-in:2000::/8",
            "--engines",
            "planb,poptrie,poptrie:0,poptrie-routes:16,poptrie-basic:18,radix",
        ],
    );
    let results = json["results"].as_array().expect("results is a list");
    let mut seen = std::collections::BTreeSet::new();
    for r in results {
        let engine = r["engine"].as_str().unwrap();
        seen.insert((engine.to_string(), r["trace"].as_str().unwrap().to_string()));
        // Checksums agree within one family and trace (else bench exits 2).
        if engine.starts_with("poptrie") {
            assert!(r["inodes"].as_u64().is_some(), "{r}");
            assert!(r["leaves"].as_u64().unwrap() > 0, "{r}");
            let trie = r["engine_bytes"].as_u64().unwrap();
            assert!(
                0 < trie && trie <= r["footprint_bytes"].as_u64().unwrap(),
                "{r}"
            );
        } else {
            assert!(r.get("inodes").is_none(), "{r}");
        }
    }
    for e in [
        "poptrie:18",
        "poptrie:0",
        "poptrie-routes:16",
        "poptrie-basic:18",
    ] {
        assert!(
            seen.contains(&(e.to_string(), "uniform".to_string())),
            "{seen:?}"
        );
        // The prefix trace runs for IPv6 only.
        assert!(
            seen.contains(&(e.to_string(), "in:2000::/8".to_string())),
            "{seen:?}"
        );
    }
    let v4_in_prefix = results
        .iter()
        .any(|r| r["family"] == 4 && r["trace"] == "in:2000::/8");
    assert!(!v4_in_prefix, "an IPv6 prefix trace must not run on IPv4");
    let bad = ipfib(&["bench", "--trace", "uniform-in:2000::/200"], None);
    assert_cannot_run(&bad, &["uniform-in:2000::/200"]);
}

// ---------------------------------------------------------------------------
// Throughput: a million addresses through stdin
// ---------------------------------------------------------------------------

#[test]
fn a_million_addresses_through_stdin() {
    const N: usize = 1_000_000;
    let s = Scratch::new("million");
    let v4 = synthetic_v4(50_000, 5);
    let v6 = synthetic_v6(20_000, 9);
    let table = s.write("synthetic.txt", text_table(&v4, &v6));
    let addrs = random_addresses(&v4, &v6, N, 11);
    assert_eq!(addrs.len(), N);
    let input = lines(&addrs);

    // The same answers in-process, from the route tables.
    let mut t: Table<u32> = Table::new();
    for &(p, v) in &v4 {
        t.insert(p.into(), v).unwrap();
    }
    for &(p, v) in &v6 {
        t.insert(p.into(), v).unwrap();
    }
    let mut want = String::with_capacity(input.len() * 3);
    for a in &addrs {
        match t.lookup(AnyAddr::parse(a).unwrap()) {
            Some((p, v)) => writeln!(want, "{a} {p} {v}").unwrap(),
            None => writeln!(want, "{a} - -").unwrap(),
        }
    }

    // Startup and table load alone, to separate them from the lookups.
    let t0 = Instant::now();
    let run = lookup(&table, &[], &[], Some(b""));
    let startup = t0.elapsed();
    assert_eq!(run.code, 0, "{run:?}");

    let t0 = Instant::now();
    let run = lookup(&table, &[], &[], Some(&input));
    let total = t0.elapsed();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), N);
    assert_lines_eq(&run.stdout, &want, "1M addresses");

    let lookups = total.saturating_sub(startup).as_secs_f64().max(1e-9);
    eprintln!(
        "ipfib lookup: {N} lines in {:.3} s ({:.0} lines/s end to end; \
         {:.3} s startup + load of {} routes; {:.0} lines/s excluding it)",
        total.as_secs_f64(),
        N as f64 / total.as_secs_f64(),
        startup.as_secs_f64(),
        v4.len() + v6.len(),
        N as f64 / lookups
    );
}

#[test]
fn bench_reads_a_trace_file_and_checksums_its_answers() {
    let s = Scratch::new("bench-trace");
    let table = s.write("t.txt", "10.0.0.0/8 a\n10.1.0.0/16 b\n2001:db8::/32 c\n");
    // 10.1.2.3 -> b (value index 1), 10.2.0.0 -> a (0), 11.0.0.0 -> miss;
    // the IPv6 line is another family's address and is measured apart.
    let trace = s.write(
        "tr.txt",
        "10.1.2.3\n10.2.0.0\n# comment\n11.0.0.0\n2001:db8::1\n",
    );
    let out = s.dir.join("b.json");
    let trace_arg = path_arg(&trace);
    let run = ipfib(
        &[
            "bench",
            "--table",
            &path_arg(&table),
            "--trace",
            &trace_arg,
            "--runs",
            "1",
            "--json",
            &path_arg(&out),
        ],
        None,
    );
    assert_eq!(run.code, 0, "{run:?}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // The checksum bench documents: h = h * 0x100000001b3 + (value + 1),
    // a miss counting as value 2^32 - 1.
    let fold = |vals: &[u64]| {
        vals.iter().fold(0u64, |h, &v| {
            h.wrapping_mul(0x100_0000_01b3).wrapping_add(v + 1)
        })
    };
    let want_v4 = fold(&[1, 0, u32::MAX as u64]);
    let want_v6 = fold(&[0]);
    let results = json["results"].as_array().unwrap();
    assert!(results.len() >= 2, "{json}");
    for r in results {
        assert_eq!(r["trace"], trace_arg.as_str(), "{r}");
        let want = if r["family"] == 4 { want_v4 } else { want_v6 };
        assert_eq!(r["checksum"].as_u64(), Some(want), "{r}");
    }

    let run = ipfib(
        &[
            "bench",
            "--table",
            &path_arg(&table),
            "--trace",
            "no-such-trace",
        ],
        None,
    );
    assert_cannot_run(&run, &["no-such-trace", "or a trace file"]);
    let bad = s.write("bad-trace.txt", "10.0.0.1\nnonsense\n");
    let run = ipfib(
        &[
            "bench",
            "--table",
            &path_arg(&table),
            "--trace",
            &path_arg(&bad),
        ],
        None,
    );
    assert_cannot_run(&run, &[&format!("{}:2: not an address", path_arg(&bad))]);
}

/// Outputs that are not regular files: `compile -o` never renames over a
/// FIFO or a directory (nor a device such as /dev/null, not tried here:
/// a regression would replace the machine's /dev/null), and writes through
/// a symbolic link to its file, leaving the link a link.
#[test]
fn compile_replaces_only_regular_files() {
    let s = Scratch::new("compile-out");
    let table = s.write("t.txt", TABLE);
    let fifo = s.dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let run = ipfib(
        &[
            "compile".as_ref(),
            table.as_os_str(),
            "-o".as_ref(),
            fifo.as_os_str(),
        ],
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    let run = ipfib(
        &[
            "compile".as_ref(),
            table.as_os_str(),
            "-o".as_ref(),
            s.dir.as_os_str(),
        ],
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(s.dir.is_dir());
    for format in ["ipfib", "mmdb"] {
        let target = s.dir.join(format!("target.{format}"));
        let link = s.dir.join(format!("link.{format}"));
        std::fs::write(&target, b"old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let run = ipfib(
            &[
                "compile".as_ref(),
                table.as_os_str(),
                "-o".as_ref(),
                link.as_os_str(),
                "--output-format".as_ref(),
                format.as_ref(),
            ],
            None,
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let run = ipfib(
            &[
                "lookup".as_ref(),
                "--table".as_ref(),
                link.as_os_str(),
                "10.1.2.3".as_ref(),
            ],
            None,
        );
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        assert!(
            run.stdout.starts_with("10.1.2.3 10.1.0.0/16"),
            "{format}: {}",
            run.stdout
        );
    }
}

/// A table read from a pipe or a FIFO is opened once: format detection
/// neither eats its first bytes nor waits for a writer that has gone.
#[test]
fn tables_from_pipes_and_fifos_are_read_whole() {
    let s = Scratch::new("pipe-table");
    let fifo = s.dir.join("table.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, TABLE).unwrap())
    };
    let mut child = Command::new("timeout")
        .args(["20", IPFIB, "lookup", "--table"])
        .arg(&fifo)
        .arg("10.1.2.3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = std::mem::take(&mut child.stdout);
    let status = child.wait().unwrap();
    writer.join().unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut out.unwrap(), &mut text).unwrap();
    assert_eq!(status.code(), Some(0), "a FIFO table: {text}");
    assert_eq!(text, "10.1.2.3 10.1.0.0/16 B\n");
    // stdin as the table: every byte of it, the first ones included.
    let run = ipfib(
        &["lookup", "--table", "/dev/stdin", "192.0.2.1"],
        Some(TABLE.as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "192.0.2.1 192.0.2.0/24 65000\n");
}

/// `info` and `engines` into a pipe closed early end quietly (exit 0),
/// as `lookup` does, instead of panicking.
#[test]
fn info_and_engines_end_quietly_on_a_closed_pipe() {
    let s = Scratch::new("info-pipe");
    let table = s.write("t.txt", TABLE);
    for args in [
        vec!["engines".to_string()],
        vec!["info".to_string(), table.display().to_string()],
    ] {
        let mut child = Command::new(IPFIB)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader goes away at once
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// `collect --mrt` on a file holding no MRT record refuses to start.
#[test]
fn collect_refuses_an_mrt_file_with_no_record() {
    let s = Scratch::new("collect-mrt");
    let table = s.write("t.txt", TABLE);
    let mut child = Command::new("timeout")
        .args([
            "30",
            IPFIB,
            "collect",
            "--bmp",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--mrt",
        ])
        .arg(&table)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = std::mem::take(&mut child.stderr);
    let status = child.wait().unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut err.unwrap(), &mut text).unwrap();
    assert_eq!(status.code(), Some(2), "{text}");
    assert!(text.contains("no MRT record could be read"), "{text}");
}
