//! Segmented, append-only tables indexed by a dense `u32` id.
//!
//! A chunk, once allocated, never moves, so a reader goes id -> element
//! with two loads and no lock: the directory entry (a `OnceLock`, one
//! acquire load once initialised) and the element. Writers allocate a
//! chunk the first time an id inside it is used.

use std::sync::OnceLock;

/// Elements per chunk (16K): a chunk of 8-byte slots is 128 KiB.
const CHUNK_BITS: u32 = 14;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Chunks in the directory: 16K chunks of 16K ids = 268M ids.
const DIR: usize = 1 << 14;

/// The largest id a [`Segmented`] table holds, plus one.
pub const CAPACITY: u64 = (CHUNK as u64) * (DIR as u64);

/// A table of `T`, each element created by `T::default()` when its chunk
/// is first touched. Thread-safe: elements are shared (`&T`), so `T`
/// provides its own interior mutability (atomics, `ArcSwap`, `OnceLock`).
pub struct Segmented<T> {
    dir: Box<[OnceLock<Box<[T]>>]>,
}

impl<T: Default> Segmented<T> {
    pub fn new() -> Self {
        Segmented {
            dir: (0..DIR).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The element for `id`, allocating its chunk if needed; `None` only
    /// beyond [`CAPACITY`].
    pub fn get_or_alloc(&self, id: u32) -> Option<&T> {
        let (c, i) = split(id);
        let chunk = self
            .dir
            .get(c)?
            .get_or_init(|| (0..CHUNK).map(|_| T::default()).collect());
        chunk.get(i)
    }

    /// The element for `id` if its chunk exists (readers never allocate).
    #[inline]
    pub fn get(&self, id: u32) -> Option<&T> {
        let (c, i) = split(id);
        self.dir.get(c)?.get()?.get(i)
    }
}

impl<T: Default> Default for Segmented<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn split(id: u32) -> (usize, usize) {
    ((id >> CHUNK_BITS) as usize, (id as usize) & (CHUNK - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn ids_map_to_distinct_stable_elements() {
        let t: Segmented<AtomicU32> = Segmented::new();
        assert!(t.get(5).is_none(), "no chunk yet");
        for id in [0u32, 1, 16383, 16384, 1 << 20, (CAPACITY - 1) as u32] {
            t.get_or_alloc(id)
                .unwrap()
                .store(id ^ 0xdead, Ordering::Relaxed);
        }
        for id in [0u32, 1, 16383, 16384, 1 << 20, (CAPACITY - 1) as u32] {
            assert_eq!(t.get(id).unwrap().load(Ordering::Relaxed), id ^ 0xdead);
        }
        assert_eq!(t.get(2).unwrap().load(Ordering::Relaxed), 0);
        assert!(t.get_or_alloc(CAPACITY as u32).is_none());
    }
}
