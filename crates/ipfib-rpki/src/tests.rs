//! Differential tests: ROV and ASPA against plain implementations of the
//! RFC's and the draft's text, on random sets rich in nesting, shared
//! prefixes, AS 0 and max-length edges; PDU round trips and hostile bytes.

use ipfib::prefix::{AnyPrefix, Prefix};
use proptest::prelude::*;

use crate::aspa::{Aspa, AspaStatus, Aspas};
use crate::files::{covers, parse_payloads, Slurm};
use crate::rtr::pdu::{Pdu, Timers};
use crate::vrp::{route_origin, RouteOrigin, Rov, Vrp, VrpSet, Vrps};
use crate::{AS_CONFED_SEQUENCE, AS_SEQUENCE, AS_SET};

/// RFC 6811 §2 as written: candidate VRPs cover the route; matched when
/// the origin equals (and is not NONE) and the length is within max.
fn oracle_rov(vrps: &[Vrp], route: &AnyPrefix, origin: RouteOrigin) -> Rov {
    let mut covered = false;
    let mut as_match = false;
    for v in vrps {
        if !covers(&v.prefix, route) {
            continue;
        }
        covered = true;
        if let RouteOrigin::As(a) = origin {
            if a == v.asn && a != 0 {
                as_match = true;
                if route.len() <= v.max_len {
                    return Rov::Valid;
                }
            }
        }
    }
    match (covered, as_match) {
        (false, _) => Rov::NotFound,
        (true, true) => Rov::InvalidLength,
        (true, false) => Rov::InvalidOrigin,
    }
}

/// A v4 prefix from a few bits under 10.0.0.0/8, so prefixes nest often.
fn v4(bits: u32, len: u8) -> AnyPrefix {
    let len = len.clamp(8, 32);
    let addr = 0x0a00_0000u32 | ((bits << 8) & 0x00ff_ff00) | (bits & 0xff);
    AnyPrefix::V4(Prefix::new_masked(addr, len).unwrap())
}

fn v6(bits: u32, len: u8) -> AnyPrefix {
    let len = len.clamp(16, 128);
    let addr = (0x2001_0db8u128 << 96) | ((bits as u128) << 80) | (bits as u128 & 0xff);
    AnyPrefix::V6(Prefix::new_masked(addr, len).unwrap())
}

fn vrp_strategy() -> impl Strategy<Value = Vrp> {
    (any::<bool>(), 0u32..64, 0u8..40, 0u8..6, 0u32..5).prop_map(|(six, bits, len, extra, asn)| {
        let p = if six {
            v6(bits, 16 + len)
        } else {
            v4(bits.wrapping_mul(0x0101_0101), 8 + len % 20)
        };
        let width = if six { 128 } else { 32 };
        let max = (p.len() + extra).min(width);
        Vrp::new(p, max, asn).unwrap()
    })
}

