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

use super::planb::BuildError;
use super::poptrie::{PoptrieError, PoptrieOptions};
pub use super::registry::{label, AutoError, Built, Kind, Pick};
use super::{Engine, Family};
use crate::intervals::Intervals;
use std::fmt;

/// Direct-pointing bits of the shape count and the family defaults: the
/// paper's 18 (the flat layout is also tried at 16, which won some IPv4
/// batches on an Intel Xeon).
///
/// ```
/// use ipfib::engine::auto::{AutoEngine, AutoOptions, Kind, DIRECT_BITS};
/// use ipfib::engine::Engine;
/// assert_eq!(DIRECT_BITS, 18);
/// // A small IPv4 table gets the 64-ary Poptrie at these bits.
/// let e = AutoEngine::<u32>::build(&ipfib::intervals::compile([]), &AutoOptions::default())?;
/// assert_eq!(e.choice().single, (Kind::Poptrie, Some(DIRECT_BITS)));
/// # Ok::<(), ipfib::engine::auto::AutoError>(())
/// ```
pub const DIRECT_BITS: u8 = PoptrieOptions::DEFAULT_DIRECT_BITS;

/// Above this many trie nodes per interval a Poptrie is the wrong
/// structure: PlanB's footprint is about 8-10 bytes per interval whatever
/// the prefixes look like, while each node costs a Poptrie at least 16
/// bytes and a cache line on the way down. The real tables need 0.37-0.65
/// 32-ary nodes per interval (IPv4 0.39-0.40, IPv6 0.37-0.65); a million
/// sparse /40-/64 IPv6 prefixes need 1.74, and there single Poptrie
/// lookups of matched traffic ran at a fifth to a third of PlanB's
/// (docs/architecture.md, "Choosing an engine: `auto`").
///
/// ```
/// use ipfib::engine::auto::{decide, Kind, Shape, MAX_NODES_PER_INTERVAL};
/// let shape = |nodes32| Shape { family: 6, intervals: 100, nodes64: nodes32, nodes32 };
/// assert_eq!(MAX_NODES_PER_INTERVAL, 1.0);
/// assert!(decide(&shape(100)).0.len() > 1); // 1.0 per interval: tries admitted
/// assert_eq!(decide(&shape(101)).0, [(Kind::PlanB, None)]);
/// ```
pub const MAX_NODES_PER_INTERVAL: f64 = 1.0;

/// The figures [`decide`] reads from a table.
///
/// ```
/// use ipfib::engine::auto::Shape;
/// let shape = Shape { family: 4, intervals: 1000, nodes64: 300, nodes32: 400 };
/// assert_eq!(shape.nodes_per_interval(), 0.4);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// Address family: 4 or 6.
    pub family: u8,
    /// Elementary intervals (after merging equal neighbours).
    pub intervals: usize,
    /// Internal nodes a 64-ary Poptrie with [`DIRECT_BITS`] would hold
    /// (without focusing its direct table).
    pub nodes64: u64,
    /// The same for 32-ary nodes (`poptrie32`, `poptrie-flat`).
    pub nodes32: u64,
}

impl Shape {
    /// Measure `iv`: one pass over its boundaries per trie level.
    ///
    /// ```
    /// use ipfib::engine::auto::Shape;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
    /// // /18 to /24: one 6-bit level, or two 5-bit ones.
    /// let want = Shape { family: 4, intervals: 5, nodes64: 1, nodes32: 2 };
    /// assert_eq!(Shape::of(&iv), want);
    /// ```
    pub fn of<A: Family>(iv: &Intervals<A>) -> Shape {
        Shape {
            family: A::FAMILY,
            intervals: iv.len(),
            nodes64: trie_nodes(iv, DIRECT_BITS as u32, 6),
            nodes32: trie_nodes(iv, DIRECT_BITS as u32, 5),
        }
    }

    /// Estimated 32-ary trie nodes per interval.
    ///
    /// ```
    /// use ipfib::engine::auto::Shape;
    /// let empty = Shape { family: 6, intervals: 0, nodes64: 0, nodes32: 0 };
    /// assert_eq!(empty.nodes_per_interval(), 0.0); // no division by zero
    /// ```
    pub fn nodes_per_interval(&self) -> f64 {
        self.nodes32 as f64 / self.intervals.max(1) as f64
    }
}

