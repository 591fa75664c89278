//! `Fib<V>`: a FIB that takes route updates while other threads look up,
//! and lookups never wait.
//!
//! ```text
//!  writer (&mut Fib)                        readers (FibReader, any thread)
//!  insert / remove / apply_batch            reader.snapshot()  (no lock, no allocation)
//!     │ RouteTable per family (truth)          │ Arc<Published>: version, v4 side, v6 side
//!     │ marks changed direct slots             ▼
//!     ▼ every max_pending updates or       snapshot.lookup_v4 / lookup_batch_v4 / value_v4
//!       max_delay, or flush():               (one consistent version for the whole batch)
//!  PlanB:   build a new side from the table
//!  Poptrie: rebuild the changed slots into free space of the one copy
//!           all versions share, copy-on-write the direct chunks (§3.5)
//!     │ ArcSwap::store(new Published)  ─────►  next snapshot sees the new version
//! ```
//!
//! - **Publication** is one `ArcSwap` store of an `Arc<Published>` holding
//!   both families, so a snapshot never mixes versions, and a batch of
//!   updates (`apply_batch`) becomes visible all at once.
//! - **Reclamation** is reference counting through arc-swap: a published
//!   version is freed when the last snapshot holding it is dropped.
//! - **PlanB** is rebuilt from the route table at each publication
//!   (coalesced rebuild-and-swap).
//! - **Poptrie** keeps one copy of its node and leaf arrays for every
//!   version (`engine::poptrie::versioned`). A publication rebuilds each
//!   changed direct-pointing slot into free space of those arrays and
//!   gives the new version a direct table that shares every unchanged
//!   chunk (1,024 slots) with the last. Blocks a version no longer
//!   reaches return to free space once no snapshot holds a version that
//!   reaches them; when free space runs out (a snapshot held for long),
//!   the next publication builds afresh into new arrays. Nothing waits:
//!   readers never block, and the writer never waits for readers.
//! - **Value indices** are resolved through the side that answered them
//!   (`FamilySide::values`, copy-on-write chunks shared between versions),
//!   so a freed index that the route table hands to another value cannot
//!   change what an older snapshot answers.
//!
//! Staleness: pending changes are published by the first of
//! - the update that makes `max_pending` of them,
//! - any call of [`Fib::insert`], [`Fib::remove`], [`Fib::apply`],
//!   [`Fib::apply_batch`] (whether or not it changes a route; one the
//!   route table refuses returns its error first) or
//!   [`Fib::publish_if_due`] made `max_delay` or more after the oldest of
//!   them,
//! - [`Fib::flush`] or [`Fib::replace_all`].
//!
//! The FIB has no timer thread (a writer owns it, `&mut`), so with no
//! further calls nothing is published: a writer that goes idle calls
//! `flush`, or waits for its next update with [`Fib::due_in`] as the
//! timeout and then calls `publish_if_due`.
//!
//! Errors: an update the route table refuses ([`FibError::Values`])
//! changes nothing (`apply_batch` undoes the updates before it). A
//! publication that fails (an engine's build error, or
//! [`FibError::Invariant`] when `validate` is on) publishes nothing and
//! leaves readers on the last version; the changes stay in the route
//! table and pending, and the next publication tries again.

mod family;
mod options;
mod snapshot;

use crate::prefix::AnyPrefix;
use crate::route_table::RouteTable;
use crate::table::Table;
use arc_swap::ArcSwap;
use family::FamilyFib;
pub use options::{FibEngine, FibError, FibOptions, FibStats, FibUpdate};
use snapshot::Published;
pub use snapshot::{FibReader, Snapshot};
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A dynamic FIB for both families.
///
/// Thread safety: the writer owns the `Fib` (`&mut` to change it); any
/// number of [`FibReader`]s, `Send + Sync + Clone`, look up from other
/// threads. Updates allocate; lookups do not (arc-swap allocates one
/// bookkeeping node per thread on its first snapshot, then reuses it).
/// A miss returns `None`. IPv4-mapped IPv6 addresses are looked up in the
/// IPv4 table by [`Snapshot::lookup`] (the [`AnyAddr`](crate::prefix::AnyAddr) rule); the
/// per-family calls take addresses as given.
///
/// ```
/// use ipfib::fib::{Fib, FibOptions};
/// let mut fib = Fib::new(FibOptions::default())?;
/// let reader = fib.reader();
/// fib.insert("10.0.0.0/8".parse()?, "ten")?;
/// fib.flush()?; // publish now
/// let lookup = std::thread::spawn(move || reader.snapshot().lookup_v4(0x0a01_0203).copied());
/// assert_eq!(lookup.join().unwrap(), Some("ten"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Fib<V> {
    v4: FamilyFib<u32, V>,
    v6: FamilyFib<u128, V>,
    shared: Arc<ArcSwap<Published<V>>>,
    opts: FibOptions,
    pending: usize,
    oldest_pending: Option<Instant>,
    version: u64,
    stats: FibStats,
}

