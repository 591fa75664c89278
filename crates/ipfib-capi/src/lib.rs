//! The C ABI of ipfib: `libipfib.so` / `libipfib.a` and `include/ipfib.h`
//! (generated from these sources by cbindgen; tests/header.rs checks the
//! committed header is fresh). The header's opening comment is the
//! reference: the contracts below are written there too.
//!
//! ```text
//!   C caller ── ipfib_table_open(path) ──► ipfib_io::open (load) ─► Table<String> ─► compile ─┐
//!            ── ipfib_builder_add/compile ────────────────────► Table<String> ─► compile ─┤
//!            ── ipfib_table_open(file.ipfib) ─► ipfib_io::open (mapped) ─────────────────┤
//!                                                                                      ▼
//!                                         handle.rs: IpfibTable (route ordinals per family)
//!            ── ipfib_lookup_* ───────────► engine lookup / lookup_batch::<32> ─► ordinal
//!            ── ipfib_route_* ────────────► ordinal ─► prefix, value bytes
//! ```
//!
//! - `error.rs`: status codes, the thread-local message, `guard` (every
//!   entry point's body runs inside `catch_unwind`);
//! - `handle.rs`: the table and builder behind the opaque pointers;
//! - `open.rs`: loading a table file of any format, as the CLI does;
//! - `args.rs`: checked conversions of C pointers (the only `unsafe` code
//!   besides the handle frees, each with its argument);
//! - this file: the entry points.
// Every entry point is `unsafe extern "C"`: its pointer arguments must be
// valid as the header's opening comment ("Pointers") states, once for all
// calls, rather than in a `# Safety` section repeated on each.
#![allow(clippy::missing_safety_doc)]

mod args;
mod error;
mod handle;
mod open;

use args::{c_str, out_mut, slice, slice_mut, table_ref};
pub use error::IpfibStatus;
use error::{guard, last_error_ptr, Error};
pub use handle::{IpfibBuilder, IpfibTable};
use ipfib_core::engine::NO_ROUTE;
use ipfib_core::prefix::{AnyAddr, AnyPrefix, HostBits};
use std::ffi::c_char;

/// The route index of a miss.
pub const IPFIB_NO_ROUTE: u32 = u32::MAX;
/// Family argument: IPv4.
pub const IPFIB_FAMILY_V4: u8 = 4;
/// Family argument: IPv6.
pub const IPFIB_FAMILY_V6: u8 = 6;
/// `ipfib_table_open` flag: fail at the first bad line, record or damage
/// instead of loading what is complete (see `ipfib_table_load_report`).
pub const IPFIB_OPEN_STRICT: u32 = 1;
/// `ipfib_table_open` flag: clear host bits (`10.0.0.1/8` becomes
/// `10.0.0.0/8`) instead of rejecting the line.
pub const IPFIB_OPEN_MASK_HOST_BITS: u32 = 2;
/// Bytes `ipfib_route_prefix_text` needs at most, with the NUL
/// (`ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128` is 43 characters).
pub const IPFIB_PREFIX_TEXT_MAX: usize = 48;

// IPFIB_NO_ROUTE is the engines' miss, not a route index they can return.
const _: () = assert!(IPFIB_NO_ROUTE == NO_ROUTE);

/// Addresses converted per step of an IPv6 batch (8 KB of stack: enough
/// to amortise each engine batch's start, little for a small thread stack).
const V6_CHUNK: usize = 512;

/// The conversion buffer of an IPv6 batch of at most this many addresses
/// (a DPDK burst is 32): zeroing the 8 KB one cost a burst of 32 about 8
/// cycles an address in examples/dpdk-forward.
const V6_SMALL: usize = 32;

/// Looks up `part.len()` IPv6 addresses (`16 * part.len()` bytes of
/// `src`, network order) through a stack buffer of `N`.
fn batch_v6_bytes<const N: usize>(t: &IpfibTable, src: &[u8], part: &mut [u32]) {
    let mut buf = [0u128; N];
    for (src, dst) in src.chunks(16 * N).zip(part.chunks_mut(N)) {
        let k = dst.len();
        for (x, b) in buf.iter_mut().zip(src.chunks_exact(16)) {
            *x = be_u128(b);
        }
        t.batch_v6(&buf[..k], dst);
    }
}

/// This library's version, e.g. "0.1.0" (static, NUL-terminated).
///
/// Thread safety: any thread, any time.
#[no_mangle]
pub extern "C" fn ipfib_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The message of the last failed call on the calling thread,
/// NUL-terminated ("" if none has failed). Valid until the next failing
/// call on the same thread; a successful call leaves it unchanged, so read
/// it right after a call returned an error.
///
/// Thread safety: per thread (each thread has its own message).
#[no_mangle]
pub extern "C" fn ipfib_last_error() -> *const c_char {
    last_error_ptr()
}

