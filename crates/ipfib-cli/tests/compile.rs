//! `ipfib compile --output-format mmdb`: the file the CLI writes is the one
//! the library writes for the same table and options (the library's answers
//! are checked against a brute-force match in ipfib-io's tests, and against
//! the official reader in python/tests/test_mmdb_write.py); exit statuses,
//! and a failed export never leaves a file or touches an existing one.

mod common;

use ipfib::table::Table;
use ipfib_io::mmdb_write::{self, Options, RecordMode};
use ipfib_io::{load_table, TableOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn compile(args: &[&str]) -> Run {
    let out = Command::new(common::IPFIB)
        .arg("compile")
        .args(args)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ipfib-compile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const TABLE: &str = "\
0.0.0.0/0 default
10.0.0.0/8 64500
10.1.0.0/16 64501
10.1.2.3/32 host
2001:db8::/32 {\"autonomous_system_number\":13335}
2001:db8::1/128 4294967296
::/0 six
";

/// The library's bytes for `table` loaded as the CLI loads it.
fn library_bytes(table: &Path, opts: &Options) -> Vec<u8> {
    let loaded = load_table(table, &TableOptions::default()).unwrap();
    let mut t = Table::new();
    for r in loaded.routes {
        t.insert(r.prefix, r.value).unwrap();
    }
    let mut out = Vec::new();
    mmdb_write::write_table(&mut out, &t, opts).unwrap();
    out
}

#[test]
fn the_cli_writes_what_the_library_writes() {
    let dir = scratch("same");
    let table = dir.join("t.txt");
    std::fs::write(&table, TABLE).unwrap();
    let out = dir.join("t.mmdb");
    let (t, o) = (table.to_str().unwrap(), out.to_str().unwrap());
    let base = Options {
        description: "ipfib export of t.txt".into(),
        build_epoch: 1_700_000_000,
        ..Options::default()
    };
    let cases: Vec<(Vec<&str>, Options)> = vec![
        (vec![], base.clone()),
        (
            vec![
                "--mmdb-field",
                "autonomous_system_number",
                "--mmdb-record",
                "field",
                "--mmdb-database-type",
                "GeoLite2-ASN-like",
                "--mmdb-description",
                "described",
                "--mmdb-record-size",
                "28",
                "--mmdb-merge",
            ],
            Options {
                field: "autonomous_system_number".into(),
                record: RecordMode::Field,
                database_type: "GeoLite2-ASN-like".into(),
                description: "described".into(),
                record_size: Some(28),
                merge_neighbours: true,
                ..base.clone()
            },
        ),
    ];
    for (extra, opts) in cases {
        let mut args = vec![t, "-o", o, "--output-format", "mmdb"];
        args.extend(&extra);
        let r = compile(&args);
        assert_eq!(r.code, 0, "{extra:?}: {}", r.stderr);
        assert!(
            r.stdout.contains("(4 IPv4 + 3 IPv6 routes)"),
            "{}",
            r.stdout
        );
        let got = std::fs::read(&out).unwrap();
        assert_eq!(got, library_bytes(&table, &opts), "{extra:?}");
        // Reproducible: the same table and SOURCE_DATE_EPOCH, the same bytes.
        assert_eq!(compile(&args).code, 0);
        assert_eq!(std::fs::read(&out).unwrap(), got);
    }
    assert_eq!(files(&dir), ["t.mmdb", "t.txt"]);
    // ::/0 loses ::/96 to IPv4: said on stderr, the export still succeeds.
    let r = compile(&[t, "-o", o, "--output-format", "mmdb"]);
    assert!(r.stderr.contains("inside ::/96"), "{}", r.stderr);
    // IPv4 only.
    std::fs::write(&table, "10.0.0.0/8 1\n").unwrap();
    let r = compile(&[
        t,
        "-o",
        o,
        "--output-format",
        "mmdb",
        "--mmdb-ip-version",
        "4",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let opts = Options {
        ip_version: mmdb_write::IpVersion::Four,
        ..base
    };
    assert_eq!(std::fs::read(&out).unwrap(), library_bytes(&table, &opts));
}

#[test]
fn failures_exit_2_and_leave_nothing_behind() {
    let dir = scratch("fail");
    let table = dir.join("t.txt");
    std::fs::write(&table, TABLE).unwrap();
    let out = dir.join("out.mmdb");
    std::fs::write(&out, b"previous").unwrap();
    let (t, o) = (table.to_str().unwrap(), out.to_str().unwrap());
    let missing = dir.join("missing.txt");
    let bad_line = dir.join("bad.txt");
    std::fs::write(&bad_line, "10.0.0.0/8 1\nnot-a-prefix 2\n").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![t, "-o", o, "--engine", "radix"],
            "radix is the route table",
        ),
        (
            vec![t, "-o", o, "--output-format", "mmdb", "--engine", "planb"],
            "--engine applies",
        ),
        (
            vec![t, "-o", o, "--output-format", "ipfib", "--mmdb-field", "x"],
            "--mmdb-field applies",
        ),
        (
            vec![
                t,
                "-o",
                o,
                "--output-format",
                "mmdb",
                "--mmdb-record",
                "json",
            ],
            "invalid JSON",
        ),
        (
            vec![
                t,
                "-o",
                o,
                "--output-format",
                "mmdb",
                "--mmdb-record",
                "xml",
            ],
            "record mode",
        ),
        (
            vec![
                t,
                "-o",
                o,
                "--output-format",
                "mmdb",
                "--mmdb-record-size",
                "20",
            ],
            "24, 28 or 32",
        ),
        (
            vec![
                t,
                "-o",
                o,
                "--output-format",
                "mmdb",
                "--mmdb-ip-version",
                "5",
            ],
            "4 or 6",
        ),
        (
            vec![
                t,
                "-o",
                o,
                "--output-format",
                "mmdb",
                "--mmdb-ip-version",
                "4",
            ],
            "IPv6 routes",
        ),
        (
            vec![
                missing.to_str().unwrap(),
                "-o",
                o,
                "--output-format",
                "mmdb",
            ],
            "missing.txt",
        ),
        (
            vec![
                bad_line.to_str().unwrap(),
                "-o",
                o,
                "--output-format",
                "mmdb",
            ],
            "bad.txt:2",
        ),
        (vec![t, "-o", o, "--output-format", "nope"], "nope"),
    ];
    for (args, message) in cases {
        let r = compile(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(message), "{args:?}: {}", r.stderr);
        assert_eq!(std::fs::read(&out).unwrap(), b"previous", "{args:?}");
        assert_eq!(files(&dir), ["bad.txt", "out.mmdb", "t.txt"], "{args:?}");
    }
    // Unwritable output: a missing directory, a directory in the way.
    let nodir = dir.join("no/such/dir/x.mmdb");
    let r = compile(&[t, "-o", nodir.to_str().unwrap(), "--output-format", "mmdb"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("x.mmdb"), "{}", r.stderr);
    let r = compile(&[t, "-o", dir.to_str().unwrap(), "--output-format", "mmdb"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(files(&dir), ["bad.txt", "out.mmdb", "t.txt"]);
    // A bad SOURCE_DATE_EPOCH.
    let r = Command::new(common::IPFIB)
        .args(["compile", t, "-o", o, "--output-format", "mmdb"])
        .env("SOURCE_DATE_EPOCH", "yesterday")
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(std::fs::read(&out).unwrap(), b"previous");
}

#[test]
fn damaged_input_is_exported_as_far_as_it_goes_with_exit_1() {
    let dir = scratch("damaged");
    let mut text = String::new();
    for i in 0..5000u32 {
        text.push_str(&format!("{}.{}.0.0/16 {}\n", i >> 8, i & 255, i));
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    let bytes = gz.finish().unwrap();
    let table = dir.join("cut.txt.gz");
    std::fs::write(&table, &bytes[..bytes.len() / 2]).unwrap();
    let out = dir.join("cut.mmdb");
    let r = compile(&[
        table.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--output-format",
        "mmdb",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("damaged"), "{}", r.stderr);
    let opts = Options {
        description: "ipfib export of cut.txt.gz".into(),
        build_epoch: 1_700_000_000,
        ..Options::default()
    };
    assert_eq!(std::fs::read(&out).unwrap(), library_bytes(&table, &opts));
}