fn route_strategy() -> impl Strategy<Value = (AnyPrefix, RouteOrigin)> {
    (
        any::<bool>(),
        0u32..64,
        0u8..48,
        prop_oneof![4 => (0u32..5).prop_map(RouteOrigin::As), 1 => Just(RouteOrigin::None)],
    )
        .prop_map(|(six, bits, len, o)| {
            let p = if six {
                v6(bits, 16 + len)
            } else {
                v4(bits.wrapping_mul(0x0101_0101), 8 + len % 25)
            };
            (p, o)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn rov_matches_the_rfc(
        vrps in proptest::collection::vec(vrp_strategy(), 0..60),
        routes in proptest::collection::vec(route_strategy(), 1..60),
    ) {
        let snap: Vrps = vrps.iter().copied().collect();
        // One cursor over routes in random order, one over them sorted:
        // the search's hint never changes an answer.
        let mut cur = crate::Cursor::default();
        let mut sorted = routes.clone();
        sorted.sort_by_key(|r| r.0);
        let mut cur_sorted = crate::Cursor::default();
        for (p, o) in &sorted {
            prop_assert_eq!(snap.validate_at(p, *o, &mut cur_sorted), oracle_rov(&vrps, p, *o));
        }
        for (p, o) in &routes {
            prop_assert_eq!(snap.validate_at(p, *o, &mut cur), oracle_rov(&vrps, p, *o));
            prop_assert_eq!(snap.validate(p, *o), oracle_rov(&vrps, p, *o), "{} {:?}", p, o);
            // covering() returns exactly the covering VRPs.
            let mut got = snap.covering(p);
            got.sort();
            let mut want: Vec<Vrp> = vrps.iter().filter(|v| covers(&v.prefix, p)).copied().collect();
            want.sort();
            want.dedup();
            prop_assert_eq!(got, want);
        }
        // The snapshot holds each distinct VRP once.
        let mut distinct = vrps.clone();
        distinct.sort();
        distinct.dedup();
        prop_assert_eq!(snap.len(), distinct.len());
        let mut back: Vec<Vrp> = snap.iter().collect();
        back.sort();
        prop_assert_eq!(back, distinct);
    }

    #[test]
    fn incremental_set_equals_a_fresh_one(
        first in proptest::collection::vec(vrp_strategy(), 0..40),
        changes in proptest::collection::vec((any::<bool>(), vrp_strategy()), 0..40),
        routes in proptest::collection::vec(route_strategy(), 1..30),
    ) {
        let mut set: VrpSet = first.iter().copied().collect();
        let mut model: std::collections::BTreeSet<Vrp> = first.iter().copied().collect();
        for (add, v) in &changes {
            if *add {
                prop_assert_eq!(set.insert(*v), model.insert(*v));
            } else {
                prop_assert_eq!(set.remove(v), model.remove(v));
            }
        }
        let snap = set.snapshot();
        let all: Vec<Vrp> = model.into_iter().collect();
        for (p, o) in &routes {
            prop_assert_eq!(snap.validate(p, *o), oracle_rov(&all, p, *o));
        }
    }

    #[test]
    fn changes_equal_a_fresh_snapshot(
        first in proptest::collection::vec(vrp_strategy(), 0..60),
        added in proptest::collection::vec(vrp_strategy(), 0..20),
        removed_at in proptest::collection::vec(0usize..80, 0..20),
        removed_new in proptest::collection::vec(vrp_strategy(), 0..5),
    ) {
        let old: Vrps = first.iter().copied().collect();
        // Removals of VRPs held, and of some never held.
        let mut removed: Vec<Vrp> = removed_at.iter().filter_map(|&i| first.get(i).copied()).collect();
        removed.extend(&removed_new);
        let got = old.with_changes(&added, &removed);
        let mut want: std::collections::BTreeSet<Vrp> = first.iter().copied().collect();
        for v in &removed {
            want.remove(v);
        }
        want.extend(added.iter().copied());
        let fresh: Vrps = want.iter().copied().collect();
        let got_all: Vec<Vrp> = got.iter().collect();
        let fresh_all: Vec<Vrp> = fresh.iter().collect();
        prop_assert_eq!(got_all, fresh_all);
        // And it answers as a fresh one does (parents rebuilt).
        for v in first.iter().chain(&added) {
            for o in [RouteOrigin::As(v.asn), RouteOrigin::As(v.asn + 1), RouteOrigin::None] {
                prop_assert_eq!(got.validate(&v.prefix, o), fresh.validate(&v.prefix, o));
            }
        }
    }

    #[test]
    fn live_publishes_the_union_with_slurm_applied(
        first in proptest::collection::vec((0usize..2, vrp_strategy()), 0..40),
        steps in proptest::collection::vec(
            (0usize..2, proptest::collection::vec(vrp_strategy(), 0..8), proptest::collection::vec(0usize..60, 0..8), any::<bool>()),
            1..8,
        ),
        filters in proptest::collection::vec((vrp_strategy(), any::<bool>()), 0..3),
        asserts in proptest::collection::vec(vrp_strategy(), 0..3),
    ) {
        // Two SLURM files: the first filters (by prefix or by AS) and
        // asserts, the second filters what the first asserted, sometimes.
        let one = Slurm {
            prefix_filters: filters.iter().map(|(v, by_as)| if *by_as { (None, Some(v.asn)) } else { (Some(v.prefix), None) }).collect(),
            prefix_assertions: asserts.clone(),
            ..Slurm::default()
        };
        let two = Slurm {
            prefix_filters: asserts.iter().take(1).map(|v| (Some(v.prefix), Some(v.asn))).collect(),
            ..Slurm::default()
        };
        let slurms = vec![one, two];
        let live = crate::Live::new(slurms.clone());
        let mut model: [std::collections::BTreeSet<Vrp>; 2] = Default::default();
        for (src, v) in &first {
            model[*src].insert(*v);
        }
        let ids: Vec<usize> = (0..2)
            .map(|k| live.add_set(format!("s{k}"), model[k].iter().copied().collect(), Aspas::new()))
            .collect();
        let check = |model: &[std::collections::BTreeSet<Vrp>; 2]| -> Result<(), TestCaseError> {
            let mut want = VrpSet::new();
            want.extend(model[0].iter().chain(&model[1]).copied());
            let mut none = Aspas::new();
            Slurm::apply_all(&slurms, &mut want, &mut none);
            let mut want: Vec<Vrp> = want.iter().copied().collect();
            want.sort();
            let got: Vec<Vrp> = live.load().vrps.iter().collect();
            let mut got_sorted = got.clone();
            got_sorted.sort();
            prop_assert_eq!(got_sorted, want);
            Ok(())
        };
        check(&model)?;
        for (src, added, removed_at, whole) in &steps {
            let held: Vec<Vrp> = model[*src].iter().copied().collect();
            let removed: Vec<Vrp> = removed_at.iter().filter_map(|&i| held.get(i).copied()).collect();
            for v in &removed {
                model[*src].remove(v);
            }
            model[*src].extend(added.iter().copied());
            if *whole {
                // A whole new set: a second source added with it, the
                // first emptied (a replace path without a public replace).
                live.change_set(ids[*src], &[], &held);
                live.change_set(ids[*src], &model[*src].iter().copied().collect::<Vec<_>>(), &[]);
            } else {
                live.change_set(ids[*src], added, &removed);
            }
            check(&model)?;
        }
    }

    #[test]
    fn aspa_matches_the_ramps(
        aspas in proptest::collection::vec((1u32..8, proptest::collection::vec(1u32..8, 0..4)), 0..8),
        path in proptest::collection::vec(1u32..8, 0..8),
        set_at in proptest::option::of(0usize..8),
    ) {
        let set: Aspas = aspas.iter().map(|(c, p)| Aspa::new(*c, p.clone())).collect();
        let mut segments: Vec<(u8, Vec<u32>)> = vec![(AS_SEQUENCE, path.clone())];
        if let Some(i) = set_at {
            if i < path.len() {
                segments = vec![(AS_SEQUENCE, path[..i].to_vec()), (AS_SET, path[i..].to_vec())];
            }
        }
        let got = set.verify_upstream(segments.iter().map(|(k, a)| (*k, &a[..])));
        let want = oracle_upstream(&set, &segments);
        prop_assert_eq!(got, want);
    }

    #[test]
    fn pdus_round_trip(p in pdu_strategy()) {
        let bytes = p.encode();
        let (back, used) = Pdu::decode(&bytes).unwrap().unwrap();
        prop_assert_eq!(used, bytes.len());
        prop_assert_eq!(back, p);
        // Every strict prefix of the bytes asks for more.
        for cut in 0..bytes.len() {
            prop_assert_eq!(Pdu::decode(&bytes[..cut]), Ok(None));
        }
    }

    #[test]
    fn hostile_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), kind in 0u8..13, ver in 0u8..3) {
        let mut b = bytes;
        if b.len() >= 8 {
            b[0] = ver;
            b[1] = kind;
            let len = b.len() as u32;
            b[4..8].copy_from_slice(&len.to_be_bytes());
        }
        let _ = Pdu::decode(&b);
    }
}

