//! Compiled table files from arbitrary bytes, for the `image_open` and
//! `image_round_trip` fuzz targets and the tests that replay their inputs.
//!
//! - [`check_image_bytes`]: the bytes as a file, opened as they are, without
//!   checksum verification, or resealed (every checksum recomputed, so a
//!   mutation reaches the structural checks behind them). A refusal must be
//!   an error whose offset lies inside the file; a file that opens must
//!   answer every lookup, single and batch, without crashing, the two
//!   must agree (both walk the same validated structure), and every answer
//!   must be a miss or index the file's lists: a route ordinal below the
//!   route count, a value slot below the value count (callers index with
//!   them unchecked: `classify`'s counters, the C ABI's `route_index`).
//! - [`check_image_round_trip`]: the bytes spell a small table
//!   ([`EngineCase`]); it is written under one forced engine kind and
//!   reopened, and the file must answer exactly as the route table does.

use super::differential::boundary_queries;
use super::engines::EngineCase;
use crate::engine::auto::{AutoOptions, Kind};
use crate::engine::{Engine, Family, NO_ROUTE};
use crate::image::{reseal, to_bytes, FamilyImage, ImageError, ImageTable, OpenOptions};
use crate::prefix::{AnyAddr, AnyPrefix, Prefix};
use crate::table::Table;

/// How [`check_image_bytes`] opens its input, by the first byte (mod 4).
pub const IMAGE_MODES: [&str; 4] = ["verified", "unverified", "resealed", "resealed"];

/// Route prefixes of a file whose boundaries are probed (the rest of a
/// large hostile route list adds time, not paths).
const PROBED_ROUTES: usize = 256;

