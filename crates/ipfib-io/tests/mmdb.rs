//! MaxMind DB tables: MaxMind's own test suite (test-data/, bad-data/, in
//! `../shared/data/mmdb/maxmind-db-test`), crafted hostile trees, format
//! detection. Answers are checked against the official reader in
//! python/tests/test_mmdb.py; here: every file either loads bounded or
//! fails with a clear error, never panics, within a time bound.

mod common;

use common::{data_file, gzip, Scratch};
use ipfib_io::{
    load_table, load_table_from, FieldPath, Format, ReadError, TableLoad, TableOptions,
    MMDB_MAX_VISITS_PER_NODE,
};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Per load; the slowest suite file takes milliseconds.
const TIME_BOUND: Duration = Duration::from_secs(10);

fn suite_dir() -> Option<PathBuf> {
    data_file("mmdb/maxmind-db-test")
}

fn opts(format: Format, field: Option<&str>, strict: bool) -> TableOptions {
    TableOptions {
        format,
        strict,
        field: field.map(|f| FieldPath::parse(f).unwrap()),
        ..Default::default()
    }
}

fn load(path: &Path, field: Option<&str>, strict: bool) -> Result<TableLoad, ReadError> {
    load_table(path, &opts(Format::Mmdb, field, strict))
}

fn mmdb_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "mmdb") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_suite_file_loads_bounded_or_fails_clearly() {
    let Some(dir) = suite_dir() else { return };
    let files = mmdb_files(&dir);
    assert!(
        files.len() >= 70,
        "{} files in {}",
        files.len(),
        dir.display()
    );
    let (mut loaded, mut refused) = (0, 0);
    for path in &files {
        let name = path.display().to_string();
        for field in [None, Some("ip"), Some("country.iso_code")] {
            for strict in [false, true] {
                let start = Instant::now();
                let r = load(path, field, strict);
                let took = start.elapsed();
                assert!(took < TIME_BOUND, "{name}: {took:?}");
                match r {
                    Ok(l) => {
                        let rep = &l.report;
                        assert_eq!(rep.format, Format::Mmdb);
                        let m = rep.mmdb.as_ref().unwrap();
                        let cap = MMDB_MAX_VISITS_PER_NODE * u64::from(m.node_count.max(1));
                        assert!(m.node_visits <= cap, "{name}");
                        // Every network is a leaf of a visited node (or the
                        // one record IPv4 starts at).
                        assert!(rep.records <= 2 * m.node_visits + 2, "{name}");
                        assert!(l.routes.len() as u64 + rep.bad + m.without_field == rep.records);
                        assert!(!strict || rep.bad == 0, "{name}");
                        assert!(rep.errors.len() as u64 <= rep.bad);
                        for e in &rep.errors {
                            let msg = e.to_string();
                            assert!(msg.contains(&name) && msg.contains("byte"), "{msg}");
                        }
                        loaded += 1;
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        assert!(
                            matches!(e, ReadError::Mmdb { .. } | ReadError::MmdbRecord { .. }),
                            "{msg}"
                        );
                        assert!(msg.contains(&name) && msg.contains("byte"), "{msg}");
                        refused += 1;
                    }
                }
            }
        }
    }
    assert!(loaded > 0 && refused > 0);
}

/// The denial-of-service files, as the suite's README says a reader with
/// its recommended limits answers (flat value accounting, a 2 MiB payload
/// per record): refused records are skipped networks (or, strict, errors).
#[test]
fn denial_of_service_files_as_the_suite_expects() {
    let Some(dir) = suite_dir() else { return };
    let test = |name: &str| dir.join("test-data").join(name);
    for (name, accept) in [
        ("MaxMind-DB-test-decoder-value-limit.mmdb", true),
        ("MaxMind-DB-test-decoder-value-limit-over.mmdb", false),
        (
            "MaxMind-DB-test-decoder-value-limit-pointer-heavy.mmdb",
            true,
        ),
        ("MaxMind-DB-test-decoder-payload-limit.mmdb", true),
        ("MaxMind-DB-test-decoder-payload-limit-over.mmdb", false),
        ("MaxMind-DB-test-decode-path-shared-budget.mmdb", false),
        ("MaxMind-DB-test-pointer-decoder-dos.mmdb", false),
        ("MaxMind-DB-test-pointer-decoder-dos-ipv6.mmdb", false),
        ("MaxMind-DB-test-payload-amplification-dos.mmdb", false),
        (
            "MaxMind-DB-test-payload-amplification-dos-string.mmdb",
            false,
        ),
        (
            "MaxMind-DB-test-payload-amplification-dos-worst-case.mmdb",
            false,
        ),
    ] {
        let l = load(&test(name), None, false).unwrap();
        let r = &l.report;
        if accept {
            assert!(r.bad == 0 && !l.routes.is_empty(), "{name}: {:?}", r.errors);
        } else {
            assert!(l.routes.is_empty() && r.bad > 0, "{name}");
            let msg = r.errors[0].to_string();
            assert!(msg.contains("resource limit"), "{name}: {msg}");
            let e = load(&test(name), None, true).unwrap_err();
            assert!(matches!(e, ReadError::MmdbRecord { .. }), "{name}: {e}");
        }
    }
    // The metadata alone is over the payload limit: refused at open.
    let e = load(
        &test("MaxMind-DB-test-metadata-payload-limit.mmdb"),
        None,
        false,
    )
    .unwrap_err();
    assert!(e.to_string().contains("metadata") && e.to_string().contains("resource limit"));
}

