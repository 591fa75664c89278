//! The UDF's RowBinary sessions against the brute-force oracle: every
//! argument and return type, rows split across reads at any byte, block
//! headers, nulls, long strings, and a table swapped between blocks.

use super::*;
use ipfib::engine::auto::AutoOptions;
use ipfib::gen::{synthetic_v4, synthetic_v6, Rng};
use ipfib::image::to_bytes;
use ipfib::oracle::Oracle;
use ipfib::prefix::Prefix;
use ipfib::table::Table;

/// A table of synthetic routes plus edge cases (a default route, host
/// routes, a mapped-range route), values "v{n}" or plain numbers.
type Routes<A> = Vec<(Prefix<A>, String)>;

fn routes(seed: u64, numeric: bool) -> (Routes<u32>, Routes<u128>) {
    let val = |n: u32| {
        if numeric {
            n.to_string()
        } else {
            format!("v{n}")
        }
    };
    let mut v4: Vec<_> = synthetic_v4(3000, seed)
        .into_iter()
        .map(|(p, v)| (p, val(v)))
        .collect();
    v4.push(("0.0.0.0/1".parse().unwrap(), val(7)));
    v4.push(("255.255.255.255/32".parse().unwrap(), val(8)));
    let mut v6: Vec<_> = synthetic_v6(3000, seed + 1)
        .into_iter()
        .map(|(p, v)| (p, val(v)))
        .collect();
    v6.push(("::/0".parse().unwrap(), val(9)));
    v6.push(("::1/128".parse().unwrap(), val(10)));
    (v4, v6)
}

fn image(v4: &[(Prefix<u32>, String)], v6: &[(Prefix<u128>, String)]) -> ImageTable {
    ImageTable::from_bytes(&image_bytes(v4, v6)).unwrap()
}

fn image_bytes(v4: &[(Prefix<u32>, String)], v6: &[(Prefix<u128>, String)]) -> Vec<u8> {
    let mut t = Table::new();
    for (p, v) in v4 {
        t.v4.insert(*p, v.clone()).unwrap();
    }
    for (p, v) in v6 {
        t.v6.insert(*p, v.clone()).unwrap();
    }
    to_bytes(&t, &AutoOptions::default(), "test").unwrap()
}

/// A table held in memory; `swap_at` blocks answered, it becomes `next`.
struct Mem {
    now: Loaded,
    next: Option<ImageTable>,
    refreshes: usize,
    swap_at: usize,
}

impl Source for Mem {
    fn table(&self) -> &Loaded {
        &self.now
    }
    fn refresh(&mut self) {
        self.refreshes += 1;
        if self.refreshes == self.swap_at {
            if let Some(n) = self.next.take() {
                self.now = Loaded::of(n);
            }
        }
    }
}

fn mem(img: ImageTable) -> Mem {
    Mem {
        now: Loaded::of(img),
        next: None,
        refreshes: 0,
        swap_at: 0,
    }
}

