//! ipfib: exact longest-prefix match for IPv4 and IPv6, compiled from a
//! route table into a linearized B+-tree (PlanB) searched with SIMD, or a
//! popcount-indexed 64-ary trie (Poptrie).
//!
//! ```text
//!   text / ipasn file ──(ipfib-io)──► Table<V> ─┬─ RouteTable<u32, V>   radix trie: the mutable
//!                                               └─ RouteTable<u128, V>  source of truth + `radix`
//!                                                        │ one ordered walk (iter_indices)
//!                                                        ▼
//!                                           intervals::compile ── Intervals<A>
//!                                 (sorted elementary intervals, payload = route or value)
//!                                                        │ linear build
//!                                                        ▼
//!        engine::planb::PlanB<A>: direct table (top s bits) ─► window | local B+-tree
//!                                  ─► payload ─► (IPv6 >/64: stage 2)
//!        engine::poptrie::Poptrie<A>: direct table (top s bits) ─► leaf | 64-ary node
//!                                  ─► (6 bits per level, popcount) ─► leaf
//!        engine::poptrie::FlatPoptrie<A>: direct table over the dominant prefix (outer
//!                                  table for the rest) ─► 64-bit entry: leaf | 32-ary
//!                                  node header ─► (5 bits per level, one read) ─► leaf
//!                                                        │ both implement engine::Engine
//!           compiled::Compiled<A, V, E> / table::CompiledTable<V, E4, E6>: (prefix, &value)
//! ```
//!
//! Where to start reading:
//! - `addr.rs`, `prefix.rs`: the `Addr` trait over u32/u128, `Prefix<A>`,
//!   `AnyPrefix`/`AnyAddr` (the IPv4-mapped rule lives in `AnyAddr`);
//!   `addr_text.rs`: addresses from ASCII bytes (`AnyAddr::parse_ascii`,
//!   std's grammar exactly, for block readers); `convert.rs`: `From`,
//!   `TryFrom`, `FromStr` with `std::net` and (feature `ipnet`) `ipnet`.
//! - `route_table.rs`: path-compressed radix trie; `values.rs`: value interning.
//! - `intervals.rs`: the interval compiler (one walk, merges equal neighbours).
//! - `engine/planb/`: `mod.rs` (build, direct pointing, buckets), `tree.rs`
//!   (layout, local trees), `search.rs` (single and batch search, the one
//!   kernel dispatch point), `stage2.rs` (IPv6 beyond /64), `kernel/` (one
//!   file per instruction set), `validate.rs` (structural check).
//!   "Why is this IPv6 lookup slow?": `search.rs` then `tree.rs`.
//! - `engine/poptrie/`: `mod.rs` (node layout, options, kernels), `build.rs`
//!   (intervals to direct table, nodes, leaves), `search.rs` (single and
//!   batch search, the one popcount dispatch point), `avx512.rs` (the
//!   batch, eight lanes per vector), `update.rs` (in-place slot updates),
//!   `validate.rs` (structural check, with the arena after updates),
//!   `flat/` (the flat layout: one 64-bit read per level; the fastest IPv6
//!   batches).
//! - `engine/contract.rs`: the `Engine` trait every engine implements
//!   (build from intervals, lookup, lookup_batch, footprint, name);
//!   `engine/mod.rs`: `Family`; `engine/kind.rs`: `Kind`, `Pick`;
//!   `engine/registry.rs`: engine names and specs, `Built`;
//!   `engine/auto/`: the choice (`shape.rs`, `calibrate.rs`, `choice.rs`,
//!   `options.rs`) and `AutoEngine` (`mod.rs`).
//! - `compiled.rs`, `table.rs`: user-facing snapshots (`lookup -> (prefix, &V)`).
//! - `image/`: compiled table files: `mod.rs` (opening), `codec.rs` (the
//!   section format), `engines/` (each engine's file form), `table.rs`
//!   (a table's families, routes and values).
//! - `fib/`: `Fib<V>`, the dynamic FIB: updates while readers look up
//!   through snapshots (`mod.rs`: the writer, publication, staleness;
//!   `snapshot.rs`: readers and snapshots; `options.rs`: options, errors,
//!   stats; `family.rs`: per-family sides, Poptrie slot updates, value
//!   slots).
//! - `oracle.rs` (brute force) and `check/` (differential checks): test
//!   support, compiled only with the `testing` feature (the workspace's
//!   tests, benches and fuzz targets turn it on; users never see them).
//! - `gen.rs`: seeded synthetic tables and traces (the `gen` feature:
//!   `ipfib bench`, `ipfib replay` and the tests build their workloads
//!   with it); `rng.rs`: its seeded generator, `Rng`.
//! - `plain.rs`: `Plain`, the types an engine array may be read as
//!   straight from a compiled table file.
//! - `cpu.rs`: CPU features by name; every kernel's detection checks the
//!   list its `#[target_feature]` functions are compiled with.
//! - `mem.rs`: cache-line/huge-page aligned buffers for lookup structures,
//!   and the non-temporal input prefetch every batch kernel uses.

pub mod addr;
mod addr_text;
/// Differential checks (test support: the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub mod check;
pub mod compiled;
mod convert;
mod cpu;
pub mod engine;
mod fault;
pub mod fib;
// Seeded synthetic tables and traces: the `gen` feature.
#[cfg(any(test, feature = "gen"))]
pub mod gen;
pub mod image;
pub mod intervals;
pub mod mem;
/// The brute-force oracle (test support: the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub mod oracle;
pub mod par;
mod plain;
pub mod prefix;
// `Rng` is public through `gen` (the `gen` feature); without it the
// crate uses it alone (the engine choice's sample addresses).
#[cfg_attr(not(any(test, feature = "gen")), allow(dead_code))]
mod rng;
pub mod route_table;
pub mod table;
pub mod values;
