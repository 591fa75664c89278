//! `LookupBuf<T>`: an immutable, cache-line-aligned array for lookup
//! structures, backed by transparent huge pages where the OS offers them.
//!
//! Why: a full table's engine is several MiB read at random. With 4 KiB pages
//! nearly every lookup also misses the TLB; with 2 MiB pages the whole
//! structure fits a handful of TLB entries (DPDK uses hugepages for the same
//! reason). Buffers of 2 MiB or more are 2 MiB-aligned and advised with
//! `MADV_HUGEPAGE` on Linux; elsewhere, or when the advice is refused, they
//! are ordinary memory and everything still works.

use std::alloc::{alloc, dealloc, Layout};
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;

const HUGE: usize = 2 << 20;

/// A fixed-size, 64-byte (or 2 MiB) aligned array of plain-old-data `T`,
/// owned, or borrowed from a read-only mapping of a compiled table file
/// ([`crate::image`]) that it keeps alive.
///
/// ```
/// use ipfib::mem::LookupBuf;
/// let b = LookupBuf::from_slice(&[1u32, 2, 3]);
/// assert_eq!(&b[..], [1, 2, 3]); // derefs to a slice
/// assert_eq!(b.as_ptr() as usize % 64, 0); // cache-line aligned
/// ```
pub struct LookupBuf<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    layout: Option<Layout>,
    /// The mapping the elements live in (`None`: owned).
    mapped: Option<Arc<dyn Send + Sync>>,
}

// SAFETY: LookupBuf owns its allocation exclusively, like a Box<[T]>.
unsafe impl<T: Copy + Send> Send for LookupBuf<T> {}
// SAFETY: shared access only reads.
unsafe impl<T: Copy + Sync> Sync for LookupBuf<T> {}