/// Input that gives at most `step` bytes per read (a pipe delivering
/// rows in pieces).
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(self.data.len()).min(buf.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn spec(arg: &str, ret: &str, answer: &str, chunk_header: bool) -> Spec {
    let (arg_null, arg) = parse_arg(arg).unwrap();
    let (ret_null, ret) = parse_ret(ret).unwrap();
    Spec {
        arg_null,
        arg,
        ret_null,
        ret,
        answer: parse_answer(answer).unwrap(),
        chunk_header,
    }
}

fn run_session(spec: &Spec, src: impl Source, input: &[u8], step: usize) -> Vec<u8> {
    let mut out = Vec::new();
    serve(spec, src, Trickle { data: input, step }, &mut out).unwrap();
    out
}

/// What a reader of the answers gets back, row by row.
#[derive(Debug, PartialEq, Eq, Clone)]
enum Got {
    Null,
    Text(String),
    Num(u64),
}

fn read_answers(spec: &Spec, mut b: &[u8], rows: usize) -> Vec<Got> {
    let mut got = Vec::new();
    for _ in 0..rows {
        if spec.ret_null {
            let (f, rest) = b.split_first().unwrap();
            b = rest;
            if *f == 1 {
                got.push(Got::Null);
                continue;
            }
            assert_eq!(*f, 0);
        }
        match spec.ret {
            RetType::Text => {
                let (len, used) = varint(b).unwrap().unwrap();
                let len = len as usize;
                got.push(Got::Text(
                    String::from_utf8(b[used..used + len].to_vec()).unwrap(),
                ));
                b = &b[used + len..];
            }
            RetType::U32 => {
                got.push(Got::Num(u64::from(u32::from_le_bytes(
                    b[..4].try_into().unwrap(),
                ))));
                b = &b[4..];
            }
            RetType::U64 | RetType::I64 => {
                got.push(Got::Num(u64::from_le_bytes(b[..8].try_into().unwrap())));
                b = &b[8..];
            }
        }
    }
    assert!(b.is_empty(), "{} bytes past the last answer", b.len());
    got
}

/// Addresses rich in edge cases: inside routes, around their edges,
/// random, and IPv4-mapped IPv6.
fn addresses(
    v4: &[(Prefix<u32>, String)],
    v6: &[(Prefix<u128>, String)],
    rng: &mut Rng,
) -> Vec<AnyAddr> {
    let mut out = vec![
        AnyAddr::V4(0),
        AnyAddr::V4(u32::MAX),
        AnyAddr::V6(0),
        AnyAddr::V6(1),
        AnyAddr::V6(u128::MAX),
    ];
    for _ in 0..2000 {
        let (p, _) = &v4[rng.below(v4.len() as u64) as usize];
        let span = u32::MAX.checked_shr(u32::from(p.len())).unwrap_or(0);
        out.push(AnyAddr::V4(p.addr().wrapping_add(span)));
        out.push(AnyAddr::V4(p.addr().wrapping_add(span).wrapping_add(1)));
        out.push(AnyAddr::V4(rng.next_u64() as u32));
        let (q, _) = &v6[rng.below(v6.len() as u64) as usize];
        out.push(AnyAddr::V6(q.addr()));
        out.push(AnyAddr::V6(q.addr().wrapping_sub(1)));
        out.push(AnyAddr::V6(rng.next_u128()));
    }
    out
}

/// The oracle's answer as the return type would carry it.
fn expect(
    spec: &Spec,
    o4: &Oracle<u32, String>,
    o6: &Oracle<u128, String>,
    a: Option<AnyAddr>,
) -> Got {
    let hit = match a {
        None => None,
        Some(AnyAddr::V4(x)) => o4.lookup(x).map(|(p, v)| (p.to_string(), v.clone())),
        Some(AnyAddr::V6(x)) => o6.lookup(x).map(|(p, v)| (p.to_string(), v.clone())),
    };
    let text = match (&spec.answer, hit) {
        (_, None) => None,
        (Answer::Value, Some((_, v))) => Some(v),
        (Answer::Prefix, Some((p, _))) => Some(p),
        (Answer::Field(path), Some((_, v))) => field_of(&v, path).map(String::from),
    };
    let num = |t: &str| -> Option<u64> {
        match spec.ret {
            RetType::U32 => t.parse::<u32>().ok().map(u64::from),
            RetType::U64 => t.parse::<u64>().ok(),
            RetType::I64 => t.parse::<i64>().ok().map(|v| v as u64),
            RetType::Text => None,
        }
    };
    match (text, spec.ret, spec.ret_null) {
        (Some(t), RetType::Text, _) => Got::Text(t),
        (None, RetType::Text, false) => Got::Text(String::new()),
        (Some(t), _, null) => match num(&t) {
            Some(n) => Got::Num(n),
            None if null => Got::Null,
            None => Got::Num(0),
        },
        (None, _, true) => Got::Null,
        (None, _, false) => Got::Num(0),
    }
}

fn varint_bytes(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let more = n >= 0x80;
        out.push((n as u8 & 0x7f) | if more { 0x80 } else { 0 });
        n >>= 7;
        if !more {
            break;
        }
    }
}

