//! The README's Rust example, kept compiling and correct.

use ipfib::engine::auto::AutoOptions;
use ipfib::prefix::AnyAddr;
use ipfib::table::Table;

#[test]
fn readme_example() {
    let mut t = Table::new();
    t.insert("10.0.0.0/8".parse().unwrap(), "a").unwrap();
    t.insert("2001:db8::/32".parse().unwrap(), "b").unwrap();
    let fib = t.compile(&AutoOptions::default()).unwrap();
    let hit = fib.lookup(AnyAddr::parse("10.1.2.3").unwrap());
    assert_eq!(
        hit.map(|(p, v)| (p.to_string(), *v)),
        Some(("10.0.0.0/8".into(), "a"))
    );
    let hit = fib.lookup(AnyAddr::parse("2001:db8::1").unwrap());
    assert_eq!(hit.map(|(_, v)| *v), Some("b"));
    assert_eq!(fib.lookup(AnyAddr::parse("11.0.0.1").unwrap()), None);
}

/// The README's `Fib` example.
#[test]
fn readme_fib_example() -> Result<(), Box<dyn std::error::Error>> {
    use ipfib::fib::{Fib, FibOptions};
    let mut fib: Fib<u32> = Fib::new(FibOptions::default())?; // Poptrie
    let reader = fib.reader(); // Clone + Send: one per thread
    fib.insert("10.0.0.0/8".parse()?, 7)?;
    fib.flush()?; // else: at the 64th change, or a call 1 ms after the oldest
    let snap = reader.snapshot(); // no lock, no allocation
    assert_eq!(snap.lookup_v4(0x0a01_0203), Some(&7));
    Ok(())
}
