//! `ipfib info` (the §4 JSON contract, exit statuses, damage offsets) and
//! `ipfib lookup` on MRT dumps, on small tables written here and on the
//! real files in `../shared/data` (skipped without them, failing under
//! `CI=true`).

mod common;

use common::ipfib;
use ipfib_io::{load_table, TableOptions};
use serde_json::Value;
use std::path::PathBuf;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data");

fn data_file(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(DATA).join(name);
    if path.is_file() {
        return Some(path);
    }
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "{} not found, and CI=true requires ../shared/data",
        path.display()
    );
    eprintln!("SKIPPED: {} not found", path.display());
    None
}

fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ipfib-info-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn info_json(path: &std::path::Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec![
        "info".to_string(),
        path.display().to_string(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = ipfib(&args, None);
    let v = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    (run.code, v, run.stderr)
}

#[test]
fn info_json_has_the_contract_fields() {
    let path = scratch(
        "t.txt",
        b"# c\n10.0.0.0/8 a\n10.1.0.0/16 b\n2001:db8::/32 a\n10.0.0.0/8 c\n",
    );
    let (code, v, stderr) = info_json(&path, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(v["format"], "text");
    assert_eq!(v["records"], 5);
    assert_eq!(v["prefixes_v4"], 2);
    assert_eq!(v["prefixes_v6"], 1);
    assert_eq!(v["values"], 3); // c (10/8, the later line), b, a
    assert_eq!(v["damaged"], false);
    assert_eq!(v["damage_offset"], Value::Null);
    assert_eq!(v["length_histogram"]["v4"]["16"], 1);
    assert!(v["load_ms"].as_f64().unwrap() >= 0.0);
    // The text form names the same things.
    let run = ipfib(&["info", path.to_str().unwrap()], None);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("format: text"), "{}", run.stdout);
    assert!(
        run.stdout.contains("prefixes: 2 IPv4, 1 IPv6"),
        "{}",
        run.stdout
    );
}

/// `--engine auto` (the default) on real tables: `info` names a choice per
/// family with its reason, and `lookup` with the default answers exactly
/// what the radix baseline answers.
#[test]
fn info_of_a_compiled_file_says_each_familys_engine_once() {
    let small = scratch("v4only.txt", b"10.0.0.0/8 a\n10.1.0.0/16 b\n");
    let out = small.with_extension("ipfib");
    let run = ipfib(
        &[
            "compile".to_string(),
            small.display().to_string(),
            "-o".to_string(),
            out.display().to_string(),
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // No IPv6 routes: no IPv6 engine named.
    assert!(
        run.stderr.contains("IPv6 none (no routes)"),
        "{}",
        run.stderr
    );
    let text = ipfib(&["info".to_string(), out.display().to_string()], None);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let engine_lines: Vec<&str> = text
        .stdout
        .lines()
        .filter(|l| l.starts_with("engine"))
        .collect();
    assert_eq!(engine_lines.len(), 2, "{}", text.stdout);
    assert!(
        engine_lines[0].starts_with("engine IPv4: ")
            && engine_lines[0].contains("(values)")
            && engine_lines[0].contains("(routes); chosen: "),
        "{}",
        text.stdout
    );
    assert_eq!(engine_lines[1], "engine IPv6: none (no routes)");
    // An uncompressed file's size is not "decompressed".
    assert!(!text.stdout.contains("decompressed"), "{}", text.stdout);
    assert!(text.stdout.contains(" bytes)"), "{}", text.stdout);
}

#[test]
fn info_names_autos_choice_and_lookup_defaults_to_it() {
    let small = scratch("auto.txt", b"10.0.0.0/8 a\n2001:db8::/32 b\n");
    let (code, v, stderr) = info_json(&small, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(v["engine"]["name"], "auto");
    assert_eq!(v["engine"]["v4"]["chosen"], "poptrie:18");
    assert_eq!(v["engine"]["v6"]["chosen"], "poptrie-flat:18");
    let why = v["engine"]["v4"]["reason"].as_str().unwrap_or_default();
    assert!(why.contains("too small to be worth timing"), "{why}");
    let Some(linx) = data_file("linx-rib-ipv6.20141225.0000.p69.txt.gz") else {
        return;
    };
    let (code, v, stderr) = info_json(&linx, &[]);
    assert_eq!(code, 0, "{stderr}");
    let why = v["engine"]["v6"]["reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("calibrated") && why.contains("trie nodes per interval"),
        "{why}"
    );
    let text = ipfib(&["info".to_string(), linx.display().to_string()], None);
    assert!(text.stdout.contains("engine IPv6: "), "{}", text.stdout);
    // The default engine's answers equal radix's on addresses in and
    // around the table's prefixes.
    let table = load_table(&linx, &TableOptions::default()).unwrap();
    let mut input = String::new();
    for r in table.routes.iter().step_by(37) {
        if let ipfib_io::AnyPrefix::V6(p) = r.prefix {
            let a = p.addr();
            for x in [a, a.wrapping_sub(1), p.last(), p.last().wrapping_add(1)] {
                input.push_str(&std::net::Ipv6Addr::from(x).to_string());
                input.push('\n');
            }
        }
    }
    let path = linx.display().to_string();
    let auto = ipfib(
        &["lookup", "--table", &path].map(String::from),
        Some(input.as_bytes()),
    );
    let radix = ipfib(
        &["lookup", "--table", &path, "--engine", "radix"].map(String::from),
        Some(input.as_bytes()),
    );
    assert_eq!(auto.code, 0, "{}", auto.stderr);
    assert!(auto.stdout.lines().count() > 1000);
    assert_eq!(auto.stdout, radix.stdout);
}

#[test]
fn info_exit_statuses() {
    // Bad lines: reported, the rest counted, exit 1.
    let bad = scratch("bad.txt", b"10.0.0.0/8 a\n10.0.0.1/8 b\nnonsense\n");
    let (code, v, stderr) = info_json(&bad, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(v["bad_records"], 2);
    assert_eq!(v["prefixes_v4"], 1);
    // --strict: exit 2 naming the line.
    let (code, _, stderr) = info_json(&bad, &["--strict"]);
    assert_eq!(code, 2);
    assert!(stderr.contains(":2: host bits set"), "{stderr}");
    // Could not run at all.
    let run = ipfib(&["info", "/nonexistent/table"], None);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("/nonexistent/table"));
    let run = ipfib(
        &["info", bad.to_str().unwrap(), "--value", "peer-count"],
        None,
    );
    assert_eq!(run.code, 2, "a policy on a text table: {}", run.stderr);
}

#[test]
fn truncated_dumps_report_their_damage_offset() {
    for (name, offset, records, prefixes) in [
        (
            "rib.20140523.0600.first1MiB.mrt.bz2",
            15_273_283u64,
            9073u64,
            ("prefixes_v4", 9072u64),
        ),
        (
            "rib6.20260730.1400.first1MiB.mrt.bz2",
            15_707_590,
            11_038,
            ("prefixes_v6", 11_037),
        ),
    ] {
        let Some(path) = data_file(name) else {
            return;
        };
        let (code, v, stderr) = info_json(&path, &[]);
        assert_eq!(code, 1, "{name}: {stderr}");
        assert_eq!(v["format"], "mrt");
        assert_eq!(v["damaged"], true);
        assert_eq!(v["damage_offset"], offset, "{name}");
        assert_eq!(v["records"], records);
        assert_eq!(v[prefixes.0], prefixes.1);
        assert!(v["peers"].as_u64().unwrap() > 20);
        assert!(v["multi_origin_prefixes"].as_u64().unwrap() > 0);
        // No progress bar when stderr is not a terminal.
        assert!(!stderr.contains("loading"), "{stderr}");
        let (code, _, stderr) = info_json(&path, &["--strict"]);
        assert_eq!(code, 2);
        assert!(
            stderr.contains(&format!("damaged at byte {offset}")),
            "{stderr}"
        );
    }
}

/// `ipfib lookup --table FILE.mrt.bz2` answers what the loaded table says:
/// every prefix's first and last address, against the route table itself.
#[test]
fn lookup_on_a_bzip2_rib_dump() {
    let Some(path) = data_file("rib6.20151101.0600.first1MiB.mrt.bz2") else {
        return;
    };
    let loaded = load_table(&path, &TableOptions::default()).unwrap();
    let mut table = ipfib::table::Table::new();
    for r in &loaded.routes {
        table.insert(r.prefix, r.value.clone()).unwrap();
    }
    let mut input = String::new();
    let mut want = String::new();
    for r in loaded.routes.iter().step_by(7) {
        let addr = r.prefix.to_string().split('/').next().unwrap().to_string();
        let a = ipfib::prefix::AnyAddr::parse(&addr).unwrap();
        let (p, v) = table.lookup(a).unwrap();
        input.push_str(&addr);
        input.push('\n');
        want.push_str(&format!("{addr} {p} {v}\n"));
    }
    let run = ipfib(
        &["lookup", "--table", path.to_str().unwrap()],
        Some(input.as_bytes()),
    );
    assert_eq!(run.code, 1, "damage makes it exit 1: {}", run.stderr);
    assert!(
        run.stderr.contains("damaged at byte 12131168"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, want);
}

#[test]
fn lookup_value_policies_on_a_sample() {
    let Some(path) = data_file("mrt-samples/quagga_rib") else {
        return;
    };
    let t = path.to_str().unwrap();
    for (flags, want) in [
        (&[][..], "64512"),
        (&["--value", "next-hop", "--peer", "0"], "192.168.0.10"),
        (&["--peer", "192.168.0.10"], "192.168.0.10"),
        (&["--value", "peer-count"], "1"),
    ] {
        let mut args = vec!["lookup", "--table", t];
        args.extend_from_slice(flags);
        args.push("172.17.0.1");
        let run = ipfib(&args, None);
        assert_eq!(run.code, 0, "{flags:?}: {}", run.stderr);
        assert_eq!(
            run.stdout,
            format!("172.17.0.1 172.17.0.0/24 {want}\n"),
            "{flags:?}"
        );
    }
    for bad in [
        &["--value", "next-hop"][..],
        &["--peer", "99"],
        &["--value", "bogus"],
        &["--value", "peer-count", "--peer", "0"],
    ] {
        let mut args = vec!["lookup", "--table", t];
        args.extend_from_slice(bad);
        args.push("172.17.0.1");
        let run = ipfib(&args, None);
        assert_eq!(run.code, 2, "{bad:?}: {}", run.stderr);
        assert_eq!(run.stdout, "");
    }
}
