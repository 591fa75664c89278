#![no_main]
//! RIB snapshots (`ipfib_rib::snapshot::load_bytes`) on arbitrary bytes.
//! A file that starts with the magic gets both checksums recomputed
//! first (the layout's trailer: the last 72 bytes), so the fuzzer reaches
//! the structure behind them rather than stopping at a checksum. Besides
//! not panicking: a file that loads holds well-formed route lists, and
//! written again and loaded again it holds the same routes.

use ipfib_rib::snapshot::{self, reseal};
use ipfib_rib::Rib;
use libfuzzer_sys::fuzz_target;

fn routes(rib: &Rib) -> Vec<String> {
    let mut prefixes = Vec::new();
    rib.for_each_prefix(|r| prefixes.push(r.prefix));
    let mut out: Vec<String> = prefixes
        .iter()
        .flat_map(|p| rib.routes(p))
        .map(|r| {
            format!(
                "{} {:?} {} {:?} {}",
                r.prefix, r.peer.key, r.path_id, r.attrs, r.peer.stale
            )
        })
        .collect();
    out.sort();
    out
}

fuzz_target!(|data: &[u8]| {
    let mut b = data.to_vec();
    reseal(&mut b);
    let rib = Rib::new();
    if snapshot::load_bytes(&b, &rib, true).is_err() {
        return;
    }
    rib.validate_route_lists();
    let mut again = Vec::new();
    snapshot::write(&rib, &mut again).expect("write to memory");
    let back = Rib::new();
    snapshot::load_bytes(&again, &back, true).expect("a written snapshot loads");
    assert_eq!(routes(&rib), routes(&back));
});
