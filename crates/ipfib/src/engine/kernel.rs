//! Kernels: the instruction set an engine's search is compiled for, one
//! type for every engine.
//!
//! Each engine owns a [`KernelSet`]: the kernels it has, best first, each
//! with the target features its `#[target_feature]` code is compiled with
//! (the engines' tests compare those lists with the attributes). The
//! kernel is chosen once, when an engine is built or loaded
//! ([`KernelSet::choose`]), never per lookup; the engine's search then has
//! its one `match` on the chosen kernel (SIMD behind one dispatch point).
//!
//! ```
//! use ipfib::engine::kernel::Kernel;
//! use ipfib::engine::{planb, poptrie};
//!
//! // Scalar is in every set and runs everywhere.
//! assert!(planb::KERNELS.is_supported(Kernel::Scalar));
//! assert_eq!(poptrie::KERNELS.choose(Some(Kernel::Scalar)), Ok(Kernel::Scalar));
//! // AVX2 is a PlanB kernel only: Poptrie's search has none.
//! assert!(poptrie::KERNELS.target_features(Kernel::Avx2).is_none());
//! assert_eq!("avx2".parse::<Kernel>(), Ok(Kernel::Avx2));
//! ```

use std::fmt;
use std::str::FromStr;

/// An instruction set an engine's search may be compiled for.
///
/// ```
/// use ipfib::engine::kernel::Kernel;
/// use ipfib::engine::planb::{PlanB, PlanBOptions};
/// let opts = PlanBOptions { kernel: Some(Kernel::Scalar), ..Default::default() };
/// let e = PlanB::build(&ipfib::intervals::compile::<u32>([]), &opts)?;
/// assert_eq!(e.kernel().to_string(), "scalar");
/// # Ok::<(), ipfib::engine::planb::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Portable Rust for the baseline target; in every engine, always
    /// available, always tested.
    Scalar,
    /// x86-64 with `popcnt`, `bmi1`, `bmi2` (Poptrie: one `popcnt` per
    /// level).
    Popcnt,
    /// x86-64 AVX2 (PlanB: signed 256-bit compares with a sign-bit bias).
    Avx2,
    /// x86-64 AVX-512 (PlanB: compare to a mask, then popcount; Poptrie:
    /// eight batch lanes per vector with gathers).
    Avx512,
    /// AArch64 NEON (PlanB).
    Neon,
}

impl Kernel {
    /// Every kernel.
    ///
    /// ```
    /// assert_eq!(ipfib::engine::kernel::Kernel::ALL.len(), 5);
    /// ```
    pub const ALL: [Kernel; 5] = [
        Kernel::Avx512,
        Kernel::Avx2,
        Kernel::Popcnt,
        Kernel::Neon,
        Kernel::Scalar,
    ];

    /// Lower-case name, as accepted by `FromStr`.
    ///
    /// ```
    /// assert_eq!(ipfib::engine::kernel::Kernel::Avx512.name(), "avx512");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar",
            Kernel::Popcnt => "popcnt",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
            Kernel::Neon => "neon",
        }
    }

    /// Whether the kernel exists on this architecture at all.
    fn native(self) -> bool {
        match self {
            Kernel::Scalar => true,
            Kernel::Popcnt | Kernel::Avx2 | Kernel::Avx512 => cfg!(target_arch = "x86_64"),
            Kernel::Neon => cfg!(target_arch = "aarch64"),
        }
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kernel name is not one of [`Kernel::ALL`].
///
/// ```
/// let e = "sse9".parse::<ipfib::engine::kernel::Kernel>().unwrap_err();
/// assert!(e.to_string().contains("scalar, popcnt, avx2, avx512, neon"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown kernel {0:?} (expected scalar, popcnt, avx2, avx512, neon)")]
pub struct UnknownKernel(pub String);

impl FromStr for Kernel {
    type Err = UnknownKernel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownKernel(s.to_string()))
    }
}

/// The kernels of one engine, best first, each with the target features
/// its code is compiled with. The last is always [`Kernel::Scalar`] with
/// none, so [`KernelSet::detect`] always finds one.
///
/// ```
/// use ipfib::engine::kernel::Kernel;
/// for set in [&ipfib::engine::planb::KERNELS, &ipfib::engine::poptrie::KERNELS] {
///     assert_eq!(set.all().last(), Some(Kernel::Scalar));
///     assert_eq!(set.target_features(Kernel::Scalar), Some(&[][..]));
/// }
/// ```
#[derive(Debug)]
pub struct KernelSet {
    engine: &'static str,
    kernels: &'static [(Kernel, &'static [&'static str])],
}

impl KernelSet {
    /// A set for `engine` (its name in messages); `kernels` best first,
    /// ending with `(Kernel::Scalar, &[])` (checked in tests).
    pub(crate) const fn new(
        engine: &'static str,
        kernels: &'static [(Kernel, &'static [&'static str])],
    ) -> KernelSet {
        KernelSet { engine, kernels }
    }

    /// The engine this set belongs to.
    ///
    /// ```
    /// assert_eq!(ipfib::engine::planb::KERNELS.engine(), "planb");
    /// ```
    pub fn engine(&self) -> &'static str {
        self.engine
    }

