//! Loading speed of an MRT RIB dump, ipfib-io against bgpkit-parser's own
//! iteration of the same file (the target: a RIB dump loads at least as
//! fast as bgpkit-parser iterates it):
//!
//! ```sh
//! bzcat ../shared/data/rib.20260730.1400.first2MiB.mrt.bz2 > /tmp/rib.mrt  # ~46 MB
//! cargo build --release -p ipfib-io --example mrt_speed
//! flock /tmp/ipfib-bench.lock taskset -c 1 target/release/examples/mrt_speed /tmp/rib.mrt
//! ```
//!
//! Each contender runs RUNS times, interleaved; prints median [min-max] ms.
//! - `bgpkit records`: `BgpkitParser::from_reader(file).into_record_iter()`,
//!   every record parsed, nothing kept;
//! - `bgpkit elems`: `into_elem_iter()`, one `BgpElem` per RIB entry (what
//!   most bgpkit users iterate);
//! - `ipfib-io load_table`: framing, `parse_mrt_body`, the origin-asn
//!   table (one value per prefix), everything kept.
//!
//! Files other than MRT (text tables) time `load_table` alone; for every
//! file, `decompress alone` is reading the decompressed bytes and nothing
//! else (0 for an uncompressed file: the page cache).

use bgpkit_parser::BgpkitParser;
use ipfib_io::{load_table, TableOptions};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::time::Instant;

const RUNS: usize = 7;

fn time<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let start = Instant::now();
    let out = f();
    (start.elapsed().as_secs_f64() * 1e3, out)
}

fn summary(name: &str, mut ms: Vec<f64>, what: String) {
    ms.sort_by(f64::total_cmp);
    println!(
        "{name:22} {:8.1} ms [{:.1}-{:.1}]  {what}",
        ms[ms.len() / 2],
        ms[0],
        ms[ms.len() - 1]
    );
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: mrt_speed FILE");
        std::process::exit(2);
    };
    let path = Path::new(&path);
    let (mut records, mut elems, mut ours, mut raw) = (vec![], vec![], vec![], vec![]);
    let mut n_bytes = 0;
    let (mut n_records, mut n_elems, mut n_routes) = (0, 0, 0);
    let mut is_mrt;
    for _ in 0..RUNS {
        let (ms, n) = time(|| {
            let mut sink = Vec::new();
            let mut r = ipfib_io::open_maybe_compressed(path).unwrap();
            // A truncated stream ends in an error after its last whole block.
            let _ = std::io::Read::read_to_end(&mut r, &mut sink);
            sink.len()
        });
        raw.push(ms);
        n_bytes = n;
        let (ms, loaded) = time(|| load_table(path, &TableOptions::default()).unwrap());
        ours.push(ms);
        n_routes = loaded.routes.len();
        is_mrt = loaded.report.format == ipfib_io::Format::Mrt;
        // IPFIB_ONLY=1: ours alone (for profiling).
        if !is_mrt || std::env::var_os("IPFIB_ONLY").is_some() {
            continue;
        }
        let open = || BufReader::with_capacity(256 << 10, File::open(path).unwrap());
        let (ms, n) = time(|| BgpkitParser::from_reader(open()).into_record_iter().count());
        records.push(ms);
        n_records = n;
        let (ms, n) = time(|| BgpkitParser::from_reader(open()).into_elem_iter().count());
        elems.push(ms);
        n_elems = n;
    }
    println!("{} ({RUNS} runs each, interleaved)", path.display());
    if !records.is_empty() {
        summary("bgpkit records", records, format!("{n_records} records"));
        summary("bgpkit elems", elems, format!("{n_elems} elems"));
    }
    summary("ipfib-io load_table", ours, format!("{n_routes} routes"));
    summary("decompress alone", raw, format!("{n_bytes} bytes"));
}
