//! Readers for ipfib: route tables from files into [`Route`]s.
//!
//! ```text
//!  path ──► input.rs ──────► read.rs ─────────► parse.rs ──────► Vec<Route>
//!           open, sniff       line loop, Auto    one line to        or a callback
//!           gzip by magic     resolution, errors (prefix, value)    per route
//!           bytes             with file:line
//! ```
//!
//! - `input.rs`: [`open_maybe_compressed`]: gzip is detected by its magic
//!   bytes (`1f 8b`), never by file name; bzip2, zstd and xz are recognised
//!   and refused by name.
//! - `read.rs`: [`read_routes`], [`for_each_route`] and their `_from`
//!   variants for in-memory input: the line loop.
//! - `parse.rs`: the text and ipasn line grammars.
//! - `format.rs`: [`Format`] and `Auto` sniffing.
//! - `error.rs`: [`ReadError`], naming the file and 1-based line.
//! - `trace.rs`: [`read_trace`]: benchmark address traces (binary
//!   `IPFIBTR1` or text), so ipfib and its peers look up the same addresses.
//!
//! # Formats
//!
//! - **text** (docs/architecture.md §4): `PREFIX/LEN VALUE` per line,
//!   separated by any ASCII whitespace; a token starting with `#` begins a
//!   comment to the end of the line (a whole line or after the value);
//!   blank lines are skipped. VALUE is any word without `#` (an ASN, a next
//!   hop address, a name) and is kept as written. IPv4 and IPv6 may be mixed.
//! - **ipasn** (pyasn's `.dat`): `;` comment lines, then `PREFIX/LEN<TAB>ASN`
//!   (any whitespace accepted); the ASN must be a decimal integer below 2^32.
//! - **auto**: ipasn if the first non-blank line starts with `;`, else text.
//!   A data line `PREFIX/LEN<TAB>ASN` reads the same in both formats, so the
//!   only thing worth telling apart is the comment syntax, and the `;` header
//!   every pyasn file starts with tells it. Input whose first line holds
//!   control bytes (an MRT dump) is refused as binary.
//! - **pfx2as**, **mrt**: named but not read yet:
//!   [`ReadError::UnsupportedFormat`].
//!
//! Lines may end in `\n` or `\r\n`; a UTF-8 byte order mark on the first
//! line is ignored. A prefix with host bits set is an error unless
//! [`LoadOptions::host_bits`] is [`HostBits::Mask`]. Duplicate prefixes are
//! all returned in file order: the caller inserts in order, so the later
//! line wins.
//!
//! # Errors and threads
//!
//! Nothing here panics on any input: every problem is a [`ReadError`] that
//! names the file as given and, for a bad line, its 1-based number and text
//! (cut to 80 characters). Everything is plain data, `Send` and `Sync`; the
//! readers hold no global state.

#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

mod error;
mod format;
mod input;
mod parse;
mod read;
mod trace;

pub use error::{ReadError, MAX_QUOTED_CHARS};
pub use format::{Format, UnknownFormat};
pub use input::open_maybe_compressed;
pub use ipfib::prefix::{AnyPrefix, HostBits};
pub use read::{
    for_each_route, for_each_route_from, read_routes, read_routes_from, LoadOptions, LoadedRoutes,
    ReadSummary, Route,
};
pub use trace::{read_trace, Trace, TraceError, TRACE_MAGIC};
