//! MRT (RFC 6396) through bgpkit-parser: RIB dumps (TABLE_DUMP,
//! TABLE_DUMP_V2) and update streams (BGP4MP) as route tables, and BGP4MP
//! as typed update events.
//!
//! ```text
//!  bytes ─► frame.rs ─► body.rs ──────────► rib.rs ──────────► Vec<Route>
//!           header,     parse_mrt_body      per-peer routes     one value per prefix
//!           bound,      (bgpkit-parser);    to a value          (policy.rs)
//!           offsets     RIB_GENERIC rewrite     ▲
//!                              └─► updates.rs ──┘ (BGP4MP replayed)
//! ```
//!
//! Damage: a record whose framing is fine but whose body does not parse is
//! skipped and counted ([`Report::bad`], its error kept with its offset);
//! a header that breaks framing stops the read there ([`Report::damage`]).
//! Strict mode turns either into an error. A panic inside bgpkit-parser on
//! a record's body is caught ([`body::guarded`]) and treated like a body
//! that does not parse, as [`ReadError::ParserPanic`].

mod body;
pub(crate) mod frame;
mod rib;
mod updates;

pub use frame::{Frame, Framer, MAX_BODY};
pub use rib::PeerInfo;

use crate::error::ReadError;
use crate::format::Format;
use crate::policy::{Origin, Origins, ValuePolicy};
use crate::read::Route;
use crate::report::Report;
pub use crate::stats::MrtStats;
use crate::update::{Change, Event, ESTABLISHED};
use bgpkit_parser::models::{AsPathSegment, Attributes};
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
    let mut dump_routes = Vec::new();
    let mut framer = Framer::new(reader);
    let kept = body::kept_attributes(
        policy == ValuePolicy::OriginAsn,
        matches!(policy, ValuePolicy::NextHop(_)),
    );
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
        // bgpkit-parser runs inside `guarded`: the parse, and every read of
        // the attributes it returned (`route`, `updates::events`).
        let applied = body::guarded(|| match body::parse(&frame, &kept)? {
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
                for e in &entries {
                    let peer = u32::from(e.peer_index);
                    let path_id = e.path_id.unwrap_or(0);
                    let family = prefix.family();
                    scratch.push(route(
                        &mut rib.builder,
                        peer,
                        path_id,
                        &e.attributes,
                        family,
                    ));
                }
                rib.builder.add_rib(prefix, record, &scratch);
                Ok(())
            }
            Body::TableDump(messages) => {
                // Every message read before any is announced, so a record
                // that fails (or panics) part way is skipped whole.
                dump_routes.clear();
                for m in messages {
                    let prefix = body::prefix_of(&m.prefix.prefix)?;
                    let peer = rib.builder.peer(PeerInfo {
                        addr: m.peer_ip,
                        asn: m.peer_asn.to_u32(),
                    });
                    let r = route(&mut rib.builder, peer, 0, &m.attributes, prefix.family());
                    dump_routes.push((prefix, r));
                }
                for (prefix, r) in dump_routes.drain(..) {
                    rib.builder.announce(prefix, record, r);
                }
                Ok(())
            }
            Body::Bgp4mp(m) => {
                events.clear();
                updates::events(&frame, m, &mut events)?;
                for ev in &events {
                    rib.apply(record, ev);
                }
                Ok(())
            }
        });
        if let Err(reason) = applied {
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

/// A RIB entry's route, reading only what the policy needs.
fn route(
    builder: &mut RibBuilder,
    peer: u32,
    path_id: u32,
    attrs: &Attributes,
    family: u8,
) -> PeerRoute {
    let origin = if builder.wants_origin() {
        let peer_asn = builder.peer_asn(peer);
        origin_of(attrs, peer_asn, &mut builder.origins)
    } else {
        Origin::Asn(0)
    };
    let next_hop = if builder.is_selected(peer) {
        updates::next_hop_of(attrs, family)
    } else {
        None
    };
    PeerRoute {
        peer,
        path_id,
        origin,
        next_hop,
    }
}

/// The origin of a route (see `policy.rs`): the last AS of the last
/// non-empty AS_SEQUENCE or AS_SET (confederation segments skipped), after
/// the RFC 6793 merge when AS4_PATH is present; else the peer's AS.
fn origin_of(attrs: &Attributes, peer_asn: Option<u32>, origins: &mut Origins) -> Origin {
    let merged;
    let path = match (attrs.as_path(), attrs.as4_path()) {
        (Some(p), None) | (None, Some(p)) => p,
        (None, None) => return Origin::Asn(peer_asn.unwrap_or(0)),
        (Some(_), Some(_)) => match attrs.effective_as_path() {
            Some(p) => {
                merged = p;
                &merged
            }
            None => return Origin::Asn(peer_asn.unwrap_or(0)),
        },
    };
    for segment in path.iter_segments().rev() {
        match segment {
            AsPathSegment::AsSequence(v) => {
                if let Some(a) = v.last() {
                    return Origin::Asn(a.to_u32());
                }
            }
            AsPathSegment::AsSet(v) if !v.is_empty() => {
                return origins.set(v.iter().map(|a| a.to_u32()).collect());
            }
            _ => {}
        }
    }
    Origin::Asn(peer_asn.unwrap_or(0))
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
            // Update streams carry no RIB entries to cut.
            let (buf, report) = (&mut self.buf, &mut self.report);
            let result = body::guarded(|| match body::parse(&frame, &[])? {
                Body::Bgp4mp(m) => Ok(updates::events(&frame, m, buf)?),
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

    /// No input found so far makes bgpkit-parser 0.23 panic through our
    /// framing, so the panic is injected where `body::parse` calls it.
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
                 panicked: injected panic standing in for bgpkit-parser",
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
