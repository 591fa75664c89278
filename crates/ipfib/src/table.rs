//! `Table<V>`: both families behind one type (one route table and, once
//! compiled, one engine per family), for callers that hold mixed tables:
//! the CLI, the readers, the bindings.
//!
//! IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are looked up in the IPv4
//! table: see [`AnyAddr`]. Prefixes are never unmapped: a route for
//! `::ffff:10.0.0.0/104` stays an IPv6 route (and so is only reachable by
//! engines of the IPv6 family directly).
//!
//! Thread safety: `Table` needs `&mut` to change; `CompiledTable` is an
//! immutable snapshot, `Send + Sync` when `V` is. Misses return `None`.
//!
//! The common path: build from routes, compile, look up `std::net`
//! addresses (or anything `Into<AnyAddr>`), get `(prefix, &value)`:
//!
//! ```
//! use ipfib::engine::auto::AutoOptions;
//! use ipfib::prefix::AnyPrefix;
//! use ipfib::table::Table;
//! use std::net::IpAddr;
//!
//! let mut t = Table::new();
//! t.insert("10.0.0.0/8".parse::<AnyPrefix>()?, "private")?;
//! t.insert("10.1.0.0/16".parse::<AnyPrefix>()?, "lab")?;
//! t.insert("2001:db8::/32".parse::<AnyPrefix>()?, "doc")?;
//! let c = t.compile(&AutoOptions::default())?;
//! let ip: IpAddr = "10.1.2.3".parse()?;
//! let (prefix, value) = c.lookup(ip).expect("covered");
//! assert_eq!((prefix.to_string().as_str(), *value), ("10.1.0.0/16", "lab"));
//! assert_eq!(c.lookup(std::net::Ipv6Addr::LOCALHOST), None);
//! // The route tables answer too (slower, no compile step).
//! assert_eq!(t.lookup(ip).map(|(_, v)| *v), Some("lab"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::compiled::Compiled;
use crate::engine::auto::{AutoEngine, AutoError, AutoOptions};
use crate::engine::Engine;
use crate::prefix::{AnyAddr, AnyPrefix};
use crate::route_table::RouteTable;
use crate::values::TooManyValues;
use std::hash::Hash;

/// Route tables of both families.
///
/// ```
/// use ipfib::table::Table;
/// let mut t = Table::new();
/// t.insert("10.0.0.0/8".parse()?, 1)?;
/// t.insert("2001:db8::/32".parse()?, 2)?;
/// assert_eq!((t.v4.len(), t.v6.len()), (1, 1)); // one route table per family
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Table<V> {
    pub v4: RouteTable<u32, V>,
    pub v6: RouteTable<u128, V>,
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Table {
            v4: RouteTable::default(),
            v6: RouteTable::default(),
        }
    }
}

