//! MaxMind DB (`.mmdb`) files as route tables: every network of the search
//! tree becomes a prefix whose value is its record (compact JSON), or one
//! field of it (`--value PATH`).
//!
//! - `tree.rs`: metadata, sections, the walk of the search tree (a DAG:
//!   aliases such as `::ffff:0:0/96` share the IPv4 subtree) with a bound
//!   on node visits;
//! - `decode.rs`: the data section decoder, with the spec's resource
//!   limits;
//! - `render.rs`: a record as route text, JSON or one field.
//!
//! Semantics (those of the official readers, checked against PyPI
//! `maxminddb` by the Python differential tests):
//! - IPv6 table (ip_version 6 only): every network reached from the root
//!   over 128 bits, aliases included, with IPv6 lengths;
//! - IPv4 table: ip_version 4, every network from the root over 32 bits;
//!   ip_version 6, every network from the IPv4 start node (the record
//!   reached by following 96 zero bits from the root; if that walk leaves
//!   the tree early on a record, that record covers all of IPv4 as
//!   `0.0.0.0/0`, and an empty one leaves IPv4 without routes), with IPv4
//!   lengths;
//! - empty records are misses; so is a network whose record lacks the
//!   `--value` field (networks are disjoint, so no covering prefix shows
//!   through);
//! - a network whose record is unusable (a pointer into the separator or
//!   past the data, a tree deeper than the address, a record the decoder
//!   refuses) is skipped and counted (lenient) or ends the load (strict);
//!   a broken layout (no metadata, bad metadata, a tree past the data, a
//!   tree whose shared nodes multiply past the visit bound) ends it always.

mod decode;
pub(crate) mod kind;
mod render;
mod tree;

pub use decode::{MAX_DEPTH, MAX_PAYLOAD, MAX_VALUES};
pub use render::FieldPath;
pub use tree::{find_marker, MAX_VISITS_PER_NODE, METADATA_MAX};

use crate::error::ReadError;
use crate::format::Format;
use crate::read::Route;
use crate::report::Report;
pub use crate::stats::MmdbInfo;
use ipfib::prefix::{AnyPrefix, Prefix};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use tree::{BadLeaf, Layout, Leaf};

/// A network's values (one per field, or the JSON record), per distinct
/// data offset.
enum Outcome {
    Values(Arc<[Option<String>]>),
    Bad(String),
}

/// What each network's value is made of.
enum Select<'f> {
    /// The record as compact JSON.
    Whole,
    /// These fields (a network is kept when it has at least one).
    Fields(&'f [FieldPath]),
}

/// One network of a MaxMind DB with several fields picked
/// ([`load_mmdb_fields`](crate::load_mmdb_fields)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmdbNetwork {
    pub prefix: AnyPrefix,
    /// One entry per field asked for, `None` where the record lacks it;
    /// shared by every network with the same record.
    pub fields: Arc<[Option<String>]>,
}

/// The bytes the routes' values of one load may take in all: at least
/// this many,
pub const VALUE_BYTES_FLOOR: u64 = 256 << 20;
/// or this many per byte of the file, whichever is more.
///
/// A record is decoded and rendered once per distinct data offset, but
/// every network's route holds its own copy of the text. A small file
/// whose many networks share one record of megabytes (the decoder's limits
/// allow 2 MiB of strings per record, 12 MiB of JSON once control
/// characters are escaped) would otherwise take gigabytes: a 68 KB file of
/// 1,024 networks, 12 GiB. Real databases stay far below the bound
/// (iptoasn-country: 2.9 bytes of values per byte of file; MaxMind's
/// City and Country test databases: 11-14).
pub const VALUE_BYTES_PER_FILE_BYTE: u64 = 64;

