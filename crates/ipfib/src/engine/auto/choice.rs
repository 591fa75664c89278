//! [`Choice`]: what `auto` built for one family (the picks for single
//! lookups and batches), and the figures that decided.

use crate::engine::kind::{label, Pick};
use std::fmt;

/// What [`AutoEngine`](crate::engine::auto::AutoEngine) built for one family, and why.
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
