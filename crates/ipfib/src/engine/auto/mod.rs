//! `auto`: the engine and parameters a table gets when its user names none.
//!
//! No engine is fastest on every table, trace and machine
//! (docs/architecture.md, "Choosing an engine: `auto`"): on one machine the 64-ary Poptrie wins IPv4
//! batches and on another the flat one; PlanB answers single lookups of
//! matched IPv6 traffic fastest, Poptrie those of uniform traffic; and a
//! table of sparse long prefixes makes every trie slow and large. So
//! `auto` decides in two steps:
//!
//! 1. **Shape** ([`Shape`], [`decide`]): the exact number of trie nodes per
//!    interval a Poptrie would need, counted in one pass over the interval
//!    boundaries per trie level. Above [`MAX_NODES_PER_INTERVAL`] only
//!    PlanB is considered (and no trie is ever built).
//! 2. **Calibration** (on by default, [`AutoOptions::calibrate`]): every
//!    [`CANDIDATES`] engine is built and timed on two seeded samples of the
//!    table (addresses inside intervals drawn uniformly, and uniformly
//!    random ones), single lookups and batches of 32 apart. Per mode, the
//!    engine with the best worst-case ratio to the fastest over both
//!    samples wins; single lookups and batches may get different engines,
//!    and then both are kept. With calibration off the family default is
//!    taken (64-ary Poptrie for IPv4, flat for IPv6), the same on every
//!    machine.
//!
//! [`Choice::reason`] gives the figures that decided; `ipfib info` prints
//! it. [`AutoEngine`] is itself an [`Engine`], so
//! [`crate::compiled::Compiled`], [`crate::table::Table`], the CLI and the
//! bindings take it like any other: one `match` per lookup or batch is
//! all it adds.

mod calibrate;
mod choice;
pub(crate) mod options;
mod shape;
#[cfg(test)]
mod tests;

use super::planb::BuildError;
pub use super::registry::{label, AutoError, Built, Kind, Pick};
use super::{Engine, Family};
use crate::intervals::Intervals;
use calibrate::calibrate;
pub use calibrate::MIN_CALIBRATED_INTERVALS;
pub use choice::Choice;
pub use options::AutoOptions;
use shape::untimed;
pub use shape::{decide, trie_nodes, Shape, CANDIDATES, DIRECT_BITS, MAX_NODES_PER_INTERVAL};

/// The engine `auto` chose: one for single lookups and, when a different
/// one is faster on batches, a second for those.
///
/// ```
/// use ipfib::engine::auto::{AutoEngine, AutoOptions};
/// use ipfib::engine::{Engine, NO_ROUTE};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
/// let e = AutoEngine::build(&iv, &AutoOptions::default())?;
/// assert_eq!([e.lookup(0x0a01_0203), e.lookup(0x0a00_0001)], [2, 1]);
/// let mut out = [0; 2];
/// e.lookup_batch::<8>(&[0x0a01_0203, 0x0b00_0000], &mut out);
/// assert_eq!(out, [2, NO_ROUTE]);
/// # Ok::<(), ipfib::engine::auto::AutoError>(())
/// ```
pub struct AutoEngine<A: Family> {
    // Fields crate-visible: `image::engines` stores and loads them.
    pub(crate) single: Built<A>,
    /// `None`: batches use `single`.
    pub(crate) batch: Option<Built<A>>,
    pub(crate) choice: Choice,
    /// Named explicitly (`AutoOptions::force`, not a reuse): `name()`
    /// then gives the engine's own name, without `auto:`.
    pub(crate) forced: bool,
}

impl<A: Family> AutoEngine<A> {
    /// What was chosen, and why.
    ///
    /// ```
    /// use ipfib::engine::auto::{AutoEngine, AutoOptions, Kind};
    /// use ipfib::engine::Engine;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u128>>().unwrap();
    /// // A few sparse long prefixes: no trie is even built.
    /// let iv = ipfib::intervals::compile([(p("2001:db8::/32"), 1), (p("2001:db8::1:0/112"), 2)]);
    /// let e = AutoEngine::build(&iv, &AutoOptions::default())?;
    /// assert_eq!(e.choice().single, (Kind::PlanB, None));
    /// assert!(e.choice().reason.contains("sparse long prefixes"));
    /// # Ok::<(), ipfib::engine::auto::AutoError>(())
    /// ```
    pub fn choice(&self) -> &Choice {
        &self.choice
    }

    /// The engine single lookups use.
    ///
    /// ```
    /// use ipfib::engine::auto::{AutoEngine, AutoOptions, Kind};
    /// use ipfib::engine::Engine;
    /// let opts = AutoOptions { force: Some((Kind::PlanB, None)), force_batch: Some((Kind::Flat, Some(16))), ..Default::default() };
    /// let e = AutoEngine::<u32>::build(&ipfib::intervals::compile([]), &opts)?;
    /// assert_eq!((e.single().kind(), e.batch().kind()), (Kind::PlanB, Kind::Flat));
    /// # Ok::<(), ipfib::engine::auto::AutoError>(())
    /// ```
    pub fn single(&self) -> &Built<A> {
        &self.single
    }

