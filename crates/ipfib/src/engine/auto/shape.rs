//! `auto`'s first step: the table's shape ([`Shape`]: trie nodes per
//! interval a Poptrie would need) and the candidates it leaves
//! ([`decide`]), or the family default when nothing is timed.

use crate::engine::kind::{Kind, Pick};
use crate::engine::poptrie::PoptrieOptions;
use crate::engine::Family;
use crate::intervals::Intervals;

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
pub(super) fn untimed(shape: &Shape) -> Pick {
    if shape.family == 4 {
        (Kind::Poptrie, Some(DIRECT_BITS))
    } else {
        (Kind::Flat, Some(DIRECT_BITS))
    }
}
