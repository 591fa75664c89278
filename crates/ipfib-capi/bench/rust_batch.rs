//! The Rust side of the C ABI benchmark (crates/ipfib-capi/README.md,
//! "Benchmark"): compiles a table file into a compiled table file (so the
//! C side maps exactly the same engines), writes addresses matched to the
//! table, and times `lookup_batch::<32>` and single lookups on them.
//!
//! capi-bench-rust TABLE IMAGE_OUT ADDRS_OUT FAMILY(4|6) N PASSES
//!
//! TABLE `-` reuses IMAGE_OUT and ADDRS_OUT as an earlier run wrote them
//! (the engine `auto` picks can differ from one compilation to the next,
//! so repeated rounds time the same file).
//!
//! ADDRS_OUT holds N addresses, each a random address inside a random
//! route of the family: IPv4 as u32 host order (4 bytes each, native
//! endian), IPv6 as 16 bytes network order. The answers' checksum (the
//! sum of the route indexes, misses as u32::MAX) is printed so that the C
//! side can show it found the same routes.

use ipfib_core::engine::auto::AutoOptions;
use ipfib_core::engine::Engine;
use ipfib_core::gen::Rng;
use ipfib_core::image::{FamilyImage, ImageTable};
use ipfib_core::table::Table;
use ipfib_io::{load_table, TableOptions};
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, table, image, addrs, family, n, passes] = &args[..] else {
        eprintln!("usage: capi-bench-rust TABLE IMAGE_OUT ADDRS_OUT FAMILY(4|6) N PASSES");
        std::process::exit(2);
    };
    let n: usize = n.parse().expect("N");
    let passes: usize = passes.parse().expect("PASSES");
    if table != "-" {
        let loaded =
            load_table(Path::new(table), &TableOptions::default()).expect("load the table");
        let mut t = Table::new();
        for r in loaded.routes {
            t.insert(r.prefix, r.value).expect("insert");
        }
        ipfib_core::image::write_table(&t, Path::new(image), &AutoOptions::default(), table)
            .expect("write the compiled table");
    }
    let img = ImageTable::open(Path::new(image)).expect("open the compiled table");
    let mut rng = Rng::new(2026);
    let reuse = (table == "-").then(|| std::fs::read(addrs).expect("read the addresses"));
    match family.as_str() {
        "4" if reuse.is_some() => {
            let a: Vec<u32> = reuse
                .unwrap_or_default()
                .chunks_exact(4)
                .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            run(&img.v4, &a, passes);
        }
        "6" if reuse.is_some() => {
            let a: Vec<u128> = reuse
                .unwrap_or_default()
                .chunks_exact(16)
                .map(|b| {
                    let mut x = [0u8; 16];
                    x.copy_from_slice(b);
                    u128::from_be_bytes(x)
                })
                .collect();
            run(&img.v6, &a, passes);
        }
        "4" => {
            let a: Vec<u32> = (0..n)
                .map(|_| {
                    let p = img.v4.prefixes()[rng.below(img.v4.len() as u64) as usize];
                    p.addr() | (rng.next_u64() as u32 & (p.last() - p.addr()))
                })
                .collect();
            let bytes: Vec<u8> = a.iter().flat_map(|x| x.to_ne_bytes()).collect();
            std::fs::write(addrs, bytes).expect("write the addresses");
            run(&img.v4, &a, passes);
        }
        "6" => {
            let a: Vec<u128> = (0..n)
                .map(|_| {
                    let p = img.v6.prefixes()[rng.below(img.v6.len() as u64) as usize];
                    p.addr() | (rng.next_u128() & (p.last() - p.addr()))
                })
                .collect();
            let bytes: Vec<u8> = a.iter().flat_map(|x| x.to_be_bytes()).collect();
            std::fs::write(addrs, bytes).expect("write the addresses");
            run(&img.v6, &a, passes);
        }
        _ => panic!("FAMILY is 4 or 6"),
    }
}

fn run<A: ipfib_core::engine::Family>(f: &FamilyImage<A>, addrs: &[A], passes: usize) {
    println!(
        "engine {} ({} routes), {} addresses",
        f.by_route().name(),
        f.len(),
        addrs.len()
    );
    let mut out = vec![0u32; addrs.len()];
    let mut batch = Vec::new();
    let mut single = Vec::new();
    let mut sum = 0u64;
    for _ in 0..passes {
        let t = Instant::now();
        f.lookup_batch::<32>(addrs, &mut out);
        batch.push(addrs.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
        sum = out.iter().map(|&o| u64::from(o)).sum();
        let t = Instant::now();
        let mut s = 0u64;
        for &a in addrs {
            s += u64::from(f.by_route().lookup(std::hint::black_box(a)));
        }
        single.push(addrs.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
        assert_eq!(s, sum, "single and batch agree");
    }
    println!("checksum {sum}");
    report("rust batch lookup_batch::<32>", &mut batch);
    report("rust single Engine::lookup", &mut single);
}

fn report(what: &str, rates: &mut [f64]) {
    rates.sort_by(f64::total_cmp);
    println!(
        "{what}: median {:.1} M/s [{:.1}-{:.1}] over {} passes",
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1],
        rates.len()
    );
}
