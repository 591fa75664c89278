//! `mmdb_write` against a brute-force longest-prefix match: random nested
//! tables of both families are written, and the bytes are read back by a
//! small walker written here from the MaxMind DB spec (independent of the
//! writer's code): every probed address must get the record of its longest
//! matching route (or none), at a network inside that route.

use ipfib::prefix::{AnyPrefix, Prefix};
use ipfib::table::Table;
use ipfib_io::mmdb_write::{self, IpVersion, Options, RecordMode, WriteError};
use proptest::prelude::*;

/// A decoded data value.
#[derive(Debug, Clone, PartialEq)]
enum V {
    Map(Vec<(String, V)>),
    Array(Vec<V>),
    Str(String),
    Uint(u128),
    Int(i32),
    Double(f64),
    Bool(bool),
}

/// A MaxMind DB file read the way the spec describes.
struct Db<'a> {
    file: &'a [u8],
    node_count: u64,
    record_size: u64,
    ip_version: u64,
    data_start: usize,
    meta: V,
}

fn be(bytes: &[u8]) -> u128 {
    bytes.iter().fold(0u128, |a, &b| a << 8 | b as u128)
}

/// Decode the field at `at` of the section starting at `base`; returns
/// the value and the offset after it.
fn decode(file: &[u8], base: usize, at: usize) -> (V, usize) {
    let ctrl = file[at];
    let mut p = at + 1;
    let mut t = ctrl >> 5;
    if t == 1 {
        let size = ((ctrl >> 3) & 3) as usize;
        let vvv = (ctrl & 7) as u128;
        let raw = be(&file[p..p + size + 1]);
        let target = match size {
            0 => vvv << 8 | raw,
            1 => (vvv << 16 | raw) + 2048,
            2 => (vvv << 24 | raw) + 526_336,
            _ => raw,
        } as usize;
        let (v, _) = decode(file, base, base + target);
        assert!(
            file[base + target] >> 5 != 1,
            "a pointer points at a pointer"
        );
        return (v, p + size + 1);
    }
    if t == 0 {
        t = file[p] + 7;
        p += 1;
    }
    let mut size = (ctrl & 31) as usize;
    if size >= 29 {
        let n = size - 28;
        let extra = be(&file[p..p + n]) as usize;
        size = [29, 285, 65_821][n - 1] + extra;
        p += n;
    }
    match t {
        2 => (
            V::Str(String::from_utf8(file[p..p + size].to_vec()).unwrap()),
            p + size,
        ),
        3 => {
            assert_eq!(size, 8);
            let b: [u8; 8] = file[p..p + 8].try_into().unwrap();
            (V::Double(f64::from_be_bytes(b)), p + 8)
        }
        5 | 6 | 9 | 10 => {
            let max = [2, 4, 0, 0, 8, 16][t as usize - 5];
            assert!(size <= max, "type {t} with {size} bytes");
            (V::Uint(be(&file[p..p + size])), p + size)
        }
        8 => {
            assert!(size <= 4);
            let raw = be(&file[p..p + size]) as u32;
            (V::Int(raw as i32), p + size)
        }
        14 => (V::Bool(size == 1), p),
        7 => {
            let mut pairs = Vec::new();
            for _ in 0..size {
                let (k, q) = decode(file, base, p);
                let (v, r) = decode(file, base, q);
                let V::Str(k) = k else {
                    panic!("map key {k:?}")
                };
                pairs.push((k, v));
                p = r;
            }
            (V::Map(pairs), p)
        }
        11 => {
            let mut items = Vec::new();
            for _ in 0..size {
                let (v, q) = decode(file, base, p);
                items.push(v);
                p = q;
            }
            (V::Array(items), p)
        }
        _ => panic!("type {t} at {at}"),
    }
}