/// The draft's upstream procedure in its ramp form (max_up_ramp,
/// min_up_ramp), a different formulation from `verify_upstream`'s.
fn oracle_upstream(set: &Aspas, segments: &[(u8, Vec<u32>)]) -> AspaStatus {
    if segments.iter().any(|(k, a)| *k == AS_SET && !a.is_empty()) {
        return AspaStatus::Invalid;
    }
    let mut path: Vec<u32> = segments
        .iter()
        .flat_map(|(_, a)| a.iter().copied())
        .collect();
    path.dedup();
    if path.is_empty() {
        return AspaStatus::Unknown;
    }
    path.reverse(); // AS(1) = origin
    let n = path.len();
    // hop(i): 0 provider+, 1 not provider+, 2 no attestation
    let hop = |i: usize| match set.get(path[i]) {
        None => 2,
        Some(p) if p.contains(&path[i + 1]) => 0,
        Some(_) => 1,
    };
    let mut max_up = n;
    for i in 0..n - 1 {
        if hop(i) == 1 {
            max_up = i + 1;
            break;
        }
    }
    let mut min_up = n;
    for i in 0..n - 1 {
        if hop(i) != 0 {
            min_up = i + 1;
            break;
        }
    }
    if max_up < n {
        AspaStatus::Invalid
    } else if min_up < n {
        AspaStatus::Unknown
    } else {
        AspaStatus::Valid
    }
}

