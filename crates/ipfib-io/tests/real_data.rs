//! The real tables in `../shared/data` (a sibling of the repository root).
//! (The MRT files are in `mrt_real.rs`.)
//!
//! Expected counts were checked independently of this crate: with
//! `zcat FILE | grep -v '^[;#]' | awk '{print $1}' | sort -u | wc -l`, and
//! with Python's `ipaddress.ip_network(strict=True)` for canonical distinct
//! prefixes (no file has duplicates or host bits set) and distinct values.
//! The LINX update file: replayed in Python (`ip_network`, a dict per
//! prefix: `a` sets the next hop, `w` removes it).

mod common;

use common::{data_file, data_file_in};
use ipfib_io::{
    load_table, read_routes, AnyPrefix, Format, LoadOptions, LoadedRoutes, TableOptions,
};
use std::collections::HashSet;
use std::path::Path;

#[test]
fn missing_data_skips_locally_and_fails_in_ci() {
    let missing = Path::new("/nonexistent/shared/data");
    let outcome = std::panic::catch_unwind(|| data_file_in(missing, "x"));
    if std::env::var("CI").as_deref() == Ok("true") {
        assert!(
            outcome.is_err(),
            "CI=true must turn missing data into a failure"
        );
    } else {
        assert_eq!(outcome.ok(), Some(None));
    }
}

struct Expect {
    format: Format,
    lines: u64,
    v4: usize,
    v6: usize,
    distinct_values: usize,
    first: (&'static str, &'static str),
}

fn check(name: &str, want: Expect) -> Option<LoadedRoutes> {
    let path = data_file(name)?;
    let loaded = read_routes(&path, &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{name} failed to load: {e}"));
    // The lenient front door reads the same routes, with nothing to report.
    let lenient = load_table(&path, &TableOptions::default()).unwrap();
    assert_eq!(lenient.routes, loaded.routes, "{name}");
    assert!(!lenient.report.has_problems(), "{name}");
    assert_eq!(lenient.report.records, loaded.lines, "{name}");
    assert_eq!(loaded.format, want.format, "{name}");
    assert_eq!(loaded.lines, want.lines, "{name}");
    let v4 = loaded
        .routes
        .iter()
        .filter(|r| r.prefix.family() == 4)
        .count();
    let v6 = loaded.routes.len() - v4;
    assert_eq!((v4, v6), (want.v4, want.v6), "{name}: routes per family");
    let distinct: HashSet<AnyPrefix> = loaded.routes.iter().map(|r| r.prefix).collect();
    assert_eq!(
        distinct.len(),
        want.v4 + want.v6,
        "{name}: distinct prefixes"
    );
    let values: HashSet<&str> = loaded.routes.iter().map(|r| r.value.as_str()).collect();
    assert_eq!(
        values.len(),
        want.distinct_values,
        "{name}: distinct values"
    );
    let first = &loaded.routes[0];
    assert_eq!(
        (first.prefix.to_string().as_str(), first.value.as_str()),
        want.first,
        "{name}: first route"
    );
    Some(loaded)
}

#[test]
fn pyasn_2015_ipasn_table() {
    let Some(loaded) = check(
        "routeviews-20151101.ipasn.dat.gz",
        Expect {
            format: Format::Ipasn,
            lines: 633_837,
            v4: 606_138,
            v6: 27_693,
            distinct_values: 52_014,
            first: ("1.0.0.0/24", "15169"),
        },
    ) else {
        return;
    };
    // Six ';' header lines, so the first route is on line 7.
    assert_eq!(loaded.routes[0].line, 7);
}

#[test]
fn routeviews_2026_ipv4_table() {
    let Some(loaded) = check(
        "routeviews-rv2-20260730-1400.pfx2as.txt.gz",
        Expect {
            format: Format::Text,
            lines: 1_107_943,
            v4: 1_107_938,
            v6: 0,
            distinct_values: 78_468,
            first: ("1.0.0.0/24", "13335"),
        },
    ) else {
        return;
    };
    assert_eq!(loaded.routes[0].line, 6);
    let lens: HashSet<u8> = loaded.routes.iter().map(|r| r.prefix.len()).collect();
    assert_eq!(lens.iter().min(), Some(&8));
    assert_eq!(lens.iter().max(), Some(&32));
}

#[test]
fn routeviews_2026_ipv6_table() {
    check(
        "routeviews-rv6-20260730-1400.pfx2as.txt.gz",
        Expect {
            format: Format::Text,
            lines: 258_961,
            v4: 0,
            v6: 258_956,
            distinct_values: 36_487,
            first: ("2000:b70:25::/48", "262191"),
        },
    );
}

#[test]
fn linx_ipv6_table_with_next_hop_values() {
    check(
        "linx-rib-ipv6.20141225.0000.p69.txt.gz",
        Expect {
            format: Format::Text,
            lines: 20_440,
            v4: 0,
            v6: 20_440,
            distinct_values: 94,
            first: ("2600:2004::/32", "2001:7f8:4::1a0b:1"),
        },
    );
}

#[test]
fn linx_update_stream_replays_to_its_final_fib() {
    let Some(path) = data_file("linx-update.20141217.0000-p52.txt.gz") else {
        return;
    };
    let l = load_table(&path, &TableOptions::default()).unwrap();
    assert_eq!(l.report.format, Format::Updates);
    assert_eq!(l.report.records, 23_446);
    assert!(!l.report.has_problems());
    let m = l.report.mrt.as_ref().unwrap();
    assert_eq!((m.announcements, m.withdrawals), (18_141, 5_305));
    let values: HashSet<&str> = l.routes.iter().map(|r| r.value.as_str()).collect();
    assert_eq!((l.routes.len(), values.len()), (3_294, 32));
    assert!(l.routes.iter().all(|r| r.prefix.family() == 4));
}
