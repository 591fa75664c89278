#![no_main]
//! Arbitrary bytes as a compiled table file (`ipfib::image`): the first
//! byte opens it verified, unverified or resealed (every checksum
//! recomputed, so mutations reach the structural checks), and a file that
//! opens answers single and batch lookups on addresses from the input and
//! its own routes, every answer a miss or below the route (value) count
//! callers index with (ipfib::check::check_image_bytes). Seeds:
//! `cargo test -p ipfib --test image -- --ignored write_image_fuzz_seeds`.
//!
//! cargo +nightly fuzz run image_open corpus/image_open seeds/image_open -- \
//!     -max_total_time=1800 -rss_limit_mb=2048 -timeout=10 -max_len=65536

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = ipfib::check::check_image_bytes(data) {
        panic!("{e}");
    }
});
