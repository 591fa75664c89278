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
///
/// ```
/// use ipfib::values::MAX_VALUES;
/// assert_eq!(MAX_VALUES, 1 << 30);
/// // Every index fits below the two flag bits at the top of a `u32` payload.
/// assert_eq!((MAX_VALUES - 1) as u32 >> 30, 0);
/// ```
pub const MAX_VALUES: usize = 1 << 30;

/// Interned values with reference counts.
///
/// ```
/// use ipfib::values::ValueTable;
/// let mut vt = ValueTable::default();
/// let a = vt.acquire("eth0")?;
/// assert_eq!(vt.acquire("eth0")?, a); // interned: one index per distinct value
/// assert_eq!(vt.distinct(), 1);
/// assert_eq!(vt.get(a), Some(&"eth0"));
/// # Ok::<(), ipfib::values::TooManyValues>(())
/// ```
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
///
/// ```
/// use ipfib::values::TooManyValues;
/// assert_eq!(TooManyValues.to_string(), "more than 1073741824 distinct values");
/// let e: Box<dyn std::error::Error> = TooManyValues.into(); // a std error
/// assert!(e.source().is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("more than {MAX_VALUES} distinct values")]
pub struct TooManyValues;

impl<V: Clone + Eq + Hash> ValueTable<V> {
    /// Take one reference to `v`, interning it if new.
    ///
    /// ```
    /// use ipfib::values::ValueTable;
    /// let mut vt = ValueTable::default();
    /// let a = vt.acquire("a")?;
    /// let b = vt.acquire("b")?;
    /// assert_ne!(a, b);
    /// assert_eq!(vt.acquire("a")?, a); // a second reference to the same index
    /// # Ok::<(), ipfib::values::TooManyValues>(())
    /// ```
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
    ///
    /// ```
    /// use ipfib::values::ValueTable;
    /// let mut vt = ValueTable::default();
    /// let i = vt.acquire("a")?;
    /// vt.acquire("a")?;
    /// assert_eq!(vt.release(i), None); // one reference left
    /// assert_eq!(vt.release(i), Some("a")); // the last: the value comes back
    /// assert_eq!(vt.get(i), None);
    /// # Ok::<(), ipfib::values::TooManyValues>(())
    /// ```
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
    ///
    /// ```
    /// use ipfib::values::ValueTable;
    /// let mut vt = ValueTable::default();
    /// let i = vt.acquire(String::from("x"))?;
    /// assert_eq!(vt.get(i).map(String::as_str), Some("x"));
    /// assert_eq!(vt.get(i + 1), None); // never handed out
    /// # Ok::<(), ipfib::values::TooManyValues>(())
    /// ```
    #[inline]
    pub fn get(&self, i: u32) -> Option<&V> {
        self.slots.get(i as usize).and_then(|s| s.as_ref())
    }

    /// Number of live distinct values.
    ///
    /// ```
    /// use ipfib::values::ValueTable;
    /// let mut vt = ValueTable::default();
    /// for v in ["a", "b", "a"] {
    ///     vt.acquire(v)?;
    /// }
    /// assert_eq!(vt.distinct(), 2);
    /// # Ok::<(), ipfib::values::TooManyValues>(())
    /// ```
    pub fn distinct(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// A copy of every slot, indexed by value index (for snapshots).
    ///
    /// ```
    /// use ipfib::values::ValueTable;
    /// let mut vt = ValueTable::default();
    /// let a = vt.acquire("a")?;
    /// vt.acquire("b")?;
    /// vt.release(a);
    /// assert_eq!(vt.to_vec(), [None, Some("b")]); // freed slots stay, empty
    /// # Ok::<(), ipfib::values::TooManyValues>(())
    /// ```
    pub fn to_vec(&self) -> Vec<Option<V>>
    where
        V: Clone,
    {
        self.slots.clone()
    }

    /// One past the largest index ever handed out.
    ///
    /// ```
    /// use ipfib::values::ValueTable;
    /// let mut vt = ValueTable::default();
    /// let a = vt.acquire("a")?;
    /// vt.acquire("b")?;
    /// vt.release(a);
    /// assert_eq!((vt.distinct(), vt.capacity_used()), (1, 2));
    /// assert_eq!(vt.acquire("c")?, a); // a freed index is reused first
    /// assert_eq!(vt.capacity_used(), 2);
    /// # Ok::<(), ipfib::values::TooManyValues>(())
    /// ```
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
