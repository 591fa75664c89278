//! LPM crates from crates.io on ipfib's table and trace files, printing the
//! result line `bench/peers/run.sh` collects:
//!
//! `NAME FAMILY ADDRESSES min median max build_ms bytes checksum`
//!
//! Usage: `ipfib-rust-peers ALGO TABLE TRACE [RUNS]`, ALGO one of
//! `prefix-trie` (TreeBitMap-style trie), `ip_network_table` (treebitmap)
//! or `poptrie` (the `poptrie` crate, another Poptrie implementation).
//! Lookups are single, one address at a time, as each crate offers them.
//! `bytes` is 0: none of the crates reports its footprint.

use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Instant;

const NO_ROUTE: u32 = u32::MAX;

fn die(msg: &str) -> ! {
    eprintln!("ipfib-rust-peers: {msg}");
    std::process::exit(2)
}

/// Routes as (address as u128, length, value).
fn read_table(path: &str) -> Vec<(u128, u8, u32)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
    text.lines()
        .enumerate()
        .map(|(i, line)| match parse_route(line) {
            Some(r) => r,
            None => die(&format!("{path}:{}: expected PREFIX/LEN VALUE", i + 1)),
        })
        .collect()
}

fn parse_route(line: &str) -> Option<(u128, u8, u32)> {
    let (prefix, value) = line.split_once(' ')?;
    let (addr, len) = prefix.split_once('/')?;
    let addr = match addr.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(a) => u32::from(a) as u128,
        std::net::IpAddr::V6(a) => u128::from(a),
    };
    Some((addr, len.parse().ok()?, value.trim().parse().ok()?))
}

/// (family, addresses as u128).
fn read_trace(path: &str) -> (u8, Vec<u128>) {
    let b = std::fs::read(path).unwrap_or_else(|e| die(&format!("{path}: {e}")));
    if b.len() < 16 || &b[..8] != b"IPFIBTR1" {
        die(&format!("{path}: not an IPFIBTR1 trace"));
    }
    let family = b[8];
    let width = if family == 4 { 4 } else { 16 };
    let addrs = b[16..]
        .chunks_exact(width)
        .map(|c| c.iter().fold(0u128, |a, &x| a << 8 | x as u128))
        .collect();
    (family, addrs)
}

/// A built table: answers one address.
type Lookup = Box<dyn Fn(u128) -> u32>;

fn build(algo: &str, family: u8, routes: &[(u128, u8, u32)]) -> Lookup {
    match (algo, family) {
        ("prefix-trie", 4) => {
            let mut m = prefix_trie::PrefixMap::<(u32, u8), u32>::new();
            for &(a, l, v) in routes {
                m.insert((a as u32, l), v);
            }
            Box::new(move |a| m.get_lpm(&(a as u32, 32)).map_or(NO_ROUTE, |(_, &v)| v))
        }
        ("prefix-trie", 6) => {
            let mut m = prefix_trie::PrefixMap::<(u128, u8), u32>::new();
            for &(a, l, v) in routes {
                m.insert((a, l), v);
            }
            Box::new(move |a| m.get_lpm(&(a, 128)).map_or(NO_ROUTE, |(_, &v)| v))
        }
        ("ip_network_table", 4) => {
            let mut t = ip_network_table::IpNetworkTable::<u32>::new();
            for &(a, l, v) in routes {
                let n = ip_network::Ipv4Network::new(Ipv4Addr::from(a as u32), l)
                    .unwrap_or_else(|e| die(&format!("{e}")));
                t.insert(n, v);
            }
            Box::new(move |a| {
                t.longest_match_ipv4(Ipv4Addr::from(a as u32))
                    .map_or(NO_ROUTE, |(_, &v)| v)
            })
        }
        ("ip_network_table", 6) => {
            let mut t = ip_network_table::IpNetworkTable::<u32>::new();
            for &(a, l, v) in routes {
                let n = ip_network::Ipv6Network::new(Ipv6Addr::from(a), l)
                    .unwrap_or_else(|e| die(&format!("{e}")));
                t.insert(n, v);
            }
            Box::new(move |a| {
                t.longest_match_ipv6(Ipv6Addr::from(a))
                    .map_or(NO_ROUTE, |(_, &v)| v)
            })
        }
        ("poptrie", 4) => {
            let mut t = poptrie::Poptrie::<(u32, u8), u32>::new();
            for &(a, l, v) in routes {
                t.insert((a as u32, l), v);
            }
            Box::new(move |a| t.lookup(a as u32).copied().unwrap_or(NO_ROUTE))
        }
        ("poptrie", 6) => {
            let mut t = poptrie::Poptrie::<(u128, u8), u32>::new();
            for &(a, l, v) in routes {
                t.insert((a, l), v);
            }
            Box::new(move |a| t.lookup(a).copied().unwrap_or(NO_ROUTE))
        }
        _ => die(&format!(
            "unknown algorithm {algo} (prefix-trie, ip_network_table, poptrie)"
        )),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        die("usage: ipfib-rust-peers ALGO TABLE TRACE [RUNS]");
    }
    let runs: usize = args.get(4).and_then(|r| r.parse().ok()).unwrap_or(5).max(1);
    let routes = read_table(&args[2]);
    let (family, addrs) = read_trace(&args[3]);
    let t0 = Instant::now();
    let lookup = build(&args[1], family, &routes);
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut out = vec![0u32; addrs.len()];
    let pass = |out: &mut [u32]| {
        for (o, &a) in out.iter_mut().zip(&addrs) {
            *o = lookup(black_box(a));
        }
    };
    pass(&mut out); // warm-up
    let mut mlps: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            pass(&mut out);
            addrs.len() as f64 / t.elapsed().as_secs_f64() / 1e6
        })
        .collect();
    mlps.sort_by(f64::total_cmp);
    let median = if runs % 2 == 1 {
        mlps[runs / 2]
    } else {
        (mlps[runs / 2 - 1] + mlps[runs / 2]) / 2.0
    };
    let checksum = out.iter().fold(0u64, |h, &v| {
        h.wrapping_mul(0x100_0000_01b3).wrapping_add(v as u64 + 1)
    });
    println!(
        "{} {family} {} {:.1} {median:.1} {:.1} {build_ms:.1} 0 {checksum}",
        args[1],
        addrs.len(),
        mlps[0],
        mlps[runs - 1]
    );
}
