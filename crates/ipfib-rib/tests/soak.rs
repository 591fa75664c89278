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
    let c = &r.churned;
    // In this process, after the churned RIB is gone: the counts compare;
    // RSS only loosely (the example compares it in a process of its own).
    let f = soak::fresh(&r.live);
    println!("{c:?}\n{f:?}");
    assert!(
        r.loaded > 0,
        "loading {} routes took no memory",
        r.live.routes()
    );
    assert_eq!(r.days.len(), p.days as usize);
    assert_eq!(r.live.routes(), (p.peers * p.prefixes) as usize);
    assert_eq!(c.prefixes, f.prefixes);
    assert_eq!(c.prefixes, p.prefixes as usize);
    assert_eq!(c.peers, p.peers);
    assert!(
        c.sets <= 2 * f.sets + ipfib_rib::attrs::PURGE_MIN as usize,
        "{} attribute sets against {} fresh",
        c.sets,
        f.sets
    );
    // Heap in use counts what the RIB holds, not how the allocator keeps
    // its free pages: a leak of months would break this.
    assert!(
        c.heap <= f.heap + f.heap / 4 + (4 << 20),
        "churned RIB {} heap bytes against fresh {}",
        c.heap,
        f.heap
    );
}