impl<V: Clone + Eq + Hash> Fib<V> {
    /// An empty FIB.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// let fib: Fib<u32> = Fib::new(FibOptions::default())?;
    /// assert_eq!(fib.version(), 0);
    /// assert_eq!(fib.snapshot().lookup_v4(0), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(opts: FibOptions) -> Result<Self, FibError> {
        Self::from_table(Table::new(), opts)
    }

    /// A FIB holding `table`, published as version 0.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::prefix::AnyAddr;
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("2001:db8::/32".parse()?, "doc")?;
    /// let fib = Fib::from_table(t, FibOptions::default())?;
    /// let s = fib.snapshot();
    /// assert_eq!((s.version(), s.lookup(AnyAddr::parse("2001:db8::1")?)), (0, Some(&"doc")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_table(table: Table<V>, mut opts: FibOptions) -> Result<Self, FibError> {
        opts.max_pending = opts.max_pending.max(1);
        let v4 = FamilyFib::new(table.v4, &opts)?;
        let v6 = FamilyFib::new(table.v6, &opts)?;
        let published = Published {
            version: 0,
            v4: v4.current(),
            v6: v6.current(),
        };
        Ok(Fib {
            v4,
            v6,
            shared: Arc::new(ArcSwap::from_pointee(published)),
            opts,
            pending: 0,
            oldest_pending: None,
            version: 0,
            stats: FibStats::default(),
        })
    }

    /// Insert or replace the route for `prefix`; returns the old value.
    /// Visible to readers at the next publication.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// # let opts = FibOptions { max_delay: std::time::Duration::from_secs(3600), ..FibOptions::default() };
    /// let mut fib = Fib::new(opts)?;
    /// assert_eq!(fib.insert("10.0.0.0/8".parse()?, "a")?, None);
    /// assert_eq!(fib.insert("10.0.0.0/8".parse()?, "b")?, Some("a"));
    /// assert_eq!(fib.snapshot().lookup_v4(0x0a00_0001), None); // not published yet
    /// fib.flush()?;
    /// assert_eq!(fib.snapshot().lookup_v4(0x0a00_0001), Some(&"b"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert(&mut self, prefix: AnyPrefix, value: V) -> Result<Option<V>, FibError> {
        let (old, changed) = self.insert_unpublished(prefix, value)?;
        self.changed(changed)?;
        Ok(old)
    }

    /// Remove the route for exactly `prefix`; returns its value.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::prefix::AnyPrefix;
    /// let mut fib = Fib::new(FibOptions::default())?;
    /// let p: AnyPrefix = "10.0.0.0/8".parse()?;
    /// fib.insert(p, "ten")?;
    /// assert_eq!(fib.remove(&p)?, Some("ten"));
    /// assert_eq!(fib.remove(&p)?, None);
    /// fib.flush()?;
    /// assert_eq!(fib.snapshot().lookup_v4(0x0a00_0001), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove(&mut self, prefix: &AnyPrefix) -> Result<Option<V>, FibError> {
        let (old, changed) = self.remove_unpublished(prefix);
        self.changed(changed)?;
        Ok(old)
    }

    /// Apply one update (insert or remove).
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions, FibUpdate};
    /// # let opts = FibOptions { max_delay: std::time::Duration::from_secs(3600), ..FibOptions::default() };
    /// let mut fib = Fib::new(opts)?;
    /// fib.apply(FibUpdate::Insert("2001:db8::/32".parse()?, 1))?;
    /// assert_eq!((fib.pending(), fib.routes_v6().len()), (1, 1));
    /// fib.apply(FibUpdate::Remove("2001:db8::/32".parse()?))?;
    /// assert!(fib.routes_v6().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn apply(&mut self, update: FibUpdate<V>) -> Result<(), FibError> {
        let changed = self.apply_unpublished(update)?;
        self.changed(changed)
    }

    /// Apply without publishing (no old value is cloned): whether a route
    /// changed.
    fn apply_unpublished(&mut self, update: FibUpdate<V>) -> Result<bool, FibError> {
        Ok(match update {
            FibUpdate::Insert(AnyPrefix::V4(p), v) => self.v4.upsert(p, v)?,
            FibUpdate::Insert(AnyPrefix::V6(p), v) => self.v6.upsert(p, v)?,
            FibUpdate::Remove(p) => self.remove_unpublished(&p).1,
        })
    }

    /// Apply updates together: no publication happens between them, so
    /// readers see all of them or none. All or none for the route table
    /// too: when an update is refused ([`FibError::Values`]), the ones
    /// before it are undone and the call changes nothing.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions, FibUpdate};
    /// let mut fib = Fib::new(FibOptions { max_pending: 1, ..FibOptions::default() })?;
    /// fib.apply_batch([
    ///     FibUpdate::Insert("10.0.0.0/8".parse()?, "ten"),
    ///     FibUpdate::Insert("2001:db8::/32".parse()?, "doc"),
    /// ])?;
    /// assert_eq!(fib.version(), 1); // one publication for the whole batch
    /// let s = fib.snapshot();
    /// assert_eq!((s.lookup_v4(0x0a00_0001), s.lookup_v6(0x2001_0db8 << 96)), (Some(&"ten"), Some(&"doc")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn apply_batch(
        &mut self,
        updates: impl IntoIterator<Item = FibUpdate<V>>,
    ) -> Result<(), FibError> {
        // (prefix, value before the batch touched it): undone in reverse,
        // each step returns the table to a state it held a moment ago.
        let mut undo: Vec<(AnyPrefix, Option<V>)> = Vec::new();
        let mut changes = 0usize;
        for u in updates {
            let (prefix, step) = match u {
                FibUpdate::Insert(p, v) => (p, self.insert_unpublished(p, v)),
                FibUpdate::Remove(p) => (p, Ok(self.remove_unpublished(&p))),
            };
            match step {
                Ok((old, changed)) => {
                    if changed {
                        changes += 1;
                        undo.push((prefix, old));
                    }
                }
                Err(e) => {
                    self.undo(undo);
                    return Err(e);
                }
            }
        }
        if changes > 0 {
            self.pending += changes - 1;
        }
        self.changed(changes > 0)
    }

    /// Put back the routes `log` recorded, last first. Each step returns
    /// the table to a state it held during the same call, so the value
    /// table had room for it then and has now: the insert cannot be
    /// refused (were it, the route would stay as the later update left it,
    /// and the publication that follows would still show the table as it
    /// is).
    fn undo(&mut self, log: Vec<(AnyPrefix, Option<V>)>) {
        for (prefix, old) in log.into_iter().rev() {
            match old {
                Some(v) => {
                    let _ = self.insert_unpublished(prefix, v);
                }
                None => {
                    self.remove_unpublished(&prefix);
                }
            }
        }
    }

    /// Replace every route with `table` and publish at once.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::table::Table;
    /// let mut fib = Fib::new(FibOptions::default())?;
    /// fib.insert("10.0.0.0/8".parse()?, "ten")?;
    /// let mut next = Table::new();
    /// next.insert("11.0.0.0/8".parse()?, "eleven")?;
    /// fib.replace_all(next)?; // published at once
    /// let s = fib.snapshot();
    /// assert_eq!((s.lookup_v4(0x0a00_0001), s.lookup_v4(0x0b00_0001)), (None, Some(&"eleven")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replace_all(&mut self, table: Table<V>) -> Result<(), FibError> {
        self.v4.reset(table.v4);
        self.v6.reset(table.v6);
        self.pending += 1;
        self.oldest_pending.get_or_insert_with(Instant::now);
        self.publish_now()
    }

    /// Publish pending changes now.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// # let opts = FibOptions { max_delay: std::time::Duration::from_secs(3600), ..FibOptions::default() };
    /// let mut fib = Fib::new(opts)?;
    /// fib.insert("10.0.0.0/8".parse()?, 1)?;
    /// assert_eq!((fib.pending(), fib.version()), (1, 0));
    /// fib.flush()?;
    /// assert_eq!((fib.pending(), fib.version()), (0, 1));
    /// fib.flush()?; // nothing pending: no new version
    /// assert_eq!(fib.version(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flush(&mut self) -> Result<(), FibError> {
        if self.pending > 0 {
            self.publish_now()?;
        }
        Ok(())
    }

    fn insert_unpublished(
        &mut self,
        prefix: AnyPrefix,
        value: V,
    ) -> Result<(Option<V>, bool), FibError> {
        match prefix {
            AnyPrefix::V4(p) => self.v4.insert(p, value),
            AnyPrefix::V6(p) => self.v6.insert(p, value),
        }
    }

    fn remove_unpublished(&mut self, prefix: &AnyPrefix) -> (Option<V>, bool) {
        match prefix {
            AnyPrefix::V4(p) => self.v4.remove(p),
            AnyPrefix::V6(p) => self.v6.remove(p),
        }
    }

    /// Count a change, and publish when the staleness bound says so:
    /// every update call checks it while changes are pending, whether or
    /// not it changed anything itself (a stream of unchanged
    /// re-announcements must not hold back a due change).
    fn changed(&mut self, changed: bool) -> Result<(), FibError> {
        if changed {
            self.pending += 1;
            self.oldest_pending.get_or_insert_with(Instant::now);
        }
        if self.pending > 0 {
            self.publish_if_due()?;
        }
        Ok(())
    }

    /// Whether the pending changes are due: `max_pending` of them, or the
    /// oldest `max_delay` old.
    fn overdue(&self) -> bool {
        self.pending > 0
            && (self.pending >= self.opts.max_pending
                || self
                    .oldest_pending
                    .is_none_or(|t| t.elapsed() >= self.opts.max_delay))
    }

    /// How long until [`Fib::publish_if_due`] has something to do: `None`
    /// when nothing is pending; else the time until the changes are due
    /// (zero when they are). A writer that waits for updates with a timeout
    /// uses this as the timeout, then calls `publish_if_due`: the FIB has
    /// no thread of its own.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use std::time::Duration;
    /// let opts = FibOptions { max_delay: Duration::from_secs(60), ..FibOptions::default() };
    /// let mut fib = Fib::new(opts)?;
    /// assert_eq!(fib.due_in(), None); // nothing pending
    /// fib.insert("10.0.0.0/8".parse()?, 1)?;
    /// let wait = fib.due_in().expect("a change is pending");
    /// assert!(wait > Duration::from_secs(50) && wait <= Duration::from_secs(60));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn due_in(&self) -> Option<Duration> {
        if self.pending == 0 {
            return None;
        }
        if self.overdue() {
            return Some(Duration::ZERO);
        }
        let oldest = self.oldest_pending?;
        Some(self.opts.max_delay.saturating_sub(oldest.elapsed()))
    }

    /// Publish the pending changes if the staleness bound says they are
    /// due (`max_pending` changes, or the oldest `max_delay` old); whether
    /// a version was published.
    /// Update calls do this themselves; a writer with no more updates for
    /// a while calls it (or [`Fib::flush`]) so that the last changes do
    /// not wait for the next update.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use std::time::Duration;
    /// let opts = FibOptions { max_delay: Duration::from_millis(5), ..FibOptions::default() };
    /// let mut fib = Fib::new(opts)?;
    /// fib.insert("10.0.0.0/8".parse()?, 1)?;
    /// std::thread::sleep(fib.due_in().unwrap_or_default());
    /// assert!(fib.publish_if_due()?);
    /// assert_eq!(fib.snapshot().lookup_v4(0x0a00_0001), Some(&1));
    /// assert!(!fib.publish_if_due()?); // nothing left to publish
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish_if_due(&mut self) -> Result<bool, FibError> {
        if !self.overdue() {
            return Ok(false);
        }
        let before = self.version;
        self.publish_now()?;
        Ok(self.version != before)
    }

    /// Publish. Both families' sides are built before either becomes
    /// current, so an error publishes nothing and changes no state a later
    /// publication relies on: the changes stay pending and the next
    /// publication (the next change, [`Fib::publish_if_due`] or
    /// [`Fib::flush`]) tries again.
    fn publish_now(&mut self) -> Result<(), FibError> {
        let start = Instant::now();
        let v4 = self.v4.build_next(&self.opts, &mut self.stats)?;
        let v6 = self.v6.build_next(&self.opts, &mut self.stats)?;
        let v4 = self.v4.commit(v4);
        let v6 = self.v6.commit(v6);
        self.version += 1;
        self.shared.store(Arc::new(Published {
            version: self.version,
            v4,
            v6,
        }));
        self.pending = 0;
        self.oldest_pending = None;
        self.stats.publications += 1;
        self.stats.waiting = (self.v4.waiting() + self.v6.waiting()) as u64;
        self.stats.last_publish = start.elapsed();
        self.stats.publish_total += self.stats.last_publish;
        Ok(())
    }
}

