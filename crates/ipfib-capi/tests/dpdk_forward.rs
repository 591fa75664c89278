//! examples/dpdk-forward (a DPDK RX -> LPM -> rewrite -> TX pipeline on
//! the C ABI), built with its Makefile and run on net_pcap ports: a pcap of
//! real addresses (the reflectors of the StopDDoS capture, the IPv6
//! hitlist) made by its make-pcap.py, plus crafted frames (TTL 1 and 2, a
//! checksum that must come out as 0x0000, ARP, short, wrong IP versions),
//! in, and the frames it sent, out. Every input frame is followed: one
//! `ipfib lookup` (the CLI) says whether it has a route and its value;
//! a routed frame with TTL > 1 must come out next, in order, with the
//! neighbour MAC of that value, the TTL or hop limit one lower, a right
//! IPv4 checksum and every other byte as it was; any other frame must be
//! dropped and counted. The same for `--lpm ipfib`, `fib` (rte_fib,
//! rte_fib6) and `lpm` (rte_lpm, rte_lpm6), which must send the same
//! frames. Without DPDK's development files (scripts/live-parts installs
//! them) or the data: SKIPPED (failing under CI=true).

mod common;

use common::{data, lib_dir, manifest_dir, pc_file, scratch, skip};
use ipfib_core::prefix::{AnyAddr, AnyPrefix};
use ipfib_core::table::Table;
use ipfib_io::{load_table, TableOptions};
use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::net::IpAddr;
use std::path::Path;
use std::process::{Command, Stdio};

const STOPDDOS: &str = "traces/stopddos-amp.TCP.reflection.SYNACK-20210605.srcdst.txt.gz";
const HITLIST: &str = "traces/ipv6-hitlist-responsive-6gan-2021.txt.gz";
const RV2: &str = "routeviews-rv2-20260730-1400.pfx2as.txt.gz";
const RV6: &str = "routeviews-rv6-20260730-1400.pfx2as.txt.gz";

fn gunzip_lines(path: &Path) -> Vec<String> {
    let out = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()
        .expect("run gzip");
    assert!(out.status.success(), "gzip -dc {}", path.display());
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The pcap's frames (bytes only).
fn frames(path: &Path) -> Vec<Vec<u8>> {
    let f = std::fs::File::open(path).expect("open a pcap");
    let mut r = pcap_file::pcap::PcapReader::new(f).expect("a pcap file");
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        out.push(p.expect("a whole record").data.into_owned());
    }
    out
}

fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .enumerate()
        .filter(|(i, _)| *i != 5)
        .map(|(_, w)| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// A 64-byte IPv4/UDP frame to `dst` from `src`, with `ttl` and a right
/// checksum (as make-pcap.py writes them).
fn v4_frame(src: [u8; 4], dst: [u8; 4], ttl: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 8, 0];
    f.extend_from_slice(&[0x45, 0, 0, 50, 0, 0, 0, 0, ttl, 17, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let c = ipv4_checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&[0, 9, 0, 9, 0, 30, 0, 0]);
    f.resize(64, 0);
    f
}

/// A source address for which the checksum after the TTL decrement is
/// 0x0000 (the header words summing to 0xFFFF): the case where the RFC
/// 1141 shortcut and a full computation differ.
fn src_for_zero_checksum(dst: [u8; 4], ttl: u8) -> [u8; 4] {
    for hi in 0u16..=0xFFFF {
        for lo in [0u16, 1, 0x00FF, 0xFF00, 0xFFFE] {
            let src = [(hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8];
            let after = v4_frame(src, dst, ttl - 1);
            if ipv4_checksum(&after[14..34]) == 0 {
                return src;
            }
        }
    }
    panic!("no source gives checksum 0");
}

fn append_frames(pcap: &Path, extra: &[Vec<u8>]) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(pcap)
        .expect("open the pcap");
    for (i, fr) in extra.iter().enumerate() {
        let len = fr.len() as u32;
        let mut rec = Vec::new();
        for x in [1_000_000u32, i as u32, len, len] {
            rec.extend_from_slice(&x.to_le_bytes());
        }
        rec.extend_from_slice(fr);
        f.write_all(&rec).expect("append a frame");
    }
}

/// `ipfib lookup` of every address: `Some(value)` or `None`.
fn cli_lookup(table: &Path, addrs: &[IpAddr]) -> Vec<Option<String>> {
    let cli = lib_dir().join("ipfib");
    if !cli.exists() {
        skip(&format!("{} not built", cli.display()));
        return Vec::new();
    }
    let mut child = Command::new(&cli)
        .arg("lookup")
        .arg("--table")
        .arg(table)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run ipfib lookup");
    let input: String = addrs.iter().map(|a| format!("{a}\n")).collect();
    let mut stdin = child.stdin.take().expect("stdin");
    let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("ipfib lookup");
    feeder.join().expect("feeder").expect("write stdin");
    assert!(out.status.success(), "ipfib lookup failed");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let got: Vec<Option<String>> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 3, "ADDR PREFIX VALUE: {l:?}");
            (f[1] != "-").then(|| f[2].to_string())
        })
        .collect();
    assert_eq!(got.len(), addrs.len(), "one answer per address");
    got
}

