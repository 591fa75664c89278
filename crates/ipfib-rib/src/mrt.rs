//! MRT RIB dumps in and out: [`load`] reads a dump into a [`Rib`], [`dump`]
//! writes a RIB's live routes as one.
//!
//! ```text
//!  load:  file ─ open_maybe_compressed ─► Framer (RFC 6396 §2: header, bound, offset)
//!           PEER_INDEX_TABLE (§4.3.1) ──► one RIB peer per entry (RibKind::Mrt)
//!           RIB_IPV4/IPV6_UNICAST[_ADDPATH], RIB_GENERIC unicast
//!             entries framed by ipfib_io::bgp::mrt (RFC 6396 §4.3.2-4, RFC 8050 §4)
//!             attributes: raw bytes seen before? ─ no ─► ipfib_io::bgp ─► rib.intern
//!             ─► rib.announce(peer, prefix, path id, attributes)
//!           TABLE_DUMP (§4.2) ──► peers by (address, AS), one route each
//!  dump:  PEER_INDEX_TABLE of the live peers, then per prefix one RIB record
//!         of plain routes and one of routes with path ids (RFC 8050),
//!         attributes by our own encoder (RFC 4271 §4.3, RFC 6396 §4.3.4)
//! ```
//!
//! Record bodies are read by `ipfib_io::bgp::mrt` and path attributes by
//! `ipfib_io::bgp::decode_rib_entry_attrs`: the decoder BMP uses, and the
//! one ipfib-io's table readers use, so one decoder and one set of RFC
//! 7606 error classes serve every input. A bad entry is skipped and
//! reported with its record and byte offset, the rest of its record kept;
//! attribute bytes seen before (every prefix a peer learnt over one path
//! shares them) go to the interned set without being decoded again.
//! bgpkit-parser is the independent decoder the tests compare the real
//! dumps with.
//!
//! Damage: the shared dumps are the first N MiB of real files, cut inside
//! a record. Framing stops at the first incomplete or unframeable record
//! ([`LoadReport::damage`], with its byte offset in the decompressed
//! stream); every complete record before it is loaded. A record whose body
//! does not hold together is skipped whole, an entry whose attributes do
//! not decode is skipped alone; both are counted and their first errors
//! kept ([`LoadReport::errors`]). Only failures to open or read the file and
//! a full RIB end the load with an error.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{self, BufRead, BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipfib::prefix::AnyPrefix;
use ipfib_io::{Damage, Frame, Framer, ReadError};

use crate::attrs::{AsPath, AttrSet, AttrsRef, AS_SET};
use crate::instance::{Instance, RibSet};
use crate::peers::{unix_now, PeerInfo, PeerKey, RibKind};
use crate::rib::{Rib, RibError};
use ipfib_io::bgp::mrt::{
    self, PEER_INDEX_TABLE, RIB_IPV4_UNICAST, RIB_IPV4_UNICAST_ADDPATH, RIB_IPV6_UNICAST,
    RIB_IPV6_UNICAST_ADDPATH, TABLE_DUMP, TABLE_DUMP_V2,
};
use ipfib_io::bgp::{self as wire, ErrorAction, Update, WireError};

/// Path attribute type codes the dump writes (RFC 4271 §5, 4760, 1997,
/// 8092).
const ORIGIN: u8 = 1;
const AS_PATH: u8 = 2;
const NEXT_HOP: u8 = 3;
const MED: u8 = 4;
const LOCAL_PREF: u8 = 5;
const COMMUNITIES: u8 = 8;
const MP_REACH_NLRI: u8 = 14;
const LARGE_COMMUNITY: u8 = 32;

/// Errors kept in a [`LoadReport`]; later ones are only counted.
pub const KEPT_ERRORS: usize = 16;

/// Distinct raw attribute sets remembered during a load (about 150 bytes
/// each); past it the memory starts afresh.
const ATTR_CACHE: usize = 1 << 16;

/// Why a load failed, or what it skipped.
#[derive(Debug, thiserror::Error)]
pub enum MrtError {
    /// The file could not be opened (the message names it).
    #[error(transparent)]
    Open(#[from] ReadError),
    /// A record's body does not hold together; it was skipped whole.
    #[error(
        "{}: MRT record {record} at byte {offset} (type {entry_type}, subtype {subtype}): {reason}",
        .path.display()
    )]
    Record {
        path: PathBuf,
        /// 1-based count of complete records.
        record: u64,
        /// Offset of the record's header in the decompressed stream.
        offset: u64,
        entry_type: u16,
        subtype: u16,
        reason: String,
    },
    /// One RIB entry of a record could not be taken; the others were.
    #[error(
        "{}: MRT record {record}, RIB entry {entry} at byte {offset} (peer index {peer_index}): {reason}",
        .path.display()
    )]
    Entry {
        path: PathBuf,
        record: u64,
        /// 0-based position of the entry in its record.
        entry: u16,
        /// Offset of the entry in the decompressed stream.
        offset: u64,
        peer_index: u16,
        reason: String,
    },
    /// The RIB refused a peer or a prefix (it is full).
    #[error("{}: MRT record {record} at byte {offset}: {source}", .path.display())]
    Rib {
        path: PathBuf,
        record: u64,
        offset: u64,
        source: RibError,
    },
}

