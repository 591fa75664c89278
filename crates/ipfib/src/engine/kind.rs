//! An engine's kind ([`Kind`]: its name, tag in compiled files and
//! kernels) and a pick of one with its direct-pointing bits ([`Pick`]).
//! What the registry, `auto`'s options and its choices all name; public
//! as `engine::registry::{Kind, Pick, label}`.

use super::kernel::KernelSet;
use super::planb;
#[cfg(doc)]
use super::planb::PlanB;
use super::poptrie;
#[cfg(doc)]
use super::poptrie::{FlatPoptrie, Node32, Poptrie};

/// An engine compiled from intervals: what `auto` chooses among and what
/// a named engine builds. The discriminant is the engine's tag in
/// compiled table files: never reuse or renumber one. Non-exhaustive: a
/// new engine is a new kind, and code outside this crate keeps a default
/// arm for it.
///
/// ```
/// use ipfib::engine::registry::{EngineSpec, Kind};
/// assert_eq!(Kind::Poptrie32 as u8, 2); // its tag in compiled files
/// let spec: EngineSpec = "poptrie32:16".parse()?;
/// assert_eq!(spec.force(), Some((Kind::Poptrie32, Some(16))));
/// # Ok::<(), ipfib::engine::registry::SpecError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// [`PlanB`]: linearized B+-tree over the intervals.
    PlanB = 0,
    /// [`Poptrie`] with the paper's 64-ary nodes.
    Poptrie = 1,
    /// [`Poptrie`] with 32-ary nodes ([`Node32`]): one gather per level in
    /// batches. `poptrie5` (5 bits per level) is accepted as an alias.
    Poptrie32 = 2,
    /// [`FlatPoptrie`]: 32-ary nodes inline with the leaves, one 64-bit
    /// read per level.
    Flat = 3,
}

impl Kind {
    /// Every kind, in tag order.
    ///
    /// ```
    /// use ipfib::engine::registry::Kind;
    /// assert!(Kind::ALL.iter().enumerate().all(|(i, k)| *k as usize == i));
    /// ```
    pub const ALL: [Kind; 4] = [Kind::PlanB, Kind::Poptrie, Kind::Poptrie32, Kind::Flat];

    /// The engine's name (as `--engine` takes it).
    ///
    /// ```
    /// assert_eq!(ipfib::engine::registry::Kind::Flat.name(), "poptrie-flat");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Kind::PlanB => "planb",
            Kind::Poptrie => "poptrie",
            Kind::Poptrie32 => "poptrie32",
            Kind::Flat => "poptrie-flat",
        }
    }

    /// The engine's kernels (its [`KernelSet`]).
    ///
    /// ```
    /// use ipfib::engine::registry::Kind;
    /// assert_eq!(Kind::Flat.kernels().engine(), "poptrie");
    /// assert!(Kind::PlanB.kernels().target_features(ipfib::engine::kernel::Kernel::Avx2).is_some());
    /// ```
    pub fn kernels(self) -> &'static KernelSet {
        match self {
            Kind::PlanB => &planb::KERNELS,
            Kind::Poptrie | Kind::Poptrie32 | Kind::Flat => &poptrie::KERNELS,
        }
    }

    /// Whether the engine takes direct-pointing bits (`name:S`).
    ///
    /// ```
    /// use ipfib::engine::registry::Kind;
    /// assert!(Kind::Poptrie.takes_bits() && !Kind::PlanB.takes_bits());
    /// ```
    pub fn takes_bits(self) -> bool {
        self != Kind::PlanB
    }
}

/// A built engine's kind and direct-pointing bits (`None`: the engine's
/// default).
///
/// ```
/// use ipfib::engine::registry::{Built, Kind, Pick};
/// let pick: Pick = (Kind::Flat, None); // the engine's default bits
/// let e = Built::<u32>::build(&ipfib::intervals::compile([]), pick, &Default::default())?;
/// assert!(matches!(e, Built::Flat(f) if f.direct_bits() == 18));
/// # Ok::<(), ipfib::engine::registry::AutoError>(())
/// ```
pub type Pick = (Kind, Option<u8>);

/// `poptrie-flat:18`, `planb`.
///
/// ```
/// use ipfib::engine::registry::{label, Kind};
/// assert_eq!(label((Kind::Flat, Some(18))), "poptrie-flat:18");
/// assert_eq!(label((Kind::PlanB, None)), "planb");
/// ```
pub fn label(pick: Pick) -> String {
    match pick.1 {
        Some(s) => format!("{}:{s}", pick.0.name()),
        None => pick.0.name().to_string(),
    }
}
