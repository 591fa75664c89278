//! Writing a route table as a MaxMind DB (`.mmdb`) file, from the format's
//! specification (MaxMind DB File Format Specification 2.0).
//!
//! ```text
//!  RouteTable<u32> ─┐ value.rs: each distinct value -> record (Value),
//!  RouteTable<u128> ┤           deduplicated by encoding -> record id
//!                   ├─► tree.rs: LPM flattened to disjoint leaves; IPv4
//!                   │   tree spliced at ::/96 and aliased at ::ffff:0:0/96
//!                   ├─► data.rs: records used by the tree, written once,
//!                   │   repeated parts as pointers
//!                   └─► [tree][16 zero bytes][data][marker][metadata]
//! ```
//!
//! What a reader gets (the contract; the Python tests check it against the
//! official reader, PyPI `maxminddb`, address for address):
//! - every address gets the record of the table's longest matching prefix,
//!   and an address no route covers gets no record;
//! - the network the reader reports is a leaf of the tree: where the table
//!   nests prefixes it is the part of the matching prefix not covered by a
//!   more specific route (a longer prefix), always inside the matching
//!   prefix. The record, not the prefix length, is what is preserved.
//!   [`Options::merge_neighbours`] merges neighbouring networks of
//!   different routes with the same record (about 45% smaller for the
//!   RouteViews table; a network may then span those routes);
//! - `ip_version` 6 by default, also for a table without IPv6 routes: the
//!   official readers refuse IPv6 addresses in an `ip_version` 4 database,
//!   where ipfib answers them (a miss, or for `::ffff:a.b.c.d` the IPv4
//!   answer). [`IpVersion::Four`] writes the IPv4-only layout instead
//!   (refused when the table has IPv6 routes);
//! - IPv4 lives at `::/96` (where the readers' IPv4 lookups start: 96 zero
//!   bits from the root), and `::ffff:0:0/96` points at the same subtree,
//!   because ipfib looks up an IPv4-mapped address as its IPv4 address:
//!   `ipfib lookup ::ffff:1.2.3.4` and the MMDB agree. IPv6 routes inside
//!   `::ffff:0:0/96` are unreachable in ipfib too, and not written;
//! - IPv6 addresses inside `::/96` (the deprecated IPv4-compatible range)
//!   answer from the IPv4 routes: the format has one place for both. IPv6
//!   routes inside `::/96` are not written, and a covering IPv6 route such
//!   as `::/0` does not answer there; addresses there that no IPv6 route
//!   covers get their IPv4 answer. [`Stats::v6_compat_overridden`] says
//!   whether an IPv6 route's answer is lost that way (checked exactly, by
//!   comparing the two subtrees), and the CLI warns then;
//! - no `2002::/16` (6to4) alias: ipfib does not unmap 6to4 addresses.
//!
//! Records ([`RecordMode`], value.rs): by default a value is written as a
//! one-entry map `{field: V}` (`value`, or e.g. `autonomous_system_number`
//! for GeoLite2-ASN-style records), V an unsigned integer when the value is
//! one (canonical decimal) and a string otherwise; a value that is a JSON
//! object (the MMDB reader's rendering of a record) is written as that
//! record, so MMDB -> ipfib -> MMDB keeps the records.
//!
//! Record size: the smallest of 24, 28 and 32 bits that holds the node
//! count plus the data section (or a larger one asked for).
//!
//! Memory: the routes as sorted entries (24 bytes per IPv6 route), the
//! nodes (24 bytes each while building), the records, and the tree and
//! data sections in memory before they are written. Nothing here panics
//! on any table; limits of the format (4 GiB of data, 16,843,036-byte
//! strings, 2^32 nodes) are errors.

mod data;
mod tree;
mod value;

pub use data::MAX_SIZE;
pub use value::{parse_json, record_of, RecordMode, Value, MAX_JSON_DEPTH};