/// MaxMind's writer built the 24-, 28- and 32-bit files from the same
/// networks: every record size must read to the same table.
#[test]
fn record_sizes_read_alike() {
    let Some(dir) = suite_dir() else { return };
    for kind in ["ipv4", "ipv6", "mixed"] {
        let tables: Vec<_> = [24, 28, 32]
            .iter()
            .map(|s| {
                let p = dir.join(format!("test-data/MaxMind-DB-test-{kind}-{s}.mmdb"));
                let l = load(&p, None, true).unwrap();
                assert_eq!(l.report.mmdb.as_ref().unwrap().record_size, *s);
                l.routes
            })
            .collect();
        assert!(!tables[0].is_empty());
        assert_eq!(tables[0], tables[1], "{kind}");
        assert_eq!(tables[0], tables[2], "{kind}");
    }
}

#[test]
fn strict_names_the_network_and_the_byte() {
    let Some(dir) = suite_dir() else { return };
    let p = dir.join("test-data/MaxMind-DB-test-broken-pointers-24.mmdb");
    let lenient = load(&p, None, false).unwrap();
    assert!(lenient.report.bad > 0 && !lenient.routes.is_empty());
    let e = load(&p, None, true).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, ReadError::MmdbRecord { .. })
            && msg.contains("network")
            && msg.contains("byte"),
        "{msg}"
    );
}

#[test]
fn auto_recognises_a_maxmind_db_by_its_end() {
    let Some(path) = data_file("mmdb/iptoasn-country.mmdb") else {
        return;
    };
    let direct = load(&path, Some("country_code"), true).unwrap();
    let auto = load_table(&path, &opts(Format::Auto, Some("country_code"), true)).unwrap();
    assert_eq!(auto.report.format, Format::Mmdb);
    assert_eq!(auto.routes, direct.routes);
    let bytes = std::fs::read(&path).unwrap();
    // Bytes in hand, and a gzip-compressed file: the stream is read whole.
    let from = load_table_from(
        Cursor::new(bytes.clone()),
        "x.mmdb",
        &opts(Format::Auto, Some("country_code"), true),
    )
    .unwrap();
    assert_eq!(from.routes, direct.routes);
    let scratch = Scratch::new("mmdb");
    let gz = scratch.write("c.mmdb.gz", &gzip(&bytes));
    let z = load_table(&gz, &opts(Format::Auto, Some("country_code"), true)).unwrap();
    assert_eq!(z.report.format, Format::Mmdb);
    assert_eq!(z.routes, direct.routes);
    // Binary that is neither MRT nor MaxMind DB says what was tried.
    let junk = scratch.write("junk.bin", &[0u8, 1, 2, 3, 0xff, 0, 0, 7, 9, 9, 9, 9, 9, 9]);
    let msg = load_table(&junk, &TableOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("mmdb (no MaxMind DB metadata marker"), "{msg}");
    // A policy name with --format mmdb is a field path; a field path on a
    // text table is refused.
    let text = scratch.write("t.txt", b"10.0.0.0/8 1\n");
    let msg = load_table(&text, &opts(Format::Auto, Some("country.iso_code"), false))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("carries its own value"), "{msg}");
}

/// The field and the whole record agree (`{"country_code":"US"}` and
/// `US`), and a field no record has leaves no route (counted).
#[test]
fn a_field_is_the_records_field_and_a_missing_one_is_a_miss() {
    let Some(path) = data_file("mmdb/iptoasn-country.mmdb") else {
        return;
    };
    let whole = load(&path, None, true).unwrap();
    let field = load(&path, Some("country_code"), true).unwrap();
    assert_eq!(whole.routes.len(), field.routes.len());
    for (w, f) in whole.routes.iter().zip(&field.routes) {
        assert_eq!(w.prefix, f.prefix);
        assert_eq!(w.value, format!("{{\"country_code\":\"{}\"}}", f.value));
    }
    let none = load(&path, Some("country_code.x"), true).unwrap();
    assert!(none.routes.is_empty());
    assert_eq!(
        none.report.mmdb.as_ref().unwrap().without_field,
        whole.routes.len() as u64
    );
}

