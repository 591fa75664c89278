//! `ipfib compile` and compiled table files through the CLI: a compiled
//! file answers every address exactly as the table it was compiled from
//! (the text load is the oracle; both real RouteViews tables, IPv4 and
//! IPv6, in one file), `info` describes it, and damaged, truncated or
//! foreign files exit 2 with a message naming the byte offset.

mod common;

use common::{data_file, ipfib};
use std::io::Write;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ipfib-compiled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Addresses: uniform IPv4 and IPv6 (in 2000::/4, where the routes are),
/// from a fixed-seed generator, plus bad lines.
fn addresses(n: usize) -> String {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = String::new();
    for i in 0..n {
        let r = next();
        if i % 2 == 0 {
            out += &format!("{}\n", std::net::Ipv4Addr::from(r as u32));
        } else {
            let a = (0x2u128 << 124) | (u128::from(r) << 60 >> 4) | u128::from(next() & 0xffff);
            out += &format!("{}\n", std::net::Ipv6Addr::from(a));
        }
    }
    out += "not-an-address\n1.2.3\n";
    out
}

fn compile(table: &Path, out: &Path, extra: &[&str]) -> common::Run {
    let mut args = vec![
        "compile".to_string(),
        table.display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    ipfib(&args, None)
}

#[test]
fn compiled_real_tables_answer_like_the_text_load() {
    let (Some(v4), Some(v6)) = (
        data_file("routeviews-rv2-20260730-1400.pfx2as.txt.gz"),
        data_file("routeviews-rv6-20260730-1400.pfx2as.txt.gz"),
    ) else {
        return;
    };
    // Both families in one pfx2as file.
    let both = tmp("both.pfx2as");
    let mut f = std::fs::File::create(&both).unwrap();
    for p in [&v4, &v6] {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap()),
            &mut text,
        )
        .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }
    drop(f);
    let out = tmp("both.ipfib");
    let r = compile(&both, &out, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("1107938 IPv4 + 258956 IPv6"),
        "{}",
        r.stderr
    );
    let input = addresses(200_000);
    let from_text = ipfib(
        &["lookup", "--table", both.to_str().unwrap()],
        Some(input.as_bytes()),
    );
    let from_file = ipfib(
        &["lookup", "--table", out.to_str().unwrap()],
        Some(input.as_bytes()),
    );
    // Two bad lines: exit 1 from both, the same messages.
    assert_eq!(
        (from_text.code, from_file.code),
        (1, 1),
        "{}",
        from_file.stderr
    );
    assert_eq!(from_text.stdout, from_file.stdout);
    assert_eq!(from_text.stderr, from_file.stderr);
    let matched = from_file
        .stdout
        .lines()
        .filter(|l| !l.ends_with(" - -"))
        .count();
    assert!(
        matched > 50_000,
        "only {matched} matched: the check would be weak"
    );
    // Every named engine compiles to a file that answers the same.
    for engine in ["planb", "poptrie:16", "poptrie5", "poptrie-flat:18"] {
        let out_e = tmp(&format!("both-{engine}.ipfib"));
        let r = compile(&both, &out_e, &["--engine", engine]);
        assert_eq!(r.code, 0, "{engine}: {}", r.stderr);
        let got = ipfib(
            &["lookup", "--table", out_e.to_str().unwrap()],
            Some(input.as_bytes()),
        );
        assert_eq!(got.stdout, from_text.stdout, "engine {engine}");
    }
    // `info` reads it as a compiled file with the same counts.
    let info = ipfib(&["info", "--json", out.to_str().unwrap()], None);
    assert_eq!(info.code, 0, "{}", info.stderr);
    let v: serde_json::Value = serde_json::from_str(&info.stdout).unwrap();
    assert_eq!(v["format"], "compiled");
    assert_eq!(v["prefixes_v4"], 1_107_938);
    assert_eq!(v["prefixes_v6"], 258_956);
    assert!(v["compiled"]["open_ms"].as_f64().unwrap() > 0.0);
    std::fs::remove_dir_all(both.parent().unwrap()).ok();
}

