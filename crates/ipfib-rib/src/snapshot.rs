//! RIB snapshots: every live route of every peer in one checksummed
//! file, written while the RIB keeps changing and loaded back in one
//! pass (a collector's warm restart, `ipfib collect --state DIR`).
//!
//! What a snapshot holds: the peers that had routes (their key, where
//! they came from, when they came up), the attribute sets those routes
//! use, each written once, and every prefix, in prefix order, with its
//! routes as (peer, path id, attribute set) index triples. Routes of
//! peers that were down are left out. Each prefix is read from the RIB
//! as one consistent array while writers go on, so a snapshot taken
//! during ingest holds each prefix as it was at some instant of the
//! write (a BGP table dump has the same property).
//!
//! Loading ([`load`]) gives a new RIB: routes of peers that came from a
//! router (BMP) come back under *stale* peers, which the router's
//! returning peers take over and End-of-RIB or the grace period sweep
//! (`rib/restart.rs`); routes of MRT and program peers come back as they
//! were.
//!
//! Layout (little-endian; docs/architecture.md, "RIB snapshots"):
//!
//! ```text
//! 0   "IPFIBRIB" magic, u32 version, u32 flags (0)
//! 16  prefixes:  per prefix  u8 family (4|6), u8 length, address (4|16),
//!                            u32 routes, routes x (u32 peer, u32 path id, u32 set)
//!     peers:     per peer    router (u8 0|4|6, 16 bytes), u8 class, u8 peer type,
//!                            u8 RIB kind, u8 0, i64 stale since (0: fresh), u64 distinguisher,
//!                            address (u8 4|6, 16 bytes), u32 AS, u32 BGP id,
//!                            i64 up since, u16 table name length, its bytes
//!     sets:      per set     u32 path words, words; u32 communities, each u32;
//!                            u32 large communities, 3 x u32 each;
//!                            next hop (u8 0|4|6, 16 bytes); u8 origin;
//!                            u8 has MED, u32 MED; u8 has LOCAL_PREF, u32
//! end-72 trailer: i64 created, u32 peers, u32 sets, u64 prefixes,
//!                 u64 routes, u64 peers section at, u64 sets section at,
//!                 u64 trailer at (= end of sets), u64 xxh3 of bytes 16..trailer,
//!                 u64 xxh3 of the first 16 bytes and the trailer before it
//! ```
//!
//! Every number read from a file is checked before it is used: counts
//! against the bytes left, indices against the tables they index,
//! prefixes for their length and host bits, order and uniqueness, so a
//! crafted file that passes the checksums is refused with the byte
//! offset of what is wrong, never read out of bounds.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use ipfib::prefix::{AnyPrefix, HostBits};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::attrs::{AttrSet, AttrsRef, Origin};
use crate::peers::{NlriClass, PeerInfo, PeerInit, PeerKey, PeerOrigin, RibKind};
use crate::rib::{Entry, Rib, RibError};

/// The first 8 bytes of a snapshot file.
pub const MAGIC: &[u8; 8] = b"IPFIBRIB";
/// The layout's version; a file of another is refused.
pub const VERSION: u32 = 1;
const HEAD: usize = 16;
const TRAILER: usize = 72;

/// Why a snapshot could not be loaded.
#[derive(Debug)]
pub enum SnapshotError {
    Io(io::Error),
    /// The file does not start with [`MAGIC`].
    NotASnapshot,
    /// Another layout version.
    Version {
        found: u32,
    },
    /// Damaged or inconsistent at this byte offset.
    Corrupt {
        offset: u64,
        what: String,
    },
    /// The RIB refused what the file holds (its limits).
    Rib(RibError),
}

