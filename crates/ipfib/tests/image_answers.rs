//! Compiled table files whose engines answer past the file's lists: a
//! one-route file with one stored answer rewritten (a direct entry, a
//! leaf, a payload) and every checksum recomputed. The structure stays
//! sound, so only the answer bound stands between such a file and a
//! caller that indexes the routes or values with the answer (`classify`'s
//! counters, the C ABI's `route_index`): opening must refuse it, naming
//! the engine, the bound and the place.

use ipfib::engine::auto::{AutoOptions, Kind};
use ipfib::engine::{Engine, NO_ROUTE};
use ipfib::image::{reseal, to_bytes, ImageError, ImageTable};
use ipfib::table::Table;

const TAG_META: u32 = 1;

/// One section as the file's section table declares it.
#[derive(Clone, Copy, Debug)]
struct Section {
    tag: u32,
    offset: usize,
    len: usize,
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The section table (layout: docs/architecture.md, "Compiled table
/// files": a 64-byte header, then 32-byte entries).
fn sections(b: &[u8]) -> Vec<Section> {
    (0..le_u32(b, 24) as usize)
        .map(|i| {
            let at = 64 + 32 * i;
            Section {
                tag: le_u32(b, at),
                offset: le_u64(b, at + 8) as usize,
                len: le_u64(b, at + 16) as usize,
            }
        })
        .collect()
}

/// Which stored engine to damage, in section order: the IPv4 value
/// engine, the IPv4 route engine, then IPv6's two.
#[derive(Clone, Copy, Debug)]
enum Which {
    V4Values = 0,
    V4Routes = 1,
    V6Routes = 3,
}

/// The section index of `which` engine's kind (a one-`u64` meta section:
/// no other section is one), and the kind stored there.
fn engine_at(secs: &[Section], b: &[u8], which: Which) -> (usize, u64) {
    let kinds: Vec<usize> = (0..secs.len())
        .filter(|&i| secs[i].tag == TAG_META && secs[i].len == 8)
        .collect();
    assert_eq!(kinds.len(), 4, "one engine per family and payload kind");
    let k = kinds[which as usize];
    (k, le_u64(b, secs[k].offset))
}

/// The array (relative to the engine's kind section) holding the answer
/// to rewrite, and its element size: a direct entry or a leaf.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// PlanB direct table (`DP_PAYLOAD | p`), Poptrie direct table
    /// (`DIRECT_LEAF | p`), flat Poptrie entries (`LEAF | p`).
    Direct,
    /// Poptrie leaves, PlanB payloads per rank, PlanB second-stage
    /// payloads: plain payloads.
    Leaf,
    SecondStage,
}

/// Sections after the kind section, per `save`: PlanB scalars, keys,
/// inner lines, descriptors, direct, sub-tables, payloads, second-stage
/// offsets, starts, payloads; Poptrie scalars, direct, nodes, leaves;
/// flat Poptrie scalars, entries.
fn array_of(kind: u64, place: Place) -> (usize, usize, u64) {
    const DP_PAYLOAD: u64 = 0xC000_0000;
    const DIRECT_LEAF: u64 = 0x8000_0000;
    const FLAT_LEAF: u64 = 1 << 63;
    match (kind, place) {
        (k, Place::Direct) if k == Kind::PlanB as u64 => (5, 4, DP_PAYLOAD),
        (k, Place::Leaf) if k == Kind::PlanB as u64 => (7, 4, 0),
        (k, Place::SecondStage) if k == Kind::PlanB as u64 => (10, 4, 0),
        (k, Place::Direct) if k == Kind::Poptrie as u64 || k == Kind::Poptrie32 as u64 => {
            (2, 4, DIRECT_LEAF)
        }
        (k, Place::Leaf) if k == Kind::Poptrie as u64 || k == Kind::Poptrie32 as u64 => (4, 4, 0),
        (k, Place::Direct | Place::Leaf) if k == Kind::Flat as u64 => (2, 8, FLAT_LEAF),
        other => panic!("no such place: {other:?}"),
    }
}

/// `bytes` with the first answer 0 at `place` of `which` engine turned
/// into answer `to`, resealed; and the offset of the engine's first
/// section (where the refusal must point).
fn rewrite_answer(bytes: &[u8], which: Which, place: Place, to: u64) -> (Vec<u8>, u64) {
    let mut b = bytes.to_vec();
    let secs = sections(&b);
    let (k, kind) = engine_at(&secs, &b, which);
    let (rel, elem, tag) = array_of(kind, place);
    let s = secs[k + rel];
    let (from, to) = (tag, tag | to);
    let at = (0..s.len / elem)
        .map(|i| s.offset + i * elem)
        .find(|&at| match elem {
            4 => u64::from(le_u32(&b, at)) == from,
            _ => le_u64(&b, at) == from,
        })
        .unwrap_or_else(|| panic!("no answer 0 at {place:?} of kind {kind}"));
    match elem {
        4 => b[at..at + 4].copy_from_slice(&(to as u32).to_le_bytes()),
        _ => b[at..at + 8].copy_from_slice(&to.to_le_bytes()),
    }
    reseal(&mut b);
    (b, secs[k + 1].offset as u64)
}

/// One route per family: 10.0.0.0/8 and 2001:db8::1/128 (a /128: PlanB
/// answers it through its second stage).
fn one_route_file(kind: Option<(Kind, Option<u8>)>) -> Vec<u8> {
    let mut t = Table::new();
    t.insert("10.0.0.0/8".parse().unwrap(), "ten").unwrap();
    t.insert("2001:db8::1/128".parse().unwrap(), "doc").unwrap();
    let opts = AutoOptions {
        force: kind,
        calibrate: false,
        ..AutoOptions::default()
    };
    to_bytes(&t, &opts, "one route").unwrap()
}

/// Opening must fail, naming the engine's place, the bound and the answer.
fn assert_refused(bytes: &[u8], at: u64, engine: &str, of: &str, ctx: &str) {
    let img = ImageTable::from_bytes(bytes);
    if let Ok(img) = &img {
        panic!(
            "{ctx}: opened; 10.0.0.1 answers route {} of {}",
            Engine::lookup(img.v4.by_route(), 0x0a00_0001),
            img.v4.len()
        );
    }
    let Err(ImageError::Corrupt { offset, what }) = img else {
        panic!("{ctx}: not a corrupt-file error");
    };
    assert_eq!(offset, at, "{ctx}: {what}");
    for want in [engine, &format!("index 1 {of}"), "answer 5, not below 1"] {
        assert!(
            what.contains(want),
            "{ctx}: {what:?} does not name {want:?}"
        );
    }
}

/// The reproduction: the default engines, one direct entry (or leaf) of
/// the route engine answering route 5 of 1.
#[test]
fn default_engines_answering_past_the_routes_are_refused() {
    let b = one_route_file(None);
    let img = ImageTable::from_bytes(&b).unwrap();
    assert_eq!(img.v4.lookup(0x0a00_0001).map(|(_, v)| v), Some("ten"));
    let secs = sections(&b);
    let (_, kind) = engine_at(&secs, &b, Which::V4Routes);
    let (bad, at) = rewrite_answer(&b, Which::V4Routes, Place::Direct, 5);
    let name = match kind {
        k if k == Kind::PlanB as u64 => "planb engine",
        k if k == Kind::Flat as u64 => "flat poptrie engine",
        _ => "poptrie engine",
    };
    assert_refused(&bad, at, name, "routes", "auto");
}

/// An engine forced (kind, direct bits; `None`: auto), the name its
/// errors carry, and where the answer is patched.
type Case = (Option<(Kind, Option<u8>)>, &'static str, Place);

/// Every engine layout a file can store, at every place it keeps answers.
#[test]
fn every_stored_layout_answering_past_its_list_is_refused() {
    let cases: [Case; 9] = [
        (Some((Kind::PlanB, Some(8))), "planb engine", Place::Direct),
        (Some((Kind::PlanB, Some(8))), "planb engine", Place::Leaf),
        (
            Some((Kind::Poptrie, Some(8))),
            "poptrie engine",
            Place::Direct,
        ),
        (
            Some((Kind::Poptrie, Some(0))),
            "poptrie engine",
            Place::Leaf,
        ),
        (
            Some((Kind::Poptrie32, Some(8))),
            "poptrie engine",
            Place::Direct,
        ),
        (
            Some((Kind::Poptrie32, Some(0))),
            "poptrie engine",
            Place::Leaf,
        ),
        (
            Some((Kind::Flat, Some(8))),
            "flat poptrie engine",
            Place::Direct,
        ),
        (
            Some((Kind::Flat, Some(0))),
            "flat poptrie engine",
            Place::Leaf,
        ),
        (
            Some((Kind::Flat, Some(13))),
            "flat poptrie engine",
            Place::Direct,
        ),
    ];
    for (kind, engine, place) in cases {
        let b = one_route_file(kind);
        ImageTable::from_bytes(&b).unwrap();
        for (which, of) in [(Which::V4Routes, "routes"), (Which::V4Values, "values")] {
            let (bad, at) = rewrite_answer(&b, which, place, 5);
            assert_refused(
                &bad,
                at,
                engine,
                of,
                &format!("{kind:?} {place:?} {which:?}"),
            );
        }
    }
}

/// PlanB's IPv6 second stage keeps answers of its own.
#[test]
fn planb_second_stage_answering_past_the_routes_is_refused() {
    let b = one_route_file(Some((Kind::PlanB, None)));
    let img = ImageTable::from_bytes(&b).unwrap();
    assert_eq!(
        img.v6.lookup(0x2001_0db8 << 96 | 1).map(|(_, v)| v),
        Some("doc")
    );
    let (bad, at) = rewrite_answer(&b, Which::V6Routes, Place::SecondStage, 5);
    assert_refused(&bad, at, "planb engine", "routes", "second stage");
}

/// The rewrite itself is sound: an answer still inside the list (the
/// same answer, or `NO_ROUTE`) opens, so the refusals above are the bound.
#[test]
fn answers_inside_the_lists_still_open() {
    let b = one_route_file(Some((Kind::Poptrie, Some(8))));
    let (same, _) = rewrite_answer(&b, Which::V4Routes, Place::Direct, 0);
    assert_eq!(same, b);
    // `DIRECT_LEAF | 0x7fff_ffff` is `NO_ROUTE`.
    let (miss, _) = rewrite_answer(&b, Which::V4Routes, Place::Direct, 0x7fff_ffff);
    let img = ImageTable::from_bytes(&miss).unwrap();
    assert_eq!(Engine::lookup(img.v4.by_route(), 0x0a00_0001), NO_ROUTE);
    assert_eq!(img.v4.lookup(0x0a00_0001), None);
}

/// The lists the answers index are read from the file too: a route's
/// prefix, its value slot, a value's end in the text. Each is checked
/// against what it indexes, and a file that breaks one is refused naming
/// the section.
#[test]
fn route_and_value_lists_that_index_past_their_targets_are_refused() {
    let b = one_route_file(Some((Kind::Poptrie, Some(8))));
    let secs = sections(&b);
    let (k, _) = engine_at(&secs, &b, Which::V4Routes);
    // After the route engine (scalars, direct, nodes, leaves): prefixes,
    // value slots, value ends, value text.
    let (prefixes, slots, ends) = (secs[k + 5], secs[k + 6], secs[k + 7]);
    assert_eq!((prefixes.len, slots.len, ends.len), (8, 4, 8));
    let cases: [(&str, usize, Vec<u8>, &str); 4] = [
        (
            "host bits",
            prefixes.offset,
            vec![1, 0, 0, 10, 8, 0, 0, 0],
            "route 0 has a bad length or host bits set",
        ),
        (
            "length past /32",
            prefixes.offset,
            vec![0, 0, 0, 10, 33, 0, 0, 0],
            "route 0 has a bad length or host bits set",
        ),
        (
            "value slot past the values",
            slots.offset,
            1u32.to_le_bytes().to_vec(),
            "route 0 names value 1 of 1",
        ),
        (
            "value end past the text",
            ends.offset,
            4u64.to_le_bytes().to_vec(),
            "value 0 ends at 4",
        ),
    ];
    for (what, at, bytes, says) in cases {
        let mut bad = b.clone();
        bad[at..at + bytes.len()].copy_from_slice(&bytes);
        reseal(&mut bad);
        match ImageTable::from_bytes(&bad) {
            Ok(_) => panic!("{what}: opened"),
            Err(ImageError::Corrupt { offset, what: why }) => {
                assert_eq!(offset, at as u64, "{what}: {why}");
                assert!(why.contains(says), "{what}: {why:?} does not say {says:?}");
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

/// The fuzz target's check (`check_image_bytes`) on such files, resealed
/// and unverified: a file that opened with an answer past its lists would
/// be its finding (an `Err`); refused, it finds nothing wrong.
#[test]
fn the_image_fuzz_check_finds_nothing_in_refused_files() {
    for kind in [
        None,
        Some((Kind::PlanB, Some(8))),
        Some((Kind::Poptrie32, Some(8))),
        Some((Kind::Flat, Some(8))),
    ] {
        let b = one_route_file(kind);
        for which in [Which::V4Routes, Which::V4Values] {
            let (bad, _) = rewrite_answer(&b, which, Place::Direct, 5);
            // Mode bytes: 1 opens unverified, 2 reseals first.
            for mode in [1u8, 2] {
                let mut input = vec![mode];
                input.extend_from_slice(&bad);
                assert_eq!(
                    ipfib::check::check_image_bytes(&input),
                    Ok(()),
                    "{kind:?} {which:?} mode {mode}"
                );
            }
        }
    }
}
