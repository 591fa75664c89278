#![no_main]
//! The MaxMind DB loader on arbitrary bytes (whole record, a field, auto
//! detection); the checks are in common.rs.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::run("mmdb", data));