impl SnapshotError {
    fn corrupt(offset: usize, what: impl Into<String>) -> Self {
        SnapshotError::Corrupt {
            offset: offset as u64,
            what: what.into(),
        }
    }
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::Io(e) => write!(f, "{e}"),
            SnapshotError::NotASnapshot => write!(f, "not an ipfib RIB snapshot (bad magic)"),
            SnapshotError::Version { found } => write!(
                f,
                "RIB snapshot version {found}, this program reads version {VERSION}"
            ),
            SnapshotError::Corrupt { offset, what } => {
                write!(f, "damaged RIB snapshot at byte offset {offset}: {what}")
            }
            SnapshotError::Rib(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SnapshotError {}

impl From<io::Error> for SnapshotError {
    fn from(e: io::Error) -> Self {
        SnapshotError::Io(e)
    }
}

/// What a write or a load did.
#[derive(Clone, Debug, Default)]
pub struct SnapshotReport {
    pub peers: usize,
    pub sets: usize,
    pub prefixes: u64,
    pub routes: u64,
    pub bytes: u64,
    /// Unix seconds the snapshot was taken.
    pub created: i64,
    pub seconds: f64,
}

/// A writer that counts and hashes what passes through.
struct Out<W: Write> {
    w: W,
    at: u64,
    hash: Xxh3,
}

impl<W: Write> Out<W> {
    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.hash.update(b);
        self.at += b.len() as u64;
        self.w.write_all(b)
    }
    fn u8(&mut self, v: u8) -> io::Result<()> {
        self.put(&[v])
    }
    fn u16(&mut self, v: u16) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    fn u32(&mut self, v: u32) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    fn u64(&mut self, v: u64) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    fn ip(&mut self, ip: Option<IpAddr>) -> io::Result<()> {
        let (tag, bytes) = match ip {
            None => (0, [0u8; 16]),
            Some(IpAddr::V4(a)) => {
                let mut b = [0u8; 16];
                b[..4].copy_from_slice(&a.octets());
                (4, b)
            }
            Some(IpAddr::V6(a)) => (6, a.octets()),
        };
        self.u8(tag)?;
        self.put(&bytes)
    }
    fn words(&mut self, ws: &[u32]) -> io::Result<()> {
        self.u32(ws.len() as u32)?;
        // One write for the lot (little-endian words).
        let mut buf = Vec::with_capacity(ws.len() * 4);
        for w in ws {
            buf.extend_from_slice(&w.to_le_bytes());
        }
        self.put(&buf)
    }
}

/// Write a snapshot of `rib` to `out` (see the module documentation).
pub fn write(rib: &Rib, out: impl Write) -> io::Result<SnapshotReport> {
    let t = Instant::now();
    let created = crate::peers::unix_now();
    // Every prefix's array as it is now, in prefix order.
    let mut arrays = Vec::new();
    rib.for_each_prefix(|r| {
        if !r.is_empty() {
            arrays.push(r.prefix);
        }
    });
    arrays.sort_unstable();
    let mut o = Out {
        w: BufWriter::with_capacity(1 << 20, out),
        at: 0,
        hash: Xxh3::new(),
    };
    let mut head = [0u8; HEAD];
    head[..8].copy_from_slice(MAGIC);
    head[8..12].copy_from_slice(&VERSION.to_le_bytes());
    o.w.write_all(&head)?;
    o.at = HEAD as u64;
    // Peers in id order: loaded back in that order they get ids in the
    // same order, which route preference breaks its last ties on.
    let mut peers: Vec<Arc<PeerInfo>> = rib.peers().all().filter(|p| p.is_up()).collect();
    peers.sort_unstable_by_key(|p| p.id);
    let mut peer_ix: HashMap<u32, u32> = peers
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id, i as u32))
        .collect();

    let mut sets: Vec<Arc<AttrSet>> = Vec::new();
    let mut set_ix: HashMap<*const AttrSet, u32> = HashMap::new();
    let (mut prefixes, mut routes) = (0u64, 0u64);
    let mut row: Vec<(u32, u32, u32)> = Vec::new();
    let live = rib.peers();
    for prefix in &arrays {
        // The prefix's entries now (it may have changed since the walk).
        let Some(r) = rib.routes_array(prefix) else {
            continue;
        };
        row.clear();
        for e in r.iter() {
            if !live.is_live(e.peer) {
                continue;
            }
            let pi = match peer_ix.get(&e.peer) {
                Some(&i) => i,
                None => {
                    let Some(info) = live.get(e.peer) else {
                        continue;
                    };
                    let i = peers.len() as u32;
                    peers.push(info);
                    peer_ix.insert(e.peer, i);
                    i
                }
            };
            let si = *set_ix.entry(Arc::as_ptr(&e.attrs)).or_insert_with(|| {
                sets.push(Arc::clone(&e.attrs));
                (sets.len() - 1) as u32
            });
            row.push((pi, e.path_id, si));
        }
        if row.is_empty() {
            continue;
        }
        row.sort_unstable_by_key(|&(p, id, _)| (p, id));
        let (family, len) = match prefix {
            AnyPrefix::V4(p) => (4u8, p.len()),
            AnyPrefix::V6(p) => (6u8, p.len()),
        };
        o.u8(family)?;
        o.u8(len)?;
        match prefix {
            AnyPrefix::V4(p) => o.put(&p.addr().to_be_bytes())?,
            AnyPrefix::V6(p) => o.put(&p.addr().to_be_bytes())?,
        }
        o.u32(row.len() as u32)?;
        let mut buf = Vec::with_capacity(row.len() * 12);
        for &(p, id, s) in &row {
            buf.extend_from_slice(&p.to_le_bytes());
            buf.extend_from_slice(&id.to_le_bytes());
            buf.extend_from_slice(&s.to_le_bytes());
        }
        o.put(&buf)?;
        prefixes += 1;
        routes += row.len() as u64;
    }
    let peers_at = o.at;
    for p in &peers {
        let k = &p.key;
        o.ip(p.origin.router)?;
        o.u8(p.origin.class.code())?;
        o.u8(k.peer_type)?;
        o.u8(k.rib.index() as u8)?;
        o.u8(0)?;
        // When its routes became stale: kept, so that restarts more often
        // than the grace period do not keep them for ever (0: fresh at
        // this write; stale from the load that restores it).
        o.u64(p.stale_since() as u64)?;
        o.u64(k.distinguisher)?;
        o.ip(Some(k.address))?;
        o.u32(k.asn)?;
        o.u32(k.bgp_id)?;
        o.u64(p.up_since as u64)?;
        let name = p.table_name().unwrap_or("").as_bytes();
        let name = &name[..name.len().min(crate::bmp::MAX_WIRE_STRING)];
        o.u16(name.len() as u16)?;
        o.put(name)?;
    }
    let sets_at = o.at;
    for s in &sets {
        o.words(&s.as_path.0)?;
        o.words(&s.communities)?;
        o.u32(s.large_communities.len() as u32)?;
        for l in s.large_communities.iter() {
            o.u32(l[0])?;
            o.u32(l[1])?;
            o.u32(l[2])?;
        }
        o.ip(s.next_hop)?;
        o.u8(s.origin as u8)?;
        o.u8(s.med.is_some() as u8)?;
        o.u32(s.med.unwrap_or(0))?;
        o.u8(s.local_pref.is_some() as u8)?;
        o.u32(s.local_pref.unwrap_or(0))?;
    }
    let trailer_at = o.at;
    let body_hash = o.hash.digest();
    let mut tr = Vec::with_capacity(TRAILER);
    tr.extend_from_slice(&created.to_le_bytes());
    tr.extend_from_slice(&(peers.len() as u32).to_le_bytes());
    tr.extend_from_slice(&(sets.len() as u32).to_le_bytes());
    tr.extend_from_slice(&prefixes.to_le_bytes());
    tr.extend_from_slice(&routes.to_le_bytes());
    tr.extend_from_slice(&peers_at.to_le_bytes());
    tr.extend_from_slice(&sets_at.to_le_bytes());
    tr.extend_from_slice(&trailer_at.to_le_bytes());
    tr.extend_from_slice(&body_hash.to_le_bytes());
    let mut sealed = head.to_vec();
    sealed.extend_from_slice(&tr);
    tr.extend_from_slice(&xxh3_64(&sealed).to_le_bytes());
    o.w.write_all(&tr)?;
    o.w.flush()?;
    Ok(SnapshotReport {
        peers: peers.len(),
        sets: sets.len(),
        prefixes,
        routes,
        bytes: trailer_at + TRAILER as u64,
        created,
        seconds: t.elapsed().as_secs_f64(),
    })
}

