#![no_main]
//! The ranges reader on arbitrary bytes; the checks are in common.rs.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::run("ranges", data));
