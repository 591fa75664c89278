// The checks of every fuzz target, one function per reader: every entry
// point, lenient and strict, on the same bytes, with the invariants that
// must hold whatever the input. Shared with crates/ipfib-io/tests/
// fuzz_regressions.rs, which replays the inputs the fuzzers found.

#![allow(dead_code)]

use ipfib_io::{
    load_table_from, read_updates_from, FieldPath, Format, HostBits, PeerSelector, TableOptions,
    ValuePolicy,
};
use std::io::Cursor;

/// Runs the checks of the target `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "text" => lines(data, Format::Text),
        "ipasn" => lines(data, Format::Ipasn),
        "pfx2as" => lines(data, Format::Pfx2as),
        "updates" => updates(data),
        "mrt" => mrt(data),
        "mmdb" => mmdb(data),
        "ranges" => ranges(data),
        other => panic!("no fuzz target {other}"),
    }
}

/// A line table, and `Auto` (the sniffer and whatever it picks).
pub fn lines(data: &[u8], format: Format) {
    table(data, format, None);
    table(data, Format::Auto, None);
}

/// A ranges table with the default value column and a later one, and
/// `Auto`.
pub fn ranges(data: &[u8]) {
    for column in [None, Some(4)] {
        table_with(data, Format::Ranges, None, column, None);
    }
    table(data, Format::Auto, None);
}

pub fn updates(data: &[u8]) {
    table(data, Format::Updates, None);
    table(data, Format::Updates, Some(ValuePolicy::PeerCount));
    events(data, Format::Updates);
}

pub fn mrt(data: &[u8]) {
    for value in [
        ValuePolicy::OriginAsn,
        ValuePolicy::PeerCount,
        ValuePolicy::NextHop(PeerSelector::Index(0)),
    ] {
        table(data, Format::Mrt, Some(value));
    }
    events(data, Format::Mrt);
}

/// A MaxMind DB: the whole record, a field, and `Auto` (which must see it
/// too when the bytes end with the metadata marker).
pub fn mmdb(data: &[u8]) {
    table(data, Format::Mmdb, None);
    let field = FieldPath::parse("a.0").expect("a valid path");
    table_with(data, Format::Mmdb, None, None, Some(field));
    table(data, Format::Auto, None);
}

fn table(data: &[u8], format: Format, value: Option<ValuePolicy>) {
    table_with(data, format, value, None, None);
}

fn table_with(
    data: &[u8],
    format: Format,
    value: Option<ValuePolicy>,
    value_column: Option<usize>,
    field: Option<FieldPath>,
) {
    let opts = |strict| TableOptions {
        format,
        host_bits: HostBits::Reject,
        value,
        strict,
        field: field.clone(),
        value_column,
    };
    let lenient = load_table_from(Cursor::new(data.to_vec()), "fuzz", &opts(false));
    let again = load_table_from(Cursor::new(data.to_vec()), "fuzz", &opts(false));
    let strict = load_table_from(Cursor::new(data.to_vec()), "fuzz", &opts(true));
    if let (Ok(l), Ok(a)) = (&lenient, &again) {
        assert_eq!(l.routes, a.routes, "loading is deterministic");
    }
    if let Ok(l) = &lenient {
        let r = &l.report;
        assert!(r.bytes <= data.len() as u64);
        if let Some(d) = &r.damage {
            assert!(d.offset <= data.len() as u64);
            assert!(d.records_before <= r.records);
        }
        assert!(r.errors.len() as u64 <= r.bad);
        // Nothing wrong leniently: strict reads the same table.
        if r.bad == 0 && r.damage.is_none() {
            let s = strict
                .as_ref()
                .expect("strict fails where lenient found nothing");
            assert_eq!(s.routes, l.routes);
        }
    }
    if let Ok(s) = &strict {
        assert!(s.report.damage.is_none() && s.report.bad == 0);
    }
}

fn events(data: &[u8], format: Format) {
    for strict in [false, true] {
        let opts = TableOptions {
            format,
            strict,
            ..Default::default()
        };
        if let Ok(mut events) = read_updates_from(Cursor::new(data.to_vec()), "fuzz", &opts) {
            let mut failed = false;
            for ev in events.by_ref().take(1 << 20) {
                assert!(!failed, "nothing after a strict error");
                failed = ev.is_err();
            }
            let r = events.report();
            assert!(r.bytes <= data.len() as u64);
            assert!(!strict || (r.bad == 0 && r.damage.is_none()));
        }
    }
}
