//! The file form of [`PlanB`]: its scalars, its six arrays (borrowed in
//! place on load) and its second stage (copied: it holds only the few
//! intervals that differ below the top 64 bits).

use super::validated;
use crate::engine::planb::{Family, PlanB, Stage2, KERNELS};
use crate::image::codec::{Answers, ImageError, Reader, Writer};

impl Stage2 {
    /// Write the three arrays.
    pub(crate) fn save(&self, w: &mut Writer) {
        w.array(&self.offsets);
        w.array(&self.starts);
        w.array(&self.payloads);
    }

    /// Read what `save` wrote (copied: the second stage holds only the
    /// few intervals that differ below the top 64 bits).
    pub(crate) fn load(r: &mut Reader) -> Result<Self, ImageError> {
        Ok(Stage2 {
            offsets: r.array::<u32>("planb second-stage offsets")?.to_vec(),
            starts: r.array::<u64>("planb second-stage starts")?.to_vec(),
            payloads: r.array::<u32>("planb second-stage payloads")?.to_vec(),
        })
    }
}

impl<A: Family> PlanB<A> {
    /// Write the engine's scalars and arrays.
    pub(crate) fn save(&self, w: &mut Writer) {
        w.meta(&[
            u64::from(self.direct_shift),
            u64::from(self.sub_shift),
            self.intervals as u64,
            self.max_levels as u64,
        ]);
        w.array(&self.leaves);
        w.array(&self.inner);
        w.array(&self.descs);
        w.array(&self.direct);
        w.array(&self.sub);
        w.array(&self.payloads);
        self.stage2.save(w);
    }

    /// Read what `save` wrote, borrowing the arrays in place, with the
    /// best kernel of this CPU; refused unless
    /// [`PlanB::validate_below`] passes with the bound `answers` gives.
    pub(crate) fn load(r: &mut Reader, answers: Answers) -> Result<Self, ImageError> {
        let at = r.offset_of_next();
        let m = r.meta("planb scalars", 4)?;
        let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let e = PlanB {
            direct_shift: small(m[0]),
            sub_shift: small(m[1]),
            intervals: m[2] as usize,
            max_levels: m[3] as usize,
            leaves: r.array("planb keys")?,
            inner: r.array("planb inner lines")?,
            descs: r.array("planb tree descriptors")?,
            direct: r.array("planb direct table")?,
            sub: r.array("planb sub-tables")?,
            payloads: r.array("planb payloads")?,
            stage2: Stage2::load(r)?,
            kernel: KERNELS.detect(),
        };
        validated(at, "planb engine", e, answers)
    }
}