fn pdu_strategy() -> impl Strategy<Value = Pdu> {
    prop_oneof![
        (0u8..3, any::<u16>(), any::<u32>()).prop_map(|(version, session, serial)| {
            Pdu::SerialNotify {
                version,
                session,
                serial,
            }
        }),
        (0u8..3, any::<u16>(), any::<u32>()).prop_map(|(version, session, serial)| {
            Pdu::SerialQuery {
                version,
                session,
                serial,
            }
        }),
        (0u8..3).prop_map(|version| Pdu::ResetQuery { version }),
        (0u8..3, any::<u16>())
            .prop_map(|(version, session)| Pdu::CacheResponse { version, session }),
        (0u8..3, any::<bool>(), vrp_strategy()).prop_map(|(version, announce, v)| Pdu::Prefix {
            version,
            announce,
            prefix: v.prefix,
            max_len: v.max_len,
            asn: v.asn
        }),
        (1u8..3, any::<u16>(), any::<u32>(), any::<[u32; 3]>()).prop_map(
            |(version, session, serial, t)| Pdu::EndOfData {
                version,
                session,
                serial,
                timers: Some(Timers {
                    refresh: t[0],
                    retry: t[1],
                    expire: t[2]
                })
            }
        ),
        (any::<u16>(), any::<u32>()).prop_map(|(session, serial)| Pdu::EndOfData {
            version: 0,
            session,
            serial,
            timers: None
        }),
        (0u8..3).prop_map(|version| Pdu::CacheReset { version }),
        (
            0u8..3,
            0u16..12,
            proptest::collection::vec(any::<u8>(), 0..40),
            "[a-z ]{0,30}"
        )
            .prop_map(|(version, code, pdu, text)| Pdu::ErrorReport {
                version,
                code,
                pdu,
                text
            }),
        (any::<u32>(), proptest::collection::vec(any::<u32>(), 0..20)).prop_map(
            |(customer, providers)| Pdu::Aspa {
                version: 2,
                announce: true,
                customer,
                providers
            }
        ),
        any::<u32>().prop_map(|customer| Pdu::Aspa {
            version: 2,
            announce: false,
            customer,
            providers: vec![]
        }),
    ]
}