/// Internal nodes of a multibit trie with an `s`-bit direct table and
/// `k`-bit levels below it: at each level boundary `L` (= `s`, `s + k`,
/// ...), one node per distinct `L`-bit prefix that holds a boundary not
/// aligned to `L` bits (a slot whose range is not one interval). Exact for
/// the unfocused Poptrie layouts; interval starts are sorted, so each
/// level is one pass counting changes of the prefix.
///
/// ```
/// use ipfib::engine::auto::trie_nodes;
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// let iv = ipfib::intervals::compile([(p("10.1.2.0/24"), 1), (p("10.1.3.128/25"), 2)]);
/// assert_eq!(trie_nodes(&iv, 24, 8), 1); // one /24 holds the /25's boundary
/// assert_eq!(trie_nodes(&iv, 16, 8), 2); // a node at /16, one below it at /24
/// assert_eq!(trie_nodes(&iv, 25, 7), 0); // everything aligned to 25 bits
/// ```
pub fn trie_nodes<A: Family>(iv: &Intervals<A>, s: u32, k: u32) -> u64 {
    let bits = A::BITS as u32;
    let mut nodes = 0u64;
    let mut level = s;
    while level < bits {
        let low = bits - level;
        let mut last: Option<u128> = None;
        for start in iv.starts.iter().skip(1) {
            let v = start.to_u128();
            if v & ((1u128 << low) - 1) != 0 {
                let prefix = v >> low;
                if last != Some(prefix) {
                    nodes += 1;
                    last = Some(prefix);
                }
            }
        }
        level += k;
    }
    nodes
}

/// What calibration tries when the shape admits a trie: PlanB, the 64-ary
/// Poptrie and the flat Poptrie at two sizes of direct table. `poptrie32`
/// is left out: on no real table measured was it the only engine within
/// 10% of the best (BENCHMARKS.md, "Standing").
///
/// ```
/// use ipfib::engine::auto::{AutoOptions, Built, CANDIDATES};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// let iv = ipfib::intervals::compile([(p("10.1.2.0/24"), 1)]);
/// for pick in CANDIDATES {
///     let e = Built::build(&iv, pick, &AutoOptions::default())?;
///     assert_eq!(e.kind(), pick.0);
/// }
/// # Ok::<(), ipfib::engine::auto::AutoError>(())
/// ```
pub const CANDIDATES: [Pick; 4] = [
    (Kind::PlanB, None),
    (Kind::Poptrie, Some(DIRECT_BITS)),
    (Kind::Flat, Some(16)),
    (Kind::Flat, Some(DIRECT_BITS)),
];

/// The shape's verdict before any timing: PlanB alone when a trie would
/// need more than [`MAX_NODES_PER_INTERVAL`] nodes per interval, every
/// candidate otherwise. With calibration off, the first trie candidate of
/// the family's default (64-ary for IPv4, flat:18 for IPv6) is taken.
///
/// ```
/// use ipfib::engine::auto::{decide, Kind, Shape, CANDIDATES};
/// let dense = Shape { family: 4, intervals: 1000, nodes64: 300, nodes32: 400 };
/// assert_eq!(decide(&dense).0, CANDIDATES);
/// let sparse = Shape { nodes32: 1740, ..dense };
/// let (picks, why) = decide(&sparse);
/// assert_eq!(picks, [(Kind::PlanB, None)]);
/// assert!(why.contains("1.74 trie nodes per interval"));
/// ```
pub fn decide(shape: &Shape) -> (Vec<Pick>, String) {
    let per = shape.nodes_per_interval();
    let figures = format!(
        "{} intervals, {:.2} trie nodes per interval",
        shape.intervals, per
    );
    if per > MAX_NODES_PER_INTERVAL {
        let why = format!(
            "{figures}: sparse long prefixes, where a trie holds and walks a \
             node chain per boundary"
        );
        (vec![(Kind::PlanB, None)], why)
    } else {
        (CANDIDATES.to_vec(), figures)
    }
}

