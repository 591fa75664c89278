//! MRT (RFC 6396): RIB dumps (TABLE_DUMP, TABLE_DUMP_V2) and update
//! streams (BGP4MP) as route tables, and BGP4MP as typed update events.
//!
//! ```text
//!  bytes ─► frame.rs ─► body.rs ──────────► rib.rs ──────────► Vec<Route>
//!           header,     crate::bgp::mrt     per-peer routes     one value per prefix
//!           bound,      (record bodies),    to a value          (policy.rs)
//!           offsets     crate::bgp (attrs)      ▲
//!                              └─► updates.rs ──┘ (BGP4MP replayed)
//! ```
//!
//! Records and their BGP content go through [`crate::bgp`], the decoder
//! the RIB's BMP sessions and MRT loader use: one decoder, one set of
//! RFC 7606 error classes. A RIB entry whose attributes cannot be
//! located, or whose value comes from an attribute RFC 7606 would treat
//! as withdrawn, is left out of the table, counted
//! ([`MrtStats::entries_skipped`]) and reported like a bad record (its
//! error kept with the record's offset; strict mode stops there); the rest
//! of its record is kept. Errors in attributes the value policy does not
//! read leave the route in.
//!
//! Damage: a record whose framing is fine but whose body does not parse is
//! skipped and counted ([`Report::bad`], its error kept with its offset);
//! a header that breaks framing stops the read there ([`Report::damage`]).
//! Strict mode turns either into an error. A panic while decoding a
//! record's body (a bug) is caught ([`body::guarded`]) and treated like a
//! body that does not decode, as [`ReadError::ParserPanic`].

mod body;
pub(crate) mod frame;
mod rib;
mod updates;

pub use frame::{Frame, Framer, MAX_BODY};
pub use rib::PeerInfo;

use crate::bgp::{self, AS_SEQUENCE, AS_SET};
use crate::error::ReadError;
use crate::format::Format;
use crate::policy::{Origin, Origins, ValuePolicy};
use crate::read::Route;
use crate::report::Report;
pub use crate::stats::MrtStats;
use crate::update::{Change, Event, ESTABLISHED};
use body::{Body, RecordError};
use rib::{PeerRoute, RibBuilder};
use std::io::BufRead;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

/// Load an MRT stream as a table of one value per prefix.
pub(crate) fn load(
    reader: &mut dyn BufRead,
    path: &Path,
    policy: ValuePolicy,
    strict: bool,
) -> Result<(Vec<Route>, Report), ReadError> {
    let mut report = Report::new(Format::Mrt);
    let mut rib = Replayer::new(policy);
    let mut scratch = Vec::new();
    let mut events = Vec::new();
    let mut entries = Vec::new();
    let mut entry_errors: Vec<String> = Vec::new();
    let mut u = bgp::Update::default();
    let mut framer = Framer::new(reader);
    while let Some(frame) = framer.next_frame() {
        let frame = match frame {
            Ok(f) => f,
            Err(damage) if strict => {
                return Err(ReadError::Damaged {
                    path: path.to_path_buf(),
                    damage,
                })
            }
            Err(damage) => {
                report.damage = Some(damage);
                break;
            }
        };
        report.records += 1;
        let record = report.records;
        // The decoding runs inside `guarded`, and every read of what it
        // returned (`route`, `updates::events`).
        entry_errors.clear();
        let applied = body::guarded(|| match body::parse(&frame, &mut entries)? {
            Body::Unsupported => {
                report.unsupported((frame.entry_type, frame.subtype));
                Ok(())
            }
            Body::Nothing => Ok(()),
            Body::PeerTable(peers) => {
                rib.builder.set_peer_table(peers);
                Ok(())
            }
            Body::Rib { prefix, entries } => {
                scratch.clear();
                for (i, e) in entries.iter().enumerate() {
                    let attrs = frame.body.get(e.attrs.clone()).unwrap_or_default();
                    let peer = u32::from(e.peer_index);
                    let family = prefix.family();
                    match route(
                        &mut rib.builder,
                        &mut u,
                        peer,
                        e.path_id,
                        attrs,
                        true,
                        family,
                    ) {
                        Ok(r) => scratch.push(r),
                        Err(why) => entry_errors.push(format!(
                            "entry {i} (peer index {}, body byte {}): {why}",
                            e.peer_index, e.at
                        )),
                    }
                }
                rib.builder.add_rib(prefix, record, &scratch);
                Ok(())
            }
            Body::TableDump(t) => {
                let peer = rib.builder.peer(PeerInfo {
                    addr: t.peer_addr,
                    asn: t.peer_asn,
                });
                let family = t.prefix.family();
                match route(&mut rib.builder, &mut u, peer, 0, t.attrs, false, family) {
                    Ok(r) => rib.builder.announce(t.prefix, record, r),
                    Err(why) => entry_errors.push(why),
                }
                Ok(())
            }
            Body::Bgp4mp(m) => {
                events.clear();
                updates::events(&frame, m, &mut u, &mut events)?;
                for ev in &events {
                    rib.apply(record, ev);
                }
                Ok(())
            }
        });
        // A record read whole, some of whose entries were left out: each
        // such entry is reported like a bad record (counted, its error
        // kept; strict mode stops at it).
        let failed = applied
            .err()
            .into_iter()
            .chain(entry_errors.drain(..).map(|why| {
                rib.stats.entries_skipped += 1;
                RecordError::Bad(why)
            }));
        for reason in failed {
            let e = bad_record(path, record, &frame, reason);
            if strict {
                return Err(e);
            }
            report.skip(e);
        }
    }
    report.bytes = framer.offset();
    let (routes, stats) = rib.finish(path)?;
    report.mrt = Some(stats);
    Ok((routes, report))
}