#[test]
fn route_origin_follows_rfc_6811() {
    let seq = [(AS_SEQUENCE, &[64500u32, 64501][..])];
    assert_eq!(route_origin(seq, 1), RouteOrigin::As(64501));
    let set = [(AS_SEQUENCE, &[64500u32][..]), (AS_SET, &[64502u32][..])];
    // A final AS_SET is NONE even with one member.
    assert_eq!(route_origin(set, 1), RouteOrigin::None);
    assert_eq!(route_origin([], 65000), RouteOrigin::As(65000));
    let confed = [
        (AS_SEQUENCE, &[64500u32][..]),
        (AS_CONFED_SEQUENCE, &[65001u32][..]),
    ];
    assert_eq!(route_origin(confed, 65000), RouteOrigin::As(65000));
}

#[test]
fn as0_never_matches_and_invalidates_covered_routes() {
    let vrps: Vrps = [Vrp::new("10.0.0.0/8".parse().unwrap(), 24, 0).unwrap()]
        .into_iter()
        .collect();
    assert_eq!(
        vrps.validate(&"10.1.0.0/16".parse().unwrap(), RouteOrigin::As(0)),
        Rov::InvalidOrigin
    );
    assert_eq!(
        vrps.validate(&"10.1.0.0/16".parse().unwrap(), RouteOrigin::As(5)),
        Rov::InvalidOrigin
    );
    assert_eq!(
        vrps.validate(&"11.0.0.0/8".parse().unwrap(), RouteOrigin::As(5)),
        Rov::NotFound
    );
}

#[test]
fn aspa_examples() {
    // 64496's providers: 64497; 64497's: 64498.
    let set: Aspas = [Aspa::new(64496, vec![64497]), Aspa::new(64497, vec![64498])]
        .into_iter()
        .collect();
    let check = |path: &[u32]| set.verify_upstream([(AS_SEQUENCE, path)]);
    // Wire order: neighbour first, origin last.
    assert_eq!(check(&[64498, 64497, 64496]), AspaStatus::Valid);
    assert_eq!(
        check(&[64498, 64498, 64497, 64496, 64496]),
        AspaStatus::Valid
    ); // prepends
    assert_eq!(check(&[64499, 64497, 64496]), AspaStatus::Invalid); // 64497 -> 64499 not a provider
    assert_eq!(check(&[64500, 64498, 64497, 64496]), AspaStatus::Unknown); // 64498 has no ASPA
    assert_eq!(check(&[64496]), AspaStatus::Valid);
    assert_eq!(check(&[]), AspaStatus::Unknown);
    assert_eq!(
        set.verify_upstream([(AS_SEQUENCE, &[64497u32][..]), (AS_SET, &[64496u32][..])]),
        AspaStatus::Invalid
    );
}