#[test]
fn damaged_and_foreign_files_exit_2_naming_the_offset() {
    let table = tmp("small.txt");
    std::fs::write(
        &table,
        "10.0.0.0/8 a\n10.1.0.0/16 b\n2001:db8::/32 c\n::/0 d\n",
    )
    .unwrap();
    let out = tmp("small.ipfib");
    assert_eq!(compile(&table, &out, &[]).code, 0);
    let good = std::fs::read(&out).unwrap();
    let ok = ipfib(
        &[
            "lookup",
            "--table",
            out.to_str().unwrap(),
            "10.1.2.3",
            "2001:db8::1",
            "9.9.9.9",
        ],
        None,
    );
    assert_eq!(
        ok.stdout,
        "10.1.2.3 10.1.0.0/16 b\n2001:db8::1 2001:db8::/32 c\n9.9.9.9 - -\n"
    );
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good[..good.len() - 100].to_vec(), "truncated"),
        (
            "flipped",
            {
                let mut b = good.clone();
                let at = b.len() - 70;
                b[at] ^= 1;
                b
            },
            "damaged compiled table file at byte",
        ),
        (
            "version",
            {
                let mut b = good.clone();
                b[8] = 9;
                b
            },
            "version 9",
        ),
        (
            "header only",
            good[..64].to_vec(),
            "damaged compiled table file at byte 64",
        ),
    ];
    for (what, bytes, says) in cases {
        let bad = tmp(&format!("bad-{}.ipfib", what.replace(' ', "-")));
        std::fs::write(&bad, &bytes).unwrap();
        for args in [
            vec!["lookup", "--table", bad.to_str().unwrap(), "10.1.2.3"],
            vec!["info", bad.to_str().unwrap()],
        ] {
            let r = ipfib(&args, None);
            assert_eq!(r.code, 2, "{what} {args:?}: {}", r.stderr);
            assert!(r.stderr.contains(says), "{what}: {}", r.stderr);
            assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
        }
    }
    // Asking for another engine at lookup time is an error, not ignored.
    let r = ipfib(
        &[
            "lookup",
            "--table",
            out.to_str().unwrap(),
            "--engine",
            "planb",
            "1.1.1.1",
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("ipfib compile --engine"), "{}", r.stderr);
    // Loading options a compiled file cannot honour are refused.
    for flag in [
        ["--strict", ""],
        ["--value-column", "4"],
        ["--mask-host-bits", ""],
    ] {
        let mut a = vec!["lookup", "--table", out.to_str().unwrap(), flag[0]];
        if !flag[1].is_empty() {
            a.push(flag[1]);
        }
        a.push("1.1.1.1");
        let r = ipfib(&a, None);
        assert_eq!(r.code, 2, "{a:?}");
        assert!(
            r.stderr.contains("does not apply to a compiled"),
            "{}",
            r.stderr
        );
    }
    // An unwritable output exits 2 and leaves no temporary file.
    let r = compile(&table, Path::new("/nonexistent-dir/x.ipfib"), &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    // Unknown output format.
    let r = compile(&table, &tmp("x.ipfib"), &["--output-format", "csv"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--output-format"), "{}", r.stderr);
}

/// A file whose engine answers a route past its route list (one direct
/// entry of a one-route file rewritten, every checksum recomputed) is
/// refused by every command that opens it: exit 2 naming the bound, never
/// a wrong answer or a panic indexing the routes by it.
#[test]
fn a_file_answering_past_its_routes_exits_2() {
    use ipfib::engine::auto::{AutoOptions, Kind};
    use ipfib::image::{reseal, to_bytes};
    let mut t = ipfib::table::Table::new();
    t.insert("10.0.0.0/8".parse().unwrap(), "inside").unwrap();
    let opts = AutoOptions {
        force: Some((Kind::Poptrie, Some(8))),
        calibrate: false,
        ..AutoOptions::default()
    };
    let mut b = to_bytes(&t, &opts, "one route").unwrap();
    // The first direct-pointing leaf answering 0 (`0x8000_0000`) after the
    // header answers 5 instead.
    let at = (64..b.len())
        .step_by(4)
        .find(|&i| b[i..i + 4] == 0x8000_0000u32.to_le_bytes())
        .unwrap();
    b[at..at + 4].copy_from_slice(&0x8000_0005u32.to_le_bytes());
    reseal(&mut b);
    let bad = tmp("answers-past-the-routes.ipfib");
    std::fs::write(&bad, &b).unwrap();
    let bad = bad.to_str().unwrap();
    for args in [
        vec!["lookup", "--table", bad, "10.0.0.1"],
        vec!["info", bad],
        vec!["classify", "--networks", bad, "--pcap", "/nonexistent.pcap"],
    ] {
        let r = ipfib(&args, None);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
        assert!(
            r.stderr.contains("damaged compiled table file at byte")
                && r.stderr.contains("answer 5, not below 1"),
            "{args:?}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    }
}
