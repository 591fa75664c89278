//! The mutable table behind a Python `Table`: the route table (the source
//! of truth) under a mutex, and the published snapshot behind an atomic
//! pointer (`arc-swap`).
//!
//! Readers take the current snapshot (`snapshot()`: a lock-free `Arc`
//! clone, once per call, never per address) and look up without locks or
//! the GIL. A writer locks the route table (without the GIL), applies the
//! change, recompiles the family it touched and publishes the new
//! snapshot; lookups running meanwhile finish on the old one, which is
//! freed when its last reader lets go. A change therefore costs a rebuild
//! of one family (tens of milliseconds for a full table): the dynamic
//! `Fib` will replace this type with incremental updates behind
//! the same four calls (`snapshot`, `insert`, `remove`, `with_table`).

use crate::snapshot::{EngineSpec, FamilySnap, Snapshot};
use crate::value::{poisoned, Value};
use arc_swap::ArcSwap;
use ipfib::prefix::AnyPrefix;
use ipfib::table::Table;
use pyo3::exceptions::PyValueError;
use pyo3::sync::MutexExt;
use pyo3::{PyResult, Python};
use std::sync::{Arc, Mutex};

pub struct Live {
    /// `None` for a table opened from a compiled file until something
    /// needs the route table (a change, an exact-prefix query): it is then
    /// built from the published snapshot.
    table: Mutex<Option<Table<Value>>>,
    published: ArcSwap<Snapshot>,
}

/// The route table under the lock, built from `snap` if it was not yet.
fn ensure<'a>(
    slot: &'a mut Option<Table<Value>>,
    snap: &Snapshot,
) -> PyResult<&'a mut Table<Value>> {
    if slot.is_none() {
        let mut t = Table::new();
        t.v4 = snap.v4.route_table().map_err(build_error)?;
        t.v6 = snap.v6.route_table().map_err(build_error)?;
        *slot = Some(t);
    }
    slot.as_mut()
        .ok_or_else(|| PyValueError::new_err("ipfib: route table unavailable"))
}

impl Live {
    /// Compile `table` (compacted first) and publish it.
    pub fn new(mut table: Table<Value>, spec: EngineSpec) -> PyResult<Self> {
        table.compact();
        let snap = Snapshot {
            v4: Arc::new(FamilySnap::build(&table.v4, spec, None).map_err(build_error)?),
            v6: Arc::new(FamilySnap::build(&table.v6, spec, None).map_err(build_error)?),
            spec,
        };
        Ok(Live {
            table: Mutex::new(Some(table)),
            published: ArcSwap::from_pointee(snap),
        })
    }

    /// A table opened from a compiled file: its snapshot, mapped; the
    /// route table is built only when needed.
    pub fn from_snapshot(snap: Snapshot) -> Self {
        Live {
            table: Mutex::new(None),
            published: ArcSwap::from_pointee(snap),
        }
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.published.load_full()
    }

    /// Insert or replace a route; returns the old value.
    pub fn insert(&self, prefix: AnyPrefix, value: Value) -> PyResult<Option<Value>> {
        self.change(prefix, |t| t.insert(prefix, value).map_err(build_error))
    }

    /// Remove exactly `prefix`; returns its value.
    pub fn remove(&self, prefix: AnyPrefix) -> PyResult<Option<Value>> {
        self.change(prefix, |t| Ok(t.remove(&prefix)))
    }

    /// Read the route table (exact gets, supernets, subnets). Called with
    /// the GIL held; `f` must be pure Rust (no Python while the lock is
    /// held). A writer holds the lock without the GIL for a whole rebuild,
    /// so waiting for it detaches from the interpreter (`lock_py_attached`)
    /// rather than stopping every Python thread meanwhile. No deadlock: a
    /// writer never needs the GIL while holding the lock, and a reader
    /// that had to wait re-attaches holding it, but then whoever holds the
    /// GIL and wants the lock also waits detached, releasing the GIL.
    pub fn with_table<R>(&self, py: Python<'_>, f: impl FnOnce(&Table<Value>) -> R) -> PyResult<R> {
        let mut guard = self.table.lock_py_attached(py).map_err(poisoned)?;
        if guard.is_none() {
            // Built without the GIL, under the lock (pure Rust).
            let snap = self.snapshot();
            let slot: &mut Option<Table<Value>> = &mut guard;
            py.detach(|| ensure(slot, &snap).map(|_| ()))?;
        }
        Ok(f(ensure(&mut guard, &self.snapshot())?))
    }

    /// Apply `f` and republish the family of `prefix` when it changed the
    /// table. The lock is held across the rebuild so writers publish in
    /// the order they changed the table. Called without the GIL (`insert`
    /// and `remove` run under `py.detach`), and nothing here touches Python
    /// (values are Rust data), so a holder never waits for the GIL.
    fn change(
        &self,
        prefix: AnyPrefix,
        f: impl FnOnce(&mut Table<Value>) -> PyResult<Option<Value>>,
    ) -> PyResult<Option<Value>> {
        let mut guard = self.table.lock().map_err(poisoned)?;
        let table = ensure(&mut guard, &self.published.load_full())?;
        let before = table.len();
        let old = f(table)?;
        if old.is_none() && table.len() == before {
            return Ok(None); // a remove of an absent prefix: nothing to publish
        }
        let cur = self.published.load_full();
        let snap = match prefix {
            AnyPrefix::V4(_) => Snapshot {
                v4: Arc::new(
                    FamilySnap::build(&table.v4, cur.spec, Some(&cur.v4)).map_err(build_error)?,
                ),
                v6: Arc::clone(&cur.v6),
                spec: cur.spec,
            },
            AnyPrefix::V6(_) => Snapshot {
                v4: Arc::clone(&cur.v4),
                v6: Arc::new(
                    FamilySnap::build(&table.v6, cur.spec, Some(&cur.v6)).map_err(build_error)?,
                ),
                spec: cur.spec,
            },
        };
        self.published.store(Arc::new(snap));
        Ok(old)
    }
}

fn build_error(e: impl ToString) -> pyo3::PyErr {
    PyValueError::new_err(format!(
        "ipfib: cannot compile the table: {}",
        e.to_string()
    ))
}