#[test]
fn files_of_every_validator() {
    let rpki_client = br#"{"metadata":{"buildtime":"x"},"roas":[
        {"asn":13335,"prefix":"1.0.0.0/24","maxLength":24,"ta":"apnic","expires":1},
        {"asn":"AS64500","prefix":"2001:db8::/32","maxLength":48}],
        "aspas":[{"customer_asid":64500,"expires":1,"providers":[64501,64502]},
                 {"customer":"AS64503","providers":["AS64504"]},
                 {"customer_asid":64505,"provider_set":[{"asid":64506}]}]}"#;
    let p = parse_payloads(rpki_client, "x.json").unwrap();
    assert_eq!(p.vrps.len(), 2);
    assert_eq!(p.vrps[1].asn, 64500);
    assert_eq!(p.aspas[0], Aspa::new(64500, vec![64502, 64501]));
    assert_eq!(p.aspas[1], Aspa::new(64503, vec![64504]));
    assert_eq!(p.aspas[2], Aspa::new(64505, vec![64506]));

    let csv = b"ASN,IP Prefix,Max Length,Trust Anchor\nAS13335,1.0.0.0/24,24,apnic\nAS64500,2001:db8::/32,48,ripe\n";
    let c = parse_payloads(csv, "x.csv").unwrap();
    assert_eq!(c.vrps, p.vrps);

    // Errors name the file and the place.
    let e = parse_payloads(b"AS1,10.0.0.0/8,8\nAS2,10.0.0.1/8,8\n", "bad.csv").unwrap_err();
    assert!(e.to_string().starts_with("bad.csv: line 2:"), "{e}");
    let e = parse_payloads(
        br#"{"roas":[{"asn":1,"prefix":"10.0.0.0/8","maxLength":7}]}"#,
        "bad.json",
    )
    .unwrap_err();
    assert!(e.to_string().contains("roas[0]"), "{e}");
    let e = parse_payloads(b"{\"roas\":[\n{\"asn\":1,}]}", "broken.json").unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
    let e = parse_payloads(
        br#"{"roas":[{"asn":"AS4294967296","prefix":"10.0.0.0/8"}]}"#,
        "big.json",
    )
    .unwrap_err();
    assert!(e.to_string().contains("over 32 bits"), "{e}");
    // Files that would silently turn validation off are refused.
    for (bytes, what) in [
        (&b""[..], "no VRP"),
        (&b"\n# only a comment\n"[..], "no VRP"),
        (
            &b"<!DOCTYPE html><html>502 Bad Gateway</html>\n"[..],
            "line 1",
        ),
        (&b"[{\"asn\": 1, \"prefix\": \"10.0.0.0/8\"}]"[..], "line 1"),
        (&b"AS1;10.0.0.0/8;8\n"[..], "line 1"),
        (&b"\0\0\0\0\n"[..], "line 1"),
    ] {
        let e = parse_payloads(bytes, "odd").unwrap_err().to_string();
        assert!(e.starts_with("odd: ") && e.contains(what), "{e}");
    }
    // An empty set in JSON is a set.
    assert!(parse_payloads(br#"{"roas": []}"#, "empty.json")
        .unwrap()
        .vrps
        .is_empty());
    // A long bad field is shown cut, escaped.
    let long = format!("AS1,{},8\n", "x".repeat(10_000));
    let e = parse_payloads(long.as_bytes(), "long")
        .unwrap_err()
        .to_string();
    assert!(e.len() < 300, "{e}");
    let e = parse_payloads(br#"{"slurmVersion": 1}"#, "s.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("give it with --slurm"), "{e}");
}

#[test]
fn slurm_filters_then_asserts() {
    let slurm = Slurm::parse(
        br#"{"slurmVersion":1,
        "validationOutputFilters":{"prefixFilters":[{"prefix":"10.0.0.0/8"},{"asn":64499},{"prefix":"11.0.0.0/8","asn":64500}],"bgpsecFilters":[]},
        "locallyAddedAssertions":{"prefixAssertions":[{"asn":64510,"prefix":"10.1.0.0/16","maxPrefixLength":20}],"bgpsecAssertions":[]}}"#,
        "x.slurm",
    )
    .unwrap();
    let mut set: VrpSet = [
        Vrp::new("10.0.0.0/8".parse().unwrap(), 8, 1).unwrap(),
        Vrp::new("10.2.0.0/16".parse().unwrap(), 16, 1).unwrap(),
        Vrp::new("9.0.0.0/8".parse().unwrap(), 8, 64499).unwrap(),
        Vrp::new("11.0.0.0/8".parse().unwrap(), 8, 64500).unwrap(),
        Vrp::new("11.0.0.0/8".parse().unwrap(), 8, 64501).unwrap(),
        Vrp::new("8.0.0.0/7".parse().unwrap(), 8, 7).unwrap(),
    ]
    .into_iter()
    .collect();
    let mut aspas = Aspas::new();
    slurm.apply(&mut set, &mut aspas);
    let mut left: Vec<String> = set.iter().map(|v| v.to_string()).collect();
    left.sort();
    // 8.0.0.0/7 covers 9.0.0.0/8 but is not under any filter prefix.
    assert_eq!(
        left,
        [
            "10.1.0.0/16-20 AS64510",
            "11.0.0.0/8-8 AS64501",
            "8.0.0.0/7-8 AS7"
        ]
    );

    let v2 = Slurm::parse(
        br#"{"slurmVersion":2,"validationOutputFilters":{"aspaFilters":[{"customerAsid":1}]},
        "locallyAddedAssertions":{"aspaAssertions":[{"customerAsid":5,"providerSet":[6,7]}]}}"#,
        "v2.slurm",
    )
    .unwrap();
    let mut aspas: Aspas = [Aspa::new(1, vec![2])].into_iter().collect();
    v2.apply(&mut set, &mut aspas);
    assert_eq!(aspas.to_vec(), [Aspa::new(5, vec![6, 7])]);
    let e = Slurm::parse(br#"{"slurmVersion":3}"#, "v3.slurm").unwrap_err();
    assert!(e.to_string().contains("slurmVersion"), "{e}");
}