/// The default pick without timing (calibration off): the 64-ary Poptrie
/// for IPv4, the flat Poptrie for IPv6, both at [`DIRECT_BITS`].
fn untimed(shape: &Shape) -> Pick {
    if shape.family == 4 {
        (Kind::Poptrie, Some(DIRECT_BITS))
    } else {
        (Kind::Flat, Some(DIRECT_BITS))
    }
}

/// Build options for [`AutoEngine`]: the kernel to use, whichever engine
/// is chosen, whether to time the candidates, and an optional engine that
/// overrides the choice.
///
/// ```
/// use ipfib::engine::auto::{AutoEngine, AutoOptions, Kind};
/// use ipfib::engine::Engine;
/// let iv = ipfib::intervals::compile::<u32>([]);
/// let opts = AutoOptions { force: Some((Kind::Flat, Some(16))), ..Default::default() };
/// let e = AutoEngine::build(&iv, &opts)?;
/// assert_eq!(e.choice().single, (Kind::Flat, Some(16)));
/// assert!(e.name().starts_with("poptrie-flat[s=16")); // named: no "auto:"
/// # Ok::<(), ipfib::engine::auto::AutoError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoOptions {
    /// The kernel for every engine this CPU supports it for (see
    /// [`super::kernel::KernelSet::prefer`]); every other engine, and all
    /// of them with `None`, runs its best.
    pub kernel: Option<super::kernel::Kernel>,
    /// Time the candidates on samples of the table (default); `false`
    /// chooses from the shape alone, the same engine on every machine.
    pub calibrate: bool,
    /// Build this engine instead of choosing.
    pub force: Option<Pick>,
    /// With `force`: a second engine for batches (an earlier
    /// [`Choice`] reused by [`AutoOptions::reuse`]).
    pub force_batch: Option<Pick>,
    /// Set by [`AutoOptions::reuse`]: the interval count of the table the
    /// reused choice was made for (kept as the reused build's
    /// [`Choice::intervals`], so "within a factor of two" is always
    /// measured from the table that was measured, not from the last
    /// change).
    pub reused_from: Option<usize>,
}

impl AutoOptions {
    /// Build what `choice` names again, without measuring: what a rebuild
    /// of a slightly changed table wants (the bindings rebuild a family
    /// per change), so a change costs one build, not a calibration. See
    /// [`Choice::still_fits`] for when that is right. The shape verdict
    /// still applies: a table that has become one a trie handles badly
    /// is chosen for afresh.
    ///
    /// ```
    /// use ipfib::engine::auto::{AutoEngine, AutoOptions};
    /// use ipfib::engine::Engine;
    /// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
    /// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1), (p("10.1.2.0/24"), 2)]);
    /// let first = AutoEngine::build(&iv, &AutoOptions::default())?;
    /// let opts = AutoOptions::default().reuse(first.choice());
    /// assert_eq!(opts.force, Some(first.choice().single));
    /// let again = AutoEngine::build(&iv, &opts)?;
    /// assert_eq!(again.choice().single, first.choice().single);
    /// assert!(again.choice().reason.starts_with("reused"));
    /// # Ok::<(), ipfib::engine::auto::AutoError>(())
    /// ```
    pub fn reuse(self, choice: &Choice) -> AutoOptions {
        AutoOptions {
            force: Some(choice.single),
            force_batch: (choice.batch != choice.single).then_some(choice.batch),
            reused_from: Some(choice.intervals),
            ..self
        }
    }
}