fn bad_record(path: &Path, record: u64, frame: &Frame, error: RecordError) -> ReadError {
    let path = path.to_path_buf();
    let (offset, entry_type, subtype) = (frame.offset, frame.entry_type, frame.subtype);
    match error {
        RecordError::Bad(reason) => ReadError::BadRecord {
            path,
            record,
            offset,
            entry_type,
            subtype,
            reason,
        },
        RecordError::Panicked(message) => ReadError::ParserPanic {
            path,
            record,
            offset,
            entry_type,
            subtype,
            message,
        },
    }
}

/// `--peer` naming no peer of the dump is an error, not an empty table.
fn check_peer_selected(builder: &RibBuilder, path: &Path) -> Result<(), ReadError> {
    let ValuePolicy::NextHop(selector) = builder.policy else {
        return Ok(());
    };
    if (0..builder.peers.len() as u32).any(|i| builder.is_selected(i)) {
        return Ok(());
    }
    Err(ReadError::Policy {
        path: path.to_path_buf(),
        reason: format!(
            "no peer with {selector} in this dump ({} peers; `ipfib info` lists them)",
            builder.peers.len()
        ),
    })
}

/// A RIB built from RIB records and replayed update events.
pub(crate) struct Replayer {
    builder: RibBuilder,
    stats: MrtStats,
}

impl Replayer {
    pub fn new(policy: ValuePolicy) -> Self {
        Replayer {
            builder: RibBuilder::new(policy),
            stats: MrtStats::default(),
        }
    }

    /// Apply one event from record (or line) `record`. A text update
    /// stream names no peer: its updates all come from one unnamed peer
    /// (index 0, address 0.0.0.0, AS 0).
    pub fn apply(&mut self, record: u64, ev: &Event) {
        let builder = &mut self.builder;
        let mut peer_of = |p: &crate::update::PeerId| {
            builder.peer(PeerInfo {
                addr: p.addr.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
                asn: p.asn.unwrap_or(0),
            })
        };
        match ev {
            Event::PeerState { peer, old, new, .. } => {
                self.stats.state_changes += 1;
                let p = peer_of(peer);
                if *old == ESTABLISHED && *new != ESTABLISHED {
                    self.builder.flush_peer(p);
                }
            }
            Event::Update(u) => {
                let peer = peer_of(&u.peer);
                let path_id = u.path_id.unwrap_or(0);
                match &u.change {
                    Change::Withdraw => {
                        self.stats.withdrawals += 1;
                        self.builder.withdraw(u.prefix, peer, path_id);
                    }
                    Change::Announce { next_hop, as_path } => {
                        self.stats.announcements += 1;
                        let peer_asn = self.builder.peer_asn(peer);
                        let origin = match as_path {
                            Some(p) => origin_of_segments(p, peer_asn, &mut self.builder.origins),
                            None => Origin::Asn(peer_asn.unwrap_or(0)),
                        };
                        let r = PeerRoute {
                            peer,
                            path_id,
                            origin,
                            next_hop: *next_hop,
                        };
                        self.builder.announce(u.prefix, record, r);
                    }
                }
            }
        }
    }

