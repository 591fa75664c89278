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

/// Return free heap pages to the OS now, where the allocator can (glibc);
/// whether it tried.
pub fn trim() -> bool {
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
        false
    }
}
