//! The real-table differential test: every real table in `../shared/data`
//! (a sibling of the repository root) is read with `ipfib_io::read_routes`,
//! inserted in file order into one `RouteTable` per family, and every PlanB
//! and Poptrie variant (each supported kernel x layout x batch size x
//! payload kind, see `ipfib::check::check_engines`) is compared with the
//! route table on at least a million uniform and a million matched
//! addresses plus the boundaries of every prefix. The route table itself is
//! compared with the brute-force oracle on a small sample, and the `ipfib`
//! binary is run on the file for a few thousand addresses (`--engine
//! planb` and `--engine poptrie`).
//!
//! One `#[test]` per table so they run in parallel. Without the data folder
//! the tests say SKIPPED and pass, except under `CI=true`, where they fail.

mod common;

use common::{data_file, ipfib};
use ipfib::check::{boundary_queries, check_engines};
use ipfib::engine::Family;
use ipfib::gen::{matched_trace, uniform_trace};
use ipfib::oracle::Oracle;
use ipfib::prefix::{AnyPrefix, Prefix};
use ipfib::route_table::RouteTable;
use ipfib_io::{read_routes, Format, LoadOptions};
use std::ffi::OsStr;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::time::Instant;

/// Uniform and matched addresses per family (each, at least a million).
const TRACE: usize = 1_000_000;
/// Addresses compared with the brute-force oracle per family (half matched,
/// half uniform).
const ORACLE_SAMPLE: usize = 2_000;

struct Expect {
    format: Format,
    v4: usize,
    v6: usize,
}