/// The name of a status code (e.g. "IPFIB_STATUS_PARSE"), static and
/// NUL-terminated; "IPFIB_STATUS_UNKNOWN" for a value that is none.
///
/// Thread safety: any thread, any time.
#[no_mangle]
pub extern "C" fn ipfib_status_name(status: i32) -> *const c_char {
    let name: &'static str = match status {
        0 => "IPFIB_STATUS_OK\0",
        1 => "IPFIB_STATUS_NULL_POINTER\0",
        2 => "IPFIB_STATUS_INVALID_ARGUMENT\0",
        3 => "IPFIB_STATUS_OUT_OF_RANGE\0",
        4 => "IPFIB_STATUS_IO\0",
        5 => "IPFIB_STATUS_PARSE\0",
        6 => "IPFIB_STATUS_BUILD\0",
        7 => "IPFIB_STATUS_INTERNAL\0",
        _ => "IPFIB_STATUS_UNKNOWN\0",
    };
    name.as_ptr().cast()
}

/// Load a table file into a new table, `*out`.
///
/// `path`: any table file the `ipfib` CLI reads: text (`PREFIX/LEN
/// VALUE`), pyasn IPASN, CAIDA pfx2as, MRT (RIB dump or BGP4MP updates),
/// text updates, IP ranges, MaxMind DB, gzip/bzip2/zstd compressed; or a
/// compiled table file (`ipfib compile`), which is memory-mapped instead
/// of loaded (replace such a file by renaming a new one over it, never by
/// rewriting it in place while a table maps it).
/// `format`: NULL or "auto" (sniffed), or one of text, ipasn, pfx2as, mrt,
/// updates, ranges, compiled, mmdb.
/// `value`: NULL for the format's default value, else as the CLI's
/// `--value` (MRT: origin-asn, next-hop, peer-count; MaxMind DB: a field
/// path such as country.iso_code).
/// `flags`: 0 or `IPFIB_OPEN_STRICT` | `IPFIB_OPEN_MASK_HOST_BITS`.
///
/// As the CLI: a bad line in a text table is an error (`IPFIB_STATUS_PARSE`,
/// the message names the line); damaged or unsupported records of other
/// formats are skipped and the complete part loaded, and
/// `ipfib_table_load_report` says what was skipped (unless
/// `IPFIB_OPEN_STRICT`). On error `*out` is set to NULL.
///
/// Thread safety: any thread; allocates the whole table (a full IPv4
/// table: about a second and tens of MB).
#[no_mangle]
pub unsafe extern "C" fn ipfib_table_open(
    path: *const c_char,
    format: *const c_char,
    value: *const c_char,
    flags: u32,
    out: *mut *mut IpfibTable,
) -> IpfibStatus {
    guard("ipfib_table_open", || {
        // SAFETY: the caller passes NULL or a writable `ipfib_table *`.
        let out = unsafe { out_mut(out, "out") }?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller passes NUL-terminated strings or NULL.
        let path = unsafe { args::c_path(path, "path") }?;
        // SAFETY: as above; both may be NULL.
        let format = unsafe { args::c_str_opt(format, "format") }?;
        // SAFETY: as above.
        let value = unsafe { args::c_str_opt(value, "value") }?;
        let table = open::open(&path, format, value, flags)?;
        *out = Box::into_raw(Box::new(table));
        Ok(())
    })
}

/// Free a table (NULL: nothing). Every pointer into it (values) becomes
/// invalid.
///
/// Thread safety: only once no other thread uses the table.
#[no_mangle]
pub unsafe extern "C" fn ipfib_table_free(table: *mut IpfibTable) {
    // SAFETY: a non-NULL table comes from Box::into_raw in
    // ipfib_table_open or ipfib_builder_compile and is freed once (the
    // caller's contract).
    unsafe { free_boxed(table, "ipfib_table_free") }
}

/// What a lenient `ipfib_table_open` skipped or where it stopped, as text
/// (one problem per line, UTF-8, not NUL-terminated): `*len` is 0 when the
/// whole file loaded. Valid while the table lives.
///
/// Thread safety: any thread, concurrently with lookups.
#[no_mangle]
pub unsafe extern "C" fn ipfib_table_load_report(
    table: *const IpfibTable,
    text: *mut *const c_char,
    len: *mut usize,
) -> IpfibStatus {
    guard("ipfib_table_load_report", || {
        // SAFETY: the caller passes a live table or NULL.
        let t = unsafe { table_ref(table) }?;
        // SAFETY: the caller passes writable pointers or NULL.
        let (text, len) = unsafe { (out_mut(text, "text")?, out_mut(len, "len")?) };
        *text = t.report.as_ptr().cast();
        *len = t.report.len();
        Ok(())
    })
}

/// A new, empty builder; NULL only if it cannot be made (then see
/// `ipfib_last_error`). Free it with `ipfib_builder_free`.
///
/// Thread safety: the builder is not thread-safe: one thread at a time
/// may call `ipfib_builder_*` on it (it may move between threads).
#[no_mangle]
pub extern "C" fn ipfib_builder_new() -> *mut IpfibBuilder {
    let mut b = std::ptr::null_mut();
    let _ = guard("ipfib_builder_new", || {
        b = Box::into_raw(Box::default());
        Ok(())
    });
    b
}

