//! C arguments to Rust references, checked: NULL is an error (never a
//! dereference), arrays must be aligned and their byte size must fit
//! `isize`. What cannot be checked (that a non-NULL pointer is live and
//! large enough) is the caller's contract, stated once in the header's
//! opening comment ("Pointers").

use crate::error::Error;
use crate::handle::IpfibTable;
use std::ffi::{c_char, CStr};
use std::path::PathBuf;

/// `p` as a shared reference.
///
/// # Safety
/// `p` is NULL or points at a live, initialised `T` not written during
/// `'a`.
pub unsafe fn ptr_ref<'a, T>(p: *const T, what: &str) -> Result<&'a T, Error> {
    check(p, what)?;
    // SAFETY: non-NULL and aligned (checked); live (this function's contract).
    Ok(unsafe { &*p })
}

/// The table behind `p`.
///
/// # Safety
/// As [`ptr_ref`]: NULL or a table from `ipfib_table_open` or
/// `ipfib_builder_compile` not yet freed.
pub unsafe fn table_ref<'a>(p: *const IpfibTable) -> Result<&'a IpfibTable, Error> {
    // SAFETY: forwarded contract.
    unsafe { ptr_ref(p, "table") }
}

/// `p` as an exclusive reference (an output, or a builder).
///
/// # Safety
/// `p` is NULL or points at a live `T`, valid for writes and not accessed
/// otherwise during `'a`. `T` is plain data (any bit pattern a caller's
/// memory holds is overwritten before it is read, or is a valid `T`).
pub unsafe fn out_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, Error> {
    check(p, what)?;
    // SAFETY: non-NULL and aligned (checked); live and exclusive (contract).
    Ok(unsafe { &mut *p })
}

/// `n` items at `p`.
///
/// # Safety
/// `p` is NULL or points at `n` initialised `T`s not written during `'a`.
pub unsafe fn slice<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T], Error> {
    check(p, what)?;
    fits::<T>(n, what)?;
    // SAFETY: non-NULL, aligned, byte size within isize (checked); `n`
    // readable items (contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// `n` writable items at `p`.
///
/// # Safety
/// `p` is NULL or points at `n` writable `T`s (plain data) not accessed
/// otherwise during `'a`.
pub unsafe fn slice_mut<'a, T>(p: *mut T, n: usize, what: &str) -> Result<&'a mut [T], Error> {
    check(p, what)?;
    fits::<T>(n, what)?;
    // SAFETY: non-NULL, aligned, byte size within isize (checked); `n`
    // writable, unaliased items (contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
/// `p` is NULL or points at a NUL-terminated string unchanged during `'a`.
pub unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str, Error> {
    check(p, what)?;
    // SAFETY: non-NULL; NUL-terminated and live (contract).
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map_err(|e| Error::invalid(format!("{what} is not UTF-8: {e}")))
}

/// [`c_str`], NULL meaning "not given".
///
/// # Safety
/// As [`c_str`].
pub unsafe fn c_str_opt<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>, Error> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    unsafe { c_str(p, what) }.map(Some)
}

/// A file path: any bytes on Unix (paths need not be UTF-8), UTF-8 elsewhere.
///
/// # Safety
/// As [`c_str`].
pub unsafe fn c_path(p: *const c_char, what: &str) -> Result<PathBuf, Error> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        check(p, what)?;
        // SAFETY: non-NULL; NUL-terminated and live (contract).
        let s = unsafe { CStr::from_ptr(p) };
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(s.to_bytes())))
    }
    #[cfg(not(unix))]
    {
        // SAFETY: forwarded contract.
        unsafe { c_str(p, what) }.map(PathBuf::from)
    }
}

/// What [`slice`] checks of `n` items at `p` (NULL, alignment, size),
/// without making a slice.
pub fn check_buffer<T>(p: *const T, n: usize, what: &str) -> Result<(), Error> {
    check(p, what)?;
    fits::<T>(n, what)
}

fn check<T>(p: *const T, what: &str) -> Result<(), Error> {
    if p.is_null() {
        return Err(Error::null(what));
    }
    if !p.is_aligned() {
        return Err(Error::invalid(format!(
            "{what} is not aligned to {} bytes",
            std::mem::align_of::<T>()
        )));
    }
    Ok(())
}

fn fits<T>(n: usize, what: &str) -> Result<(), Error> {
    match n.checked_mul(std::mem::size_of::<T>()) {
        Some(b) if b <= isize::MAX as usize => Ok(()),
        _ => Err(Error::invalid(format!(
            "{what}: {n} items of {} bytes do not fit in memory",
            std::mem::size_of::<T>()
        ))),
    }
}