// ---- crafted files -------------------------------------------------------

/// A control byte (and extended type byte) for `kind` with payload `size`
/// (below 29).
fn ctrl(kind: u8, size: usize) -> Vec<u8> {
    assert!(size < 29);
    if kind < 8 {
        vec![(kind << 5) | size as u8]
    } else {
        vec![size as u8, kind - 7]
    }
}

fn enc_str(s: &str) -> Vec<u8> {
    let mut v = ctrl(2, s.len());
    v.extend(s.as_bytes());
    v
}

fn enc_uint(kind: u8, x: u64) -> Vec<u8> {
    let b: Vec<u8> = x
        .to_be_bytes()
        .into_iter()
        .skip_while(|&b| b == 0)
        .collect();
    let mut v = ctrl(kind, b.len());
    v.extend(b);
    v
}

/// A MaxMind DB with 24-bit records: `nodes` as (left, right) record
/// values, then `data`.
fn build(ip_version: u16, nodes: &[(u32, u32)], data: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    for (l, r) in nodes {
        f.extend(&l.to_be_bytes()[1..]);
        f.extend(&r.to_be_bytes()[1..]);
    }
    f.extend([0u8; 16]);
    f.extend(data);
    f.extend(b"\xab\xcd\xefMaxMind.com");
    let pairs: Vec<(&str, Vec<u8>)> = vec![
        ("node_count", enc_uint(6, nodes.len() as u64)),
        ("record_size", enc_uint(5, 24)),
        ("ip_version", enc_uint(5, ip_version.into())),
        ("database_type", enc_str("crafted")),
        ("binary_format_major_version", enc_uint(5, 2)),
        ("binary_format_minor_version", enc_uint(5, 0)),
        ("build_epoch", enc_uint(9, 1_700_000_000)),
    ];
    f.extend(ctrl(7, pairs.len()));
    for (k, v) in pairs {
        f.extend(enc_str(k));
        f.extend(v);
    }
    f
}

/// Both records of every node point at the next node, `depth` levels
/// down, then at one data record: 2^depth networks from `depth` nodes.
fn doubling_chain(ip_version: u16, depth: u32) -> Vec<u8> {
    let n = depth;
    let data_ptr = n + 16; // data offset 0
    let nodes: Vec<(u32, u32)> = (0..n)
        .map(|i| {
            if i + 1 < n {
                (i + 1, i + 1)
            } else {
                (data_ptr, data_ptr)
            }
        })
        .collect();
    build(ip_version, &nodes, &enc_str("x"))
}

#[test]
fn an_exponential_dag_is_refused() {
    let scratch = Scratch::new("mmdb-dag");
    for (ip_version, depth) in [(4u16, 32u32), (6, 128)] {
        let path = scratch.write("dag.mmdb", &doubling_chain(ip_version, depth));
        let start = Instant::now();
        let e = load(&path, None, false).unwrap_err();
        assert!(start.elapsed() < TIME_BOUND);
        let msg = e.to_string();
        assert!(
            matches!(e, ReadError::Mmdb { .. }) && msg.contains("node visits"),
            "{msg}"
        );
    }
    // The same shape, shallow enough to stay within the bound, loads: a
    // chain of 3 nodes makes 1 + 2 + 4 = 7 visits (the bound is 8 x 3)
    // and 2^3 = 8 networks.
    let path = scratch.write("small.mmdb", &doubling_chain(4, 3));
    let l = load(&path, None, true).unwrap();
    assert_eq!(l.routes.len(), 8);
    assert!(l
        .routes
        .iter()
        .all(|r| r.prefix.len() == 3 && r.value == "\"x\""));
}

#[test]
fn crafted_trees_follow_the_official_semantics() {
    let scratch = Scratch::new("mmdb-craft");
    // An IPv6 tree whose left spine leaves the tree at depth 1 on a data
    // record: IPv4 lookups start there, so all of IPv4 is that record
    // (0.0.0.0/0), as the official readers answer (prefix length 0).
    let data = enc_str("low");
    let path = scratch.write("v6.mmdb", &build(6, &[(1 + 16, 1)], &data));
    let l = load(&path, None, true).unwrap();
    let shown: Vec<String> = l
        .routes
        .iter()
        .map(|r| format!("{} {}", r.prefix, r.value))
        .collect();
    assert_eq!(shown, ["0.0.0.0/0 \"low\"", "::/1 \"low\""]);
    // Record values in the separator and past the data are bad networks.
    let path = scratch.write("bad.mmdb", &build(4, &[(1 + 3, 1 + 16 + 100)], &data));
    let l = load(&path, None, false).unwrap();
    assert!(l.routes.is_empty());
    assert_eq!(l.report.bad, 2);
    let msgs: Vec<String> = l.report.errors.iter().map(|e| e.to_string()).collect();
    assert!(
        msgs[0].contains("0.0.0.0/1") && msgs[0].contains("separator"),
        "{msgs:?}"
    );
    assert!(
        msgs[1].contains("128.0.0.0/1") && msgs[1].contains("past the end"),
        "{msgs:?}"
    );
    // A tree deeper than the address: the /32 under it is bad.
    let mut nodes: Vec<(u32, u32)> = (0..33).map(|i| (i + 1, 33)).collect();
    nodes[32] = (33 + 16, 33);
    let path = scratch.write("deep.mmdb", &build(4, &nodes, &data));
    let l = load(&path, None, false).unwrap();
    assert_eq!(l.report.bad, 1);
    assert!(l.report.errors[0]
        .to_string()
        .contains("below the last address bit"));
}