impl<T: Copy> LookupBuf<T> {
    /// Copy `items` into a fresh aligned buffer.
    ///
    /// ```
    /// use ipfib::mem::LookupBuf;
    /// let huge = 2 << 20;
    /// let big = LookupBuf::from_slice(&vec![7u8; huge]);
    /// assert_eq!(big.as_ptr() as usize % huge, 0); // 2 MiB and up: huge-page aligned
    /// assert_eq!((big.len(), big[huge - 1]), (huge, 7));
    /// assert!(LookupBuf::<u64>::from_slice(&[]).is_empty());
    /// ```
    pub fn from_slice(items: &[T]) -> Self {
        let bytes = std::mem::size_of_val(items);
        if bytes == 0 {
            return LookupBuf {
                ptr: NonNull::dangling(),
                len: 0,
                layout: None,
                mapped: None,
            };
        }
        let align = if bytes >= HUGE { HUGE } else { 64 }.max(std::mem::align_of::<T>());
        let size = bytes.div_ceil(align) * align;
        let Ok(layout) = Layout::from_size_align(size, align) else {
            // Unreachable for any real table (size overflow); fall back to a
            // plain allocation so we never panic here.
            return Self::fallback(items);
        };
        // Not `alloc_zeroed`: for this alignment it zeroes with a memset,
        // which faults every page in as 4 KiB before the huge-page advice,
        // leaving the advice nothing to back with huge pages. The tail past
        // `items` is never read (`Deref` exposes `len` elements).
        // SAFETY: `layout` has non-zero size.
        let raw = unsafe { alloc(layout) } as *mut T;
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout);
        };
        advise_huge(raw as *mut u8, size, align);
        // SAFETY: `raw` is valid for `items.len()` elements of T (size >=
        // bytes), freshly allocated so it cannot overlap `items`.
        unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), raw, items.len()) };
        LookupBuf {
            ptr,
            len: items.len(),
            layout: Some(layout),
            mapped: None,
        }
    }

    /// Borrow `len` elements at `ptr` inside a mapping that `owner` keeps
    /// alive and never changes.
    ///
    /// # Safety
    /// `ptr` must be aligned for `T` and valid for reads of `len` elements
    /// for as long as `owner` lives; the memory must never be written while
    /// any `LookupBuf` borrows it; every bit pattern of those bytes must be
    /// a valid `T` ([`crate::plain::Plain`] types only).
    pub(crate) unsafe fn borrowed(
        ptr: NonNull<T>,
        len: usize,
        owner: Arc<dyn Send + Sync>,
    ) -> Self {
        LookupBuf {
            ptr,
            len,
            layout: None,
            mapped: Some(owner),
        }
    }

    /// Whether the elements are borrowed from a shared owner (a mapped
    /// file, or the in-memory copy of one a table was opened from) rather
    /// than owned: a write then copies them first.
    ///
    /// ```
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::image::{write_table, ImageTable};
    /// use ipfib::mem::LookupBuf;
    /// assert!(!LookupBuf::from_slice(&[1u32]).is_mapped()); // owned
    /// # let path = std::env::temp_dir().join(format!("ipfib-doc-mapped-{}.ipfib", std::process::id()));
    /// # let mut t = ipfib::table::Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// write_table(&t, &path, &AutoOptions::default(), "")?; // 10.0.0.0/8 -> "ten"
    /// let (_, _, _, slots, _) = ImageTable::open(&path)?.v4.into_parts();
    /// # std::fs::remove_file(&path)?;
    /// assert!(slots.is_mapped()); // borrowed from the mapped file
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_mapped(&self) -> bool {
        self.mapped.is_some()
    }

    /// The first element's address, taken from the allocation rather than
    /// from a slice, so that writes through it are allowed while other
    /// threads read other elements: a dynamic FIB's shared arena
    /// (`engine::poptrie::versioned`) writes only elements no reader can
    /// reach. Owned buffers only (a mapped one is read-only: panics).
    ///
    /// # Safety
    /// Writes through the pointer must stay within `len` elements and must
    /// never touch an element that a shared reference (a `Deref` slice, a
    /// reader's lookup) may be reading at the same time: the caller alone
    /// knows which elements no reader can reach.
    pub(crate) unsafe fn raw(&self) -> *mut T {
        assert!(self.mapped.is_none(), "a mapped buffer is read-only");
        self.ptr.as_ptr()
    }

    /// The elements, writable: a dynamic FIB rewrites the copy of a
    /// structure no reader can reach (see `crate::fib`). A buffer borrowed
    /// from a mapped file is first copied (the file is never written).
    #[inline]
    pub(crate) fn make_mut(&mut self) -> &mut [T] {
        if self.mapped.is_some() {
            *self = LookupBuf::from_slice(&self[..]);
        }
        // SAFETY: as in `deref`; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    fn fallback(items: &[T]) -> Self {
        let b: Box<[T]> = items.into();
        let len = b.len();
        let raw = Box::into_raw(b) as *mut T;
        LookupBuf {
            // SAFETY: Box pointers are never null.
            ptr: unsafe { NonNull::new_unchecked(raw) },
            len,
            layout: None,
            mapped: None,
        }
    }
}

/// Hint that `p` will be read soon (a lookup structure's next line while
/// other lanes work, a route's entry while others are fetched). Never
/// faults, whatever the address; no effect on results. A reference
/// coerces to the pointer.
// Public for the RIB's lookups (ipfib-rib), one hint for the workspace;
// not API.
#[doc(hidden)]
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// How many rounds ahead a batch fetches its input ([`prefetch_input`]):
/// 2 KiB at 32 IPv6 addresses a round. Far enough ahead for the lines to
/// arrive before their round, and any distance from 2 to 16 serves alike
/// (docs/benchmark-history.md, "Input streaming", has the distances
/// measured).
const INPUT_AHEAD_ROUNDS: usize = 4;