/// Add a route: `prefix` as text (`10.0.0.0/8`, `2001:db8::/32`; host bits
/// set is an error), `value` a UTF-8 string (copied). Adding a prefix
/// again replaces its value.
///
/// Thread safety: not thread-safe (one thread at a time per builder).
#[no_mangle]
pub unsafe extern "C" fn ipfib_builder_add(
    builder: *mut IpfibBuilder,
    prefix: *const c_char,
    value: *const c_char,
) -> IpfibStatus {
    guard("ipfib_builder_add", || {
        // SAFETY: the caller passes a live builder or NULL, used by this
        // thread only.
        let b = unsafe { out_mut(builder, "builder") }?;
        // SAFETY: the caller passes NUL-terminated strings or NULL.
        let (prefix, value) = unsafe { (c_str(prefix, "prefix")?, c_str(value, "value")?) };
        let p = AnyPrefix::parse(prefix, HostBits::Reject)
            .map_err(|e| Error::invalid(format!("prefix {prefix:?}: {e}")))?;
        b.table
            .insert(p, value.to_owned())
            .map_err(|e| Error::new(IpfibStatus::Build, e.to_string()))?;
        Ok(())
    })
}

/// Compile the routes added so far into a new table, `*out` (NULL on
/// error). The builder is unchanged: more routes may be added and
/// compiled again; the table does not depend on it.
///
/// Thread safety: not thread-safe on the builder; the table made is.
#[no_mangle]
pub unsafe extern "C" fn ipfib_builder_compile(
    builder: *const IpfibBuilder,
    out: *mut *mut IpfibTable,
) -> IpfibStatus {
    guard("ipfib_builder_compile", || {
        // SAFETY: the caller passes a writable `ipfib_table *` or NULL.
        let out = unsafe { out_mut(out, "out") }?;
        *out = std::ptr::null_mut();
        // SAFETY: the caller passes a live builder or NULL.
        let b = unsafe { args::ptr_ref(builder, "builder") }?;
        let t = IpfibTable::compile(&b.table, String::new())
            .map_err(|e| Error::new(IpfibStatus::Build, e))?;
        *out = Box::into_raw(Box::new(t));
        Ok(())
    })
}

/// Free a builder (NULL: nothing).
///
/// Thread safety: not thread-safe on the builder.
#[no_mangle]
pub unsafe extern "C" fn ipfib_builder_free(builder: *mut IpfibBuilder) {
    // SAFETY: a non-NULL builder comes from Box::into_raw in
    // ipfib_builder_new and is freed once (the caller's contract).
    unsafe { free_boxed(builder, "ipfib_builder_free") }
}

/// Batch lookups on up to `threads` threads (see `ipfib_core::par`): `look(start,
/// part)` writes the route indexes of addresses `start..start + part.len()`
/// into `part`, then each share's prefix lengths are filled from them
/// (`pl`: `None` when not wanted).
fn batch_on_threads(
    ri: &mut [u32],
    pl: Option<&mut [u8]>,
    threads: usize,
    look: impl Fn(usize, &mut [u32]) + Sync,
    len: impl Fn(u32) -> u8 + Sync,
) {
    if threads == 1 {
        // The one-thread calls (a DPDK burst of 32 among them): no share
        // list, no allocation.
        look(0, ri);
        if let Some(l) = pl {
            for (x, &o) in l.iter_mut().zip(ri.iter()) {
                *x = len(o);
            }
        }
        return;
    }
    let cuts = ipfib_core::par::shares(ri.len(), threads);
    let (mut ri, mut pl) = (ri, pl);
    let mut parts = Vec::with_capacity(cuts.len() - 1);
    for w in cuts.windows(2) {
        let k = w[1] - w[0];
        let (r, rest) = std::mem::take(&mut ri).split_at_mut(k);
        ri = rest;
        let l = pl.take().map(|p| {
            let (l, rest) = p.split_at_mut(k);
            pl = Some(rest);
            l
        });
        parts.push((w[0], r, l));
    }
    ipfib_core::par::run_shares(parts, |(start, r, l)| {
        look(start, r);
        if let Some(l) = l {
            for (x, &o) in l.iter_mut().zip(r.iter()) {
                *x = len(o);
            }
        }
    });
}

/// `n` writable prefix lengths at `prefix_len`, or `None` for NULL.
///
/// # Safety
/// `prefix_len` is NULL or points at `n` writable bytes that no other live
/// reference covers.
unsafe fn lengths_out<'a>(prefix_len: *mut u8, n: usize) -> Result<Option<&'a mut [u8]>, Error> {
    if prefix_len.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract (above).
    unsafe { slice_mut(prefix_len, n, "prefix_len") }.map(Some)
}

/// Drop what `Box::into_raw` made (NULL: nothing). A panic in a destructor
/// is caught: it would abort across `extern "C"`.
///
/// # Safety
/// `ptr` is NULL or came from `Box::into_raw(Box<T>)` and is not used or
/// freed again.
unsafe fn free_boxed<T>(ptr: *mut T, name: &'static str) {
    if ptr.is_null() {
        return;
    }
    let _ = guard(name, || {
        // SAFETY: the caller's contract (above).
        drop(unsafe { Box::from_raw(ptr) });
        Ok(())
    });
}