/// A record of 32 pointers to one 64 KiB string of control characters
/// (2 MiB of strings: within the decoder's payload limit; 12 MiB of JSON
/// once escaped) under a full tree of `depth` levels: 2^depth networks
/// share it. Each route holds its own copy of the text, so without a
/// bound on the values' total a 68 KB file asks for 12 MiB x 2^depth.
fn shared_heavy_record(depth: u32) -> Vec<u8> {
    let n = (1u32 << depth) - 1;
    let data_ptr = n + 16; // data offset 0
    let nodes: Vec<(u32, u32)> = (0..n)
        .map(|i| {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            if l >= n {
                (data_ptr, data_ptr)
            } else {
                (l, r)
            }
        })
        .collect();
    // Array (extended type 4) of 32 items: size 29 + 3.
    let mut data = vec![29, 4, 3];
    for _ in 0..32 {
        data.extend([0x28, 0, 0]); // pointer (size 1) to data byte 2048
    }
    data.resize(2048, 0);
    data.extend([0x5e, 0xfe, 0xe3]); // string of 285 + 0xfee3 = 65,536 bytes
    data.extend(std::iter::repeat_n(1u8, 65_536));
    build(4, &nodes, &data)
}

#[test]
fn values_shared_by_many_networks_are_bounded() {
    let scratch = Scratch::new("mmdb-shared-heavy");
    // 2 networks: 24 MiB of values, within the floor; the record reads
    // back whole (32 strings of 65,536 escaped characters).
    let path = scratch.write("two.mmdb", &shared_heavy_record(1));
    let l = load(&path, None, true).unwrap();
    assert_eq!(l.routes.len(), 2);
    let per = 2 + 32 * (2 + 6 * 65_536) + 31;
    assert!(l.routes.iter().all(|r| r.value.len() == per));
    // 1,024 networks (12 GiB of copies) from a 68 KB file: refused at
    // the budget, naming the record's byte, before the memory is taken.
    let file = shared_heavy_record(10);
    assert!(file.len() < 100_000);
    let path = scratch.write("many.mmdb", &file);
    let start = Instant::now();
    for strict in [false, true] {
        let e = load(&path, None, strict).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(e, ReadError::Mmdb { offset, .. } if offset == u64::from((1u32 << 10) - 1) * 6 + 16)
                && msg.contains("values take more than"),
            "{msg}"
        );
    }
    assert!(start.elapsed() < TIME_BOUND);
    let budget = ipfib_io::MMDB_VALUE_BYTES_FLOOR
        .max(ipfib_io::MMDB_VALUE_BYTES_PER_FILE_BYTE * file.len() as u64);
    assert!(budget < (per as u64) * 1024);
    // One field of it (an item of the array) is small: loads.
    let l = load(&path, Some("0"), true).unwrap();
    assert_eq!(l.routes.len(), 1024);
    assert!(l.routes.iter().all(|r| r.value.len() == 65_536));
}

/// Binary input that is not MRT is looked at as a MaxMind DB, whose marker
/// is at the end; a stream that decompresses to far more than any MaxMind
/// DB is refused once past the sniffing bound, not read whole (a few MB of
/// zstd can expand to gigabytes of zeros).
#[test]
fn sniffing_a_huge_binary_stream_stops_at_the_bound() {
    struct Zeros(u64);
    impl std::io::Read for Zeros {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (buf.len() as u64).min(self.0) as usize;
            buf[..n].fill(0);
            self.0 -= n as u64;
            Ok(n)
        }
    }
    let total = ipfib_io::MMDB_SNIFF_BYTES + (64 << 20);
    let stream = std::io::Read::chain(Cursor::new(vec![0u8, 1, 2, 3, 0xfe, 0xfd]), Zeros(total));
    let e = ipfib_io::load_table_from(
        std::io::BufReader::new(stream),
        "zeros.bin",
        &TableOptions::default(),
    )
    .expect_err("refused");
    assert!(e.to_string().contains("after decompression"), "{e}");
}
