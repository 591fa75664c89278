//! The file's layout (metadata, search tree, data section) and the walk of
//! the search tree into networks (MaxMind-DB-spec.md, "Database Metadata",
//! "Binary Search Tree Section").

use super::decode::{Decoder, Val};

/// `\xAB\xCD\xEF` then `MaxMind.com`: the start of the metadata.
pub const METADATA_MARKER: &[u8] = b"\xab\xcd\xefMaxMind.com";
/// The metadata (marker included) is within this many bytes of the end.
pub const METADATA_MAX: usize = 128 * 1024;
/// NUL bytes between the search tree and the data section.
const SEPARATOR: u64 = 16;

/// How many node visits the walk of the tree may make, per node of the
/// tree. A tree in which no node is shared visits each node once per
/// family table; the IPv4 aliases of MaxMind's and mmdbwriter's databases
/// (`::ffff:0:0/96`, `2001::/32`, `2002::/16` pointing at the IPv4
/// subtree) add at most three more visits of that subtree. A tree whose
/// nodes are shared far more than that (both records of a node pointing
/// at the same child, level after level) describes up to 2^128 networks:
/// refused, with the count it reached.
pub const MAX_VISITS_PER_NODE: u64 = 8;

/// Why the file's layout is unusable: `offset` is a byte of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError {
    pub offset: u64,
    pub reason: String,
}

fn bad<T>(offset: impl TryInto<u64>, reason: impl Into<String>) -> Result<T, LayoutError> {
    Err(LayoutError {
        offset: offset.try_into().unwrap_or(u64::MAX),
        reason: reason.into(),
    })
}

/// What the metadata says (the keys we use).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Metadata {
    pub node_count: u32,
    pub record_size: u16,
    pub ip_version: u16,
    pub database_type: String,
    pub build_epoch: Option<u64>,
    pub binary_format_major_version: Option<u16>,
    pub binary_format_minor_version: Option<u16>,
}

/// Where the last metadata marker starts, if the file's last
/// [`METADATA_MAX`] bytes hold one.
pub fn find_marker(file: &[u8]) -> Option<usize> {
    let from = file.len().saturating_sub(METADATA_MAX);
    let tail = file.get(from..)?;
    tail.windows(METADATA_MARKER.len())
        .rposition(|w| w == METADATA_MARKER)
        .map(|i| from + i)
}

/// A file split into its sections.
pub struct Layout<'a> {
    pub meta: Metadata,
    pub tree: &'a [u8],
    pub data: &'a [u8],
    /// File offset of the data section (for messages).
    pub data_start: u64,
    node_bytes: usize,
}

impl<'a> Layout<'a> {
    pub fn parse(file: &'a [u8]) -> Result<Self, LayoutError> {
        let Some(marker) = find_marker(file) else {
            return bad(
                file.len(),
                "no metadata marker (\\xAB\\xCD\\xEFMaxMind.com) in the last 128 KiB: not a MaxMind DB",
            );
        };
        let meta_start = marker + METADATA_MARKER.len();
        let section = file.get(meta_start..).unwrap_or_default();
        let map = Decoder::new(section)
            .decode_entry(0)
            .or_else(|e| bad(meta_start + e.offset, format!("metadata: {}", e.reason)))?;
        let meta = metadata(&map).or_else(|why| bad(meta_start, format!("metadata: {why}")))?;
        let node_bytes = usize::from(meta.record_size / 4);
        let tree_bytes = u64::from(meta.node_count) * node_bytes as u64;
        let data_start = tree_bytes + SEPARATOR;
        if data_start > marker as u64 {
            return bad(
                marker,
                format!(
                    "the search tree ({} nodes of {} bytes) and its separator end at byte {}, \
                     past the metadata marker at byte {marker}",
                    meta.node_count, node_bytes, data_start
                ),
            );
        }
        // Both bounds are within `marker` (checked just above).
        let tree = file.get(..tree_bytes as usize).unwrap_or_default();
        let data = file.get(data_start as usize..marker).unwrap_or_default();
        Ok(Layout {
            meta,
            tree,
            data,
            data_start,
            node_bytes,
        })
    }

    /// One record of node `node` (< node_count): left (`right` false) or right.
    fn record(&self, node: u32, right: bool) -> u32 {
        let at = node as usize * self.node_bytes;
        let b = |i: usize| u32::from(self.tree.get(at + i).copied().unwrap_or(0));
        match self.meta.record_size {
            24 if right => (b(3) << 16) | (b(4) << 8) | b(5),
            24 => (b(0) << 16) | (b(1) << 8) | b(2),
            // The middle byte: its high nibble tops the left record, its
            // low nibble the right.
            28 if right => ((b(3) & 0x0f) << 24) | (b(4) << 16) | (b(5) << 8) | b(6),
            28 => ((b(3) & 0xf0) << 20) | (b(0) << 16) | (b(1) << 8) | b(2),
            _ if right => (b(4) << 24) | (b(5) << 16) | (b(6) << 8) | b(7),
            _ => (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3),
        }
    }

    /// The record value IPv4 lookups start from in an IPv6 tree: follow
    /// the left record 96 times from the root, stopping early where the
    /// walk leaves the tree (a data or empty record) - as the official
    /// readers do. In an IPv4 tree: the root.
    pub fn ipv4_start(&self) -> u32 {
        let mut v = 0u32;
        if self.meta.ip_version == 6 {
            for _ in 0..96 {
                if v >= self.meta.node_count {
                    break;
                }
                v = self.record(v, false);
            }
        }
        v
    }