/// What [`load`] did.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Complete records read (every type).
    pub records: u64,
    /// RIB peers added (one per PEER_INDEX_TABLE entry, or per distinct
    /// (address, AS) of TABLE_DUMP records).
    pub peers: usize,
    /// Routes announced (RIB entries taken).
    pub routes: u64,
    /// Routes the RIB dropped: their prefix held the most routes a prefix
    /// may (see `rib::MAX_ROUTES_PER_PREFIX`).
    pub routes_dropped: u64,
    /// Peers of an earlier dump of the same view in the file (same
    /// collector BGP ID and view name), marked down when the later dump's
    /// PEER_INDEX_TABLE came: their routes left lookups then.
    pub superseded_peers: usize,
    /// Distinct prefixes with at least one route taken.
    pub prefixes_v4: u64,
    pub prefixes_v6: u64,
    /// Where the readable part of the file ends, when it ends early.
    pub damage: Option<Damage>,
    /// Decompressed bytes framed.
    pub bytes: u64,
    /// Records of types that hold no unicast RIB (BGP4MP updates,
    /// multicast, non-unicast RIB_GENERIC, GEO_PEER_TABLE), by (type,
    /// subtype).
    pub unsupported: Vec<((u16, u16), u64)>,
    /// Records skipped whole, and single entries skipped.
    pub bad_records: u64,
    pub bad_entries: u64,
    /// The first [`KEPT_ERRORS`] of them.
    pub errors: Vec<MrtError>,
    /// Attribute sets decoded (by `ipfib_io::bgp`, BMP's decoder too); the
    /// other routes reused the set of identical attribute bytes seen
    /// before.
    pub attr_decodes: u64,
    /// Attributes dropped from a route that was kept (RFC 7606
    /// "attribute discard": a malformed AGGREGATOR or AS4_PATH, a
    /// repeated attribute), once per distinct attribute bytes.
    pub attrs_discarded: u64,
    pub elapsed: Duration,
}

impl LoadReport {
    /// The byte offset (decompressed) where the file stopped being readable.
    pub fn damaged_at(&self) -> Option<u64> {
        self.damage.as_ref().map(|d| d.offset)
    }

    fn unsupported(&mut self, key: (u16, u16)) {
        match self.unsupported.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => self.unsupported.push((key, 1)),
        }
    }

    fn skip(&mut self, e: MrtError) {
        match e {
            MrtError::Entry { .. } => self.bad_entries += 1,
            _ => self.bad_records += 1,
        }
        if self.errors.len() < KEPT_ERRORS {
            self.errors.push(e);
        }
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} records, {} peers, {} routes, {} IPv4 + {} IPv6 prefixes in {:.3} s",
            self.records,
            self.peers,
            self.routes,
            self.prefixes_v4,
            self.prefixes_v6,
            self.elapsed.as_secs_f64()
        )?;
        if self.superseded_peers > 0 {
            write!(
                f,
                "; {} peers of earlier dumps of the same view went down",
                self.superseded_peers
            )?;
        }
        if self.routes_dropped > 0 {
            write!(
                f,
                "; {} routes dropped (their prefix held the most routes a prefix may)",
                self.routes_dropped
            )?;
        }
        if let Some(d) = &self.damage {
            write!(f, "; {d}")?;
        }
        if self.bad_records + self.bad_entries > 0 {
            write!(
                f,
                "; skipped {} records and {} entries",
                self.bad_records, self.bad_entries
            )?;
        }
        if self.attrs_discarded > 0 {
            write!(
                f,
                "; {} malformed attributes dropped from routes kept (RFC 7606)",
                self.attrs_discarded
            )?;
        }
        Ok(())
    }
}

/// Load the MRT RIB dump at `path` (plain, gzip, bzip2 or zstd) into `rib`.
///
/// - Each peer of a PEER_INDEX_TABLE becomes a new RIB peer of kind
///   [`RibKind::Mrt`], session 0 (loading a file twice gives two sets of
///   peers). A later PEER_INDEX_TABLE of the same view (collector BGP ID
///   and view name) starts a newer dump of it: the earlier table's peers
///   go down ([`LoadReport::superseded_peers`]).
/// - Each RIB entry becomes `rib.announce(peer, prefix, path id,
///   attributes)`, path id 0 for the subtypes without ADD-PATH; a
///   record's entries are announced once the whole record was read.
/// - Attributes kept: ORIGIN (missing: IGP, as the BGP decoder does);
///   AS_PATH, merged with an AS4_PATH when one is present (RFC 6793
///   §4.2.3: TABLE_DUMP's AS_PATH has 2-byte ASNs, and TABLE_DUMP_V2's,
///   4-byte by RFC 6396 §4.3.4, still holds AS_TRANS where a collector
///   stored what a 2-byte peer sent; bgpkit-parser's and mrtparse's views
///   merge too); the next hop (MP_REACH_NLRI's global address when
///   present, else NEXT_HOP); MED; LOCAL_PREF; communities; large
///   communities. The rest is dropped.
///
/// Runs on the calling thread; lookups on `rib` from other threads see
/// the routes as they arrive. Memory besides the RIB's: one record, the
/// distinct prefixes read (for the report) and up to 64K remembered
/// attribute byte strings, all freed on return.
///
/// Returns an error only when the file cannot be opened or the RIB is
/// full; damage and skipped records are in the report.
///
/// ```
/// # use ipfib_rib::{attrs::AttrsRef, AsPath, Origin, PeerKey, Rib, RibKind};
/// # use ipfib::prefix::AnyPrefix;
/// # let key = PeerKey { peer_type: 0, distinguisher: 0, address: "192.0.2.1".parse()?,
/// #                     asn: 64500, bgp_id: 1, rib: RibKind::PrePolicy };
/// # let path = AsPath::encode([(2, &[64500, 64501][..])]);
/// # let attrs = AttrsRef { as_path: &path, communities: &[], large_communities: &[],
/// #     next_hop: Some("192.0.2.1".parse()?), origin: Origin::Igp, med: None, local_pref: None };
/// # let pfx: AnyPrefix = "10.0.0.0/8".parse()?;
/// let rib = Rib::new();
/// let peer = rib.add_peer(1, key)?;
/// rib.announce(&peer, pfx, 0, &rib.intern(&attrs))?;
/// let file = std::env::temp_dir().join(format!("ipfib-doc-rib-{}.mrt", std::process::id()));
/// ipfib_rib::mrt::dump(&rib, std::fs::File::create(&file)?)?;
/// let copy = Rib::new();
/// let report = ipfib_rib::mrt::load(&file, &copy);
/// std::fs::remove_file(&file)?;
/// assert_eq!((report?.peers, copy.routes(&pfx)[0].attrs.origin_asn), (1, Some(64501)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load(path: impl AsRef<Path>, rib: &Rib) -> Result<LoadReport, MrtError> {
    let path = path.as_ref();
    let started = Instant::now();
    let reader = ipfib_io::open_maybe_compressed(path)?;
    let mut loader = Loader::new(path, rib);
    loader.run(reader)?;
    let mut report = loader.report;
    report.elapsed = started.elapsed();
    Ok(report)
}