/// Fetch the input of the batch round [`INPUT_AHEAD_ROUNDS`] after the
/// one at `round` (`n` addresses), as data read once (`prefetchnta`).
///
/// Why: a batch over a long trace streams 16 bytes per IPv6 address
/// through the cache. Fetched the ordinary way (by the hardware
/// prefetcher) those lines fill L2 and push out the lookup structure,
/// which real IPv6 tables fit in (0.4-0.6 MiB of a 1 MiB L2); fetched
/// non-temporally they stay out of the way (docs/benchmark-history.md has
/// the measured gain). Never faults, whatever the address (past the end
/// of the input included).
#[inline(always)]
pub(crate) fn prefetch_input<A>(round: *const A, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = n * std::mem::size_of::<A>();
        let ahead = round.wrapping_add(INPUT_AHEAD_ROUNDS * n) as *const i8;
        for line in (0..bytes).step_by(64) {
            // SAFETY: prefetch is a hint; it never faults, whatever the
            // address.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_NTA }>(
                    ahead.wrapping_add(line),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (round, n);
}

// Miri cannot call foreign functions; the advice is optional anyway.
#[cfg(all(target_os = "linux", not(miri)))]
fn advise_huge(ptr: *mut u8, size: usize, align: usize) {
    if align >= HUGE && std::env::var_os("IPFIB_NO_HUGEPAGES").is_none() {
        // SAFETY: the range is exactly one allocation of ours; MADV_HUGEPAGE
        // is only advice and cannot invalidate memory. Failure is harmless.
        unsafe {
            libc::madvise(ptr as *mut libc::c_void, size, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(any(not(target_os = "linux"), miri))]
fn advise_huge(_ptr: *mut u8, _size: usize, _align: usize) {}

impl<T: Copy> Deref for LookupBuf<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is valid for `len` initialised elements (or dangling
        // with len 0).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for LookupBuf<T> {
    fn drop(&mut self) {
        if self.mapped.is_some() {
            return; // borrowed: the mapping's owner frees it
        }
        match self.layout {
            // SAFETY: allocated in `from_slice` with exactly this layout.
            Some(layout) => unsafe { dealloc(self.ptr.as_ptr() as *mut u8, layout) },
            None if self.len > 0 => {
                // SAFETY: came from Box::into_raw in `fallback`.
                drop(unsafe {
                    Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                        self.ptr.as_ptr(),
                        self.len,
                    ))
                });
            }
            None => {}
        }
    }
}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for LookupBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LookupBuf").field("len", &self.len).finish()
    }
}

/// An array kept as copy-on-write chunks of `2^bits` entries: a clone
/// shares every chunk, and a write copies only the chunk it lands in, and
/// only while a clone still shares it. A dynamic FIB's versions keep their
/// direct tables and value slots so: a publication copies the chunks its
/// changes touch, and versions share the rest (memory and cache lines).
#[derive(Clone, Debug)]
pub(crate) struct CowChunks<T> {
    chunks: Vec<Arc<[T]>>,
    bits: u32,
    len: usize,
    fill: T,
}

impl<T> CowChunks<T> {
    /// Entry `i`, if `i < len`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        let mask = (1usize << self.bits) - 1;
        self.chunks.get(i >> self.bits)?.get(i & mask)
    }

    /// Bytes of the chunks (shared ones counted in full) and their list.
    pub(crate) fn footprint_bytes(&self) -> usize {
        self.chunks.len() * ((std::mem::size_of::<T>() << self.bits) + 16)
            + self.chunks.capacity() * std::mem::size_of::<Arc<[T]>>()
    }
}

impl<T: Clone> CowChunks<T> {
    /// `items`, in chunks of `2^bits` (the last padded with `fill`).
    pub(crate) fn new(items: &[T], bits: u32, fill: T) -> Self {
        let size = 1usize << bits;
        let chunks = items
            .chunks(size)
            .map(|c| {
                let mut v = c.to_vec();
                v.resize(size, fill.clone());
                Arc::from(v)
            })
            .collect();
        CowChunks {
            chunks,
            bits,
            len: items.len(),
            fill,
        }
    }