    /// File offset of node `node`.
    fn node_offset(&self, node: u32) -> u64 {
        u64::from(node) * self.node_bytes as u64
    }
}

fn uint(v: &Val<'_>, key: &str, max: u128) -> Result<u128, String> {
    match v {
        Val::Uint(u) if *u <= max => Ok(*u),
        other => Err(format!(
            "{key} is {other:?}, not an unsigned integer up to {max}"
        )),
    }
}

fn metadata(map: &Val<'_>) -> Result<Metadata, String> {
    let Val::Map(pairs) = map else {
        return Err(format!("not a map but {map:?}"));
    };
    let get = |k: &str| {
        pairs
            .iter()
            .rev()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v)
    };
    let need = |k: &str| get(k).ok_or_else(|| format!("no {k}"));
    let mut m = Metadata {
        node_count: uint(need("node_count")?, "node_count", u32::MAX.into())? as u32,
        record_size: uint(need("record_size")?, "record_size", u16::MAX.into())? as u16,
        ip_version: uint(need("ip_version")?, "ip_version", u16::MAX.into())? as u16,
        ..Metadata::default()
    };
    if !matches!(m.record_size, 24 | 28 | 32) {
        return Err(format!(
            "record_size {} (24, 28 or 32 expected)",
            m.record_size
        ));
    }
    if !matches!(m.ip_version, 4 | 6) {
        return Err(format!("ip_version {} (4 or 6 expected)", m.ip_version));
    }
    if let Some(v) = get("binary_format_major_version") {
        let major = uint(v, "binary_format_major_version", u16::MAX.into())? as u16;
        if major != 2 {
            return Err(format!("binary format version {major} (2 expected)"));
        }
        m.binary_format_major_version = Some(major);
    }
    if let Some(v) = get("binary_format_minor_version") {
        m.binary_format_minor_version =
            Some(uint(v, "binary_format_minor_version", u16::MAX.into())? as u16);
    }
    if let Some(v) = get("build_epoch") {
        m.build_epoch = Some(uint(v, "build_epoch", u64::MAX.into())? as u64);
    }
    match get("database_type") {
        Some(Val::Str(s)) => m.database_type = (*s).to_string(),
        Some(other) => return Err(format!("database_type is {other:?}, not a string")),
        None => {}
    }
    Ok(m)
}

/// One network of the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    /// The network's record is at this offset of the data section.
    Data { bits: u128, len: u8, offset: u32 },
    /// A record that points nowhere valid: the network is unusable.
    Bad {
        bits: u128,
        len: u8,
        file_offset: u64,
        reason: BadLeaf,
    },
}

/// Why a network's record is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadLeaf {
    /// Between node_count + 1 and node_count + 15: inside the separator.
    InSeparator(u32),
    /// Past the end of the data section.
    PastData(u32),
    /// The tree goes on below the last bit of the address.
    TooDeep,
}

/// Walk the tree from record value `start` over `width` address bits
/// (32 or 128), calling `leaf` for every network with a record (empty
/// records are misses and yield nothing), in address order. `visits`
/// counts node visits against `limit` across calls.
pub fn walk(
    layout: &Layout<'_>,
    start: u32,
    width: u8,
    visits: &mut u64,
    limit: u64,
    mut leaf: impl FnMut(Leaf),
) -> Result<(), LayoutError> {
    let nodes = layout.meta.node_count;
    let data_len = layout.data.len() as u64;
    // (record value, depth, address bits so far, left-aligned in `width`).
    let mut stack: Vec<(u32, u8, u128)> = vec![(start, 0, 0)];
    while let Some((v, depth, bits)) = stack.pop() {
        if v < nodes {
            if depth >= width {
                leaf(Leaf::Bad {
                    bits,
                    len: depth,
                    file_offset: layout.node_offset(v),
                    reason: BadLeaf::TooDeep,
                });
                continue;
            }
            *visits += 1;
            if *visits > limit {
                return bad(
                    layout.node_offset(v),
                    format!(
                        "the search tree describes more than {limit} node visits \
                         ({MAX_VISITS_PER_NODE} per node of {nodes}): its nodes are shared \
                         (a DAG) far beyond the usual IPv4 aliases; refused"
                    ),
                );
            }
            let one = 1u128 << (width - 1 - depth);
            stack.push((layout.record(v, true), depth + 1, bits | one));
            stack.push((layout.record(v, false), depth + 1, bits));
        } else if v > nodes {
            let rel = u64::from(v - nodes);
            let at = layout.data_start - SEPARATOR + rel;
            let leaf_at = |reason| Leaf::Bad {
                bits,
                len: depth,
                file_offset: at,
                reason,
            };
            leaf(if rel < SEPARATOR {
                leaf_at(BadLeaf::InSeparator(v))
            } else if rel - SEPARATOR >= data_len {
                leaf_at(BadLeaf::PastData(v))
            } else {
                Leaf::Data {
                    bits,
                    len: depth,
                    offset: (rel - SEPARATOR) as u32,
                }
            });
        }
    }
    Ok(())
}