/// Longest-prefix match of one IPv4 address (`addr` in host byte order:
/// 10.1.2.3 is 0x0A010203): `*route_index` is the matching route's index
/// in the IPv4 family, or `IPFIB_NO_ROUTE`; `*prefix_len` (may be NULL
/// if not wanted) its prefix length, 0 on a miss.
///
/// Thread safety: any number of threads may look up in one table at once
/// (a table is immutable); no lock, no allocation.
#[no_mangle]
pub unsafe extern "C" fn ipfib_lookup_v4(
    table: *const IpfibTable,
    addr: u32,
    route_index: *mut u32,
    prefix_len: *mut u8,
) -> IpfibStatus {
    guard("ipfib_lookup_v4", || {
        // SAFETY: the caller passes a live table or NULL, and writable
        // outputs or NULL.
        disjoint(&[
            (route_index as usize, 4, "route_index"),
            (
                prefix_len as usize,
                usize::from(!prefix_len.is_null()),
                "prefix_len",
            ),
        ])?;
        let (t, ri) = unsafe { (table_ref(table)?, out_mut(route_index, "route_index")?) };
        let o = t.lookup_v4(addr);
        *ri = o;
        if !prefix_len.is_null() {
            // SAFETY: non-NULL, so writable (the caller's contract).
            *unsafe { out_mut(prefix_len, "prefix_len") }? = t.len_v4(o);
        }
        Ok(())
    })
}

/// Longest-prefix match of one IPv6 address: `addr` points at its 16
/// bytes in network order. The IPv6 table is searched as given: an
/// IPv4-mapped address (`::ffff:a.b.c.d`) is not unmapped here (use
/// `ipfib_lookup_text`, or unmap it and call `ipfib_lookup_v4`). Outputs
/// as `ipfib_lookup_v4`.
///
/// Thread safety: as `ipfib_lookup_v4`.
#[no_mangle]
pub unsafe extern "C" fn ipfib_lookup_v6(
    table: *const IpfibTable,
    addr: *const u8,
    route_index: *mut u32,
    prefix_len: *mut u8,
) -> IpfibStatus {
    guard("ipfib_lookup_v6", || {
        // SAFETY: the caller passes a live table or NULL, and writable
        // outputs or NULL.
        disjoint(&[
            (route_index as usize, 4, "route_index"),
            (
                prefix_len as usize,
                usize::from(!prefix_len.is_null()),
                "prefix_len",
            ),
        ])?;
        let (t, ri) = unsafe { (table_ref(table)?, out_mut(route_index, "route_index")?) };
        // SAFETY: the caller passes 16 readable bytes or NULL.
        let a = unsafe { slice(addr, 16, "addr") }?;
        let o = t.lookup_v6(be_u128(a));
        *ri = o;
        if !prefix_len.is_null() {
            // SAFETY: non-NULL, so writable (the caller's contract).
            *unsafe { out_mut(prefix_len, "prefix_len") }? = t.len_v6(o);
        }
        Ok(())
    })
}

/// Longest-prefix match of `n` IPv4 addresses (host byte order) through
/// the engine's batch search (32 addresses in flight): `route_index[i]`
/// and `prefix_len[i]` (`prefix_len` may be NULL if not wanted) as
/// `ipfib_lookup_v4` gives for `addrs[i]`. With `n` = 0 the pointers may
/// be NULL. The arrays must not overlap (checked) and must be aligned
/// for their types (`IPFIB_STATUS_INVALID_ARGUMENT` otherwise).
///
/// Thread safety: as `ipfib_lookup_v4`.
#[no_mangle]
pub unsafe extern "C" fn ipfib_lookup_v4_batch(
    table: *const IpfibTable,
    addrs: *const u32,
    n: usize,
    route_index: *mut u32,
    prefix_len: *mut u8,
) -> IpfibStatus {
    // SAFETY: the caller's contract (above) is `lookup_v4_batch`'s.
    unsafe {
        lookup_v4_batch(
            "ipfib_lookup_v4_batch",
            table,
            addrs,
            n,
            route_index,
            prefix_len,
            1,
        )
    }
}

/// As `ipfib_lookup_v4_batch`, on up to `threads` threads (0: one per CPU
/// this process may run on; at most 256), each answering a contiguous
/// share of at least 65,536 addresses (fewer addresses: the calling
/// thread alone). The answers are `ipfib_lookup_v4_batch`'s, whatever the
/// thread count; the call returns when every thread has ended. A thread
/// the system refuses is not an error (the others answer its share).
///
/// Thread safety: as `ipfib_lookup_v4`.
#[no_mangle]
pub unsafe extern "C" fn ipfib_lookup_v4_batch_mt(
    table: *const IpfibTable,
    addrs: *const u32,
    n: usize,
    route_index: *mut u32,
    prefix_len: *mut u8,
    threads: usize,
) -> IpfibStatus {
    // SAFETY: the caller's contract (above) is `lookup_v4_batch`'s.
    unsafe {
        lookup_v4_batch(
            "ipfib_lookup_v4_batch_mt",
            table,
            addrs,
            n,
            route_index,
            prefix_len,
            threads,
        )
    }
}