/// Recompute both checksums of snapshot bytes changed on purpose (the
/// hostile-file tests and the fuzz target reach the structure behind
/// them); bytes too short or without the magic are left as they are.
#[doc(hidden)]
pub fn reseal(b: &mut [u8]) {
    if b.len() < HEAD + TRAILER || &b[..8] != MAGIC {
        return;
    }
    let t = b.len() - TRAILER;
    let body = xxh3_64(&b[HEAD..t]);
    b[t + 56..t + 64].copy_from_slice(&body.to_le_bytes());
    let mut sealed = b[..HEAD].to_vec();
    sealed.extend_from_slice(&b[t..b.len() - 8]);
    let h = xxh3_64(&sealed);
    let n = b.len();
    b[n - 8..].copy_from_slice(&h.to_le_bytes());
}

/// The file a directory's snapshot is kept in, and the one before it.
pub const FILE: &str = "rib.snapshot";
pub const PREVIOUS: &str = "rib.snapshot.1";
const TEMP: &str = ".rib.snapshot.tmp";

/// Write a snapshot of `rib` into directory `dir` so that a crash at any
/// moment leaves the last good one in place: the new file is written
/// beside it under a temporary name and flushed to disk, the current
/// one becomes [`PREVIOUS`], the new one is renamed to [`FILE`], and the
/// directory is flushed. A crash between the two renames leaves only
/// [`PREVIOUS`], which [`newest`] then finds.
pub fn write_to_dir(rib: &Rib, dir: &Path) -> io::Result<SnapshotReport> {
    let tmp = dir.join(TEMP);
    let written = (|| {
        let file = File::create(&tmp)?;
        let report = write(rib, &file)?;
        file.sync_all()?;
        Ok::<_, io::Error>(report)
    })();
    // A failed write (a full disk) leaves no partial file taking room.
    let report = match written {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(io::Error::new(e.kind(), format!("{}: {e}", tmp.display())));
        }
    };
    let cur = dir.join(FILE);
    if cur.exists() {
        std::fs::rename(&cur, dir.join(PREVIOUS))?;
    }
    std::fs::rename(&tmp, &cur)?;
    File::open(dir)?.sync_all()?;
    Ok(report)
}

