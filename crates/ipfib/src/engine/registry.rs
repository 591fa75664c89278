//! The engine registry: the one place that names every engine, its
//! parameter and its variants, parses an engine spec (`poptrie-flat:16`,
//! `auto`), lists what exists with a line each, and builds it.
//!
//! The CLI (`--engine`, `--engines`), the Python bindings
//! (`Table(engine=...)`), `ipfib compile` and the benchmarks all parse
//! names here ([`EngineSpec`]'s `FromStr`), so an unknown name gets one
//! error listing the valid ones wherever it is typed, and a new engine is
//! one module plus one entry here (docs/architecture.md, "Adding an
//! engine").
//!
//! ```
//! use ipfib::engine::registry::{EngineSpec, Kind, ENGINES};
//!
//! let spec: EngineSpec = "poptrie-flat:16".parse()?;
//! assert_eq!(spec.force(), Some((Kind::Flat, Some(16))));
//! assert_eq!(spec.to_string(), "poptrie-flat:16");
//! // An alias parses to its engine and prints as the engine's name.
//! assert_eq!("poptrie5".parse::<EngineSpec>()?.to_string(), "poptrie32");
//! // Every engine has a line of description.
//! assert!(ENGINES.iter().all(|e| !e.summary.is_empty()));
//! let err = "poptree".parse::<EngineSpec>().unwrap_err();
//! assert!(err.to_string().contains("auto, planb, poptrie[:S]"));
//! # Ok::<(), ipfib::engine::registry::SpecError>(())
//! ```

use super::auto::options::AutoOptions;
use super::kernel::KernelSet;
pub use super::kind::{label, Kind, Pick};
use super::planb::{BuildError, PlanB, PlanBOptions};
use super::poptrie::{self, FlatPoptrie, Node32, Poptrie, PoptrieError, PoptrieOptions};
use super::{Engine, Family};
use crate::intervals::Intervals;
use std::fmt;
use std::str::FromStr;

