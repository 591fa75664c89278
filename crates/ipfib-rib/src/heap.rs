//! Giving freed heap memory back to the OS.
//!
//! The RIB's allocations are many and small (route arrays, attribute
//! sets, map nodes), made by several writer threads, and live for seconds
//! or months side by side; when a burst of routes goes, the freed memory
//! sits between live objects. [`trim`] hands whole free pages back: the
//! program's allocator's own purge when it registered one
//! ([`set_allocator_hooks`]: the `ipfib` command registers jemalloc's),
//! then glibc's `malloc_trim` for what glibc's malloc holds. The sweeper
//! calls it at most once a [`crate::rib`] sweep period, and only after
//! enough was freed. [`in_use`] reads the bytes the program holds, from
//! the registered allocator or from glibc.
//!
//! The library names no allocator and links none: a global allocator is
//! the program's choice (an allocator linked into a Python extension
//! module would not even load there), so the program tells the library
//! how to reach it.

use std::sync::OnceLock;

/// What a program's global allocator offers beyond allocating, for
/// [`trim`] and [`in_use`].
#[derive(Clone, Copy, Debug)]
pub struct AllocatorHooks {
    /// Give unused pages back to the OS now; whether it did.
    pub purge: fn() -> bool,
    /// Bytes allocated and not yet freed, if the allocator can tell.
    pub in_use: fn() -> Option<u64>,
}

static HOOKS: OnceLock<AllocatorHooks> = OnceLock::new();

/// Register the global allocator's hooks, once per process, before the
/// first [`crate::Rib`] (a later call changes nothing); whether these are
/// the ones registered.
pub fn set_allocator_hooks(hooks: AllocatorHooks) -> bool {
    HOOKS.set(hooks).is_ok()
}

/// Heap bytes the program holds (allocated and not freed): the registered
/// allocator's count, else glibc's (its arenas and mmapped blocks), else 0.
pub fn in_use() -> u64 {
    if let Some(n) = HOOKS.get().and_then(|h| (h.in_use)()) {
        return n;
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

/// Frees between two trims: a prefix or a peer freed counts one, and
/// [`PURGED_PER_FREE`] interned values dropped by attribute purges count
/// one.
const TRIM_AFTER: u64 = 1024;

/// Interned values (attribute sets, paths, lists) a purge drops that count
/// as one free: they are small and attribute churn drops them all the
/// time, so counting each as a prefix would trim every second, handing
/// back pages the allocator is about to reuse (a trim is due after
/// 65,536 of them, or 1,024 prefixes or peers).
pub(crate) const PURGED_PER_FREE: u64 = 64;

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

/// Return free heap pages to the OS now, where the allocator can (the
/// registered one, glibc's); whether anything tried.
pub fn trim() -> bool {
    let purged = HOOKS.get().is_some_and(|h| (h.purge)());
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
        let _ = purged;
        true
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        purged
    }
}
