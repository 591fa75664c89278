//! A real Huawei VRP 8.210 BMP stream (global peers sending VPN routes,
//! Loc-RIB instance peers with route distinguishers, labeled unicast)
//! replayed through the session decoder, compared route by route with
//! pmacct's independent decoding of the same stream
//! (`bmp/vendor-sample/`, see its README).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_rib::bmp::Session;
use ipfib_rib::instance::{format_rd, is_global, peer_type_name};
use ipfib_rib::{Instance, Query, Rib};

/// What both decoders say of one route: (prefix, peer address, rd) ->
/// (AS path, communities, large communities).
type Key = (String, String, Option<String>);
type Val = (Vec<u32>, Vec<String>, Vec<String>);

#[test]
fn huawei_locrib_instance_matches_pmacct() {
    let Some(path) = common::data_file("bmp/vendor-sample/huawei-vrp8.210-locrib-instance.bmp")
    else {
        return;
    };
    let buf = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let expected_path = path.with_file_name("pmacct-expected.ndjson");
    let text = std::fs::read_to_string(&expected_path)
        .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));

    let rib = Arc::new(Rib::new());
    let mut s = Session::new(1, Arc::clone(&rib));
    for m in common::messages(&buf) {
        s.handle(m).unwrap_or_else(|e| panic!("{e}"));
    }
    rib.sync();
    assert_eq!(s.info.sys_name.as_deref(), Some("ipf-zbl1843-r-daisy-61"));
    assert_eq!(s.stats.attribute_discard + s.stats.treat_as_withdraw, 0);

    // pmacct: every route monitoring "update" event (there are no
    // withdrawals in this stream).
    let mut want: BTreeMap<Key, Val> = BTreeMap::new();
    // pmacct leaves `rd` null on labeled-unicast (SAFI 4) routes of a
    // Loc-RIB instance peer: their instance is the peer's, one of the
    // route distinguishers its Loc-RIB Peer Ups name.
    let mut locrib_rds = std::collections::BTreeSet::new();
    let mut labeled: Vec<Key> = Vec::new();
    let mut events = 0;
    let mut eor = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["bmp_msg_type"] == "peer_up" && v["peer_type"] == 3 {
            if let Some(r) = v["rd"].as_str() {
                locrib_rds.insert(r.split_once(':').map_or(r, |x| x.1).to_string());
            }
        }
        if v["bmp_msg_type"] != "route_monitor" {
            continue;
        }
        if v["log_type"] == "end-of-rib" {
            eor += 1;
            continue;
        }
        assert_eq!(v["log_type"], "update", "{line}");
        events += 1;
        // pmacct writes "TYPE:ADMIN:N"; the API writes "ADMIN:N".
        let rd = v["rd"]
            .as_str()
            .map(|r| r.split_once(':').map_or(r, |x| x.1).to_string());
        let strs = |k: &str| -> Vec<String> {
            v[k].as_array()
                .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
                .unwrap_or_default()
        };
        let as_path = strs("as_path").iter().map(|a| a.parse().unwrap()).collect();
        let key = (
            v["ip_prefix"].as_str().unwrap().to_string(),
            v["peer_ip"].as_str().unwrap().to_string(),
            rd,
        );
        // Communities as a set (pmacct sorts them).
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        let val = (as_path, sorted(strs("comms")), sorted(strs("lcomms")));
        if v["safi"] == 4 && key.2.is_none() && v["is_loc"] == 1 {
            labeled.push(key.clone());
        }
        // The same route pre- and post-policy: the same reading.
        if let Some(old) = want.insert(key.clone(), val.clone()) {
            assert_eq!(old, val, "{key:?}");
        }
    }
    assert!(events >= 80, "{events} route events in the expected output");
    assert_eq!(s.stats.end_of_rib, eor);

    // Ours: every live route of every instance and RIB kind.
    let mut got: BTreeMap<Key, Val> = BTreeMap::new();
    let mut prefixes = Vec::new();
    rib.for_each_prefix(|r| prefixes.push(r.prefix));
    let mut vpn_routes = Vec::new();
    for p in prefixes {
        for r in rib.routes(&p) {
            let k = &r.peer.key;
            let rd = (!is_global(k.peer_type, k.distinguisher)).then(|| format_rd(k.distinguisher));
            if rd.is_some() {
                vpn_routes.push((p, k.distinguisher, k.peer_type));
            }
            let mut comms: Vec<String> = r
                .attrs
                .communities
                .iter()
                .map(|c| format!("{}:{}", c >> 16, c & 0xffff))
                .collect();
            let mut lcomms: Vec<String> = r
                .attrs
                .large_communities
                .iter()
                .map(|l| format!("{}:{}:{}", l[0], l[1], l[2]))
                .collect();
            comms.sort();
            lcomms.sort();
            let key = (p.to_string(), k.address.to_string(), rd);
            got.insert(key, (r.attrs.as_path.flat(), comms, lcomms));
            // Peer types as pmacct's Peer Ups give them.
            let want_type = if k.address.to_string() == "0.0.0.0" {
                "loc-rib"
            } else {
                "global"
            };
            assert_eq!(peer_type_name(k.peer_type), want_type);
        }
    }
    for k in labeled {
        let val = want.remove(&k).unwrap();
        let mut found = got.iter().filter(|(g, _)| {
            g.0 == k.0 && g.1 == k.1 && g.2.as_ref().is_some_and(|r| locrib_rds.contains(r))
        });
        let (g, v) = found
            .next()
            .unwrap_or_else(|| panic!("labeled {k:?} not in a Loc-RIB instance"));
        assert_eq!(v, &val, "{k:?}");
        let g = g.clone();
        got.remove(&g);
    }
    let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).collect();
    let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}\nextra {extra:?}"
    );
    for (k, v) in &want {
        assert_eq!(&got[k], v, "{k:?}");
    }

    // The RD instances' routes never answer a plain lookup; they answer
    // with their instance named, and with every instance.
    assert!(!vpn_routes.is_empty());
    for (p, rd, _) in vpn_routes {
        let addr = match p {
            AnyPrefix::V4(q) => AnyAddr::V4(q.addr()),
            AnyPrefix::V6(q) => AnyAddr::V6(q.addr()),
        };
        if let Some(r) = rib.lookup(addr, &Query::default()) {
            let k = &r.peer.key;
            assert!(
                is_global(k.peer_type, k.distinguisher),
                "{p}: answered from {rd:#x}"
            );
        }
        let one = Query {
            instance: Instance::Rd(rd, rd),
            ..Query::default()
        };
        let r = rib
            .lookup(addr, &one)
            .unwrap_or_else(|| panic!("{p} in {rd:#x}"));
        assert_eq!(r.peer.key.distinguisher, rd);
        assert!(r.prefix.len() >= p.len());
        assert!(rib.lookup(addr, &Query::everything()).is_some());
    }
}
