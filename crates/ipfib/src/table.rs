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
    pub fn new() -> Self {
        Self::default()
    }

    /// Insert or replace; returns the old value.
    pub fn insert(&mut self, prefix: AnyPrefix, value: V) -> Result<Option<V>, TooManyValues> {
        match prefix {
            AnyPrefix::V4(p) => self.v4.insert(p, value),
            AnyPrefix::V6(p) => self.v6.insert(p, value),
        }
    }

    /// Remove exactly `prefix`; returns its value.
    pub fn remove(&mut self, prefix: &AnyPrefix) -> Option<V> {
        match prefix {
            AnyPrefix::V4(p) => self.v4.remove(p),
            AnyPrefix::V6(p) => self.v6.remove(p),
        }
    }

    /// Lay both tries out in walk order (see [`RouteTable::compact`]).
    pub fn compact(&mut self) {
        self.v4.compact();
        self.v6.compact();
    }

    /// Compile both families, each with the engine `auto` chooses for
    /// its shape (see [`crate::engine::auto`]).
    pub fn compile(&self, opts: &AutoOptions) -> Result<CompiledTable<V>, AutoError> {
        self.compile_with::<AutoEngine<u32>, AutoEngine<u128>>(opts)
    }

    /// Compile both families with the engines `E4` (IPv4) and `E6` (IPv6),
    /// which share their options and error type (e.g. `Poptrie<u32>` and
    /// `Poptrie<u128>`).
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
    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    /// Whether there are no routes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value for exactly `prefix`.
    pub fn get(&self, prefix: &AnyPrefix) -> Option<&V> {
        match prefix {
            AnyPrefix::V4(p) => self.v4.get(p),
            AnyPrefix::V6(p) => self.v6.get(p),
        }
    }

    /// Longest-prefix match in the radix tries (`IpAddr`, `Ipv4Addr`,
    /// `Ipv6Addr` or [`AnyAddr`]; IPv4-mapped addresses answer from IPv4).
    pub fn lookup(&self, addr: impl Into<AnyAddr>) -> Option<(AnyPrefix, &V)> {
        match addr.into() {
            AnyAddr::V4(a) => self.v4.lookup(a).map(|(p, v)| (p.into(), v)),
            AnyAddr::V6(a) => self.v6.lookup(a).map(|(p, v)| (p.into(), v)),
        }
    }
}

/// Snapshots of both families (`auto`'s engines unless others are named).
pub struct CompiledTable<V, E4: Engine<u32> = AutoEngine<u32>, E6: Engine<u128> = AutoEngine<u128>>
{
    pub v4: Compiled<u32, V, E4>,
    pub v6: Compiled<u128, V, E6>,
}

impl<V, E4: Engine<u32>, E6: Engine<u128>> CompiledTable<V, E4, E6> {
    /// Longest-prefix match (`IpAddr`, `Ipv4Addr`, `Ipv6Addr` or
    /// [`AnyAddr`]; IPv4-mapped addresses answer from IPv4).
    #[inline]
    pub fn lookup(&self, addr: impl Into<AnyAddr>) -> Option<(AnyPrefix, &V)> {
        match addr.into() {
            AnyAddr::V4(a) => self.v4.lookup(a).map(|(p, v)| (p.into(), v)),
            AnyAddr::V6(a) => self.v6.lookup(a).map(|(p, v)| (p.into(), v)),
        }
    }

    /// Engine footprint of both families in bytes.
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
