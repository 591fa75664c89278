//! `ipfib rov` against an independent check, on real data:
//! - the 2026 RouteViews RIB dump read by bgpkit-parser (not our MRT
//!   decoder), every route's origin taken from its AS_PATH as RFC 6811 §2
//!   says, its ROV state by the RFC's text (every VRP whose prefix covers
//!   the route, found by truncating the route to each length), its ASPA
//!   status by the draft's ramps (max_up_ramp, min_up_ramp) — compared
//!   route for route;
//! - the 2026 RouteViews prefix-to-origin tables (IPv4 and IPv6), each
//!   route's state by the same plain check.
//!
//! VRP and ASPA sets come from `ipfib rov --generate-vrps` over the same
//! data; the test checks they hold every kind of case (valid, both
//! invalids, not-found; ASPA valid, invalid, unknown) before comparing.

mod common;

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::Path;

use bgpkit_parser::models::AsPathSegment;
use bgpkit_parser::BgpkitParser;
use common::{data_file, ipfib};
use serde_json::Value;

/// VRPs by (address bits, length, family) -> (asn, max length) list.
type VrpMap = HashMap<(u128, u8, u8), Vec<(u32, u8)>>;

fn prefix_key(text: &str) -> (u128, u8, u8) {
    let (a, l) = text.split_once('/').unwrap();
    let len: u8 = l.parse().unwrap();
    match a.parse::<IpAddr>().unwrap() {
        IpAddr::V4(v) => (u128::from(u32::from(v)), len, 4),
        IpAddr::V6(v) => (u128::from(v), len, 6),
    }
}

fn truncate(bits: u128, len: u8, family: u8) -> u128 {
    let width = if family == 4 { 32 } else { 128 };
    if len == 0 {
        return 0;
    }
    let keep = u128::MAX << (width - u32::from(len));
    let mask = if family == 4 {
        keep & 0xffff_ffff
    } else {
        keep
    };
    bits & mask
}

/// RFC 6811 §2 as written. `origin` None is "NONE".
fn rov(vrps: &VrpMap, key: (u128, u8, u8), origin: Option<u32>) -> &'static str {
    let (bits, len, fam) = key;
    let mut covered = false;
    let mut as_match = false;
    for l in 0..=len {
        if let Some(list) = vrps.get(&(truncate(bits, l, fam), l, fam)) {
            covered = true;
            for &(asn, max) in list {
                if origin == Some(asn) && asn != 0 {
                    as_match = true;
                    if len <= max {
                        return "valid";
                    }
                }
            }
        }
    }
    match (covered, as_match) {
        (false, _) => "not-found",
        (true, true) => "invalid-length",
        (true, false) => "invalid-as",
    }
}

/// The draft's upstream procedure in its ramp form.
fn aspa(aspas: &HashMap<u32, HashSet<u32>>, segments: &[AsPathSegment]) -> &'static str {
    let mut path: Vec<u32> = Vec::new();
    for s in segments {
        match s {
            AsPathSegment::AsSequence(v) => path.extend(v.iter().map(|a| a.to_u32())),
            AsPathSegment::AsSet(v) if !v.is_empty() => return "invalid",
            _ => {}
        }
    }
    path.dedup();
    if path.is_empty() {
        return "unknown";
    }
    path.reverse();
    let n = path.len();
    // 0 provider+, 1 not provider+, 2 no attestation
    let hop = |i: usize| match aspas.get(&path[i]) {
        None => 2,
        Some(p) if p.contains(&path[i + 1]) => 0,
        Some(_) => 1,
    };
    let max_up = (0..n - 1).find(|&i| hop(i) == 1).map_or(n, |i| i + 1);
    let min_up = (0..n - 1).find(|&i| hop(i) != 0).map_or(n, |i| i + 1);
    if max_up < n {
        "invalid"
    } else if min_up < n {
        "unknown"
    } else {
        "valid"
    }
}