/// Every distinct kernel set, with the kinds that use it (in
/// [`Kind::ALL`] order): what `--kernel` may name and `ipfib engines`
/// lists.
///
/// ```
/// let sets = ipfib::engine::registry::kernel_sets();
/// assert_eq!(sets.len(), 2);
/// assert_eq!(sets[1].1.len(), 3); // poptrie, poptrie32, poptrie-flat
/// ```
pub fn kernel_sets() -> Vec<(&'static KernelSet, Vec<Kind>)> {
    let mut out: Vec<(&'static KernelSet, Vec<Kind>)> = Vec::new();
    for k in Kind::ALL {
        match out.iter_mut().find(|(s, _)| std::ptr::eq(*s, k.kernels())) {
            Some((_, kinds)) => kinds.push(k),
            None => out.push((k.kernels(), vec![k])),
        }
    }
    out
}

/// Whether some engine runs `kernel` on this CPU.
///
/// ```
/// use ipfib::engine::kernel::Kernel;
/// assert!(ipfib::engine::registry::kernel_runs_here(Kernel::Scalar));
/// ```
pub fn kernel_runs_here(kernel: super::kernel::Kernel) -> bool {
    kernel_sets().iter().any(|(s, _)| s.is_supported(kernel))
}

/// Why an engine could not be built.
///
/// ```
/// use ipfib::engine::registry::{AutoError, Built, Kind};
/// let iv = ipfib::intervals::compile::<u32>([]);
/// let too_many_bits = Built::build(&iv, (Kind::Poptrie, Some(30)), &Default::default());
/// assert!(matches!(too_many_bits, Err(AutoError::Poptrie(_))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AutoError {
    #[error(transparent)]
    PlanB(#[from] BuildError),
    #[error(transparent)]
    Poptrie(#[from] PoptrieError),
}

/// One built engine of any kind.
///
/// ```
/// use ipfib::engine::registry::{Built, Kind};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u32>>().unwrap();
/// let iv = ipfib::intervals::compile([(p("10.0.0.0/8"), 1)]);
/// match Built::<u32>::build(&iv, (Kind::Poptrie32, Some(16)), &Default::default())? {
///     Built::Poptrie32(e) => assert_eq!((e.direct_bits(), e.lookup(0x0a00_0001)), (16, 1)),
///     _ => unreachable!("poptrie32 builds a Poptrie<_, Node32>"),
/// }
/// # Ok::<(), ipfib::engine::registry::AutoError>(())
/// ```
pub enum Built<A: Family> {
    PlanB(PlanB<A>),
    Poptrie(Poptrie<A>),
    Poptrie32(Poptrie<A, Node32>),
    Flat(FlatPoptrie<A>),
}

/// One arm per engine: `$e` bound to the built engine.
macro_rules! each {
    ($built:expr, $e:ident => $body:expr) => {
        match $built {
            Built::PlanB($e) => $body,
            Built::Poptrie($e) => $body,
            Built::Poptrie32($e) => $body,
            Built::Flat($e) => $body,
        }
    };
}

impl<A: Family> Built<A> {
    /// Build `pick` over `iv`.
    ///
    /// ```
    /// use ipfib::engine::{auto::AutoOptions, kernel::Kernel, registry::{Built, Kind}};
    /// let iv = ipfib::intervals::compile::<u32>([]);
    /// // The kernel reaches every engine that has it.
    /// let opts = AutoOptions { kernel: Some(Kernel::Scalar), ..Default::default() };
    /// let Built::PlanB(e) = Built::build(&iv, (Kind::PlanB, Some(14)), &opts)? else { panic!() };
    /// assert_eq!((e.kernel(), e.direct_bits()), (Kernel::Scalar, 14));
    /// # Ok::<(), ipfib::engine::registry::AutoError>(())
    /// ```
    pub fn build(iv: &Intervals<A>, pick: Pick, opts: &AutoOptions) -> Result<Self, AutoError> {
        let popts = PoptrieOptions {
            direct_bits: pick.1,
            kernel: poptrie::KERNELS.prefer(opts.kernel),
            ..PoptrieOptions::default()
        };
        Ok(match pick.0 {
            Kind::PlanB => {
                let o = PlanBOptions {
                    kernel: super::planb::KERNELS.prefer(opts.kernel),
                    direct_bits: pick.1,
                    ..PlanBOptions::default()
                };
                Built::PlanB(PlanB::build(iv, &o)?)
            }
            Kind::Poptrie => Built::Poptrie(Poptrie::build(iv, &popts)?),
            Kind::Poptrie32 => Built::Poptrie32(Poptrie::build(iv, &popts)?),
            Kind::Flat => Built::Flat(FlatPoptrie::build(iv, &popts)?),
        })
    }

    // `inline(always)` here and in `AutoEngine::lookup`: a caller's loop of
    // single lookups then sees the match and hoists it, so going through
    // `Built` costs almost nothing over the engine itself
    // (docs/benchmark-history.md, "Engine dispatch").
    #[inline(always)]
    pub(crate) fn lookup(&self, addr: A) -> u32 {
        each!(self, e => e.lookup(addr))
    }

    #[inline]
    pub(crate) fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        each!(self, e => e.lookup_batch::<M>(addrs, out))
    }

    pub(crate) fn footprint_bytes(&self) -> usize {
        each!(self, e => e.footprint_bytes())
    }

    pub(crate) fn name(&self) -> String {
        each!(self, e => <_ as Engine<A>>::name(e))
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        each!(self, e => <_ as Engine<A>>::validate(e))
    }

    pub(crate) fn validate_below(&self, bound: u32) -> Result<(), String> {
        each!(self, e => <_ as Engine<A>>::validate_below(e, bound))
    }

    /// Which engine this is.
    ///
    /// ```
    /// use ipfib::engine::registry::{Built, Kind};
    /// let iv = ipfib::intervals::compile::<u128>([]);
    /// for kind in Kind::ALL {
    ///     assert_eq!(Built::build(&iv, (kind, None), &Default::default())?.kind(), kind);
    /// }
    /// # Ok::<(), ipfib::engine::registry::AutoError>(())
    /// ```
    pub fn kind(&self) -> Kind {
        match self {
            Built::PlanB(_) => Kind::PlanB,
            Built::Poptrie(_) => Kind::Poptrie,
            Built::Poptrie32(_) => Kind::Poptrie32,
            Built::Flat(_) => Kind::Flat,
        }
    }
}

/// What an engine's payloads are, for the engines that have variants
/// (`ipfib bench` measures them side by side).
///
/// ```
/// use ipfib::engine::registry::{EngineSpec, Kind, Variant};
/// let basic: EngineSpec = "poptrie-basic".parse()?;
/// assert_eq!(basic, EngineSpec::Engine { kind: Kind::Poptrie, bits: None, variant: Variant::Basic });
/// assert!(!basic.info().unwrap().lookup); // bench only
/// # Ok::<(), ipfib::engine::registry::SpecError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Value payloads, equal neighbours merged, Poptrie leaves compressed
    /// (`leafvec`): what lookups use.
    Values,
    /// Route payloads (the matching prefix is known; no two prefixes
    /// merge): `planb-routes`, `poptrie-routes`.
    Routes,
    /// Route payloads and no leaf compression: `poptrie-basic`, the
    /// paper's basic Poptrie.
    Basic,
}

