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
    pub fn build(table: &RouteTable<A, V>, opts: &AutoOptions) -> Result<Self, AutoError> {
        Self::with_engine(table, opts)
    }
}

impl<A: Family, V: Clone, E: Engine<A>> Compiled<A, V, E> {
    /// Compile `table` with engine `E`: one ordered walk into intervals
    /// whose payloads are route ordinals (no aggregation, so the prefix is
    /// known), then the engine's build.
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
    #[inline]
    pub fn lookup(&self, addr: A) -> Option<(Prefix<A>, &V)> {
        self.route(self.engine.lookup(addr))
    }

    /// Route ordinals for a batch of addresses (see [`Engine::lookup_batch`]);
    /// resolve each with [`Compiled::route`].
    #[inline]
    pub fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        self.engine.lookup_batch::<M>(addrs, out)
    }

    /// The route behind an ordinal from `lookup_batch` (`None` for
    /// [`NO_ROUTE`]).
    #[inline]
    pub fn route(&self, ordinal: u32) -> Option<(Prefix<A>, &V)> {
        if ordinal == NO_ROUTE {
            return None;
        }
        let (p, vi) = self.routes.get(ordinal as usize)?;
        self.values.get(*vi as usize)?.as_ref().map(|v| (*p, v))
    }

    /// The engine.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// Number of routes compiled in.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether no route was compiled in.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Bytes of the engine plus the route list (values not counted).
    pub fn footprint_bytes(&self) -> usize {
        self.engine.footprint_bytes()
            + self.routes.capacity() * std::mem::size_of::<(Prefix<A>, u32)>()
    }
}
