//! The file form of [`AutoEngine`]: the choice (picks, reason, interval
//! count) and the engines it built, each stored as [`Built`] (its kind,
//! then the engine).

use crate::engine::auto::{AutoEngine, Built, Choice, Kind, Pick};
use crate::engine::planb::PlanB;
use crate::engine::poptrie::{FlatPoptrie, Poptrie};
use crate::engine::Family;
use crate::image::codec::{invalid, Answers, ImageError, Reader, Writer};

/// A pick as two scalars (`u64::MAX`: no direct-pointing bits named).
fn pick_meta(p: Pick) -> [u64; 2] {
    [p.0 as u64, p.1.map_or(u64::MAX, u64::from)]
}

fn meta_pick(kind: u64, s: u64) -> Option<Pick> {
    let kind = Kind::ALL.into_iter().find(|k| *k as u64 == kind)?;
    let s = match s {
        u64::MAX => None,
        s => Some(u8::try_from(s).ok()?),
    };
    Some((kind, s))
}

impl<A: Family> Built<A> {
    /// Write the engine's kind, then the engine.
    pub(crate) fn save(&self, w: &mut Writer) {
        w.meta(&[self.kind() as u64]);
        match self {
            Built::PlanB(e) => e.save(w),
            Built::Poptrie(e) => e.save(w),
            Built::Poptrie32(e) => e.save(w),
            Built::Flat(e) => e.save(w),
        }
    }

    /// Read what `save` wrote (each engine validates itself, its answers
    /// bounded as `answers` says).
    pub(crate) fn load(r: &mut Reader, answers: Answers) -> Result<Self, ImageError> {
        let at = r.offset_of_next();
        let kind = r.meta("engine kind", 1)?[0];
        Ok(match kind {
            k if k == Kind::PlanB as u64 => Built::PlanB(PlanB::load(r, answers)?),
            k if k == Kind::Poptrie as u64 => Built::Poptrie(Poptrie::load(r, answers)?),
            k if k == Kind::Poptrie32 as u64 => Built::Poptrie32(Poptrie::load(r, answers)?),
            k if k == Kind::Flat as u64 => Built::Flat(FlatPoptrie::load(r, answers)?),
            k => return Err(invalid(at, "engine kind", format!("unknown kind {k}"))),
        })
    }
}

impl<A: Family> AutoEngine<A> {
    /// Write the choice and the engines.
    pub(crate) fn save(&self, w: &mut Writer) {
        let [k1, s1] = pick_meta(self.choice.single);
        let [k2, s2] = pick_meta(self.choice.batch);
        w.meta(&[
            k1,
            s1,
            k2,
            s2,
            self.choice.intervals as u64,
            u64::from(self.forced),
            u64::from(self.batch.is_some()),
        ]);
        w.text(self.choice.reason.as_bytes());
        self.single.save(w);
        if let Some(b) = &self.batch {
            b.save(w);
        }
    }

    /// Read what `save` wrote; every engine is validated, its answers
    /// bounded as `answers` says.
    pub(crate) fn load(r: &mut Reader, answers: Answers) -> Result<Self, ImageError> {
        let at = r.offset_of_next();
        let m = r.meta("auto choice", 7)?;
        let bad = |why: &str| invalid(at, "auto choice", why);
        let single = meta_pick(m[0], m[1]).ok_or_else(|| bad("unknown single engine"))?;
        let batch = meta_pick(m[2], m[3]).ok_or_else(|| bad("unknown batch engine"))?;
        let reason = r.text("auto reason")?;
        let reason = String::from_utf8_lossy(&reason).into_owned();
        let first = Built::load(r, answers)?;
        let second = match m[6] {
            0 => None,
            _ => Some(Built::load(r, answers)?),
        };
        if first.kind() != single.0
            || second.as_ref().map_or(single, |b| (b.kind(), batch.1)).0 != batch.0
        {
            return Err(bad("the engines stored are not the ones the choice names"));
        }
        Ok(AutoEngine {
            single: first,
            batch: second,
            choice: Choice {
                single,
                batch,
                reason,
                intervals: m[4] as usize,
            },
            forced: m[5] != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pick's scalars read back as the pick; an unknown kind is refused.
    #[test]
    fn picks_round_trip_through_their_scalars() {
        for k in Kind::ALL {
            assert_eq!(meta_pick(pick_meta((k, Some(4)))[0], 4), Some((k, Some(4))));
        }
        assert_eq!(meta_pick(Kind::ALL.len() as u64, u64::MAX), None);
    }
}