/// One engine as named by a user: `auto`, the route table (`radix`), or
/// an engine of [`Kind`] with its parameter and variant.
///
/// ```
/// use ipfib::engine::registry::{EngineSpec, Kind, Variant};
/// assert_eq!("auto".parse(), Ok(EngineSpec::Auto));
/// assert_eq!(
///     "poptrie-routes:16".parse(),
///     Ok(EngineSpec::Engine { kind: Kind::Poptrie, bits: Some(16), variant: Variant::Routes })
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineSpec {
    /// Chosen per family from the table's shape and a calibration
    /// ([`crate::engine::auto`]).
    Auto,
    /// The route table itself (radix trie): the baseline.
    Radix,
    /// One engine compiled from intervals.
    Engine {
        /// Which engine.
        kind: Kind,
        /// Direct-pointing bits (`None`: the engine's default).
        bits: Option<u8>,
        /// Payload variant.
        variant: Variant,
    },
}

/// One name the registry knows, with what it builds and a line saying
/// what it is.
///
/// ```
/// use ipfib::engine::registry::ENGINES;
/// let flat = ENGINES.iter().find(|e| e.name == "poptrie-flat").unwrap();
/// assert!(flat.takes_bits && flat.lookup);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct EngineInfo {
    /// The name.
    pub name: &'static str,
    /// Earlier names, still accepted.
    pub aliases: &'static [&'static str],
    /// What it builds (bits: `None`).
    pub spec: EngineSpec,
    /// Takes `:S`, the direct-pointing bits.
    pub takes_bits: bool,
    /// Answers lookups (CLI `lookup`/`compile`, Python); `false`: a
    /// variant `ipfib bench` measures for comparison only.
    pub lookup: bool,
    /// What it is, in a line.
    pub summary: &'static str,
}

const fn entry(
    name: &'static str,
    aliases: &'static [&'static str],
    spec: EngineSpec,
    lookup: bool,
    summary: &'static str,
) -> EngineInfo {
    let takes_bits = match spec {
        EngineSpec::Engine { kind, .. } => !matches!(kind, Kind::PlanB),
        _ => false,
    };
    EngineInfo {
        name,
        aliases,
        spec,
        takes_bits,
        lookup,
        summary,
    }
}

const fn engine(kind: Kind, variant: Variant) -> EngineSpec {
    EngineSpec::Engine {
        kind,
        bits: None,
        variant,
    }
}

/// Every engine name, in the order lists and errors show them. Adding an
/// engine: a [`Kind`], its arms in [`Built`], and a row here.
///
/// ```
/// use ipfib::engine::registry::{EngineSpec, ENGINES};
/// assert_eq!(ENGINES[0].name, "auto");
/// // Every name and alias parses back to its row's engine.
/// for e in ENGINES {
///     for name in std::iter::once(&e.name).chain(e.aliases) {
///         assert_eq!(name.parse::<EngineSpec>()?.info().map(|i| i.name), Some(e.name));
///     }
/// }
/// # Ok::<(), ipfib::engine::registry::SpecError>(())
/// ```
pub const ENGINES: &[EngineInfo] = &[
    entry(
        "auto",
        &[],
        EngineSpec::Auto,
        true,
        "the default: per family, the engine and S that suit the table's shape, timed on samples",
    ),
    entry(
        "planb",
        &[],
        engine(Kind::PlanB, Variant::Values),
        true,
        "linearized B+-tree over the address intervals, searched with SIMD (NSDI '26)",
    ),
    entry(
        "poptrie",
        &[],
        engine(Kind::Poptrie, Variant::Values),
        true,
        "Poptrie (SIGCOMM '15): 64-ary nodes indexed by popcount, S-bit direct table",
    ),
    entry(
        "poptrie32",
        &["poptrie5"],
        engine(Kind::Poptrie32, Variant::Values),
        true,
        "Poptrie with 32-ary nodes (5 bits a level): one gather per level in batches",
    ),
    entry(
        "poptrie-flat",
        &[],
        engine(Kind::Flat, Variant::Values),
        true,
        "Poptrie with 32-ary nodes inline with the leaves: one 64-bit read per level",
    ),
    entry(
        "radix",
        &[],
        EngineSpec::Radix,
        true,
        "the route table itself (path-compressed radix trie): the baseline",
    ),
    entry(
        "planb-routes",
        &[],
        engine(Kind::PlanB, Variant::Routes),
        false,
        "planb over route payloads (no merging of equal neighbours): bench only",
    ),
    entry(
        "poptrie-routes",
        &[],
        engine(Kind::Poptrie, Variant::Routes),
        false,
        "poptrie over route payloads: bench only",
    ),
    entry(
        "poptrie-basic",
        &[],
        engine(Kind::Poptrie, Variant::Basic),
        false,
        "the paper's basic Poptrie (route payloads, no leaf compression): bench only",
    ),
];