impl<'a> Db<'a> {
    fn open(file: &'a [u8]) -> Db<'a> {
        let marker = b"\xab\xcd\xefMaxMind.com";
        let at = (0..=file.len() - marker.len())
            .rev()
            .find(|&i| &file[i..i + marker.len()] == marker)
            .expect("no metadata marker");
        let meta_start = at + marker.len();
        let (meta, end) = decode(file, meta_start, meta_start);
        assert_eq!(end, file.len(), "bytes after the metadata map");
        let get = |k: &str| match &meta {
            V::Map(m) => m.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
            _ => None,
        };
        let uint = |k: &str| match get(k) {
            Some(V::Uint(u)) => u as u64,
            other => panic!("metadata {k}: {other:?}"),
        };
        let node_count = uint("node_count");
        let record_size = uint("record_size");
        assert_eq!(uint("binary_format_major_version"), 2);
        assert_eq!(uint("binary_format_minor_version"), 0);
        let tree = (record_size * 2 / 8 * node_count) as usize;
        assert_eq!(&file[tree..tree + 16], &[0u8; 16], "separator");
        Db {
            file,
            node_count,
            record_size,
            ip_version: uint("ip_version"),
            data_start: tree + 16,
            meta,
        }
    }

    fn read_node(&self, node: u64, bit: usize) -> u64 {
        let bytes = (self.record_size / 4) as usize;
        let n = &self.file[node as usize * bytes..][..bytes];
        match self.record_size {
            24 => be(&n[bit * 3..bit * 3 + 3]) as u64,
            28 => {
                let mid = n[3] as u64;
                if bit == 0 {
                    (mid >> 4) << 24 | be(&n[0..3]) as u64
                } else {
                    (mid & 15) << 24 | be(&n[4..7]) as u64
                }
            }
            32 => be(&n[bit * 4..bit * 4 + 4]) as u64,
            s => panic!("record size {s}"),
        }
    }

    /// The record and prefix length for `bits` (the address, `width` bits,
    /// left-aligned in a u128), as the spec's lookup walks: IPv4 in an IPv6
    /// tree starts where 96 zero bits lead.
    fn lookup(&self, addr: u128, width: u32) -> (Option<V>, u32) {
        let mut node = 0u64;
        if self.ip_version == 6 && width == 32 {
            for _ in 0..96 {
                if node >= self.node_count {
                    break;
                }
                node = self.read_node(node, 0);
            }
        }
        let mut depth = 0;
        while depth < width && node < self.node_count {
            let bit = (addr >> (width - 1 - depth)) & 1;
            node = self.read_node(node, bit as usize);
            depth += 1;
        }
        assert!(node >= self.node_count, "walk ended inside the tree");
        if node == self.node_count {
            return (None, depth);
        }
        assert!(node >= self.node_count + 16, "record into the separator");
        let off = self.data_start + (node - self.node_count - 16) as usize;
        (Some(decode(self.file, self.data_start, off).0), depth)
    }
}

/// What a value should read back as (the writer's documented rules,
/// restated, with serde_json as the JSON parser): under auto a JSON object
/// is the record; otherwise `{field: V}`, V a canonical unsigned decimal
/// as an integer, anything else as a string.
fn expected(value: &str, field: &str, mode: RecordMode) -> V {
    fn from_json(j: &serde_json::Value) -> V {
        use serde_json::Value as J;
        match j {
            J::Object(m) => V::Map(m.iter().map(|(k, v)| (k.clone(), from_json(v))).collect()),
            J::Array(a) => V::Array(a.iter().map(from_json).collect()),
            J::String(s) => V::Str(s.clone()),
            J::Bool(b) => V::Bool(*b),
            J::Number(n) if n.is_u64() => V::Uint(n.as_u64().unwrap() as u128),
            J::Number(n) if n.is_i64() => V::Int(n.as_i64().unwrap() as i32),
            J::Number(n) => V::Double(n.as_f64().unwrap()),
            J::Null => panic!("null in a test value"),
        }
    }
    if mode == RecordMode::Auto && value.starts_with('{') {
        if let Ok(j @ serde_json::Value::Object(_)) = serde_json::from_str(value) {
            return from_json(&j);
        }
    }
    let canonical = !value.is_empty()
        && value.bytes().all(|b| b.is_ascii_digit())
        && (value == "0" || !value.starts_with('0'));
    let plain = match value.parse::<u128>() {
        Ok(n) if canonical => V::Uint(n),
        _ => V::Str(value.into()),
    };
    V::Map(vec![(field.into(), plain)])
}

/// Longest match by trying every route.
fn brute<'r>(
    routes: &'r [(AnyPrefix, String)],
    addr: &AnyPrefix,
) -> Option<&'r (AnyPrefix, String)> {
    // Later duplicates win: the last route of the longest matching prefix.
    routes
        .iter()
        .rev()
        .filter(|(p, _)| covers(p, addr))
        .max_by_key(|(p, _)| p.len())
        .and_then(|best| routes.iter().rev().find(|(p, _)| *p == best.0))
}

