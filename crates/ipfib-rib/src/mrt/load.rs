//! The loader: MRT records framed, their bodies decoded by
//! `ipfib_io::bgp`, routes announced into the RIB, the report kept.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use ipfib::prefix::AnyPrefix;
use ipfib_io::bgp::mrt::{self, PEER_INDEX_TABLE, TABLE_DUMP, TABLE_DUMP_V2};
use ipfib_io::bgp::{self as wire, ErrorAction, Update, WireError};
use ipfib_io::{Frame, Framer};

use super::report::{LoadReport, MrtError};
use crate::attrs::{AttrSet, AttrsRef};
use crate::peers::{PeerInfo, PeerKey, RibKind};
use crate::rib::{Rib, RibError};

/// Distinct raw attribute sets remembered during a load; past either
/// bound the memory starts afresh. Real sets are about 150 bytes, but a
/// file says how long its own are (up to 64 KiB each): the byte bound
/// keeps a hostile file from holding gigabytes here.
const ATTR_CACHE: usize = 1 << 16;
const ATTR_CACHE_BYTES: usize = 32 << 20;
/// Longer attribute byte strings are decoded each time, not remembered.
const ATTR_CACHE_MAX_KEY: usize = 4096;

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

pub(super) struct Loader<'r> {
    path: PathBuf,
    rib: &'r Rib,
    pub(super) report: LoadReport,
    /// The current PEER_INDEX_TABLE: index -> RIB peer.
    table: Vec<Option<Arc<PeerInfo>>>,
    /// The peers of each view (collector BGP ID, view name) read so far.
    views: HashMap<(Ipv4Addr, String), Vec<Arc<PeerInfo>>>,
    /// TABLE_DUMP peers by (address, AS).
    legacy_peers: HashMap<(IpAddr, u32), Arc<PeerInfo>>,
    /// Raw attribute bytes (after one byte of context: family) -> set.
    attr_cache: HashMap<Box<[u8]>, Arc<AttrSet>>,
    /// Key bytes held by `attr_cache`.
    attr_cache_bytes: usize,
    key: Vec<u8>,
    pub(super) update: Update,
    prefixes: HashSet<AnyPrefix>,
    /// One record's routes, announced once the whole record was read.
    pending: Vec<(Arc<PeerInfo>, u32, Arc<AttrSet>)>,
}

impl<'r> Loader<'r> {
    pub(super) fn new(path: &Path, rib: &'r Rib) -> Self {
        Loader {
            path: path.to_path_buf(),
            rib,
            report: LoadReport::default(),
            table: Vec::new(),
            views: HashMap::new(),
            legacy_peers: HashMap::new(),
            attr_cache: HashMap::new(),
            attr_cache_bytes: 0,
            key: Vec::new(),
            update: Update::default(),
            prefixes: HashSet::new(),
            pending: Vec::new(),
        }
    }

    pub(super) fn run(&mut self, reader: Box<dyn BufRead + Send>) -> Result<(), MrtError> {
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
    pub(super) fn decode(&mut self, raw: &[u8], four_octet: bool) -> Result<(), String> {
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
        if self.key.len() > ATTR_CACHE_MAX_KEY {
            return Ok(set);
        }
        if self.attr_cache.len() >= ATTR_CACHE || self.attr_cache_bytes >= ATTR_CACHE_BYTES {
            self.attr_cache.clear();
            self.attr_cache_bytes = 0;
        }
        self.attr_cache_bytes += self.key.len();
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
