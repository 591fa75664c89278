//! Giving freed heap memory back to the OS.
//!
//! The RIB's allocations are many and small (route arrays, attribute
//! sets, map nodes), made by several writer threads, so glibc's malloc
//! spreads them over per-thread arenas; when a burst of routes goes, the
//! freed chunks sit between live ones and glibc returns only the tops of
//! its heaps. `malloc_trim` walks every arena and hands whole free pages
//! back (`madvise`), which is what makes the process shrink after a
//! burst. The sweeper calls it at most once a [`crate::rib`] sweep period,
//! and only after enough was freed.
//!
//! With the `jemalloc` feature, [`Jemalloc`] is jemalloc (as
//! `tikv-jemallocator` builds it) for a binary's `#[global_allocator]`
//! (the `ipfib` command uses it), and [`trim`] also has jemalloc purge
//! every arena's unused dirty pages at once instead of after its decay
//! time. Why jemalloc for the collector: its size-class slabs leave fewer
//! holes among live objects than glibc's bins when routes and attribute
//! sets come and go for weeks (BENCHMARKS.md, the month's soak under
//! both).
//! [`in_use`] reads the bytes the program holds from whichever allocator
//! serves it.

/// Frees (prefixes, peers, attribute purges) between two trims.
const TRIM_AFTER: u64 = 1024;

/// When the sweeper last trimmed, in frees.
#[derive(Default)]
pub(crate) struct Trimmer {
    last: u64,
}

impl Trimmer {
    /// Trim if `freed` (a running count of frees) moved by at least
    /// [`TRIM_AFTER`] since the last trim; whether it did.
    pub(crate) fn due(&mut self, freed: u64) -> bool {
        if freed.wrapping_sub(self.last) < TRIM_AFTER {
            return false;
        }
        self.last = freed;
        trim()
    }
}

#[cfg(feature = "jemalloc")]
pub use tikv_jemallocator::Jemalloc;

/// jemalloc's control interface, through the one `mallctl` entry point.
#[cfg(feature = "jemalloc")]
mod je {
    use std::ffi::{c_void, CStr};
    use std::ptr::null_mut;

    /// `arena.<MALLCTL_ARENAS_ALL>.purge`: every arena's unused dirty
    /// pages back to the OS now.
    pub(super) fn purge() {
        // SAFETY: the name is NUL-terminated; this control takes and
        // returns nothing (null old and new pointers, length 0), as
        // jemalloc's manual gives it. It reports failure (e.g. no arena
        // ever made when jemalloc is linked but not the global allocator)
        // through its return value, which leaves nothing to undo.
        unsafe {
            tikv_jemalloc_sys::mallctl(
                c"arena.4096.purge".as_ptr(),
                null_mut(),
                null_mut(),
                null_mut(),
                0,
            );
        }
    }

    /// Bytes allocated and not freed, as of now (0 when jemalloc served
    /// nothing or cannot tell).
    pub(super) fn allocated() -> u64 {
        // SAFETY: each call passes pointers to locals of the size the
        // control reads or writes (`epoch`: u64 both ways; the statistic:
        // size_t out) with their lengths; on failure nothing is written
        // to `value` beyond its size and 0 is returned.
        unsafe {
            let mut epoch: u64 = 1;
            let mut len = std::mem::size_of::<u64>();
            tikv_jemalloc_sys::mallctl(
                c"epoch".as_ptr(),
                (&raw mut epoch).cast::<c_void>(),
                &mut len,
                (&raw mut epoch).cast::<c_void>(),
                std::mem::size_of::<u64>(),
            );
            let mut value: usize = 0;
            let mut len = std::mem::size_of::<usize>();
            let name: &CStr = c"stats.allocated";
            let rc = tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                (&raw mut value).cast::<c_void>(),
                &mut len,
                null_mut(),
                0,
            );
            if rc == 0 {
                value as u64
            } else {
                0
            }
        }
    }
}

/// Heap bytes the program holds (allocated and not freed): jemalloc's
/// count when it serves this process (the `jemalloc` feature and
/// [`Jemalloc`] as the global allocator), else glibc's (its arenas and
/// mmapped blocks), else 0.
pub fn in_use() -> u64 {
    #[cfg(feature = "jemalloc")]
    {
        let n = je::allocated();
        if n > 0 {
            return n;
        }
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 takes no arguments and returns a plain struct
        // of counters; it only reads the allocator's statistics.
        let m = unsafe { libc::mallinfo2() };
        (m.uordblks + m.hblkhd) as u64
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        0
    }
}

/// Return free heap pages to the OS now, where the allocator can (glibc,
/// and jemalloc with the `jemalloc` feature); whether it tried.
pub fn trim() -> bool {
    #[cfg(feature = "jemalloc")]
    je::purge();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim is glibc's own, takes a plain size (0: keep
        // no extra pad at the top of the main heap), touches only the
        // allocator's free lists under each arena's lock (as malloc and
        // free do, so it is safe beside other threads allocating) and
        // never frees a chunk in use. Under a global allocator that is not
        // glibc's malloc it finds nothing of ours to trim.
        unsafe {
            libc::malloc_trim(0);
        }
        true
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        cfg!(feature = "jemalloc")
    }
}