fn covers(p: &AnyPrefix, host: &AnyPrefix) -> bool {
    match (p, host) {
        (AnyPrefix::V4(p), AnyPrefix::V4(h)) => p.contains(h.addr()),
        (AnyPrefix::V6(p), AnyPrefix::V6(h)) => p.contains(h.addr()),
        _ => false,
    }
}

fn write(routes: &[(AnyPrefix, String)], opts: &Options) -> Result<Vec<u8>, WriteError> {
    let mut t = Table::new();
    for (p, v) in routes {
        t.insert(*p, v.clone()).unwrap();
    }
    let mut out = Vec::new();
    mmdb_write::write_table(&mut out, &t, opts)?;
    Ok(out)
}

/// Probe addresses: each route's first and last address and their
/// neighbours, the extra ones, and every IPv4 probe also as IPv4-mapped
/// (`::ffff:a.b.c.d`) and IPv4-compatible (`::a.b.c.d`) IPv6.
fn probes(routes: &[(AnyPrefix, String)], extra: &[u128]) -> Vec<AnyPrefix> {
    let mut out = Vec::new();
    let mut add = |is4: bool, a: u128| {
        if is4 {
            let a = a as u32;
            out.push(AnyPrefix::V4(Prefix::host(a)));
            out.push(AnyPrefix::V6(Prefix::host(0xffff << 32 | a as u128)));
            out.push(AnyPrefix::V6(Prefix::host(a as u128)));
        } else {
            out.push(AnyPrefix::V6(Prefix::host(a)));
        }
    };
    for (p, _) in routes {
        let (is4, first, last) = match p {
            AnyPrefix::V4(p) => (true, p.addr() as u128, p.last() as u128),
            AnyPrefix::V6(p) => (false, p.addr(), p.last()),
        };
        let top = if is4 { u32::MAX as u128 } else { u128::MAX };
        add(is4, first);
        add(is4, last);
        if first > 0 {
            add(is4, first - 1);
        }
        if last < top {
            add(is4, last + 1);
        }
    }
    for &e in extra {
        add(true, e);
        add(false, e);
    }
    out
}

/// The brute-force answer for an address of `width` bits (32 or 128):
/// the matching route's length (in the tree's bits) and record.
/// IPv4-mapped addresses answer as their IPv4 address (ipfib unmaps them),
/// and so do IPv4-compatible ones (`::/96`, IPv4's place in the tree).
fn answer(
    routes: &[(AnyPrefix, String)],
    opts: &Options,
    addr: u128,
    width: u32,
) -> Option<(u32, V)> {
    let (q, shift) = if width == 32 {
        (AnyPrefix::V4(Prefix::host(addr as u32)), 0)
    } else if addr >> 32 == 0xffff || addr >> 32 == 0 {
        (AnyPrefix::V4(Prefix::host(addr as u32)), 96)
    } else {
        (AnyPrefix::V6(Prefix::host(addr)), 0)
    };
    brute(routes, &q).map(|(p, v)| {
        (
            p.len() as u32 + shift,
            expected(v, &opts.field, opts.record),
        )
    })
}

