//! [`AutoOptions`]: what a caller may ask of `auto` (a kernel, timing
//! on or off, an engine forced or a choice reused).

use super::choice::Choice;
use crate::engine::kernel::Kernel;
use crate::engine::kind::Pick;

/// Build options for [`AutoEngine`](crate::engine::auto::AutoEngine): the kernel to use, whichever engine
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
    /// [`crate::engine::kernel::KernelSet::prefer`]); every other engine, and all
    /// of them with `None`, runs its best.
    pub kernel: Option<Kernel>,
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
