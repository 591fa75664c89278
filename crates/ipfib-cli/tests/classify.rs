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
        // Networks have no `other` direction (it belongs to none).
        for (i, d) in DIRS.iter().enumerate().take(3) {
            e[i] = pb(&n[d]);
        }
        assert!(n.get("other").is_none());
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
    assert_eq!(a[0]["sampled_packets"], 7996);
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
        let total: u64 = DIRS[..3]
            .iter()
            .map(|d| n[d]["packets"].as_u64().unwrap())
            .sum();
        *by_group
            .entry(n["hostgroup"].as_str().unwrap().into())
            .or_default() += total;
    }
    for g in doc["hostgroups"].as_array().unwrap() {
        let total: u64 = DIRS[..3]
            .iter()
            .map(|d| g[d]["packets"].as_u64().unwrap())
            .sum();
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

/// Like `packets`, with each packet's capture second.
fn timed_packets(path: &Path) -> Vec<(u64, IpAddr, IpAddr, u64)> {
    let f = std::fs::File::open(path).unwrap();
    let mut r = pcap_file::pcap::PcapReader::new(f).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        let Ok(s) = etherparse::LaxSlicedPacket::from_ethernet(&p.data) else {
            continue;
        };
        let (s, d) = match s.net {
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
        out.push((p.timestamp.as_secs(), s, d, u64::from(p.orig_len)));
    }
    out
}

/// Peaks and means per direction, of every network and of the totals,
/// from per-second counts made here (the capture spans 147 seconds).
#[test]
fn window_peaks_and_means_match_an_independent_count() {
    let Some(pcap) = data_file(DUAL) else { return };
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
    let pkts = timed_packets(&pcap);
    let first = pkts.iter().map(|p| p.0).min().unwrap();
    let last = pkts.iter().map(|p| p.0).max().unwrap();
    let span = last - first + 1;
    assert!(span > 100, "{span}");
    assert_eq!(doc["capture"]["windows"], span);
    // (network or "" for totals, direction) -> second -> [packets, bytes]
    let mut per: HashMap<(String, usize), BTreeMap<u64, [u64; 2]>> = HashMap::new();
    for &(t, s, d, len) in &pkts {
        let m = |a| brute(&nets, addr(a)).map(|i| nets[i].0.to_string());
        let (dir, net) = match (m(s), m(d)) {
            (None, Some(n)) => (0, Some(n)),
            (Some(n), None) => (1, Some(n)),
            (Some(_), Some(n)) => (2, Some(n)),
            (None, None) => (3, None),
        };
        for key in [Some(String::new()), net].into_iter().flatten() {
            let w = per.entry((key, dir)).or_default().entry(t).or_default();
            w[0] += 1;
            w[1] += len;
        }
    }
    let check = |v: &Value, key: &str, dir: usize| {
        let Some(w) = per.get(&(key.to_string(), dir)) else {
            assert_eq!(v["packets"], 0, "{key} {dir}");
            return;
        };
        let peak_p = w.values().map(|x| x[0]).max().unwrap();
        let peak_b = w.values().map(|x| x[1]).max().unwrap();
        let total_p: u64 = w.values().map(|x| x[0]).sum();
        let total_b: u64 = w.values().map(|x| x[1]).sum();
        assert_eq!(v["peak_pps"], peak_p, "{key} {dir}");
        assert_eq!(v["peak_bps"], peak_b * 8, "{key} {dir}");
        let mean = v["mean_pps"].as_f64().unwrap();
        assert!(
            (mean - total_p as f64 / span as f64).abs() < 1e-9,
            "{key} {dir}"
        );
        let mean_b = v["mean_bps"].as_f64().unwrap();
        assert!(
            (mean_b - (total_b * 8) as f64 / span as f64).abs() < 1e-6,
            "{key} {dir}"
        );
    };
    let mut checked = 0;
    for (dir, name) in DIRS.iter().enumerate() {
        check(&doc["totals"][name], "", dir);
        for n in doc["networks"].as_array().unwrap() {
            if let Some(v) = n.get(*name) {
                check(v, n["network"].as_str().unwrap(), dir);
                checked += 1;
            }
        }
    }
    assert!(checked >= 9, "{checked}");
    // Peaks differ from totals here: the windows are real.
    assert!(doc["totals"]["incoming"]["peak_pps"].as_u64().unwrap() < 7451 / 2);
}

/// A pcap (microseconds, Ethernet) of (second, src, dst, frame length).
fn write_pcap(path: &Path, frames: &[(u32, [u8; 4], [u8; 4], usize)]) {
    let mut v = Vec::new();
    v.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    v.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    v.extend_from_slice(&65535u32.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    for (i, &(sec, s, d, len)) in frames.iter().enumerate() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0]);
        f.extend_from_slice(&s);
        f.extend_from_slice(&d);
        f.resize(len.max(f.len()), 0);
        v.extend_from_slice(&sec.to_le_bytes());
        v.extend_from_slice(&((i % 1000) as u32 * 100).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(&f);
    }
    std::fs::write(path, v).unwrap();
}