impl<V> Fib<V> {
    /// A handle for reader threads.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// let mut fib = Fib::new(FibOptions::default())?;
    /// let reader = fib.reader();
    /// let other = reader.clone();
    /// fib.insert("10.0.0.0/8".parse()?, "ten")?;
    /// fib.flush()?;
    /// let lookup = std::thread::spawn(move || other.snapshot().lookup_v4(0x0a00_0001).copied());
    /// assert_eq!(lookup.join().unwrap(), Some("ten"));
    /// assert_eq!(reader.snapshot().version(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reader(&self) -> FibReader<V> {
        FibReader {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The latest published version, for the writer's own lookups.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// let mut fib = Fib::new(FibOptions::default())?;
    /// fib.insert("10.0.0.0/8".parse()?, 1)?;
    /// fib.flush()?;
    /// let old = fib.snapshot();
    /// fib.insert("10.0.0.0/8".parse()?, 2)?;
    /// fib.flush()?;
    /// assert_eq!(old.lookup_v4(0x0a00_0001), Some(&1)); // a snapshot keeps its version
    /// assert_eq!(fib.snapshot().lookup_v4(0x0a00_0001), Some(&2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn snapshot(&self) -> Snapshot<V> {
        Snapshot {
            guard: self.shared.load(),
        }
    }