/// Load a whole MaxMind DB file held in memory as routes: the record as
/// JSON, or one field. Refused (a layout error) when the values would take
/// more than the budget above.
pub(crate) fn load(
    file: &[u8],
    path: &Path,
    field: Option<&FieldPath>,
    strict: bool,
) -> Result<(Vec<Route>, Report), ReadError> {
    let fields = field.map(std::slice::from_ref);
    let select = fields.map_or(Select::Whole, Select::Fields);
    let mut routes = Vec::new();
    let budget = VALUE_BYTES_FLOOR.max(VALUE_BYTES_PER_FILE_BYTE.saturating_mul(file.len() as u64));
    let mut total = 0u64;
    let mut over: Option<(u64, AnyPrefix)> = None;
    let report = walk_networks(
        file,
        path,
        &select,
        strict,
        |prefix, values, ordinal, record_at| {
            if over.is_some() {
                return;
            }
            if let Some(Some(v)) = values.first() {
                total += v.len() as u64;
                if total > budget {
                    over = Some((record_at, prefix));
                    return;
                }
                routes.push(Route {
                    prefix,
                    value: v.clone(),
                    line: ordinal,
                });
            }
        },
    )?;
    if let Some((offset, prefix)) = over {
        return Err(ReadError::Mmdb {
            path: path.to_path_buf(),
            offset,
            reason: format!(
                "the networks' values take more than {budget} bytes in all (the larger of \
                 {VALUE_BYTES_FLOOR} and {VALUE_BYTES_PER_FILE_BYTE} per byte of the file), \
                 reached at network {prefix} whose record is at this byte: records shared by \
                 many networks are copied into each; refused (pick a field with --value)"
            ),
        });
    }
    Ok((routes, report))
}

/// Load a whole MaxMind DB file held in memory with several fields per
/// network.
pub(crate) fn load_fields(
    file: &[u8],
    path: &Path,
    fields: &[FieldPath],
    strict: bool,
) -> Result<(Vec<MmdbNetwork>, Report), ReadError> {
    let mut out = Vec::new();
    let report = walk_networks(
        file,
        path,
        &Select::Fields(fields),
        strict,
        |prefix, values, _, _| {
            out.push(MmdbNetwork {
                prefix,
                fields: Arc::clone(values),
            })
        },
    )?;
    Ok((out, report))
}

