//! Replay a recorded BMP stream into a RIB and print what it held.
//! `cargo run --release -p ipfib-rib --example bmp_count -- FILE.bmp.zst`
use std::io::Read;
use std::sync::Arc;

use ipfib_rib::bmp::{frame, Session, TYPE_NAMES};
use ipfib_rib::Rib;

fn main() {
    for path in std::env::args().skip(1) {
        let mut buf = Vec::new();
        ipfib_io::open_maybe_compressed(std::path::Path::new(&path))
            .unwrap()
            .read_to_end(&mut buf)
            .unwrap();
        let rib = Arc::new(Rib::new());
        let mut s = Session::new(1, Arc::clone(&rib));
        let mut at = 0;
        let t = std::time::Instant::now();
        let mut first_down = None;
        while let Some(n) = frame(&buf[at..], 1 << 20).unwrap() {
            if buf[at + 5] == 2 && first_down.is_none() {
                rib.sync();
                first_down = Some((rib.prefix_count(), rib.route_count(), s.stats.clone()));
            }
            if let Err(e) = s.handle(&buf[at..at + n]) {
                println!("error at byte {at}: {e}");
                break;
            }
            at += n;
        }
        let el = t.elapsed();
        rib.sync();
        println!("{path}: {} bytes in {el:?}, left {}", at, buf.len() - at);
        for (i, n) in s.stats.messages.iter().enumerate() {
            println!("  {} {n}", TYPE_NAMES[i]);
        }
        println!("  stats {:?}", s.stats);
        if let Some((p, r, st)) = first_down {
            println!(
                "  before first peer down: prefixes {p} routes {r} announced {}",
                st.announced
            );
        }
        for p in rib.peers().all() {
            println!(
                "  peer {} {:?} up={} routes={}",
                p.id,
                p.key,
                p.is_up(),
                p.route_count()
            );
        }
        println!(
            "  end: prefixes {} routes {}",
            rib.prefix_count(),
            rib.route_count()
        );
    }
}
