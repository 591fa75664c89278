//! The soak example (examples/soak.rs) in short: a few simulated days of
//! churn over a small table, then the churned RIB against a fresh one
//! holding the same live routes.

#[path = "../examples/soak.rs"]
mod soak;

#[test]
fn short_soak_keeps_only_live_state() {
    let p = soak::Params {
        prefixes: 20_000,
        peers: 3,
        days: 6,
        ops_per_day: 30_000,
        seed: 0x5eed,
    };
    let r = soak::run(p, false);
    println!("{r:?}");
    // The same prefixes, peers only the live ones, attribute sets within
    // the purge's bound of the fresh RIB's.
    assert_eq!(r.days.len(), p.days as usize);
    assert!(
        r.live_routes >= p.peers as usize * 15_000,
        "{}",
        r.live_routes
    );
    assert_eq!(r.prefixes_churned, r.prefixes_fresh);
    assert_eq!(r.peers_churned, p.peers);
    assert!(
        r.sets_churned <= 2 * r.sets_fresh + ipfib_rib::attrs::PURGE_MIN as usize,
        "{} attribute sets against {} fresh",
        r.sets_churned,
        r.sets_fresh
    );
    // RSS at this size is coarse (arenas, thread stacks): a loose bound
    // that months of leaks would still break.
    if r.fresh > 0 {
        assert!(
            r.churned <= r.fresh * 2 + (16 << 20),
            "churned RIB {} bytes against fresh {} bytes",
            r.churned,
            r.fresh
        );
    }
}
