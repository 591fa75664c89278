#![no_main]
//! Arbitrary bytes as one BMP session's stream (framed by `bmp::frame`,
//! each message through `Session::handle`) into a fresh RIB; then the
//! RIB's counters must agree with its entries (bmp_check.rs).
//!
//! Seeds: `seeds/bmp_session/` is the minimized corpus (`cargo fuzz
//! cmin`) of runs that started from cuts of the shared recordings made
//! by `make_bmp_seeds.py` (each the opening of a stream, so that peers
//! and ADD-PATH are set up, then a run of real messages). Each input
//! builds a RIB (an empty FIB with its direct tables, about 5 ms
//! natively), so executions are few; without a sanitizer and with debug
//! assertions (overflow checks) they are about twice as many as under
//! ASan (the decoder and the RIB are safe Rust; ASan runs over the corpus
//! afterwards with `-runs=0`):
//!
//! ```sh
//! cd fuzz
//! cargo +nightly fuzz run -s none -a --target-dir target/nosan bmp_session \
//!     corpus/bmp_session seeds/bmp_session -- -max_total_time=1800 -max_len=4096
//! ```

use libfuzzer_sys::fuzz_target;

#[path = "bmp_check.rs"]
mod bmp_check;

fuzz_target!(|data: &[u8]| bmp_check::bmp_session(data));