use data::DataSection;
use ipfib::addr::Addr;
use ipfib::route_table::RouteTable;
use ipfib::table::Table;
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use tree::{Arena, Entry, Kind, Rec};

/// The bytes that start the metadata section.
pub const METADATA_MARKER: &[u8] = b"\xab\xcd\xefMaxMind.com";

/// Most bytes the metadata section may have, marker included (spec).
pub const METADATA_MAX: usize = 128 * 1024;

/// The search tree's address family (metadata `ip_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IpVersion {
    /// IPv4 at `::/96`, aliased at `::ffff:0:0/96`, with the IPv6 routes.
    #[default]
    Six,
    /// IPv4 only: the table must have no IPv6 routes.
    Four,
}

/// How to write the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub record: RecordMode,
    /// The map key of [`RecordMode::Field`] records (and of the values that
    /// are not JSON objects under [`RecordMode::Auto`]).
    pub field: String,
    /// Metadata `database_type`.
    pub database_type: String,
    /// Metadata `description` (in English, `{"en": ...}`).
    pub description: String,
    pub ip_version: IpVersion,
    /// At least this record size (24, 28 or 32); `None`: the smallest
    /// that fits.
    pub record_size: Option<u16>,
    /// Metadata `build_epoch` (Unix seconds).
    pub build_epoch: u64,
    /// Merge neighbouring networks with equal records even where they are
    /// different routes' (see the module documentation).
    pub merge_neighbours: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            record: RecordMode::Auto,
            field: "value".to_string(),
            database_type: "ipfib".to_string(),
            description: "ipfib route table".to_string(),
            ip_version: IpVersion::Six,
            record_size: None,
            build_epoch: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            merge_neighbours: false,
        }
    }
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stats {
    pub ip_version: u16,
    pub record_size: u16,
    pub node_count: u32,
    /// Distinct data records written (each once).
    pub records: u64,
    pub data_bytes: u64,
    pub file_bytes: u64,
    /// Routes of the table, per family.
    pub routes_v4: u64,
    pub routes_v6: u64,
    /// IPv6 routes inside `::ffff:0:0/96`, not written: that range is an
    /// alias of the IPv4 tree, as ipfib's lookups unmap those addresses.
    pub v6_mapped_routes: u64,
    /// IPv6 routes inside `::/96`, not written: the IPv4 tree sits there.
    pub v6_compat_routes: u64,
    /// Some IPv6 address inside `::/96` that the table's IPv6 routes
    /// answer gets another answer from the file (its IPv4 one, or none).
    pub v6_compat_overridden: bool,
}

/// Why a table could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A value has no record (under the record mode: not JSON, or JSON
    /// the format cannot hold); `prefix` is a route with that value.
    #[error("route {prefix}: {reason}")]
    Value { prefix: String, reason: String },
    #[error("an ip_version 4 MaxMind DB cannot hold the table's {0} IPv6 routes")]
    Ipv6Routes(u64),
    #[error("record size {asked}: {reason}")]
    RecordSize { asked: u16, reason: String },
    /// A limit of the format (node count, data size).
    #[error("too large for a MaxMind DB: {0}")]
    TooLarge(String),
    #[error("writing the MaxMind DB: {0}")]
    Io(#[from] io::Error),
    /// Creating, writing or renaming the output file failed.
    #[error("{}: {source}", .path.display())]
    File { path: PathBuf, source: io::Error },
}

/// Write both families of `table` (see [`write()`]).
pub fn write_table<W: Write, V: AsRef<str>>(
    out: W,
    table: &Table<V>,
    opts: &Options,
) -> Result<Stats, WriteError> {
    write(out, &table.v4, &table.v6, opts)
}

