//! Compiled table files: how long opening takes (median and range of
//! several opens; the file is in the page cache after the first), with and
//! without checksum verification; and whether lookups from the mapping run
//! as fast as from a table freshly built in memory with the same engines
//! (batch lookups over route ordinals, uniform and matched traces, median
//! of several passes).
//!
//! `cargo run --release -p ipfib --example image_open -- FILE [RUNS [open-only]]`
//! (pin it for stable figures: `taskset -c 1 target/release/examples/image_open FILE`)

use ipfib::engine::auto::{AutoOptions, Pick};
use ipfib::engine::{Engine, Family};
use ipfib::gen::{matched_trace, uniform_trace};
use ipfib::image::{FamilyImage, ImageTable, OpenOptions};
use ipfib::prefix::Prefix;
use ipfib::route_table::RouteTable;
use std::time::Instant;

fn median_range(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// MLPS of `f` over `addrs` (batch of 32), median and range of `passes`.
fn rate<A>(addrs: &[A], passes: usize, mut f: impl FnMut(&[A], &mut [u32])) -> (f64, f64, f64) {
    let mut out = vec![0u32; addrs.len()];
    f(addrs, &mut out); // warm-up
    let v = (0..passes)
        .map(|_| {
            let t = Instant::now();
            f(addrs, &mut out);
            std::hint::black_box(&out);
            addrs.len() as f64 / t.elapsed().as_secs_f64() / 1e6
        })
        .collect();
    median_range(v)
}

fn compare<A: Family>(name: &str, fam: &FamilyImage<A>, seed: u64) {
    if fam.is_empty() {
        return;
    }
    // The same engines, built in memory from the same routes.
    let choice = fam.by_route().choice().clone();
    let force: Pick = choice.batch;
    let opts = AutoOptions {
        force: Some(force),
        calibrate: false,
        ..AutoOptions::default()
    };
    let mut t: RouteTable<A, u32> = RouteTable::new();
    for (i, p) in fam.prefixes().iter().enumerate() {
        t.insert(*p, i as u32).expect("routes fit");
    }
    let fresh = ipfib::compiled::Compiled::<A, u32>::build(&t, &opts).expect("builds");
    let prefixes: Vec<Prefix<A>> = fam.prefixes().to_vec();
    for (trace, addrs) in [
        ("uniform", uniform_trace::<A>(2_000_000, seed)),
        (
            "matched",
            matched_trace::<A>(&prefixes, 2_000_000, seed + 1),
        ),
    ] {
        let m = rate(&addrs, 7, |a, o| fam.lookup_batch::<32>(a, o));
        let b = rate(&addrs, 7, |a, o| fresh.lookup_batch::<32>(a, o));
        println!(
            "{name} {trace}: mapped {:.1} MLPS ({:.1}-{:.1}), built {:.1} MLPS ({:.1}-{:.1}) [{}]",
            m.0,
            m.1,
            m.2,
            b.0,
            b.1,
            b.2,
            fresh.engine().name()
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: image_open FILE [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(21);
    for verify in [true, false] {
        let ms = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let img = ImageTable::open_with(
                    path.as_ref(),
                    OpenOptions {
                        verify_checksums: verify,
                        ..OpenOptions::default()
                    },
                )
                .unwrap_or_else(|e| {
                    eprintln!("{path}: {e}");
                    std::process::exit(2);
                });
                let ms = t.elapsed().as_secs_f64() * 1e3;
                std::hint::black_box(img.v4.lookup(0x0101_0101));
                ms
            })
            .collect();
        let (med, lo, hi) = median_range(ms);
        println!(
            "open (verify_checksums={verify}): median {med:.2} ms, range {lo:.2}-{hi:.2} ms over {runs} opens"
        );
    }
    if args.next().as_deref() == Some("open-only") {
        return;
    }
    let img = ImageTable::open(path.as_ref()).expect("opened above");
    println!(
        "IPv4 {} routes: values {}, routes {}; IPv6 {} routes: values {}, routes {}",
        img.v4.len(),
        img.v4.by_value().name(),
        img.v4.by_route().name(),
        img.v6.len(),
        img.v6.by_value().name(),
        img.v6.by_route().name(),
    );
    compare("IPv4", &img.v4, 1);
    compare("IPv6", &img.v6, 2);
}
