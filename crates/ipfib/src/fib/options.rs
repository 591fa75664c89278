//! What a [`Fib`](crate::fib::Fib) is built with and reports: the engine
//! it publishes ([`FibEngine`]), its options ([`FibOptions`]), its errors
//! ([`FibError`]), an update ([`FibUpdate`]) and its counters
//! ([`FibStats`]).

use crate::engine::planb::{BuildError, PlanBOptions};
use crate::engine::poptrie::{PoptrieError, PoptrieOptions};
use crate::prefix::AnyPrefix;
use crate::values::TooManyValues;
use std::time::Duration;

/// Which engine a [`Fib`](crate::fib::Fib) publishes.
///
/// ```
/// use ipfib::fib::{Fib, FibEngine, FibOptions};
/// for engine in [FibEngine::PlanB, FibEngine::Poptrie] {
///     let mut fib = Fib::new(FibOptions::with_engine(engine))?;
///     fib.insert("10.0.0.0/8".parse()?, "ten")?;
///     fib.flush()?;
///     assert_eq!(fib.snapshot().lookup_v4(0x0a00_0001), Some(&"ten"));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FibEngine {
    /// Coalesced rebuild-and-swap of the whole engine per publication.
    PlanB,
    /// Rebuild of the changed direct-pointing slots into free space of
    /// the one copy every version shares (Poptrie §3.5), then swap.
    Poptrie,
}

impl FibEngine {
    /// `auto` for a dynamic FIB: Poptrie (whose slot updates are what
    /// makes updates cheap) unless either family's shape is one a trie
    /// handles badly ([`crate::engine::auto::decide`] allows only PlanB),
    /// then PlanB. The reason names the deciding figures.
    ///
    /// ```
    /// use ipfib::fib::FibEngine;
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, 1)?;
    /// t.insert("2001:db8::/32".parse()?, 2)?;
    /// let (engine, why) = FibEngine::choose(&t);
    /// assert_eq!(engine, FibEngine::Poptrie); // a small, ordinary table
    /// assert!(why.starts_with("IPv4: ") && why.contains("; IPv6: "));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn choose<V: Clone>(table: &crate::table::Table<V>) -> (FibEngine, String) {
        use crate::engine::auto::{decide, Shape};
        use crate::intervals::compile;
        let (p4, v4) = decide(&Shape::of(&compile(table.v4.iter_indices())));
        let (p6, v6) = decide(&Shape::of(&compile(table.v6.iter_indices())));
        let engine = if p4.len() == 1 || p6.len() == 1 {
            FibEngine::PlanB
        } else {
            FibEngine::Poptrie
        };
        (engine, format!("IPv4: {v4}; IPv6: {v6}"))
    }

    /// Lower-case name (`planb`, `poptrie`).
    ///
    /// ```
    /// use ipfib::fib::FibEngine;
    /// assert_eq!(FibEngine::PlanB.name(), "planb");
    /// assert_eq!(FibEngine::Poptrie.name(), "poptrie");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            FibEngine::PlanB => "planb",
            FibEngine::Poptrie => "poptrie",
        }
    }
}

/// How a [`Fib`](crate::fib::Fib) publishes.
///
/// ```
/// use ipfib::fib::{Fib, FibOptions};
/// // Publish every change at once (the default waits for 64, or 1 ms).
/// let opts = FibOptions { max_pending: 1, ..FibOptions::default() };
/// let mut fib = Fib::new(opts)?;
/// fib.insert("10.0.0.0/8".parse()?, "ten")?;
/// assert_eq!(fib.version(), 1);
/// assert_eq!(fib.snapshot().lookup_v4(0x0a00_0001), Some(&"ten"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct FibOptions {
    pub engine: FibEngine,
    /// Publish once this many changes are pending (at least 1).
    pub max_pending: usize,
    /// Publish at the first update call (or [`Fib::publish_if_due`](crate::fib::Fib::publish_if_due)) made
    /// this long after the oldest pending change.
    pub max_delay: Duration,
    pub planb: PlanBOptions,
    pub poptrie: PoptrieOptions,
    /// Check each side's structural invariants after every in-place
    /// update and every build, before it is published
    /// ([`FibError::Invariant`] on a violation). Slow: for tests and
    /// fuzzing.
    pub validate: bool,
}

