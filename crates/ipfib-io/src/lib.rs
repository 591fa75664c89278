//! Readers for ipfib: route tables and update streams from files.
//!
//! ```text
//!  path ─► input.rs ─► sniff.rs ─┬─► read.rs + parse.rs ──────────► Vec<Route>
//!          gzip/bzip2/  --format  │   text, ipasn, pfx2as lines      (one value per prefix)
//!          zstd by      auto      ├─► mrt/ (frame, body, rib) ─────►    + Report
//!          magic bytes            │   MRT via bgp/ (our decoder),      (damage, skipped,
//!                                 │   policy.rs picks the value         MRT stats)
//!                                 ├─► mmdb/ (tree, decode, render) ─► Vec<Route>
//!                                 │   MaxMind DB, read whole            (record JSON or a field)
//!                                 ├─► ranges/ (fields, paint) ─────►
//!                                 │   FIRST,LAST,VALUE to prefixes
//!                                 └─► linx.rs: text updates ─┐
//!                         mrt/updates.rs: BGP4MP ────────────┴─► Event iterator (update.rs)
//! ```
//!
//! Where to start: [`open`] (open.rs) is the front door the CLI, the C ABI
//! and Python share: a compiled table file mapped, anything else loaded;
//! [`load_table`] (table.rs) loads any format leniently and says what it
//! skipped; [`read_routes`] is the strict line reader for
//! text, ipasn and pfx2as; [`read_updates`] iterates update streams.
//!
//! - `input.rs`: [`open_maybe_compressed`]: gzip, bzip2 and zstd by magic
//!   bytes, never by file name; xz refused by name.
//! - `sniff.rs`: `--format auto`, from the decompressed head.
//! - `read.rs`, `parse.rs`: the line loop and the text / ipasn / pfx2as
//!   line grammars.
//! - `mrt/`: `frame.rs` (our own framing: offsets, bounded lengths),
//!   `body.rs` (bodies sorted for the loops), `rib.rs` (per-peer routes
//!   to one value), `updates.rs` (BGP4MP to events), `mod.rs` (the loops).
//! - `bgp/`: the one BGP decoder (UPDATE, OPEN, NLRI, path attributes, AS
//!   paths; MRT bodies that carry BGP), used by the MRT readers here and by
//!   the RIB's BMP sessions and MRT loader ([`bgp`]).
//! - `policy.rs`: [`ValuePolicy`]: origin-asn, next-hop of a peer, peer-count.
//! - `linx.rs`: `UNIXTIME a|w PREFIX NEXTHOP` update lines.
//! - `mmdb/`: MaxMind DB files: `tree.rs` (metadata, the search tree walked
//!   with its aliases under a node-visit bound), `decode.rs` (the data
//!   section under the spec's resource limits), `render.rs` (a record as
//!   JSON, or a field by dot path); [`load_mmdb_fields`] for several fields.
//! - `ranges/`: `FIRST,LAST,VALUE` range tables: `fields.rs` (CSV / TSV
//!   columns, quotes), `paint.rs` (later range wins, minimal CIDR cover),
//!   `mod.rs` (the line loop).
//! - `update.rs`: [`Event`], [`Update`]: the typed update stream.
//! - `open.rs`: [`open`], [`Options`]: what each front end asks of it.
//! - `options.rs`: [`TableOptions`], [`TableLoad`].
//! - `report.rs`: [`Report`] and its messages ([`Report::problems`]);
//!   `stats.rs`: each format's statistics in it ([`MrtStats`],
//!   [`RangeStats`], [`MmdbInfo`]); `damage.rs`: [`Damage`];
//!   `error.rs`: [`ReadError`].
//! - `format.rs`: [`Format`].
//!
//! Modules import one another as a DAG: the leaves (`format`, `damage`,
//! `stats`, `policy`, `update`) import nothing of the crate; `error`,
//! `input`, `parse`, `read`, `report`, `options` build on them; the readers
//! (`linx`, `mrt/`, `mmdb/`, `ranges/`) on those; `sniff` on the readers'
//! leaf modules (`mrt/frame.rs`, `ranges/fields.rs`); `table` dispatches to
//! the readers and `open` sits on top.
//! - `mmdb_write.rs` (+ `mmdb_write/`): [`mmdb_write::write`]: a table as
//!   a MaxMind DB file (LPM flattened into the MMDB search tree).
//! - `trace.rs`: [`read_trace`]: benchmark address traces (binary
//!   `IPFIBTR1` or text), so ipfib and its peers look up the same addresses.
//!
//! # Formats
//!
//! - **text** (docs/architecture.md §4): `PREFIX/LEN VALUE` per line,
//!   separated by any ASCII whitespace; a token starting with `#` begins a
//!   comment to the end of the line; blank lines are skipped. VALUE is any
//!   word without `#`, kept as written. IPv4 and IPv6 may be mixed.
//! - **ipasn** (pyasn's `.dat`): `;` comment lines, then `PREFIX/LEN<TAB>ASN`
//!   (any whitespace accepted); the ASN must be a decimal integer below 2^32.
//! - **pfx2as** (CAIDA): `ADDR<TAB>LEN<TAB>ASN`, ASN possibly `_`-joined
//!   (multi-origin) and `,`-joined (AS set), kept as written. (The shared
//!   `routeviews-*.pfx2as.txt.gz` files are `PREFIX/LEN ASN`: text.)
//! - **mrt**: RFC 6396 TABLE_DUMP, TABLE_DUMP_V2 (PEER_INDEX_TABLE,
//!   RIB_IPV4/IPV6_UNICAST, their ADD-PATH variants, unicast RIB_GENERIC),
//!   BGP4MP / BGP4MP_ET (messages, AS4, ADD-PATH, state changes). One value
//!   per prefix by [`ValuePolicy`].
//! - **updates**: `UNIXTIME a|w PREFIX/LEN NEXTHOP` (the LINX files).
//! - **mmdb**: MaxMind DB; every network of the search tree, valued by its
//!   record as compact JSON or by one field ([`TableOptions::field`]);
//!   `auto` recognises it by the metadata marker at the file's end.
//! - **ranges**: `FIRST,LAST,VALUE...` as CSV, TSV or blank-separated
//!   columns (quotes as in CSV), the value from
//!   [`TableOptions::value_column`]; overlapping ranges: the later line
//!   wins. Read only through [`load_table`] (the ranges are painted whole
//!   before they become prefixes).
//!
//! Lines may end in `\n` or `\r\n`; a UTF-8 byte order mark on the first
//! line is ignored; no line may exceed [`MAX_LINE_BYTES`]. A prefix with
//! host bits set is an error unless [`HostBits::Mask`] (MRT prefixes are
//! always masked, as BGP speakers do).
//!
//! # Errors, damage and threads
//!
//! Nothing here panics on any input, loops without progress, or allocates
//! more than a bounded amount per length field (MRT bodies at most
//! [`MAX_BODY`], grown as bytes arrive; lines at most [`MAX_LINE_BYTES`],
//! in every line reader: tables, update streams, text traces). Our own code
//! is held to that by lints (no `unwrap`, `expect`, `panic!` or unchecked
//! indexing outside tests; the test command runs clippy). Each MRT record's
//! decoding still runs under `catch_unwind`, so a bug that slipped through
//! costs one record: a panic becomes [`ReadError::ParserPanic`] with the
//! file and the record's byte offset (the record is skipped, or in strict
//! mode the read stops). The panic hook still prints the panic to stderr; with
//! `panic = "abort"` it cannot be caught.
//! Errors name the file and the 1-based line (text) or the byte offset in
//! the decompressed stream (MRT). Everything is plain data, `Send`; the
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

