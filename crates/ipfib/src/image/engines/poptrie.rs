//! The file form of [`Poptrie`] and [`FlatPoptrie`]: their scalars (the
//! focus prefix included) and arrays, borrowed in place on load.

use super::validated;
use crate::engine::poptrie::{Chunks, FlatFocus, FlatPoptrie, Focus, Poptrie, Stride, KERNELS};
use crate::image::codec::{Answers, ImageError, Reader, Writer};

impl<A: Chunks, N: Stride> Poptrie<A, N> {
    /// Write the trie's scalars and arrays.
    pub(crate) fn save(&self, w: &mut Writer) {
        let f = &self.focus;
        w.meta(&[
            u64::from(self.s),
            u64::from(f.bits),
            f.first as u64,
            (f.first >> 64) as u64,
            f.first_top,
            u64::from(f.below),
            u64::from(f.above),
            u64::from(self.leafvec),
        ]);
        w.array(&self.direct);
        w.array(&self.nodes);
        w.array(&self.leaves);
    }

    /// Read what `save` wrote, borrowing the arrays in place, with the
    /// best kernel of this CPU; refused unless
    /// [`Poptrie::validate_below`] passes with the bound `answers` gives.
    pub(crate) fn load(r: &mut Reader, answers: Answers) -> Result<Self, ImageError> {
        let at = r.offset_of_next();
        let m = r.meta("poptrie scalars", 8)?;
        let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let e = Poptrie {
            s: small(m[0]),
            focus: Focus {
                bits: small(m[1]),
                first: u128::from(m[2]) | u128::from(m[3]) << 64,
                first_top: m[4],
                below: small(m[5]),
                above: small(m[6]),
            },
            leafvec: m[7] != 0,
            direct: r.array("poptrie direct table")?,
            nodes: r.array("poptrie nodes")?,
            leaves: r.array("poptrie leaves")?,
            kernel: KERNELS.detect(),
            _family: std::marker::PhantomData,
        };
        validated(at, "poptrie engine", e, answers)
    }
}

impl<A: Chunks> FlatPoptrie<A> {
    /// Write the trie's scalars and entries.
    pub(crate) fn save(&self, w: &mut Writer) {
        w.meta(&[
            u64::from(self.s),
            u64::from(self.focus.bits),
            self.focus.first_top,
        ]);
        w.array(&self.entries);
    }

    /// Read what `save` wrote, borrowing the entries in place, with the
    /// best kernel of this CPU; refused unless
    /// [`FlatPoptrie::validate_below`] passes with the bound `answers` gives.
    pub(crate) fn load(r: &mut Reader, answers: Answers) -> Result<Self, ImageError> {
        let at = r.offset_of_next();
        let m = r.meta("flat poptrie scalars", 3)?;
        let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let e = FlatPoptrie {
            s: small(m[0]),
            focus: FlatFocus {
                bits: small(m[1]),
                first_top: m[2],
            },
            entries: r.array("flat poptrie entries")?,
            kernel: KERNELS.detect(),
            _family: std::marker::PhantomData,
        };
        validated(at, "flat poptrie engine", e, answers)
    }
}
