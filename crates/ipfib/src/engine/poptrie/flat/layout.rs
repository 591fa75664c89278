//! The flat layout shared by the build, the searches and the check: the
//! entry encoding and the [`FlatPoptrie`] struct.

use crate::engine::kernel::Kernel;
use crate::engine::poptrie::layout::Chunks;
use crate::mem::LookupBuf;

/// Entries with this bit set are leaves, their payload in the low 32 bits.
pub(super) const LEAF: u64 = 1 << 63;

/// Address bits per level.
pub(super) const K: u32 = 5;

/// Where the tables sit in `entries` and which addresses they serve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Focus {
    // Fields crate-visible: `image::engines` stores and loads them.
    /// `|F|`: 0 when the focus table covers the whole space (no outer
    /// table).
    pub(crate) bits: u32,
    /// `F`'s first address, left-aligned in 64 bits (`|F| <= 24`).
    pub(crate) first_top: u64,
}

/// The flat Poptrie for one address family (see the module doc): answers
/// `u32` payloads (as compiled into the intervals) or [`NO_ROUTE`](crate::engine::NO_ROUTE).
///
/// Immutable once built: `Send + Sync`, lookups never allocate or lock.
/// Payloads must be below `2^31 - 1`, as for [`Poptrie`](super::super::Poptrie)
/// (its leaves could carry 32 bits, but both layouts accept the same
/// tables, so one can always stand in for the other).
///
/// ```
/// use ipfib::engine::{poptrie::FlatPoptrie, NO_ROUTE};
/// # let p = |s: &str| s.parse::<ipfib::prefix::Prefix<u128>>().unwrap();
/// let iv = ipfib::intervals::compile([(p("2001:db8::/32"), 1), (p("2001:db8::/48"), 2)]);
/// let e = FlatPoptrie::<u128>::build(&iv, &Default::default())?;
/// assert_eq!(e.lookup(0x2001_0db8_0000_0001 << 64), 2);
/// assert_eq!(e.lookup(0x2001_0db8_0001_0000 << 64), 1);
/// assert_eq!(e.lookup(0), NO_ROUTE);
/// # Ok::<(), ipfib::engine::poptrie::PoptrieError>(())
/// ```
pub struct FlatPoptrie<A: Chunks> {
    // Fields crate-visible: `image::engines` stores and loads them.
    /// Focus table (`2^(s - |F|)` entries), outer table (`2^|F|`, when
    /// `|F| > 0`), then every node's run entries.
    pub(crate) entries: LookupBuf<u64>,
    pub(crate) s: u32,
    pub(crate) focus: Focus,
    pub(crate) kernel: Kernel,
    pub(crate) _family: std::marker::PhantomData<A>,
}
