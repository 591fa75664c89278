#![no_main]
//! Every engine variant (PlanB kernels and layouts, Poptrie 64- and
//! 32-ary, flat Poptrie) against the route table and the brute-force
//! oracle, on route sets the input spells (ipfib::check::EngineCase).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = ipfib::check::check_engine_bytes(data) {
        panic!("{e}");
    }
});