#[test]
fn hostile_pdus_are_refused_with_a_code() {
    use crate::rtr::pdu::code;
    // Fewer bytes than a header, given to decode_one directly.
    assert_eq!(
        Pdu::decode_one(&[1, 2, 0]).unwrap_err().code,
        code::CORRUPT_DATA
    );
    // Length under the header, over the limit.
    assert_eq!(
        Pdu::decode(&[1, 0, 0, 0, 0, 0, 0, 4]).unwrap_err().code,
        code::CORRUPT_DATA
    );
    assert!(Pdu::decode(&[1, 10, 0, 0, 0xff, 0xff, 0xff, 0xff]).is_err());
    // Version 3, an unknown type, ASPA in version 1.
    assert_eq!(
        Pdu::decode(&[3, 2, 0, 0, 0, 0, 0, 8]).unwrap_err().code,
        code::UNSUPPORTED_VERSION
    );
    assert_eq!(
        Pdu::decode(&[1, 5, 0, 0, 0, 0, 0, 8]).unwrap_err().code,
        code::UNSUPPORTED_PDU_TYPE
    );
    assert_eq!(
        Pdu::decode(&[1, 11, 1, 0, 0, 0, 0, 12, 0, 0, 0, 1])
            .unwrap_err()
            .code,
        code::UNSUPPORTED_PDU_TYPE
    );
    // A prefix with host bits, a max length under the length.
    let mut p = Pdu::Prefix {
        version: 1,
        announce: true,
        prefix: "10.0.0.0/8".parse().unwrap(),
        max_len: 8,
        asn: 1,
    }
    .encode();
    p[15] = 1;
    assert!(Pdu::decode(&p).is_err());
    let mut p = Pdu::Prefix {
        version: 1,
        announce: true,
        prefix: "10.0.0.0/8".parse().unwrap(),
        max_len: 8,
        asn: 1,
    }
    .encode();
    p[10] = 7;
    assert!(Pdu::decode(&p).is_err());
    // An Error Report whose inner length overruns it.
    let mut e = Pdu::ErrorReport {
        version: 1,
        code: 2,
        pdu: vec![1, 2],
        text: "x".into(),
    }
    .encode();
    e[11] = 200;
    assert!(Pdu::decode(&e).is_err());
    // An ASPA withdrawal with providers.
    let a = Pdu::Aspa {
        version: 2,
        announce: true,
        customer: 1,
        providers: vec![2],
    }
    .encode();
    let mut w = a.clone();
    w[2] = 0;
    assert_eq!(
        Pdu::decode(&w).unwrap_err().code,
        crate::rtr::pdu::code::ASPA_PROVIDER_LIST_ERROR
    );
}