/// `addrs` encoded as argument rows (`None`: a null or a bad text), in
/// blocks of `block` rows with headers when the spec has them.
fn encode(spec: &Spec, rows: &[Option<AnyAddr>], bad: &[&str], block: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (bi, chunk) in rows.chunks(block).enumerate() {
        if spec.chunk_header {
            out.extend_from_slice(format!("{}\n", chunk.len()).as_bytes());
        }
        for (i, r) in chunk.iter().enumerate() {
            if spec.arg_null {
                out.push(u8::from(r.is_none()));
                if r.is_none() {
                    continue;
                }
            }
            match (spec.arg, r) {
                (ArgType::Ipv4, Some(AnyAddr::V4(a))) => out.extend_from_slice(&a.to_le_bytes()),
                (ArgType::Ipv6, Some(a)) => {
                    let ip = match a {
                        AnyAddr::V4(x) => std::net::Ipv4Addr::from(*x).to_ipv6_mapped(),
                        AnyAddr::V6(x) => std::net::Ipv6Addr::from(*x),
                    };
                    out.extend_from_slice(&ip.octets());
                }
                (ArgType::Text, r) => {
                    let text = match r {
                        Some(a) => a.to_ip().to_string(),
                        None => bad[(bi + i) % bad.len()].to_string(),
                    };
                    varint_bytes(text.len(), &mut out);
                    out.extend_from_slice(text.as_bytes());
                }
                (_, r) => panic!("row {r:?} cannot be sent as {:?}", spec.arg),
            }
        }
    }
    out
}

/// Every argument type, return type and answer, rows split across reads,
/// with and without block headers: each answer is the oracle's.
#[test]
fn sessions_answer_as_the_oracle() {
    let mut rng = Rng::new(31);
    for numeric in [false, true] {
        let (v4, v6) = routes(if numeric { 5 } else { 6 }, numeric);
        let o4 = Oracle::new(v4.iter().cloned());
        let o6 = Oracle::new(v6.iter().cloned());
        let addrs = addresses(&v4, &v6, &mut rng);
        // Compiled once (the engine choice calibrates), opened per session.
        let bytes = image_bytes(&v4, &v6);
        let cases: &[(&str, &str, &str)] = &[
            ("IPv4", "Nullable(String)", "value"),
            ("UInt32", "String", "prefix"),
            ("IPv6", "Nullable(UInt32)", "value"),
            ("FixedString(16)", "UInt64", "value"),
            ("String", "Nullable(String)", "prefix"),
            ("Nullable(String)", "Int64", "value"),
            ("Nullable(IPv4)", "Nullable(UInt64)", "value"),
            ("Nullable(IPv6)", "String", "value"),
        ];
        for &(arg, ret, answer) in cases {
            for chunk_header in [false, true] {
                let spec = spec(arg, ret, answer, chunk_header);
                // Rows this argument type can carry; nulls and bad text
                // where it takes them.
                let mut rows: Vec<Option<AnyAddr>> = addrs
                    .iter()
                    .filter(|a| spec.arg != ArgType::Ipv4 || matches!(a, AnyAddr::V4(_)))
                    .map(|&a| Some(a))
                    .collect();
                if spec.arg_null || spec.arg == ArgType::Text {
                    for i in (0..rows.len()).step_by(7) {
                        rows[i] = None;
                    }
                }
                let bad = [
                    "",
                    "10.0.0.256",
                    "not an address",
                    " 10.1.2.3 ",
                    "::ffff:1.2.3.4",
                ];
                let input = encode(&spec, &rows, &bad, 333);
                let want: Vec<Got> = rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        // A bad text is parsed as `ipfib lookup` would.
                        let a = match r {
                            Some(a) => Some(*a),
                            None if spec.arg == ArgType::Text && !spec.arg_null => {
                                AnyAddr::parse(bad[(i / 333 + i % 333) % bad.len()]).ok()
                            }
                            None => None,
                        };
                        expect(&spec, &o4, &o6, a)
                    })
                    .collect();
                // Row sizes 1-17 bytes: reads of 3 and 17 bytes split rows
                // at every offset.
                for step in [3, 17, 4096, 1 << 20] {
                    let img = ImageTable::from_bytes(&bytes).unwrap();
                    let out = run_session(&spec, mem(img), &input, step);
                    let got = read_answers(&spec, &out, rows.len());
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g, w,
                            "{arg} -> {ret} ({answer}, headers {chunk_header}, step {step}), \
                             row {i}: {:?}",
                            rows[i]
                        );
                    }
                }
            }
        }
    }
}

