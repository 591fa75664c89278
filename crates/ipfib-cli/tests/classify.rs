//! `ipfib classify` on the real captures in ../shared/data/traces, checked
//! against an independent count: the capture read by the `pcap-file`
//! crate, packets decoded by `etherparse`, networks matched by brute force
//! (small tables) or by the route table's own lookup (the RouteViews
//! tables), directions and per-network sums computed here.

mod common;

use common::{data_file, ipfib};
use ipfib::prefix::{AnyAddr, AnyPrefix, HostBits};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::Path;

const DDOS: &str = "traces/stopddos-amp.TCP.reflection.SYNACK-20210605.pcap";
const DUAL: &str = "traces/pcapplusplus-tls2-dualstack-20210105.pcap";

/// (src, dst, wire length) of every IP packet, by pcap-file + etherparse.
fn packets(path: &Path) -> Vec<(IpAddr, IpAddr, u64)> {
    let f = std::fs::File::open(path).unwrap();
    let mut r = pcap_file::pcap::PcapReader::new(f).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        let Ok(s) = etherparse::LaxSlicedPacket::from_ethernet(&p.data) else {
            continue;
        };
        let addrs = match s.net {
            Some(etherparse::LaxNetSlice::Ipv4(v)) => (
                IpAddr::V4(v.header().source_addr()),
                IpAddr::V4(v.header().destination_addr()),
            ),
            Some(etherparse::LaxNetSlice::Ipv6(v)) => (
                IpAddr::V6(v.header().source_addr()),
                IpAddr::V6(v.header().destination_addr()),
            ),
            _ => continue,
        };
        out.push((addrs.0, addrs.1, u64::from(p.orig_len)));
    }
    out
}

fn addr(ip: IpAddr) -> AnyAddr {
    // Packets are looked up as the wire carries them: no unmapping.
    match ip {
        IpAddr::V4(a) => AnyAddr::V4(u32::from(a)),
        IpAddr::V6(a) => AnyAddr::V6(u128::from(a)),
    }
}

/// Longest match by brute force over a short list.
fn brute(nets: &[(AnyPrefix, String)], a: AnyAddr) -> Option<usize> {
    let mut best: Option<(u8, usize)> = None;
    for (i, (p, _)) in nets.iter().enumerate() {
        let hit = match (p, a) {
            (AnyPrefix::V4(p), AnyAddr::V4(x)) => p.contains(x),
            (AnyPrefix::V6(p), AnyAddr::V6(x)) => p.contains(x),
            _ => false,
        };
        if hit && best.is_none_or(|(l, _)| p.len() > l) {
            best = Some((p.len(), i));
        }
    }
    best.map(|b| b.1)
}

/// Expected per-network [packets, bytes] per direction, and totals.
type Counts = BTreeMap<String, [[u64; 2]; 4]>;

fn expect(
    pkts: &[(IpAddr, IpAddr, u64)],
    matcher: impl Fn(AnyAddr) -> Option<String>,
) -> (Counts, [[u64; 2]; 4]) {
    let mut nets = Counts::new();
    let mut totals = [[0u64; 2]; 4];
    for &(s, d, len) in pkts {
        let (sm, dm) = (matcher(addr(s)), matcher(addr(d)));
        let (dir, net) = match (sm, dm) {
            (None, Some(n)) => (0, Some(n)),
            (Some(n), None) => (1, Some(n)),
            (Some(_), Some(n)) => (2, Some(n)),
            (None, None) => (3, None),
        };
        totals[dir][0] += 1;
        totals[dir][1] += len;
        if let Some(n) = net {
            let e = nets.entry(n).or_default();
            e[dir][0] += 1;
            e[dir][1] += len;
        }
    }
    (nets, totals)
}

const DIRS: [&str; 4] = ["incoming", "outgoing", "internal", "other"];