    /// Version of the latest publication (0: the initial table).
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// let mut fib = Fib::new(FibOptions::default())?;
    /// assert_eq!(fib.version(), 0);
    /// fib.insert("10.0.0.0/8".parse()?, 1)?;
    /// fib.flush()?;
    /// assert_eq!(fib.version(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Changes not yet published.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// # let opts = FibOptions { max_delay: std::time::Duration::from_secs(3600), ..FibOptions::default() };
    /// let mut fib = Fib::new(opts)?;
    /// fib.insert("10.0.0.0/8".parse()?, 1)?;
    /// fib.insert("11.0.0.0/8".parse()?, 1)?;
    /// fib.insert("11.0.0.0/8".parse()?, 1)?; // the same value: not a change
    /// assert_eq!(fib.pending(), 2);
    /// fib.flush()?;
    /// assert_eq!(fib.pending(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// The IPv4 route table (the truth, including unpublished changes).
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// # let opts = FibOptions { max_delay: std::time::Duration::from_secs(3600), ..FibOptions::default() };
    /// let mut fib = Fib::new(opts)?;
    /// fib.insert("10.0.0.0/8".parse()?, "ten")?;
    /// assert_eq!(fib.routes_v4().lookup(0x0a00_0001).map(|(_, v)| *v), Some("ten"));
    /// assert_eq!(fib.snapshot().lookup_v4(0x0a00_0001), None); // not published yet
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn routes_v4(&self) -> &RouteTable<u32, V> {
        &self.v4.routes
    }