/// Write the routes of `v4` and `v6` as a MaxMind DB to `out` (the module
/// documentation says what readers get), each value's record made by
/// [`record_of`] under `opts.record` and `opts.field`. Nothing is written
/// before the whole file is built, so an error leaves `out` untouched
/// unless writing itself fails.
pub fn write<W: Write, V: AsRef<str>>(
    out: W,
    v4: &RouteTable<u32, V>,
    v6: &RouteTable<u128, V>,
    opts: &Options,
) -> Result<Stats, WriteError> {
    write_with(out, v4, v6, opts, |v: &V| {
        let text = v.as_ref();
        record_of(text, opts.record, &opts.field)
            .map_err(|e| format!("value {}: {e}", value::quote(text)))
    })
}

/// [`write()`] for values of any type: `record` makes each distinct value's
/// record (called once per distinct value; its error becomes
/// [`WriteError::Value`] with a route of that value).
pub fn write_with<W: Write, V>(
    mut out: W,
    v4: &RouteTable<u32, V>,
    v6: &RouteTable<u128, V>,
    opts: &Options,
    mut record: impl FnMut(&V) -> Result<Value, String>,
) -> Result<Stats, WriteError> {
    if let Some(s) = opts.record_size {
        if ![24, 28, 32].contains(&s) {
            return Err(WriteError::RecordSize {
                asked: s,
                reason: "must be 24, 28 or 32".into(),
            });
        }
    }
    if opts.ip_version == IpVersion::Four && !v6.is_empty() {
        return Err(WriteError::Ipv6Routes(v6.len() as u64));
    }
    let mut records = Records::default();
    let e4 = entries(v4, &mut records, &mut record)?;
    let e6 = entries(v6, &mut records, &mut record)?;
    let too_many = |_| WriteError::TooLarge("more than 2^32 search tree nodes".into());

    let mut stats = Stats {
        routes_v4: v4.len() as u64,
        routes_v6: v6.len() as u64,
        ..Stats::default()
    };
    let mut arena = Arena {
        merge_routes: opts.merge_neighbours,
        ..Arena::default()
    };
    // The IPv4 root is always a node (see tree.rs: the readers' IPv4 start).
    let r4 = match arena.build(&e4, 0, 0u32, Rec::Empty).map_err(too_many)?.0 {
        node @ Rec::Node(_) => node,
        leaf => arena.push([leaf, leaf]).map_err(too_many)?,
    };
    let root = match opts.ip_version {
        IpVersion::Four => r4,
        IpVersion::Six => {
            let v6 = v6_entries(e6, r4, &arena, &mut stats).map_err(too_many)?;
            arena.build(&v6, 0, 0u128, Rec::Empty).map_err(too_many)?.0
        }
    };
    stats.ip_version = if opts.ip_version == IpVersion::Four {
        4
    } else {
        6
    };
    // The root was built last: it becomes node 0 (tree::encode).
    debug_assert_eq!(root, Rec::Node(arena.nodes.len() as u32 - 1));

    // The data section: the records the tree uses, in the order it first
    // refers to them.
    let mut data = DataSection::default();
    let mut offsets: Vec<Option<u32>> = vec![None; records.values.len()];
    let mut max_offset = 0u64;
    for node in arena.nodes.iter().rev() {
        for r in node {
            if let Rec::Data(id) = *r {
                let slot = offsets
                    .get_mut(id as usize)
                    .ok_or_else(|| WriteError::TooLarge("record id out of range".into()))?;
                if slot.is_none() {
                    let v = records
                        .values
                        .get(id as usize)
                        .ok_or_else(|| WriteError::TooLarge("record id out of range".into()))?;
                    let o = data
                        .record(v)
                        .map_err(|e| WriteError::TooLarge(e.to_string()))?;
                    max_offset = max_offset.max(o as u64);
                    *slot = Some(o);
                    stats.records += 1;
                }
            }
        }
    }

    let node_count = arena.nodes.len() as u64;
    let needed = [24u16, 28, 32]
        .into_iter()
        .find(|&s| node_count + 16 + max_offset < 1u64 << s)
        .ok_or_else(|| {
            WriteError::TooLarge("nodes and data past what 32-bit records can point at".into())
        })?;
    let record_size = match opts.record_size {
        Some(s) if s < needed => {
            return Err(WriteError::RecordSize {
                asked: s,
                reason: format!("too small for {node_count} nodes and the data: {needed} needed"),
            })
        }
        Some(s) => s,
        None => needed,
    };
    stats.record_size = record_size;
    stats.node_count = node_count as u32;
    stats.data_bytes = data.bytes.len() as u64;

    let mut tree_bytes = Vec::new();
    let offset_of = |id: u32| -> u64 {
        // Every record id the tree holds was given an offset above.
        offsets
            .get(id as usize)
            .copied()
            .flatten()
            .map_or(0, u64::from)
    };
    tree::encode(&arena, record_size, &offset_of, &mut tree_bytes);
    drop(arena);
    let metadata = metadata(opts, &stats)?;

    out.write_all(&tree_bytes)?;
    out.write_all(&[0u8; 16])?;
    out.write_all(&data.bytes)?;
    out.write_all(METADATA_MARKER)?;
    out.write_all(&metadata)?;
    out.flush()?;
    stats.file_bytes =
        (tree_bytes.len() + 16 + data.bytes.len() + METADATA_MARKER.len() + metadata.len()) as u64;
    Ok(stats)
}

