//! Time loading a table: `cargo run --release -p ipfib-io --example
//! load_speed [FILE ...]` (default: the 1.1M-line RouteViews IPv4 table in
//! ../shared/data). Prints the best of five runs per file, and the time to
//! decompress alone, so parsing's share is visible.

use ipfib_io::{open_maybe_compressed, read_routes, LoadOptions};
use std::error::Error;
use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const DEFAULT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/routeviews-rv2-20260730-1400.pfx2as.txt.gz"
);
const RUNS: usize = 5;

fn main() -> Result<(), Box<dyn Error>> {
    let mut files: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if files.is_empty() {
        files.push(PathBuf::from(DEFAULT));
    }
    for path in files {
        let mut best_load = Duration::MAX;
        let mut best_decompress = Duration::MAX;
        let mut summary = (0, 0, 0);
        for _ in 0..RUNS {
            let start = Instant::now();
            let mut sink = Vec::new();
            open_maybe_compressed(&path)?.read_to_end(&mut sink)?;
            best_decompress = best_decompress.min(start.elapsed());

            let start = Instant::now();
            let loaded = read_routes(&path, &LoadOptions::default())?;
            best_load = best_load.min(start.elapsed());
            summary = (loaded.lines, loaded.routes.len(), sink.len());
        }
        let (lines, routes, bytes) = summary;
        println!(
            "{}: {lines} lines, {routes} routes, {:.1} MB text; load {:.1} ms ({:.2} M lines/s), \
             decompress alone {:.1} ms (best of {RUNS})",
            path.display(),
            bytes as f64 / 1e6,
            best_load.as_secs_f64() * 1e3,
            lines as f64 / best_load.as_secs_f64() / 1e6,
            best_decompress.as_secs_f64() * 1e3,
        );
    }
    Ok(())
}
