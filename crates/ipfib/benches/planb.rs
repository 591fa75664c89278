//! Criterion micro-benchmarks for PlanB: single and batch lookups on
//! synthetic tables shaped like real ones, and the build.
//! Run: `cargo bench -p ipfib --bench planb` (pin with `taskset -c 1`).
//! Full side-by-side figures come from `ipfib bench` (BENCHMARKS.md).

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use ipfib::engine::planb::KERNELS;
use ipfib::engine::planb::{Family, PlanB, PlanBOptions};
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

fn lookups<A: Family>(c: &mut Criterion, name: &str, iv: &Intervals<A>, prefixes: &[Prefix<A>]) {
    let mut g = c.benchmark_group(format!("planb/{name}"));
    g.throughput(Throughput::Elements(TRACE as u64));
    g.sample_size(20);
    for kernel in KERNELS.supported() {
        let e = PlanB::build(
            iv,
            &PlanBOptions {
                kernel: Some(kernel),
                direct_bits: None,
                ..Default::default()
            },
        )
        .expect("build");
        for (trace_name, trace) in [
            ("uniform", uniform_trace::<A>(TRACE, 1)),
            ("matched", matched_trace(prefixes, TRACE, 2)),
        ] {
            let mut out = vec![0u32; TRACE];
            g.bench_function(
                BenchmarkId::new(format!("{kernel}/single"), trace_name),
                |b| {
                    b.iter(|| {
                        for (o, &a) in out.iter_mut().zip(&trace) {
                            *o = e.lookup(black_box(a));
                        }
                    })
                },
            );
            g.bench_function(
                BenchmarkId::new(format!("{kernel}/batch16"), trace_name),
                |b| b.iter(|| e.lookup_batch::<16>(black_box(&trace), &mut out)),
            );
            g.bench_function(
                BenchmarkId::new(format!("{kernel}/batch32"), trace_name),
                |b| b.iter(|| e.lookup_batch::<32>(black_box(&trace), &mut out)),
            );
        }
    }
    g.finish();
}

fn build<A: Family>(c: &mut Criterion, name: &str, iv: &Intervals<A>) {
    let mut g = c.benchmark_group("planb/build");
    g.sample_size(10);
    g.bench_function(name, |b| {
        b.iter_batched(
            || iv.clone(),
            |iv| PlanB::build(&iv, &PlanBOptions::default()).expect("build"),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let (v4, p4) = intervals(synthetic_v4(606_000, 4));
    let (v6, p6) = intervals(synthetic_v6(1_000_000, 6));
    lookups(c, "v4-606k", &v4, &p4);
    lookups(c, "v6-1m", &v6, &p6);
    build(c, "v4-606k", &v4);
    build(c, "v6-1m", &v6);
}

criterion_group!(planb, benches);
criterion_main!(planb);