/// The body of `ipfib_lookup_v4_batch` and `_mt`.
///
/// # Safety
/// As `ipfib_lookup_v4_batch`.
unsafe fn lookup_v4_batch(
    name: &'static str,
    table: *const IpfibTable,
    addrs: *const u32,
    n: usize,
    route_index: *mut u32,
    prefix_len: *mut u8,
    threads: usize,
) -> IpfibStatus {
    guard(name, || {
        // SAFETY: the caller passes a live table or NULL.
        let t = unsafe { table_ref(table) }?;
        if n == 0 {
            return Ok(());
        }
        // SAFETY: the caller passes `n` readable addresses, `n` writable
        // indexes and `n` writable lengths or NULL.
        let (a, ri) = unsafe { batch_buffers(addrs, n, n, route_index, prefix_len) }?;
        // SAFETY: `n` writable bytes or NULL, checked disjoint from the
        // other buffers by `batch_buffers`.
        let pl = unsafe { lengths_out(prefix_len, n) }?;
        batch_on_threads(
            ri,
            pl,
            threads,
            |start, part| t.batch_v4(&a[start..start + part.len()], part),
            |o| t.len_v4(o),
        );
        Ok(())
    })
}

/// Longest-prefix match of `n` IPv6 addresses: `addrs` points at `16 * n`
/// bytes, address `i` at `addrs + 16 * i`, network order. As
/// `ipfib_lookup_v4_batch` otherwise (and as `ipfib_lookup_v6` for
/// IPv4-mapped addresses).
///
/// Thread safety: as `ipfib_lookup_v4`.
#[no_mangle]
pub unsafe extern "C" fn ipfib_lookup_v6_batch(
    table: *const IpfibTable,
    addrs: *const u8,
    n: usize,
    route_index: *mut u32,
    prefix_len: *mut u8,
) -> IpfibStatus {
    // SAFETY: the caller's contract (above) is `lookup_v6_batch`'s.
    unsafe {
        lookup_v6_batch(
            "ipfib_lookup_v6_batch",
            table,
            addrs,
            n,
            route_index,
            prefix_len,
            1,
        )
    }
}

/// As `ipfib_lookup_v6_batch`, on up to `threads` threads, as
/// `ipfib_lookup_v4_batch_mt`.
///
/// Thread safety: as `ipfib_lookup_v4`.
#[no_mangle]
pub unsafe extern "C" fn ipfib_lookup_v6_batch_mt(
    table: *const IpfibTable,
    addrs: *const u8,
    n: usize,
    route_index: *mut u32,
    prefix_len: *mut u8,
    threads: usize,
) -> IpfibStatus {
    // SAFETY: the caller's contract (above) is `lookup_v6_batch`'s.
    unsafe {
        lookup_v6_batch(
            "ipfib_lookup_v6_batch_mt",
            table,
            addrs,
            n,
            route_index,
            prefix_len,
            threads,
        )
    }
}

/// The body of `ipfib_lookup_v6_batch` and `_mt`.
///
/// # Safety
/// As `ipfib_lookup_v6_batch`.
unsafe fn lookup_v6_batch(
    name: &'static str,
    table: *const IpfibTable,
    addrs: *const u8,
    n: usize,
    route_index: *mut u32,
    prefix_len: *mut u8,
    threads: usize,
) -> IpfibStatus {
    guard(name, || {
        // SAFETY: the caller passes a live table or NULL.
        let t = unsafe { table_ref(table) }?;
        if n == 0 {
            return Ok(());
        }
        let bytes = n
            .checked_mul(16)
            .ok_or_else(|| Error::invalid(format!("n = {n} addresses overflow 16 * n bytes")))?;
        // SAFETY: the caller passes `16 * n` readable bytes, `n` writable
        // indexes and `n` writable lengths or NULL.
        let (a, ri) = unsafe { batch_buffers(addrs, bytes, n, route_index, prefix_len) }?;
        // SAFETY: `n` writable bytes or NULL, checked disjoint from the
        // other buffers by `batch_buffers`.
        let pl = unsafe { lengths_out(prefix_len, n) }?;
        let look = |start: usize, part: &mut [u32]| {
            let src = &a[16 * start..16 * (start + part.len())];
            if part.len() <= V6_SMALL {
                batch_v6_bytes::<V6_SMALL>(t, src, part);
            } else {
                batch_v6_bytes::<V6_CHUNK>(t, src, part);
            }
        };
        batch_on_threads(ri, pl, threads, look, |o| t.len_v6(o));
        Ok(())
    })
}

