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

use common::{build_example, data, lib_dir, manifest_dir, pkg_exists, skip};
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

/// A 60-byte IPv4/UDP frame to `dst` from `src`, with `ttl` and a right
/// checksum (as make-pcap.py writes them).
fn v4_frame(src: [u8; 4], dst: [u8; 4], ttl: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 8, 0];
    f.extend_from_slice(&[0x45, 0, 0, 46, 0, 0, 0, 0, ttl, 17, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let c = ipv4_checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&[0, 9, 0, 9, 0, 26, 0, 0]);
    f.resize(60, 0);
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

/// The destination of a frame the pipeline looks up (forward.c's rule:
/// Ethernet II; IPv4 of version 4 with a header of 20 bytes or more inside
/// the frame and a total length covering it; IPv6 of version 6 with its
/// whole fixed header); `None` for every other frame.
fn dst_of(f: &[u8]) -> Option<IpAddr> {
    match f.get(12..14)? {
        [8, 0]
            if f.len() >= 34 && f[14] >> 4 == 4 && {
                let hlen = 4 * usize::from(f[14] & 15);
                hlen >= 20
                    && hlen <= f.len() - 14
                    && usize::from(u16::from_be_bytes([f[16], f[17]])) >= hlen
            } =>
        {
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
    if !pkg_exists(
        "libdpdk",
        "DPDK's development files (Debian libdpdk-dev; scripts/live-parts installs it)",
    ) {
        return;
    }
    let (Some(stopddos), Some(hitlist), Some(rv2), Some(rv6)) =
        (data(STOPDDOS), data(HITLIST), data(RV2), data(RV6))
    else {
        return;
    };
    let dir = build_example(
        "dpdk_forward",
        "examples/dpdk-forward/Makefile",
        "-O2 -g -Wall -Wextra -Werror",
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
    let v6 = generated
        .into_iter()
        .find(|f| f[12..14] == [0x86, 0xdd] && dst_of(f).is_some_and(|d| answer[&d].is_some()))
        .expect("a routed IPv6 frame");
    let v4 = |ttl| v4_frame([192, 0, 2, 1], routed, ttl);
    let with = |mut f: Vec<u8>, at: usize, b: u8| {
        f[at] = b;
        f
    };
    let mut arp = vec![0xFF; 6];
    arp.extend_from_slice(&[2, 0, 0, 0, 0, 2, 8, 6]);
    arp.resize(60, 0);
    let mut vlan = v4(64);
    vlan.splice(12..12, [0x81, 0, 0, 7]);
    let crafted = vec![
        v4(1),                          // TTL 1: dropped
        v4(0),                          // TTL 0: dropped
        with(v6.clone(), 21, 1),        // hop limit 1: dropped
        with(v6.clone(), 21, 0),        // hop limit 0: dropped
        v4(2),                          // TTL 2: out with 1
        v4_frame(zero_src, routed, 64), // checksum 0x0000 after
        v4(255),
        with(v6.clone(), 21, 2),    // hop limit 2: out with 1
        with(v4(64), 14, 0x65),     // other: IPv4 type, version 6
        with(v4(64), 14, 0x44),     // other: IHL 4
        with(v4(64), 14, 0x4F),     // other: IHL 15, past the frame
        with(v4(64), 17, 10),       // other: total length 10
        with(v6.clone(), 14, 0x45), // other: IPv6 type, version 4
        v6[..53].to_vec(),          // other: IPv6 header cut short
        arp,                        // other
        vlan,                       // other: VLAN-tagged
        vec![2, 0, 0, 0, 0],        // other: short
        v4(64)[..30].to_vec(),      // other: IPv4 header cut short
    ];
    const CRAFTED_TTL: u64 = 4;
    const CRAFTED_OTHER: u64 = 10;
    append_frames(&pcap, &crafted);
    let input = frames(&pcap);
    let dsts: Vec<Option<IpAddr>> = input.iter().map(|f| dst_of(f)).collect();

    // Each engine, on the table and on the table with default routes
    // (rte_lpm and rte_lpm6 refuse a /0: the pipeline answers their misses
    // with it), where every miss becomes the /0's.
    let defaults = dir.join("table-defaults.txt");
    let mut text = std::fs::read_to_string(&table_path).expect("the table");
    text.push_str("0.0.0.0/0 default4\n::/0 default6\n");
    std::fs::write(&defaults, text).expect("write the table with defaults");
    let with_defaults: HashMap<IpAddr, Option<String>> = answer
        .iter()
        .map(|(a, v)| {
            let d = if a.is_ipv4() { "default4" } else { "default6" };
            (*a, Some(v.clone().unwrap_or_else(|| d.to_string())))
        })
        .collect();
    for (table, answer, name) in [
        (&table_path, &answer, "table"),
        (&defaults, &with_defaults, "table with /0s"),
    ] {
        let mut sent_by = Vec::new();
        for lpm in ["ipfib", "fib", "lpm"] {
            let out = dir.join(format!("out.{lpm}.pcap"));
            let nb = dir.join(format!("neighbours.{lpm}.txt"));
            let stdout = forward(
                &dir,
                &[
                    format!("--vdev=net_pcap0,rx_pcap={}", pcap.display()),
                    format!("--vdev=net_pcap1,tx_pcap={}", out.display()),
                ],
                &[
                    "--table",
                    &table.display().to_string(),
                    "--lpm",
                    lpm,
                    "--neighbours",
                    &nb.display().to_string(),
                ],
            );
            let line = stdout
                .lines()
                .find(|l| l.starts_with("forward "))
                .expect("the summary line");
            println!("{name}: {line}");
            let sent = frames(&out);
            let own = mac(line);
            assert_eq!(
                own[0] & 3,
                2,
                "the port's MAC is unicast and local: {own:02x?}"
            );
            let want = expect(&input, &dsts, answer, &neighbour_values(&nb, table), own);
            let what = format!("{name}, --lpm {lpm}");
            for (i, (got, want)) in sent.iter().zip(&want.sent).enumerate() {
                assert_eq!(got, want, "{what}: frame {i} sent");
            }
            assert_eq!(sent.len(), want.sent.len(), "{what}: frames sent");
            assert_eq!(field(line, "packets"), input.len() as u64, "{what}: {line}");
            assert_eq!(
                field(line, "forwarded"),
                sent.len() as u64,
                "{what}: {line}"
            );
            assert_eq!(field(line, "miss"), want.miss, "{what}: {line}");
            assert_eq!(field(line, "ttl"), want.ttl, "{what}: {line}");
            assert_eq!(field(line, "other"), want.other, "{what}: {line}");
            assert_eq!(
                (want.ttl, want.other),
                (CRAFTED_TTL, CRAFTED_OTHER),
                "{what}: the crafted frames"
            );
            if name == "table" {
                assert!(
                    want.miss > 1000 && sent.len() > 20_000,
                    "{what}: both kinds, many: {} misses, {} sent",
                    want.miss,
                    sent.len()
                );
            } else {
                assert_eq!(want.miss, 0, "{what}: no miss with /0s");
            }
            let v6 = sent.iter().filter(|g| g[12..14] == [0x86, 0xdd]).count();
            assert!(
                v6 > 5000 && sent.len() - v6 > 5000,
                "{what}: both families sent"
            );
            sent_by.push(sent);
        }
        // Neighbour ids come from the values in the same order for every
        // engine, so the frames are equal byte for byte.
        assert!(
            sent_by.windows(2).all(|w| w[0] == w[1]),
            "{name}: the engines agree"
        );
    }

    // --loop: the capture replayed round and round through 32 mbufs, after
    // a warm-up, over three passes. Every frame received is the capture's
    // next, so a pass of P packets holds R = P / n whole rounds and part of
    // one more: each count lies between R and R + 1 times the capture's.
    let n = input.len() as u64;
    let per_round = expect(&input, &dsts, &answer, &HashMap::new(), [0; 6]);
    for lpm in ["ipfib", "fib", "lpm"] {
        let stdout = forward(
            &dir,
            &[format!("--vdev=net_pcap0,rx_pcap={}", pcap.display())],
            &[
                "--table",
                &table_path.display().to_string(),
                "--lpm",
                lpm,
                "--loop",
                "--inflight",
                "32",
                "--warmup",
                "0.2",
                "--seconds",
                "0.4",
                "--passes",
                "3",
            ],
        );
        let lines: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with("forward "))
            .collect();
        assert_eq!(
            lines.len(),
            3,
            "--lpm {lpm} --loop: a line per pass: {stdout}"
        );
        for line in lines {
            println!("--loop: {line}");
            let packets = field(line, "packets");
            assert!(
                packets >= 2 * n,
                "--lpm {lpm} --loop: two rounds at least: {line}"
            );
            let rounds = packets / n;
            for (name, each) in [
                ("forwarded", per_round.sent.len() as u64),
                ("miss", per_round.miss),
                ("ttl", per_round.ttl),
                ("other", per_round.other),
                ("tx_full", 0),
            ] {
                let got = field(line, name);
                assert!(
                    (rounds * each..=(rounds + 1) * each).contains(&got),
                    "--lpm {lpm} --loop: {name} = {got}, not within {rounds} to {} rounds of {each}: {line}",
                    rounds + 1
                );
            }
        }
    }
}

/// Runs dpdk-forward (built in `dir`) with the test's EAL arguments, the
/// ports `vdevs` and the program's `args`; its stdout, on success.
fn forward(dir: &Path, vdevs: &[String], args: &[&str]) -> String {
    let o = Command::new(dir.join("dpdk-forward"))
        .args([
            "--no-huge",
            "--no-pci",
            "-m",
            "1024",
            "--no-shconf",
            "--no-telemetry",
            "--log-level=error",
            // rte_fib's and rte_fib6's AVX-512 lookups where the CPU has
            // them (EAL allows 256-bit vectors by default).
            "--force-max-simd-bitwidth=512",
            "-l",
            "0",
        ])
        .args(vdevs)
        .arg("--")
        .args(args)
        .output()
        .expect("run dpdk-forward");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "dpdk-forward {args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

/// What the pipeline must do with `input`: the frames it sends, in order,
/// and its drops.
struct Expected {
    sent: Vec<Vec<u8>>,
    miss: u64,
    ttl: u64,
    other: u64,
}

/// Follows every input frame: lookup (`answer`), then the TTL; a frame
/// sent gets the MAC of its value's neighbour (`macs`; zeros if absent),
/// the port's own (`own`) as source, its TTL or hop limit one lower and
/// the IPv4 checksum computed again, every other byte as it came.
fn expect(
    input: &[Vec<u8>],
    dsts: &[Option<IpAddr>],
    answer: &HashMap<IpAddr, Option<String>>,
    macs: &HashMap<String, [u8; 6]>,
    own: [u8; 6],
) -> Expected {
    let mut e = Expected {
        sent: Vec::new(),
        miss: 0,
        ttl: 0,
        other: 0,
    };
    for (f, dst) in input.iter().zip(dsts) {
        let Some(dst) = dst else {
            e.other += 1;
            continue;
        };
        let Some(value) = answer[dst].as_ref() else {
            e.miss += 1;
            continue;
        };
        let hop = if dst.is_ipv4() { 22 } else { 21 };
        if f[hop] <= 1 {
            e.ttl += 1;
            continue;
        }
        let mut g = f.clone();
        g[..6].copy_from_slice(&macs.get(value).copied().unwrap_or_default());
        g[6..12].copy_from_slice(&own);
        g[hop] -= 1;
        if dst.is_ipv4() {
            let c = ipv4_checksum(&g[14..34]);
            g[24..26].copy_from_slice(&c.to_be_bytes());
        }
        e.sent.push(g);
    }
    e
}

/// The neighbours file: value -> MAC. It must hold every distinct value
/// of `table` once, each with its own MAC 02:00:ID, ids 0 to count - 1
/// (so a program that sent every frame to one neighbour fails here).
fn neighbour_values(path: &Path, table: &Path) -> HashMap<String, [u8; 6]> {
    let map: HashMap<String, [u8; 6]> = std::fs::read_to_string(path)
        .expect("the neighbours file")
        .lines()
        .map(|l| {
            let (m, value) = l.split_once(' ').expect("MAC VALUE");
            (value.to_string(), parse_mac(m))
        })
        .collect();
    let values: BTreeSet<String> = std::fs::read_to_string(table)
        .expect("the table")
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .collect();
    assert_eq!(
        map.keys().cloned().collect::<BTreeSet<_>>(),
        values,
        "one neighbour per distinct value"
    );
    let ids: BTreeSet<u32> = map
        .values()
        .map(|m| {
            assert_eq!(m[..2], [2, 0], "02:00:ID: {m:02x?}");
            u32::from_be_bytes([m[2], m[3], m[4], m[5]])
        })
        .collect();
    assert_eq!(
        ids,
        (0..values.len() as u32).collect(),
        "ids 0 to count - 1, once each"
    );
    map
}

fn parse_mac(text: &str) -> [u8; 6] {
    let b: Vec<u8> = text
        .split(':')
        .map(|x| u8::from_str_radix(x, 16).expect("a MAC byte"))
        .collect();
    b.try_into().expect("6 bytes")
}

/// The summary line's `tx_mac`.
fn mac(line: &str) -> [u8; 6] {
    let m = line
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("tx_mac="))
        .unwrap_or_else(|| panic!("tx_mac= in {line:?}"));
    parse_mac(m)
}