fn read_sets(path: &Path) -> (VrpMap, HashMap<u32, HashSet<u32>>) {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut vrps: VrpMap = HashMap::new();
    for r in doc["roas"].as_array().unwrap() {
        vrps.entry(prefix_key(r["prefix"].as_str().unwrap()))
            .or_default()
            .push((
                r["asn"].as_u64().unwrap() as u32,
                r["maxLength"].as_u64().unwrap() as u8,
            ));
    }
    let mut aspas: HashMap<u32, HashSet<u32>> = HashMap::new();
    for a in doc["aspas"].as_array().unwrap() {
        aspas
            .entry(a["customer_asid"].as_u64().unwrap() as u32)
            .or_default()
            .extend(
                a["providers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_u64().unwrap() as u32),
            );
    }
    (vrps, aspas)
}

fn state_of(line: &Value) -> String {
    match line["rov_reason"].as_str() {
        Some(r) => format!("invalid-{r}"),
        None => line["rov"].as_str().unwrap().to_string(),
    }
}

#[test]
fn rov_of_the_2026_rib_dump_equals_the_rfc() {
    let Some(dump) = data_file("rib.20260730.1400.first2MiB.mrt.bz2") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ipfib-rov-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sets = dir.join("vrps.json");
    let g = ipfib(
        &[
            "rov",
            "--generate-vrps",
            sets.to_str().unwrap(),
            dump.to_str().unwrap(),
        ],
        None,
    );
    // Exit 1: the 2 MiB excerpt ends in a cut record (named on stderr).
    assert_eq!(g.code, 1, "{}", g.stderr);
    assert!(g.stderr.contains("damaged at byte"), "{}", g.stderr);
    let (vrps, aspas) = read_sets(&sets);

    // The expected state of every route, from bgpkit-parser's view.
    let mut want: HashMap<String, (&'static str, &'static str)> = HashMap::new();
    let mut as_sets = 0;
    let reader = ipfib_io::open_maybe_compressed(&dump).unwrap();
    for e in BgpkitParser::from_reader(reader).into_elem_iter() {
        let segments: Vec<AsPathSegment> = e
            .as_path
            .as_ref()
            .map(|p| p.iter_segments().cloned().collect())
            .unwrap_or_default();
        // RFC 6811 §2: the last segment decides.
        let origin = match segments.iter().rev().find(|s| match s {
            AsPathSegment::AsSequence(v) | AsPathSegment::AsSet(v) => !v.is_empty(),
            _ => false,
        }) {
            Some(AsPathSegment::AsSequence(v)) => Some(v.last().unwrap().to_u32()),
            Some(_) => {
                as_sets += 1;
                None
            }
            None => Some(e.peer_asn.to_u32()),
        };
        let prefix = format!(
            "{}/{}",
            e.prefix.prefix.addr(),
            e.prefix.prefix.prefix_len()
        );
        let key = format!("{prefix} {}", e.peer_ip);
        want.insert(
            key,
            (
                rov(&vrps, prefix_key(&prefix), origin),
                aspa(&aspas, &segments),
            ),
        );
    }
    assert_eq!(want.len(), 679_347);

    let run = ipfib(
        &[
            "rov",
            "--vrps",
            sets.to_str().unwrap(),
            "--output",
            "json",
            dump.to_str().unwrap(),
        ],
        None,
    );
    // Exit 1: the 2 MiB excerpt ends in a cut record, reported on stderr.
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("\"routes\":679347"), "{}", run.stderr);
    let mut seen = 0;
    let mut kinds: HashMap<String, u64> = HashMap::new();
    for line in run.stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let key = format!(
            "{} {}",
            v["prefix"].as_str().unwrap(),
            v["peer_address"].as_str().unwrap()
        );
        let got = (state_of(&v), v["aspa"].as_str().unwrap().to_string());
        let w = want
            .get(&key)
            .unwrap_or_else(|| panic!("{key}: not a route of the dump"));
        assert_eq!((got.0.as_str(), got.1.as_str()), (w.0, w.1), "{key}");
        *kinds.entry(got.0).or_default() += 1;
        *kinds.entry(format!("aspa-{}", got.1)).or_default() += 1;
        seen += 1;
    }
    assert_eq!(seen, want.len());
    // Every kind of case is there (else the comparison proves little).
    for k in [
        "valid",
        "invalid-as",
        "invalid-length",
        "not-found",
        "aspa-valid",
        "aspa-invalid",
        "aspa-unknown",
    ] {
        assert!(kinds.get(k).copied().unwrap_or(0) > 1000, "{k}: {kinds:?}");
    }
    println!("{seen} routes equal; {as_sets} with a final AS_SET; {kinds:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rov_of_the_2026_pfx2as_tables_equals_the_rfc() {
    let Some(v4) = data_file("routeviews-rv2-20260730-1400.pfx2as.txt.gz") else {
        return;
    };
    let Some(v6) = data_file("routeviews-rv6-20260730-1400.pfx2as.txt.gz") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("ipfib-rov-t-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, table) in [("v4", &v4), ("v6", &v6)] {
        let sets = dir.join(format!("{name}.json"));
        let g = ipfib(
            &[
                "rov",
                "--generate-vrps",
                sets.to_str().unwrap(),
                table.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(g.code, 0, "{}", g.stderr);
        let (vrps, _) = read_sets(&sets);
        let run = ipfib(
            &[
                "rov",
                "--vrps",
                sets.to_str().unwrap(),
                "--output",
                "json",
                table.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        // The table read independently: `PREFIX ORIGINS` (or pfx2as's
        // `ADDR LEN ORIGINS`), `#` comments.
        let text = {
            use std::io::Read;
            let mut s = String::new();
            ipfib_io::open_maybe_compressed(table)
                .unwrap()
                .read_to_string(&mut s)
                .unwrap();
            s
        };
        let mut want: Vec<(String, Option<u32>, &'static str)> = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (prefix, origins) = match f.len() {
                2 => (f[0].to_string(), f[1]),
                _ => (format!("{}/{}", f[0], f[1]), f[2]),
            };
            for member in origins.split('_') {
                let origin = if member.contains(',') {
                    None
                } else {
                    Some(member.parse().unwrap())
                };
                want.push((
                    prefix.clone(),
                    origin,
                    rov(&vrps, prefix_key(&prefix), origin),
                ));
            }
        }
        let mut got: Vec<(String, Option<u32>, String)> = run
            .stdout
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["prefix"].as_str().unwrap().to_string(),
                    v["origin_asn"].as_u64().map(|a| a as u32),
                    state_of(&v),
                )
            })
            .collect();
        let mut want: Vec<(String, Option<u32>, String)> = want
            .into_iter()
            .map(|(p, o, s)| (p, o, s.to_string()))
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got.len(), want.len(), "{name}");
        let mut kinds: HashMap<&str, u64> = HashMap::new();
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w, "{name}");
            *kinds.entry(w.2.as_str()).or_default() += 1;
        }
        for k in ["valid", "invalid-as", "invalid-length", "not-found"] {
            assert!(
                kinds.get(k).copied().unwrap_or(0) > 100,
                "{name} {k}: {kinds:?}"
            );
        }
        println!("{name}: {} routes equal; {kinds:?}", got.len());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