/// Records, each distinct one once (two values with the same record, such
/// as `5` and `{"value":5}`, share it).
#[derive(Default)]
struct Records {
    by_encoding: HashMap<Vec<u8>, u32>,
    values: Vec<Value>,
}

impl Records {
    fn intern(&mut self, v: Value) -> Result<u32, String> {
        let mut key = Vec::new();
        data::plain(&v, &mut key).map_err(|e| e.to_string())?;
        if let Some(&id) = self.by_encoding.get(&key) {
            return Ok(id);
        }
        let id = u32::try_from(self.values.len()).map_err(|_| "too many records".to_string())?;
        self.values.push(v);
        self.by_encoding.insert(key, id);
        Ok(id)
    }
}

/// The table's routes as sorted entries with record ids.
fn entries<A: Addr, V>(
    t: &RouteTable<A, V>,
    records: &mut Records,
    record: &mut impl FnMut(&V) -> Result<Value, String>,
) -> Result<Vec<Entry<A>>, WriteError> {
    // Value index -> record id, filled on first sight.
    let mut ids: Vec<Option<u32>> = vec![None; t.values().capacity_used()];
    let mut out = Vec::with_capacity(t.len());
    // `iter_indices` walks in address order, the shorter prefix first.
    for (p, vi) in t.iter_indices() {
        let known = ids.get(vi as usize).copied().flatten();
        let id = match known {
            Some(id) => id,
            None => {
                let made = match t.values().get(vi) {
                    Some(v) => record(v),
                    None => Err("a route without a value".to_string()),
                };
                let id =
                    made.and_then(|v| records.intern(v))
                        .map_err(|reason| WriteError::Value {
                            prefix: p.to_string(),
                            reason,
                        })?;
                if let Some(slot) = ids.get_mut(vi as usize) {
                    *slot = Some(id);
                }
                id
            }
        };
        out.push(Entry {
            addr: p.addr(),
            len: p.len(),
            kind: Kind::Route(id),
        });
    }
    Ok(out)
}

