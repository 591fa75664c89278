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
    // The allocator's hooks first, so that heap counts come from it.
    println!("{}", soak::allocator());
    let r = soak::run(p, false);
    let c = &r.churned;
    // In this process, after the churned RIB is gone: the counts compare;
    // RSS only loosely (the example compares it in a process of its own).
    let f = soak::fresh(&r.live);
    println!("{c:?}\n{f:?}");
    assert_eq!(r.days.len(), p.days as usize);
    assert_eq!(r.live.routes(), (p.peers * p.prefixes) as usize);
    assert_eq!(c.prefixes, f.prefixes);
    assert_eq!(c.prefixes, p.prefixes as usize);
    assert_eq!(c.peers, p.peers);
    // After the final purge, exactly the sets the live routes use.
    assert_eq!(c.sets, f.sets);
    assert!(f.heap > 0, "no heap count from the allocator");
    // Heap in use counts what the RIB holds, not how the allocator keeps
    // its free pages: a leak of months would break this.
    assert!(
        c.heap <= f.heap + f.heap / 4 + (4 << 20),
        "churned RIB {} heap bytes against fresh {}",
        c.heap,
        f.heap
    );
}
