//! How long opening a compiled table file takes (median and range of
//! several opens; the file is in the page cache after the first), with and
//! without checksum verification.
//!
//! `cargo run --release -p ipfib --example image_open -- FILE [RUNS]`

use ipfib::image::{ImageTable, OpenOptions};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: image_open FILE [RUNS]");
        std::process::exit(2);
    };
    if let Ok(img) = ImageTable::open(path.as_ref()) {
        use ipfib::engine::Engine;
        println!(
            "IPv4 {} routes: values {} ({:.1} MiB), routes {} ({:.1} MiB); IPv6 {} routes: values {} ({:.1} MiB), routes {} ({:.1} MiB)",
            img.v4.len(),
            img.v4.by_value().name(),
            img.v4.by_value().footprint_bytes() as f64 / 1048576.0,
            img.v4.by_route().name(),
            img.v4.by_route().footprint_bytes() as f64 / 1048576.0,
            img.v6.len(),
            img.v6.by_value().name(),
            img.v6.by_value().footprint_bytes() as f64 / 1048576.0,
            img.v6.by_route().name(),
            img.v6.by_route().footprint_bytes() as f64 / 1048576.0,
        );
    }
    let runs: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(21);
    for verify in [true, false] {
        let mut ms = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            let img = match ImageTable::open_with(
                path.as_ref(),
                OpenOptions {
                    verify_checksums: verify,
                },
            ) {
                Ok(img) => img,
                Err(e) => {
                    eprintln!("{path}: {e}");
                    std::process::exit(2);
                }
            };
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(img.v4.lookup(0x0101_0101));
        }
        ms.sort_by(f64::total_cmp);
        println!(
            "open (verify_checksums={verify}): median {:.2} ms, range {:.2}-{:.2} ms over {runs} opens",
            ms[runs / 2],
            ms[0],
            ms[runs - 1]
        );
    }
}
