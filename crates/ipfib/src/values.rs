//! The value table: user values interned to compact `u32` indices.
//!
//! Identical values share one index, which is what lets the interval
//! compiler merge neighbouring intervals that resolve to the same value
//! (route aggregation). Indices are reference counted; a freed index may be
//! reused by this table, so compiled engines never keep indices into a
//! mutable table: they snapshot the values they need (see `compiled.rs`).

use std::collections::HashMap;
use std::hash::Hash;

/// Largest number of distinct values a table holds: indices stay below
/// `2^30` so engines can keep two flag bits in a `u32` payload.
pub const MAX_VALUES: usize = 1 << 30;

/// Interned values with reference counts.
#[derive(Clone, Debug)]
pub struct ValueTable<V> {
    slots: Vec<Option<V>>,
    refs: Vec<u32>,
    index: HashMap<V, u32>,
    free: Vec<u32>,
}

impl<V> Default for ValueTable<V> {
    fn default() -> Self {
        ValueTable {
            slots: Vec::new(),
            refs: Vec::new(),
            index: HashMap::new(),
            free: Vec::new(),
        }
    }
}

/// The table already holds [`MAX_VALUES`] distinct values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("more than {MAX_VALUES} distinct values")]
pub struct TooManyValues;

impl<V: Clone + Eq + Hash> ValueTable<V> {
    /// Take one reference to `v`, interning it if new.
    pub fn acquire(&mut self, v: V) -> Result<u32, TooManyValues> {
        if let Some(&i) = self.index.get(&v) {
            self.refs[i as usize] += 1;
            return Ok(i);
        }
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                if self.slots.len() >= MAX_VALUES || crate::fault::hit(crate::fault::Point::Acquire)
                {
                    return Err(TooManyValues);
                }
                self.slots.push(None);
                self.refs.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        self.slots[i as usize] = Some(v.clone());
        self.refs[i as usize] = 1;
        self.index.insert(v, i);
        Ok(i)
    }

    /// Drop one reference to index `i`, returning the value when it was the last.
    pub fn release(&mut self, i: u32) -> Option<V> {
        let r = self.refs.get_mut(i as usize)?;
        debug_assert!(*r > 0, "release of a free value index");
        *r = r.saturating_sub(1);
        if *r > 0 {
            return None;
        }
        let v = self.slots[i as usize].take()?;
        self.index.remove(&v);
        self.free.push(i);
        Some(v)
    }
}

impl<V> ValueTable<V> {
    /// The value at index `i`, if live.
    #[inline]
    pub fn get(&self, i: u32) -> Option<&V> {
        self.slots.get(i as usize).and_then(|s| s.as_ref())
    }

    /// Number of live distinct values.
    pub fn distinct(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// A copy of every slot, indexed by value index (for snapshots).
    pub fn to_vec(&self) -> Vec<Option<V>>
    where
        V: Clone,
    {
        self.slots.clone()
    }

    /// One past the largest index ever handed out.
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interns_and_recycles() {
        let mut t = ValueTable::default();
        let a = t.acquire("a").unwrap();
        let b = t.acquire("b").unwrap();
        assert_eq!(t.acquire("a").unwrap(), a);
        assert_ne!(a, b);
        assert_eq!(t.distinct(), 2);
        assert_eq!(t.release(a), None);
        assert_eq!(t.release(a), Some("a"));
        assert_eq!(t.get(a), None);
        let c = t.acquire("c").unwrap();
        assert_eq!(c, a, "freed index is reused by the table itself");
        assert_eq!(t.get(c), Some(&"c"));
    }
}
