//! Views of MRT RIB dumps for the MRT tests: every route as one line
//! `PEER AS PREFIX id=PATH_ID path=SEGMENTS nh=NEXT_HOP comm=.. large=..
//! origin=.. med=.. lp=..`, so that different readers can be compared as
//! sorted lists of lines:
//! - [`rib_lines`]: what a [`Rib`] holds;
//! - [`bgpkit_record_lines`]: bgpkit-parser's record iterator (peer table
//!   and RIB entries with their path ids and attributes as sent);
//! - [`bgpkit_elem_lines`]: bgpkit-parser's elem view (no path ids, and a
//!   missing MED or LOCAL_PREF shows as 0);
//! - [`mrtparse_lines`]: Python's mrtparse (PyPI), which shares no code
//!   with bgpkit-parser or ours.
//!
//! Addresses are written IPv4 dotted, IPv6 exploded (eight groups of four
//! hex digits), so the Rust and Python sides spell them alike.

#![allow(dead_code)]

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use bgpkit_parser::models::{
    AsPathSegment, AttributeValue, Attributes, Community, MetaCommunity, MrtMessage,
    TableDumpV2Message,
};
use bgpkit_parser::BgpkitParser;
use ipfib::prefix::{AnyPrefix, HostBits};
use ipfib_rib::attrs::{AsPath, AttrSet};
use ipfib_rib::Rib;

/// `../shared/data/NAME` beside the project, or `None` (with a SKIPPED
/// line) when it is missing; with CI=true a missing file fails the test.
pub fn data_file(name: &str) -> Option<PathBuf> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data"));
    let path = dir.join(name);
    if path.exists() {
        return Some(path);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{} is missing (CI=true)", path.display());
    }
    println!("SKIPPED: {} is missing", path.display());
    None
}