// ---------------------------------------------------------------------
// Framing (RFC 6396 §2)
// ---------------------------------------------------------------------

/// One record's header, as the loader reports it.
#[derive(Clone, Copy, Debug)]
struct Header {
    offset: u64,
    entry_type: u16,
    subtype: u16,
    /// Where the body starts in the decompressed stream.
    body_at: u64,
}

impl Header {
    fn of(f: &Frame) -> Header {
        let header_len = if f.microseconds.is_some() { 16 } else { 12 };
        Header {
            offset: f.offset,
            entry_type: f.entry_type,
            subtype: f.subtype,
            body_at: f.offset + header_len,
        }
    }
}

// ---------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------

struct Loader<'r> {
    path: PathBuf,
    rib: &'r Rib,
    report: LoadReport,
    /// The current PEER_INDEX_TABLE: index -> RIB peer.
    table: Vec<Option<Arc<PeerInfo>>>,
    /// The peers of each view (collector BGP ID, view name) read so far.
    views: HashMap<(Ipv4Addr, String), Vec<Arc<PeerInfo>>>,
    /// TABLE_DUMP peers by (address, AS).
    legacy_peers: HashMap<(IpAddr, u32), Arc<PeerInfo>>,
    /// Raw attribute bytes (after one byte of context: family) -> set.
    attr_cache: HashMap<Box<[u8]>, Arc<AttrSet>>,
    key: Vec<u8>,
    update: Update,
    prefixes: HashSet<AnyPrefix>,
    /// One record's routes, announced once the whole record was read.
    pending: Vec<(Arc<PeerInfo>, u32, Arc<AttrSet>)>,
}

impl<'r> Loader<'r> {
    fn new(path: &Path, rib: &'r Rib) -> Self {
        Loader {
            path: path.to_path_buf(),
            rib,
            report: LoadReport::default(),
            table: Vec::new(),
            views: HashMap::new(),
            legacy_peers: HashMap::new(),
            attr_cache: HashMap::new(),
            key: Vec::new(),
            update: Update::default(),
            prefixes: HashSet::new(),
            pending: Vec::new(),
        }
    }

    fn run(&mut self, reader: Box<dyn BufRead + Send>) -> Result<(), MrtError> {
        let mut framer = Framer::new(reader);
        let mut entries = Vec::new();
        loop {
            let frame = match framer.next_frame() {
                None => break,
                Some(Ok(f)) => f,
                Some(Err(d)) => {
                    self.report.damage = Some(d);
                    break;
                }
            };
            let h = Header::of(&frame);
            self.report.records += 1;
            let body: &[u8] = &frame.body;
            let result = match (h.entry_type, h.subtype) {
                (TABLE_DUMP_V2, PEER_INDEX_TABLE) => self.peer_table(&h, body),
                (TABLE_DUMP_V2, s) => match mrt::rib_record(s, body, &mut entries) {
                    Ok(Some(r)) => self.rib_entries(&h, body, r.prefix, r.addpath, &entries),
                    Ok(None) => {
                        self.report.unsupported((h.entry_type, h.subtype));
                        Ok(())
                    }
                    Err(e) => Err(self.bad_record(&h, e.brief())),
                },
                (TABLE_DUMP, 1 | 2) => self.table_dump(&h, body),
                key => {
                    self.report.unsupported(key);
                    Ok(())
                }
            };
            match result {
                Ok(()) => {}
                Err(e @ MrtError::Rib { .. }) => return Err(e),
                Err(e) => self.report.skip(e),
            }
        }
        self.report.bytes = framer.offset();
        self.report.prefixes_v4 = self.prefixes.iter().filter(|p| p.family() == 4).count() as u64;
        self.report.prefixes_v6 = self.prefixes.len() as u64 - self.report.prefixes_v4;
        Ok(())
    }

    fn bad_record(&self, h: &Header, reason: String) -> MrtError {
        MrtError::Record {
            path: self.path.clone(),
            record: self.report.records,
            offset: h.offset,
            entry_type: h.entry_type,
            subtype: h.subtype,
            reason,
        }
    }

    fn rib_error(&self, h: &Header, source: RibError) -> MrtError {
        MrtError::Rib {
            path: self.path.clone(),
            record: self.report.records,
            offset: h.offset,
            source,
        }
    }

    fn add_peer(&mut self, h: &Header, key: PeerKey) -> Result<Arc<PeerInfo>, MrtError> {
        let peer = self
            .rib
            .add_peer(0, key)
            .map_err(|e| self.rib_error(h, e))?;
        self.report.peers += 1;
        Ok(peer)
    }

