//! `Compiled<A, V, E>`: an immutable lookup snapshot of one family's route
//! table, answering the matching prefix and value, over any [`Engine`]
//! ([`AutoEngine`] by default: the engine chosen for the table's shape;
//! `Compiled::<_, _, Poptrie<_>>::with_engine` for a named one).
//!
//! The engine's payload is a route ordinal (position in pre-order); the
//! snapshot keeps each route's prefix and a copy of the values, so it never
//! reads the mutable table again: later inserts, removes or value-index
//! reuse in the route table cannot change what a snapshot answers.
//!
//! Thread safety: `Send + Sync` when `V` is; lookups never lock or
//! allocate. A miss returns `None`.

use crate::engine::auto::{AutoEngine, AutoError, AutoOptions};
use crate::engine::{Engine, Family};
use crate::intervals::{compile, NO_ROUTE};
use crate::prefix::Prefix;
use crate::route_table::RouteTable;

/// A compiled snapshot that answers `(prefix, &value)`.
///
/// ```
/// use ipfib::compiled::Compiled;
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::route_table::RouteTable;
/// let mut rt = RouteTable::<u32, _>::new();
/// rt.insert("10.0.0.0/8".parse()?, "ten")?;
/// let c = Compiled::build(&rt, &AutoOptions::default())?;
/// rt.remove(&"10.0.0.0/8".parse()?); // the snapshot keeps its own copy
/// assert_eq!(c.lookup(0x0a00_0001).map(|(_, v)| *v), Some("ten"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Compiled<A: Family, V, E: Engine<A> = AutoEngine<A>> {
    engine: E,
    /// Route ordinal -> (prefix, index into `values`).
    routes: Vec<(Prefix<A>, u32)>,
    values: Vec<Option<V>>,
}

impl<A: Family, V: Clone> Compiled<A, V, AutoEngine<A>> {
    /// Compile `table` with the engine `auto` chooses for it (see
    /// [`crate::engine::auto`]; `AutoOptions::default()` is what users
    /// get everywhere).
    ///
    /// ```
    /// use ipfib::compiled::Compiled;
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::route_table::RouteTable;
    /// let rt: RouteTable<u128, &str> = [("2001:db8::/32".parse()?, "doc")].into_iter().collect();
    /// let c = Compiled::build(&rt, &AutoOptions::default())?;
    /// let a = u128::from("2001:db8::1".parse::<std::net::Ipv6Addr>()?);
    /// assert_eq!(c.lookup(a), Some(("2001:db8::/32".parse()?, &"doc")));
    /// assert_eq!(c.lookup(1), None); // ::1
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(table: &RouteTable<A, V>, opts: &AutoOptions) -> Result<Self, AutoError> {
        Self::with_engine(table, opts)
    }
}

impl<A: Family, V: Clone, E: Engine<A>> Compiled<A, V, E> {
    /// Compile `table` with engine `E`: one ordered walk into intervals
    /// whose payloads are route ordinals (no aggregation, so the prefix is
    /// known), then the engine's build.
    ///
    /// ```
    /// use ipfib::compiled::Compiled;
    /// use ipfib::engine::planb::{PlanB, PlanBOptions};
    /// use ipfib::engine::Engine;
    /// use ipfib::route_table::RouteTable;
    /// let mut rt = RouteTable::<u32, _>::new();
    /// rt.insert("10.0.0.0/8".parse()?, "ten")?;
    /// let c = Compiled::<u32, _, PlanB<u32>>::with_engine(&rt, &PlanBOptions::default())?;
    /// assert_eq!(c.lookup(0x0a00_0001).map(|(_, v)| *v), Some("ten"));
    /// assert!(c.engine().name().starts_with("planb"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_engine(table: &RouteTable<A, V>, opts: &E::Options) -> Result<Self, E::Error> {
        let routes: Vec<(Prefix<A>, u32)> = table.iter_indices().collect();
        let iv = compile(routes.iter().enumerate().map(|(i, (p, _))| (*p, i as u32)));
        let engine = E::build(&iv, opts)?;
        Ok(Compiled {
            engine,
            routes,
            values: table.values().to_vec(),
        })
    }
}