/// Alerts are per host per window: a host over the threshold in one
/// window only alerts there; an Mbps threshold fires on bytes, not
/// packets; each alert names its own host's sources.
#[test]
fn alerts_are_per_host_per_window() {
    let dir = tempdir();
    let (nets_path, _) = networks_file(&["10.0.0.0/24 customers", "10.9.0.0/16 other"]);
    let a = [10, 0, 0, 1];
    let b = [10, 0, 0, 2];
    let c = [10, 9, 0, 3];
    let mut frames = Vec::new();
    // Second 100: A gets 50 small packets from 1.1.1.1 and 1.1.1.2.
    for i in 0..50 {
        frames.push((100, [1, 1, 1, 1 + (i % 2) as u8], a, 64));
    }
    // Second 101: A 5 packets; B 60 packets of 1500 bytes (0.72 Mbps)
    // from 2.2.2.2 (40) and 3.3.3.3 (20); C (hostgroup other) 45.
    for _ in 0..5 {
        frames.push((101, [1, 1, 1, 1], a, 64));
    }
    for i in 0..60 {
        let s = if i % 3 == 2 {
            [3, 3, 3, 3]
        } else {
            [2, 2, 2, 2]
        };
        frames.push((101, s, b, 1500));
    }
    for _ in 0..45 {
        frames.push((101, [4, 4, 4, 4], c, 64));
    }
    let pcap = dir.join("a.pcap");
    write_pcap(&pcap, &frames);
    let (code, doc, out) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--threshold",
        "customers:incoming_pps>=40",
        "--threshold",
        "incoming_mbps>=0.5",
    ]);
    assert_eq!(code, 0, "{out}");
    let alerts = doc["alerts"].as_array().unwrap();
    let got: Vec<(u64, &str, &str, u64)> = alerts
        .iter()
        .map(|x| {
            (
                x["window"].as_u64().unwrap(),
                x["host"].as_str().unwrap(),
                x["threshold"].as_str().unwrap(),
                x["incoming_pps"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (100, "10.0.0.1", "customers:incoming_pps>=40", 50),
            (101, "10.0.0.2", "customers:incoming_pps>=40", 60),
        ],
        "{alerts:?}"
    );
    assert_eq!(alerts[1]["incoming_bps"], 60 * 1500 * 8);
    let srcs = alerts[1]["top_sources"].as_array().unwrap();
    assert_eq!(srcs.len(), 2);
    assert_eq!(
        (srcs[0]["address"].as_str(), srcs[0]["packets"].as_u64()),
        (Some("2.2.2.2"), Some(40))
    );
    assert_eq!(
        (srcs[1]["address"].as_str(), srcs[1]["packets"].as_u64()),
        (Some("3.3.3.3"), Some(20))
    );
    let srcs = alerts[0]["top_sources"].as_array().unwrap();
    assert_eq!(srcs.len(), 2);
    assert_eq!(srcs[0]["packets"], 25);
    // The Mbps threshold alone: only B, only in its window.
    let (_, doc, _) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--threshold",
        "incoming_mbps>=0.5",
    ]);
    let alerts = doc["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0]["host"], "10.0.0.2");
    assert_eq!(alerts[0]["window"], 101);
    // Without a hostgroup: C (45 pps) alerts too.
    let (_, doc, _) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--threshold",
        "incoming_pps>=45",
    ]);
    let hosts: Vec<&str> = doc["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, vec!["10.0.0.1", "10.0.0.2", "10.9.0.3"]);
    // Peaks per host: A's peak is its first window.
    let top = doc["top_hosts_pps"].as_array().unwrap();
    assert_eq!(top[0]["host"], "10.0.0.2");
    assert_eq!(top[0]["peak_pps"], 60);
    let a_row = top.iter().find(|h| h["host"] == "10.0.0.1").unwrap();
    assert_eq!(
        (
            a_row["peak_pps"].as_u64(),
            a_row["incoming_packets"].as_u64()
        ),
        (Some(50), Some(55))
    );
}

