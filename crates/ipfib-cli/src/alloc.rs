//! The `ipfib` command's allocator: jemalloc (as `tikv-jemallocator`
//! builds it), and the hooks through which `ipfib_rib::heap` purges it and
//! reads what it holds.
//!
//! Why jemalloc: the collector keeps small objects that live for seconds
//! (replaced route arrays, dead attribute sets) beside ones that live for
//! months, and jemalloc's size-class slabs leave fewer holes among the
//! live ones than glibc's bins; a month of simulated full-table churn held
//! a third less RSS (BENCHMARKS.md, the soak row). It serves every
//! subcommand (a global allocator is one per process). jemalloc's C code
//! is BSD-2-Clause (its notice ships in the `tikv-jemalloc-sys` crate).
//!
//! The soak benchmark of `ipfib-rib` includes this file, so that it
//! measures this very setup.

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Tell `ipfib_rib::heap` how to purge and read this allocator; call first
/// thing in `main`.
pub fn install() {
    ipfib_rib::heap::set_allocator_hooks(ipfib_rib::heap::AllocatorHooks { purge, in_use });
}

/// A control that takes and returns nothing; whether jemalloc accepted it.
fn control(name: &CStr) -> bool {
    // SAFETY: `name` is NUL-terminated; the controls passed here
    // (`thread.tcache.flush`, `arena.<i>.purge`) read and write no value,
    // so null old and new pointers with length 0 are their documented
    // form. jemalloc reports an unknown name through the return value.
    unsafe { tikv_jemalloc_sys::mallctl(name.as_ptr(), null_mut(), null_mut(), null_mut(), 0) == 0 }
}

/// This thread's cached free objects back to their arenas, then every
/// arena's unused dirty pages to the OS now rather than after jemalloc's
/// decay time (`arena.<MALLCTL_ARENAS_ALL = 4096>.purge`).
fn purge() -> bool {
    let flushed = control(c"thread.tcache.flush");
    control(c"arena.4096.purge") && flushed
}

/// Bytes allocated and not freed (`stats.allocated`, refreshed by an
/// `epoch` write).
fn in_use() -> Option<u64> {
    let mut epoch: u64 = 1;
    let mut epoch_len = std::mem::size_of::<u64>();
    let mut value: usize = 0;
    let mut value_len = std::mem::size_of::<usize>();
    // SAFETY: `epoch` is a uint64_t read-write control: the old and new
    // pointers name a u64 local with its size; `stats.allocated` is a
    // read-only size_t: the old pointer names a usize local with its
    // size, no new value. jemalloc writes at most the given lengths and
    // reports failure through the return value.
    let ok = unsafe {
        tikv_jemalloc_sys::mallctl(
            c"epoch".as_ptr(),
            (&raw mut epoch).cast::<c_void>(),
            &mut epoch_len,
            (&raw mut epoch).cast::<c_void>(),
            std::mem::size_of::<u64>(),
        ) == 0
            && tikv_jemalloc_sys::mallctl(
                c"stats.allocated".as_ptr(),
                (&raw mut value).cast::<c_void>(),
                &mut value_len,
                null_mut(),
                0,
            ) == 0
    };
    ok.then_some(value as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purge_and_count_through_jemalloc() {
        assert!(purge(), "jemalloc refused the purge controls");
        let before = in_use().expect("stats.allocated");
        let block = vec![7u8; 32 << 20];
        let during = in_use().expect("stats.allocated");
        assert!(
            during >= before + (32 << 20) - (1 << 20),
            "{before} -> {during} with 32 MiB more held"
        );
        drop(block);
        assert!(in_use().expect("stats.allocated") < during);
        assert!(!control(c"arena.4096.no_such_control"));
    }
}