impl<V: Clone + Eq + Hash> Table<V> {
    /// An empty table.
    ///
    /// ```
    /// use ipfib::table::Table;
    /// let t: Table<&str> = Table::new();
    /// assert!(t.is_empty());
    /// assert_eq!(t.lookup(std::net::Ipv4Addr::new(10, 0, 0, 1)), None);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Insert or replace; returns the old value.
    ///
    /// ```
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// assert_eq!(t.insert("10.0.0.0/8".parse()?, "a")?, None);
    /// assert_eq!(t.insert("10.0.0.0/8".parse()?, "b")?, Some("a")); // replaced
    /// assert_eq!(t.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert(&mut self, prefix: AnyPrefix, value: V) -> Result<Option<V>, TooManyValues> {
        match prefix {
            AnyPrefix::V4(p) => self.v4.insert(p, value),
            AnyPrefix::V6(p) => self.v6.insert(p, value),
        }
    }

    /// Remove exactly `prefix`; returns its value.
    ///
    /// ```
    /// use ipfib::prefix::AnyPrefix;
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// let p: AnyPrefix = "2001:db8::/32".parse()?;
    /// t.insert(p, "doc")?;
    /// assert_eq!(t.remove(&"2001:db8::/48".parse()?), None); // exact prefix only
    /// assert_eq!(t.remove(&p), Some("doc"));
    /// assert!(t.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove(&mut self, prefix: &AnyPrefix) -> Option<V> {
        match prefix {
            AnyPrefix::V4(p) => self.v4.remove(p),
            AnyPrefix::V6(p) => self.v6.remove(p),
        }
    }

    /// Lay both tries out in walk order (see [`RouteTable::compact`]).
    ///
    /// ```
    /// use ipfib::prefix::{AnyPrefix, Prefix};
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// for i in 0..100u32 {
    ///     t.insert(AnyPrefix::V4(Prefix::new(i << 24, 8)?), i)?;
    /// }
    /// for i in 0..50u32 {
    ///     t.remove(&AnyPrefix::V4(Prefix::new(i << 24, 8)?));
    /// }
    /// t.compact(); // same routes, laid out for the ordered walk
    /// assert_eq!(t.len(), 50);
    /// assert_eq!(t.lookup(std::net::Ipv4Addr::new(99, 1, 2, 3)).map(|(_, v)| *v), Some(99));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact(&mut self) {
        self.v4.compact();
        self.v6.compact();
    }

    /// Compile both families, each with the engine `auto` chooses for
    /// its shape (see [`crate::engine::auto`]).
    ///
    /// ```
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::table::Table;
    /// use std::net::{IpAddr, Ipv4Addr};
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// let c = t.compile(&AutoOptions::default())?;
    /// assert_eq!(c.lookup(Ipv4Addr::new(10, 9, 8, 7)).map(|(_, v)| *v), Some("ten"));
    /// // `::ffff:10.9.8.7` is answered from the IPv4 table.
    /// let mapped: IpAddr = "::ffff:10.9.8.7".parse()?;
    /// assert_eq!(c.lookup(mapped).map(|(_, v)| *v), Some("ten"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compile(&self, opts: &AutoOptions) -> Result<CompiledTable<V>, AutoError> {
        self.compile_with::<AutoEngine<u32>, AutoEngine<u128>>(opts)
    }

    /// Compile both families with the engines `E4` (IPv4) and `E6` (IPv6),
    /// which share their options and error type (e.g. `Poptrie<u32>` and
    /// `Poptrie<u128>`).
    ///
    /// ```
    /// use ipfib::engine::poptrie::{Poptrie, PoptrieOptions};
    /// use ipfib::engine::Engine;
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, 1)?;
    /// t.insert("10.1.0.0/16".parse()?, 2)?;
    /// let c = t.compile_with::<Poptrie<u32>, Poptrie<u128>>(&PoptrieOptions::default())?;
    /// let (prefix, value) = c.lookup(std::net::Ipv4Addr::new(10, 1, 2, 3)).expect("covered");
    /// assert_eq!((prefix.to_string(), *value), ("10.1.0.0/16".to_string(), 2));
    /// assert!(c.v4.engine().name().starts_with("poptrie"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compile_with<E4, E6>(
        &self,
        opts: &E4::Options,
    ) -> Result<CompiledTable<V, E4, E6>, E4::Error>
    where
        E4: Engine<u32>,
        E6: Engine<u128, Options = E4::Options, Error = E4::Error>,
    {
        Ok(CompiledTable {
            v4: Compiled::with_engine(&self.v4, opts)?,
            v6: Compiled::with_engine(&self.v6, opts)?,
        })
    }
}

impl<V> Table<V> {
    /// Routes in both families.
    ///
    /// ```
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, ())?;
    /// t.insert("::/0".parse()?, ())?;
    /// assert_eq!(t.len(), 2); // both families
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    /// Whether there are no routes.
    ///
    /// ```
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// assert!(t.is_empty());
    /// t.insert("::/0".parse()?, ())?;
    /// assert!(!t.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value for exactly `prefix`.
    ///
    /// ```
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// assert_eq!(t.get(&"10.0.0.0/8".parse()?), Some(&"ten"));
    /// assert_eq!(t.get(&"10.0.0.0/16".parse()?), None); // exact match, not longest-prefix
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, prefix: &AnyPrefix) -> Option<&V> {
        match prefix {
            AnyPrefix::V4(p) => self.v4.get(p),
            AnyPrefix::V6(p) => self.v6.get(p),
        }
    }

    /// Longest-prefix match in the radix tries (`IpAddr`, `Ipv4Addr`,
    /// `Ipv6Addr` or [`AnyAddr`]; IPv4-mapped addresses answer from IPv4).
    ///
    /// ```
    /// use ipfib::prefix::{AnyAddr, AnyPrefix};
    /// use ipfib::table::Table;
    /// use std::net::{Ipv4Addr, Ipv6Addr};
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// t.insert("::/0".parse()?, "v6")?;
    /// let lab: AnyPrefix = "10.1.0.0/16".parse()?;
    /// assert_eq!(t.lookup(Ipv4Addr::new(10, 1, 0, 1)), Some((lab, &"lab")));
    /// assert_eq!(t.lookup(AnyAddr::parse("::ffff:10.2.0.1")?).map(|(_, v)| *v), Some("ten"));
    /// assert_eq!(t.lookup(Ipv4Addr::new(11, 0, 0, 1)), None); // no IPv4 default route
    /// assert_eq!(t.lookup(Ipv6Addr::LOCALHOST).map(|(_, v)| *v), Some("v6"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lookup(&self, addr: impl Into<AnyAddr>) -> Option<(AnyPrefix, &V)> {
        match addr.into() {
            AnyAddr::V4(a) => self.v4.lookup(a).map(|(p, v)| (p.into(), v)),
            AnyAddr::V6(a) => self.v6.lookup(a).map(|(p, v)| (p.into(), v)),
        }
    }
}