/// One far-future timestamp (a bad record) does not swallow the windows
/// after it: a jump back in time starts a new stretch of windows, and the
/// means divide by the stretches' seconds only.
#[test]
fn a_bad_timestamp_does_not_merge_windows() {
    let dir = tempdir();
    let (nets_path, _) = networks_file(&["10.0.0.0/24 customers"]);
    let mut frames = vec![(4_000_000_000u32, [1, 1, 1, 1], [10, 0, 0, 1], 64)];
    for sec in 100..110 {
        for _ in 0..100 {
            frames.push((sec, [1, 1, 1, 1], [10, 0, 0, 1], 64));
        }
    }
    let pcap = dir.join("t.pcap");
    write_pcap(&pcap, &frames);
    let (code, doc, out) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--threshold",
        "incoming_pps>=1000",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(doc["capture"]["time_jumps"], 1);
    assert_eq!(doc["capture"]["windows"], 11);
    let inc = &doc["totals"]["incoming"];
    assert_eq!(inc["packets"], 1001);
    assert_eq!(inc["peak_pps"], 100);
    assert!((inc["mean_pps"].as_f64().unwrap() - 1001.0 / 11.0).abs() < 1e-9);
    assert_eq!(doc["alerts"].as_array().unwrap().len(), 0);
    // Reordering within a minute stays in the window in progress.
    let mut frames = Vec::new();
    for sec in [200u32, 201, 100, 201, 202] {
        frames.push((sec, [1, 1, 1, 1], [10, 0, 0, 1], 64));
    }
    frames.insert(2, (190, [1, 1, 1, 1], [10, 0, 0, 1], 64));
    write_pcap(&pcap, &frames);
    let (_, doc, _) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    // 200, 201 (+190, 11 s late: reordered), then 100 jumps back: a new
    // stretch 100..202 whose own seconds count.
    assert_eq!(doc["capture"]["time_jumps"], 1);
    assert_eq!(doc["capture"]["windows"], 2 + 103);
    assert_eq!(doc["totals"]["incoming"]["peak_pps"], 2);
}

