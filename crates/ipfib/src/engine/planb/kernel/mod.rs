//! Search kernels: count the keys of one 64-byte node that are below the
//! probe. One file per instruction set; the search algorithm in
//! `search.rs` is written once against the [`Count`] trait and instantiated
//! per kernel inside a `#[target_feature]` wrapper, so the hot loop is
//! compiled for that instruction set with the count inlined.
//!
//! The kernel is chosen once when an engine is built ([`Kernel::detect`]),
//! never per lookup, and a caller may force any supported one.

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;
#[cfg(target_arch = "aarch64")]
pub(crate) mod neon;
pub(crate) mod scalar;

use std::fmt;
use std::str::FromStr;

/// A node-search instruction set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Portable Rust; always available, always tested.
    Scalar,
    /// x86-64 AVX2: signed 256-bit compares with a sign-bit bias.
    Avx2,
    /// x86-64 AVX-512 (F): unsigned compare to a mask, then popcount.
    Avx512,
    /// AArch64 NEON.
    Neon,
}

impl Kernel {
    /// Every kernel, best first.
    pub const ALL: [Kernel; 4] = [Kernel::Avx512, Kernel::Avx2, Kernel::Neon, Kernel::Scalar];

    /// The best kernel this CPU supports.
    pub fn detect() -> Kernel {
        Self::ALL
            .into_iter()
            .find(|k| k.is_supported())
            .unwrap_or(Kernel::Scalar)
    }

    /// The target features the kernel's search is compiled with (the
    /// `#[target_feature]` wrappers in `search.rs`, whose tests compare
    /// the two); [`Kernel::is_supported`] checks exactly these.
    pub fn target_features(self) -> &'static [&'static str] {
        match self {
            Kernel::Scalar => &[],
            Kernel::Avx2 => &["avx2", "popcnt"],
            Kernel::Avx512 => &["avx512f", "popcnt"],
            Kernel::Neon => &["neon"],
        }
    }

    /// Whether this CPU can run the kernel: it has every feature of
    /// [`Kernel::target_features`] (and the kernel exists on this
    /// architecture).
    pub fn is_supported(self) -> bool {
        let here = match self {
            Kernel::Scalar => true,
            Kernel::Avx2 | Kernel::Avx512 => cfg!(target_arch = "x86_64"),
            Kernel::Neon => cfg!(target_arch = "aarch64"),
        };
        here && crate::cpu::has_all(self.target_features())
    }

    /// Every kernel this CPU supports (scalar always included).
    pub fn supported() -> Vec<Kernel> {
        Self::ALL.into_iter().filter(|k| k.is_supported()).collect()
    }

    /// Lower-case name, as accepted by `FromStr`.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
            Kernel::Neon => "neon",
        }
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kernel name is not one of scalar, avx2, avx512, neon.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown kernel {0:?} (expected scalar, avx2, avx512 or neon)")]
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

/// Count the keys of one node that are strictly below the probe.
///
/// # Safety
/// `node` must point at 16 readable keys (one 64-byte line of `u32`, two of
/// `u64`; the pointer need not be aligned), and the CPU must support the
/// kernel.
#[doc(hidden)]
pub trait Count {
    /// 16 `u32` keys.
    unsafe fn count_u32(node: *const u32, probe: u32) -> usize;
    /// 16 `u64` keys (two lines: IPv6 nodes are 17-ary like IPv4's).
    unsafe fn count_u64(node: *const u64, probe: u64) -> usize;
}
