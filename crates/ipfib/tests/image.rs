//! Compiled table files: what a file answers equals what the route table
//! it was compiled from answers (the radix route table is the independent
//! oracle), for every engine kind; and every damaged or hostile file is
//! refused with an error, never a crash.

use ipfib::addr::Addr;
use ipfib::engine::auto::{AutoOptions, Kind};
use ipfib::gen::{synthetic_v4, synthetic_v6, uniform_trace};
use ipfib::image::{to_bytes, ImageError, ImageTable, OpenOptions};
use ipfib::prefix::{AnyPrefix, Prefix};
use ipfib::table::Table;
use proptest::prelude::*;

fn forced(kind: Option<(Kind, Option<u8>)>) -> AutoOptions {
    AutoOptions {
        force: kind,
        calibrate: false,
        ..AutoOptions::default()
    }
}

/// Every engine `auto` can build, and `auto` itself.
fn every_engine() -> Vec<AutoOptions> {
    vec![
        forced(None),
        forced(Some((Kind::PlanB, None))),
        forced(Some((Kind::Poptrie, Some(16)))),
        forced(Some((Kind::Poptrie32, Some(18)))),
        forced(Some((Kind::Flat, Some(12)))),
    ]
}

/// Addresses worth asking about: each prefix's first and last address and
/// their neighbours, plus uniform ones.
fn probes<A: Addr>(prefixes: &[Prefix<A>], uniform: Vec<A>) -> Vec<A> {
    let mut out = uniform;
    for p in prefixes {
        let (a, z) = (p.addr(), p.last());
        out.extend([a, z]);
        out.extend(a.checked_pred());
        out.extend(z.checked_succ());
    }
    out.extend([A::ZERO, A::MAX]);
    out
}

/// Compare the file's answers (single and batch) with the route table's.
fn check_same(table: &Table<String>, img: &ImageTable) {
    let v4: Vec<Prefix<u32>> = table.v4.iter().map(|(p, _)| p).collect();
    let v6: Vec<Prefix<u128>> = table.v6.iter().map(|(p, _)| p).collect();
    assert_eq!(img.v4.len(), v4.len());
    assert_eq!(img.v6.len(), v6.len());
    let a4 = probes(&v4, uniform_trace(2000, 7));
    let a6 = probes(&v6, uniform_trace(2000, 8));
    let mut ord = vec![0u32; a4.len().max(a6.len())];
    img.v4.lookup_batch::<32>(&a4, &mut ord);
    for (i, &a) in a4.iter().enumerate() {
        let want = table.v4.lookup(a).map(|(p, v)| (p, v.as_str()));
        assert_eq!(img.v4.lookup(a), want, "IPv4 {a:#x}");
        assert_eq!(img.v4.route(ord[i]), want, "IPv4 batch {a:#x}");
        let slot = img.v4.value_slot(a);
        assert_eq!(img.v4.value(slot), want.map(|w| w.1), "IPv4 value {a:#x}");
    }
    img.v6.lookup_batch::<32>(&a6, &mut ord);
    for (i, &a) in a6.iter().enumerate() {
        let want = table.v6.lookup(a).map(|(p, v)| (p, v.as_str()));
        assert_eq!(img.v6.lookup(a), want, "IPv6 {a:#x}");
        assert_eq!(img.v6.route(ord[i]), want, "IPv6 batch {a:#x}");
        let slot = img.v6.value_slot(a);
        assert_eq!(img.v6.value(slot), want.map(|w| w.1), "IPv6 value {a:#x}");
    }
}

fn table_of(v4: &[(Prefix<u32>, u32)], v6: &[(Prefix<u128>, u32)]) -> Table<String> {
    let mut t = Table::new();
    for (p, v) in v4 {
        t.insert(AnyPrefix::V4(*p), format!("AS{}", v % 5000))
            .unwrap();
    }
    for (p, v) in v6 {
        // Multi-byte text, so value boundaries are checked on chars.
        t.insert(AnyPrefix::V6(*p), format!("é{}", v % 3000))
            .unwrap();
    }
    t
}