fn got(doc: &Value) -> (Counts, [[u64; 2]; 4]) {
    let pb = |v: &Value| [v["packets"].as_u64().unwrap(), v["bytes"].as_u64().unwrap()];
    let mut nets = Counts::new();
    for n in doc["networks"].as_array().unwrap() {
        let mut e = [[0; 2]; 4];
        for (i, d) in DIRS.iter().enumerate() {
            e[i] = pb(&n[d]);
        }
        nets.insert(n["network"].as_str().unwrap().to_string(), e);
    }
    let mut totals = [[0; 2]; 4];
    for (i, d) in DIRS.iter().enumerate() {
        totals[i] = pb(&doc["totals"][d]);
    }
    (nets, totals)
}

fn run_json(args: &[&str]) -> (i32, Value, String) {
    let dir = tempdir();
    let out = dir.join("report.json");
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.push("--json".into());
    a.push(out.display().to_string());
    let r = ipfib(&a, None);
    let doc = std::fs::read_to_string(&out)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    (r.code, doc, r.stdout + &r.stderr)
}

fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "ipfib-classify-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn networks_file(lines: &[&str]) -> (std::path::PathBuf, Vec<(AnyPrefix, String)>) {
    let path = tempdir().join("nets.txt");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let nets = lines
        .iter()
        .map(|l| {
            let (p, v) = l.split_once(' ').unwrap();
            (
                AnyPrefix::parse(p, HostBits::Reject).unwrap(),
                v.to_string(),
            )
        })
        .collect();
    (path, nets)
}

#[test]
fn ddos_capture_flags_the_victim_with_the_reflectors() {
    let Some(pcap) = data_file(DDOS) else { return };
    // The victim's /24, a reflector's network (172.99.233.20 sent the most)
    // and nested prefixes: the counts must go to the longest match.
    let (nets_path, nets) = networks_file(&[
        "10.10.10.0/24 victims",
        "10.0.0.0/8 rfc1918",
        "0.0.0.0/0 everything-v4",
        "172.99.0.0/16 reflectors",
        "172.99.233.0/24 reflectors-24",
    ]);
    let (code, doc, out) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--threshold",
        "victims:incoming_pps>=5000",
        "--threshold",
        "incoming_mbps>=1000",
    ]);
    assert_eq!(code, 0, "{out}");
    let pkts = packets(&pcap);
    assert_eq!(pkts.len(), 7996);
    let (want_nets, want_totals) =
        expect(&pkts, |a| brute(&nets, a).map(|i| nets[i].0.to_string()));
    let (got_nets, got_totals) = got(&doc);
    assert_eq!(got_totals, want_totals);
    assert_eq!(got_nets, want_nets);
    assert_eq!(doc["capture"]["frames"], 8000);
    assert_eq!(doc["skipped"]["non_ip"], 4);
    assert_eq!(doc["capture"]["damaged"], false);
    // With 0.0.0.0/0 a network, every packet is internal here.
    assert_eq!(want_totals[2][0], 7996);

    // Without the catch-all: the victim is attacked from outside.
    let (nets_path, nets) = networks_file(&["10.10.10.0/24 victims", "192.0.2.0/24 lab"]);
    let alerts = tempdir().join("alerts.jsonl");
    let (code, doc, out) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--threshold",
        "lab:incoming_pps>=1",
        "--threshold",
        "victims:incoming_pps>=5000",
        "--alerts",
        alerts.to_str().unwrap(),
        "--top",
        "20",
    ]);
    assert_eq!(code, 0, "{out}");
    let (want_nets, want_totals) =
        expect(&pkts, |a| brute(&nets, a).map(|i| nets[i].0.to_string()));
    assert_eq!(got(&doc), (want_nets, want_totals));
    assert_eq!(want_totals[0][0], 7996);
    // Sources by packets, counted here.
    let mut by_src: HashMap<IpAddr, (u64, u64)> = HashMap::new();
    for &(s, _, len) in &pkts {
        let e = by_src.entry(s).or_default();
        e.0 += 1;
        e.1 += len;
    }
    assert_eq!(by_src.len(), 7055);
    let top = doc["top_sources"].as_array().unwrap();
    assert_eq!(top.len(), 20);
    let mut want_top: Vec<(u64, u64)> = by_src.values().copied().collect();
    want_top.sort_by(|a, b| b.cmp(a));
    for (i, t) in top.iter().enumerate() {
        let ip: IpAddr = t["address"].as_str().unwrap().parse().unwrap();
        let (p, b) = by_src[&ip];
        assert_eq!(
            (t["packets"].as_u64().unwrap(), t["bytes"].as_u64().unwrap()),
            (p, b)
        );
        assert_eq!(p, want_top[i].0, "rank {i}");
    }
    assert_eq!(top[0]["address"], "172.99.233.20");
    // One alert: the victim, its window, its top reflectors.
    let a = doc["alerts"].as_array().unwrap();
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0]["host"], "10.10.10.10");
    assert_eq!(a[0]["hostgroup"], "victims");
    assert_eq!(a[0]["network"], "10.10.10.0/24");
    assert_eq!(a[0]["incoming_pps"], 7996);
    assert_eq!(a[0]["threshold"], "victims:incoming_pps>=5000");
    let srcs = a[0]["top_sources"].as_array().unwrap();
    assert_eq!(srcs[0]["address"], "172.99.233.20");
    assert_eq!(
        srcs[0]["packets"],
        by_src[&"172.99.233.20".parse::<IpAddr>().unwrap()].0
    );
    assert_eq!(srcs[1]["address"], "216.223.207.13");
    // The same alert streamed as a JSON line.
    let lines = std::fs::read_to_string(&alerts).unwrap();
    let streamed: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(streamed, *a);
    // The host list: one host, all of it.
    assert_eq!(doc["top_hosts_pps"][0]["host"], "10.10.10.10");
    assert_eq!(doc["top_hosts_pps"][0]["incoming_packets"], 7996);
    assert_eq!(doc["top_hosts_pps"][0]["peak_pps"], 7996);
    assert_eq!(doc["hostgroups"][0]["hostgroup"], "victims");
    assert_eq!(doc["hostgroups"][0]["incoming"]["packets"], 7996);

    // A threshold nobody reaches raises nothing.
    let (code, doc, _) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--threshold",
        "incoming_pps>=8000",
    ]);
    assert_eq!(code, 0);
    assert_eq!(doc["alerts"].as_array().unwrap().len(), 0);
}

