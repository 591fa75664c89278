//! The README's Rust example, kept compiling and correct.

use ipfib::engine::planb::PlanbOptions;
use ipfib::prefix::AnyAddr;
use ipfib::table::Table;

#[test]
fn readme_example() {
    let mut t = Table::new();
    t.insert("10.0.0.0/8".parse().unwrap(), "a").unwrap();
    t.insert("2001:db8::/32".parse().unwrap(), "b").unwrap();
    let fib = t.compile(&PlanbOptions::default()).unwrap();
    let hit = fib.lookup(AnyAddr::parse("10.1.2.3").unwrap());
    assert_eq!(
        hit.map(|(p, v)| (p.to_string(), *v)),
        Some(("10.0.0.0/8".into(), "a"))
    );
    let hit = fib.lookup(AnyAddr::parse("2001:db8::1").unwrap());
    assert_eq!(hit.map(|(_, v)| *v), Some("b"));
    assert_eq!(fib.lookup(AnyAddr::parse("11.0.0.1").unwrap()), None);
}