/// One victim flooding the alert sample leaves room for another's
/// sources; a file with no whole header cannot run (exit 2).
#[test]
fn every_alert_has_its_own_sources_and_headers_must_be_whole() {
    let dir = tempdir();
    let (nets_path, _) = networks_file(&["10.0.0.0/24 customers"]);
    let mut frames = Vec::new();
    for i in 0..70_000u32 {
        frames.push((7, [1, 1, (i >> 8) as u8, i as u8], [10, 0, 0, 1], 64));
    }
    for _ in 0..10 {
        frames.push((7, [9, 9, 9, 9], [10, 0, 0, 2], 64));
    }
    let pcap = dir.join("two.pcap");
    write_pcap(&pcap, &frames);
    let (code, doc, out) = run_json(&[
        "classify",
        "--networks",
        nets_path.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--threshold",
        "incoming_pps>=10",
    ]);
    assert_eq!(code, 0, "{out}");
    let a = doc["alerts"].as_array().unwrap();
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["host"], "10.0.0.1");
    assert_eq!(a[0]["incoming_pps"], 70_000);
    assert_eq!(a[0]["sampled_packets"], 65_536);
    assert_eq!(a[1]["host"], "10.0.0.2");
    assert_eq!(a[1]["sampled_packets"], 10);
    assert_eq!(a[1]["top_sources"][0]["address"], "9.9.9.9");
    assert_eq!(a[1]["top_sources"][0]["packets"], 10);
    for (name, bytes) in [
        ("short.pcap", &[0xd4u8, 0xc3, 0xb2, 0xa1, 2, 0][..]),
        ("magic.pcapng", &[0x0a, 0x0d, 0x0d, 0x0a][..]),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let r = ipfib(
            &[
                "classify",
                "--networks",
                nets_path.to_str().unwrap(),
                "--pcap",
                p.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
    }
}

/// `--threads N`: the report, the alerts and the window lines are one
/// thread's, byte for byte but the elapsed time, on both captures with
/// every other route of the RouteViews tables as networks (so traffic
/// goes every direction and hosts cross the threshold in many windows).
#[test]
fn threads_count_what_one_thread_counts() {
    let (Some(ddos), Some(dual), Some(rv4), Some(rv6)) = (
        data_file(DDOS),
        data_file(DUAL),
        data_file("routeviews-rv2-20260730-1400.pfx2as.txt.gz"),
        data_file("routeviews-rv6-20260730-1400.pfx2as.txt.gz"),
    ) else {
        return;
    };
    // `--threads` is capped at the CPU count: on one CPU every run below
    // would be the one-thread count, compared with itself.
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "one CPU: CI=true requires --threads to be tested"
        );
        eprintln!("SKIPPED: one CPU, so --threads would not fan out");
        return;
    }
    let dir = tempdir();
    let mut half = String::new();
    let mut k = 0;
    for t in [&rv4, &rv6] {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(t).unwrap()),
            &mut text,
        )
        .unwrap();
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            k += 1;
            if k % 2 == 0 {
                half += l;
                half.push('\n');
            }
        }
    }
    let nets = dir.join("half.txt");
    std::fs::write(&nets, half).unwrap();
    for (pcap, min_alerts) in [(&ddos, 0), (&dual, 100)] {
        let run = |threads: &str| {
            let (alerts, windows) = (dir.join("alerts.jsonl"), dir.join("windows.jsonl"));
            let r = ipfib(
                &[
                    "classify",
                    "--networks",
                    nets.to_str().unwrap(),
                    "--pcap",
                    pcap.to_str().unwrap(),
                    "--threads",
                    threads,
                    "--top",
                    "1000",
                    "--threshold",
                    "incoming_pps>=3",
                    "--json",
                    "-",
                    "--alerts",
                    alerts.to_str().unwrap(),
                    "--windows",
                    windows.to_str().unwrap(),
                ],
                None,
            );
            assert_eq!(r.code, 0, "{}", r.stderr);
            let mut doc: Value = serde_json::from_str(&r.stdout).unwrap();
            doc["capture"]["seconds"] = Value::Null;
            (
                doc,
                std::fs::read_to_string(alerts).unwrap(),
                std::fs::read_to_string(windows).unwrap(),
            )
        };
        let one = run("1");
        assert!(one.1.lines().count() >= min_alerts, "{}", pcap.display());
        assert!(one.0["networks"].as_array().unwrap().len() > 50);
        for threads in ["2", "0"] {
            let many = run(threads);
            assert!(
                many.0 == one.0,
                "{}: --threads {threads}: the reports differ",
                pcap.display()
            );
            assert_eq!(
                many.1,
                one.1,
                "{}: --threads {threads}: alerts",
                pcap.display()
            );
            assert_eq!(
                many.2,
                one.2,
                "{}: --threads {threads}: windows",
                pcap.display()
            );
        }
    }
}
