//! Differential checking (test support, public so every crate's tests and
//! the fuzz targets share one definition): build every engine variant from
//! the same routes and compare each answer with the route table and, on
//! request, the brute-force oracle.
//!
//! A mismatch is returned as a `Mismatch` describing the engine variant,
//! the address and both answers, so a failing test says exactly what broke.

mod bytes;
mod differential;
mod engines;
mod fib;
mod image;

pub use differential::{
    boundary_queries, cases, check_batches, check_engines, check_engines_small, Mismatch, LAYOUTS,
    POPTRIE_LAYOUTS, SMALL_LAYOUTS, SMALL_POPTRIE_LAYOUTS,
};
pub use engines::{check_engine_bytes, EngineCase};
pub use fib::{check_fib_script, FibOp, FibScript, FIB_FUZZ_MAX_OPS};
pub use image::{check_image_bytes, check_image_round_trip, IMAGE_MODES};