/// Longest-prefix match of an address written as text ("192.0.2.1",
/// "2001:db8::1"; surrounding whitespace ignored). An IPv4-mapped IPv6
/// address (`::ffff:a.b.c.d`) is looked up as the IPv4 address a.b.c.d,
/// as everywhere else in ipfib where the family is not given. `*family`
/// is `IPFIB_FAMILY_V4` or `IPFIB_FAMILY_V6` (the family the route index
/// belongs to); outputs otherwise as `ipfib_lookup_v4` (`prefix_len` may
/// be NULL). Text that is no address: `IPFIB_STATUS_INVALID_ARGUMENT`.
///
/// Thread safety: as `ipfib_lookup_v4`.
#[no_mangle]
pub unsafe extern "C" fn ipfib_lookup_text(
    table: *const IpfibTable,
    addr: *const c_char,
    family: *mut u8,
    route_index: *mut u32,
    prefix_len: *mut u8,
) -> IpfibStatus {
    guard("ipfib_lookup_text", || {
        // SAFETY: the caller passes a live table, a NUL-terminated string
        // and writable outputs, or NULL.
        disjoint(&[
            (family as usize, 1, "family"),
            (route_index as usize, 4, "route_index"),
            (
                prefix_len as usize,
                usize::from(!prefix_len.is_null()),
                "prefix_len",
            ),
        ])?;
        let (t, text, fam, ri) = unsafe {
            (
                table_ref(table)?,
                c_str(addr, "addr")?,
                out_mut(family, "family")?,
                out_mut(route_index, "route_index")?,
            )
        };
        let a = AnyAddr::parse(text).map_err(|e| Error::invalid(e.to_string()))?;
        let (f, o, l) = match a {
            AnyAddr::V4(x) => {
                let o = t.lookup_v4(x);
                (IPFIB_FAMILY_V4, o, t.len_v4(o))
            }
            AnyAddr::V6(x) => {
                let o = t.lookup_v6(x);
                (IPFIB_FAMILY_V6, o, t.len_v6(o))
            }
        };
        *fam = f;
        *ri = o;
        if !prefix_len.is_null() {
            // SAFETY: non-NULL, so writable (the caller's contract).
            *unsafe { out_mut(prefix_len, "prefix_len") }? = l;
        }
        Ok(())
    })
}

/// The number of routes of a family (`IPFIB_FAMILY_V4` or
/// `IPFIB_FAMILY_V6`) into `*count`: route indexes are `0 .. count - 1`,
/// in address order, a shorter prefix before the longer ones it covers.
///
/// Thread safety: any thread, concurrently with lookups.
#[no_mangle]
pub unsafe extern "C" fn ipfib_route_count(
    table: *const IpfibTable,
    family: u8,
    count: *mut usize,
) -> IpfibStatus {
    guard("ipfib_route_count", || {
        // SAFETY: the caller passes a live table and a writable count, or NULL.
        let (t, c) = unsafe { (table_ref(table)?, out_mut(count, "count")?) };
        *c = match family {
            IPFIB_FAMILY_V4 => t.routes_v4(),
            IPFIB_FAMILY_V6 => t.routes_v6(),
            _ => return Err(bad_family(family)),
        };
        Ok(())
    })
}

/// The value of route `route_index` of `family`: `*value` points at its
/// UTF-8 bytes, `*len` bytes, not NUL-terminated (print with
/// `printf("%.*s", (int)len, value)`); valid while the table lives.
/// `IPFIB_NO_ROUTE` or an index at or beyond the route count:
/// `IPFIB_STATUS_OUT_OF_RANGE`.
///
/// Thread safety: any thread, concurrently with lookups.
#[no_mangle]
pub unsafe extern "C" fn ipfib_route_value(
    table: *const IpfibTable,
    family: u8,
    route_index: u32,
    value: *mut *const c_char,
    len: *mut usize,
) -> IpfibStatus {
    guard("ipfib_route_value", || {
        // SAFETY: the caller passes a live table and writable outputs, or NULL.
        let (t, v, l) = unsafe {
            (
                table_ref(table)?,
                out_mut(value, "value")?,
                out_mut(len, "len")?,
            )
        };
        let text = match family {
            IPFIB_FAMILY_V4 => t.route_v4(route_index).map(|r| r.1),
            IPFIB_FAMILY_V6 => t.route_v6(route_index).map(|r| r.1),
            _ => return Err(bad_family(family)),
        }
        .ok_or_else(|| out_of_range(t, family, route_index))?;
        *v = text.as_ptr().cast();
        *l = text.len();
        Ok(())
    })
}

/// The prefix of IPv4 route `route_index`: `*addr` (host byte order) and
/// `*prefix_len`. Errors as `ipfib_route_value`.
///
/// Thread safety: any thread, concurrently with lookups.
#[no_mangle]
pub unsafe extern "C" fn ipfib_route_prefix_v4(
    table: *const IpfibTable,
    route_index: u32,
    addr: *mut u32,
    prefix_len: *mut u8,
) -> IpfibStatus {
    guard("ipfib_route_prefix_v4", || {
        // SAFETY: the caller passes a live table and writable outputs, or NULL.
        let (t, a, l) = unsafe {
            (
                table_ref(table)?,
                out_mut(addr, "addr")?,
                out_mut(prefix_len, "prefix_len")?,
            )
        };
        let (p, _) = t
            .route_v4(route_index)
            .ok_or_else(|| out_of_range(t, IPFIB_FAMILY_V4, route_index))?;
        *a = p.addr();
        *l = p.len();
        Ok(())
    })
}

