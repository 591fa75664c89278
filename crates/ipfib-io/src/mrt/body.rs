//! One framed record's body, decoded by [`crate::bgp::mrt`] (the MRT
//! bodies that carry BGP) and sorted into what the loaders use.
//!
//! [`guarded`] runs one record's decoding, and the reading of what it
//! returned, with a panic turned into [`RecordError::Panicked`]: the
//! decoders are written not to panic (ipfib-io's lints forbid indexing and
//! unwrapping), and a bug that slipped through still costs one record,
//! not the read.

use super::frame::Frame;
use super::rib::PeerInfo;
use crate::bgp::mrt::{
    self, Bgp4mp, RibEntry, TableDump, BGP4MP, BGP4MP_ET, GEO_PEER_TABLE, PEER_INDEX_TABLE,
    TABLE_DUMP, TABLE_DUMP_V2,
};
use ipfib::prefix::AnyPrefix;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a record holds, for our purposes.
pub(crate) enum Body<'a> {
    PeerTable(Vec<Option<PeerInfo>>),
    /// A unicast TABLE_DUMP_V2 RIB record; its entries' attributes are
    /// `frame.body[entry.attrs]`.
    Rib {
        prefix: AnyPrefix,
        entries: &'a [RibEntry],
    },
    TableDump(TableDump<'a>),
    Bgp4mp(Bgp4mp<'a>),
    /// Decoded, but holds no unicast routes (a GEO_PEER_TABLE).
    Nothing,
    /// A type or subtype we do not read: OSPF, IS-IS, legacy BGP,
    /// BGP4MP_ENTRY, multicast or non-unicast RIB_GENERIC records.
    Unsupported,
}

/// Why one framed record was not used.
#[derive(Debug)]
pub(crate) enum RecordError {
    /// The body does not decode (the decoder's reason, with its byte
    /// offset in the body).
    Bad(String),
    /// The decoding, or our reading of what it returned, panicked; the
    /// panic's message.
    Panicked(String),
}

impl From<String> for RecordError {
    fn from(reason: String) -> Self {
        RecordError::Bad(reason)
    }
}

/// Run `f`, the decoding of one record and the reading of its decoded
/// form, with a panic inside it turned into [`RecordError::Panicked`].
///
/// `AssertUnwindSafe` is sound here because nothing `f` touches is left
/// half-changed by an unwind: the decoders keep no state between calls,
/// and the callers' own state that `f` mutates is changed one whole
/// operation at a time (a peer or an AS set interned, a record's routes
/// announced after all of them were read), so a panic lands between two
/// complete operations. The record is then reported as skipped; the read
/// goes on with the next one.
///
/// The panic hook still runs (the default one prints the panic to
/// stderr): silencing it would mean swapping the process-wide hook, which
/// races with every other thread that panics or sets a hook meanwhile.
/// With `panic = "abort"` nothing can be caught and the process ends.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, RecordError>) -> Result<T, RecordError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => Err(RecordError::Panicked(panic_message(payload.as_ref()))),
    }
}

/// The message of a panic payload (`panic!` with a literal gives `&str`,
/// with arguments `String`).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Decode one body; RIB entries go to `entries` (reused from record to
/// record). `Err` carries the decoder's reason. Call it inside
/// [`guarded`].
pub(crate) fn parse<'a>(
    frame: &'a Frame,
    entries: &'a mut Vec<RibEntry>,
) -> Result<Body<'a>, RecordError> {
    #[cfg(test)]
    tests::panic_if_armed();
    let (subtype, body) = (frame.subtype, frame.body.as_ref());
    let bad = |e: crate::bgp::WireError| RecordError::Bad(e.brief());
    Ok(match frame.entry_type {
        TABLE_DUMP => match mrt::table_dump(subtype, body).map_err(bad)? {
            Some(t) => Body::TableDump(t),
            None => Body::Unsupported,
        },
        TABLE_DUMP_V2 => match subtype {
            PEER_INDEX_TABLE => {
                let t = mrt::peer_index_table(body).map_err(bad)?;
                let peers = t
                    .peers
                    .iter()
                    .map(|p| {
                        Some(PeerInfo {
                            addr: p.addr,
                            asn: p.asn,
                        })
                    })
                    .collect();
                Body::PeerTable(peers)
            }
            GEO_PEER_TABLE => Body::Nothing,
            _ => match mrt::rib_record(subtype, body, entries).map_err(bad)? {
                Some(r) => Body::Rib {
                    prefix: r.prefix,
                    entries,
                },
                None => Body::Unsupported,
            },
        },
        BGP4MP | BGP4MP_ET => match mrt::bgp4mp(subtype, body).map_err(bad)? {
            Some(m) => Body::Bgp4mp(m),
            None => Body::Unsupported,
        },
        _ => Body::Unsupported,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::Cell;

    thread_local! {
        /// Set by a test to make [`super::parse`] panic where it
        /// decodes the body (per thread: tests run in parallel).
        static ARMED: Cell<bool> = const { Cell::new(false) };
    }

    /// Make the next parses on this thread panic, as a decoder bug would.
    pub(crate) fn arm(on: bool) {
        ARMED.with(|a| a.set(on));
    }

    pub(super) fn panic_if_armed() {
        if ARMED.with(Cell::get) {
            panic!("injected panic standing in for a decoder bug");
        }
    }
}