/// The snapshots of directory `dir`, newest first (those that exist).
pub fn newest(dir: &Path) -> Vec<PathBuf> {
    [FILE, PREVIOUS]
        .iter()
        .map(|f| dir.join(f))
        .filter(|p| p.is_file())
        .collect()
}

/// A cursor over the file's bytes that names offsets in its errors.
struct Cur<'a> {
    b: &'a [u8],
    at: usize,
    end: usize,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], SnapshotError> {
        if self.end - self.at < n {
            return Err(SnapshotError::corrupt(
                self.at,
                format!(
                    "{what}: {n} bytes needed, {} left in the section",
                    self.end - self.at
                ),
            ));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, SnapshotError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, SnapshotError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &str) -> Result<u32, SnapshotError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, SnapshotError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    /// A count of items of `size` bytes each that must fit in what is left.
    fn count(&mut self, size: usize, what: &str) -> Result<usize, SnapshotError> {
        let at = self.at;
        let n = self.u32(what)? as usize;
        if n.saturating_mul(size) > self.end - self.at {
            return Err(SnapshotError::corrupt(
                at,
                format!(
                    "{what} {n} does not fit in the {} bytes left",
                    self.end - self.at
                ),
            ));
        }
        Ok(n)
    }
    /// A counted list of words, into `out` (cleared first).
    fn words_into(&mut self, out: &mut Vec<u32>, what: &str) -> Result<(), SnapshotError> {
        let n = self.count(4, what)?;
        let b = self.take(n * 4, what)?;
        out.clear();
        out.extend(
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        Ok(())
    }
    fn ip(&mut self, what: &str) -> Result<Option<IpAddr>, SnapshotError> {
        let at = self.at;
        let tag = self.u8(what)?;
        let b = self.take(16, what)?;
        match tag {
            0 => Ok(None),
            4 => Ok(Some(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3])))),
            6 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(b);
                Ok(Some(IpAddr::V6(Ipv6Addr::from(a))))
            }
            t => Err(SnapshotError::corrupt(
                at,
                format!("{what}: address kind {t} (0, 4 or 6 expected)"),
            )),
        }
    }
}

/// The checked header and trailer of a snapshot.
struct Layout {
    created: i64,
    peers: usize,
    sets: usize,
    prefixes: u64,
    routes: u64,
    peers_at: usize,
    sets_at: usize,
    trailer_at: usize,
}