/// The destination of an IPv4 or IPv6 frame as make-pcap.py or
/// `v4_frame` writes them; `None` for the crafted other frames.
fn dst_of(f: &[u8]) -> Option<IpAddr> {
    match f.get(12..14)? {
        [8, 0] if f.len() >= 34 && f[14] == 0x45 => {
            Some(IpAddr::from(<[u8; 4]>::try_from(&f[30..34]).ok()?))
        }
        [0x86, 0xdd] if f.len() >= 54 && f[14] >> 4 == 6 => {
            Some(IpAddr::from(<[u8; 16]>::try_from(&f[38..54]).ok()?))
        }
        _ => None,
    }
}

fn field(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name}= in {line:?}"))
}

#[test]
fn dpdk_forward_sends_each_frame_to_its_route_s_neighbour() {
    if !Command::new("pkg-config")
        .args(["--exists", "libdpdk"])
        .status()
        .is_ok_and(|s| s.success())
    {
        skip("DPDK's development files (Debian libdpdk-dev; scripts/live-parts installs it)");
        return;
    }
    let (Some(stopddos), Some(hitlist), Some(rv2), Some(rv6)) =
        (data(STOPDDOS), data(HITLIST), data(RV2), data(RV6))
    else {
        return;
    };
    let dir = scratch("dpdk_forward");
    pc_file(&dir);
    let make = Command::new("make")
        .arg("-s")
        .arg("-f")
        .arg(manifest_dir().join("../../examples/dpdk-forward/Makefile"))
        .arg("-C")
        .arg(&dir)
        .env("PKG_CONFIG_PATH", &dir)
        .env("CFLAGS", "-O2 -g -Wall -Wextra -Werror")
        .env("LDFLAGS", format!("-Wl,-rpath,{}", lib_dir().display()))
        .output()
        .expect("run make");
    assert!(
        make.status.success(),
        "make failed:\n{}{}",
        String::from_utf8_lossy(&make.stdout),
        String::from_utf8_lossy(&make.stderr)
    );

    // Real addresses: the reflectors (sources) and victims of the
    // capture, the hitlist's hosts; IPv4-mapped IPv6 ones left out
    // (`ipfib lookup` reads them as IPv4, the pipeline as IPv6).
    let mut addrs: Vec<String> = gunzip_lines(&stopddos)
        .iter()
        .take(15_000)
        .flat_map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect();
    addrs.extend(
        gunzip_lines(&hitlist)
            .into_iter()
            .take(20_000)
            .filter(|a| !a.to_ascii_lowercase().starts_with("::ffff:")),
    );

    // The table: every 8th RouteViews 2026 route of each family, and each
    // address's longest match in the whole tables (so most addresses are
    // routed as the whole tables route them; rte_lpm6 takes minutes over
    // all 259K IPv6 routes).
    let mut whole = Table::new();
    let mut lines = BTreeSet::new();
    for f in [&rv2, &rv6] {
        for (i, r) in load_table(f, &TableOptions::default())
            .expect("load a RouteViews table")
            .routes
            .into_iter()
            .enumerate()
        {
            if i % 8 == 0 {
                lines.insert(format!("{} {}", r.prefix, r.value));
            }
            whole.insert(r.prefix, r.value).expect("insert");
        }
    }
    for a in &addrs {
        let a = AnyAddr::from(a.parse::<IpAddr>().expect("an address"));
        if let Some((p, v)) = whole.lookup(a) {
            lines.insert(format!("{p} {v}"));
        }
    }
    let table_path = dir.join("table.txt");
    let text: String = lines.into_iter().map(|l| l + "\n").collect();
    std::fs::write(&table_path, text).expect("write the table");

    let addr_file = dir.join("addresses.txt");
    std::fs::write(&addr_file, addrs.join("\n") + "\n").expect("write the addresses");
    let pcap = dir.join("in.pcap");
    let gen = Command::new("python3")
        .arg(manifest_dir().join("../../examples/dpdk-forward/make-pcap.py"))
        .arg("--addresses")
        .arg(&addr_file)
        .arg("--out")
        .arg(&pcap)
        .output()
        .expect("run make-pcap.py");
    assert!(
        gen.status.success(),
        "make-pcap.py: {}",
        String::from_utf8_lossy(&gen.stderr)
    );

    // Crafted frames towards a routed address and around the edges.
    let routed: [u8; 4] = {
        let t = load_table(&table_path, &TableOptions::default()).expect("the table");
        let p = t
            .routes
            .iter()
            .find_map(|r| match r.prefix {
                AnyPrefix::V4(p) if p.len() <= 24 => Some(p),
                _ => None,
            })
            .expect("an IPv4 route");
        (p.addr() | 1).to_be_bytes()
    };
    let zero_src = src_for_zero_checksum(routed, 64);
    let generated = frames(&pcap);
    let mut known: Vec<IpAddr> = generated.iter().filter_map(|f| dst_of(f)).collect();
    known.push(IpAddr::from(routed));
    let answers = cli_lookup(&table_path, &known);
    if answers.is_empty() {
        return;
    }
    let answer: HashMap<IpAddr, Option<String>> = known.into_iter().zip(answers).collect();
    let mut v6_ttl1 = generated
        .into_iter()
        .find(|f| f[12..14] == [0x86, 0xdd] && dst_of(f).is_some_and(|d| answer[&d].is_some()))
        .expect("a routed IPv6 frame");
    v6_ttl1[21] = 1;
    let mut bad_version = v4_frame([192, 0, 2, 1], routed, 64);
    bad_version[14] = 0x65;
    let mut short_ihl = v4_frame([192, 0, 2, 1], routed, 64);
    short_ihl[14] = 0x44;
    let mut arp = vec![0xFF; 6];
    arp.extend_from_slice(&[2, 0, 0, 0, 0, 2, 8, 6]);
    arp.resize(60, 0);
    let crafted = vec![
        v4_frame([192, 0, 2, 1], routed, 1), // TTL 1: dropped
        v4_frame([192, 0, 2, 1], routed, 0), // TTL 0: dropped
        v6_ttl1,                             // hop limit 1: dropped
        v4_frame([192, 0, 2, 1], routed, 2), // TTL 2: out with 1
        v4_frame(zero_src, routed, 64),      // checksum 0x0000 after
        v4_frame([192, 0, 2, 1], routed, 255),
        bad_version,                                         // other
        short_ihl,                                           // other
        arp,                                                 // other
        vec![2, 0, 0, 0, 0],                                 // short: other
        v4_frame([192, 0, 2, 1], routed, 64)[..30].to_vec(), // truncated: other
    ];
    append_frames(&pcap, &crafted);
    let input = frames(&pcap);
    let dsts: Vec<Option<IpAddr>> = input.iter().map(|f| dst_of(f)).collect();

    let mut sent_by = Vec::new();
    for lpm in ["ipfib", "fib", "lpm"] {
        let out_pcap = dir.join(format!("out.{lpm}.pcap"));
        let nb_file = dir.join(format!("neighbours.{lpm}.txt"));
        let o = Command::new(dir.join("dpdk-forward"))
            .args([
                "--no-huge",
                "--no-pci",
                "-m",
                "1024",
                "--no-shconf",
                "--no-telemetry",
                "--log-level=error",
                "-l",
                "0",
            ])
            .arg(format!("--vdev=net_pcap0,rx_pcap={}", pcap.display()))
            .arg(format!("--vdev=net_pcap1,tx_pcap={}", out_pcap.display()))
            .arg("--")
            .arg("--table")
            .arg(&table_path)
            .args(["--lpm", lpm])
            .arg("--neighbours")
            .arg(&nb_file)
            .output()
            .expect("run dpdk-forward");
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "dpdk-forward --lpm {lpm} failed: {stdout}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let line = stdout
            .lines()
            .find(|l| l.starts_with("forward "))
            .expect("the summary line");
        println!("{line}");
        let mac_value: HashMap<[u8; 6], String> = std::fs::read_to_string(&nb_file)
            .expect("the neighbours file")
            .lines()
            .map(|l| {
                let (mac, value) = l.split_once(' ').expect("MAC VALUE");
                let b: Vec<u8> = mac
                    .split(':')
                    .map(|x| u8::from_str_radix(x, 16).expect("a MAC byte"))
                    .collect();
                (b.try_into().expect("6 bytes"), value.to_string())
            })
            .collect();
        let out = frames(&out_pcap);
        let (mut next, mut miss, mut ttl, mut other, mut own) = (0, 0u64, 0u64, 0u64, None);
        for (i, (f, dst)) in input.iter().zip(&dsts).enumerate() {
            let Some(dst) = dst else {
                other += 1;
                continue;
            };
            let Some(value) = answer[dst].as_ref() else {
                miss += 1;
                continue;
            };
            let hop = if dst.is_ipv4() { 22 } else { 21 };
            if f[hop] <= 1 {
                ttl += 1;
                continue;
            }
            let g = out
                .get(next)
                .unwrap_or_else(|| panic!("--lpm {lpm}: frame {i} ({dst}) was not sent"));
            next += 1;
            let mac: [u8; 6] = g[..6].try_into().expect("a MAC");
            assert_eq!(
                mac_value.get(&mac),
                Some(value),
                "--lpm {lpm}: frame {i} to {dst}: neighbour {mac:02x?}"
            );
            let src: [u8; 6] = g[6..12].try_into().expect("a MAC");
            assert_eq!(*own.get_or_insert(src), src, "one source MAC");
            assert_eq!(g.len(), f.len(), "frame {i}: length");
            assert_eq!(g[hop], f[hop] - 1, "frame {i}: TTL / hop limit");
            let mut want = f.clone();
            want[..12].copy_from_slice(&g[..12]);
            want[hop] -= 1;
            if dst.is_ipv4() {
                let c = ipv4_checksum(&want[14..34]);
                want[24..26].copy_from_slice(&c.to_be_bytes());
            }
            assert_eq!(g, &want, "--lpm {lpm}: frame {i} to {dst}");
        }
        assert_eq!(
            next,
            out.len(),
            "--lpm {lpm}: frames sent that should not be"
        );
        let n = input.len() as u64;
        assert_eq!(field(line, "packets"), n, "{line}");
        assert_eq!(field(line, "forwarded"), out.len() as u64, "{line}");
        assert_eq!(field(line, "miss"), miss, "{line}");
        assert_eq!(field(line, "ttl"), ttl, "{line}");
        assert_eq!(field(line, "other"), other, "{line}");
        assert_eq!((ttl, other), (3, 5), "the crafted frames");
        assert!(
            miss > 1000 && out.len() > 20_000,
            "both kinds, many: {miss} misses, {} sent",
            out.len()
        );
        let v6 = out.iter().filter(|g| g[12..14] == [0x86, 0xdd]).count();
        assert!(v6 > 5000 && out.len() - v6 > 5000, "both families sent");
        sent_by.push(out);
    }
    // Neighbour ids come from the values in the same order for every
    // engine, so the frames are equal byte for byte.
    assert!(
        sent_by.windows(2).all(|w| w[0] == w[1]),
        "the engines agree"
    );

    // --loop: the capture replayed round and round through 64 mbufs;
    // every received frame is the capture's next, so each kind of drop
    // comes at the capture's rate (within one capture's worth of frames:
    // the last round is partial), and every packet is counted once.
    let o = Command::new(dir.join("dpdk-forward"))
        .args([
            "--no-huge",
            "--no-pci",
            "-m",
            "1024",
            "--no-shconf",
            "--no-telemetry",
            "--log-level=error",
            "-l",
            "0",
        ])
        .arg(format!("--vdev=net_pcap0,rx_pcap={}", pcap.display()))
        .arg("--")
        .arg("--table")
        .arg(&table_path)
        .args([
            "--loop",
            "--inflight",
            "64",
            "--seconds",
            "1",
            "--passes",
            "2",
        ])
        .output()
        .expect("run dpdk-forward --loop");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "dpdk-forward --loop failed: {stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("forward "))
        .collect();
    assert_eq!(lines.len(), 2, "a line per pass: {stdout}");
    let n = input.len() as u64;
    for line in lines {
        println!("{line}");
        let packets = field(line, "packets");
        assert!(packets >= 3 * n, "three rounds at least: {line}");
        let kinds = ["forwarded", "miss", "ttl", "other", "tx_full"];
        let total: u64 = kinds.iter().map(|k| field(line, k)).sum();
        assert_eq!(total, packets, "every packet counted once: {line}");
        let forwarded = sent_by[0].len() as u64;
        for (name, per_round) in [
            ("forwarded", forwarded),
            ("ttl", 3),
            ("other", 5),
            ("miss", n - forwarded - 8),
            ("tx_full", 0),
        ] {
            let want = packets as f64 * per_round as f64 / n as f64;
            let got = field(line, name) as f64;
            assert!(
                (got - want).abs() <= n as f64,
                "{name}: {got}, the capture's rate gives {want:.0}: {line}"
            );
        }
    }
}