/// The prefix of IPv6 route `route_index`: its 16 bytes (network order)
/// into `addr[0..16]`, and `*prefix_len`. Errors as `ipfib_route_value`.
///
/// Thread safety: any thread, concurrently with lookups.
#[no_mangle]
pub unsafe extern "C" fn ipfib_route_prefix_v6(
    table: *const IpfibTable,
    route_index: u32,
    addr: *mut u8,
    prefix_len: *mut u8,
) -> IpfibStatus {
    guard("ipfib_route_prefix_v6", || {
        // SAFETY: the caller passes a live table, 16 writable bytes and a
        // writable length, or NULL.
        let (t, a, l) = unsafe {
            (
                table_ref(table)?,
                slice_mut(addr, 16, "addr")?,
                out_mut(prefix_len, "prefix_len")?,
            )
        };
        let (p, _) = t
            .route_v6(route_index)
            .ok_or_else(|| out_of_range(t, IPFIB_FAMILY_V6, route_index))?;
        a.copy_from_slice(&p.addr().to_be_bytes());
        *l = p.len();
        Ok(())
    })
}

/// The prefix of route `route_index` of `family` as text
/// ("10.0.0.0/8", "2001:db8::/32", as the ipfib CLI writes it),
/// NUL-terminated, into `buf` of `size` bytes (`IPFIB_PREFIX_TEXT_MAX`
/// always suffices; a smaller buffer that cannot hold it:
/// `IPFIB_STATUS_INVALID_ARGUMENT`, and `buf` is left as it was).
/// Errors otherwise as `ipfib_route_value`.
///
/// Thread safety: any thread, concurrently with lookups.
#[no_mangle]
pub unsafe extern "C" fn ipfib_route_prefix_text(
    table: *const IpfibTable,
    family: u8,
    route_index: u32,
    buf: *mut c_char,
    size: usize,
) -> IpfibStatus {
    guard("ipfib_route_prefix_text", || {
        // SAFETY: the caller passes a live table or NULL.
        let t = unsafe { table_ref(table) }?;
        let text = match family {
            IPFIB_FAMILY_V4 => t.route_v4(route_index).map(|r| r.0.to_string()),
            IPFIB_FAMILY_V6 => t.route_v6(route_index).map(|r| r.0.to_string()),
            _ => return Err(bad_family(family)),
        }
        .ok_or_else(|| out_of_range(t, family, route_index))?;
        // SAFETY: the caller passes `size` writable bytes or NULL.
        let b = unsafe { slice_mut(buf.cast::<u8>(), size, "buf") }?;
        let Some((dst, nul)) = b
            .get_mut(..text.len() + 1)
            .and_then(|d| d.split_last_mut().map(|(nul, dst)| (dst, nul)))
        else {
            return Err(Error::invalid(format!(
                "buffer of {size} bytes cannot hold {text:?} and its NUL"
            )));
        };
        dst.copy_from_slice(text.as_bytes());
        *nul = 0;
        Ok(())
    })
}

fn bad_family(family: u8) -> Error {
    Error::invalid(format!(
        "family {family}: IPFIB_FAMILY_V4 (4) or IPFIB_FAMILY_V6 (6)"
    ))
}

fn out_of_range(t: &IpfibTable, family: u8, route_index: u32) -> Error {
    let count = if family == IPFIB_FAMILY_V4 {
        t.routes_v4()
    } else {
        t.routes_v6()
    };
    let what = if route_index == IPFIB_NO_ROUTE {
        "IPFIB_NO_ROUTE".to_string()
    } else {
        route_index.to_string()
    };
    Error::new(
        IpfibStatus::OutOfRange,
        format!("route index {what}: the IPv{family} family has {count} routes"),
    )
}

/// 16 bytes in network order (callers pass exactly 16).
#[inline]
fn be_u128(b: &[u8]) -> u128 {
    let mut a = [0u8; 16];
    a.copy_from_slice(b);
    u128::from_be_bytes(a)
}