    /// The IPv6 route table.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// let mut fib = Fib::new(FibOptions::default())?;
    /// fib.insert("2001:db8::/32".parse()?, "doc")?;
    /// assert_eq!(fib.routes_v6().get(&"2001:db8::/32".parse()?), Some(&"doc"));
    /// assert!(fib.routes_v4().is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn routes_v6(&self) -> &RouteTable<u128, V> {
        &self.v6.routes
    }

    /// What publications did so far.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// let mut fib = Fib::new(FibOptions::default())?;
    /// assert_eq!(fib.stats().publications, 0);
    /// fib.insert("10.0.0.0/8".parse()?, 1)?;
    /// fib.flush()?;
    /// assert_eq!(fib.stats().publications, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> &FibStats {
        &self.stats
    }

    /// The options in force.
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// let fib: Fib<u8> = Fib::new(FibOptions { max_pending: 0, ..FibOptions::default() })?;
    /// assert_eq!(fib.options().max_pending, 1); // at least 1
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn options(&self) -> &FibOptions {
        &self.opts
    }

    /// Heap bytes the writer keeps: route tables, the published engines
    /// with their value slots (not the values' own heap data, nor
    /// versions that readers still hold).
    ///
    /// ```
    /// use ipfib::fib::{Fib, FibOptions};
    /// use ipfib::prefix::{AnyPrefix, Prefix};
    /// let mut fib = Fib::new(FibOptions::default())?;
    /// let empty = fib.footprint_bytes();
    /// for i in 0..256u32 {
    ///     fib.insert(AnyPrefix::V4(Prefix::new(i << 16, 16)?), i)?;
    /// }
    /// fib.flush()?;
    /// assert!(fib.footprint_bytes() > empty);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn footprint_bytes(&self) -> usize {
        self.v4.footprint_bytes() + self.v6.footprint_bytes()
    }
}

#[cfg(test)]
mod tests;