    /// RFC 6396 §4.3.1: a new table replaces the one before.
    fn peer_table(&mut self, h: &Header, body: &[u8]) -> Result<(), MrtError> {
        let t = mrt::peer_index_table(body).map_err(|e| self.bad_record(h, e.brief()))?;
        let view = (t.collector, t.view);
        // A later dump of the same view (BIRD appends its periodic dumps
        // to one file) supersedes the one before: its peers go down, so
        // the RIB holds the last dump's routes. Dumps of other views (a
        // file of several collectors' dumps) stay side by side.
        if let Some(before) = self.views.remove(&view) {
            for p in before {
                if self.rib.peer_down(p.id) {
                    self.report.superseded_peers += 1;
                }
            }
        }
        let mut table = vec![None; t.peers.len()];
        for p in t.peers {
            let key = PeerKey {
                peer_type: 0,
                distinguisher: 0,
                address: p.addr,
                asn: p.asn,
                bgp_id: p.bgp_id,
                rib: RibKind::Mrt,
            };
            let peer = self.add_peer(h, key)?;
            if let Some(slot) = table.get_mut(usize::from(p.index)) {
                *slot = Some(peer);
            }
        }
        self.views
            .insert(view, table.iter().flatten().cloned().collect());
        self.table = table;
        Ok(())
    }

    /// Decode `raw` attributes of one route into `self.update`: an error
    /// when the route must not be kept (RFC 7606 treat-as-withdraw, or
    /// attributes that do not frame); dropped attributes are counted.
    fn decode(&mut self, raw: &[u8], four_octet: bool) -> Result<(), String> {
        let u = &mut self.update;
        wire::decode_rib_entry_attrs(raw, four_octet, u).map_err(|e| match e {
            WireError::Truncated {
                at,
                what,
                need,
                have,
            } => {
                format!("attributes: {what} needs {need} bytes at attribute byte {at}, {have} left")
            }
            WireError::Malformed { at, what } => {
                format!("attributes: {what} (attribute byte {at})")
            }
        })?;
        if u.treat_as_withdraw {
            let e = u
                .errors
                .iter()
                .find(|e| e.action == ErrorAction::TreatAsWithdraw)
                .map_or_else(
                    || "malformed".to_string(),
                    |e| format!("{} (attribute byte {})", e.what, e.at),
                );
            return Err(format!("attributes: {e}"));
        }
        self.report.attrs_discarded += u.errors.len() as u64;
        Ok(())
    }

    /// The interned set for `raw` attribute bytes of a route of family
    /// `v6`: from the cache, else decoded and interned.
    fn attrs(&mut self, raw: &[u8], v6: bool, addpath: bool) -> Result<Arc<AttrSet>, String> {
        self.key.clear();
        self.key.push(u8::from(v6) | (u8::from(addpath) << 1));
        self.key.extend_from_slice(raw);
        if let Some(a) = self.attr_cache.get(self.key.as_slice()) {
            return Ok(Arc::clone(a));
        }
        self.decode(raw, true)?;
        self.report.attr_decodes += 1;
        let set = self.rib.intern(&AttrsRef::from(&self.update));
        if self.attr_cache.len() >= ATTR_CACHE {
            self.attr_cache.clear();
        }
        self.attr_cache
            .insert(self.key.as_slice().into(), Arc::clone(&set));
        Ok(set)
    }

    fn rib_entries(
        &mut self,
        h: &Header,
        body: &[u8],
        prefix: AnyPrefix,
        addpath: bool,
        entries: &[mrt::RibEntry],
    ) -> Result<(), MrtError> {
        let v6 = prefix.family() == 6;
        self.pending.clear();
        for (i, e) in entries.iter().enumerate() {
            let peer = self
                .table
                .get(usize::from(e.peer_index))
                .and_then(|p| p.clone());
            let taken = match peer {
                None if self.table.is_empty() => {
                    Err("no PEER_INDEX_TABLE before this record".to_string())
                }
                None => Err(format!(
                    "peer index {} is not in the PEER_INDEX_TABLE",
                    e.peer_index
                )),
                Some(peer) => {
                    let raw = body.get(e.attrs.clone()).unwrap_or_default();
                    self.attrs(raw, v6, addpath).map(|a| (peer, a))
                }
            };
            match taken {
                Ok((peer, attrs)) => self.pending.push((peer, e.path_id, attrs)),
                Err(reason) => {
                    let err = MrtError::Entry {
                        path: self.path.clone(),
                        record: self.report.records,
                        entry: i as u16,
                        offset: h.body_at + e.at as u64,
                        peer_index: e.peer_index,
                        reason,
                    };
                    self.report.skip(err);
                }
            }
        }
        self.announce_pending(h, prefix)
    }

    fn announce_pending(&mut self, h: &Header, prefix: AnyPrefix) -> Result<(), MrtError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        for (peer, path_id, attrs) in self.pending.drain(..) {
            match self.rib.announce(&peer, prefix, path_id, &attrs) {
                Ok(true) => self.report.routes += 1,
                Ok(false) => self.report.routes_dropped += 1,
                Err(e) => {
                    return Err(MrtError::Rib {
                        path: self.path.clone(),
                        record: self.report.records,
                        offset: h.offset,
                        source: e,
                    })
                }
            }
        }
        self.prefixes.insert(prefix);
        Ok(())
    }

    /// RFC 6396 §4.2 (deprecated TABLE_DUMP): one route per record, the
    /// peer named in it, 2-byte AS numbers.
    fn table_dump(&mut self, h: &Header, body: &[u8]) -> Result<(), MrtError> {
        let t = mrt::table_dump(h.subtype, body).map_err(|e| self.bad_record(h, e.brief()))?;
        let Some(mrt::TableDump {
            prefix,
            peer_addr: address,
            peer_asn: asn,
            attrs,
            ..
        }) = t
        else {
            self.report.unsupported((h.entry_type, h.subtype));
            return Ok(());
        };
        self.decode(attrs, false)
            .map_err(|reason| self.bad_record(h, reason))?;
        let peer = match self.legacy_peers.get(&(address, asn)) {
            Some(p) => Arc::clone(p),
            None => {
                let key = PeerKey {
                    peer_type: 0,
                    distinguisher: 0,
                    address,
                    asn,
                    bgp_id: 0,
                    rib: RibKind::Mrt,
                };
                let p = self.add_peer(h, key)?;
                self.legacy_peers.insert((address, asn), Arc::clone(&p));
                p
            }
        };
        let attrs = self.rib.intern(&AttrsRef::from(&self.update));
        self.pending.clear();
        self.pending.push((peer, 0, attrs));
        self.announce_pending(h, prefix)
    }
}