/// Every probe answers as the brute-force match does, at a network inside
/// the matching route (unless neighbours were merged), and the first and
/// last address of that network answer the same.
fn check(
    routes: &[(AnyPrefix, String)],
    extra: &[u128],
    opts: &Options,
) -> Result<(), TestCaseError> {
    let bytes = write(routes, opts).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let db = Db::open(&bytes);
    for probe in probes(routes, extra) {
        let (addr, width) = match probe {
            AnyPrefix::V4(p) => (p.addr() as u128, 32),
            AnyPrefix::V6(p) => (p.addr(), 128),
        };
        let want = answer(routes, opts, addr, width);
        let (got, depth) = db.lookup(addr, width);
        prop_assert_eq!(&got, &want.as_ref().map(|w| w.1.clone()), "{}", probe);
        if let Some((len, _)) = want {
            prop_assert!(
                opts.merge_neighbours || depth >= len,
                "{}: network /{} outside the route /{}",
                probe,
                depth,
                len
            );
        }
        let all = u128::MAX >> (128 - width);
        let host = if depth == 0 {
            all
        } else {
            !(u128::MAX << (width - depth)) & all
        };
        for edge in [addr & !host, addr | host] {
            let other = answer(routes, opts, edge, width).map(|w| w.1);
            prop_assert_eq!(&other, &got, "{} and {:#x} are in one network", probe, edge);
        }
    }
    Ok(())
}

/// Nested, adjacent and duplicate routes: addresses near a few bases,
/// values from a small set (so neighbours often agree and merge).
fn arb_routes() -> impl Strategy<Value = Vec<(AnyPrefix, String)>> {
    // Offsets shifted by 0 or 8 keep `::/96` and `::ffff:0:0/96` bases in
    // those ranges; by 40, IPv6 prefixes spread wider.
    let value = prop::sample::select(vec![
        "1",
        "2",
        "13335",
        "4294967296",
        "007",
        "AS-X",
        "",
        r#"{"a":[1,-2,true]}"#,
    ]);
    let v4 = (
        prop::sample::select(vec![0u32, 0x0a00_0000, 0xc0a8_0000, u32::MAX]),
        0u32..=0xffff,
        prop_oneof![0u8..=32, Just(0u8), Just(24), Just(32)],
    )
        .prop_map(|(base, off, len)| {
            AnyPrefix::V4(Prefix::new_masked(base.wrapping_add(off << 8 | off >> 8), len).unwrap())
        });
    let v6 = (
        prop::sample::select(vec![
            0u128,
            0x2001_0db8u128 << 96,
            0xffffu128 << 32,
            u128::MAX,
        ]),
        any::<u64>(),
        prop::sample::select(vec![0u32, 8, 40]),
        prop_oneof![0u8..=128, Just(0u8), Just(48), Just(96), Just(128)],
    )
        .prop_map(|(base, off, shift, len)| {
            let off = (off as u128) << shift;
            AnyPrefix::V6(Prefix::new_masked(base.wrapping_add(off), len).unwrap())
        });
    prop::collection::vec((prop_oneof![v4, v6], value.prop_map(String::from)), 0..40)
}

fn opts(mode: RecordMode) -> Options {
    Options {
        record: mode,
        field: "asn".into(),
        build_epoch: 1,
        ..Options::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(ipfib::check::cases(300)))]

    #[test]
    fn answers_like_the_longest_match(
        routes in arb_routes(),
        extra in prop::collection::vec(any::<u128>(), 0..32),
        size in prop::sample::select(vec![None, Some(28u16), Some(32)]),
        mode in prop::sample::select(vec![RecordMode::Auto, RecordMode::Field]),
        merge in any::<bool>(),
    ) {
        let o = Options { record_size: size, merge_neighbours: merge, ..opts(mode) };
        check(&routes, &extra, &o)?;
    }

    #[test]
    fn ipv4_only_trees_answer_too(
        routes in arb_routes(),
        extra in prop::collection::vec(any::<u32>(), 0..32),
    ) {
        let routes: Vec<_> = routes.into_iter().filter(|(p, _)| p.family() == 4).collect();
        let o = Options { ip_version: IpVersion::Four, ..opts(RecordMode::Auto) };
        let bytes = write(&routes, &o).unwrap();
        let db = Db::open(&bytes);
        prop_assert_eq!(db.ip_version, 4);
        for probe in probes(&routes, &extra.iter().map(|&e| e as u128).collect::<Vec<_>>()) {
            let AnyPrefix::V4(p) = probe else { continue };
            let want = brute(&routes, &probe).map(|(_, v)| expected(v, "asn", RecordMode::Auto));
            prop_assert_eq!(db.lookup(p.addr() as u128, 32).0, want, "{}", probe);
        }
    }
}