/// Open `data[1..]` as a compiled table file the way `data[0]` says
/// ([`IMAGE_MODES`]) and, if it opens, run every lookup entry point on
/// addresses taken from the input, from the file's own route list and the
/// ends of the space. Panics (the fuzz target's finding) on a crash; an
/// `Err` names a broken invariant.
pub fn check_image_bytes(data: &[u8]) -> Result<(), String> {
    let Some((&mode, file)) = data.split_first() else {
        return Ok(());
    };
    let mut bytes = file.to_vec();
    let verify = match IMAGE_MODES[usize::from(mode % 4)] {
        "verified" => true,
        "unverified" => false,
        _ => {
            reseal(&mut bytes);
            true
        }
    };
    let opts = OpenOptions {
        verify_checksums: verify,
        ..OpenOptions::default()
    };
    let img = match ImageTable::from_bytes_with(&bytes, opts) {
        Ok(img) => img,
        Err(e) => return refusal(&e, bytes.len()),
    };
    // Addresses from the input itself: whatever the mutations put there.
    let a4: Vec<u32> = file
        .chunks_exact(4)
        .take(64)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    let a6: Vec<u128> = file
        .chunks_exact(16)
        .take(64)
        .map(|c| u128::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    family(&img.v4, a4).map_err(|e| format!("IPv4: {e}"))?;
    family(&img.v6, a6).map_err(|e| format!("IPv6: {e}"))?;
    let _ = (img.lookup(AnyAddr::V4(0)), img.lookup(AnyAddr::V6(0)));
    let _ = (img.footprint_bytes(), img.source.len());
    // What the Python bindings take from an opened file.
    let (e4, r4, p4, s4, v4) = img.v4.into_parts();
    let _ = (e4.name(), r4.name(), p4.len(), s4.len(), v4.len());
    Ok(())
}

/// A refused file: the error must name a place inside it.
fn refusal(e: &ImageError, len: usize) -> Result<(), String> {
    let text = e.to_string();
    match e {
        ImageError::Corrupt { offset, .. } if *offset > len as u64 => Err(format!(
            "error offset past the end of a {len}-byte file: {text}"
        )),
        ImageError::Io(_) | ImageError::Build(_) => Err(format!("unexpected error kind: {text}")),
        _ if text.is_empty() => Err("empty error message".into()),
        _ => Ok(()),
    }
}

/// Every lookup entry point of one family on `extra` and the boundaries of
/// the file's first routes; single and batch answers must agree.
fn family<A: Family>(f: &FamilyImage<A>, extra: Vec<A>) -> Result<(), String> {
    let mut q = boundary_queries(f.prefixes().iter().copied().take(PROBED_ROUTES));
    q.extend(extra);
    let half = A::MAX.to_u128() >> 1;
    q.extend([half, half + 1].map(A::from_u128_truncate));
    // What callers rely on, for the whole structure (the opener's check,
    // through the public API) and for every answer below.
    let (routes, values) = (bound(f.len()), bound(f.values()));
    f.by_route()
        .validate_below(routes)
        .map_err(|e| format!("route engine answers past {routes} routes: {e}"))?;
    f.by_value()
        .validate_below(values)
        .map_err(|e| format!("value engine answers past {values} values: {e}"))?;
    let in_range = |what: &str, a: A, o: u32, n: u32| match o {
        NO_ROUTE => Ok(()),
        o if o < n => Ok(()),
        o => Err(format!("{what} at {a:?}: answer {o} of {n}")),
    };
    let singles: Vec<Option<(Prefix<A>, &str)>> = q.iter().map(|&a| f.lookup(a)).collect();
    for &a in &q {
        in_range("route engine", a, f.by_route().lookup(a), routes)?;
    }
    let slots: Vec<u32> = q.iter().map(|&a| f.value_slot(a)).collect();
    for (&a, &s) in q.iter().zip(&slots) {
        in_range("value_slot", a, s, values)?;
    }
    let mut out = vec![0u32; q.len()];
    let mut batches = |name: &str, run: &dyn Fn(&[A], &mut [u32])| -> Result<(), String> {
        out.fill(0);
        run(&q, &mut out);
        for (i, (&a, &o)) in q.iter().zip(&out).enumerate() {
            in_range(name, a, o, routes)?;
            if f.route(o) != singles[i] {
                return Err(format!(
                    "{name} at {a:?}: batch {:?}, single {:?}",
                    f.route(o),
                    singles[i]
                ));
            }
        }
        Ok(())
    };
    batches("lookup_batch::<1>", &|a, o| f.lookup_batch::<1>(a, o))?;
    batches("lookup_batch::<7>", &|a, o| f.lookup_batch::<7>(a, o))?;
    batches("lookup_batch::<8>", &|a, o| f.lookup_batch::<8>(a, o))?;
    batches("lookup_batch::<32>", &|a, o| f.lookup_batch::<32>(a, o))?;
    batches("lookup_batch::<64>", &|a, o| f.lookup_batch::<64>(a, o))?;
    // The value engine, single and batch.
    let mut vout = vec![0u32; q.len()];
    f.by_value().lookup_batch::<32>(&q, &mut vout);
    for (i, &a) in q.iter().enumerate() {
        in_range("value engine batch", a, vout[i], values)?;
        if vout[i] != slots[i] {
            return Err(format!(
                "value engine at {a:?}: batch {}, single {}",
                vout[i], slots[i]
            ));
        }
        let _ = f.value(slots[i]);
    }
    for slot in (0..f.values().min(1024) as u32).chain([u32::MAX]) {
        let _ = f.value(slot);
    }
    let _ = (
        f.route(u32::MAX),
        f.len(),
        f.slots().len(),
        f.footprint_bytes(),
    );
    let _ = (f.by_value().choice(), f.by_route().choice());
    Ok(())
}

/// A list's length as an answer bound (`NO_ROUTE` past `u32`).
fn bound(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(NO_ROUTE)
}

/// Engine kinds (with direct-pointing bits) [`check_image_round_trip`]
/// forces, by the first byte: every kind `auto` can build, on small direct
/// tables (a 2^18-entry table per input would dominate the run).
const ROUND_TRIP_PICKS: [Option<(Kind, Option<u8>)>; 12] = [
    None,
    Some((Kind::PlanB, None)),
    Some((Kind::PlanB, Some(1))),
    Some((Kind::PlanB, Some(8))),
    Some((Kind::Poptrie, Some(0))),
    Some((Kind::Poptrie, Some(6))),
    Some((Kind::Poptrie, Some(12))),
    Some((Kind::Poptrie32, Some(0))),
    Some((Kind::Poptrie32, Some(5))),
    Some((Kind::Flat, Some(0))),
    Some((Kind::Flat, Some(4))),
    Some((Kind::Flat, Some(13))),
];

/// Values of the round-trip tables: empty, ASCII, multi-byte.
const VALUES: [&str; 8] = [
    "",
    "AS1",
    "é",
    "AS65536",
    "x\u{1F600}y",
    "0",
    "ü",
    "AS4200000000",
];

/// Write the table `data[1..]` spells ([`EngineCase`]) under the engine
/// `data[0]` picks, open the file, and compare every answer (single,
/// batch, value engine) with the route table's on every route boundary.
pub fn check_image_round_trip(data: &[u8]) -> Result<(), String> {
    let Some((&pick, rest)) = data.split_first() else {
        return Ok(());
    };
    let c = EngineCase::decode(rest);
    let mut table = Table::new();
    for &(p, v) in &c.v4 {
        let _ = table.insert(
            AnyPrefix::V4(p),
            VALUES[v as usize % VALUES.len()].to_owned(),
        );
    }
    for &(p, v) in &c.v6 {
        let _ = table.insert(
            AnyPrefix::V6(p),
            VALUES[v as usize % VALUES.len()].to_owned(),
        );
    }
    let force = ROUND_TRIP_PICKS[usize::from(pick) % ROUND_TRIP_PICKS.len()];
    let opts = AutoOptions {
        force,
        calibrate: false,
        ..AutoOptions::default()
    };
    let bytes = to_bytes(&table, &opts, "fuzz").map_err(|e| format!("{force:?}: {e}"))?;
    let mut resealed = bytes.clone();
    reseal(&mut resealed);
    if resealed != bytes {
        return Err("reseal changed a file as written".into());
    }
    let img = ImageTable::from_bytes(&bytes).map_err(|e| format!("{force:?}: {e}"))?;
    if img.source != "fuzz" {
        return Err(format!("source {:?}", img.source));
    }
    let routes4: Vec<Prefix<u32>> = table.v4.iter().map(|(p, _)| p).collect();
    let routes6: Vec<Prefix<u128>> = table.v6.iter().map(|(p, _)| p).collect();
    let want = |a| table.lookup(a).map(|(p, v)| (p, v.as_str()));
    same(&img.v4, &routes4, &c.q4, AnyAddr::V4, &want)
        .map_err(|e| format!("{force:?} IPv4: {e}"))?;
    same(&img.v6, &routes6, &c.q6, AnyAddr::V6, &want).map_err(|e| format!("{force:?} IPv6: {e}"))
}

/// The file's family answers as the route table does.
fn same<'t, A: Family>(
    f: &FamilyImage<A>,
    routes: &[Prefix<A>],
    extra: &[A],
    any: fn(A) -> AnyAddr,
    want: &dyn Fn(AnyAddr) -> Option<(AnyPrefix, &'t str)>,
) -> Result<(), String>
where
    AnyPrefix: From<Prefix<A>>,
{
    if f.prefixes() != routes {
        return Err(format!(
            "{} routes in the file, {} in the table (or another order)",
            f.len(),
            routes.len()
        ));
    }
    let mut q = boundary_queries(routes.iter().copied());
    q.extend_from_slice(extra);
    let mut ord = vec![0u32; q.len()];
    f.lookup_batch::<32>(&q, &mut ord);
    let mut slots = vec![0u32; q.len()];
    f.by_value().lookup_batch::<16>(&q, &mut slots);
    for (i, &a) in q.iter().enumerate() {
        let want = want(any(a));
        let single = f.lookup(a).map(|(p, v)| (AnyPrefix::from(p), v));
        let batch = f.route(ord[i]).map(|(p, v)| (AnyPrefix::from(p), v));
        if single != want || batch != want {
            return Err(format!(
                "at {a:?}: single {single:?}, batch {batch:?}, route table {want:?}"
            ));
        }
        let value = f.value(f.value_slot(a));
        let value_batch = f.value(slots[i]);
        let want = want.map(|w| w.1);
        if value != want || value_batch != want {
            return Err(format!(
                "at {a:?}: value {value:?}, batch {value_batch:?}, route table {want:?}"
            ));
        }
    }
    Ok(())
}
