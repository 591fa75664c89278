//! Criterion micro-benchmarks for the Poptrie layouts (64-ary `Node`,
//! 32-ary `Node32`, the flat layout): batch lookups on synthetic tables
//! shaped like real ones, and the build.
//! Run: `cargo bench -p ipfib --bench poptrie` (pin with `taskset -c 1`).
//! Full side-by-side figures come from `ipfib bench` (BENCHMARKS.md).

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use ipfib::engine::poptrie::{FlatPoptrie, Node, Node32, Poptrie, PoptrieOptions};
use ipfib::engine::{Engine, Family};
use ipfib::gen::{matched_trace, synthetic_v4, synthetic_v6, uniform_trace};
use ipfib::intervals::{compile, Intervals};
use ipfib::prefix::Prefix;
use ipfib::route_table::RouteTable;
use std::hint::black_box;

const TRACE: usize = 1 << 16;

fn intervals<A: Family>(routes: Vec<(Prefix<A>, u32)>) -> (Intervals<A>, Vec<Prefix<A>>) {
    let t: RouteTable<A, u32> = routes.into_iter().collect();
    (
        compile(t.iter_indices()),
        t.iter().map(|(p, _)| p).collect(),
    )
}

/// Batch-32 lookups of one layout on both traces, and its build.
fn layout<A: Family, E: Engine<A, Options = PoptrieOptions>>(
    c: &mut Criterion,
    table: &str,
    layout: &str,
    iv: &Intervals<A>,
    prefixes: &[Prefix<A>],
) {
    let e = E::build(iv, &PoptrieOptions::default()).expect("build");
    let mut g = c.benchmark_group(format!("poptrie/{table}"));
    g.throughput(Throughput::Elements(TRACE as u64));
    g.sample_size(20);
    for (trace_name, trace) in [
        ("uniform", uniform_trace::<A>(TRACE, 1)),
        ("matched", matched_trace(prefixes, TRACE, 2)),
    ] {
        let mut out = vec![0u32; TRACE];
        g.bench_function(
            BenchmarkId::new(format!("{layout}/batch32"), trace_name),
            |b| b.iter(|| e.lookup_batch::<32>(black_box(&trace), &mut out)),
        );
    }
    g.finish();
    let mut g = c.benchmark_group("poptrie/build");
    g.sample_size(10);
    g.bench_function(format!("{table}/{layout}"), |b| {
        b.iter_batched(
            || iv.clone(),
            |iv| E::build(&iv, &PoptrieOptions::default()).expect("build"),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let (v4, p4) = intervals(synthetic_v4(606_000, 4));
    let (v6, p6) = intervals(synthetic_v6(259_000, 6));
    layout::<u32, Poptrie<u32, Node>>(c, "v4-606k", "node64", &v4, &p4);
    layout::<u32, Poptrie<u32, Node32>>(c, "v4-606k", "node32", &v4, &p4);
    layout::<u32, FlatPoptrie<u32>>(c, "v4-606k", "flat", &v4, &p4);
    layout::<u128, Poptrie<u128, Node>>(c, "v6-259k", "node64", &v6, &p6);
    layout::<u128, Poptrie<u128, Node32>>(c, "v6-259k", "node32", &v6, &p6);
    layout::<u128, FlatPoptrie<u128>>(c, "v6-259k", "flat", &v6, &p6);
}

criterion_group!(poptrie, benches);
criterion_main!(poptrie);