/// A batch call's buffers: `elems` input elements at `addrs`, `n` route
/// indexes at `route_index`, and `n` lengths at `prefix_len` (may be NULL),
/// refused unless the three are disjoint (a `&` and a `&mut` over one byte
/// would be undefined behaviour) and non-NULL where required.
///
/// # Safety
///
/// As [`slice`] and [`slice_mut`] for each buffer: readable `elems`
/// elements, writable `n` indexes, and `n` writable bytes or NULL, live
/// for `'a`.
unsafe fn batch_buffers<'a, T>(
    addrs: *const T,
    elems: usize,
    n: usize,
    route_index: *mut u32,
    prefix_len: *mut u8,
) -> Result<(&'a [T], &'a mut [u32]), Error> {
    // NULL, alignment and sizes first, so that an impossible `n` or a NULL
    // buffer is named as such rather than as an overlap.
    args::check_buffer(addrs, elems, "addrs")?;
    args::check_buffer(route_index, n, "route_index")?;
    if !prefix_len.is_null() {
        args::check_buffer(prefix_len, n, "prefix_len")?;
    }
    disjoint(&[
        (
            addrs as usize,
            elems.saturating_mul(std::mem::size_of::<T>()),
            "addrs",
        ),
        (route_index as usize, n.saturating_mul(4), "route_index"),
        (
            prefix_len as usize,
            if prefix_len.is_null() { 0 } else { n },
            "prefix_len",
        ),
    ])?;
    // SAFETY: the caller's promise; `disjoint` checked the overlap.
    unsafe {
        Ok((
            slice(addrs, elems, "addrs")?,
            slice_mut(route_index, n, "route_index")?,
        ))
    }
}

/// The byte ranges `(start, length, name)` do not overlap (empty ones
/// never do): else an `INVALID_ARGUMENT` naming both.
fn disjoint(ranges: &[(usize, usize, &str)]) -> Result<(), Error> {
    for (i, &(a, la, na)) in ranges.iter().enumerate() {
        for &(b, lb, nb) in &ranges[i + 1..] {
            if la > 0 && lb > 0 && a < b.saturating_add(lb) && b < a.saturating_add(la) {
                return Err(Error::invalid(format!("{na} and {nb} overlap")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_outputs_are_refused() {
        assert!(disjoint(&[(100, 4, "a"), (104, 4, "b"), (0, 0, "c")]).is_ok());
        assert!(disjoint(&[(100, 4, "a"), (103, 4, "b")]).is_err());
        assert!(disjoint(&[(100, 8, "a"), (0, 0, "b"), (102, 1, "c")]).is_err());
        // Empty ranges never overlap, even at the same address.
        assert!(disjoint(&[(100, 0, "a"), (100, 4, "b")]).is_ok());
    }

    /// `*route_index` is below `ipfib_route_count` or `IPFIB_NO_ROUTE`: a
    /// compiled table file whose engine answers past its routes is refused
    /// when opened, with a message naming the place, never handed to C.
    #[test]
    fn a_compiled_file_answering_past_its_routes_is_refused() {
        use ipfib_core::engine::auto::{AutoOptions, Kind};
        use ipfib_core::image::{reseal, to_bytes};
        use std::ffi::{CStr, CString};
        let mut t = ipfib_core::table::Table::new();
        t.insert("10.0.0.0/8".parse().unwrap(), "ten".to_string())
            .unwrap();
        let opts = AutoOptions {
            force: Some((Kind::Poptrie, Some(8))),
            calibrate: false,
            ..AutoOptions::default()
        };
        let good = to_bytes(&t, &opts, "capi test").unwrap();
        // The first direct-pointing leaf of answer 0 (`0x8000_0000`, in the
        // IPv4 value engine) made to answer 5, the file resealed.
        let mut bad = good.clone();
        let at = (64..bad.len())
            .step_by(4)
            .find(|&i| bad[i..i + 4] == 0x8000_0000u32.to_le_bytes())
            .unwrap();
        bad[at..at + 4].copy_from_slice(&0x8000_0005u32.to_le_bytes());
        reseal(&mut bad);
        let dir = std::env::temp_dir().join(format!("ipfib-capi-answers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let open = |bytes: &[u8], name: &str| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            let c_path = CString::new(path.to_str().unwrap()).unwrap();
            let mut out: *mut IpfibTable = std::ptr::null_mut();
            // SAFETY: a NUL-terminated path, NULL format and value, a
            // writable `out`.
            let status = unsafe {
                ipfib_table_open(
                    c_path.as_ptr(),
                    std::ptr::null(),
                    std::ptr::null(),
                    0,
                    &mut out,
                )
            };
            // SAFETY: NUL-terminated, valid until the next error here.
            let error = unsafe { CStr::from_ptr(ipfib_last_error()) }
                .to_string_lossy()
                .into_owned();
            (status, out, error)
        };
        let (status, out, _) = open(&good, "good.ipfib");
        assert_eq!(status, IpfibStatus::Ok);
        let mut ri = 0u32;
        // SAFETY: a live table and a writable output; NULL prefix_len.
        let st = unsafe { ipfib_lookup_v4(out, 0x0a00_0001, &mut ri, std::ptr::null_mut()) };
        assert_eq!((st, ri), (IpfibStatus::Ok, 0));
        // SAFETY: from ipfib_table_open, freed once.
        unsafe { ipfib_table_free(out) };
        let (status, out, error) = open(&bad, "bad.ipfib");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(status, IpfibStatus::Parse, "{error}");
        assert!(out.is_null());
        assert!(
            error.contains("bad.ipfib") && error.contains("answer 5, not below 1"),
            "{error}"
        );
    }
}
