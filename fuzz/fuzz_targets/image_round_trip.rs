#![no_main]
//! A small table the bytes spell (ipfib::check::EngineCase, after a first
//! byte that forces the engine kind and its direct bits), written as a
//! compiled table file and opened again: the file must answer exactly as
//! the route table (ipfib::check::check_image_round_trip).
//!
//! cargo +nightly fuzz run image_round_trip corpus/image_round_trip seeds/engines -- \
//!     -max_total_time=600 -rss_limit_mb=2048 -timeout=10 -max_len=2048

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = ipfib::check::check_image_round_trip(data) {
        panic!("{e}");
    }
});