    /// Write entry `i` (growing the array with `fill` when `i >= len`),
    /// copying its chunk first if a clone shares it.
    pub(crate) fn set(&mut self, i: usize, v: T) {
        let size = 1usize << self.bits;
        while self.chunks.len() <= i >> self.bits {
            self.chunks.push(Arc::from(vec![self.fill.clone(); size]));
        }
        self.len = self.len.max(i + 1);
        let chunk = &mut self.chunks[i >> self.bits];
        if Arc::get_mut(chunk).is_none() {
            *chunk = Arc::from(chunk.to_vec());
        }
        // The chunk is unique now (just copied, or no clone shared it).
        if let Some(c) = Arc::get_mut(chunk) {
            c[i & (size - 1)] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_and_aligns() {
        let v: Vec<u32> = (0..1_000_000).collect();
        let b = LookupBuf::from_slice(&v);
        assert_eq!(&b[..], &v[..]);
        assert_eq!(b.as_ptr() as usize % HUGE, 0);
        let small = LookupBuf::from_slice(&[1u64, 2, 3]);
        assert_eq!(&small[..], &[1, 2, 3]);
        assert_eq!(small.as_ptr() as usize % 64, 0);
        let empty = LookupBuf::<u8>::from_slice(&[]);
        assert!(empty.is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn large_buffers_get_huge_pages_when_the_os_offers_them() {
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !(thp.contains("[madvise]") || thp.contains("[always]")) {
            eprintln!("SKIPPED: transparent huge pages are off on this machine");
            return;
        }
        // The huge pages of the mapping that holds `addr` (from
        // /proc/self/smaps): the buffer's own, whatever other tests of
        // this process allocate or free meanwhile (a process-wide total
        // was seen to shrink while a parallel test freed 128 MiB).
        let huge_at = |addr: usize| -> u64 {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
            let mut inside = false;
            for line in smaps.lines() {
                // A mapping's first line starts with its range, `lo-hi` in hex.
                let range = line
                    .split_whitespace()
                    .next()
                    .and_then(|r| r.split_once('-'));
                if let Some((Ok(lo), Ok(hi))) = range
                    .map(|(lo, hi)| (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)))
                {
                    inside = (lo..hi).contains(&addr);
                    continue;
                }
                if inside && line.starts_with("AnonHugePages:") {
                    return line
                        .split_whitespace()
                        .nth(1)
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                }
            }
            0
        };
        let v = vec![7u64; 4 << 20]; // 32 MiB
        let b = LookupBuf::from_slice(&v);
        assert_eq!(b[12345], 7);
        let kb = huge_at(b.as_ptr() as usize);
        assert!(kb > 0, "no huge pages in the buffer's mapping");
    }

    /// Writing a borrowed buffer copies it first: the mapping it borrows
    /// from is never written.
    #[test]
    fn make_mut_copies_a_borrowed_buffer() {
        let owner: Arc<Vec<u32>> = Arc::new(vec![1, 2, 3]);
        let ptr = NonNull::new(owner.as_ptr() as *mut u32).expect("a Vec's pointer");
        // SAFETY: `owner` keeps the three elements alive and is never
        // written while borrowed.
        let mut b = unsafe { LookupBuf::borrowed(ptr, 3, owner.clone()) };
        assert!(b.is_mapped());
        b.make_mut()[0] = 0;
        assert!(!b.is_mapped());
        assert_eq!((&b[..], &owner[..]), (&[0, 2, 3][..], &[1, 2, 3][..]));
    }

    #[test]
    fn cow_chunks_share_until_written() {
        let all = |c: &CowChunks<u32>| (0..12).map(|i| c.get(i).copied()).collect::<Vec<_>>();
        let mut a = CowChunks::new(&[1u32, 2, 3, 4, 5], 1, 0);
        assert_eq!(a.get(5), None, "the padding is not an entry");
        let b = a.clone();
        a.set(2, 30);
        a.set(9, 90);
        let grown: Vec<_> = [1, 2, 30, 4, 5, 0, 0, 0, 0, 90]
            .map(Some)
            .into_iter()
            .chain([None, None])
            .collect();
        assert_eq!(all(&a), grown);
        let kept: Vec<_> = [1, 2, 3, 4, 5]
            .map(Some)
            .into_iter()
            .chain([None; 7])
            .collect();
        assert_eq!(all(&b), kept, "the clone kept its chunk");
        assert!(
            Arc::ptr_eq(&a.chunks[0], &b.chunks[0]),
            "an untouched chunk stays shared"
        );
        assert!(!Arc::ptr_eq(&a.chunks[1], &b.chunks[1]));
        let before = Arc::as_ptr(&a.chunks[1]);
        a.set(3, 40);
        assert_eq!(
            Arc::as_ptr(&a.chunks[1]),
            before,
            "an unshared chunk is written in place"
        );
        assert_eq!(a.get(3), Some(&40));
    }
}