// ---------------------------------------------------------------------
// Dumping
// ---------------------------------------------------------------------

/// How [`dump_with`] names the dump.
#[derive(Clone, Debug)]
pub struct DumpOptions {
    /// PEER_INDEX_TABLE collector BGP ID.
    pub collector_bgp_id: Ipv4Addr,
    /// PEER_INDEX_TABLE view name.
    pub view_name: String,
    /// MRT header timestamp of every record (Unix seconds); `None`: now.
    pub timestamp: Option<u32>,
    /// Which instances' routes (default: the global one). MRT has no
    /// place for a route distinguisher, so a dump of a VRF read back
    /// would land in the global instance: dump one scope at a time.
    pub instance: Instance,
    /// Which RIB kinds (default: pre-policy, post-policy, Loc-RIB, MRT).
    pub ribs: RibSet,
}

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            collector_bgp_id: Ipv4Addr::UNSPECIFIED,
            view_name: "ipfib".to_string(),
            timestamp: None,
            instance: Instance::Global,
            ribs: RibSet::DEFAULT,
        }
    }
}

/// What [`dump`] wrote.
#[derive(Debug, Default, Clone)]
pub struct DumpReport {
    /// MRT records: the peer table and the RIB records.
    pub records: u64,
    pub peers: usize,
    pub routes: u64,
    pub prefixes_v4: u64,
    pub prefixes_v6: u64,
    pub bytes: u64,
    /// Routes of peers that came up after the peer table was written
    /// (writers run during a dump), left out.
    pub routes_of_new_peers: u64,
    /// Peers past the 65,535 a peer table holds (the peers up longest
    /// are kept), and their routes, left out.
    pub peers_over_limit: usize,
    pub routes_of_peers_over_limit: u64,
    /// Routes whose attributes MRT cannot carry (an AS_SET of more than
    /// 255 ASNs, attributes over 64 KiB), left out; the first reason.
    pub unencodable: u64,
    pub first_unencodable: Option<String>,
    pub elapsed: Duration,
}

/// Write `rib`'s live routes to `out` as an MRT TABLE_DUMP_V2 dump with
/// [`DumpOptions::default`].
///
/// ```
/// # use ipfib_rib::{attrs::AttrsRef, AsPath, Origin, PeerKey, Rib, RibKind};
/// # use ipfib::prefix::AnyPrefix;
/// # let key = PeerKey { peer_type: 0, distinguisher: 0, address: "192.0.2.1".parse()?,
/// #                     asn: 64500, bgp_id: 1, rib: RibKind::PrePolicy };
/// # let path = AsPath::encode([(2, &[64500, 64501][..])]);
/// # let attrs = AttrsRef { as_path: &path, communities: &[], large_communities: &[],
/// #     next_hop: Some("192.0.2.1".parse()?), origin: Origin::Igp, med: None, local_pref: None };
/// # let pfx: AnyPrefix = "10.0.0.0/8".parse()?;
/// let rib = Rib::new();
/// rib.announce(&*rib.add_peer(1, key)?, pfx, 0, &rib.intern(&attrs))?;
/// let mut out = Vec::new();
/// let report = ipfib_rib::mrt::dump(&rib, &mut out)?;
/// assert_eq!((report.peers, report.routes, report.prefixes_v4), (1, 1, 1));
/// assert_eq!(&out[4..8], [0, 13, 0, 1]); // TABLE_DUMP_V2, PEER_INDEX_TABLE
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn dump(rib: &Rib, out: impl Write) -> Result<DumpReport, io::Error> {
    dump_with(rib, out, &DumpOptions::default())
}