#[test]
fn metadata_says_what_was_written() {
    let routes = vec![(
        AnyPrefix::parse("10.0.0.0/8", Default::default()).unwrap(),
        "1".to_string(),
    )];
    let o = Options {
        database_type: "test-type".into(),
        description: "a description".into(),
        build_epoch: 1_700_000_000,
        ..Options::default()
    };
    let bytes = write(&routes, &o).unwrap();
    let db = Db::open(&bytes);
    let V::Map(m) = &db.meta else { panic!() };
    let get = |k: &str| m.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("database_type"), Some(V::Str("test-type".into())));
    assert_eq!(
        get("description"),
        Some(V::Map(vec![("en".into(), V::Str("a description".into()))]))
    );
    assert_eq!(get("languages"), Some(V::Array(vec![])));
    assert_eq!(get("build_epoch"), Some(V::Uint(1_700_000_000)));
    assert_eq!(get("ip_version"), Some(V::Uint(6)));
    assert_eq!(db.record_size, 24);
    // 96 nodes down to ::/96, 15 more for the alias (its path leaves the
    // zeros at bit 80), 8 down to 10/8 in the IPv4 tree.
    assert_eq!(db.node_count, 96 + 15 + 8);
}

#[test]
fn json_records_round_trip_every_type() {
    let rec = r#"{"s":"é\"","u":4294967296,"big":340282366920938463463374607431768211455,"i":-7,"d":1.5,"b":false,"a":[{},[]],"n":{"k":"v"}}"#;
    let routes = vec![
        (
            AnyPrefix::parse("10.0.0.0/8", Default::default()).unwrap(),
            rec.to_string(),
        ),
        (
            AnyPrefix::parse("11.0.0.0/8", Default::default()).unwrap(),
            "\"plain\"".to_string(),
        ),
    ];
    let bytes = write(&routes, &opts(RecordMode::Json)).unwrap();
    let db = Db::open(&bytes);
    let want = V::Map(vec![
        ("s".into(), V::Str("é\"".into())),
        ("u".into(), V::Uint(1 << 32)),
        ("big".into(), V::Uint(u128::MAX)),
        ("i".into(), V::Int(-7)),
        ("d".into(), V::Double(1.5)),
        ("b".into(), V::Bool(false)),
        ("a".into(), V::Array(vec![V::Map(vec![]), V::Array(vec![])])),
        ("n".into(), V::Map(vec![("k".into(), V::Str("v".into()))])),
    ]);
    assert_eq!(db.lookup(0x0a01_0203, 32).0, Some(want));
    assert_eq!(db.lookup(0x0b01_0203, 32).0, Some(V::Str("plain".into())));
    assert_eq!(db.lookup(0x0c01_0203, 32).0, None);
    // Not JSON under --mmdb-record json: an error naming the route.
    let bad = vec![(
        AnyPrefix::parse("10.0.0.0/8", Default::default()).unwrap(),
        "AS1".to_string(),
    )];
    let e = write(&bad, &opts(RecordMode::Json))
        .unwrap_err()
        .to_string();
    assert!(e.contains("10.0.0.0/8") && e.contains("\"AS1\""), "{e}");
}