fn layout(b: &[u8], verify: bool) -> Result<Layout, SnapshotError> {
    if b.len() < 8 || &b[..8] != MAGIC {
        return Err(SnapshotError::NotASnapshot);
    }
    if b.len() < HEAD + TRAILER {
        return Err(SnapshotError::corrupt(
            b.len(),
            format!("{} bytes, shorter than the smallest snapshot", b.len()),
        ));
    }
    let version = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
    if version != VERSION {
        return Err(SnapshotError::Version { found: version });
    }
    let t = b.len() - TRAILER;
    let mut sealed = b[..HEAD].to_vec();
    sealed.extend_from_slice(&b[t..b.len() - 8]);
    let mut c = Cur {
        b,
        at: t,
        end: b.len(),
    };
    let created = c.u64("created")? as i64;
    let peers = c.u32("peer count")? as usize;
    let sets = c.u32("attribute set count")? as usize;
    let prefixes = c.u64("prefix count")?;
    let routes = c.u64("route count")?;
    let peers_at = c.u64("peers section offset")?;
    let sets_at = c.u64("sets section offset")?;
    let trailer_at = c.u64("trailer offset")?;
    let body_hash = c.u64("body checksum")?;
    let trailer_hash = c.u64("trailer checksum")?;
    if xxh3_64(&sealed) != trailer_hash {
        return Err(SnapshotError::corrupt(
            t,
            "trailer checksum mismatch (a truncated file, or damaged)",
        ));
    }
    if trailer_at != t as u64
        || !(HEAD as u64 <= peers_at && peers_at <= sets_at && sets_at <= trailer_at)
    {
        return Err(SnapshotError::corrupt(
            t,
            format!("section offsets {peers_at}, {sets_at}, {trailer_at} do not fit the file ({} bytes)", b.len()),
        ));
    }
    if flags(b) != 0 {
        return Err(SnapshotError::corrupt(12, "unknown flags"));
    }
    if verify && xxh3_64(&b[HEAD..t]) != body_hash {
        return Err(SnapshotError::corrupt(HEAD, "body checksum mismatch"));
    }
    Ok(Layout {
        created,
        peers,
        sets,
        prefixes,
        routes,
        peers_at: peers_at as usize,
        sets_at: sets_at as usize,
        trailer_at: t,
    })
}

fn flags(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[12], b[13], b[14], b[15]])
}

/// A peer as the file describes it.
fn read_peer(c: &mut Cur<'_>) -> Result<PeerInit, SnapshotError> {
    let at = c.at;
    let router = c.ip("router address")?;
    let class = c.u8("NLRI class")?;
    let class = NlriClass::from_code(class)
        .ok_or_else(|| SnapshotError::corrupt(at + 17, format!("NLRI class {class}")))?;
    let peer_type = c.u8("peer type")?;
    let rib = c.u8("RIB kind")?;
    let rib = *RibKind::ALL
        .get(rib as usize)
        .ok_or_else(|| SnapshotError::corrupt(at + 19, format!("RIB kind {rib}")))?;
    let at_reserved = c.at;
    if c.u8("reserved")? != 0 {
        return Err(SnapshotError::corrupt(at_reserved, "reserved byte not 0"));
    }
    let stale_since = c.u64("stale since")? as i64;
    let distinguisher = c.u64("distinguisher")?;
    let address = c
        .ip("peer address")?
        .ok_or_else(|| SnapshotError::corrupt(c.at - 17, "a peer without an address"))?;
    let asn = c.u32("peer AS")?;
    let bgp_id = c.u32("peer BGP id")?;
    let up_since = c.u64("up since")? as i64;
    let n = c.u16("table name length")? as usize;
    if n > crate::bmp::MAX_WIRE_STRING {
        return Err(SnapshotError::corrupt(
            c.at - 2,
            format!(
                "table name of {n} bytes (at most {})",
                crate::bmp::MAX_WIRE_STRING
            ),
        ));
    }
    let name = c.take(n, "table name")?;
    let table_name = (n > 0).then(|| String::from_utf8_lossy(name).into_owned());
    // Routes a router sent come back stale (since the load, unless they
    // were stale already); a dump's or a program's as they were.
    let stale = router.is_some();
    let stale_since = if !stale {
        0
    } else if stale_since > 0 {
        stale_since
    } else {
        crate::peers::unix_now()
    };
    Ok(PeerInit {
        session: 0,
        key: PeerKey {
            peer_type,
            distinguisher,
            address,
            asn,
            bgp_id,
            rib,
        },
        origin: PeerOrigin { router, class },
        stale,
        stale_since,
        up_since: Some(up_since),
        table_name,
    })
}

/// Buffers one loader thread reuses for every set it reads.
#[derive(Default)]
struct Scratch {
    path: Vec<u32>,
    comms: Vec<u32>,
    large: Vec<[u32; 3]>,
}

