//! Traffic classification as a library: FastNetMon's job on a capture
//! file or a live interface (the `ipfib classify` command is argument
//! parsing and printing around it). Every IP packet's source and
//! destination are looked up in a table of the operator's networks (a
//! network's value is its hostgroup), the packet's direction decided, and
//! packets and bytes counted per network, per hostgroup, per host and per
//! remote source in 1-second windows, with thresholds on a host's
//! incoming rate raising alerts.
//!
//! ```text
//!  pcap / pcapng --capture::Capture--+
//!                                    +--> frames --decode--> count::Classifier --> report
//!                                         (or fan::Fan: the counting on N threads)
//!  AF_PACKET ring ------live::capture-+          (lookups through `Networks`)
//! ```
//!
//! Where to start reading:
//! - `capture.rs`: pcap and pcapng, streamed, damage located;
//! - `live.rs`: an AF_PACKET TPACKET_V3 ring (Linux);
//! - `decode.rs`: link layers and IP headers;
//! - `count.rs`: the counters, windows, hosts and alerts;
//! - `fan.rs`: the same count on N threads;
//! - `report.rs`: the human report and the JSON document;
//! - `synth.rs`: the in-memory benchmark (`--synthetic N`).

pub mod capture;
pub mod count;
pub mod decode;
pub mod fan;
pub mod live;
pub mod report;
pub mod synth;

use capture::{Capture, Damage, ReadError};
use fan::Count;
use ipfib::engine::Engine;
use ipfib::image::ImageTable;
use ipfib::prefix::Prefix;
use ipfib::table::CompiledTable;
use std::io::Read;

/// Addresses in flight per engine batch (`lookup_batch::<M>`).
const LANES: usize = 32;

/// The operator's networks as the classifier asks for them: route
/// ordinals for batches of addresses of each family, and the route (prefix
/// and hostgroup) behind an ordinal. Implemented for the core's compiled
/// tables, built in memory or mapped from a file.
pub trait Networks {
    /// Route ordinals of `addrs` (`NO_ROUTE` on a miss).
    fn batch_v4(&self, addrs: &[u32], ordinals: &mut [u32]);
    fn batch_v6(&self, addrs: &[u128], ordinals: &mut [u32]);
    /// The route behind an ordinal of `batch_v4`; `None` for `NO_ROUTE`
    /// (or any ordinal not below [`Networks::routes_v4`]).
    fn route_v4(&self, ordinal: u32) -> Option<(Prefix<u32>, &str)>;
    fn route_v6(&self, ordinal: u32) -> Option<(Prefix<u128>, &str)>;
    /// Ordinals are below these.
    fn routes_v4(&self) -> usize;
    fn routes_v6(&self) -> usize;
}

impl<E4: Engine<u32>, E6: Engine<u128>> Networks for CompiledTable<String, E4, E6> {
    #[inline]
    fn batch_v4(&self, addrs: &[u32], ordinals: &mut [u32]) {
        self.v4.lookup_batch::<LANES>(addrs, ordinals)
    }
    #[inline]
    fn batch_v6(&self, addrs: &[u128], ordinals: &mut [u32]) {
        self.v6.lookup_batch::<LANES>(addrs, ordinals)
    }
    fn route_v4(&self, ordinal: u32) -> Option<(Prefix<u32>, &str)> {
        self.v4.route(ordinal).map(|(p, v)| (p, v.as_str()))
    }
    fn route_v6(&self, ordinal: u32) -> Option<(Prefix<u128>, &str)> {
        self.v6.route(ordinal).map(|(p, v)| (p, v.as_str()))
    }
    fn routes_v4(&self) -> usize {
        self.v4.len()
    }
    fn routes_v6(&self) -> usize {
        self.v6.len()
    }
}

/// A compiled table file, answering from its mapping.
impl Networks for ImageTable {
    #[inline]
    fn batch_v4(&self, addrs: &[u32], ordinals: &mut [u32]) {
        self.v4.lookup_batch::<LANES>(addrs, ordinals)
    }
    #[inline]
    fn batch_v6(&self, addrs: &[u128], ordinals: &mut [u32]) {
        self.v6.lookup_batch::<LANES>(addrs, ordinals)
    }
    fn route_v4(&self, ordinal: u32) -> Option<(Prefix<u32>, &str)> {
        self.v4.route(ordinal)
    }
    fn route_v6(&self, ordinal: u32) -> Option<(Prefix<u128>, &str)> {
        self.v6.route(ordinal)
    }
    fn routes_v4(&self) -> usize {
        self.v4.len()
    }
    fn routes_v6(&self) -> usize {
        self.v6.len()
    }
}

/// Feed every frame of `cap` to `c`, then close its windows. `Ok(Some)`:
/// the capture is damaged there, and the frames before it are counted.
/// `Err`: nothing could be counted (not even a whole file header, or the
/// file could not be read); the message names neither file nor path.
pub fn count_capture<R: Read, C: Count + ?Sized>(
    cap: &mut Capture<'_, R>,
    c: &mut C,
) -> Result<Option<Damage>, String> {
    let damage = loop {
        match cap.next_frame() {
            Ok(Some(f)) => c.frame(f.ts_ns, f.wire_len, f.link, f.data),
            Ok(None) => break None,
            Err(ReadError::Damaged(d)) if d.offset == 0 => return Err(d.to_string()),
            Err(ReadError::Damaged(d)) => break Some(d),
            Err(ReadError::Fatal(e)) => return Err(e),
        }
    };
    c.finish();
    Ok(damage)
}