impl<A: Family, V, E: Engine<A>> Compiled<A, V, E> {
    /// Longest-prefix match: the matching route's prefix and value.
    ///
    /// ```
    /// use ipfib::compiled::Compiled;
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::route_table::RouteTable;
    /// let mut rt = RouteTable::<u32, _>::new();
    /// rt.insert("10.0.0.0/8".parse()?, "ten")?;
    /// rt.insert("10.1.0.0/16".parse()?, "lab")?;
    /// let c = Compiled::build(&rt, &AutoOptions::default())?;
    /// assert_eq!(c.lookup(0x0a01_0001), Some(("10.1.0.0/16".parse()?, &"lab")));
    /// assert_eq!(c.lookup(0x0a02_0001).map(|(p, _)| p.len()), Some(8));
    /// assert_eq!(c.lookup(0x0b00_0000), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup(&self, addr: A) -> Option<(Prefix<A>, &V)> {
        self.route(self.engine.lookup(addr))
    }

    /// Route ordinals for a batch of addresses (see [`Engine::lookup_batch`]);
    /// resolve each with [`Compiled::route`].
    ///
    /// ```
    /// # use ipfib::{compiled::Compiled, engine::auto::AutoOptions, route_table::RouteTable};
    /// use ipfib::intervals::NO_ROUTE;
    /// let mut rt = RouteTable::<u32, _>::new();
    /// rt.insert("10.0.0.0/8".parse()?, "ten")?;
    /// rt.insert("10.1.0.0/16".parse()?, "lab")?;
    /// let c = Compiled::build(&rt, &AutoOptions::default())?;
    /// let mut out = [0u32; 3];
    /// c.lookup_batch::<8>(&[0x0a01_0001, 0x0a02_0001, 0x0b00_0000], &mut out);
    /// let values: Vec<_> = out.iter().map(|&o| c.route(o).map(|(_, v)| *v)).collect();
    /// assert_eq!(values, [Some("lab"), Some("ten"), None]);
    /// assert_eq!(out[2], NO_ROUTE);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        self.engine.lookup_batch::<M>(addrs, out)
    }

    /// As [`Compiled::lookup_batch`], on up to `threads` threads (0: one
    /// per CPU), each answering a contiguous share of at least
    /// [`crate::par::MIN_SHARE`] addresses (see [`crate::par`]): the same
    /// answers as one thread's.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    ///
    /// ```
    /// # use ipfib::{compiled::Compiled, engine::auto::AutoOptions, route_table::RouteTable};
    /// let rt: RouteTable<u32, u32> = [("10.0.0.0/8".parse()?, 1)].into_iter().collect();
    /// let c = Compiled::build(&rt, &AutoOptions::default())?;
    /// let addrs: Vec<u32> = (0..1_000_000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    /// let (mut one, mut two) = (vec![0; addrs.len()], vec![0; addrs.len()]);
    /// c.lookup_batch::<32>(&addrs, &mut one);
    /// c.lookup_batch_par::<32>(&addrs, &mut two, 2);
    /// assert_eq!(one, two);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lookup_batch_par<const M: usize>(&self, addrs: &[A], out: &mut [u32], threads: usize)
    where
        Self: Sync,
    {
        assert!(out.len() >= addrs.len(), "out is shorter than addrs");
        crate::par::split_run(&mut out[..addrs.len()], threads, |start, part| {
            self.lookup_batch::<M>(&addrs[start..start + part.len()], part)
        });
    }

    /// The route behind an ordinal from `lookup_batch` (`None` for
    /// [`NO_ROUTE`]).
    ///
    /// ```
    /// # use ipfib::{compiled::Compiled, engine::auto::AutoOptions, route_table::RouteTable};
    /// use ipfib::intervals::NO_ROUTE;
    /// let rt: RouteTable<u32, &str> = [("10.0.0.0/8".parse()?, "ten")].into_iter().collect();
    /// let c = Compiled::build(&rt, &AutoOptions::default())?;
    /// let mut out = [0u32; 1];
    /// c.lookup_batch::<4>(&[0x0a00_0001], &mut out);
    /// assert_eq!(c.route(out[0]), c.lookup(0x0a00_0001));
    /// assert_eq!(c.route(NO_ROUTE), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn route(&self, ordinal: u32) -> Option<(Prefix<A>, &V)> {
        if ordinal == NO_ROUTE {
            return None;
        }
        let (p, vi) = self.routes.get(ordinal as usize)?;
        self.values.get(*vi as usize)?.as_ref().map(|v| (*p, v))
    }

    /// The engine.
    ///
    /// ```
    /// # use ipfib::{compiled::Compiled, engine::auto::AutoOptions, route_table::RouteTable};
    /// use ipfib::engine::{Engine, NO_ROUTE};
    /// let rt: RouteTable<u32, &str> = [("10.0.0.0/8".parse()?, "ten")].into_iter().collect();
    /// let c = Compiled::build(&rt, &AutoOptions::default())?;
    /// assert_eq!(c.engine().lookup(0x0a00_0001), 0); // the first route's ordinal
    /// assert_eq!(c.engine().lookup(0x0b00_0001), NO_ROUTE);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// Number of routes compiled in.
    ///
    /// ```
    /// # use ipfib::{compiled::Compiled, engine::auto::AutoOptions, route_table::RouteTable};
    /// let rt: RouteTable<u32, u8> = [("10.0.0.0/8".parse()?, 1), ("10.1.0.0/16".parse()?, 1)].into_iter().collect();
    /// assert_eq!(Compiled::build(&rt, &AutoOptions::default())?.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether no route was compiled in.
    ///
    /// ```
    /// # use ipfib::{compiled::Compiled, engine::auto::AutoOptions, route_table::RouteTable};
    /// let c = Compiled::build(&RouteTable::<u32, u8>::new(), &AutoOptions::default())?;
    /// assert!(c.is_empty());
    /// assert_eq!(c.lookup(0x0a00_0001), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Bytes of the engine plus the route list (values not counted).
    ///
    /// ```
    /// # use ipfib::{compiled::Compiled, engine::auto::AutoOptions, route_table::RouteTable};
    /// use ipfib::engine::Engine;
    /// let rt: RouteTable<u32, u8> = [("10.0.0.0/8".parse()?, 1)].into_iter().collect();
    /// let c = Compiled::build(&rt, &AutoOptions::default())?;
    /// assert!(c.footprint_bytes() > c.engine().footprint_bytes()); // plus the route list
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn footprint_bytes(&self) -> usize {
        self.engine.footprint_bytes()
            + self.routes.capacity() * std::mem::size_of::<(Prefix<A>, u32)>()
    }
}