#[test]
fn synthetic_tables_answer_like_their_route_table_with_every_engine() {
    let t = table_of(&synthetic_v4(20_000, 1), &synthetic_v6(8_000, 2));
    for opts in every_engine() {
        let bytes = to_bytes(&t, &opts, "test").unwrap();
        let img = ImageTable::from_bytes(&bytes).unwrap();
        assert_eq!(img.source, "test");
        check_same(&t, &img);
    }
}

#[test]
fn empty_and_one_family_tables_round_trip() {
    for t in [
        table_of(&[], &[]),
        table_of(&synthetic_v4(100, 3), &[]),
        table_of(&[], &synthetic_v6(100, 4)),
    ] {
        for opts in every_engine() {
            let img = ImageTable::from_bytes(&to_bytes(&t, &opts, "").unwrap()).unwrap();
            check_same(&t, &img);
        }
    }
}

#[test]
fn written_files_open_mapped_and_answer() {
    let t = table_of(&synthetic_v4(5_000, 5), &synthetic_v6(2_000, 6));
    let dir = std::env::temp_dir().join(format!("ipfib-image-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.ipfib");
    let stats = ipfib::image::write_table(&t, &path, &forced(None), "src").unwrap();
    assert_eq!(stats.bytes, std::fs::metadata(&path).unwrap().len());
    let img = ImageTable::open(&path).unwrap();
    check_same(&t, &img);
    // No temporary file is left behind.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    drop(img);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn small_file() -> (Table<String>, Vec<u8>) {
    let t = table_of(&synthetic_v4(3_000, 9), &synthetic_v6(1_500, 10));
    let bytes = to_bytes(&t, &forced(None), "x").unwrap();
    (t, bytes)
}

/// A file that opens must answer without crashing (its answers may be
/// wrong when checksums were not verified).
fn exercise(img: &ImageTable) {
    let mut ord = vec![0u32; 512];
    let a4: Vec<u32> = uniform_trace(512, 11);
    let a6: Vec<u128> = uniform_trace(512, 12);
    img.v4.lookup_batch::<32>(&a4, &mut ord);
    for (&a, &o) in a4.iter().zip(&ord) {
        let _ = (
            img.v4.lookup(a),
            img.v4.route(o),
            img.v4.value(img.v4.value_slot(a)),
        );
    }
    img.v6.lookup_batch::<32>(&a6, &mut ord);
    for (&a, &o) in a6.iter().zip(&ord) {
        let _ = (
            img.v6.lookup(a),
            img.v6.route(o),
            img.v6.value(img.v6.value_slot(a)),
        );
    }
}

fn open_unverified(bytes: &[u8]) -> Result<ImageTable, ImageError> {
    let dir = std::env::temp_dir().join(format!(
        "ipfib-image-u-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("u.ipfib");
    std::fs::write(&path, bytes).unwrap();
    let r = ImageTable::open_with(
        &path,
        OpenOptions {
            verify_checksums: false,
            ..OpenOptions::default()
        },
    );
    std::fs::remove_dir_all(&dir).unwrap();
    r
}

#[test]
fn every_truncation_is_refused() {
    let (_, bytes) = small_file();
    // Every length up to the section table's end, then every 61 bytes (all
    // section boundaries are 64-aligned, so this crosses each of them).
    let mut lens: Vec<usize> = (0..2048.min(bytes.len())).collect();
    lens.extend((2048..bytes.len()).step_by(61));
    lens.extend((0..bytes.len()).filter(|l| l % 64 == 0));
    for len in lens {
        let e = ImageTable::from_bytes(&bytes[..len]);
        assert!(e.is_err(), "truncated to {len} bytes it still opened");
    }
    // Extended too.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 64]);
    assert!(ImageTable::from_bytes(&longer).is_err());
}

#[test]
fn flipped_bytes_are_refused_by_the_checksums() {
    let (_, bytes) = small_file();
    let step = (bytes.len() / 3000).max(1);
    for at in (0..bytes.len()).step_by(step) {
        let mut b = bytes.clone();
        b[at] ^= 0x5a;
        assert!(
            ImageTable::from_bytes(&b).is_err(),
            "a flipped byte at {at} was not noticed"
        );
    }
}

#[test]
fn other_versions_and_other_files_are_named() {
    let (_, bytes) = small_file();
    let mut b = bytes.clone();
    b[8..12].copy_from_slice(&2u32.to_le_bytes());
    let e = ImageTable::from_bytes(&b).err().unwrap();
    assert!(matches!(e, ImageError::Version { found: 2 }), "{e}");
    assert!(e.to_string().contains("version 2"));
    let e = ImageTable::from_bytes(b"1.0.0.0/8 x\n").err().unwrap();
    assert!(matches!(e, ImageError::NotAnImage), "{e}");
    let mut b = bytes.clone();
    b[12..16].copy_from_slice(&0x0102_0304u32.to_be_bytes());
    assert!(matches!(
        ImageTable::from_bytes(&b).err().unwrap(),
        ImageError::ByteOrder
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Unverified opens of randomly damaged sections: refused by the
    /// structural checks, or answering without crashing.
    #[test]
    fn damaged_sections_never_crash_an_unverified_open(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8)
    ) {
        let (_, bytes) = small_file();
        let mut b = bytes.clone();
        // Past the header and section table: what checksums would catch.
        let start = 64 + 32 * 40;
        for (i, x) in flips {
            let at = start + i.index(b.len() - start);
            b[at] ^= x;
        }
        if let Ok(img) = open_unverified(&b) {
            exercise(&img);
        }
    }

    /// Random nested tables with edge-case prefixes round-trip exactly.
    #[test]
    fn random_tables_round_trip(
        v4 in proptest::collection::vec((any::<u32>(), 0u8..=32, 0u32..40), 0..300),
        v6 in proptest::collection::vec((any::<u128>(), 0u8..=128, 0u32..40), 0..300),
        engine in 0usize..5,
    ) {
        let v4: Vec<(Prefix<u32>, u32)> = v4
            .into_iter()
            .map(|(a, l, v)| (Prefix::new_masked(a, l).unwrap(), v))
            .collect();
        let v6: Vec<(Prefix<u128>, u32)> = v6
            .into_iter()
            .map(|(a, l, v)| (Prefix::new_masked(a, l).unwrap(), v))
            .collect();
        let t = table_of(&v4, &v6);
        let opts = &every_engine()[engine];
        let img = ImageTable::from_bytes(&to_bytes(&t, opts, "p").unwrap()).unwrap();
        check_same(&t, &img);
    }
}

/// Every input the `image_open` and `image_round_trip` fuzz targets ever
/// failed on replays clean: `tests/fuzz_regressions/image_open/` and
/// `image_round_trip/`.
#[test]
fn image_fuzz_regressions_replay_clean() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    type Check = fn(&[u8]) -> Result<(), String>;
    let targets: [(&str, Check); 2] = [
        ("image_open", ipfib::check::check_image_bytes),
        ("image_round_trip", ipfib::check::check_image_round_trip),
    ];
    for (target, check) in targets {
        let dir = root.join(target);
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            if let Err(e) = check(&bytes) {
                panic!("{}: {e}", path.display());
            }
            n += 1;
        }
        assert!(n > 0, "no regression inputs in {}", dir.display());
    }
}

/// Small tables that reach every part of every engine's layout: PlanB
/// windows, sub-tables, local trees and the IPv6 second stage; Poptrie
/// and flat Poptrie with and without a focus prefix (and the flat one's
/// outer table); empty and one-family files. Direct tables stay small: a seed
/// is at most a few tens of KB (`auto` would pick 2^12 and more entries).
fn seed_tables() -> Vec<(&'static str, Table<String>, AutoOptions)> {
    // Routes inside 10.0.0.0/8 and 2001:db8::/32: the tries get a focus.
    let inside4: Vec<(Prefix<u32>, u32)> = synthetic_v4(120, 21)
        .into_iter()
        .map(|(p, v)| {
            let a = 0x0a00_0000 | (p.addr() & 0x00ff_ffff);
            (Prefix::new_masked(a, p.len().max(8)).unwrap(), v)
        })
        .collect();
    let inside6: Vec<(Prefix<u128>, u32)> = synthetic_v6(60, 22)
        .into_iter()
        .map(|(p, v)| {
            let a = 0x2001_0db8u128 << 96 | (p.addr() & (u128::MAX >> 32));
            (Prefix::new_masked(a, p.len().max(32)).unwrap(), v)
        })
        .collect();
    // Longer than /64: PlanB's second stage.
    let mut long6 = synthetic_v6(40, 23);
    for (i, (p, v)) in synthetic_v6(20, 24).into_iter().enumerate() {
        let len = 65 + (i as u8 * 3) % 64;
        long6.push((Prefix::new_masked(p.addr() | 0x1234_5678, len).unwrap(), v));
    }
    let small = table_of(&synthetic_v4(40, 25), &synthetic_v6(30, 26));
    // More than 272 keys in one bucket at s = 1: sub-tables; 17 to 272 at
    // s = 4: local trees.
    let heavy = table_of(&synthetic_v4(400, 27), &synthetic_v6(300, 28));
    let focused = table_of(&inside4, &inside6);
    let planb = |s| forced(Some((Kind::PlanB, Some(s))));
    vec![
        ("empty-planb1", table_of(&[], &[]), planb(1)),
        (
            "empty-poptrie0",
            table_of(&[], &[]),
            forced(Some((Kind::Poptrie, Some(0)))),
        ),
        ("small-planb4", small.clone(), planb(4)),
        ("heavy-planb1", heavy.clone(), planb(1)),
        ("heavy-planb4", heavy, planb(4)),
        ("long6-planb2", table_of(&[], &long6), planb(2)),
        (
            "long6-poptrie0",
            table_of(&[], &long6),
            forced(Some((Kind::Poptrie, Some(0)))),
        ),
        (
            "small-poptrie6",
            small.clone(),
            forced(Some((Kind::Poptrie, Some(6)))),
        ),
        (
            "focused-poptrie12",
            focused.clone(),
            forced(Some((Kind::Poptrie, Some(12)))),
        ),
        (
            "small-poptrie5-0",
            small.clone(),
            forced(Some((Kind::Poptrie32, Some(0)))),
        ),
        (
            "small-poptrie5-5",
            small.clone(),
            forced(Some((Kind::Poptrie32, Some(5)))),
        ),
        (
            "focused-poptrie5-10",
            focused.clone(),
            forced(Some((Kind::Poptrie32, Some(10)))),
        ),
        (
            "small-flat0",
            small.clone(),
            forced(Some((Kind::Flat, Some(0)))),
        ),
        ("small-flat4", small, forced(Some((Kind::Flat, Some(4))))),
        (
            "focused-flat8",
            focused.clone(),
            forced(Some((Kind::Flat, Some(8)))),
        ),
        (
            "focused-flat10",
            focused,
            forced(Some((Kind::Flat, Some(10)))),
        ),
        (
            "v4only-flat0",
            table_of(&synthetic_v4(50, 29), &[]),
            forced(Some((Kind::Flat, Some(0)))),
        ),
    ]
}

/// Write the `image_open` fuzz target's seeds (one compiled file per
/// `seed_tables` entry, behind the mode byte: resealed, so mutations reach
/// the structural checks; the empty table also as-is, verified and not).
/// Run: `cargo test -p ipfib --test image -- --ignored write_image_fuzz_seeds`
/// (into `fuzz/seeds/image_open/`, or `$IPFIB_IMAGE_SEEDS`).
#[test]
#[ignore]
fn write_image_fuzz_seeds() {
    let dir = std::env::var_os("IPFIB_IMAGE_SEEDS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/image_open")
        });
    std::fs::create_dir_all(&dir).unwrap();
    let mut total = 0;
    for (name, t, opts) in seed_tables() {
        let file = to_bytes(&t, &opts, name).unwrap();
        // The seed opens: the fuzzer starts from files that pass.
        check_same(&t, &ImageTable::from_bytes(&file).unwrap());
        let modes: &[u8] = if name.starts_with("empty") {
            &[0, 1, 2]
        } else {
            &[2]
        };
        for &mode in modes {
            let mut seed = vec![mode];
            seed.extend_from_slice(&file);
            ipfib::check::check_image_bytes(&seed).unwrap();
            total += seed.len();
            std::fs::write(dir.join(format!("{name}-{mode}")), seed).unwrap();
        }
    }
    eprintln!("{total} bytes of seeds in {}", dir.display());
}