/// Bytes of a set record after its three lists: next hop (17), ORIGIN
/// (1), MED (5), LOCAL_PREF (5).
const SET_TAIL: usize = 28;

fn read_set(c: &mut Cur<'_>, rib: &Rib, s: &mut Scratch) -> Result<Arc<AttrSet>, SnapshotError> {
    c.words_into(&mut s.path, "AS path length")?;
    c.words_into(&mut s.comms, "community count")?;
    let n = c.count(12, "large community count")?;
    s.large.clear();
    for _ in 0..n {
        s.large.push([
            c.u32("large community")?,
            c.u32("large community")?,
            c.u32("large community")?,
        ]);
    }
    let next_hop = c.ip("next hop")?;
    let at = c.at;
    let origin = c.u8("origin")?;
    let origin = Origin::from_wire(origin)
        .ok_or_else(|| SnapshotError::corrupt(at, format!("ORIGIN {origin}")))?;
    let opt = |c: &mut Cur<'_>, what: &str| -> Result<Option<u32>, SnapshotError> {
        let at = c.at;
        let has = c.u8(what)?;
        let v = c.u32(what)?;
        match has {
            0 => Ok(None),
            1 => Ok(Some(v)),
            h => Err(SnapshotError::corrupt(
                at,
                format!("{what}: presence byte {h}"),
            )),
        }
    };
    let med = opt(c, "MED")?;
    let local_pref = opt(c, "LOCAL_PREF")?;
    Ok(rib.intern(&AttrsRef {
        as_path: &s.path,
        communities: &s.comms,
        large_communities: &s.large,
        next_hop,
        origin,
        med,
        local_pref,
    }))
}

/// Load a snapshot into a new RIB (see the module documentation). Every
/// checksum is verified first; then every structure is checked as it is
/// read, and the first problem refuses the whole file (the partly filled
/// RIB is dropped).
pub fn load(path: &Path) -> Result<(Rib, SnapshotReport), SnapshotError> {
    load_with(path, |_| {})
}

/// [`load`], with `configure` applied to the new RIB before the routes
/// go in (its bound on routes per prefix, which the load applies).
pub fn load_with(
    path: &Path,
    configure: impl FnOnce(&Rib),
) -> Result<(Rib, SnapshotReport), SnapshotError> {
    let t = Instant::now();
    // Read whole, not mapped: a file truncated or rewritten in place while
    // it loads (`cp` over it) would otherwise raise SIGBUS, or change after
    // its checksums were verified.
    let bytes = std::fs::read(path)?;
    let rib = Rib::try_new()?;
    configure(&rib);
    let mut report = load_bytes(&bytes, &rib, true)?;
    report.seconds = t.elapsed().as_secs_f64();
    Ok((rib, report))
}