    /// Every kernel of the engine, best first, supported here or not.
    ///
    /// ```
    /// use ipfib::engine::kernel::Kernel;
    /// let all: Vec<Kernel> = ipfib::engine::poptrie::KERNELS.all().collect();
    /// assert_eq!(all, [Kernel::Avx512, Kernel::Popcnt, Kernel::Scalar]);
    /// ```
    pub fn all(&self) -> impl Iterator<Item = Kernel> + '_ {
        self.kernels.iter().map(|&(k, _)| k)
    }

    /// The target features `kernel`'s code is compiled with in this
    /// engine; `None` when the engine has no such kernel.
    ///
    /// ```
    /// use ipfib::engine::kernel::Kernel;
    /// let f = ipfib::engine::planb::KERNELS.target_features(Kernel::Avx2);
    /// assert_eq!(f, Some(&["avx2", "popcnt"][..]));
    /// ```
    pub fn target_features(&self, kernel: Kernel) -> Option<&'static [&'static str]> {
        self.kernels
            .iter()
            .find(|&&(k, _)| k == kernel)
            .map(|&(_, f)| f)
    }

    /// Whether this CPU can run the engine's `kernel`: the engine has it,
    /// it exists on this architecture, and the CPU has every feature of
    /// [`KernelSet::target_features`].
    ///
    /// ```
    /// use ipfib::engine::kernel::Kernel;
    /// assert!(ipfib::engine::planb::KERNELS.is_supported(Kernel::Scalar));
    /// assert!(!ipfib::engine::poptrie::KERNELS.is_supported(Kernel::Neon));
    /// ```
    pub fn is_supported(&self, kernel: Kernel) -> bool {
        kernel.native()
            && self
                .target_features(kernel)
                .is_some_and(crate::cpu::has_all)
    }

    /// The best kernel of the engine this CPU supports.
    ///
    /// ```
    /// let set = &ipfib::engine::planb::KERNELS;
    /// assert!(set.is_supported(set.detect()));
    /// ```
    pub fn detect(&self) -> Kernel {
        self.all()
            .find(|&k| self.is_supported(k))
            .unwrap_or(Kernel::Scalar)
    }

    /// Every kernel of the engine this CPU supports, best first (scalar
    /// always included).
    ///
    /// ```
    /// use ipfib::engine::kernel::Kernel;
    /// let here = ipfib::engine::poptrie::KERNELS.supported();
    /// assert_eq!(here.last(), Some(&Kernel::Scalar));
    /// ```
    pub fn supported(&self) -> Vec<Kernel> {
        self.all().filter(|&k| self.is_supported(k)).collect()
    }

    /// The kernel an engine is built with: `want`, when this CPU supports
    /// it for the engine (else `Err(want)`); `None`: the best supported.
    ///
    /// ```
    /// use ipfib::engine::kernel::Kernel;
    /// let set = &ipfib::engine::poptrie::KERNELS;
    /// assert_eq!(set.choose(None), Ok(set.detect()));
    /// assert_eq!(set.choose(Some(Kernel::Avx2)), Err(Kernel::Avx2));
    /// ```
    pub fn choose(&self, want: Option<Kernel>) -> Result<Kernel, Kernel> {
        match want {
            None => Ok(self.detect()),
            Some(k) if self.is_supported(k) => Ok(k),
            Some(k) => Err(k),
        }
    }

    /// `want` where this CPU supports it for the engine, the engine's best
    /// otherwise: how one kernel named for several engines (`--kernel`,
    /// `auto`'s calibration) reaches each of them.
    ///
    /// ```
    /// use ipfib::engine::kernel::Kernel;
    /// let set = &ipfib::engine::poptrie::KERNELS;
    /// assert_eq!(set.prefer(Some(Kernel::Scalar)), Some(Kernel::Scalar));
    /// assert_eq!(set.prefer(Some(Kernel::Avx2)), None); // Poptrie has none
    /// ```
    pub fn prefer(&self, want: Option<Kernel>) -> Option<Kernel> {
        want.filter(|&k| self.is_supported(k))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `set`'s shape: best first, scalar last with no features, every
    /// listed feature detectable on this architecture, names unique.
    pub(crate) fn well_formed(set: &KernelSet) {
        let last = set.kernels.last().expect("an empty kernel set");
        assert_eq!(*last, (Kernel::Scalar, &[][..]), "{}", set.engine);
        assert!(set.is_supported(Kernel::Scalar));
        let mut names: Vec<_> = set.all().map(Kernel::name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            set.kernels.len(),
            "{}: a kernel twice",
            set.engine
        );
        for (k, features) in set.kernels {
            if k.native() {
                for f in *features {
                    assert!(crate::cpu::has(f).is_some(), "{} {k}: {f}", set.engine);
                }
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for k in Kernel::ALL {
            assert_eq!(k.name().parse::<Kernel>(), Ok(k));
            assert_eq!(k.to_string(), k.name());
        }
        assert!("AVX2".parse::<Kernel>().is_err());
    }
}