    /// The engine batches use.
    ///
    /// ```
    /// use ipfib::engine::auto::{AutoEngine, AutoOptions, Kind};
    /// use ipfib::engine::Engine;
    /// let opts = AutoOptions { force: Some((Kind::PlanB, None)), ..Default::default() };
    /// let e = AutoEngine::<u32>::build(&ipfib::intervals::compile([]), &opts)?;
    /// assert_eq!(e.batch().kind(), Kind::PlanB); // no second engine: the single one
    /// # Ok::<(), ipfib::engine::auto::AutoError>(())
    /// ```
    pub fn batch(&self) -> &Built<A> {
        self.batch.as_ref().unwrap_or(&self.single)
    }
}

impl<A: Family> AutoEngine<A> {
    /// Keep only the batch engine, for single lookups too (what a compiled
    /// table file stores: half the bytes to map and check on open; a
    /// single lookup through the batch engine is at most a few ns slower,
    /// nothing beside a Python call or a formatted line).
    pub(crate) fn batch_only(self) -> Self {
        let Some(batch) = self.batch else {
            return self;
        };
        AutoEngine {
            single: batch,
            batch: None,
            choice: Choice {
                single: self.choice.batch,
                reason: format!(
                    "{}; compiled file: the batch engine serves single lookups too",
                    self.choice.reason
                ),
                ..self.choice
            },
            forced: self.forced,
        }
    }
}

impl<A: Family> Engine<A> for AutoEngine<A> {
    type Options = AutoOptions;
    type Error = AutoError;

    /// Choose and build (see the module docs). Malformed intervals and
    /// unsupported kernels are errors whatever the engine.
    fn build(iv: &Intervals<A>, opts: &Self::Options) -> Result<Self, Self::Error> {
        iv.validate().map_err(BuildError::from)?;
        let one = |pick: Pick, reason: String| -> Result<Self, AutoError> {
            Ok(AutoEngine {
                single: Built::build(iv, pick, opts)?,
                batch: None,
                forced: false,
                choice: Choice {
                    single: pick,
                    batch: pick,
                    reason,
                    intervals: iv.len(),
                },
            })
        };
        // A reused choice of a trie gives way to the shape verdict.
        let shape = opts.reused_from.map(|_| Shape::of(iv));
        let verdict = shape.as_ref().map(decide);
        let trie_refused = verdict.as_ref().is_some_and(|(picks, _)| picks.len() == 1);
        if let Some(pick) = opts.force.filter(|p| !trie_refused || p.0 == Kind::PlanB) {
            let why = match opts.reused_from {
                Some(n) => format!("reused: chosen for this table at {n} intervals"),
                None => "named explicitly".into(),
            };
            let mut e = one(pick, why)?;
            e.forced = opts.reused_from.is_none();
            if let Some(batch) = opts.force_batch.filter(|&b| b != pick) {
                e.batch = Some(Built::build(iv, batch, opts)?);
                e.choice.batch = batch;
            }
            if let Some(n) = opts.reused_from {
                e.choice.intervals = n;
            }
            return Ok(e);
        }
        let shape = shape.unwrap_or_else(|| Shape::of(iv));
        let (picks, figures) = verdict.unwrap_or_else(|| decide(&shape));
        if picks.len() == 1 {
            return one(picks[0], figures);
        }
        if !opts.calibrate || shape.intervals < MIN_CALIBRATED_INTERVALS {
            let pick = untimed(&shape);
            let why = if opts.calibrate {
                format!("{figures}; too small to be worth timing: the family's default")
            } else {
                format!("{figures}; not calibrated: the family's default")
            };
            return match one(pick, why) {
                // A trie the family default asked for that cannot be built
                // (too many nodes, payloads past 2^31): PlanB instead.
                Err(AutoError::Poptrie(e)) => one(
                    (Kind::PlanB, None),
                    format!("{figures}; {} not built: {e}", label(pick)),
                ),
                built => built,
            };
        }
        let c = calibrate(iv, &picks, opts, figures)?;
        Ok(AutoEngine {
            single: c.single,
            batch: c.batch,
            choice: c.choice,
            forced: false,
        })
    }
    #[inline(always)]
    fn lookup(&self, addr: A) -> u32 {
        self.single.lookup(addr)
    }
    #[inline]
    fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        match &self.batch {
            Some(b) => b.lookup_batch::<M>(addrs, out),
            None => self.single.lookup_batch::<M>(addrs, out),
        }
    }
    fn footprint_bytes(&self) -> usize {
        self.single.footprint_bytes() + self.batch.as_ref().map_or(0, Built::footprint_bytes)
    }
    fn name(&self) -> String {
        let prefix = if self.forced { "" } else { "auto:" };
        match &self.batch {
            None => format!("{prefix}{}", self.single.name()),
            Some(b) => format!("{prefix}{}/{}", self.single.name(), b.name()),
        }
    }
    fn validate(&self) -> Result<(), String> {
        self.single.validate()?;
        self.batch.as_ref().map_or(Ok(()), Built::validate)
    }
    fn validate_below(&self, bound: u32) -> Result<(), String> {
        self.single.validate_below(bound)?;
        self.batch
            .as_ref()
            .map_or(Ok(()), |b| b.validate_below(bound))
    }
}