/// Load a snapshot's bytes into `rib` (empty; for [`load`], tests and
/// fuzzing). `verify`: check the body checksum (the structure is always
/// checked). On an error `rib` holds part of the file with its counts
/// unset: drop it, as [`load`] does.
pub fn load_bytes(b: &[u8], rib: &Rib, verify: bool) -> Result<SnapshotReport, SnapshotError> {
    let l = layout(b, verify)?;
    // Peers.
    let mut c = Cur {
        b,
        at: l.peers_at,
        end: l.sets_at,
    };
    let mut peers: Vec<Arc<PeerInfo>> =
        Vec::with_capacity(l.peers.min((l.sets_at - l.peers_at) / 50));
    for _ in 0..l.peers {
        let init = read_peer(&mut c)?;
        peers.push(rib.add_peer_with(init).map_err(SnapshotError::Rib)?);
    }
    if c.at != c.end {
        return Err(SnapshotError::corrupt(c.at, "bytes after the last peer"));
    }
    // Attribute sets.
    let mut c = Cur {
        b,
        at: l.sets_at,
        end: l.trailer_at,
    };
    // Cut into ranges of whole records (a walk over their counts),
    // interned side by side, kept in file order. (A count beyond what the
    // section can hold was refused by the walk before the reservation.)
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let cuts = set_cut_points(&mut c, l.sets, threads)?;
    rib.attrs().reserve(l.sets);
    let parts: Vec<Result<Vec<Arc<AttrSet>>, SnapshotError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = cuts
            .windows(2)
            .map(|w| {
                let (at, end) = (w[0], w[1]);
                scope.spawn(move || {
                    let mut c = Cur { b, at, end };
                    let mut scratch = Scratch::default();
                    let mut out = Vec::new();
                    while c.at < c.end {
                        out.push(read_set(&mut c, rib, &mut scratch)?);
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(SnapshotError::corrupt(
                        l.sets_at,
                        "a loader thread panicked",
                    ))
                })
            })
            .collect()
    });
    let mut sets = Vec::with_capacity(l.sets);
    for part in parts {
        sets.extend(part?);
    }
    // Prefixes and their routes: the section cut into ranges of whole
    // records, installed side by side.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let cuts = cut_points(b, HEAD, l.peers_at, threads)?;
    let ranges: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let parts: Vec<Result<Part, SnapshotError>> = rib.bulk(|| {
        std::thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .iter()
                .map(|&(at, end)| {
                    let (peers, sets) = (&peers, &sets);
                    scope.spawn(move || install_range(b, at, end, peers, sets, rib))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(SnapshotError::corrupt(HEAD, "a loader thread panicked"))
                    })
                })
                .collect()
        })
    });
    let mut families = vec![0u8; peers.len()];
    let mut counts = vec![0u64; peers.len()];
    let (mut prefixes, mut routes) = (0u64, 0u64);
    let mut last: Option<AnyPrefix> = None;
    for part in parts {
        let part = part?;
        if let (Some(prev), Some((at, first))) = (last, part.first) {
            if prev >= first {
                return Err(SnapshotError::corrupt(
                    at,
                    format!("prefix {first} out of order (after {prev})"),
                ));
            }
        }
        last = part.last.or(last);
        prefixes += part.prefixes;
        routes += part.routes;
        for (i, (f, n)) in part.families.iter().zip(&part.counts).enumerate() {
            families[i] |= f;
            counts[i] += n;
        }
    }
    if prefixes != l.prefixes || routes != l.routes {
        return Err(SnapshotError::corrupt(
            l.trailer_at,
            format!(
                "{prefixes} prefixes and {routes} routes read, the trailer says {} and {}",
                l.prefixes, l.routes
            ),
        ));
    }
    let mut stale = Vec::new();
    for ((p, &f), &n) in peers.iter().zip(&families).zip(&counts) {
        p.routes.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        if p.stale {
            stale.push((p.id, f));
        }
    }
    rib.stale_families(&stale);
    Ok(SnapshotReport {
        peers: peers.len(),
        sets: sets.len(),
        prefixes,
        routes,
        bytes: b.len() as u64,
        created: l.created,
        seconds: 0.0,
    })
}

/// Offsets that cut the sets section (from `c`, holding `count` sets and
/// nothing after) into about `n` ranges of whole records; checks the
/// count and the section's end.
fn set_cut_points(c: &mut Cur<'_>, count: usize, n: usize) -> Result<Vec<usize>, SnapshotError> {
    let (start, end) = (c.at, c.end);
    let mut cuts = vec![start];
    let step = (end - start) / n.max(1) + 1;
    for _ in 0..count {
        if c.at >= cuts[cuts.len() - 1] + step {
            cuts.push(c.at);
        }
        let k = c.count(4, "AS path length")?;
        c.take(k * 4, "AS path")?;
        let k = c.count(4, "community count")?;
        c.take(k * 4, "communities")?;
        let k = c.count(12, "large community count")?;
        c.take(k * 12, "large communities")?;
        c.take(SET_TAIL, "attribute set")?;
    }
    if c.at != end {
        return Err(SnapshotError::corrupt(
            c.at,
            "bytes after the last attribute set",
        ));
    }
    cuts.push(end);
    Ok(cuts)
}

/// Offsets that cut the prefix section `at..end` into about `n` ranges
/// of whole records (a walk over the records' headers only; each range
/// checks its records fully when installed).
fn cut_points(b: &[u8], at: usize, end: usize, n: usize) -> Result<Vec<usize>, SnapshotError> {
    let mut cuts = vec![at];
    let step = (end - at) / n.max(1) + 1;
    let mut c = Cur { b, at, end };
    while c.at < end {
        if c.at >= cuts[cuts.len() - 1] + step {
            cuts.push(c.at);
        }
        let rec = c.at;
        let family = c.u8("prefix family")?;
        c.u8("prefix length")?;
        match family {
            4 => c.take(4, "IPv4 prefix")?,
            6 => c.take(16, "IPv6 prefix")?,
            f => return Err(SnapshotError::corrupt(rec, format!("prefix family {f}"))),
        };
        let n_at = c.at;
        let n = c.count(12, "route count")?;
        if n == 0 {
            return Err(SnapshotError::corrupt(n_at, "a prefix without routes"));
        }
        c.take(n * 12, "routes")?;
    }
    cuts.push(end);
    Ok(cuts)
}

