//! One prefix announced by many peers: what each announcement costs as
//! the prefix's route list grows, and past the per-prefix bound.
//!
//! `cargo run --release -p ipfib-rib --example fanout [-- PEERS [MAX]]`
//! (default 65,600 peers, each announcing the same /24: a sender
//! inventing peers; MAX: the per-prefix bound, default
//! `MAX_ROUTES_PER_PREFIX`, 0 for none). Prints the time per announcement
//! in steps of peers, the routes held and the announcements dropped at
//! the bound.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::time::Instant;

use ipfib::prefix::AnyPrefix;
use ipfib_rib::attrs::{AsPath, AttrsRef, AS_SEQUENCE};
use ipfib_rib::rib::MAX_ROUTES_PER_PREFIX;
use ipfib_rib::{PeerKey, Rib, RibKind};

fn main() {
    let arg = |i: usize, default: usize| match std::env::args().nth(i).map(|a| a.parse()) {
        None => default,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: fanout [PEERS [MAX]]");
            std::process::exit(2);
        }
    };
    let peers = arg(1, 65_600);
    let max = arg(2, MAX_ROUTES_PER_PREFIX);
    let rib = Rib::new();
    rib.set_max_routes_per_prefix(max);
    let prefix: AnyPrefix = "8.8.8.0/24".parse().expect("a prefix");
    let words = AsPath::encode([(AS_SEQUENCE, &[666u32][..])]);
    let attrs = rib.intern(&AttrsRef {
        as_path: &words,
        ..Default::default()
    });
    let started = Instant::now();
    let mut step_start = Instant::now();
    let step = 4096;
    println!("peers        ns per announcement (this step)   routes held");
    for i in 0..peers {
        let key = PeerKey {
            peer_type: 3,
            distinguisher: 0,
            address: IpAddr::from((0x0a00_0000u32 + i as u32).to_be_bytes()),
            asn: 64512,
            bgp_id: i as u32,
            rib: RibKind::LocRib,
        };
        let peer = rib.add_peer(i as u64, key).expect("a peer slot");
        rib.announce(&peer, prefix, 0, &attrs).expect("announce");
        if (i + 1) % step == 0 || i + 1 == peers {
            let n = (i % step) + 1;
            println!(
                "{:>6}       {:>10.0}                         {}",
                i + 1,
                step_start.elapsed().as_nanos() as f64 / n as f64,
                rib.routes(&prefix).len()
            );
            step_start = Instant::now();
        }
    }
    let total = started.elapsed();
    println!(
        "{peers} peers in {:.3} s ({:.0} ns per announcement); {} routes held \
         (bound {max}), {} dropped",
        total.as_secs_f64(),
        total.as_nanos() as f64 / peers.max(1) as f64,
        rib.routes(&prefix).len(),
        rib.counters().over_prefix_limit.load(Ordering::Relaxed)
    );
}