/// The seed tables answer like their route tables and, together, hold
/// every layout feature `seed_tables` promises (so the fuzzer starts from
/// each).
#[test]
fn seed_tables_answer_and_cover_every_layout() {
    use ipfib::engine::auto::Built;
    use std::collections::BTreeSet;
    fn features<A: ipfib::engine::Family>(b: &Built<A>, seen: &mut BTreeSet<&'static str>) {
        match b {
            Built::PlanB(e) => {
                seen.insert("planb");
                if e.sub_entries() > 1 {
                    seen.insert("planb sub-tables");
                }
                if e.tree_buckets() > 0 {
                    seen.insert("planb local trees");
                }
                if e.stage2_intervals() > 0 {
                    seen.insert("planb second stage");
                }
            }
            Built::Poptrie(e) => {
                seen.insert(["poptrie", "poptrie focus"][(e.focus_bits() > 0) as usize]);
            }
            Built::Poptrie32(e) => {
                seen.insert(["poptrie5", "poptrie5 focus"][(e.focus_bits() > 0) as usize]);
            }
            Built::Flat(e) => {
                seen.insert(["flat", "flat focus"][(e.focus_bits() > 0) as usize]);
            }
        }
    }
    let mut seen = BTreeSet::new();
    for (name, t, opts) in seed_tables() {
        let img = ImageTable::from_bytes(&to_bytes(&t, &opts, name).unwrap()).unwrap();
        check_same(&t, &img);
        for e in [img.v4.by_value(), img.v4.by_route()] {
            features(e.single(), &mut seen);
        }
        for e in [img.v6.by_value(), img.v6.by_route()] {
            features(e.single(), &mut seen);
        }
    }
    let want = [
        "flat",
        "flat focus",
        "planb",
        "planb local trees",
        "planb second stage",
        "planb sub-tables",
        "poptrie",
        "poptrie focus",
        "poptrie5",
        "poptrie5 focus",
    ];
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), want);
}

/// The section counts of the two families are scalars of the file: huge
/// ones (which overflowed the reader's `next + skip` before) are refused
/// by name, whatever the checksums say; only the written pair opens.
#[test]
fn hostile_family_section_counts_are_refused() {
    let (_, bytes) = small_file();
    // Section 1 is the family section counts (after the source text).
    let le = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let at = le(64 + 32 + 8) as usize;
    let (n4, n6) = (le(at), le(at + 8));
    let sections = le(24) & 0xffff_ffff;
    let counts = [0, 1, n4, n6, sections, u64::MAX, u64::MAX - 1, 1 << 63];
    for a in counts {
        for b in counts {
            let mut f = bytes.clone();
            f[at..at + 8].copy_from_slice(&a.to_le_bytes());
            f[at + 8..at + 16].copy_from_slice(&b.to_le_bytes());
            ipfib::image::reseal(&mut f);
            match ImageTable::from_bytes(&f) {
                Ok(_) => assert_eq!((a, b), (n4, n6), "opened with counts {a}, {b}"),
                Err(e) => {
                    assert!((a, b) != (n4, n6), "{e}");
                    assert!(matches!(e, ImageError::Corrupt { .. }), "{e}");
                }
            }
        }
    }
}