/// A `field:` answer reads the JSON value by path; a value that is not
/// JSON, a missing field or null is a miss.
#[test]
fn fields_by_path() {
    let v4 = vec![
        (
            "10.0.0.0/8".parse().unwrap(),
            r#"{"country":{"iso_code":"NL","names":["a","b"]},"n":5}"#.to_string(),
        ),
        ("11.0.0.0/8".parse().unwrap(), "plain".to_string()),
        (
            "12.0.0.0/8".parse().unwrap(),
            r#"{"country":null}"#.to_string(),
        ),
    ];
    let img = || image(&v4, &[]);
    let addrs = [0x0a00_0001u32, 0x0b00_0001, 0x0c00_0001, 0x0d00_0001];
    let input: Vec<u8> = addrs.iter().flat_map(|a| a.to_le_bytes()).collect();
    let ask = |answer: &str| {
        let s = spec("IPv4", "Nullable(String)", answer, false);
        read_answers(&s, &run_session(&s, mem(img()), &input, 5), 4)
    };
    let t = |s: &str| Got::Text(s.into());
    assert_eq!(
        ask("field:country.iso_code"),
        [t("NL"), Got::Null, Got::Null, Got::Null]
    );
    assert_eq!(
        ask("field:country.names.1"),
        [t("b"), Got::Null, Got::Null, Got::Null]
    );
    assert_eq!(ask("field:n"), [t("5"), Got::Null, Got::Null, Got::Null]);
    assert_eq!(
        ask("field:country"),
        [
            t(r#"{"iso_code":"NL","names":["a","b"]}"#),
            Got::Null,
            Got::Null,
            Got::Null
        ]
    );
    assert!(parse_answer("field:").is_err());
    assert!(parse_answer("field:a..b").is_err());
}

/// A string too long to be an address is a miss, skipped across reads
/// without being held; the rows after it are answered.
#[test]
fn long_strings_are_misses() {
    let s = spec("String", "Nullable(String)", "value", true);
    let (v4, v6) = routes(9, false);
    let o4 = Oracle::new(v4.iter().cloned());
    let long = "1".repeat(300_000);
    // Padded text is parsed as `ipfib lookup` parses it.
    let padded = format!("{}192.0.2.1\t", " ".repeat(200));
    let mut input = b"4\n".to_vec();
    for text in ["10.1.2.3", long.as_str(), "192.0.2.1", padded.as_str()] {
        varint_bytes(text.len(), &mut input);
        input.extend_from_slice(text.as_bytes());
    }
    for step in [1, 7, 65536, 1 << 20] {
        let got = read_answers(&s, &run_session(&s, mem(image(&v4, &v6)), &input, step), 4);
        let want = |a: u32| {
            o4.lookup(a)
                .map_or(Got::Null, |(_, v)| Got::Text(v.clone()))
        };
        let w = want(0xc000_0201);
        assert_eq!(got, [want(0x0a01_0203), Got::Null, w.clone(), w]);
    }
}

/// Damaged input ends the session with an error naming the row, never a
/// panic or a wrong row count.
#[test]
fn damaged_input_is_refused() {
    let (v4, v6) = routes(2, false);
    let fails = |s: &Spec, input: &[u8]| {
        let mut out = Vec::new();
        serve(
            s,
            mem(image(&v4, &v6)),
            Trickle {
                data: input,
                step: 3,
            },
            &mut out,
        )
        .err()
        .map(|e| e.to_string())
    };
    let text = spec("String", "String", "value", false);
    // An 11-byte length.
    assert!(fails(&text, &[0xff; 11]).unwrap().contains("row 0"));
    // A row cut short.
    assert!(fails(&text, &[5, b'1', b'.'])
        .unwrap()
        .contains("ended inside row 0"));
    let v4s = spec("IPv4", "String", "value", false);
    assert!(fails(&v4s, &[1, 2, 3, 4, 5]).unwrap().contains("row 1"));
    let null = spec("Nullable(IPv4)", "String", "value", false);
    assert!(fails(&null, &[2]).unwrap().contains("null flag 2"));
    let hdr = spec("IPv4", "String", "value", true);
    assert!(fails(&hdr, b"x\n").unwrap().contains("block header"));
    assert!(fails(&hdr, &[b'1'; 40]).unwrap().contains("block header"));
    assert!(fails(&hdr, b"+2\n").unwrap().contains("block header"));
    assert!(fails(&hdr, b"\n").unwrap().contains("block header"));
    assert!(fails(&hdr, b"2\n\x01\x02\x03\x04")
        .unwrap()
        .contains("row 1"));
    // Empty input and empty blocks are fine.
    assert_eq!(fails(&hdr, b""), None);
    assert_eq!(fails(&hdr, b"0\n0\n"), None);
}

/// A table swapped between blocks answers every row after the swap, and
/// none before it.
#[test]
fn swapped_table_answers_later_blocks() {
    let a = vec![("10.0.0.0/8".parse().unwrap(), "old".to_string())];
    let b = vec![("10.0.0.0/8".parse().unwrap(), "new".to_string())];
    let s = spec("IPv4", "String", "value", true);
    let mut input = Vec::new();
    for _ in 0..4 {
        input.extend_from_slice(b"2\n");
        input.extend_from_slice(&0x0a00_0001u32.to_le_bytes());
        input.extend_from_slice(&0x0a00_0002u32.to_le_bytes());
    }
    // One block per read: the swap lands between blocks 2 and 3.
    let src = Mem {
        now: Loaded::of(image(&a, &[])),
        next: Some(image(&b, &[])),
        refreshes: 0,
        swap_at: 3,
    };
    let got = read_answers(&s, &run_session(&s, src, &input, 10), 8);
    let t = |s: &str| Got::Text(s.into());
    assert_eq!(
        got,
        [
            t("old"),
            t("old"),
            t("old"),
            t("old"),
            t("new"),
            t("new"),
            t("new"),
            t("new")
        ]
    );
}

/// The file source reopens a file replaced by rename, and keeps the open
/// table when the replacement is damaged.
#[test]
fn file_source_reloads_on_rename() {
    let dir = std::env::temp_dir().join(format!("ipfib-udf-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.ipfib");
    let write = |value: &str, to: &Path| {
        let mut t = Table::new();
        t.insert("10.0.0.0/8".parse().unwrap(), value.to_string())
            .unwrap();
        std::fs::write(to, to_bytes(&t, &AutoOptions::default(), "").unwrap()).unwrap();
    };
    let value = |src: &FileSource| {
        src.table()
            .img
            .v4
            .lookup(0x0a00_0001)
            .map(|(_, v)| v.to_string())
    };
    write("one", &path);
    let mut src = FileSource::open(&path, Duration::ZERO).unwrap();
    assert_eq!(value(&src).as_deref(), Some("one"));
    let tmp = dir.join("t.tmp");
    write("two", &tmp);
    std::fs::rename(&tmp, &path).unwrap();
    src.refresh();
    assert_eq!(value(&src).as_deref(), Some("two"));
    // A damaged replacement: refused, the open table answers.
    std::fs::write(&tmp, b"IPFIB not really").unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    src.refresh();
    assert_eq!(value(&src).as_deref(), Some("two"));
    // A FIFO renamed over it: refused at once (an open would wait for a
    // writer forever), the open table answers.
    let fifo = dir.join("t.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        std::fs::rename(&fifo, &path).unwrap();
        src.refresh();
        assert_eq!(value(&src).as_deref(), Some("two"));
    }
    // Gone: the open table answers.
    std::fs::remove_file(&path).unwrap();
    src.refresh();
    assert_eq!(value(&src).as_deref(), Some("two"));
    // A checked interval: no reopen before it passes.
    write("three", &path);
    src.every = Duration::from_secs(3600);
    src.checked = Instant::now();
    src.refresh();
    assert_eq!(value(&src).as_deref(), Some("two"));
    src.every = Duration::ZERO;
    src.refresh();
    assert_eq!(value(&src).as_deref(), Some("three"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn type_names() {
    assert_eq!(
        parse_arg(" Nullable( IPv6 ) ").unwrap(),
        (true, ArgType::Ipv6)
    );
    assert!(parse_arg("Int8").is_err());
    assert!(parse_ret("Nullable(Float64)").is_err());
    assert_eq!(parse_ret("UInt32").unwrap(), (false, RetType::U32));
}