#[test]
fn repeated_parts_are_written_once() {
    // 200 routes, 100 distinct records sharing one long key and one long
    // nested map: each distinct record is written once, and the shared
    // parts become pointers, so the data grows far less than the records.
    let shared = r#""org":{"name":"A long organisation name that repeats everywhere"}"#;
    let routes: Vec<_> = (0..200u32)
        .map(|i| {
            let p = AnyPrefix::V4(Prefix::new(i << 24, 8).unwrap());
            (
                p,
                format!(r#"{{"autonomous_system_number":{},{shared}}}"#, i % 100),
            )
        })
        .collect();
    let mut t = Table::new();
    for (p, v) in &routes {
        t.insert(*p, v.clone()).unwrap();
    }
    let mut out = Vec::new();
    let stats = mmdb_write::write_table(&mut out, &t, &opts(RecordMode::Auto)).unwrap();
    assert_eq!(stats.records, 100);
    let one_record = 1 + 25 + 5 + 4 + 1 + 5 + 48;
    assert!(
        stats.data_bytes < 2 * one_record + 99 * 12,
        "{} data bytes",
        stats.data_bytes
    );
    check(&routes, &[], &opts(RecordMode::Auto)).unwrap();
}

#[test]
fn errors_are_refusals() {
    let v6 = vec![(
        AnyPrefix::parse("2001:db8::/32", Default::default()).unwrap(),
        "1".to_string(),
    )];
    let four = Options {
        ip_version: IpVersion::Four,
        ..Options::default()
    };
    assert!(matches!(write(&v6, &four), Err(WriteError::Ipv6Routes(1))));
    for s in [16, 26, 40] {
        let o = Options {
            record_size: Some(s),
            ..Options::default()
        };
        assert!(
            matches!(write(&v6, &o), Err(WriteError::RecordSize { .. })),
            "{s}"
        );
    }
    let null = vec![(
        AnyPrefix::parse("10.0.0.0/8", Default::default()).unwrap(),
        "{\"a\":null}".to_string(),
    )];
    assert!(matches!(
        write(&null, &opts(RecordMode::Json)),
        Err(WriteError::Value { .. })
    ));
    // Under auto, a value that is not a JSON object the format can hold is
    // a string under the field.
    let bytes = write(&null, &opts(RecordMode::Auto)).unwrap();
    assert_eq!(
        Db::open(&bytes).lookup(0x0a00_0000, 32).0,
        Some(V::Map(vec![("asn".into(), V::Str("{\"a\":null}".into()))]))
    );
}

#[test]
fn empty_tables_answer_nothing() {
    for ip_version in [IpVersion::Six, IpVersion::Four] {
        let o = Options {
            ip_version,
            ..Options::default()
        };
        let bytes = write(&[], &o).unwrap();
        let db = Db::open(&bytes);
        assert_eq!(db.lookup(0x0a00_0000, 32).0, None);
        if ip_version == IpVersion::Six {
            assert_eq!(db.lookup(1, 128).0, None);
        }
    }
}

#[test]
fn data_past_16_mib_takes_28_bit_records() {
    // 128 distinct records of 150 KB: offsets pass 2^24 part way, so tree
    // records need 28 bits, whose top four bits share a byte with the other
    // record's. Every other route has one small record (written early) or
    // none: siblings differ in those top bits.
    let mut routes = vec![];
    let big = |k: u32| format!("{k}{}", "x".repeat(150_000));
    for i in 0..128u32 {
        let p = AnyPrefix::V4(Prefix::new(0x0b00_0000 | i << 18, 15).unwrap());
        routes.push((p, big(i)));
        let p = AnyPrefix::V4(Prefix::new(0x0b00_0000 | i << 18 | 1 << 17, 15).unwrap());
        if i % 2 == 0 {
            routes.push((p, "small".to_string()));
        }
        let p =
            AnyPrefix::V6(Prefix::new((0x2001_0db8u128 << 96) | (i as u128) << 80, 48).unwrap());
        routes.push((p, big(i + 1000)));
    }
    let o = opts(RecordMode::Field);
    let bytes = write(&routes, &o).unwrap();
    let db = Db::open(&bytes);
    assert_eq!(db.record_size, 28);
    check(&routes, &[], &o).unwrap();
    let o = Options {
        record_size: Some(32),
        ..o
    };
    check(&routes, &[], &o).unwrap();
    let o = Options {
        record_size: Some(24),
        ..o
    };
    assert!(matches!(
        write(&routes, &o),
        Err(WriteError::RecordSize { .. })
    ));
}
