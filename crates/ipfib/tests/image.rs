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
        forced(Some((Kind::Planb, None))),
        forced(Some((Kind::Poptrie, Some(16)))),
        forced(Some((Kind::Poptrie5, Some(18)))),
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
