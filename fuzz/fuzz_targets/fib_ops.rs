#![no_main]
//! Scripts of dynamic-FIB operations (insert, remove, apply_batch,
//! replace_all, flush, publish_if_due, snapshots held across them)
//! against the brute-force oracle at every published version, IPv4 and
//! IPv6, with the structural validators on (ipfib::check::FibScript).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let script = ipfib::check::FibScript::decode(data, ipfib::check::FIB_FUZZ_MAX_OPS);
    if let Err(e) = ipfib::check::check_fib_script(&script) {
        panic!("{e}");
    }
});