/// Write `rib`'s live routes of one scope (`opts.instance`, `opts.ribs`;
/// by default the global instance) to `out` as an MRT TABLE_DUMP_V2 dump
/// (RFC 6396 §4.3):
/// - one PEER_INDEX_TABLE with every live peer of the scope, in the order
///   they came up, then peer id (at most 65,535: the peers up longest are kept, further
///   ones and their routes are left out and counted in the report);
/// - per prefix (IPv4 then IPv6, each in address order), a
///   RIB_IPV4/IPV6_UNICAST record of its routes without path id and a
///   RIB_IPV4/IPV6_UNICAST_ADDPATH record (RFC 8050) of those with one,
///   entries in the RIB's preference order, originated time = the peer's
///   up time; a prefix with more than 65,535 routes of one kind takes
///   several records; sequence numbers count RIB records from 0;
/// - attributes ORIGIN, AS_PATH (4-byte), NEXT_HOP (IPv4 next hop of an
///   IPv4 route) or the abbreviated MP_REACH_NLRI of §4.3.4 (any other
///   next hop), MED, LOCAL_PREF, COMMUNITIES, LARGE_COMMUNITY, in type
///   order.
///
/// A path id of 0 is written as a route without path id. Each prefix is
/// a consistent snapshot; writers may change the RIB meanwhile. `out` is
/// buffered here.
pub fn dump_with(rib: &Rib, out: impl Write, opts: &DumpOptions) -> Result<DumpReport, io::Error> {
    let started = Instant::now();
    let mut w = Writer {
        out: BufWriter::with_capacity(1 << 16, out),
        timestamp: opts.timestamp.unwrap_or_else(|| clamp_u32(unix_now())),
        body: Vec::with_capacity(1 << 12),
        report: DumpReport::default(),
    };

    // The peer table: the live peers of the scope, and peer id -> index.
    let in_scope = |p: &PeerInfo| {
        opts.ribs.has(p.key.rib) && opts.instance.fits(p.key.peer_type, p.key.distinguisher)
    };
    let mut peers: Vec<Arc<PeerInfo>> = rib
        .peers()
        .all()
        .filter(|p| p.is_up() && in_scope(p))
        .collect();
    // Longest up first: past 65,535 peers, the ones that came last (a
    // sender inventing peers) are left out, not routers up for long.
    peers.sort_unstable_by_key(|p| (p.up_since, p.id));
    let over: std::collections::HashSet<u32> = peers
        .iter()
        .skip(usize::from(u16::MAX))
        .map(|p| p.id)
        .collect();
    peers.truncate(usize::from(u16::MAX));
    w.report.peers_over_limit = over.len();
    let index: std::collections::HashMap<u32, u16> = peers
        .iter()
        .zip(0..=u16::MAX)
        .map(|(p, i)| (p.id, i))
        .collect();
    peer_index_table(&mut w.body, opts, &peers)?;
    w.record(PEER_INDEX_TABLE)?;
    w.report.peers = peers.len();

    let mut prefixes = Vec::new();
    rib.for_each_prefix(|r| {
        if r.iter().any(|e| rib.peers().is_live(e.peer)) {
            prefixes.push(r.prefix);
        }
    });
    prefixes.sort_unstable();

    let mut seq: u32 = 0;
    let mut attrs = Vec::with_capacity(256);
    let mut plain: Vec<(u16, u32, u32, Range)> = Vec::new();
    let mut with_id: Vec<(u16, u32, u32, Range)> = Vec::new();
    for prefix in prefixes {
        let routes = rib.routes(&prefix);
        attrs.clear();
        plain.clear();
        with_id.clear();
        for r in &routes {
            let Some(i) = index.get(&r.peer.id).copied() else {
                if over.contains(&r.peer.id) {
                    w.report.routes_of_peers_over_limit += 1;
                } else if in_scope(&r.peer) {
                    w.report.routes_of_new_peers += 1;
                }
                continue;
            };
            let start = attrs.len();
            if let Err(why) = encode_attrs(&mut attrs, &prefix, &r.attrs) {
                attrs.truncate(start);
                w.report.unencodable += 1;
                if w.report.first_unencodable.is_none() {
                    w.report.first_unencodable = Some(format!(
                        "{prefix} from {} (AS{}): {why}",
                        r.peer.key.address, r.peer.key.asn
                    ));
                }
                continue;
            }
            let entry = (
                i,
                clamp_u32(r.peer.up_since),
                r.path_id,
                (start, attrs.len()),
            );
            if r.path_id == 0 {
                plain.push(entry);
            } else {
                with_id.push(entry);
            }
        }
        let v6 = prefix.family() == 6;
        let kinds = [
            (
                &plain,
                false,
                if v6 {
                    RIB_IPV6_UNICAST
                } else {
                    RIB_IPV4_UNICAST
                },
            ),
            (
                &with_id,
                true,
                if v6 {
                    RIB_IPV6_UNICAST_ADDPATH
                } else {
                    RIB_IPV4_UNICAST_ADDPATH
                },
            ),
        ];
        let mut any = false;
        for (entries, addpath, subtype) in kinds {
            for chunk in entries.chunks(usize::from(u16::MAX)) {
                rib_record_body(&mut w.body, seq, &prefix, addpath, chunk, &attrs);
                seq = seq.wrapping_add(1);
                w.record(subtype)?;
                w.report.routes += chunk.len() as u64;
                any = true;
            }
        }
        if any {
            if v6 {
                w.report.prefixes_v6 += 1;
            } else {
                w.report.prefixes_v4 += 1;
            }
        }
    }
    w.out.flush()?;
    let mut report = w.report;
    report.elapsed = started.elapsed();
    Ok(report)
}

/// A byte range in the attribute buffer of one prefix's routes.
type Range = (usize, usize);

fn clamp_u32(t: i64) -> u32 {
    u32::try_from(t.max(0)).unwrap_or(u32::MAX)
}

struct Writer<W: Write> {
    out: BufWriter<W>,
    timestamp: u32,
    /// The body of the record being written.
    body: Vec<u8>,
    report: DumpReport,
}