impl Default for FibOptions {
    fn default() -> Self {
        FibOptions {
            engine: FibEngine::Poptrie,
            max_pending: 64,
            max_delay: Duration::from_millis(1),
            planb: PlanBOptions::default(),
            poptrie: PoptrieOptions::default(),
            validate: false,
        }
    }
}

impl FibOptions {
    /// Options for `engine`, defaults otherwise.
    ///
    /// ```
    /// use ipfib::fib::{FibEngine, FibOptions};
    /// let opts = FibOptions::with_engine(FibEngine::PlanB);
    /// assert_eq!(opts.engine, FibEngine::PlanB);
    /// assert_eq!(opts.max_pending, FibOptions::default().max_pending);
    /// assert_eq!(FibOptions::default().engine, FibEngine::Poptrie);
    /// ```
    pub fn with_engine(engine: FibEngine) -> Self {
        FibOptions {
            engine,
            ..FibOptions::default()
        }
    }

    pub(super) fn direct_bits(&self) -> u8 {
        self.poptrie
            .direct_bits
            .unwrap_or(PoptrieOptions::DEFAULT_DIRECT_BITS)
    }
}

/// Why an update or a publication failed.
///
/// [`FibError::Values`]: the update was refused and changed nothing.
/// The others: a publication failed; readers keep the previously
/// published version, the route table keeps the changes, which stay
/// pending, and the next publication (the next change,
/// [`Fib::publish_if_due`](crate::fib::Fib::publish_if_due), [`Fib::flush`](crate::fib::Fib::flush)) tries again.
///
/// ```
/// use ipfib::fib::FibError;
/// use ipfib::values::TooManyValues;
/// let e = FibError::from(TooManyValues);
/// assert!(matches!(e, FibError::Values(_)));
/// assert_eq!(e.to_string(), TooManyValues.to_string()); // transparent
/// ```
#[derive(Debug, thiserror::Error)]
pub enum FibError {
    #[error(transparent)]
    Values(#[from] TooManyValues),
    #[error("planb build: {0}")]
    PlanB(#[from] BuildError),
    #[error("poptrie build: {0}")]
    Poptrie(#[from] PoptrieError),
    /// A side failed its structural check after an update
    /// ([`FibOptions::validate`]): a bug in ipfib, never published.
    #[error("invariant broken after an update (not published): {0}")]
    Invariant(String),
}

/// One route change for [`Fib::apply`](crate::fib::Fib::apply) and [`Fib::apply_batch`](crate::fib::Fib::apply_batch).
///
/// ```
/// use ipfib::fib::{Fib, FibOptions, FibUpdate};
/// let mut fib = Fib::new(FibOptions::default())?;
/// fib.apply_batch([
///     FibUpdate::Insert("10.0.0.0/8".parse()?, 1),
///     FibUpdate::Insert("10.1.0.0/16".parse()?, 2),
///     FibUpdate::Remove("10.0.0.0/8".parse()?),
/// ])?;
/// fib.flush()?;
/// let s = fib.snapshot();
/// assert_eq!((s.lookup_v4(0x0a01_0001), s.lookup_v4(0x0a02_0001)), (Some(&2), None));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FibUpdate<V> {
    /// Insert or replace the route for the prefix.
    Insert(AnyPrefix, V),
    Remove(AnyPrefix),
}

/// Counters of what publications did.
///
/// ```
/// use ipfib::fib::{Fib, FibEngine, FibOptions};
/// let mut fib = Fib::new(FibOptions::with_engine(FibEngine::PlanB))?;
/// fib.insert("10.0.0.0/8".parse()?, 1)?;
/// fib.flush()?;
/// let stats = fib.stats();
/// assert_eq!(stats.publications, 1);
/// assert_eq!(stats.full_builds, 1); // the IPv4 side only: IPv6 did not change
/// assert_eq!(stats.publish_total, stats.last_publish);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct FibStats {
    pub publications: u64,
    /// Family sides built from the whole table (PlanB: every publication).
    pub full_builds: u64,
    /// Poptrie direct-pointing slots rebuilt in place from the routes.
    pub slot_rebuilds: u64,
    /// Poptrie blocks and frames that publications dropped and that still
    /// wait for the snapshots of versions reaching them to be dropped (as
    /// of the last publication; both families).
    pub waiting: u64,
    /// Duration of the last publication.
    pub last_publish: Duration,
    /// Time spent publishing, in all.
    pub publish_total: Duration,
}