pub mod bgp;
mod damage;
mod error;
mod format;
mod input;
mod linx;
mod mmdb;
pub mod mmdb_write;
mod mrt;
mod open;
mod options;
mod parse;
mod policy;
mod ranges;
mod read;
mod report;
mod sniff;
mod stats;
mod table;
mod trace;
mod update;

pub use damage::{Damage, DamageKind};
pub use error::{ReadError, MAX_QUOTED_CHARS};
pub use format::{Format, UnknownFormat};
pub use input::{open_maybe_compressed, Compression, MAX_LINE_BYTES};
pub use ipfib::prefix::{AnyPrefix, HostBits};
/// MaxMind DB: the field path of `--value`, what `info` shows, and the
/// resource limits (per record: depth, values, payload; per tree: node
/// visits per node).
pub use mmdb::{
    FieldPath, MmdbNetwork, MAX_DEPTH as MMDB_MAX_DEPTH, MAX_PAYLOAD as MMDB_MAX_PAYLOAD,
    MAX_VALUES as MMDB_MAX_VALUES, MAX_VISITS_PER_NODE as MMDB_MAX_VISITS_PER_NODE,
    VALUE_BYTES_FLOOR as MMDB_VALUE_BYTES_FLOOR,
    VALUE_BYTES_PER_FILE_BYTE as MMDB_VALUE_BYTES_PER_FILE_BYTE,
};
/// MRT framing (RFC 6396 §2) with byte offsets and bounded bodies, for
/// readers of MRT records other than ours (the RIB's `mrt::load`).
pub use mrt::{Frame, Framer, MAX_BODY};
pub use open::{open, probe_compiled, Compiled, OpenError, Opened, Options};
pub use options::{TableLoad, TableOptions};
pub use policy::{PeerSelector, ValuePolicy, VALUE_POLICY_NAMES};
pub use ranges::DEFAULT_VALUE_COLUMN;
pub use read::{
    for_each_route, for_each_route_from, read_routes, read_routes_from, LoadOptions, LoadedRoutes,
    ReadSummary, Route,
};
pub use report::{Report, KEPT_ERRORS};
pub use stats::{MmdbInfo, MrtStats, PeerInfo, RangeStats, ReduceStats};
pub use table::{
    load_mmdb_fields, load_table, load_table_from, load_table_with_progress, read_updates,
    read_updates_from, UpdateReader, MMDB_SNIFF_BYTES, MMDB_STREAM_BYTES,
};
pub use trace::{read_trace, Trace, TraceError, TRACE_MAGIC};
pub use update::{AsPath, AsSegment, Change, Event, PeerId, Update, ESTABLISHED};