impl<W: Write> Writer<W> {
    /// Write a TABLE_DUMP_V2 record of `subtype` around `self.body`.
    fn record(&mut self, subtype: u16) -> io::Result<()> {
        let len = u32::try_from(self.body.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an MRT record over 4 GiB"))?;
        let mut h = [0u8; 12];
        h[..4].copy_from_slice(&self.timestamp.to_be_bytes());
        h[4..6].copy_from_slice(&TABLE_DUMP_V2.to_be_bytes());
        h[6..8].copy_from_slice(&subtype.to_be_bytes());
        h[8..].copy_from_slice(&len.to_be_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&self.body)?;
        self.report.records += 1;
        self.report.bytes += 12 + u64::from(len);
        Ok(())
    }
}

/// RFC 6396 §4.3.1: collector BGP ID, view name, peer count, then per
/// peer its type (bit 0x01: IPv6 address, 0x02: 4-byte AS), BGP ID,
/// address and AS.
fn peer_index_table(
    body: &mut Vec<u8>,
    opts: &DumpOptions,
    peers: &[Arc<PeerInfo>],
) -> io::Result<()> {
    body.clear();
    body.extend_from_slice(&opts.collector_bgp_id.octets());
    let name = opts.view_name.as_bytes();
    let name_len = u16::try_from(name.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an MRT view name holds at most 65,535 bytes",
        )
    })?;
    body.extend_from_slice(&name_len.to_be_bytes());
    body.extend_from_slice(name);
    let count = u16::try_from(peers.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} live peers: an MRT peer table holds at most 65,535",
                peers.len()
            ),
        )
    })?;
    body.extend_from_slice(&count.to_be_bytes());
    for p in peers {
        let k = &p.key;
        let as4 = k.asn > u32::from(u16::MAX);
        let v6 = k.address.is_ipv6();
        body.push(u8::from(v6) | (u8::from(as4) << 1));
        body.extend_from_slice(&k.bgp_id.to_be_bytes());
        match k.address {
            IpAddr::V4(a) => body.extend_from_slice(&a.octets()),
            IpAddr::V6(a) => body.extend_from_slice(&a.octets()),
        }
        if as4 {
            body.extend_from_slice(&k.asn.to_be_bytes());
        } else {
            body.extend_from_slice(&(k.asn as u16).to_be_bytes());
        }
    }
    Ok(())
}

/// RFC 6396 §4.3.2 (and RFC 8050 §4 for `addpath`): sequence number,
/// prefix, entry count, entries (peer index, originated time, path id,
/// attribute length, attributes).
fn rib_record_body(
    body: &mut Vec<u8>,
    seq: u32,
    prefix: &AnyPrefix,
    addpath: bool,
    entries: &[(u16, u32, u32, Range)],
    attrs: &[u8],
) {
    body.clear();
    body.extend_from_slice(&seq.to_be_bytes());
    put_prefix(body, prefix);
    // Callers pass at most 65,535 entries.
    body.extend_from_slice(&(entries.len() as u16).to_be_bytes());
    for &(index, time, path_id, (start, end)) in entries {
        body.extend_from_slice(&index.to_be_bytes());
        body.extend_from_slice(&time.to_be_bytes());
        if addpath {
            body.extend_from_slice(&path_id.to_be_bytes());
        }
        let a = attrs.get(start..end).unwrap_or_default();
        // encode_attrs keeps a route's attributes under 64 KiB.
        body.extend_from_slice(&(a.len() as u16).to_be_bytes());
        body.extend_from_slice(a);
    }
}

/// NLRI encoding: the length, then the bytes that hold it.
fn put_prefix(out: &mut Vec<u8>, prefix: &AnyPrefix) {
    let len = prefix.len();
    out.push(len);
    let n = usize::from(len).div_ceil(8);
    match prefix {
        AnyPrefix::V4(p) => out.extend_from_slice(&p.addr().to_be_bytes()[..n]),
        AnyPrefix::V6(p) => out.extend_from_slice(&p.addr().to_be_bytes()[..n]),
    }
}

/// Append one path attribute (RFC 4271 §4.3): the extended-length flag
/// when the value is over 255 bytes.
fn put_attr(out: &mut Vec<u8>, flags: u8, code: u8, value: &[u8]) -> Result<(), String> {
    match u8::try_from(value.len()) {
        Ok(len) => out.extend_from_slice(&[flags, code, len]),
        Err(_) => {
            let len = u16::try_from(value.len())
                .map_err(|_| format!("attribute {code} is {} bytes long", value.len()))?;
            out.extend_from_slice(&[flags | 0x10, code]);
            out.extend_from_slice(&len.to_be_bytes());
        }
    }
    out.extend_from_slice(value);
    Ok(())
}

/// Attribute flags (RFC 4271 §4.3): well-known, optional transitive,
/// optional non-transitive.
const WELL_KNOWN: u8 = 0x40;
const OPTIONAL_TRANSITIVE: u8 = 0xc0;
const OPTIONAL: u8 = 0x80;

/// Append a route's attributes in type order (RFC 4271 §5: SHOULD); on
/// error `out` may hold part of them (the caller truncates).
fn encode_attrs(out: &mut Vec<u8>, prefix: &AnyPrefix, a: &AttrSet) -> Result<(), String> {
    let start = out.len();
    let mut v = Vec::with_capacity(64);
    // NEXT_HOP only for an IPv4 next hop of an IPv4 route; any other next
    // hop (IPv6 routes, RFC 8950 IPv4 routes over IPv6) in MP_REACH_NLRI,
    // which RFC 6396 §4.3.4 cuts to the next hop length and address (AFI,
    // SAFI and NLRI are the record's).
    let (classic, mp): (Option<[u8; 4]>, Option<&[u8]>) = match (prefix, &a.next_hop) {
        (AnyPrefix::V4(_), Some(IpAddr::V4(nh))) => (Some(nh.octets()), None),
        (_, Some(IpAddr::V4(nh))) => {
            v.push(4);
            v.extend_from_slice(&nh.octets());
            (None, Some(&v[..]))
        }
        (_, Some(IpAddr::V6(nh))) => {
            v.push(16);
            v.extend_from_slice(&nh.octets());
            (None, Some(&v[..]))
        }
        (_, None) => (None, None),
    };
    let mut w = Vec::with_capacity(64);
    put_attr(out, WELL_KNOWN, ORIGIN, &[a.origin as u8])?;
    encode_as_path(&a.as_path, &mut w)?;
    put_attr(out, WELL_KNOWN, AS_PATH, &w)?;
    if let Some(nh) = classic {
        put_attr(out, WELL_KNOWN, NEXT_HOP, &nh)?;
    }
    if let Some(med) = a.med {
        put_attr(out, OPTIONAL, MED, &med.to_be_bytes())?;
    }
    if let Some(lp) = a.local_pref {
        put_attr(out, WELL_KNOWN, LOCAL_PREF, &lp.to_be_bytes())?;
    }
    if !a.communities.is_empty() {
        w.clear();
        for c in a.communities.iter() {
            w.extend_from_slice(&c.to_be_bytes());
        }
        put_attr(out, OPTIONAL_TRANSITIVE, COMMUNITIES, &w)?;
    }
    if let Some(mp) = mp {
        put_attr(out, OPTIONAL, MP_REACH_NLRI, mp)?;
    }
    if !a.large_communities.is_empty() {
        w.clear();
        for l in a.large_communities.iter() {
            for x in l {
                w.extend_from_slice(&x.to_be_bytes());
            }
        }
        put_attr(out, OPTIONAL_TRANSITIVE, LARGE_COMMUNITY, &w)?;
    }
    if out.len() - start > usize::from(u16::MAX) {
        return Err(format!(
            "attributes take {} bytes, a RIB entry holds 65,535",
            out.len() - start
        ));
    }
    Ok(())
}

