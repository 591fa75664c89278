//! The readers' side of a [`Fib`](crate::fib::Fib): what one publication
//! makes visible ([`Published`]: both families at one version), the
//! handle other threads hold ([`FibReader`]) and the consistent view they
//! look up through ([`Snapshot`]).

use super::family::FamilySide;
use crate::prefix::AnyAddr;
use arc_swap::ArcSwap;
use std::sync::Arc;

/// What one publication makes visible.
pub(crate) struct Published<V> {
    pub(super) version: u64,
    pub(super) v4: Arc<FamilySide<u32, V>>,
    pub(super) v6: Arc<FamilySide<u128, V>>,
}

/// A reader's handle on a [`Fib`](crate::fib::Fib): cheap to clone, `Send + Sync`.
///
/// ```
/// use ipfib::fib::{Fib, FibOptions};
/// # let mut t = ipfib::table::Table::new();
/// # t.insert("10.0.0.0/8".parse()?, "ten")?;
/// let fib = Fib::from_table(t, FibOptions::default())?; // 10.0.0.0/8 -> "ten"
/// let threads: Vec<_> = (0..2)
///     .map(|_| {
///         let reader = fib.reader();
///         std::thread::spawn(move || reader.snapshot().lookup_v4(0x0a00_0001).copied())
///     })
///     .collect();
/// for t in threads {
///     assert_eq!(t.join().unwrap(), Some("ten"));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FibReader<V> {
    pub(super) shared: Arc<ArcSwap<Published<V>>>,
}

impl<V> Clone for FibReader<V> {
    fn clone(&self) -> Self {
        FibReader {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<V> FibReader<V> {
    /// The latest published version: take one per batch of lookups. No lock,
    /// no allocation; holding it keeps that version's memory alive, and
    /// holding it across two publications makes the Poptrie writer build a
    /// fresh copy (slower updates, never blocked lookups).
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// let mut fib = Fib::new(FibOptions::default())?;
    /// let reader = fib.reader();
    /// let before = reader.snapshot();
    /// fib.insert("10.0.0.0/8".parse()?, 1)?;
    /// fib.flush()?;
    /// assert_eq!((before.version(), before.lookup_v4(0x0a00_0001)), (0, None));
    /// assert_eq!(reader.snapshot().lookup_v4(0x0a00_0001), Some(&1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn snapshot(&self) -> Snapshot<V> {
        Snapshot {
            guard: self.shared.load(),
        }
    }
}

/// One published version of a [`Fib`](crate::fib::Fib): every lookup through it answers
/// from that version.
///
/// ```
/// use ipfib::fib::{Fib, FibOptions, Snapshot};
/// let mut fib = Fib::new(FibOptions::default())?;
/// fib.insert("10.0.0.0/8".parse()?, "ten")?;
/// fib.flush()?;
/// let s: Snapshot<&str> = fib.snapshot();
/// fib.remove(&"10.0.0.0/8".parse()?)?;
/// fib.flush()?;
/// assert_eq!(s.lookup_v4(0x0a00_0001), Some(&"ten")); // still version 1
/// assert_eq!(fib.snapshot().lookup_v4(0x0a00_0001), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Snapshot<V> {
    pub(super) guard: arc_swap::Guard<Arc<Published<V>>>,
}

impl<V> Snapshot<V> {
    /// The publication this snapshot shows (0: the initial table).
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// let mut fib = Fib::new(FibOptions::default())?;
    /// assert_eq!(fib.snapshot().version(), 0);
    /// fib.insert("10.0.0.0/8".parse()?, 1)?;
    /// fib.flush()?;
    /// assert_eq!(fib.snapshot().version(), fib.version());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn version(&self) -> u64 {
        self.guard.version
    }