    /// The table, and what was found on the way.
    pub fn finish(self, path: &Path) -> Result<(Vec<Route>, MrtStats), ReadError> {
        let mut stats = self.stats;
        let (routes, reduce, builder) = self.builder.finish();
        check_peer_selected(&builder, path)?;
        stats.rib_entries = builder.rib_entries;
        stats.peers = builder.peers;
        stats.reduce = reduce;
        Ok((routes, stats))
    }
}

/// A RIB entry's route, reading only what the policy needs. `Err` (why)
/// when its attributes cannot be located, or when an attribute the value
/// comes from is malformed in a way RFC 7606 answers with
/// "treat-as-withdraw" (AS_PATH for origins, NEXT_HOP and MP_REACH_NLRI
/// for the selected peer's next hop); errors in attributes the policy does
/// not read leave the route in. `four_octet`: AS numbers of 4 bytes
/// (TABLE_DUMP_V2) or 2 (TABLE_DUMP).
fn route(
    builder: &mut RibBuilder,
    u: &mut bgp::Update,
    peer: u32,
    path_id: u32,
    attrs: &[u8],
    four_octet: bool,
    family: u8,
) -> Result<PeerRoute, String> {
    bgp::decode_rib_entry_attrs(attrs, four_octet, u)
        .map_err(|e| format!("attributes: {}", e.brief()))?;
    let selected = builder.is_selected(peer);
    let read: &[u8] = if builder.wants_origin() {
        &[2]
    } else if selected {
        &[3, 14]
    } else {
        &[]
    };
    let fatal = u
        .errors
        .iter()
        .find(|e| e.action == bgp::ErrorAction::TreatAsWithdraw && read.contains(&e.code));
    if let Some(e) = fatal {
        return Err(format!("attributes: {} (attribute byte {})", e.what, e.at));
    }
    let origin = if builder.wants_origin() {
        let peer_asn = builder.peer_asn(peer);
        origin_of(&u.as_path, peer_asn, &mut builder.origins)
    } else {
        Origin::Asn(0)
    };
    // IPv6 routes carry their next hop in MP_REACH_NLRI, IPv4 routes in
    // NEXT_HOP (RFC 8950 routes in MP_REACH).
    let next_hop = if !selected {
        None
    } else if family == 6 {
        u.next_hop_mp.or(u.next_hop_v4)
    } else {
        u.next_hop_v4.or(u.next_hop_mp)
    };
    Ok(PeerRoute {
        peer,
        path_id,
        origin,
        next_hop,
    })
}

/// The origin of a route (see `policy.rs`): the last AS of the last
/// non-empty AS_SEQUENCE or AS_SET (confederation segments skipped) of the
/// path (RFC 6793 merge of AS4_PATH done by the decoder); else the peer's
/// AS.
fn origin_of(words: &[u32], peer_asn: Option<u32>, origins: &mut Origins) -> Origin {
    let path = bgp::AsPath(words.into());
    let mut origin = None;
    for s in path.segments() {
        match s.kind {
            AS_SEQUENCE if !s.asns.is_empty() => origin = Some((AS_SEQUENCE, s.asns)),
            AS_SET if !s.asns.is_empty() => origin = Some((AS_SET, s.asns)),
            _ => {}
        }
    }
    match origin {
        Some((AS_SEQUENCE, asns)) => Origin::Asn(asns.last().copied().unwrap_or(0)),
        Some((_, asns)) => origins.set(asns.to_vec()),
        None => Origin::Asn(peer_asn.unwrap_or(0)),
    }
}

/// [`origin_of`] for a path already converted to ours (update events).
fn origin_of_segments(
    path: &[crate::update::AsSegment],
    peer_asn: Option<u32>,
    origins: &mut Origins,
) -> Origin {
    use crate::update::AsSegment;
    for segment in path.iter().rev() {
        match segment {
            AsSegment::Sequence(v) => {
                if let Some(&a) = v.last() {
                    return Origin::Asn(a);
                }
            }
            AsSegment::Set(v) if !v.is_empty() => return origins.set(v.clone()),
            _ => {}
        }
    }
    Origin::Asn(peer_asn.unwrap_or(0))
}