impl Default for AutoOptions {
    fn default() -> Self {
        AutoOptions {
            kernel: None,
            calibrate: true,
            force: None,
            force_batch: None,
            reused_from: None,
        }
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

/// What [`AutoEngine`] built for one family, and why.
///
/// ```
/// use ipfib::engine::auto::{AutoEngine, AutoOptions, Kind};
/// use ipfib::engine::Engine;
/// let e = AutoEngine::<u128>::build(&ipfib::intervals::compile([]), &AutoOptions::default())?;
/// let c = e.choice();
/// assert_eq!((c.single, c.batch), ((Kind::Flat, Some(18)), (Kind::Flat, Some(18))));
/// assert_eq!((c.intervals, c.label()), (1, "poptrie-flat:18".to_string()));
/// assert!(c.reason.contains("too small to be worth timing"));
/// # Ok::<(), ipfib::engine::auto::AutoError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The engine single lookups use.
    pub single: Pick,
    /// The engine batches use (often the same).
    pub batch: Pick,
    /// The shape figures and, when calibrated, the measured rates.
    pub reason: String,
    /// Intervals of the table it was made for.
    pub intervals: usize,
}

impl Choice {
    /// Whether this choice may be reused for a table of `intervals`
    /// intervals without choosing again: within a factor of two of the
    /// table it was made for (a table grown from empty by single inserts
    /// is chosen for again at every doubling, so it never keeps a tiny
    /// table's default).
    ///
    /// ```
    /// use ipfib::engine::auto::{Choice, Kind};
    /// let pick = (Kind::PlanB, None);
    /// let c = Choice { single: pick, batch: pick, reason: String::new(), intervals: 1000 };
    /// assert!(c.still_fits(500) && c.still_fits(2000));
    /// assert!(!c.still_fits(499) && !c.still_fits(2001));
    /// ```
    pub fn still_fits(&self, intervals: usize) -> bool {
        intervals <= self.intervals.saturating_mul(2)
            && self.intervals <= intervals.saturating_mul(2)
    }

    /// `poptrie-flat:18`, or `planb/poptrie-flat:18` (single/batch) when
    /// the two differ.
    ///
    /// ```
    /// use ipfib::engine::auto::{Choice, Kind};
    /// let (single, batch) = ((Kind::PlanB, None), (Kind::Flat, Some(18)));
    /// let c = Choice { single, batch, reason: String::new(), intervals: 1 };
    /// assert_eq!(c.label(), "planb/poptrie-flat:18");
    /// ```
    pub fn label(&self) -> String {
        if self.single == self.batch {
            label(self.batch)
        } else {
            format!("{}/{}", label(self.single), label(self.batch))
        }
    }
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.label(), self.reason)
    }
}

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

/// Tables with fewer intervals take the family default without timing:
/// every candidate then fits in L2 and answers within a few nanoseconds,
/// while a calibration costs about 10 ms, more than the build itself
/// (and the bindings rebuild small tables often).
///
/// ```
/// use ipfib::engine::auto::{AutoEngine, AutoOptions, MIN_CALIBRATED_INTERVALS};
/// use ipfib::engine::Engine;
/// let iv = ipfib::intervals::compile::<u32>([]);
/// assert!(iv.len() < MIN_CALIBRATED_INTERVALS);
/// let e = AutoEngine::build(&iv, &AutoOptions::default())?; // calibrate: true, but
/// assert!(e.choice().reason.contains("too small to be worth timing"));
/// # Ok::<(), ipfib::engine::auto::AutoError>(())
/// ```
pub const MIN_CALIBRATED_INTERVALS: usize = 8192;

/// Addresses per calibration sample (each of the two traces).
const SAMPLE: usize = 1 << 15;
/// Passes per (engine, mode, trace) after one that warms the caches; the
/// fastest of all four counts.
const PASSES: usize = 3;

/// Seeded samples of `iv`: addresses inside intervals drawn uniformly (the
/// "matched" shape of traffic that hits routes) and uniformly random ones.
fn samples<A: Family>(iv: &Intervals<A>) -> [Vec<A>; 2] {
    let mut rng = crate::rng::Rng::new(0x6175_746f);
    let n = iv.len() as u64;
    let matched = (0..SAMPLE)
        .map(|_| {
            let i = rng.below(n) as usize;
            let lo = iv.starts[i].to_u128();
            let hi = iv
                .starts
                .get(i + 1)
                .map_or(A::MAX.to_u128(), |s| s.to_u128() - 1);
            let span = hi - lo;
            let off = if span == u128::MAX {
                rng.next_u128()
            } else {
                rng.next_u128() % (span + 1)
            };
            A::from_u128_truncate(lo + off)
        })
        .collect();
    let uniform = (0..SAMPLE).map(|_| rng.addr()).collect();
    [matched, uniform]
}