/// What one range of the prefix section held.
struct Part {
    /// Its first prefix (with its offset) and its last.
    first: Option<(usize, AnyPrefix)>,
    last: Option<AnyPrefix>,
    prefixes: u64,
    routes: u64,
    /// Per peer index: address families held (bit 0 IPv4, bit 1 IPv6),
    /// routes.
    families: Vec<u8>,
    counts: Vec<u64>,
}

/// Check and install the prefix records of `at..end`.
fn install_range(
    b: &[u8],
    at: usize,
    end: usize,
    peers: &[Arc<PeerInfo>],
    sets: &[Arc<AttrSet>],
    rib: &Rib,
) -> Result<Part, SnapshotError> {
    let mut c = Cur { b, at, end };
    let mut part = Part {
        first: None,
        last: None,
        prefixes: 0,
        routes: 0,
        families: vec![0; peers.len()],
        counts: vec![0; peers.len()],
    };
    let mut entries = Vec::new();
    let mut kept: Vec<usize> = Vec::new();
    while c.at < c.end {
        let at = c.at;
        let family = c.u8("prefix family")?;
        let len = c.u8("prefix length")?;
        let prefix = match family {
            4 => {
                let a = c.take(4, "IPv4 prefix")?;
                AnyPrefix::from_ip(
                    IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])),
                    len,
                    HostBits::Reject,
                )
            }
            6 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(c.take(16, "IPv6 prefix")?);
                AnyPrefix::from_ip(IpAddr::V6(Ipv6Addr::from(a)), len, HostBits::Reject)
            }
            f => return Err(SnapshotError::corrupt(at, format!("prefix family {f}"))),
        }
        .map_err(|e| SnapshotError::corrupt(at, format!("prefix: {e}")))?;
        if let Some(prev) = part.last.filter(|&p| p >= prefix) {
            return Err(SnapshotError::corrupt(
                at,
                format!("prefix {prefix} out of order (after {prev})"),
            ));
        }
        part.first.get_or_insert((at, prefix));
        part.last = Some(prefix);
        let n_at = c.at;
        let n = c.count(12, "route count")?;
        if n == 0 {
            return Err(SnapshotError::corrupt(n_at, "a prefix without routes"));
        }
        entries.clear();
        kept.clear();
        let mut prev: Option<(u32, u32)> = None;
        let bit = if family == 4 { 1 } else { 2 };
        for _ in 0..n {
            let at = c.at;
            let pi = c.u32("route's peer")?;
            let path_id = c.u32("route's path id")?;
            let si = c.u32("route's attribute set")?;
            let peer = peers.get(pi as usize).ok_or_else(|| {
                SnapshotError::corrupt(at, format!("peer {pi} of {} peers", peers.len()))
            })?;
            let set = sets.get(si as usize).ok_or_else(|| {
                SnapshotError::corrupt(at + 8, format!("attribute set {si} of {} sets", sets.len()))
            })?;
            if prev.is_some_and(|p| p >= (pi, path_id)) {
                return Err(SnapshotError::corrupt(
                    at,
                    "routes of a prefix out of order or repeated",
                ));
            }
            prev = Some((pi, path_id));
            part.families[pi as usize] |= bit;
            part.counts[pi as usize] += 1;
            kept.push(pi as usize);
            entries.push(Entry {
                peer: peer.id,
                path_id,
                attrs: Arc::clone(set),
            });
        }
        // The bound on routes per prefix as set now (it may have been
        // lowered since the write, or the file crafted): the first routes
        // in file order are kept, the rest counted as dropped.
        let max = rib.max_routes_per_prefix();
        if entries.len() > max {
            for &pi in &kept[max..] {
                part.counts[pi] -= 1;
            }
            rib.counters().over_prefix_limit.fetch_add(
                (entries.len() - max) as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            entries.truncate(max);
        }
        rib.install(prefix, &entries).map_err(SnapshotError::Rib)?;
        part.prefixes += 1;
        part.routes += n as u64;
    }
    Ok(part)
}