/// AS_PATH with 4-byte ASNs (RFC 6396 §4.3.4, RFC 6793): a segment holds
/// at most 255 ASNs, so a longer sequence becomes consecutive sequences
/// (the same path); a longer set cannot be split without changing the
/// path and is refused.
fn encode_as_path(p: &AsPath, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    for s in p.segments() {
        if s.asns.len() > 255 && matches!(s.kind, AS_SET | crate::attrs::AS_CONFED_SET) {
            return Err(format!("an AS set of {} ASNs", s.asns.len()));
        }
        if s.asns.is_empty() {
            out.extend_from_slice(&[s.kind, 0]);
        }
        for chunk in s.asns.chunks(255) {
            out.extend_from_slice(&[s.kind, chunk.len() as u8]);
            for asn in chunk {
                out.extend_from_slice(&asn.to_be_bytes());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::AS_SEQUENCE;

    fn path(segments: &[(u8, &[u32])]) -> AsPath {
        AsPath(Arc::from(AsPath::encode(segments.iter().copied())))
    }

    #[test]
    fn as_path_sequences_split_at_255_and_big_sets_are_refused() {
        let long: Vec<u32> = (0..300).collect();
        let mut out = Vec::new();
        encode_as_path(&path(&[(AS_SEQUENCE, &long)]), &mut out).unwrap();
        assert_eq!(out.len(), 2 + 255 * 4 + 2 + 45 * 4);
        assert_eq!(&out[..2], &[AS_SEQUENCE, 255]);
        assert_eq!(&out[2 + 255 * 4..2 + 255 * 4 + 2], &[AS_SEQUENCE, 45]);
        let err = encode_as_path(&path(&[(AS_SET, &long)]), &mut out).unwrap_err();
        assert!(err.contains("set of 300"), "{err}");
    }

    #[test]
    fn long_attributes_take_the_extended_length_flag() {
        let mut out = Vec::new();
        put_attr(&mut out, OPTIONAL_TRANSITIVE, COMMUNITIES, &[7; 256]).unwrap();
        assert_eq!(&out[..4], &[0xd0, COMMUNITIES, 1, 0]);
        assert_eq!(out.len(), 4 + 256);
        out.clear();
        put_attr(&mut out, OPTIONAL_TRANSITIVE, COMMUNITIES, &[7; 255]).unwrap();
        assert_eq!(&out[..3], &[0xc0, COMMUNITIES, 255]);
        assert!(put_attr(&mut out, 0xc0, 8, &vec![0; 70_000]).is_err());
    }

    /// RIB entry attributes go through BMP's decoder: framing errors and
    /// RFC 7606 treat-as-withdraw skip the entry, with the offset; an
    /// attribute discarded is counted and the route kept.
    #[test]
    fn entry_attributes_errors_skip_or_discard() {
        let rib = Rib::new();
        let mut l = Loader::new(Path::new("x.mrt"), &rib);
        assert!(l.decode(&[0x40, 1, 1, 0], true).is_ok());
        let e = l.decode(&[0x40, 1, 1, 0, 0x40, 2, 9, 1], true).unwrap_err();
        assert!(
            e.contains("runs past the end") && e.contains("(attribute byte 4)"),
            "{e}"
        );
        assert!(l.decode(&[0x50, 2, 1], true).is_err());
        // ORIGIN 5: treat-as-withdraw, the entry goes.
        let e = l.decode(&[0x40, 1, 1, 5], true).unwrap_err();
        assert!(e.contains("ORIGIN 5 (attribute byte 0)"), "{e}");
        // A malformed AGGREGATOR (length 3): dropped, the route kept.
        assert!(l
            .decode(&[0x40, 1, 1, 2, 0xc0, 7, 3, 1, 2, 3], true)
            .is_ok());
        assert_eq!(l.report.attrs_discarded, 1);
        assert_eq!(l.update.origin, crate::attrs::Origin::Incomplete);
    }

    #[test]
    fn rib_record_framing_errors_name_the_field() {
        let mut entries = Vec::new();
        // Sequence, /24 prefix, one entry whose attributes are cut.
        let body = [0, 0, 0, 1, 24, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 1];
        let e = mrt::rib_record(RIB_IPV4_UNICAST, &body, &mut entries)
            .unwrap_err()
            .brief();
        assert!(e.contains("entry 0: attributes needs 9 bytes"), "{e}");
        let e = mrt::rib_record(RIB_IPV4_UNICAST, &[0, 0, 0, 1, 33, 0], &mut entries)
            .unwrap_err()
            .brief();
        assert!(e.contains("prefix length 33"), "{e}");
    }
}
