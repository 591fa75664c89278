//! `ipfib lookup` and `ipfib info` on MaxMind DB files (the real
//! iptoasn-country.mmdb and MaxMind's test suite in `../shared/data`):
//! answers equal a brute-force longest match over the networks ipfib-io
//! reads (whose answers python/tests/test_mmdb.py checks against the
//! official reader), `--value` picks a field, bad files exit 2 naming the
//! file and the byte, files with unusable networks exit 1.

mod common;

use common::{data_file, ipfib};
use ipfib_io::{load_table, AnyPrefix, FieldPath, Format, TableOptions};
use serde_json::Value;

fn contains(p: &AnyPrefix, addr: &str) -> bool {
    let len = p.len();
    match (p, addr.parse::<std::net::IpAddr>().unwrap()) {
        (AnyPrefix::V4(p), std::net::IpAddr::V4(a)) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            u32::from(a) & mask == p.addr()
        }
        (AnyPrefix::V6(p), std::net::IpAddr::V6(a)) => {
            let a = u128::from(a);
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            a & mask == p.addr()
        }
        _ => false,
    }
}

#[test]
fn lookup_answers_the_networks_of_the_file() {
    let Some(path) = data_file("mmdb/iptoasn-country.mmdb") else {
        return;
    };
    let opts = TableOptions {
        format: Format::Mmdb,
        field: Some(FieldPath::parse("country_code").unwrap()),
        ..Default::default()
    };
    let routes = load_table(&path, &opts).unwrap().routes;
    let mut addrs: Vec<String> = ["1.0.0.1", "1.1.1.1", "8.8.8.8", "81.2.69.160", "0.0.0.0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    addrs.extend(["::1.1.1.1", "2001:db8::1", "2a00:1450::1", "::", "ffff::1"].map(String::from));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..100 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        addrs.push(std::net::Ipv4Addr::from(x as u32).to_string());
        let hi = (0x2000u128 + (x as u128 & 0xfff)) << 112 | u128::from(x) << 40;
        addrs.push(std::net::Ipv6Addr::from(hi).to_string());
    }
    let run = ipfib(
        &[
            "lookup",
            "--table",
            path.to_str().unwrap(),
            "--value",
            "country_code",
        ],
        Some(addrs.join("\n").as_bytes()),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), addrs.len());
    let mut hits = 0;
    for (a, line) in addrs.iter().zip(&lines) {
        let best = routes
            .iter()
            .filter(|r| contains(&r.prefix, a))
            .max_by_key(|r| r.prefix.len());
        let want = match best {
            Some(r) => format!("{a} {} {}", r.prefix, r.value),
            None => format!("{a} - -"),
        };
        hits += usize::from(best.is_some());
        assert_eq!(*line, want);
    }
    assert!(hits > 50, "{hits}");
    // The official reader answers 1.0.0.1 with {"country_code": "US"} in
    // 1.0.0.0/24; without --value the record is the JSON value.
    let run = ipfib(
        &["lookup", "--table", path.to_str().unwrap(), "1.0.0.1"],
        None,
    );
    assert_eq!(run.stdout, "1.0.0.1 1.0.0.0/24 {\"country_code\":\"US\"}\n");
}

#[test]
fn a_field_in_no_record_cannot_run() {
    let Some(path) = data_file("mmdb/iptoasn-country.mmdb") else {
        return;
    };
    let p = path.to_str().unwrap();
    let run = ipfib(
        &["lookup", "--table", p, "--value", "nope", "1.1.1.1"],
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("no record has the field \"nope\""),
        "{}",
        run.stderr
    );
    // A field some records have still answers (misses where it lacks).
    let run = ipfib(
        &["lookup", "--table", p, "--value", "country_code", "1.1.1.1"],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "1.1.1.1 1.1.1.0/24 US\n");
}

#[test]
fn info_shows_the_metadata() {
    let Some(path) = data_file("mmdb/iptoasn-country.mmdb") else {
        return;
    };
    let run = ipfib(&["info", path.to_str().unwrap(), "--json"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    for key in [
        "format",
        "records",
        "prefixes_v4",
        "prefixes_v6",
        "values",
        "damaged",
        "damage_offset",
    ] {
        assert!(v.get(key).is_some(), "{key}");
    }
    assert_eq!(v["format"], "mmdb");
    // The official reader: ip_version 6, 24-bit records, 864,344 nodes.
    let m = &v["mmdb"];
    assert_eq!(m["ip_version"], 6);
    assert_eq!(m["record_size"], 24);
    assert_eq!(m["node_count"], 864_344);
    assert!(m["build_epoch"].as_u64().unwrap() > 1_700_000_000);
    assert!(v["prefixes_v4"].as_u64().unwrap() > 300_000);
    let text = ipfib(&["info", path.to_str().unwrap()], None);
    assert!(text.stdout.contains("format: mmdb"), "{}", text.stdout);
    assert!(
        text.stdout.contains("record_size 24, 864344 nodes"),
        "{}",
        text.stdout
    );
}

#[test]
fn bad_files_exit_2_and_bad_networks_exit_1() {
    let Some(broken) =
        data_file("mmdb/maxmind-db-test/test-data/MaxMind-DB-test-broken-pointers-24.mmdb")
    else {
        return;
    };
    let Some(refused) =
        data_file("mmdb/maxmind-db-test/test-data/GeoIP2-City-Test-Invalid-Node-Count.mmdb")
    else {
        return;
    };
    let run = ipfib(
        &["lookup", "--table", refused.to_str().unwrap(), "1.1.1.1"],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("Invalid-Node-Count.mmdb") && run.stderr.contains("byte"),
        "{}",
        run.stderr
    );
    // Some networks point past the data: the rest is answered, exit 1.
    let run = ipfib(
        &["lookup", "--table", broken.to_str().unwrap(), "1.1.1.1"],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("1.1.1.1 1.1.1.1/32 "),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("MaxMind DB network"), "{}", run.stderr);
    let run = ipfib(
        &[
            "lookup",
            "--table",
            broken.to_str().unwrap(),
            "--strict",
            "1.1.1.1",
        ],
        None,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    // A field path that is not one.
    let run = ipfib(
        &[
            "lookup",
            "--table",
            broken.to_str().unwrap(),
            "--format",
            "mmdb",
            "--value",
            "a..b",
        ],
        None,
    );
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("invalid field path"), "{}", run.stderr);
}