    /// Longest-prefix match, IPv4-mapped IPv6 looked up as IPv4.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::prefix::AnyAddr;
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "v4")?;
    /// t.insert("::/0".parse()?, "v6")?;
    /// let s = Fib::from_table(t, FibOptions::default())?.snapshot();
    /// assert_eq!(s.lookup(AnyAddr::parse("::ffff:10.0.0.1")?), Some(&"v4")); // unmapped
    /// assert_eq!(s.lookup(AnyAddr::parse("::ffff:11.0.0.1")?), None); // an IPv4 miss
    /// assert_eq!(s.lookup(AnyAddr::parse("::1")?), Some(&"v6"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup(&self, addr: AnyAddr) -> Option<&V> {
        match addr {
            AnyAddr::V4(a) => self.lookup_v4(a),
            AnyAddr::V6(a) => self.lookup_v6(a),
        }
    }

    /// Longest-prefix match of an IPv4 address.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// let s = Fib::from_table(t, FibOptions::default())?.snapshot();
    /// assert_eq!(s.lookup_v4(0x0a01_0001), Some(&"lab"));
    /// assert_eq!(s.lookup_v4(0x0a02_0001), Some(&"ten"));
    /// assert_eq!(s.lookup_v4(0x0b00_0000), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup_v4(&self, addr: u32) -> Option<&V> {
        let side = &self.guard.v4;
        side.value(side.lookup_index(addr))
    }

    /// Longest-prefix match of an IPv6 address (taken as given).
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "v4")?;
    /// t.insert("::/0".parse()?, "v6")?;
    /// let s = Fib::from_table(t, FibOptions::default())?.snapshot();
    /// let mapped = u128::from(std::net::Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
    /// assert_eq!(s.lookup_v6(mapped), Some(&"v6")); // taken as given: not unmapped
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup_v6(&self, addr: u128) -> Option<&V> {
        let side = &self.guard.v6;
        side.value(side.lookup_index(addr))
    }

    /// Value indices for `addrs` into `out` ([`crate::intervals::NO_ROUTE`]
    /// on a miss), resolved with [`Snapshot::value_v4`] of this snapshot
    /// only: another version may give an index another meaning.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::intervals::NO_ROUTE;
    /// # let mut t = ipfib::table::Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// let s = Fib::from_table(t, FibOptions::default())?.snapshot(); // 10.0.0.0/8 -> "ten"
    /// let mut out = [0u32; 2];
    /// s.lookup_batch_v4(&[0x0a00_0001, 0x0b00_0001], &mut out);
    /// assert_eq!(s.value_v4(out[0]), Some(&"ten"));
    /// assert_eq!(out[1], NO_ROUTE);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup_batch_v4(&self, addrs: &[u32], out: &mut [u32]) {
        self.guard.v4.lookup_batch(addrs, out)
    }

    /// As [`Snapshot::lookup_batch_v4`], for IPv6.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::intervals::NO_ROUTE;
    /// # let mut t = ipfib::table::Table::new();
    /// # t.insert("2001:db8::/32".parse()?, "doc")?;
    /// let s = Fib::from_table(t, FibOptions::default())?.snapshot(); // 2001:db8::/32 -> "doc"
    /// let mut out = [0u32; 2];
    /// s.lookup_batch_v6(&[0x2001_0db8 << 96 | 1, 1], &mut out);
    /// assert_eq!(s.value_v6(out[0]), Some(&"doc"));
    /// assert_eq!(out[1], NO_ROUTE);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup_batch_v6(&self, addrs: &[u128], out: &mut [u32]) {
        self.guard.v6.lookup_batch(addrs, out)
    }

    /// The value of an IPv4 index this snapshot answered.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::intervals::NO_ROUTE;
    /// # let mut t = ipfib::table::Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// let s = Fib::from_table(t, FibOptions::default())?.snapshot(); // 10.0.0.0/8 -> "ten"
    /// let mut out = [0u32; 1];
    /// s.lookup_batch_v4(&[0x0a00_0001], &mut out);
    /// assert_eq!(s.value_v4(out[0]), Some(&"ten"));
    /// assert_eq!(s.value_v4(NO_ROUTE), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn value_v4(&self, index: u32) -> Option<&V> {
        self.guard.v4.value(index)
    }

    /// The value of an IPv6 index this snapshot answered.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::intervals::NO_ROUTE;
    /// # let mut t = ipfib::table::Table::new();
    /// # t.insert("::/0".parse()?, "default")?;
    /// let s = Fib::from_table(t, FibOptions::default())?.snapshot(); // ::/0 -> "default"
    /// let mut out = [0u32; 1];
    /// s.lookup_batch_v6(&[1], &mut out);
    /// assert_eq!(s.value_v6(out[0]), Some(&"default"));
    /// assert_eq!(s.value_v6(NO_ROUTE), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn value_v6(&self, index: u32) -> Option<&V> {
        self.guard.v6.value(index)
    }
}
