//! The brute-force oracle: a linear scan over every route, the definition
//! of longest-prefix match that every engine is tested against.
//!
//! Test support only: O(n) per lookup. Later duplicates replace earlier
//! ones, as in every table of ours.

use crate::addr::Addr;
use crate::prefix::Prefix;

/// A plain list of routes; lookups scan all of them.
#[derive(Clone, Debug, Default)]
pub struct Oracle<A: Addr, V> {
    routes: Vec<(Prefix<A>, V)>,
}

impl<A: Addr, V: Clone> Oracle<A, V> {
    /// An oracle over `routes`; for a prefix given twice the later one wins.
    pub fn new(routes: impl IntoIterator<Item = (Prefix<A>, V)>) -> Self {
        let mut o = Oracle { routes: Vec::new() };
        for (p, v) in routes {
            o.insert(p, v);
        }
        o
    }

    /// Insert or replace.
    pub fn insert(&mut self, p: Prefix<A>, v: V) {
        match self.routes.iter_mut().find(|(q, _)| *q == p) {
            Some(slot) => slot.1 = v,
            None => self.routes.push((p, v)),
        }
    }

    /// Remove exactly `p`.
    pub fn remove(&mut self, p: &Prefix<A>) -> Option<V> {
        let i = self.routes.iter().position(|(q, _)| q == p)?;
        Some(self.routes.swap_remove(i).1)
    }

    /// The longest prefix containing `addr`, by definition.
    pub fn lookup(&self, addr: A) -> Option<(Prefix<A>, &V)> {
        self.routes
            .iter()
            .filter(|(p, _)| p.contains(addr))
            .max_by_key(|(p, _)| p.len())
            .map(|(p, v)| (*p, v))
    }

    /// The routes, in insertion order.
    pub fn routes(&self) -> &[(Prefix<A>, V)] {
        &self.routes
    }
}