#[test]
fn dual_stack_capture_against_routeviews_tables() {
    let (Some(pcap), Some(rv4), Some(rv6)) = (
        data_file(DUAL),
        data_file("routeviews-rv2-20260730-1400.pfx2as.txt.gz"),
        data_file("routeviews-rv6-20260730-1400.pfx2as.txt.gz"),
    ) else {
        return;
    };
    let pkts = packets(&pcap);
    assert_eq!(pkts.len(), 7451);
    // Small networks: the desktop's /24 and /64, by brute force.
    let (nets_path, nets) = networks_file(&[
        "192.168.0.0/24 home",
        "2601:647:4b02:1d20::/64 home",
        "2620:1ec:c11::/48 cdn",
    ]);
    let (code, doc, out) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let want = expect(&pkts, |a| brute(&nets, a).map(|i| nets[i].0.to_string()));
    assert_eq!(got(&doc), want);
    assert!(want.1[0][0] > 1000 && want.1[1][0] > 1000 && want.1[2][0] > 100);
    // Hostgroups sum their networks.
    let home = doc["hostgroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["hostgroup"] == "home")
        .unwrap();
    let home_in: u64 = want
        .0
        .iter()
        .filter(|(k, _)| !k.starts_with("2620"))
        .map(|(_, v)| v[0][0])
        .sum();
    assert_eq!(home["incoming"]["packets"].as_u64().unwrap(), home_in);

    // The full RouteViews tables as networks (hostgroup: origin AS), both
    // families in one file: the route table's own lookup is the oracle.
    let dir = tempdir();
    let both = dir.join("rv.txt");
    let mut text = String::new();
    for f in [&rv4, &rv6] {
        let mut gz = flate2::read::GzDecoder::new(std::fs::File::open(f).unwrap());
        let mut s = String::new();
        std::io::Read::read_to_string(&mut gz, &mut s).unwrap();
        for line in s.lines().filter(|l| !l.starts_with('#')) {
            // `PREFIX/LEN ASN` (reformatted pfx2as).
            let mut it = line.split_whitespace();
            let (Some(p), Some(asn)) = (it.next(), it.next()) else {
                continue;
            };
            text.push_str(&format!("{p} AS{asn}\n"));
        }
    }
    assert!(text.lines().count() > 1_000_000);
    std::fs::write(&both, &text).unwrap();
    let mut table = ipfib::table::Table::new();
    for line in text.lines() {
        let (p, v) = line.split_once(' ').unwrap();
        table
            .insert(
                AnyPrefix::parse(p, HostBits::Reject).unwrap(),
                v.to_string(),
            )
            .unwrap();
    }
    let (code, doc, out) = run_json(&[
        "classify",
        "--networks",
        both.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let want = expect(&pkts, |a| table.lookup(a).map(|(p, _)| p.to_string()));
    assert_eq!(got(&doc), want);
    // Private 192.168.0.17 is in no RouteViews route: its traffic is
    // incoming and outgoing; IPv6 traffic is global on both ends.
    assert!(
        want.1[0][0] > 0 && want.1[1][0] > 0 && want.1[2][0] > 0,
        "{:?}",
        want.1
    );
    // Hostgroups are origin ASes: their sums equal their networks'.
    let mut by_group: HashMap<String, u64> = HashMap::new();
    for n in doc["networks"].as_array().unwrap() {
        let total: u64 = DIRS.iter().map(|d| n[d]["packets"].as_u64().unwrap()).sum();
        *by_group
            .entry(n["hostgroup"].as_str().unwrap().into())
            .or_default() += total;
    }
    for g in doc["hostgroups"].as_array().unwrap() {
        let total: u64 = DIRS.iter().map(|d| g[d]["packets"].as_u64().unwrap()).sum();
        assert_eq!(by_group[g["hostgroup"].as_str().unwrap()], total);
    }
}

/// pcap records: (offset of the record header, its total length).
fn records(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut at = 24;
    let mut v = Vec::new();
    while at + 16 <= bytes.len() {
        let incl = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        v.push((at, 16 + incl));
        at += 16 + incl;
    }
    v
}

#[test]
fn damaged_capture_counts_what_is_complete_and_names_the_offset() {
    let Some(pcap) = data_file(DDOS) else { return };
    let bytes = std::fs::read(&pcap).unwrap();
    let recs = records(&bytes);
    assert_eq!(recs.len(), 8000);
    let (nets_path, _) = networks_file(&["10.10.10.0/24 victims"]);
    let dir = tempdir();
    // Cut inside record 5000's data.
    let (at, len) = recs[5000];
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &bytes[..at + len / 2]).unwrap();
    let (code, doc, out) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        cut.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!("damaged at byte offset {at}")),
        "{out}"
    );
    assert_eq!(doc["capture"]["damaged"], true);
    assert_eq!(doc["capture"]["damage_offset"], at as u64);
    assert_eq!(doc["capture"]["frames"], 5000);
    // A record header claiming an absurd length: stops there too.
    let mut bad = bytes.clone();
    let (at2, _) = recs[100];
    bad[at2 + 8..at2 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad_path = dir.join("bad.pcap");
    std::fs::write(&bad_path, &bad).unwrap();
    let (code, doc, _) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        bad_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert_eq!(doc["capture"]["damage_offset"], at2 as u64);
    assert_eq!(doc["capture"]["frames"], 100);
    // Not a capture at all: exit 2, naming the file.
    let r = ipfib(
        &[
            "classify",
            "--networks",
            nets_path.to_str().unwrap(),
            "--pcap",
            nets_path.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("not a pcap or pcapng file"),
        "{}",
        r.stderr
    );
    // A bad threshold: exit 2 with the syntax.
    let r = ipfib(
        &[
            "classify",
            "--networks",
            nets_path.to_str().unwrap(),
            "--pcap",
            pcap.to_str().unwrap(),
            "--threshold",
            "incoming_pps>x",
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("incoming_pps>=N"), "{}", r.stderr);
}

/// The same capture rewritten as pcapng (nanosecond interface, one
/// statistics block between packets) and with 802.1Q tags on every
/// frame, counts the same.
#[test]
fn pcapng_and_vlan_forms_count_the_same() {
    let Some(pcap) = data_file(DUAL) else { return };
    let bytes = std::fs::read(&pcap).unwrap();
    let (nets_path, _) = networks_file(&["192.168.0.0/24 home", "2601:647:4b02:1d20::/64 home"]);
    let base = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    assert_eq!(base.0, 0);
    let block = |t: u32, body: &[u8]| {
        let mut body = body.to_vec();
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let len = (body.len() + 12) as u32;
        let mut v = t.to_le_bytes().to_vec();
        v.extend_from_slice(&len.to_le_bytes());
        v.extend_from_slice(&body);
        v.extend_from_slice(&len.to_le_bytes());
        v
    };
    let mut ng = block(
        0x0a0d0d0a,
        &[&0x1a2b3c4du32.to_le_bytes()[..], &[1, 0, 0, 0], &[0xff; 8]].concat(),
    );
    // Interface: Ethernet, if_tsresol = 9 (nanoseconds).
    ng.extend(block(
        1,
        &[
            &[1u8, 0, 0, 0][..],
            &0u32.to_le_bytes(),
            &[9, 0, 1, 0, 9, 0, 0, 0],
            &[0; 4],
        ]
        .concat(),
    ));
    let mut vlan = bytes[..24].to_vec();
    for (i, (at, len)) in records(&bytes).into_iter().enumerate() {
        let h = &bytes[at..at + 16];
        let sec = u64::from(u32::from_le_bytes(h[0..4].try_into().unwrap()));
        let usec = u64::from(u32::from_le_bytes(h[4..8].try_into().unwrap()));
        let orig = u32::from_le_bytes(h[12..16].try_into().unwrap());
        let data = &bytes[at + 16..at + len];
        let ts = sec * 1_000_000_000 + usec * 1000;
        let mut epb = 0u32.to_le_bytes().to_vec();
        epb.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ts as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&orig.to_le_bytes());
        epb.extend_from_slice(data);
        ng.extend(block(6, &epb));
        if i == 10 {
            ng.extend(block(5, &[0; 12]));
        }
        // The VLAN form: a tag after the MAC addresses, 4 bytes longer.
        let mut tagged = data[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x2a]);
        tagged.extend_from_slice(&data[12..]);
        vlan.extend_from_slice(&h[..8]);
        vlan.extend_from_slice(&(tagged.len() as u32).to_le_bytes());
        vlan.extend_from_slice(&(orig + 4).to_le_bytes());
        vlan.extend_from_slice(&tagged);
    }
    let dir = tempdir();
    let ng_path = dir.join("c.pcapng");
    std::fs::write(&ng_path, &ng).unwrap();
    let r = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        ng_path.to_str().unwrap(),
    ]);
    assert_eq!(r.0, 0, "{}", r.2);
    assert_eq!(r.1["capture"]["format"], "pcapng");
    for key in [
        "totals",
        "networks",
        "hostgroups",
        "top_sources",
        "top_hosts_pps",
        "skipped",
    ] {
        assert_eq!(r.1[key], base.1[key], "{key}");
    }
    assert_eq!(r.1["capture"]["windows"], base.1["capture"]["windows"]);
    let vlan_path = dir.join("v.pcap");
    std::fs::write(&vlan_path, &vlan).unwrap();
    let r = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        vlan_path.to_str().unwrap(),
    ]);
    assert_eq!(r.0, 0);
    // Same packets; every frame 4 bytes longer.
    let (gn, gt) = got(&r.1);
    let (bn, bt) = got(&base.1);
    assert_eq!(gn.keys().collect::<Vec<_>>(), bn.keys().collect::<Vec<_>>());
    for d in 0..4 {
        assert_eq!(gt[d][0], bt[d][0]);
        assert_eq!(gt[d][1], bt[d][1] + 4 * bt[d][0]);
    }
}