/// A scratch file path, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        Scratch(std::env::temp_dir().join(format!(
            "ipfib-rib-{tag}-{}-{}.mrt",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        )))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn addr(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => a
            .segments()
            .iter()
            .map(|s| format!("{s:04x}"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

fn prefix_text(p: &AnyPrefix) -> String {
    match p {
        AnyPrefix::V4(q) => format!("{}/{}", addr(IpAddr::from(q.addr().to_be_bytes())), q.len()),
        AnyPrefix::V6(q) => format!("{}/{}", addr(IpAddr::from(q.addr().to_be_bytes())), q.len()),
    }
}

fn net_text(addr: IpAddr, len: u8) -> String {
    prefix_text(&AnyPrefix::from_ip(addr, len, HostBits::Mask).unwrap())
}

/// One route's line. `path` is in [`AsPath`]'s words.
#[allow(clippy::too_many_arguments)]
pub fn line(
    peer: IpAddr,
    asn: u32,
    prefix: &str,
    path_id: u32,
    path: &[u32],
    next_hop: Option<IpAddr>,
    communities: &[u32],
    large: &[[u32; 3]],
    origin: u8,
    med: Option<u32>,
    local_pref: Option<u32>,
) -> String {
    let segs: Vec<String> = AsPath(path.into())
        .segments()
        .map(|s| {
            let asns: Vec<String> = s.asns.iter().map(u32::to_string).collect();
            format!("{}:{}", s.kind, asns.join(","))
        })
        .collect();
    let opt = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
    let comm: Vec<String> = communities.iter().map(u32::to_string).collect();
    let large: Vec<String> = large
        .iter()
        .map(|l| format!("{}:{}:{}", l[0], l[1], l[2]))
        .collect();
    format!(
        "{} AS{asn} {prefix} id={path_id} path={} nh={} comm={} large={} origin={origin} med={} lp={}",
        addr(peer),
        segs.join(" "),
        next_hop.map_or("-".to_string(), addr),
        comm.join(","),
        large.join(","),
        opt(med),
        opt(local_pref),
    )
}

fn attr_line(
    peer: IpAddr,
    asn: u32,
    prefix: &str,
    path_id: u32,
    a: &AttrSet,
    zero: bool,
) -> String {
    let z = |v: Option<u32>| if zero { Some(v.unwrap_or(0)) } else { v };
    line(
        peer,
        asn,
        prefix,
        path_id,
        &a.as_path.0,
        a.next_hop,
        &a.communities,
        &a.large_communities,
        a.origin as u8,
        z(a.med),
        z(a.local_pref),
    )
}

/// Every live route of `rib`, sorted. `missing_as_zero`: show a missing
/// MED / LOCAL_PREF as 0 (to compare with bgpkit-parser's elem view).
pub fn rib_lines(rib: &Rib, missing_as_zero: bool) -> Vec<String> {
    let mut prefixes = Vec::new();
    rib.for_each_prefix(|r| prefixes.push(r.prefix));
    let mut out = Vec::new();
    for p in prefixes {
        let text = prefix_text(&p);
        for r in rib.routes(&p) {
            out.push(attr_line(
                r.peer.key.address,
                r.peer.key.asn,
                &text,
                r.path_id,
                &r.attrs,
                missing_as_zero,
            ));
        }
    }
    out.sort_unstable();
    out
}

fn words(segments: &mut dyn Iterator<Item = &AsPathSegment>) -> Vec<u32> {
    let mut out = Vec::new();
    for s in segments {
        let (kind, asns) = match s {
            AsPathSegment::AsSequence(v) => (2u32, v),
            AsPathSegment::AsSet(v) => (1, v),
            AsPathSegment::ConfedSequence(v) => (3, v),
            AsPathSegment::ConfedSet(v) => (4, v),
        };
        out.push((kind << 16) | asns.len() as u32);
        out.extend(asns.iter().map(|a| a.to_u32()));
    }
    out
}

fn community(c: &Community) -> u32 {
    match c {
        Community::NoExport => 0xFFFF_FF01,
        Community::NoAdvertise => 0xFFFF_FF02,
        Community::NoExportSubConfed => 0xFFFF_FF03,
        Community::Custom(asn, v) => (asn.to_u32() << 16) | u32::from(*v),
    }
}

/// A RIB entry's line from bgpkit-parser's attributes, read here
/// independently of the loader: AS_PATH as sent (TABLE_DUMP_V2 carries
/// 4-byte ASNs), next hop from MP_REACH_NLRI else NEXT_HOP.
fn entry_line(peer: IpAddr, asn: u32, prefix: &str, path_id: u32, attrs: &Attributes) -> String {
    let mut path = Vec::new();
    let (mut nh, mut mp_nh) = (None, None);
    let (mut comm, mut large) = (Vec::new(), Vec::new());
    let (mut origin, mut med, mut lp) = (0u8, None, None);
    for v in attrs.iter() {
        match v {
            AttributeValue::Origin(o) => origin = *o as u8,
            AttributeValue::AsPath(p) => path = words(&mut p.iter_segments()),
            AttributeValue::NextHop(ip) => nh = Some(*ip),
            AttributeValue::MultiExitDiscriminator(m) => med = Some(*m),
            AttributeValue::LocalPreference(l) => lp = Some(*l),
            AttributeValue::Communities(cs) => comm.extend(cs.iter().map(community)),
            AttributeValue::LargeCommunities(ls) => large.extend(
                ls.iter()
                    .map(|l| [l.global_admin, l.local_data[0], l.local_data[1]]),
            ),
            AttributeValue::MpReachNlri(n) => mp_nh = n.next_hop.as_ref().map(|h| h.global_addr()),
            _ => {}
        }
    }
    line(
        peer,
        asn,
        prefix,
        path_id,
        &path,
        mp_nh.or(nh),
        &comm,
        &large,
        origin,
        med,
        lp,
    )
}

/// bgpkit-parser's record iterator over `path` (decompressed by
/// ipfib-io): the routes of its TABLE_DUMP_V2 RIB records after the last
/// PEER_INDEX_TABLE (BIRD appends dumps to one file), sorted, and that
/// peer table's (address, AS) list.
pub fn bgpkit_record_lines(path: &Path) -> (Vec<String>, Vec<(IpAddr, u32)>) {
    let reader = ipfib_io::open_maybe_compressed(path).unwrap();
    let mut peers: Vec<(IpAddr, u32)> = Vec::new();
    let mut out = Vec::new();
    for record in BgpkitParser::from_reader(reader).into_record_iter() {
        match record.message {
            MrtMessage::TableDumpV2Message(TableDumpV2Message::PeerIndexTable(t)) => {
                let mut ids: Vec<_> = t.id_peer_map.into_iter().collect();
                ids.sort_by_key(|(i, _)| *i);
                out.clear();
                peers = ids
                    .into_iter()
                    .map(|(_, p)| (p.peer_ip, p.peer_asn.to_u32()))
                    .collect();
            }
            MrtMessage::TableDumpV2Message(TableDumpV2Message::RibAfi(r)) => {
                let prefix = net_text(r.prefix.prefix.addr(), r.prefix.prefix.prefix_len());
                for e in r.rib_entries {
                    let (ip, asn) = peers[usize::from(e.peer_index)];
                    out.push(entry_line(
                        ip,
                        asn,
                        &prefix,
                        e.path_id.unwrap_or(0),
                        &e.attributes,
                    ));
                }
            }
            _ => {}
        }
    }
    out.sort_unstable();
    (out, peers)
}

/// bgpkit-parser's elem view of `path`, sorted (path id 0: the view does
/// not carry a RIB entry's path id).
pub fn bgpkit_elem_lines(path: &Path) -> Vec<String> {
    let reader = ipfib_io::open_maybe_compressed(path).unwrap();
    let mut out = Vec::new();
    for e in BgpkitParser::from_reader(reader).into_elem_iter() {
        let path_words = e
            .as_path
            .as_ref()
            .map(|p| words(&mut p.iter_segments()))
            .unwrap_or_default();
        let mut comm = Vec::new();
        let mut large = Vec::new();
        for c in e.communities.iter().flatten() {
            match c {
                MetaCommunity::Plain(c) => comm.push(community(c)),
                MetaCommunity::Large(l) => {
                    large.push([l.global_admin, l.local_data[0], l.local_data[1]])
                }
                _ => {}
            }
        }
        out.push(line(
            e.peer_ip,
            e.peer_asn.to_u32(),
            &net_text(e.prefix.prefix.addr(), e.prefix.prefix.prefix_len()),
            e.prefix.path_id.unwrap_or(0),
            &path_words,
            e.next_hop,
            &comm,
            &large,
            e.origin.map_or(0, |o| o as u8),
            e.med,
            e.local_pref,
        ));
    }
    out.sort_unstable();
    out
}

/// The same lines from Python's mrtparse over `path` (an uncompressed
/// MRT file), or `None` when `python3 -c 'import mrtparse'` fails.
pub fn mrtparse_lines(path: &Path) -> Option<Vec<String>> {
    let ok = Command::new("python3")
        .args(["-c", "import mrtparse"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!(
            "SKIPPED: the mrtparse check (python3 cannot import mrtparse; pip install mrtparse)"
        );
        return None;
    }
    let out = Command::new("python3")
        .args(["-c", MRTPARSE_VIEW])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mrtparse view failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort_unstable();
    Some(lines)
}

/// Written from mrtparse's documented output (its `data` dicts), not
/// from our code.
const MRTPARSE_VIEW: &str = r#"
import ipaddress, sys, mrtparse

def first(d):
    return next(iter(d))

def addr(a):
    ip = ipaddress.ip_address(a)
    return ip.exploded if ip.version == 6 else str(ip)

peers = []
out = []
for r in mrtparse.Reader(sys.argv[1]):
    if r.err:
        sys.exit('mrtparse: %s' % r.err_msg)
    d = r.data
    t, st = first(d['type']), first(d['subtype'])
    if t == 13 and st == 1:
        peers = [(p['peer_ip'], int(p['peer_as'])) for p in d['peer_entries']]
    elif t == 13 and st in (2, 4, 8, 10):
        net = ipaddress.ip_network('%s/%d' % (d['prefix'], d['length']), strict=False)
        prefix = '%s/%d' % (addr(net.network_address), net.prefixlen)
        for e in d['rib_entries']:
            ip, asn = peers[e['peer_index']]
            path, nh, mp_nh, comm, large = [], None, None, [], []
            origin, med, lp = 0, '-', '-'
            for a in e['path_attributes']:
                at, v = first(a['type']), a['value']
                if at == 1:
                    origin = first(v)
                elif at == 2:
                    path = ['%d:%s' % (first(s['type']), ','.join(str(int(x)) for x in s['value'])) for s in v]
                elif at == 3:
                    nh = v
                elif at == 4:
                    med = str(v)
                elif at == 5:
                    lp = str(v)
                elif at == 8:
                    comm = [str((int(c.split(':')[0]) << 16) | int(c.split(':')[1])) for c in v]
                elif at == 14:
                    mp_nh = v['next_hop'][0]
                elif at == 32:
                    large = v
            hop = mp_nh or nh
            out.append('%s AS%d %s id=%d path=%s nh=%s comm=%s large=%s origin=%d med=%s lp=%s' % (
                addr(ip), asn, prefix, e.get('path_id', 0), ' '.join(path),
                addr(hop) if hop else '-', ','.join(comm), ','.join(large), origin, med, lp))
sys.stdout.write('\n'.join(out) + ('\n' if out else ''))
"#;