/// BGP4MP update events from an MRT stream, lazily: one record is parsed
/// at a time, its events buffered (at most what one 64 KiB BGP message
/// holds).
pub(crate) struct MrtEvents<R> {
    framer: Framer<R>,
    pending: std::collections::VecDeque<Event>,
    buf: Vec<Event>,
    entries: Vec<bgp::mrt::RibEntry>,
    update: Box<bgp::Update>,
    pub report: Report,
    path: std::path::PathBuf,
    strict: bool,
    failed: bool,
}

impl<R: BufRead> MrtEvents<R> {
    pub fn new(reader: R, path: &Path, strict: bool) -> Self {
        MrtEvents {
            framer: Framer::new(reader),
            pending: Default::default(),
            buf: Vec::new(),
            entries: Vec::new(),
            update: Box::default(),
            report: Report::new(Format::Mrt),
            path: path.to_path_buf(),
            strict,
            failed: false,
        }
    }

    pub fn next_event(&mut self) -> Option<Result<Event, ReadError>> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Some(Ok(e));
            }
            if self.failed {
                return None;
            }
            let frame = match self.framer.next_frame() {
                None => {
                    self.report.bytes = self.framer.offset();
                    return None;
                }
                Some(Ok(f)) => f,
                Some(Err(damage)) => {
                    self.report.bytes = self.framer.offset();
                    if self.strict {
                        self.failed = true;
                        return Some(Err(ReadError::Damaged {
                            path: self.path.clone(),
                            damage,
                        }));
                    }
                    self.report.damage = Some(damage);
                    return None;
                }
            };
            self.report.records += 1;
            self.buf.clear();
            let (buf, report) = (&mut self.buf, &mut self.report);
            let (entries, u) = (&mut self.entries, &mut self.update);
            let result = body::guarded(|| match body::parse(&frame, entries)? {
                Body::Bgp4mp(m) => Ok(updates::events(&frame, m, u, buf)?),
                Body::Unsupported => {
                    report.unsupported((frame.entry_type, frame.subtype));
                    Ok(())
                }
                _ => Ok(()),
            });
            match result {
                Ok(()) => self.pending.extend(self.buf.drain(..)),
                Err(reason) => {
                    let e = bad_record(&self.path, self.report.records, &frame, reason);
                    if self.strict {
                        self.failed = true;
                        return Some(Err(e));
                    }
                    self.report.skip(e);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(dead_code)]
#[path = "../../tests/common/mrt.rs"]
mod fixtures;

#[cfg(test)]
mod tests {
    use super::body::tests::arm;
    use super::fixtures;
    use crate::{load_table_from, read_updates_from, Format, ReadError, TableOptions};
    use std::io::Cursor;

    fn opts(strict: bool) -> TableOptions {
        TableOptions {
            format: Format::Mrt,
            strict,
            ..Default::default()
        }
    }

    /// The decoders do not panic on any input found (fuzzed), so the
    /// panic is injected where `body::parse` decodes.
    #[test]
    fn a_panic_inside_the_mrt_parser_becomes_an_error_naming_file_and_offset() {
        let (bytes, starts) = fixtures::small_rib();
        arm(true);
        let lenient = load_table_from(Cursor::new(bytes.clone()), "rib.mrt", &opts(false));
        let strict = load_table_from(Cursor::new(bytes.clone()), "rib.mrt", &opts(true));
        let mut updates = read_updates_from(Cursor::new(bytes), "rib.mrt", &opts(true)).unwrap();
        let first_update = updates.next();
        arm(false);

        let l = lenient.unwrap();
        assert!(l.routes.is_empty());
        assert_eq!(l.report.bad, l.report.records, "every record skipped");
        let e = &l.report.errors[0];
        assert!(
            matches!(
                e,
                ReadError::ParserPanic {
                    record: 1,
                    offset: 0,
                    entry_type: 13,
                    subtype: 1,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = &l.report.errors[1];
        assert_eq!(
            e.to_string(),
            format!(
                "rib.mrt: MRT record 2 at byte {} (type 13, subtype 2): the MRT parser \
                 panicked: injected panic standing in for a decoder bug",
                starts[1]
            )
        );
        let e = strict.unwrap_err();
        assert!(matches!(e, ReadError::ParserPanic { offset: 0, .. }), "{e}");
        assert!(
            matches!(
                first_update,
                Some(Err(ReadError::ParserPanic { offset: 0, .. }))
            ),
            "{first_update:?}"
        );
    }
}