/// Lookups per second of `e` on `addrs`: single lookups or batches of 32.
fn rate<A: Family>(e: &Built<A>, addrs: &[A], batch: bool) -> f64 {
    let mut out = vec![0u32; addrs.len()];
    let mut best = f64::INFINITY;
    for _ in 0..=PASSES {
        let t = std::time::Instant::now();
        if batch {
            e.lookup_batch::<32>(addrs, &mut out);
            std::hint::black_box(&out);
        } else {
            let mut acc = 0u32;
            for &a in addrs {
                acc = acc.wrapping_add(e.lookup(std::hint::black_box(a)));
            }
            std::hint::black_box(acc);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    addrs.len() as f64 / best.max(1e-9)
}

/// Per mode, the candidate whose worst ratio to the best rate over the two
/// samples is highest (the one furthest from being a bad choice on either
/// kind of traffic); ties go to the earlier candidate.
fn pick_best(rates: &[[f64; 2]]) -> usize {
    let best = [0, 1].map(|t| rates.iter().map(|r| r[t]).fold(0.0, f64::max));
    let score = |r: &[f64; 2]| (r[0] / best[0]).min(r[1] / best[1]);
    let mut winner = 0;
    for (i, r) in rates.iter().enumerate() {
        if score(r) > score(&rates[winner]) {
            winner = i;
        }
    }
    winner
}

/// Build every candidate, time each on the samples, keep the winners.
fn calibrate<A: Family>(
    iv: &Intervals<A>,
    picks: &[Pick],
    opts: &AutoOptions,
    figures: String,
) -> Result<AutoEngine<A>, AutoError> {
    let [matched, uniform] = samples(iv);
    let mut built = Vec::new();
    let mut single = Vec::new();
    let mut batch = Vec::new();
    let mut skipped = Vec::new();
    for &pick in picks {
        match Built::build(iv, pick, opts) {
            Ok(e) => {
                single.push([rate(&e, &matched, false), rate(&e, &uniform, false)]);
                batch.push([rate(&e, &matched, true), rate(&e, &uniform, true)]);
                built.push((pick, e));
            }
            // A trie outgrowing its index space is a shape verdict, not
            // a failure: the other candidates remain.
            Err(AutoError::Poptrie(
                e @ (PoptrieError::TooManyNodes(_)
                | PoptrieError::TooManyEntries(_)
                | PoptrieError::TooManyLeaves(_)),
            )) => skipped.push(format!("{} not built: {e}", label(pick))),
            Err(e) => return Err(e),
        }
    }
    if built.is_empty() {
        // Only tries were tried and none fit: PlanB never outgrows them.
        let e = Built::build(iv, (Kind::PlanB, None), opts)?;
        return Ok(AutoEngine {
            single: e,
            batch: None,
            forced: false,
            choice: Choice {
                single: (Kind::PlanB, None),
                batch: (Kind::PlanB, None),
                reason: format!("{figures}; {}", skipped.join("; ")),
                intervals: iv.len(),
            },
        });
    }
    let (s, b) = (pick_best(&single), pick_best(&batch));
    let mlps = |r: [f64; 2]| format!("{:.0}/{:.0}", r[0] / 1e6, r[1] / 1e6);
    let mut measured: Vec<String> = built
        .iter()
        .enumerate()
        .map(|(i, (p, _))| {
            format!(
                "{} {} single, {} batch",
                label(*p),
                mlps(single[i]),
                mlps(batch[i])
            )
        })
        .collect();
    measured.extend(skipped);
    let choice = Choice {
        single: built[s].0,
        batch: built[b].0,
        reason: format!(
            "{figures}; calibrated, MLPS matched/uniform on {SAMPLE}-address samples: {}",
            measured.join(", ")
        ),
        intervals: iv.len(),
    };
    // Take the winners out without cloning: remove the higher index first
    // so the lower one stays where it is.
    let (single, batch) = match s.cmp(&b) {
        std::cmp::Ordering::Equal => (built.swap_remove(s).1, None),
        std::cmp::Ordering::Greater => {
            let single = built.swap_remove(s).1;
            (single, Some(built.swap_remove(b).1))
        }
        std::cmp::Ordering::Less => {
            let batch = built.swap_remove(b).1;
            (built.swap_remove(s).1, Some(batch))
        }
    };
    Ok(AutoEngine {
        single,
        batch,
        choice,
        forced: false,
    })
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
        calibrate(iv, &picks, opts, figures)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::poptrie::{Node32, Poptrie};
    use crate::intervals::compile;
    use crate::prefix::Prefix;

    fn iv4(routes: &[&str]) -> Intervals<u32> {
        crate::intervals::of_routes(routes)
    }

    /// Intervals of `routes` (any order), payload = rank in prefix order.
    fn iv<A: Family>(routes: impl IntoIterator<Item = Prefix<A>>) -> Intervals<A> {
        let mut ps: Vec<Prefix<A>> = routes.into_iter().collect();
        ps.sort();
        ps.dedup();
        compile(ps.into_iter().enumerate().map(|(i, p)| (p, i as u32)))
    }

    #[test]
    fn trie_nodes_counts_unaligned_prefixes_per_level() {
        // 10.0.0.0/8: aligned at /18, so no node. 10.0.0.0/20 needs one
        // node below the /18 slot 10.0.0.0/18 (level 18); with k = 6 the
        // next level is 24, where /20's boundaries (10.0.0.0 and
        // 10.0.16.0) are aligned: one node in all.
        assert_eq!(trie_nodes(&iv4(&["10.0.0.0/8"]), 18, 6), 0);
        assert_eq!(trie_nodes(&iv4(&["10.0.0.0/20"]), 18, 6), 1);
        // A /32 at 10.0.0.1 needs a node at /18, /24 and /30.
        assert_eq!(trie_nodes(&iv4(&["10.0.0.1/32"]), 18, 6), 3);
        // Two /32s in one /30 share every node.
        assert_eq!(trie_nodes(&iv4(&["10.0.0.1/32", "10.0.0.2/32"]), 18, 6), 3);
    }

    #[test]
    fn trie_nodes_matches_the_unfocused_poptrie() {
        // The estimate is exact for the unfocused 64-ary and 32-ary builds.
        let table = crate::gen::synthetic_v4(5000, 7);
        let iv = iv(table.iter().map(|r| r.0));
        for s in [0u8, 8, 16, 18] {
            let o = PoptrieOptions {
                direct_bits: Some(s),
                ..PoptrieOptions::default()
            };
            let p64 = Poptrie::<u32>::build_focused(&iv, &o, false).unwrap();
            assert_eq!(
                trie_nodes(&iv, s as u32, 6),
                p64.internal_nodes() as u64,
                "s={s}"
            );
            let p32 = Poptrie::<u32, Node32>::build_focused(&iv, &o, false).unwrap();
            assert_eq!(
                trie_nodes(&iv, s as u32, 5),
                p32.internal_nodes() as u64,
                "s={s}"
            );
        }
    }

    #[test]
    fn pick_best_takes_the_best_worst_case() {
        // 0 is fastest on matched but poor on uniform; 1 is within 10% on
        // both; 2 is fastest on uniform but poor on matched.
        let rates = [[100.0, 50.0], [92.0, 95.0], [60.0, 100.0]];
        assert_eq!(pick_best(&rates), 1);
        // Ties go to the earlier candidate.
        assert_eq!(pick_best(&[[1.0, 1.0], [1.0, 1.0]]), 0);
        assert_eq!(pick_best(&[[1.0, 2.0]]), 0);
    }

    #[test]
    fn two_engines_answer_alike_single_and_batch() {
        let table = crate::gen::synthetic_v6(3000, 11);
        let iv = iv(table.iter().map(|r| r.0));
        let opts = AutoOptions::default();
        let e = AutoEngine {
            single: Built::build(&iv, (Kind::PlanB, None), &opts).unwrap(),
            batch: Some(Built::build(&iv, (Kind::Flat, Some(DIRECT_BITS)), &opts).unwrap()),
            forced: false,
            choice: Choice {
                single: (Kind::PlanB, None),
                batch: (Kind::Flat, Some(DIRECT_BITS)),
                reason: String::new(),
                intervals: iv.len(),
            },
        };
        e.validate().unwrap();
        assert_eq!(e.choice().label(), "planb/poptrie-flat:18");
        assert!(e.name().starts_with("auto:planb["), "{}", e.name());
        let [matched, uniform] = samples(&iv);
        for addrs in [matched, uniform] {
            let mut out = vec![0; addrs.len()];
            e.lookup_batch::<32>(&addrs, &mut out);
            for (&a, &o) in addrs.iter().zip(&out) {
                assert_eq!(e.lookup(a), iv.resolve(a));
                assert_eq!(o, iv.resolve(a));
            }
        }
    }

    #[test]
    fn sparse_long_prefixes_get_planb_without_building_a_trie() {
        // One /64 per random /32 inside 2000::/3: every boundary needs its
        // own chain of 32-ary nodes below /18.
        let mut rng = crate::rng::Rng::new(3);
        let routes: Vec<(Prefix<u128>, u32)> = (0..2000)
            .map(|i| {
                let a = (0x2000u128 << 112) | (rng.next_u128() >> 3);
                (Prefix::new(a & !((1u128 << 64) - 1), 64).unwrap(), i)
            })
            .collect();
        let iv = iv(routes.iter().map(|r| r.0));
        let shape = Shape::of(&iv);
        assert!(
            shape.nodes_per_interval() > MAX_NODES_PER_INTERVAL,
            "{shape:?}"
        );
        let e = AutoEngine::build(&iv, &AutoOptions::default()).unwrap();
        assert_eq!(e.choice().single, (Kind::PlanB, None));
        assert_eq!(e.choice().batch, (Kind::PlanB, None));
        assert!(e.choice().reason.contains("sparse long prefixes"));
    }

    #[test]
    fn real_shaped_tables_admit_every_candidate() {
        let v4 = iv(crate::gen::synthetic_v4(20_000, 5).iter().map(|r| r.0));
        let shape = Shape::of(&v4);
        assert_eq!(decide(&shape).0, CANDIDATES.to_vec(), "{shape:?}");
    }

    #[test]
    fn untimed_choice_is_the_family_default() {
        let t = crate::gen::synthetic_v4(2000, 5);
        let iv = iv(t.iter().map(|r| r.0));
        let o = AutoOptions {
            calibrate: false,
            ..AutoOptions::default()
        };
        let e = AutoEngine::build(&iv, &o).unwrap();
        assert_eq!(e.choice().label(), "poptrie:18");
        // Malformed intervals are refused, calibrated or not.
        let bad = Intervals {
            starts: vec![0u32, 5, 5],
            payloads: vec![0, 1, 2],
        };
        assert!(AutoEngine::build(&bad, &o).is_err());
        assert!(AutoEngine::build(&bad, &AutoOptions::default()).is_err());
    }

    #[test]
    fn calibrated_builds_answer_right_and_reuse_repeats_the_choice() {
        let t = crate::gen::synthetic_v4(20_000, 9);
        let iv = iv(t.iter().map(|r| r.0));
        assert!(iv.len() >= MIN_CALIBRATED_INTERVALS);
        let e = AutoEngine::build(&iv, &AutoOptions::default()).unwrap();
        assert!(e.choice().reason.contains("calibrated"), "{}", e.choice());
        assert_eq!(e.choice().intervals, iv.len());
        e.validate().unwrap();
        let [matched, uniform] = samples(&iv);
        let again = AutoEngine::build(&iv, &AutoOptions::default().reuse(e.choice())).unwrap();
        assert_eq!(again.choice().label(), e.choice().label());
        assert!(again.choice().reason.contains("reused"));
        for addrs in [matched, uniform] {
            let mut out = vec![0; addrs.len()];
            for engine in [&e, &again] {
                engine.lookup_batch::<16>(&addrs, &mut out);
                for (&a, &o) in addrs.iter().zip(&out) {
                    assert_eq!(engine.lookup(a), iv.resolve(a));
                    assert_eq!(o, iv.resolve(a));
                }
            }
        }
        assert!(e.choice().still_fits(iv.len() * 2));
        assert!(!e.choice().still_fits(iv.len() * 2 + 1));
        assert!(!e.choice().still_fits(iv.len() / 2 - 1));
    }

    /// What the bindings do per change: reuse the previous choice while
    /// the table is within a factor of two of the one that was measured.
    fn grow(routes: &[Prefix<u32>], steps: &[usize]) -> Vec<Choice> {
        let mut prev: Option<Choice> = None;
        let mut seen = Vec::new();
        for &n in steps {
            let iv = iv(routes[..n].iter().copied());
            let mut o = AutoOptions::default();
            if let Some(c) = prev.as_ref().filter(|c| c.still_fits(iv.len())) {
                o = o.reuse(c);
            }
            let e = AutoEngine::build(&iv, &o).unwrap();
            for a in samples(&iv).concat() {
                assert_eq!(e.lookup(a), iv.resolve(a));
            }
            seen.push(e.choice().clone());
            prev = Some(e.choice().clone());
        }
        seen
    }

    #[test]
    fn a_growing_table_is_chosen_for_again_once_it_has_doubled() {
        let routes: Vec<Prefix<u32>> = crate::gen::synthetic_v4(60_000, 2)
            .into_iter()
            .map(|r| r.0)
            .collect();
        // 10% steps from 12K routes to 60K.
        let mut steps = vec![12_000usize];
        while *steps.last().unwrap() < 60_000 {
            steps.push((steps.last().unwrap() * 11 / 10).min(60_000));
        }
        let seen = grow(&routes, &steps);
        assert!(seen[0].reason.contains("calibrated"), "{}", seen[0]);
        assert!(seen[1].reason.starts_with("reused"), "{}", seen[1]);
        // Reuse keeps the measured table's count, so somewhere before the
        // table has grown 2x past it, it is measured again.
        let mut measured = seen[0].intervals;
        for c in &seen[1..] {
            if c.reason.starts_with("reused") {
                assert_eq!(c.intervals, measured, "{c}");
            } else {
                assert!(c.reason.contains("calibrated"), "{c}");
                measured = c.intervals;
            }
        }
        let recalibrated = seen[1..]
            .iter()
            .filter(|c| !c.reason.starts_with("reused"))
            .count();
        assert!(recalibrated >= 1, "{seen:?}");
    }

    #[test]
    fn a_reused_trie_gives_way_when_the_shape_turns_sparse() {
        // Start dense (real-shaped), then add sparse IPv6 /64s until a
        // trie would need more than MAX_NODES_PER_INTERVAL per interval.
        let dense: Vec<Prefix<u128>> = crate::gen::synthetic_v6(3000, 4)
            .into_iter()
            .map(|r| r.0)
            .collect();
        let mut rng = crate::rng::Rng::new(8);
        let sparse: Vec<Prefix<u128>> = (0..20_000)
            .map(|_| {
                let a = (0x2000u128 << 112) | (rng.next_u128() >> 3);
                Prefix::new(a & !((1u128 << 64) - 1), 64).unwrap()
            })
            .collect();
        let first = AutoEngine::build(&iv(dense.iter().copied()), &AutoOptions::default()).unwrap();
        assert_ne!(first.choice().single.0, Kind::PlanB);
        // Reused within a factor of two would keep the trie; the shape
        // verdict overrides it.
        let mixed: Vec<Prefix<u128>> = dense.iter().chain(&sparse[..3000]).copied().collect();
        let mixed_iv = iv(mixed);
        assert!(Shape::of(&mixed_iv).nodes_per_interval() > MAX_NODES_PER_INTERVAL);
        let o = AutoOptions::default().reuse(first.choice());
        let e = AutoEngine::build(&mixed_iv, &o).unwrap();
        assert_eq!(e.choice().single, (Kind::PlanB, None), "{}", e.choice());
        assert!(e.choice().reason.contains("sparse long prefixes"));
    }

    #[test]
    fn named_engines_keep_their_own_name() {
        let iv = iv(crate::gen::synthetic_v4(100, 1).iter().map(|r| r.0));
        let named = AutoOptions {
            force: Some((Kind::PlanB, None)),
            ..AutoOptions::default()
        };
        let e = AutoEngine::build(&iv, &named).unwrap();
        assert!(e.name().starts_with("planb["), "{}", e.name());
        let chosen = AutoEngine::build(&iv, &AutoOptions::default()).unwrap();
        assert!(
            chosen.name().starts_with("auto:poptrie["),
            "{}",
            chosen.name()
        );
    }
}