fn real_table(name: &str, want: Expect) {
    let Some(path) = data_file(name) else {
        return;
    };
    let t0 = Instant::now();
    let loaded = read_routes(&path, &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{name} failed to load: {e}"));
    assert_eq!(loaded.format, want.format, "{name}: format read as");
    let mut r4: Vec<(Prefix<u32>, String)> = Vec::new();
    let mut r6: Vec<(Prefix<u128>, String)> = Vec::new();
    for r in loaded.routes {
        match r.prefix {
            AnyPrefix::V4(p) => r4.push((p, r.value)),
            AnyPrefix::V6(p) => r6.push((p, r.value)),
        }
    }
    let load = t0.elapsed();
    let mut times = vec![format!("load {:.2}s", load.as_secs_f64())];
    let t4 = family(name, &r4, want.v4, &mut times);
    let t6 = family(name, &r6, want.v6, &mut times);
    let t1 = Instant::now();
    let n = cli_agrees(name, &path, &t4, &t6);
    times.push(format!(
        "`ipfib lookup` on {n} addresses {:.2}s",
        t1.elapsed().as_secs_f64()
    ));
    eprintln!(
        "{name}: {} IPv4 + {} IPv6 prefixes; {}; total {:.2}s",
        r4.len(),
        r6.len(),
        times.join(", "),
        t0.elapsed().as_secs_f64()
    );
}

/// Check one family's routes (in file order): the prefix count, every
/// engine variant against the route table, the route table against the
/// oracle. Returns the route table.
fn family<A: Family>(
    name: &str,
    routes: &[(Prefix<A>, String)],
    want_prefixes: usize,
    times: &mut Vec<String>,
) -> RouteTable<A, String> {
    let v = A::FAMILY;
    let t0 = Instant::now();
    let mut table: RouteTable<A, String> = RouteTable::new();
    for (p, val) in routes {
        table
            .insert(*p, val.clone())
            .unwrap_or_else(|e| panic!("{name}: inserting {p:?}: {e}"));
    }
    assert_eq!(table.len(), want_prefixes, "{name}: IPv{v} prefixes");
    if routes.is_empty() {
        return table;
    }
    let prefixes: Vec<Prefix<A>> = table.iter().map(|(p, _)| p).collect();
    let mut boundaries = boundary_queries(prefixes.iter().copied());
    boundaries.sort_unstable();
    boundaries.dedup();
    let mut queries: Vec<A> = uniform_trace(TRACE, 0x5eed_0000 + v as u64);
    queries.extend(matched_trace(&prefixes, TRACE, 0x5eed_1000 + v as u64));
    queries.extend(boundaries);
    let queries = interleaved(queries);
    let build = t0.elapsed();

    // The reference first: the route table against the oracle.
    let t1 = Instant::now();
    let oracle_checked = check_oracle(name, routes, &table, &prefixes);
    let oracle = t1.elapsed();

    let t2 = Instant::now();
    if let Err(m) = check_engines(&table, None, &queries) {
        panic!(
            "{name}: IPv{v}: engine disagrees with the route table: {m}\n\
             (queries: {TRACE} uniform + {TRACE} matched + boundaries of {} prefixes)",
            prefixes.len()
        );
    }
    let check = t2.elapsed();

    times.push(format!(
        "IPv{v}: table+queries {:.2}s, oracle on {oracle_checked} addresses {:.2}s, \
         check_engines on {} queries {:.2}s",
        build.as_secs_f64(),
        oracle.as_secs_f64(),
        queries.len(),
        check.as_secs_f64(),
    ));
    table
}

/// The `ipfib` binary on the real file: a few thousand addresses of both
/// families (matched, uniform, IPv4-mapped) through stdin must print what
/// the route tables answer. Returns the number of addresses.
fn cli_agrees(
    name: &str,
    path: &Path,
    t4: &RouteTable<u32, String>,
    t6: &RouteTable<u128, String>,
) -> usize {
    let p4: Vec<Prefix<u32>> = t4.iter().map(|(p, _)| p).collect();
    let p6: Vec<Prefix<u128>> = t6.iter().map(|(p, _)| p).collect();
    let mut addrs: Vec<String> = Vec::new();
    let mut want = String::new();
    let mut add = |text: String, hit: Option<(String, &String)>| {
        match hit {
            Some((p, v)) => want.push_str(&format!("{text} {p} {v}\n")),
            None => want.push_str(&format!("{text} - -\n")),
        }
        addrs.push(text);
    };
    let v4 = matched_trace(&p4, 2_000, 41)
        .into_iter()
        .chain(uniform_trace(500, 42));
    for a in v4 {
        let hit = t4.lookup(a).map(|(p, v)| (p.to_string(), v));
        add(Ipv4Addr::from(a).to_string(), hit.clone());
        add(format!("::ffff:{}", Ipv4Addr::from(a)), hit);
    }
    let v6 = matched_trace(&p6, 2_000, 61)
        .into_iter()
        .chain(uniform_trace(500, 62));
    for a in v6 {
        let hit = t6.lookup(a).map(|(p, v)| (p.to_string(), v));
        add(Ipv6Addr::from(a).to_string(), hit);
    }
    let mut input = addrs.join("\n");
    input.push('\n');
    for engine in ["planb", "poptrie", "poptrie-flat"] {
        let out = ipfib(
            &[
                OsStr::new("lookup"),
                OsStr::new("--engine"),
                OsStr::new(engine),
                OsStr::new("--table"),
                path.as_os_str(),
            ],
            Some(input.as_bytes()),
        );
        assert_eq!(out.code, 0, "{name}: ipfib lookup: {}", out.stderr);
        let got = out.stdout;
        if let Some((g, w)) = got.lines().zip(want.lines()).find(|(g, w)| g != w) {
            panic!("{name}: ipfib lookup --engine {engine} printed {g:?}, want {w:?}");
        }
        assert_eq!(
            got.lines().count(),
            addrs.len(),
            "{name}: ipfib lookup --engine {engine} lines"
        );
    }
    // `--threads 2`: the input 40 times over (chunks of about 1 MiB each)
    // with bad lines between: one thread's output, messages (line numbers
    // across chunks) and status.
    let mut big = String::new();
    for i in 0..40 {
        big.push_str(&input);
        if i % 7 == 3 {
            big.push_str(&format!("not-an-address-{i}\n"));
        }
    }
    let run = |threads: &str| {
        ipfib(
            &[
                OsStr::new("lookup"),
                OsStr::new("--threads"),
                OsStr::new(threads),
                OsStr::new("--table"),
                path.as_os_str(),
            ],
            Some(big.as_bytes()),
        )
    };
    let (one, two) = (run("1"), run("2"));
    assert_eq!((one.code, two.code), (1, 1), "{name}: {}", two.stderr);
    assert_eq!(one.stdout.lines().count(), 40 * addrs.len());
    assert!(
        one.stdout == two.stdout,
        "{name}: --threads 2 answered otherwise"
    );
    assert_eq!(one.stderr, two.stderr, "{name}: --threads 2 messages");
    assert_eq!(
        one.stderr.matches("stdin line").count(),
        6,
        "{}",
        one.stderr
    );
    addrs.len()
}

/// `queries` sorted, then dealt into `STREAMS` ascending streams read in
/// turn: `[q0, q(n/S), q(2n/S), ..., q1, q(n/S + 1), ...]`.
///
/// The same addresses are checked as in random order, but about 2-3x
/// faster on the big tables: each stream walks the engine in address order,
/// so its next lookup finds its cache lines still warm, while any run of up
/// to `STREAMS` consecutive queries (every batch `check_engines` tries:
/// 8..64) still spans the whole address range, so batch lanes never see
/// look-alike neighbours that would hide a lane mix-up.
fn interleaved<A: Ord + Copy>(mut queries: Vec<A>) -> Vec<A> {
    const STREAMS: usize = 64;
    queries.sort_unstable();
    let per = queries.len().div_ceil(STREAMS);
    (0..per)
        .flat_map(|i| (0..STREAMS).map(move |s| s * per + i))
        .filter_map(|j| queries.get(j).copied())
        .collect()
}

/// Compare the route table with the brute-force oracle on a sample of
/// matched and uniform addresses; returns the sample size.
///
/// `Oracle::new` deduplicates with a linear search per insert (quadratic),
/// which is hours on a million routes. The oracle is therefore given, in
/// file order, exactly the routes that contain at least one sampled address
/// (found by binary search over the sorted sample, independent of the trie
/// code): the longest match of a sampled address over those routes is by
/// definition its longest match over the whole table.
fn check_oracle<A: Family>(
    name: &str,
    routes: &[(Prefix<A>, String)],
    table: &RouteTable<A, String>,
    prefixes: &[Prefix<A>],
) -> usize {
    let v = A::FAMILY;
    let mut sample: Vec<A> = matched_trace(prefixes, ORACLE_SAMPLE / 2, 0x0ac1e + v as u64);
    sample.extend(uniform_trace::<A>(ORACLE_SAMPLE / 2, 0x0ac1f + v as u64));
    let mut sorted = sample.clone();
    sorted.sort_unstable();
    let relevant = routes.iter().filter(|(p, _)| {
        let i = sorted.partition_point(|&a| a < p.addr());
        sorted.get(i).is_some_and(|&a| a <= p.last())
    });
    let oracle = Oracle::new(relevant.cloned());
    assert!(
        !oracle.routes().is_empty(),
        "{name}: IPv{v}: the matched sample hits no route"
    );
    let mut hits = 0;
    for &a in &sample {
        let want = oracle.lookup(a);
        let got = table.lookup(a);
        hits += usize::from(want.is_some());
        assert_eq!(
            got,
            want,
            "{name}: IPv{v}: route table (got) disagrees with the oracle (want) at {}",
            a.to_std()
        );
    }
    assert!(
        hits >= ORACLE_SAMPLE / 2,
        "{name}: IPv{v}: only {hits} of {ORACLE_SAMPLE} sampled addresses matched"
    );
    sample.len()
}

#[test]
fn routeviews_2015_ipasn_v4_v6() {
    real_table(
        "routeviews-20151101.ipasn.dat.gz",
        Expect {
            format: Format::Ipasn,
            v4: 606_138,
            v6: 27_693,
        },
    );
}

#[test]
fn routeviews_2026_v4_full_table() {
    real_table(
        "routeviews-rv2-20260730-1400.pfx2as.txt.gz",
        Expect {
            format: Format::Text,
            v4: 1_107_938,
            v6: 0,
        },
    );
}

#[test]
fn routeviews_2026_v6_full_table() {
    real_table(
        "routeviews-rv6-20260730-1400.pfx2as.txt.gz",
        Expect {
            format: Format::Text,
            v4: 0,
            v6: 258_956,
        },
    );
}

#[test]
fn linx_2014_v6_next_hops() {
    real_table(
        "linx-rib-ipv6.20141225.0000.p69.txt.gz",
        Expect {
            format: Format::Text,
            v4: 0,
            v6: 20_440,
        },
    );
}
