//! PlanB's structural validator accepts every layout the builder makes
//! from the real tables: each direct-bits setting from 1 to 24, with and
//! without sub-tables (and with sub-tables forced on small buckets), for
//! both families, on the route ordinals and on aggregated values. The
//! validator refuses a tree node with separators reached twice; a false
//! refusal of a legitimate build would make `Table.open` reject a file the
//! library itself compiled. The engine is also compared with the interval
//! table on the interval starts (+-1) so a layout that validates but is
//! wrong does not pass either.

mod common;

use common::data_file;
use ipfib::addr::Addr;
use ipfib::engine::planb::{PlanB, PlanBOptions};
use ipfib::engine::Family;
use ipfib::intervals::{compile, Intervals};
use ipfib::prefix::{AnyPrefix, Prefix};
use ipfib::route_table::RouteTable;
use ipfib_io::{load_table, TableOptions};

fn layouts<A: Family + Addr>(name: &str, iv: &Intervals<A>) {
    let mut probes: Vec<A> = Vec::new();
    for &s in iv.starts.iter().step_by(7) {
        probes.push(s);
        probes.extend(s.checked_pred());
        probes.extend(s.checked_succ());
    }
    let want: Vec<u32> = probes.iter().map(|&a| iv.resolve(a)).collect();
    for s in 1..=PlanBOptions::MAX_DIRECT_BITS {
        for sub in [Some(usize::MAX), None, Some(17)] {
            let opts = PlanBOptions {
                kernel: None,
                direct_bits: Some(s),
                sub_min_keys: sub,
            };
            let e = PlanB::build(iv, &opts).unwrap();
            assert_eq!(e.validate(), Ok(()), "{name}: s={s} sub>{sub:?}");
            let got: Vec<u32> = probes.iter().map(|&a| e.lookup(a)).collect();
            assert!(got == want, "{name}: s={s} sub>{sub:?}: answers differ");
        }
    }
}

fn values<A: Addr>(t: &RouteTable<A, u32>) -> Vec<(Prefix<A>, u32)> {
    t.iter().map(|(p, &v)| (p, v)).collect()
}

fn table(name: &str) {
    let Some(path) = data_file(name) else {
        return;
    };
    let loaded = load_table(&path, &TableOptions::default()).unwrap();
    let mut t4: RouteTable<u32, String> = RouteTable::new();
    let mut t6: RouteTable<u128, String> = RouteTable::new();
    // The same tables with value ids: adjacent equal values merge into
    // fewer, wider intervals.
    let mut ids = std::collections::HashMap::new();
    let mut w4: Vec<(Prefix<u32>, u32)> = Vec::new();
    let mut w6: Vec<(Prefix<u128>, u32)> = Vec::new();
    for r in loaded.routes {
        let n = ids.len() as u32;
        let id = *ids.entry(r.value.clone()).or_insert(n);
        match r.prefix {
            AnyPrefix::V4(p) => {
                t4.insert(p, r.value).unwrap();
                w4.push((p, id));
            }
            AnyPrefix::V6(p) => {
                t6.insert(p, r.value).unwrap();
                w6.push((p, id));
            }
        }
    }
    let v4: Intervals<u32> = compile(t4.iter_indices());
    let v6: Intervals<u128> = compile(t6.iter_indices());
    layouts(&format!("{name} IPv4"), &v4);
    layouts(&format!("{name} IPv6"), &v6);
    let val4: RouteTable<u32, u32> = w4.into_iter().collect();
    let val6: RouteTable<u128, u32> = w6.into_iter().collect();
    layouts(&format!("{name} IPv4 values"), &compile(values(&val4)));
    layouts(&format!("{name} IPv6 values"), &compile(values(&val6)));
}

#[test]
fn pfx2as_v4() {
    table("routeviews-rv2-20260730-1400.pfx2as.txt.gz");
}

#[test]
fn pfx2as_v6() {
    table("routeviews-rv6-20260730-1400.pfx2as.txt.gz");
}

#[test]
fn ipasn() {
    table("routeviews-20151101.ipasn.dat.gz");
}

#[test]
fn mmdb_country() {
    table("mmdb/iptoasn-country.mmdb");
}