/// Snapshots of both families (`auto`'s engines unless others are named).
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::table::{CompiledTable, Table};
/// let mut t = Table::new();
/// t.insert("192.0.2.0/24".parse()?, "doc")?;
/// let c: CompiledTable<&str> = t.compile(&AutoOptions::default())?;
/// t.insert("192.0.2.0/25".parse()?, "later")?; // not seen by the snapshot
/// let a = std::net::Ipv4Addr::new(192, 0, 2, 1);
/// assert_eq!(c.lookup(a).map(|(_, v)| *v), Some("doc"));
/// assert_eq!((c.v4.len(), c.v6.len()), (1, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CompiledTable<V, E4: Engine<u32> = AutoEngine<u32>, E6: Engine<u128> = AutoEngine<u128>>
{
    pub v4: Compiled<u32, V, E4>,
    pub v6: Compiled<u128, V, E6>,
}

impl<V, E4: Engine<u32>, E6: Engine<u128>> CompiledTable<V, E4, E6> {
    /// Longest-prefix match (`IpAddr`, `Ipv4Addr`, `Ipv6Addr` or
    /// [`AnyAddr`]; IPv4-mapped addresses answer from IPv4).
    ///
    /// ```
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::table::Table;
    /// use std::net::{IpAddr, Ipv6Addr};
    /// let mut t = Table::new();
    /// t.insert("2001:db8::/32".parse()?, "doc")?;
    /// t.insert("::/0".parse()?, "default6")?;
    /// let c = t.compile(&AutoOptions::default())?;
    /// let doc = c.lookup("2001:db8::1".parse::<IpAddr>()?).map(|(p, _)| p.to_string());
    /// assert_eq!(doc.as_deref(), Some("2001:db8::/32"));
    /// assert_eq!(c.lookup(Ipv6Addr::LOCALHOST).map(|(_, v)| *v), Some("default6"));
    /// // IPv4, mapped or not, is answered from the (empty) IPv4 table.
    /// assert_eq!(c.lookup("::ffff:192.0.2.1".parse::<IpAddr>()?), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup(&self, addr: impl Into<AnyAddr>) -> Option<(AnyPrefix, &V)> {
        match addr.into() {
            AnyAddr::V4(a) => self.v4.lookup(a).map(|(p, v)| (p.into(), v)),
            AnyAddr::V6(a) => self.v6.lookup(a).map(|(p, v)| (p.into(), v)),
        }
    }

    /// Engine footprint of both families in bytes.
    ///
    /// ```
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, 1)?;
    /// let c = t.compile(&AutoOptions::default())?;
    /// assert_eq!(c.footprint_bytes(), c.v4.footprint_bytes() + c.v6.footprint_bytes());
    /// assert!(c.v4.footprint_bytes() > 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn footprint_bytes(&self) -> usize {
        self.v4.footprint_bytes() + self.v6.footprint_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_mapped_addresses_use_the_ipv4_table() {
        let mut t = Table::new();
        t.insert("10.0.0.0/8".parse().unwrap(), "v4").unwrap();
        t.insert("::ffff:0:0/96".parse().unwrap(), "mapped-v6")
            .unwrap();
        t.insert("::/0".parse().unwrap(), "v6-default").unwrap();
        let c = t.compile(&AutoOptions::default()).unwrap();
        let mapped = AnyAddr::parse("::ffff:10.1.2.3").unwrap();
        assert_eq!(mapped, AnyAddr::V4(0x0a01_0203));
        for got in [t.lookup(mapped), c.lookup(mapped)] {
            assert_eq!(got, Some(("10.0.0.0/8".parse().unwrap(), &"v4")));
        }
        // Outside the IPv4 table: a miss, not the IPv6 route for ::ffff:0:0/96.
        let other = AnyAddr::parse("::ffff:11.1.2.3").unwrap();
        assert_eq!(c.lookup(other), None);
        assert_eq!(t.lookup(other), None);
        // IPv4-compatible (deprecated ::a.b.c.d) addresses stay IPv6.
        let compat = AnyAddr::parse("::10.1.2.3").unwrap();
        assert_eq!(c.lookup(compat).map(|x| *x.1), Some("v6-default"));
    }
}