/// Why a spec was refused; the message lists what is accepted.
///
/// ```
/// use ipfib::engine::registry::{EngineSpec, SpecError};
/// let e = "planb:12".parse::<EngineSpec>().unwrap_err();
/// assert!(matches!(e, SpecError::NoBits { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("unknown engine {name:?} (available: {valid})")]
    Unknown { name: String, valid: String },
    #[error(
        "engine {spec:?}: direct-pointing bits must be a number from 0 to {max} (e.g. {base}:18)",
        max = PoptrieOptions::MAX_DIRECT_BITS
    )]
    Bits { spec: String, base: String },
    #[error("engine {spec:?}: {base} takes no direct-pointing bits (write {base})")]
    NoBits { spec: String, base: String },
    #[error(
        "engine {name:?} is for `ipfib bench` only (lookups take: {})",
        names(true)
    )]
    BenchOnly { name: String },
}

/// The names, comma-separated, `[:S]` after those that take bits; only
/// the lookup engines when `lookup_only`.
///
/// ```
/// let all = ipfib::engine::registry::names(false);
/// assert!(all.starts_with("auto, planb, poptrie[:S], poptrie32[:S]"));
/// assert!(!ipfib::engine::registry::names(true).contains("poptrie-basic"));
/// ```
pub fn names(lookup_only: bool) -> String {
    ENGINES
        .iter()
        .filter(|e| e.lookup || !lookup_only)
        .map(|e| {
            if e.takes_bits {
                format!("{}[:S]", e.name)
            } else {
                e.name.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl EngineSpec {
    /// Parse a name that must answer lookups (not a bench-only variant).
    ///
    /// ```
    /// use ipfib::engine::registry::EngineSpec;
    /// assert!(EngineSpec::parse_lookup("poptrie:16").is_ok());
    /// assert!(EngineSpec::parse_lookup("poptrie-basic").is_err());
    /// ```
    pub fn parse_lookup(text: &str) -> Result<EngineSpec, SpecError> {
        // Every parsed spec has a row (`info` is `Some`).
        let spec: EngineSpec = text.parse().map_err(|e| match e {
            SpecError::Unknown { name, .. } => SpecError::Unknown {
                name,
                valid: names(true),
            },
            other => other,
        })?;
        match spec.info().is_some_and(|i| i.lookup) {
            true => Ok(spec),
            false => Err(SpecError::BenchOnly { name: text.into() }),
        }
    }

    /// The registry's row for this spec: `Some` for every spec parsed
    /// from a name; `None` for a combination built by hand that no name
    /// stands for (`planb` with [`Variant::Basic`]).
    ///
    /// ```
    /// use ipfib::engine::registry::{EngineSpec, Kind, Variant};
    /// let spec: EngineSpec = "poptrie5:12".parse().unwrap();
    /// assert_eq!(spec.info().map(|i| i.name), Some("poptrie32"));
    /// let odd = EngineSpec::Engine { kind: Kind::PlanB, bits: None, variant: Variant::Basic };
    /// assert!(odd.info().is_none());
    /// assert_eq!(odd.to_string(), "planb(basic)");
    /// ```
    pub fn info(&self) -> Option<&'static EngineInfo> {
        let bare = self.with_bits(None);
        ENGINES.iter().find(|e| e.spec == bare)
    }

    /// The name without bits: the registry's, else the kind's with the
    /// variant (`planb(basic)`) for a combination no name stands for.
    fn base_name(&self) -> std::borrow::Cow<'static, str> {
        match (self.info(), self) {
            (Some(i), _) => i.name.into(),
            (None, EngineSpec::Engine { kind, variant, .. }) => {
                let v = match variant {
                    Variant::Values => "values",
                    Variant::Routes => "routes",
                    Variant::Basic => "basic",
                };
                format!("{}({v})", kind.name()).into()
            }
            (None, other) => unreachable!("{other:?}: auto and radix have rows"),
        }
    }

    /// This spec with direct-pointing bits `bits` (unchanged when the
    /// engine takes none).
    ///
    /// ```
    /// use ipfib::engine::registry::EngineSpec;
    /// let s: EngineSpec = "poptrie".parse().unwrap();
    /// assert_eq!(s.with_bits(Some(16)).to_string(), "poptrie:16");
    /// ```
    pub fn with_bits(self, bits: Option<u8>) -> EngineSpec {
        match self {
            EngineSpec::Engine { kind, variant, .. } => EngineSpec::Engine {
                kind,
                bits: bits.filter(|_| kind.takes_bits()),
                variant,
            },
            other => other,
        }
    }

    /// The direct-pointing bits named (`None`: none, or the default).
    ///
    /// ```
    /// use ipfib::engine::registry::EngineSpec;
    /// assert_eq!("poptrie:12".parse::<EngineSpec>().unwrap().bits(), Some(12));
    /// ```
    pub fn bits(&self) -> Option<u8> {
        match self {
            EngineSpec::Engine { bits, .. } => *bits,
            _ => None,
        }
    }

    /// The engine [`crate::engine::auto::AutoEngine`] is forced to build
    /// for this name, with the engine's default bits filled in (`None`:
    /// `auto` chooses; `radix` is not compiled from intervals). Variants
    /// build the value engine: a compiled table picks its payloads itself.
    ///
    /// ```
    /// use ipfib::engine::registry::{EngineSpec, Kind};
    /// let s: EngineSpec = "poptrie".parse().unwrap();
    /// assert_eq!(s.force(), Some((Kind::Poptrie, Some(18))));
    /// assert_eq!(EngineSpec::Auto.force(), None);
    /// ```
    pub fn force(&self) -> Option<Pick> {
        match *self {
            EngineSpec::Engine { kind, bits, .. } => Some((
                kind,
                kind.takes_bits()
                    .then(|| bits.unwrap_or(PoptrieOptions::DEFAULT_DIRECT_BITS)),
            )),
            EngineSpec::Auto | EngineSpec::Radix => None,
        }
    }

    /// The name as reports print it: with the bits in use
    /// (`poptrie:18`), `default_bits` filling in a default.
    ///
    /// ```
    /// use ipfib::engine::registry::EngineSpec;
    /// assert_eq!("poptrie".parse::<EngineSpec>().unwrap().label(18), "poptrie:18");
    /// assert_eq!("planb".parse::<EngineSpec>().unwrap().label(18), "planb");
    /// ```
    pub fn label(&self, default_bits: u8) -> String {
        match self {
            EngineSpec::Engine { kind, bits, .. } if kind.takes_bits() => {
                format!("{}:{}", self.base_name(), bits.unwrap_or(default_bits))
            }
            _ => self.base_name().into_owned(),
        }
    }
}

impl fmt::Display for EngineSpec {
    /// The registry name, `:S` when bits were named.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base_name())?;
        match self.with_bits(self.bits()).bits() {
            Some(s) => write!(f, ":{s}"),
            None => Ok(()),
        }
    }
}

impl FromStr for EngineSpec {
    type Err = SpecError;

    /// A registry name or alias, with `:S` (0 to 24) for the engines that
    /// take direct-pointing bits.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (base, bits) = match text.split_once(':') {
            Some((base, bits)) => (base, Some(bits)),
            None => (text, None),
        };
        let info = ENGINES
            .iter()
            .find(|e| e.name == base || e.aliases.contains(&base))
            .ok_or_else(|| SpecError::Unknown {
                name: text.into(),
                valid: names(false),
            })?;
        let bits = match (bits, info.takes_bits) {
            (None, _) => None,
            (Some(_), false) => {
                return Err(SpecError::NoBits {
                    spec: text.into(),
                    base: info.name.into(),
                })
            }
            (Some(b), true) => match b.parse::<u8>() {
                Ok(s) if s <= PoptrieOptions::MAX_DIRECT_BITS => Some(s),
                _ => {
                    return Err(SpecError::Bits {
                        spec: text.into(),
                        base: info.name.into(),
                    })
                }
            },
        };
        Ok(info.spec.with_bits(bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_round_trips() {
        for e in ENGINES {
            for name in std::iter::once(&e.name).chain(e.aliases) {
                let spec: EngineSpec = name.parse().unwrap();
                assert_eq!(spec, e.spec, "{name}");
                assert_eq!(spec.to_string(), e.name, "{name}");
                assert_eq!(spec.info().map(|i| i.name), Some(e.name));
                if e.takes_bits {
                    let s: EngineSpec = format!("{name}:7").parse().unwrap();
                    assert_eq!(s.bits(), Some(7));
                    assert_eq!(s.to_string(), format!("{}:7", e.name));
                    assert_eq!(s.force().map(|p| p.1), Some(Some(7)));
                    assert_eq!(spec.force().map(|p| p.1), Some(Some(18)));
                } else {
                    assert!(format!("{name}:7").parse::<EngineSpec>().is_err());
                }
            }
        }
        // Names and aliases are unique, and each spec has one row.
        let mut all: Vec<&str> = ENGINES
            .iter()
            .flat_map(|e| std::iter::once(e.name).chain(e.aliases.iter().copied()))
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a name twice");
        for (i, a) in ENGINES.iter().enumerate() {
            for b in &ENGINES[i + 1..] {
                assert_ne!(a.spec, b.spec, "{} and {}", a.name, b.name);
            }
        }
        // Every kind has a value row that answers lookups.
        for k in Kind::ALL {
            assert!(ENGINES
                .iter()
                .any(|e| e.lookup && e.spec == engine(k, Variant::Values)));
            assert_eq!(k.takes_bits(), k != Kind::PlanB);
        }
    }

    #[test]
    fn refusals_say_why() {
        for (bad, want) in [
            ("poptrie:x", "a number from 0 to 24"),
            ("poptrie:25", "a number from 0 to 24"),
            ("poptrie:", "a number from 0 to 24"),
            ("poptrie:-1", "a number from 0 to 24"),
            ("planb:3", "takes no direct-pointing bits"),
            ("auto:18", "takes no direct-pointing bits"),
            ("radix:1", "takes no direct-pointing bits"),
            ("bogus", "available: auto, planb, poptrie[:S]"),
            ("", "unknown engine"),
            ("Poptrie", "unknown engine"),
            ("poptrie-flat:16:1", "a number from 0 to 24"),
        ] {
            let e = bad.parse::<EngineSpec>().unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
        let e = EngineSpec::parse_lookup("planb-routes")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bench` only") && e.contains("poptrie-flat[:S], radix"),
            "{e}"
        );
        assert!(!names(true).contains("routes"));
    }

    #[test]
    fn built_kinds_match_their_tags() {
        let iv = crate::intervals::compile::<u32>([]);
        for k in Kind::ALL {
            let b = Built::build(
                &iv,
                (k, k.takes_bits().then_some(4)),
                &AutoOptions::default(),
            )
            .unwrap();
            assert_eq!(b.kind(), k);
        }
        // The tags are the file format: pinned, never renumbered.
        assert_eq!(Kind::ALL.map(|k| k as u64), [0, 1, 2, 3]);
        assert_eq!(
            Kind::ALL.map(Kind::name),
            ["planb", "poptrie", "poptrie32", "poptrie-flat"]
        );
    }

    #[test]
    fn hand_made_specs_never_panic() {
        for kind in Kind::ALL {
            for variant in [Variant::Values, Variant::Routes, Variant::Basic] {
                for bits in [None, Some(0), Some(5), Some(24)] {
                    let spec = EngineSpec::Engine {
                        kind,
                        bits,
                        variant,
                    };
                    let shown = spec.to_string();
                    assert!(shown.starts_with(kind.name()), "{shown}");
                    assert_eq!(
                        shown.contains(':'),
                        kind.takes_bits() && bits.is_some(),
                        "{shown}"
                    );
                    let _ = (spec.label(18), spec.force(), spec.info());
                    if let Some(i) = spec.info() {
                        assert_eq!(
                            shown
                                .parse::<EngineSpec>()
                                .map(|s| s.info().map(|r| r.name)),
                            Ok(Some(i.name))
                        );
                    }
                }
            }
        }
    }
}