/// Walk both tables' networks, calling `emit` for each network with a
/// value (the network's ordinal among all networks, 1-based, and the file
/// offset of its record).
fn walk_networks(
    file: &[u8],
    path: &Path,
    select: &Select<'_>,
    strict: bool,
    mut emit: impl FnMut(AnyPrefix, &Arc<[Option<String>]>, u64, u64),
) -> Result<Report, ReadError> {
    let layout_err = |e: tree::LayoutError| ReadError::Mmdb {
        path: path.to_path_buf(),
        offset: e.offset,
        reason: e.reason,
    };
    let layout = Layout::parse(file).map_err(layout_err)?;
    let mut report = Report::new(Format::Mmdb);
    report.bytes = file.len() as u64;
    let meta = &layout.meta;
    let mut info = MmdbInfo {
        database_type: meta.database_type.clone(),
        ip_version: meta.ip_version,
        record_size: meta.record_size,
        node_count: meta.node_count,
        build_epoch: meta.build_epoch,
        binary_format: (
            meta.binary_format_major_version,
            meta.binary_format_minor_version,
        ),
        ..MmdbInfo::default()
    };
    let limit = MAX_VISITS_PER_NODE.saturating_mul(u64::from(meta.node_count).max(1));
    let mut decoder = decode::Decoder::new(layout.data);
    let mut cache: HashMap<u32, Outcome, OffsetHash> = HashMap::default();
    let mut failure: Option<ReadError> = None;
    let mut visits = 0u64;
    // IPv4 from the IPv4 start node (the root of an IPv4 tree), then IPv6
    // from the root of an IPv6 tree.
    let mut tables = vec![(layout.ipv4_start(), 32u8)];
    if meta.ip_version == 6 {
        tables.push((0, 128));
    }
    for (start, width) in tables {
        tree::walk(&layout, start, width, &mut visits, limit, |leaf| {
            if failure.is_some() {
                return;
            }
            report.records += 1;
            let ordinal = report.records;
            let (bits, len) = match leaf {
                Leaf::Data { bits, len, .. } | Leaf::Bad { bits, len, .. } => (bits, len),
            };
            let prefix = match width {
                32 => Prefix::new(bits as u32, len).map(AnyPrefix::V4),
                _ => Prefix::new(bits, len).map(AnyPrefix::V6),
            };
            let Ok(prefix) = prefix else {
                // The walk builds canonical prefixes of at most `width` bits.
                return;
            };
            let mut skip = |reason: String, first: bool| {
                let e = ReadError::MmdbRecord {
                    path: path.to_path_buf(),
                    prefix: prefix.to_string(),
                    reason,
                };
                if strict {
                    failure = Some(e);
                } else if first {
                    report.skip(e);
                } else {
                    report.bad += 1;
                }
            };
            let offset = match leaf {
                Leaf::Data { offset, .. } => offset,
                Leaf::Bad {
                    file_offset,
                    reason,
                    ..
                } => {
                    skip(bad_leaf(reason, file_offset), true);
                    return;
                }
            };
            let entry = cache.entry(offset);
            let first = matches!(entry, std::collections::hash_map::Entry::Vacant(_));
            let outcome = entry.or_insert_with(|| {
                info.records += 1;
                match decoder.decode_entry(offset as usize) {
                    Err(e) => Outcome::Bad(format!(
                        "record at byte {}: {}",
                        layout.data_start + e.offset as u64,
                        e.reason
                    )),
                    Ok(v) => Outcome::Values(match select {
                        Select::Whole => Arc::new([Some(render::json(&v))]),
                        Select::Fields(fs) => fs
                            .iter()
                            .map(|f| f.select(&v).map(render::field_text))
                            .collect(),
                    }),
                }
            });
            match outcome {
                Outcome::Values(values) => {
                    if values.iter().any(Option::is_some) {
                        emit(
                            prefix,
                            values,
                            ordinal,
                            layout.data_start + u64::from(offset),
                        );
                    } else {
                        info.without_field += 1;
                    }
                }
                Outcome::Bad(reason) => {
                    let reason = reason.clone();
                    skip(reason, first);
                }
            }
        })
        .map_err(layout_err)?;
        if let Some(e) = failure {
            return Err(e);
        }
    }
    info.node_visits = visits;
    report.mmdb = Some(info);
    Ok(report)
}

/// Hashing for the data offsets of the decode cache: one multiply (the
/// keys are offsets into one file, not attacker-chosen collisions that
/// matter: a crafted file can at worst make its own load slower, within
/// the visit bound). With SipHash and two lookups per network the
/// iptoasn-country file loaded in 110-160 ms, with this and one lookup in
/// 66-91 ms (busy 2-core machine).
#[derive(Default, Clone, Copy)]
struct OffsetHash;

impl std::hash::BuildHasher for OffsetHash {
    type Hasher = OffsetHasher;
    fn build_hasher(&self) -> OffsetHasher {
        OffsetHasher(0)
    }
}

struct OffsetHasher(u64);

impl std::hash::Hasher for OffsetHasher {
    fn finish(&self) -> u64 {
        // The product's high bits depend on every bit of the key: fold them
        // into the low bits the table indexes with.
        self.0 ^ (self.0 >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.0 = (u64::from(x) ^ 0x5851_f42d_4c95_7f2d).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

fn bad_leaf(reason: BadLeaf, file_offset: u64) -> String {
    match reason {
        BadLeaf::InSeparator(v) => format!(
            "search tree record {v} points into the data section separator (byte {file_offset})"
        ),
        BadLeaf::PastData(v) => format!(
            "search tree record {v} points past the end of the data section (byte {file_offset})"
        ),
        BadLeaf::TooDeep => format!(
            "the search tree goes on below the last address bit (node at byte {file_offset})"
        ),
    }
}

/// Whether `file` ends like a MaxMind DB (the metadata marker in its last
/// 128 KiB), for `--format auto`.
pub(crate) fn looks_like_mmdb(file: &[u8]) -> bool {
    find_marker(file).is_some()
}
