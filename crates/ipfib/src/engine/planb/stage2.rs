//! IPv6 second stage: the intervals that need the lower 64 bits.
//!
//! The tree searches upper halves (`addr >> 64`). An upper value `H` whose
//! intervals all start at `H:0` needs nothing more. When intervals start
//! inside `H` (prefixes longer than /64), the tree's interval for `[H, H]`
//! carries a slot number with bit 31 set, and the slot holds the starts'
//! lower halves with their payloads; an extra upper interval from `H + 1`
//! resumes the payload in effect after `H`. Real BGP tables have a few
//! hundred such slots, so they pay nothing for /65-/128 support.

use crate::intervals::{push_merged, Intervals, NO_ROUTE};

/// Payloads at or above this (other than `NO_ROUTE`) name a slot.
pub(crate) const STAGE2: u32 = 1 << 31;

/// Second-stage slots, flattened.
#[derive(Default, Clone, Debug)]
pub struct Stage2 {
    // Fields crate-visible: `image::engines` stores and loads them.
    /// Slot `i` spans `starts[offsets[i]..offsets[i + 1]]`; its first start is 0.
    pub(crate) offsets: Vec<u32>,
    pub(crate) starts: Vec<u64>,
    pub(crate) payloads: Vec<u32>,
}

impl Stage2 {
    /// Intervals held.
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    pub(crate) fn footprint_bytes(&self) -> usize {
        self.offsets.len() * 4 + self.starts.len() * 8 + self.payloads.len() * 4
    }

    /// Check the slots `resolve` reads (offsets increasing from 0 to the
    /// end of `starts`, each slot's starts beginning at 0 and increasing,
    /// its payloads final and `NO_ROUTE` or below `bound`) and return how
    /// many there are.
    pub(crate) fn validate(&self, bound: u32) -> Result<usize, String> {
        if self.payloads.len() != self.starts.len() {
            return Err("second stage: starts and payloads differ in length".into());
        }
        let Some((&last, _)) = self.offsets.split_last() else {
            return match self.starts.is_empty() {
                true => Ok(0),
                false => Err("second stage: starts without offsets".into()),
            };
        };
        if self.offsets[0] != 0 || last as usize != self.starts.len() {
            return Err("second stage: offsets do not span the starts".into());
        }
        for (slot, w) in self.offsets.windows(2).enumerate() {
            let (a, b) = (w[0] as usize, w[1] as usize);
            let starts = self.starts.get(a..b).unwrap_or_default();
            if starts.first() != Some(&0) || starts.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!(
                    "second-stage slot {slot}: starts not 0, increasing"
                ));
            }
            if self.payloads[a..b]
                .iter()
                .any(|&p| p >= STAGE2 && p != NO_ROUTE)
            {
                return Err(format!("second-stage slot {slot}: payload names a slot"));
            }
            if let Some(p) = self.payloads[a..b]
                .iter()
                .find(|&&p| p != NO_ROUTE && p >= bound)
            {
                return Err(format!(
                    "second-stage slot {slot}: answer {p}, not below {bound}"
                ));
            }
        }
        Ok(self.offsets.len() - 1)
    }

    /// Resolve `payload` from the upper stage: itself, or through its slot.
    #[inline(always)]
    pub(crate) fn resolve(&self, payload: u32, low: u64) -> u32 {
        if payload < STAGE2 || payload == NO_ROUTE {
            return payload;
        }
        self.resolve_slot((payload - STAGE2) as usize, low)
    }

    #[cold]
    #[inline(never)]
    fn resolve_slot(&self, slot: usize, low: u64) -> u32 {
        let (a, b) = (self.offsets[slot] as usize, self.offsets[slot + 1] as usize);
        let starts = &self.starts[a..b];
        // starts[0] == 0 <= low, so the rank is at least 1.
        let rank = starts.partition_point(|&s| s <= low);
        self.payloads[a + rank - 1]
    }
}

/// Upper intervals under construction.
struct Upper {
    starts: Vec<u64>,
    payloads: Vec<u32>,
}

impl Upper {
    fn push(&mut self, start: u64, payload: u32) {
        push_merged(&mut self.starts, &mut self.payloads, start, payload);
    }
}

/// Split 128-bit intervals into upper-half intervals plus slots.
pub(crate) fn split_v6(iv: &Intervals<u128>) -> (Vec<u64>, Vec<u32>, Stage2) {
    let mut up = Upper {
        starts: Vec::with_capacity(iv.len()),
        payloads: Vec::with_capacity(iv.len()),
    };
    let mut st = Stage2 {
        offsets: vec![0],
        ..Stage2::default()
    };
    let mut before = NO_ROUTE; // payload in effect before the current run
    let mut i = 0;
    while i < iv.len() {
        let hi = (iv.starts[i] >> 64) as u64;
        let mut j = i + 1;
        while j < iv.len() && (iv.starts[j] >> 64) as u64 == hi {
            j += 1;
        }
        let last_payload = iv.payloads[j - 1];
        if j - i == 1 && iv.starts[i] as u64 == 0 {
            up.push(hi, iv.payloads[i]);
        } else {
            let slot = (st.offsets.len() - 1) as u32;
            if iv.starts[i] as u64 != 0 {
                st.starts.push(0);
                st.payloads.push(before);
            }
            for k in i..j {
                st.starts.push(iv.starts[k] as u64);
                st.payloads.push(iv.payloads[k]);
            }
            st.offsets.push(st.starts.len() as u32);
            up.push(hi, STAGE2 + slot);
            if let Some(next) = hi.checked_add(1) {
                up.push(next, last_payload);
            }
        }
        before = last_payload;
        i = j;
    }
    (up.starts, up.payloads, st)
}