/// Write the file at `path` with `write` through a temporary file in the
/// same directory, renamed over `path` once complete and on disk (removed
/// on any failure): a failed export never leaves a partial file, and
/// leaves an existing one as it was.
pub fn write_file_with<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T, WriteError>,
) -> Result<T, WriteError> {
    let file_err = |source: io::Error| WriteError::File {
        path: path.to_path_buf(),
        source,
    };
    let target = ipfib::image::replace_target(path).map_err(file_err)?;
    let path = target.as_path();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let file = File::options()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(file_err)?;
    let result = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let v = write(&mut w).map_err(|e| match e {
            WriteError::Io(source) => file_err(source),
            other => other,
        })?;
        let file = w.into_inner().map_err(|e| file_err(e.into_error()))?;
        file.sync_all().map_err(file_err)?;
        fs::rename(&tmp, path).map_err(file_err)?;
        Ok(v)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// [`write_table`] to the file at `path` (see [`write_file_with`]).
pub fn write_table_file<V: AsRef<str>>(
    path: &Path,
    table: &Table<V>,
    opts: &Options,
) -> Result<Stats, WriteError> {
    write_file_with(path, |w| write_table(w, table, opts))
}

/// `::ffff:0:0/96`, the IPv4-mapped addresses.
const MAPPED: u128 = 0xffff << 32;

/// The IPv6 entries with the IPv4 tree `r4` spliced in at `::/96` and
/// `::ffff:0:0/96` (routes inside both left out and counted), and whether
/// that overrides IPv6 answers inside `::/96`.
fn v6_entries(
    e6: Vec<Entry<u128>>,
    r4: Rec,
    arena: &Arena,
    stats: &mut Stats,
) -> Result<Vec<Entry<u128>>, tree::TooManyNodes> {
    let inside = |e: &Entry<u128>, base: u128| e.len >= 96 && e.addr >> 32 == base >> 32;
    let mut compat = Vec::new();
    let mut kept = Vec::with_capacity(e6.len() + 2);
    // The IPv6 answer where `::/96` starts: the longest route covering it.
    let mut cover = Rec::Empty;
    for e in e6 {
        if inside(&e, 0) {
            compat.push(e);
        } else if inside(&e, MAPPED) {
            stats.v6_mapped_routes += 1;
        } else {
            if e.addr == 0 {
                if let Kind::Route(id) = e.kind {
                    cover = Rec::Data(id);
                }
            }
            kept.push(e);
        }
    }
    stats.v6_compat_routes = compat.len() as u64;
    let mut view = Arena::default();
    let (v6_answer, _) = view.build(&compat, 96, 0u128, cover)?;
    stats.v6_compat_overridden = !tree::keeps_answers(arena, r4, &view, v6_answer);
    for base in [0, MAPPED] {
        let at = kept.partition_point(|e| (e.addr, e.len) < (base, 96));
        kept.insert(
            at,
            Entry {
                addr: base,
                len: 96,
                kind: Kind::Splice(r4),
            },
        );
    }
    Ok(kept)
}

/// The metadata map (spec, "Database Metadata").
fn metadata(opts: &Options, stats: &Stats) -> Result<Vec<u8>, WriteError> {
    let s = |t: &str| Value::Str(t.to_string());
    let m = Value::Map(vec![
        ("binary_format_major_version".into(), Value::Uint16(2)),
        ("binary_format_minor_version".into(), Value::Uint16(0)),
        ("build_epoch".into(), Value::Uint64(opts.build_epoch)),
        ("database_type".into(), s(&opts.database_type)),
        (
            "description".into(),
            Value::Map(vec![("en".into(), s(&opts.description))]),
        ),
        ("ip_version".into(), Value::Uint16(stats.ip_version)),
        ("languages".into(), Value::Array(vec![])),
        ("node_count".into(), Value::Uint32(stats.node_count)),
        ("record_size".into(), Value::Uint16(stats.record_size)),
    ]);
    let mut out = Vec::new();
    data::plain(&m, &mut out).map_err(|e| WriteError::TooLarge(format!("metadata: {e}")))?;
    if METADATA_MARKER.len() + out.len() > METADATA_MAX {
        return Err(WriteError::TooLarge(format!(
            "metadata of {} bytes (the format allows {METADATA_MAX} with the marker): \
             a shorter description or database type",
            out.len()
        )));
    }
    Ok(out)
}
