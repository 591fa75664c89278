//! tests/c/test_capi.c, compiled with the system's C compiler against the
//! built library and run: once linked with libipfib.so, once with
//! libipfib.a and the C side under AddressSanitizer + UBSan (the Rust
//! side is not instrumented; its bugs would show as wrong answers or as
//! ASan reports on the C side's buffers). It checks every call of the C
//! ABI, then answers on the real RouteViews 2026 tables against the
//! oracle below (`Table::lookup`, the radix trie, on the table as the CLI
//! loads it), single and batch, loaded and mapped, from several threads.
//! Without ../shared/data the real-table part is SKIPPED (a failure under
//! CI=true); the synthetic part always runs.

mod common;

use common::{compile, data, run, scratch, Link};
use ipfib_core::engine::auto::AutoOptions;
use ipfib_core::gen::Rng;
use ipfib_core::prefix::{AnyAddr, AnyPrefix};
use ipfib_core::table::Table;
use ipfib_io::{load_table, TableOptions};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

const V4: &str = "routeviews-rv2-20260730-1400.pfx2as.txt.gz";
const V6: &str = "routeviews-rv6-20260730-1400.pfx2as.txt.gz";
const HITLIST: &str = "traces/ipv6-hitlist-responsive-6gan-2021.txt.gz";

fn load(path: &Path, table: &mut Table<String>) {
    let loaded = load_table(path, &TableOptions::default()).expect("load the table");
    assert!(!loaded.report.has_problems(), "{path:?} loads cleanly");
    for r in loaded.routes {
        table.insert(r.prefix, r.value).expect("insert");
    }
}

/// The oracle file test_capi.c reads (see its opening comment).
fn oracle_line(out: &mut String, table: &Table<String>, addr: AnyAddr) {
    let hit = table.lookup(addr);
    if let Some((_, v)) = hit {
        assert!(
            !v.is_empty() && v.len() < 64 && !v.contains(char::is_whitespace),
            "value {v:?} fits the oracle format"
        );
    }
    let _ = match (addr, hit) {
        (AnyAddr::V4(a), Some((AnyPrefix::V4(p), v))) => {
            writeln!(out, "4 {a} {} {} {v}", p.addr(), p.len())
        }
        (AnyAddr::V4(a), _) => writeln!(out, "4 {a} - - -"),
        (AnyAddr::V6(a), Some((AnyPrefix::V6(p), v))) => {
            writeln!(out, "6 {a:032x} {:032x} {} {v}", p.addr(), p.len())
        }
        (AnyAddr::V6(a), _) => writeln!(out, "6 {a:032x} - - -"),
    };
}

/// Addresses matched to the table (inside random routes, and each end of
/// some), random ones, edges, and for IPv6 real hosts (the hitlist).
fn oracle(table: &Table<String>, hitlist: &Path) -> String {
    let mut rng = Rng::new(0x1bf1b);
    let mut out = String::new();
    let v4: Vec<_> = table.v4.iter_indices().map(|(p, _)| p).collect();
    let v6: Vec<_> = table.v6.iter_indices().map(|(p, _)| p).collect();
    for a in [0, 1, u32::MAX, u32::MAX - 1, 0x0a00_0001] {
        oracle_line(&mut out, table, AnyAddr::V4(a));
    }
    for i in 0..24_000 {
        let p = v4[rng.below(v4.len() as u64) as usize];
        let a = match i % 6 {
            0 => p.addr(),
            1 => p.last(),
            2 => p.last().wrapping_add(1),
            3 => rng.next_u64() as u32,
            _ => p.addr() | (rng.next_u64() as u32 & (p.last() - p.addr())),
        };
        oracle_line(&mut out, table, AnyAddr::V4(a));
    }
    let hosts = BufReader::new(flate2::read::GzDecoder::new(
        std::fs::File::open(hitlist).expect("open the hitlist"),
    ));
    for line in hosts.lines().map(|l| l.expect("read the hitlist")) {
        if line.starts_with('#') {
            continue;
        }
        let a: std::net::Ipv6Addr = line.trim().parse().expect("an IPv6 address");
        oracle_line(&mut out, table, AnyAddr::V6(u128::from(a)));
        if out.len() > 3_000_000 {
            break;
        }
    }
    // IPv6 as given: an IPv4-mapped address is looked up in the IPv6 table.
    for a in [0, 1, u128::MAX, 0xffff_0a00_0001, 0x2001_0db8 << 96] {
        oracle_line(&mut out, table, AnyAddr::V6(a));
    }
    for i in 0..16_000 {
        let p = v6[rng.below(v6.len() as u64) as usize];
        let a = match i % 5 {
            0 => p.addr(),
            1 => p.last(),
            2 => p.last().wrapping_add(1),
            3 => (0x2000u128 << 112) | (rng.next_u128() >> 3),
            _ => p.addr() | (rng.next_u128() & (p.last() - p.addr())),
        };
        oracle_line(&mut out, table, AnyAddr::V6(a));
    }
    out
}

#[test]
fn c_program_passes_with_the_shared_and_the_sanitized_static_library() {
    let dir = scratch("c_abi");
    let source = common::manifest_dir().join("tests/c/test_capi.c");
    let mut args: Vec<PathBuf> = vec![dir.clone()];
    match (data(V4), data(V6), data(HITLIST)) {
        (Some(v4), Some(v6), Some(hitlist)) => {
            let mut table = Table::new();
            load(&v4, &mut table);
            load(&v6, &mut table);
            let image = dir.join("both.ipfib");
            ipfib_core::image::write_table(&table, &image, &AutoOptions::default(), "c_abi test")
                .expect("write the compiled table");
            let oracle_path = dir.join("oracle.txt");
            std::fs::write(&oracle_path, oracle(&table, &hitlist)).expect("write the oracle");
            args.extend([oracle_path, v4, v6, image]);
        }
        _ => eprintln!("SKIPPED: the real-table part (synthetic part only)"),
    }
    let args: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
    for (link, name) in [
        (Link::Shared, "test_capi"),
        (Link::StaticSanitized, "test_capi_asan"),
    ] {
        let exe = dir.join(name);
        compile(&[&source], &exe, link, &[]);
        let o = run(&exe, &args, link);
        assert!(o.status.success(), "{name} ({link:?}) failed: {}", o.status);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            stdout.contains("test_capi: all checks passed"),
            "{name} ran to the end"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
