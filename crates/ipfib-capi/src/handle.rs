//! The table behind an `ipfib_table *`: an in-memory compiled table (a
//! loaded file or a builder's routes) or a mapped compiled table file,
//! answering route ordinals per family as the CLI's `lookup` does
//! (crates/ipfib-cli/src/lookup/answer.rs), plus each route's prefix
//! length in a flat array so that a batch's lengths cost one byte read
//! per answer.
//!
//! Immutable once made: `Send + Sync`, lookups neither lock nor allocate.

use ipfib_core::engine::auto::AutoOptions;
use ipfib_core::engine::{Engine, NO_ROUTE};
use ipfib_core::image::ImageTable;
use ipfib_core::prefix::Prefix;
use ipfib_core::table::{CompiledTable, Table};

/// Addresses in flight per engine batch (`lookup_batch::<M>`), as the CLI.
pub(crate) const LANES: usize = 32;

// One per table, boxed behind the C handle already: the size difference
// costs nothing, and a second box would put one more dependent load on
// every lookup.
#[allow(clippy::large_enum_variant)]
enum Inner {
    Memory(CompiledTable<String>),
    Image(ImageTable),
}

/// The opaque table handle (`ipfib_table` in C).
pub struct IpfibTable {
    inner: Inner,
    /// Prefix length of each route, by ordinal.
    lens4: Vec<u8>,
    lens6: Vec<u8>,
    /// What a lenient load skipped or where it stopped ("" if nothing).
    pub report: String,
}

impl IpfibTable {
    /// Compile a route table (`AutoOptions::default()`: the engines the
    /// table's shape calls for).
    pub fn compile(table: &Table<String>, report: String) -> Result<Self, String> {
        let c = table
            .compile(&AutoOptions::default())
            .map_err(|e| e.to_string())?;
        let lens4 = (0..c.v4.len() as u32)
            .map(|o| c.v4.route(o).map_or(0, |(p, _)| p.len()))
            .collect();
        let lens6 = (0..c.v6.len() as u32)
            .map(|o| c.v6.route(o).map_or(0, |(p, _)| p.len()))
            .collect();
        Ok(IpfibTable {
            inner: Inner::Memory(c),
            lens4,
            lens6,
            report,
        })
    }

    /// A compiled table file, already opened (mapped).
    pub fn image(t: ImageTable) -> Self {
        let lens4 = t.v4.prefixes().iter().map(|p| p.len()).collect();
        let lens6 = t.v6.prefixes().iter().map(|p| p.len()).collect();
        IpfibTable {
            inner: Inner::Image(t),
            lens4,
            lens6,
            report: String::new(),
        }
    }

    #[inline]
    pub fn lookup_v4(&self, addr: u32) -> u32 {
        match &self.inner {
            Inner::Memory(c) => c.v4.engine().lookup(addr),
            Inner::Image(t) => t.v4.by_route().lookup(addr),
        }
    }

    #[inline]
    pub fn lookup_v6(&self, addr: u128) -> u32 {
        match &self.inner {
            Inner::Memory(c) => c.v6.engine().lookup(addr),
            Inner::Image(t) => t.v6.by_route().lookup(addr),
        }
    }

    /// Ordinals for `addrs` into `out` (`out.len() == addrs.len()`).
    #[inline]
    pub fn batch_v4(&self, addrs: &[u32], out: &mut [u32]) {
        match &self.inner {
            Inner::Memory(c) => c.v4.lookup_batch::<LANES>(addrs, out),
            Inner::Image(t) => t.v4.lookup_batch::<LANES>(addrs, out),
        }
    }

    #[inline]
    pub fn batch_v6(&self, addrs: &[u128], out: &mut [u32]) {
        match &self.inner {
            Inner::Memory(c) => c.v6.lookup_batch::<LANES>(addrs, out),
            Inner::Image(t) => t.v6.lookup_batch::<LANES>(addrs, out),
        }
    }

    /// The prefix length of route `ordinal` (0 for `NO_ROUTE`).
    #[inline]
    pub fn len_v4(&self, ordinal: u32) -> u8 {
        self.lens4.get(ordinal as usize).copied().unwrap_or(0)
    }

    #[inline]
    pub fn len_v6(&self, ordinal: u32) -> u8 {
        self.lens6.get(ordinal as usize).copied().unwrap_or(0)
    }

    pub fn route_v4(&self, ordinal: u32) -> Option<(Prefix<u32>, &str)> {
        if ordinal == NO_ROUTE {
            return None;
        }
        match &self.inner {
            Inner::Memory(c) => c.v4.route(ordinal).map(|(p, v)| (p, v.as_str())),
            Inner::Image(t) => t.v4.route(ordinal),
        }
    }

    pub fn route_v6(&self, ordinal: u32) -> Option<(Prefix<u128>, &str)> {
        if ordinal == NO_ROUTE {
            return None;
        }
        match &self.inner {
            Inner::Memory(c) => c.v6.route(ordinal).map(|(p, v)| (p, v.as_str())),
            Inner::Image(t) => t.v6.route(ordinal),
        }
    }

    pub fn routes_v4(&self) -> usize {
        self.lens4.len()
    }

    pub fn routes_v6(&self) -> usize {
        self.lens6.len()
    }
}

/// The opaque builder handle (`ipfib_builder` in C): routes added so far.
#[derive(Default)]
pub struct IpfibBuilder {
    pub table: Table<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn a_table_handle_is_send_and_sync() {
        // The header's promise: lookups on one table from many threads.
        assert_send_sync::<IpfibTable>();
    }
}
