//! The counters: every packet's source and destination looked up in the
//! networks table (in batches, through the engines' batch lookups), its
//! direction decided, and packets and bytes added per network, per
//! hostgroup, per host and per remote source, in 1-second windows.
//!
//! Directions: `incoming` (the destination is in a network, the source is
//! not), `outgoing` (the source is, the destination is not), `internal`
//! (both are), `other` (neither). A packet counts once: under the
//! destination's network when incoming or internal, the source's when
//! outgoing, so per-network counts add up to the totals.
//!
//! Windows are the Unix epoch's seconds (`floor(ts)`); a packet stamped
//! earlier than the window in progress (captures are not always in order)
//! counts in the window in progress. Rates: a window's packets per second
//! are its packet count; peaks are over windows; means divide by the
//! windows the capture spans, first to last.
//!
//! Hosts are addresses inside the networks that received packets
//! (incoming only, as FastNetMon's per-host counters): their totals, peak
//! window and threshold checks. Remote sources are the sources of
//! incoming packets. Alerts name the sources of the host's packets in the
//! window, from the first [`SAMPLE_PER_WINDOW`] incoming packets of it.

use super::decode::{decode, Packet, Skip};
use crate::Networks;
use ipfib::engine::NO_ROUTE;
use ipfib::prefix::AnyAddr;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Frames decoded per batch of lookups.
pub const BATCH: usize = 256;
/// Incoming packets per window kept to name alerts' top sources, in all
/// and per host (so one victim cannot crowd out another's sources).
pub const SAMPLE_PER_WINDOW: usize = 1 << 21;
pub const SAMPLE_PER_HOST: u32 = 1 << 16;
/// Distinct hosts, and distinct remote sources, counted one by one; past
/// this many (a spoofed flood makes a new source per packet), packets of
/// new ones are counted as untracked, so memory stays bounded.
pub const MAX_TRACKED: usize = 1 << 22;
/// A packet stamped this many seconds before the window in progress is a
/// jump back in time (a clock step, a bad record), starting a new stretch
/// of windows; less is reordering, counted in the window in progress.
pub const MAX_BEHIND: u64 = 60;
/// A gap of more than this many seconds between packets starts a new
/// stretch too: the seconds between are not part of the span means
/// divide by (one bad far-future stamp cannot dilute every mean).
pub const MAX_GAP: u64 = 86_400;

pub const DIRECTIONS: [&str; 4] = ["incoming", "outgoing", "internal", "other"];
const IN: usize = 0;
const OUT: usize = 1;
const INTERNAL: usize = 2;
const OTHER: usize = 3;

/// Packets and bytes.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Pb {
    pub packets: u64,
    pub bytes: u64,
}

impl Pb {
    #[inline]
    fn add(&mut self, bytes: u32) {
        self.packets += 1;
        self.bytes += u64::from(bytes);
    }
    fn merge(&mut self, o: Pb) {
        self.packets += o.packets;
        self.bytes += o.bytes;
    }
}

/// One direction's counters: totals, the window in progress, peaks.
#[derive(Clone, Copy, Default, Debug)]
pub struct Flow {
    pub total: Pb,
    window: Pb,
    /// Highest packets and bytes in one window (independently).
    pub peak: Pb,
}

impl Flow {
    fn close(&mut self) {
        self.total.merge(self.window);
        self.peak.packets = self.peak.packets.max(self.window.packets);
        self.peak.bytes = self.peak.bytes.max(self.window.bytes);
        self.window = Pb::default();
    }
}

/// Counters of a network, a hostgroup or the whole capture.
#[derive(Clone, Copy, Default, Debug)]
pub struct Counters {
    pub dir: [Flow; 4],
    /// The window this was last touched in (+1; 0: never).
    mark: u64,
}

/// A network (route) that saw traffic.
#[derive(Clone, Debug)]
pub struct Net {
    /// (family 4 or 6, route ordinal).
    pub net: (u8, u32),
    pub c: Counters,
}

/// A host inside the networks that received packets.
#[derive(Clone, Debug)]
pub struct Host {
    pub addr: AnyAddr,
    /// (family 4 or 6, route ordinal) of its network.
    pub net: (u8, u32),
    pub flow: Flow,
    mark: u64,
    /// Packets of the window in progress in the alert sample.
    sampled: u32,
}

/// A threshold on a host's incoming rate in one window.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// Applies to hosts of this hostgroup only (`None`: every host).
    pub hostgroup: Option<String>,
    pub metric: Metric,
    pub value: f64,
    /// As written, for the alerts.
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Pps,
    Mbps,
}

impl Threshold {
    /// `[HOSTGROUP:]incoming_pps>=N` or `[HOSTGROUP:]incoming_mbps>=N`.
    pub fn parse(text: &str) -> Result<Threshold, String> {
        let err = || {
            format!(
                "bad threshold {text:?}: expected [HOSTGROUP:]incoming_pps>=N or \
                 [HOSTGROUP:]incoming_mbps>=N"
            )
        };
        let (group, cond) = match text.rsplit_once(':') {
            Some((g, c)) if !g.is_empty() => (Some(g.to_string()), c),
            Some(_) => return Err(err()),
            None => (None, text),
        };
        let (name, value) = cond.split_once(">=").ok_or_else(err)?;
        let metric = match name.trim() {
            "incoming_pps" => Metric::Pps,
            "incoming_mbps" => Metric::Mbps,
            _ => return Err(err()),
        };
        let value: f64 = value.trim().parse().map_err(|_| err())?;
        if !value.is_finite() || value < 0.0 {
            return Err(err());
        }
        Ok(Threshold {
            hostgroup: group,
            metric,
            value,
            text: text.to_string(),
        })
    }
}

/// An alert: a host over a threshold in a window.
#[derive(Clone, Debug)]
pub struct Alert {
    pub host: AnyAddr,
    pub hostgroup: String,
    pub network: String,
    /// The window's start, Unix seconds.
    pub window: u64,
    pub pps: u64,
    pub bps: u64,
    pub threshold: String,
    /// (source, packets, bytes) from the window's sample, most packets first.
    pub top_sources: Vec<(AnyAddr, u64, u64)>,
    /// The host's packets in the sample `top_sources` counts (at most
    /// [`SAMPLE_PER_HOST`]; fewer once the window's sample, or on N
    /// threads a thread's 1/N share of it, is full).
    pub sampled_packets: u64,
}

/// What is called with each alert as it is raised.
type AlertHook<'t> = Box<dyn FnMut(&Alert) + 't>;

/// Hosts named per closed window in a [`WindowSummary`].
pub const WINDOW_TOP_HOSTS: usize = 5;

/// A window's counts as it closes (`--windows`: one JSON line each).
#[derive(Clone, Debug)]
pub struct WindowSummary {
    /// The window's start, Unix seconds.
    pub window: u64,
    /// Packets and bytes per direction, in [`DIRECTIONS`] order.
    pub dirs: [Pb; 4],
    /// The window's busiest hosts by incoming packets (then bytes, then
    /// address), at most [`WINDOW_TOP_HOSTS`]: address, network, hostgroup,
    /// incoming packets and bytes in the window.
    pub top_hosts: Vec<(AnyAddr, String, String, Pb)>,
}

/// What is called with each window as it closes.
type WindowHook<'t> = Box<dyn FnMut(&WindowSummary) + 't>;

/// One family's batch counted: both flushes are this body with the
/// family's fields (a macro rather than a generic method, since the body
/// borrows the family's fields and the shared counters of `self` at once).
macro_rules! flush_family {
    ($self:ident, $family:literal, $batch:ident, $lookup:ident, $slot:ident, $hosts:ident, $sources:ident, $any:ident) => {{
        let this = $self;
        let n = this.$batch.n;
        if n == 0 {
            return;
        }
        let b = &mut this.$batch;
        this.table.$lookup(&b.src[..n], &mut b.so[..n]);
        this.table.$lookup(&b.dst[..n], &mut b.do_[..n]);
        // The per-route slots below are indexed by ordinal: one past the
        // route count (which `Networks` rules out, and a compiled table
        // file's opener refuses) counts as a miss, never as a panic.
        let routes = this.$slot.len();
        for o in b.so[..n].iter_mut().chain(&mut b.do_[..n]) {
            if *o as usize >= routes {
                *o = NO_ROUTE;
            }
        }
        let mark = this.closed + 1;
        for i in 0..n {
            let (s, d, len) = (b.so[i], b.do_[i], b.len[i]);
            let (dir, net) = direction(s, d);
            this.totals.dir[dir].window.add(len);
            if let Some(o) = net {
                let slot = &mut this.$slot[o as usize];
                if *slot == 0 {
                    this.nets.push(Net {
                        net: ($family, o),
                        c: Counters::default(),
                    });
                    *slot = this.nets.len() as u32;
                }
                let i = *slot - 1;
                let c = &mut this.nets[i as usize].c;
                c.dir[dir].window.add(len);
                if c.mark != mark {
                    c.mark = mark;
                    this.touched_nets.push(i);
                }
            }
            if dir == IN {
                let (dst, src) = (b.dst[i], b.src[i]);
                let h = match this.$hosts.get(&dst) {
                    Some(&h) => Some(h),
                    None if this.hosts.len() < this.limits.tracked => {
                        let h = this.hosts.len() as u32;
                        this.$hosts.insert(dst, h);
                        this.hosts.push(Host {
                            addr: AnyAddr::$any(dst),
                            net: ($family, d),
                            flow: Flow::default(),
                            mark: 0,
                            sampled: 0,
                        });
                        Some(h)
                    }
                    None => None,
                };
                let room = this.$sources.len() < this.limits.tracked;
                match this.$sources.get_mut(&src) {
                    Some(pb) => pb.add(len),
                    None if room => this.$sources.entry(src).or_default().add(len),
                    None => this.untracked_sources += 1,
                }
                let Some(h) = h else {
                    this.untracked_hosts += 1;
                    continue;
                };
                touch_host(&mut this.hosts, &mut this.touched_hosts, h, mark, len);
                if !this.thresholds.is_empty() && this.sample.len() < this.limits.sample_window {
                    let host = &mut this.hosts[h as usize];
                    if host.sampled < this.limits.sample_host {
                        host.sampled += 1;
                        this.sample.push((h, AnyAddr::$any(src), len));
                    }
                }
            }
        }
        b.n = 0;
    }};
}

/// Everything counted.
pub struct Classifier<'t, T: Networks> {
    table: &'t T,
    /// Hostgroup index of each route ordinal, per family (shared with the
    /// threads of a [`crate::fan`] run).
    group_of_v4: Arc<[u32]>,
    group_of_v6: Arc<[u32]>,
    pub groups: Arc<[String]>,
    /// Where tracking and sampling stop (a thread of a fan-out run holds
    /// its share of them).
    limits: Limits,
    /// Networks that saw traffic, in order of first packet.
    pub nets: Vec<Net>,
    /// Per route ordinal: its index in `nets` + 1 (0: no traffic yet), so
    /// a table of a million routes costs 4 bytes a route, zeroed pages.
    slot_v4: Vec<u32>,
    slot_v6: Vec<u32>,
    pub group_counters: Vec<Counters>,
    pub totals: Counters,
    touched_nets: Vec<u32>,
    pub hosts: Vec<Host>,
    hosts_v4: FxHashMap<u32, u32>,
    hosts_v6: FxHashMap<u128, u32>,
    touched_hosts: Vec<u32>,
    pub sources_v4: FxHashMap<u32, Pb>,
    pub sources_v6: FxHashMap<u128, Pb>,
    thresholds: Vec<Threshold>,
    /// (host index, source, bytes) of the window's first incoming packets.
    sample: Vec<Sampled>,
    /// A fan-out run's: each thread's sample of the window, with what its
    /// host numbers are here (`u32::MAX`: untracked).
    thread_samples: Vec<(Vec<u32>, Vec<Sampled>)>,
    /// Their buffers once read, to hand back (at most one per thread).
    spare_samples: Vec<Vec<Sampled>>,
    pub alerts: Vec<Alert>,
    /// Called with each alert as it is raised.
    on_alert: Option<AlertHook<'t>>,
    /// Called with each window as it closes.
    on_window: Option<WindowHook<'t>>,
    /// Top lists' length (alerts' sources).
    pub top: usize,
    /// Incoming packets whose host, or whose source, was past
    /// [`MAX_TRACKED`] (counted everywhere else).
    pub untracked_hosts: u64,
    pub untracked_sources: u64,
    /// Jumps back in time and gaps over a day (see [`Classifier::windows`]).
    pub time_jumps: u64,
    /// First second of the stretch in progress; seconds of closed stretches.
    stretch_first: u64,
    span_closed: u64,
    pub frames: u64,
    pub frame_bytes: u64,
    pub skipped: [u64; 4],
    pub fragments: u64,
    /// Current window (Unix second); `None` before the first packet.
    window: Option<u64>,
    pub first_window: Option<u64>,
    pub last_window: u64,
    /// Windows closed so far (+1 is `mark` of the one in progress).
    closed: u64,
    // The batch being gathered.
    b4: Batch<u32>,
    b6: Batch<u128>,
}

/// An incoming packet in the alert sample: (host index, source, bytes).
pub(crate) type Sampled = (u32, AnyAddr, u32);

/// Where the counter stops tracking and sampling (memory bounds).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Distinct hosts, and distinct remote sources ([`MAX_TRACKED`]).
    pub tracked: usize,
    /// Sampled incoming packets per window, and per host in it.
    pub sample_window: usize,
    pub sample_host: u32,
}

impl Limits {
    pub const WHOLE: Limits = Limits {
        tracked: MAX_TRACKED,
        sample_window: SAMPLE_PER_WINDOW,
        sample_host: SAMPLE_PER_HOST,
    };
    /// A thread's share of these when `n` count: `1/n` of the tracked
    /// entries and of the window's sample (the memory), the whole bound
    /// per host (which costs none: a host's sample is within the window's),
    /// so hosts below it are sampled whole on any thread count.
    pub fn share(self, n: usize) -> Limits {
        let n = n.max(1);
        Limits {
            tracked: (self.tracked / n).max(1),
            sample_window: (self.sample_window / n).max(1),
            sample_host: self.sample_host,
        }
    }
}

/// A frame's packet, decoded: (source, destination, wire length).
pub(crate) enum Decoded {
    V4(u32, u32, u32),
    V6(u128, u128, u32),
    Not,
}

/// One thread's share of a window (see [`crate::fan`]): what it counted
/// since the last one, to be added to the whole count before the window
/// closes.
pub(crate) struct WindowPart {
    /// Networks touched, with the window's packets and bytes per direction.
    nets: Vec<((u8, u32), [Pb; 4])>,
    totals: [Pb; 4],
    /// Hosts touched (their `flow.window` and `sampled` are the window's).
    hosts: Vec<Host>,
    /// (index in `hosts`, source, bytes) of sampled incoming packets.
    sample: Vec<Sampled>,
    /// Remote sources of the window's incoming packets.
    sources_v4: Vec<(u32, Pb)>,
    sources_v6: Vec<(u128, Pb)>,
}

/// Emptied buffers of a [`WindowPart`], handed back to the thread for its
/// next window: fresh memory for each window costs page faults (a
/// window's sample can be tens of MB).
#[derive(Default)]
pub(crate) struct Spare {
    hosts: Vec<Host>,
    sample: Vec<Sampled>,
    sources_v4: Vec<(u32, Pb)>,
    sources_v6: Vec<(u128, Pb)>,
}

/// Up to `BATCH` packets of one family and their route ordinals.
struct Batch<A> {
    n: usize,
    src: Box<[A; BATCH]>,
    dst: Box<[A; BATCH]>,
    len: Box<[u32; BATCH]>,
    so: Box<[u32; BATCH]>,
    do_: Box<[u32; BATCH]>,
}

impl<A: Copy + Default> Batch<A> {
    fn new() -> Self {
        Batch {
            n: 0,
            src: Box::new([A::default(); BATCH]),
            dst: Box::new([A::default(); BATCH]),
            len: Box::new([0; BATCH]),
            so: Box::new([0; BATCH]),
            do_: Box::new([0; BATCH]),
        }
    }
    /// Add a packet; whether the batch is full.
    #[inline]
    fn push(&mut self, src: A, dst: A, len: u32) -> bool {
        let i = self.n % BATCH;
        self.src[i] = src;
        self.dst[i] = dst;
        self.len[i] = len;
        self.n = i + 1;
        self.n == BATCH
    }
}

/// A thread's remote sources (per family; empty once its last window was
/// taken) and untracked host and source packets, at its end.
pub(crate) type Leftover = (FxHashMap<u32, Pb>, FxHashMap<u128, Pb>, u64, u64);

/// Hostgroup names, and the hostgroup of each route ordinal per family.
pub(crate) type Groups = (Arc<[String]>, Arc<[u32]>, Arc<[u32]>);

impl<'t, T: Networks> Classifier<'t, T> {
    pub fn new(table: &'t T, thresholds: Vec<Threshold>) -> Self {
        let mut groups: Vec<String> = Vec::new();
        let mut index: std::collections::HashMap<String, u32> = Default::default();
        let mut group = |v: &str| -> u32 {
            if let Some(&i) = index.get(v) {
                return i;
            }
            let i = groups.len() as u32;
            groups.push(v.to_string());
            index.insert(v.to_string(), i);
            i
        };
        let group_of_v4: Arc<[u32]> = (0..table.routes_v4() as u32)
            .map(|o| table.route_v4(o).map_or(0, |(_, v)| group(v)))
            .collect();
        let group_of_v6: Arc<[u32]> = (0..table.routes_v6() as u32)
            .map(|o| table.route_v6(o).map_or(0, |(_, v)| group(v)))
            .collect();
        Self::with_groups(
            table,
            thresholds,
            (groups.into(), group_of_v4, group_of_v6),
            Limits::WHOLE,
        )
    }

    /// A counter over the hostgroups of another's (a thread's share).
    pub(crate) fn with_groups(
        table: &'t T,
        thresholds: Vec<Threshold>,
        (groups, group_of_v4, group_of_v6): Groups,
        limits: Limits,
    ) -> Self {
        Classifier {
            table,
            limits,
            nets: Vec::new(),
            slot_v4: vec![0; group_of_v4.len()],
            slot_v6: vec![0; group_of_v6.len()],
            group_counters: vec![Counters::default(); groups.len()],
            group_of_v4,
            group_of_v6,
            groups,
            totals: Counters::default(),
            touched_nets: Vec::new(),
            hosts: Vec::new(),
            hosts_v4: FxHashMap::default(),
            hosts_v6: FxHashMap::default(),
            touched_hosts: Vec::new(),
            sources_v4: FxHashMap::default(),
            sources_v6: FxHashMap::default(),
            thresholds,
            sample: Vec::new(),
            thread_samples: Vec::new(),
            spare_samples: Vec::new(),
            alerts: Vec::new(),
            on_alert: None,
            on_window: None,
            top: 10,
            untracked_hosts: 0,
            untracked_sources: 0,
            time_jumps: 0,
            stretch_first: 0,
            span_closed: 0,
            frames: 0,
            frame_bytes: 0,
            skipped: [0; 4],
            fragments: 0,
            window: None,
            first_window: None,
            last_window: 0,
            closed: 0,
            b4: Batch::new(),
            b6: Batch::new(),
        }
    }

    /// Call `f` with each alert as it is raised (a live stream of them).
    pub fn on_alert(&mut self, f: impl FnMut(&Alert) + 't) {
        self.on_alert = Some(Box::new(f));
    }

    /// Call `f` with each window's counts as it closes.
    pub fn on_window(&mut self, f: impl FnMut(&WindowSummary) + 't) {
        self.on_window = Some(Box::new(f));
    }

    /// Live capture: the clock says `now_ns`. Once it is in a later second
    /// than the window in progress, that window is counted and closed and
    /// the window in progress becomes `now_ns`'s second, so windows close
    /// (and their alerts and summaries go out) on time when traffic stops.
    /// Seconds skipped between two calls close no window of their own but
    /// still count in the span the means divide by. Before the first frame
    /// there is no window to close. Files never call this: their windows
    /// follow their timestamps only.
    pub fn advance(&mut self, now_ns: u64) {
        if let Some(sec) = self.clock_passed(now_ns) {
            self.flush();
            self.close_window();
            self.clock_moved(sec);
        }
    }

    /// `advance`'s test: the second to move to when the clock is past the
    /// window in progress.
    pub(crate) fn clock_passed(&self, now_ns: u64) -> Option<u64> {
        let sec = now_ns / 1_000_000_000;
        self.window.is_some_and(|w| sec > w).then_some(sec)
    }

    /// `advance`'s move, once the window in progress is closed.
    pub(crate) fn clock_moved(&mut self, sec: u64) {
        self.window = Some(sec);
        self.last_window = self.last_window.max(sec);
    }

    /// Count one frame.
    #[inline]
    pub fn frame(&mut self, ts_ns: u64, wire_len: u32, link: u16, data: &[u8]) {
        if let Some(sec) = self.stamp(ts_ns, wire_len) {
            self.flush();
            self.close_window();
            self.next_window(sec);
        }
        match self.decode(wire_len, link, data) {
            Decoded::V4(src, dst, len) => self.packet_v4(src, dst, len),
            Decoded::V6(src, dst, len) => self.packet_v6(src, dst, len),
            Decoded::Not => {}
        }
    }

    /// A frame's time and size: counts the frame; `Some(second)` when the
    /// window in progress ends before it (the caller closes it, then calls
    /// [`Classifier::next_window`]).
    #[inline]
    pub(crate) fn stamp(&mut self, ts_ns: u64, wire_len: u32) -> Option<u64> {
        self.frames += 1;
        self.frame_bytes += u64::from(wire_len);
        let sec = ts_ns / 1_000_000_000;
        match self.window {
            Some(w) if sec <= w && w - sec <= MAX_BEHIND => None,
            Some(_) => Some(sec),
            None => {
                self.window = Some(sec);
                self.stretch_first = sec;
                self.first_window = Some(sec);
                self.last_window = sec;
                None
            }
        }
    }

    /// After [`Classifier::stamp`]'s window closed: the window of `sec` is
    /// in progress (a new stretch after a jump back or a gap).
    pub(crate) fn next_window(&mut self, sec: u64) {
        let w = self.window.unwrap_or(sec);
        if sec < w || sec - w > MAX_GAP {
            self.span_closed += w - self.stretch_first + 1;
            self.stretch_first = sec;
            self.time_jumps += 1;
        }
        self.window = Some(sec);
        self.first_window = self.first_window.map(|f| f.min(sec));
        self.last_window = self.last_window.max(sec);
    }

    /// A frame's packet, fragments and skipped frames counted.
    #[inline]
    pub(crate) fn decode(&mut self, wire_len: u32, link: u16, data: &[u8]) -> Decoded {
        match decode(link, data) {
            Ok(Packet::V4 { src, dst, fragment }) => {
                self.fragments += u64::from(fragment);
                Decoded::V4(src, dst, wire_len)
            }
            Ok(Packet::V6 { src, dst, fragment }) => {
                self.fragments += u64::from(fragment);
                Decoded::V6(src, dst, wire_len)
            }
            Err(s) => {
                self.skipped[s as usize] += 1;
                Decoded::Not
            }
        }
    }

    /// Count a decoded IPv4 packet (in the window in progress).
    #[inline]
    pub(crate) fn packet_v4(&mut self, src: u32, dst: u32, len: u32) {
        if self.b4.push(src, dst, len) {
            self.flush_v4();
        }
    }

    #[inline]
    pub(crate) fn packet_v6(&mut self, src: u128, dst: u128, len: u32) {
        if self.b6.push(src, dst, len) {
            self.flush_v6();
        }
    }

    /// The counter's hostgroups, to share with a thread's counter.
    pub(crate) fn groups_shared(&self) -> Groups {
        (
            self.groups.clone(),
            self.group_of_v4.clone(),
            self.group_of_v6.clone(),
        )
    }

    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Tests: bounds small enough to reach.
    #[cfg(test)]
    pub(crate) fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    pub(crate) fn thresholds(&self) -> &[Threshold] {
        &self.thresholds
    }

    pub(crate) fn table(&self) -> &'t T {
        self.table
    }

    /// A thread's share of the window in progress: what it counted since
    /// the last call, its window counters zeroed and its hosts and sources
    /// forgotten (the whole count keeps them; a thread only a window's).
    pub(crate) fn take_window(&mut self, mut spare: Spare) -> WindowPart {
        self.flush();
        let touched = std::mem::take(&mut self.touched_nets);
        let nets = touched
            .iter()
            .map(|&i| {
                let n = &mut self.nets[i as usize];
                let dirs = n.c.dir.map(|f| f.window);
                for f in &mut n.c.dir {
                    f.window = Pb::default();
                }
                (n.net, dirs)
            })
            .collect();
        self.touched_nets = touched;
        self.touched_nets.clear();
        let totals = self.totals.dir.map(|f| f.window);
        for f in &mut self.totals.dir {
            f.window = Pb::default();
        }
        self.hosts_v4.clear();
        self.hosts_v6.clear();
        self.touched_hosts.clear();
        self.closed += 1;
        spare.hosts.clear();
        spare.sample.clear();
        // Sources too are the window's in a thread: the whole count keeps
        // them, under the whole bound.
        spare.sources_v4.clear();
        spare.sources_v4.extend(self.sources_v4.drain());
        spare.sources_v6.clear();
        spare.sources_v6.extend(self.sources_v6.drain());
        WindowPart {
            nets,
            totals,
            hosts: std::mem::replace(&mut self.hosts, spare.hosts),
            sample: std::mem::replace(&mut self.sample, spare.sample),
            sources_v4: spare.sources_v4,
            sources_v6: spare.sources_v6,
        }
    }

    /// Add a thread's share of the window in progress to this (whole)
    /// count. Hosts past [`MAX_TRACKED`] count as untracked, as here.
    pub(crate) fn add_window(&mut self, mut part: WindowPart) -> Spare {
        let mark = self.closed + 1;
        for (net, dirs) in part.nets {
            let i = self.net_index(net);
            let c = &mut self.nets[i as usize].c;
            for (f, pb) in c.dir.iter_mut().zip(dirs) {
                f.window.merge(pb);
            }
            if c.mark != mark {
                c.mark = mark;
                self.touched_nets.push(i);
            }
        }
        for (f, pb) in self.totals.dir.iter_mut().zip(part.totals) {
            f.window.merge(pb);
        }
        let mut index = Vec::with_capacity(part.hosts.len());
        for h in part.hosts.drain(..) {
            let known = match h.addr {
                AnyAddr::V4(a) => self.hosts_v4.get(&a).copied(),
                AnyAddr::V6(a) => self.hosts_v6.get(&a).copied(),
            };
            let i = match known {
                Some(i) => i,
                None if self.hosts.len() < self.limits.tracked => {
                    let i = self.hosts.len() as u32;
                    match h.addr {
                        AnyAddr::V4(a) => self.hosts_v4.insert(a, i),
                        AnyAddr::V6(a) => self.hosts_v6.insert(a, i),
                    };
                    self.hosts.push(Host {
                        addr: h.addr,
                        net: h.net,
                        flow: Flow::default(),
                        mark: 0,
                        sampled: 0,
                    });
                    i
                }
                None => {
                    self.untracked_hosts += h.flow.window.packets;
                    index.push(u32::MAX);
                    continue;
                }
            };
            let host = &mut self.hosts[i as usize];
            host.flow.window.merge(h.flow.window);
            host.sampled = (host.sampled + h.sampled).min(self.limits.sample_host);
            if host.mark != mark {
                host.mark = mark;
                self.touched_hosts.push(i);
            }
            index.push(i);
        }
        // Read only if the window raises an alert: kept as the thread
        // made it, with its host numbers' meaning here.
        let mut sample = Vec::new();
        if !part.sample.is_empty() {
            self.thread_samples.push((index, part.sample));
            sample = self.spare_samples.pop().unwrap_or_default();
        }
        let tracked = self.limits.tracked;
        for (a, pb) in part.sources_v4.drain(..) {
            add_source(
                &mut self.sources_v4,
                a,
                pb,
                tracked,
                &mut self.untracked_sources,
            );
        }
        for (a, pb) in part.sources_v6.drain(..) {
            add_source(
                &mut self.sources_v6,
                a,
                pb,
                tracked,
                &mut self.untracked_sources,
            );
        }
        Spare {
            hosts: part.hosts,
            sample,
            sources_v4: part.sources_v4,
            sources_v6: part.sources_v6,
        }
    }

    /// A finished thread's untracked packets (and sources, if a window
    /// was never taken: a run that stopped on an error).
    pub(crate) fn take_sources(&mut self) -> Leftover {
        (
            std::mem::take(&mut self.sources_v4),
            std::mem::take(&mut self.sources_v6),
            self.untracked_hosts,
            self.untracked_sources,
        )
    }

    /// Add a finished thread's [`Classifier::take_sources`].
    pub(crate) fn add_sources(&mut self, (v4, v6, hosts, sources): Leftover) {
        let tracked = self.limits.tracked;
        for (a, pb) in v4 {
            add_source(
                &mut self.sources_v4,
                a,
                pb,
                tracked,
                &mut self.untracked_sources,
            );
        }
        for (a, pb) in v6 {
            add_source(
                &mut self.sources_v6,
                a,
                pb,
                tracked,
                &mut self.untracked_sources,
            );
        }
        self.untracked_hosts += hosts;
        self.untracked_sources += sources;
    }

    /// Whether a window is in progress (a frame was counted).
    pub(crate) fn in_window(&self) -> bool {
        self.window.is_some()
    }

    /// The index in `nets` of a network, added on first use.
    fn net_index(&mut self, net: (u8, u32)) -> u32 {
        let slots = if net.0 == 4 {
            &mut self.slot_v4
        } else {
            &mut self.slot_v6
        };
        let slot = &mut slots[net.1 as usize];
        if *slot == 0 {
            self.nets.push(Net {
                net,
                c: Counters::default(),
            });
            *slot = self.nets.len() as u32;
        }
        *slot - 1
    }

    /// Count what is gathered; called at the end and at each window's end.
    pub fn flush(&mut self) {
        self.flush_v4();
        self.flush_v6();
    }

    /// End of input: count the rest and close the last window.
    pub fn finish(&mut self) {
        self.flush();
        if self.window.is_some() {
            self.close_window();
        }
    }

    /// Seconds the capture spans, which means divide by (0 with no
    /// frames): first to last, except that a jump back in time of over
    /// [`MAX_BEHIND`] seconds or a gap of over [`MAX_GAP`] starts a new
    /// stretch, and only the stretches' own seconds count.
    pub fn windows(&self) -> u64 {
        self.window.map_or(0, |w| {
            self.span_closed + w.saturating_sub(self.stretch_first) + 1
        })
    }

    pub fn skipped(&self, s: Skip) -> u64 {
        self.skipped[s as usize]
    }

    fn flush_v4(&mut self) {
        flush_family!(self, 4, b4, batch_v4, slot_v4, hosts_v4, sources_v4, V4)
    }

    fn flush_v6(&mut self) {
        flush_family!(self, 6, b6, batch_v6, slot_v6, hosts_v6, sources_v6, V6)
    }

    /// The hostgroup of a network.
    pub fn group(&self, net: (u8, u32)) -> u32 {
        let g = if net.0 == 4 {
            &self.group_of_v4
        } else {
            &self.group_of_v6
        };
        g.get(net.1 as usize).copied().unwrap_or(0)
    }

    /// The network's prefix and value, as text.
    pub fn network(&self, net: (u8, u32)) -> (String, &str) {
        let r = if net.0 == 4 {
            self.table.route_v4(net.1).map(|(p, v)| (p.to_string(), v))
        } else {
            self.table.route_v6(net.1).map(|(p, v)| (p.to_string(), v))
        };
        r.unwrap_or_else(|| ("?".into(), ""))
    }

    /// The window in progress as it closes (before its counters fold).
    fn window_summary(&self, window: u64) -> WindowSummary {
        let mut top: Vec<&Host> = self
            .touched_hosts
            .iter()
            .map(|&h| &self.hosts[h as usize])
            .collect();
        let busier = |a: &&Host, b: &&Host| {
            (b.flow.window.packets, b.flow.window.bytes)
                .cmp(&(a.flow.window.packets, a.flow.window.bytes))
                .then(addr_key(a.addr).cmp(&addr_key(b.addr)))
        };
        // A flood touches a million hosts a second: select, then sort five.
        if top.len() > WINDOW_TOP_HOSTS {
            top.select_nth_unstable_by(WINDOW_TOP_HOSTS - 1, busier);
            top.truncate(WINDOW_TOP_HOSTS);
        }
        top.sort_by(busier);
        WindowSummary {
            window,
            dirs: self.totals.dir.map(|f| f.window),
            top_hosts: top
                .into_iter()
                .map(|h| {
                    let (network, group) = self.network(h.net);
                    (h.addr, network, group.to_string(), h.flow.window)
                })
                .collect(),
        }
    }

    pub(crate) fn close_window(&mut self) {
        let window = self.window.unwrap_or(0);
        let summary = self
            .on_window
            .is_some()
            .then(|| self.window_summary(window));
        let gmark = self.closed + 1;
        let mut touched_groups = Vec::new();
        let touched = std::mem::take(&mut self.touched_nets);
        for &i in &touched {
            let g = self.group(self.nets[i as usize].net) as usize;
            let c = &mut self.nets[i as usize].c;
            let gc = &mut self.group_counters[g];
            for d in 0..4 {
                gc.dir[d].window.merge(c.dir[d].window);
                c.dir[d].close();
            }
            if gc.mark != gmark {
                gc.mark = gmark;
                touched_groups.push(g);
            }
        }
        // Keep the allocation.
        self.touched_nets = touched;
        self.touched_nets.clear();
        for g in touched_groups {
            for d in 0..4 {
                self.group_counters[g].dir[d].close();
            }
        }
        for d in 0..4 {
            self.totals.dir[d].close();
        }
        let touched = std::mem::take(&mut self.touched_hosts);
        let mut alerted: Vec<(u32, String, Pb, u32)> = Vec::new();
        for &h in &touched {
            let w = self.hosts[h as usize].flow.window;
            let sampled = std::mem::take(&mut self.hosts[h as usize].sampled);
            if !self.thresholds.is_empty() {
                let net = self.hosts[h as usize].net;
                let group = &self.groups[self.group(net) as usize];
                let crossed = self.thresholds.iter().find(|t| {
                    t.hostgroup.as_ref().is_none_or(|g| g == group)
                        && match t.metric {
                            Metric::Pps => w.packets as f64 >= t.value,
                            Metric::Mbps => (w.bytes * 8) as f64 / 1e6 >= t.value,
                        }
                });
                if let Some(t) = crossed {
                    alerted.push((h, t.text.clone(), w, sampled));
                }
            }
            self.hosts[h as usize].flow.close();
        }
        self.touched_hosts = touched;
        self.touched_hosts.clear();
        // A window's alerts in host order: the same whatever order (or
        // threads) the hosts were first seen in.
        alerted.sort_by_key(|a| addr_key(self.hosts[a.0 as usize].addr));
        // Every alerted host's sources in one pass over the sample.
        let which: FxHashMap<u32, usize> =
            alerted.iter().enumerate().map(|(i, a)| (a.0, i)).collect();
        let mut by_host: Vec<FxHashMap<AnyAddr, Pb>> = vec![FxHashMap::default(); alerted.len()];
        if !alerted.is_empty() {
            // Threads' samples hold up to the per-host bound each: a host
            // takes its first `sampled` (the bound in all) in thread order.
            let mut taken = vec![0u32; alerted.len()];
            let mut add = |sh: u32, src: AnyAddr, len: u32| {
                if let Some(&i) = which.get(&sh) {
                    if taken[i] < alerted[i].3 {
                        taken[i] += 1;
                        by_host[i].entry(src).or_default().add(len);
                    }
                }
            };
            for &(sh, src, len) in &self.sample {
                add(sh, src, len);
            }
            for (index, sample) in &self.thread_samples {
                for &(h, src, len) in sample {
                    match index.get(h as usize) {
                        Some(&sh) if sh != u32::MAX => add(sh, src, len),
                        _ => {}
                    }
                }
            }
        }
        for ((h, threshold, counts, sampled), by_src) in alerted.into_iter().zip(by_host) {
            let host = &self.hosts[h as usize];
            let mut top: Vec<(AnyAddr, u64, u64)> = by_src
                .into_iter()
                .map(|(a, pb)| (a, pb.packets, pb.bytes))
                .collect();
            top.sort_by(|a, b| {
                b.1.cmp(&a.1)
                    .then(b.2.cmp(&a.2))
                    .then(addr_key(a.0).cmp(&addr_key(b.0)))
            });
            top.truncate(self.top);
            let (network, _) = self.network(host.net);
            let alert = Alert {
                host: host.addr,
                hostgroup: self.groups[self.group(host.net) as usize].clone(),
                network,
                window,
                pps: counts.packets,
                bps: counts.bytes * 8,
                threshold,
                top_sources: top,
                sampled_packets: u64::from(sampled),
            };
            if let Some(f) = self.on_alert.as_mut() {
                f(&alert);
            }
            self.alerts.push(alert);
        }
        self.sample.clear();
        for (_, mut s) in self.thread_samples.drain(..) {
            s.clear();
            self.spare_samples.push(s);
        }
        self.closed += 1;
        if let (Some(s), Some(f)) = (summary, self.on_window.as_mut()) {
            f(&s);
        }
    }
}

/// Sort key for addresses: IPv4 before IPv6, then numeric.
pub fn addr_key(a: AnyAddr) -> (u8, u128) {
    match a {
        AnyAddr::V4(x) => (4, u128::from(x)),
        AnyAddr::V6(x) => (6, x),
    }
}

#[inline]
fn direction(s: u32, d: u32) -> (usize, Option<u32>) {
    match (s != NO_ROUTE, d != NO_ROUTE) {
        (false, true) => (IN, Some(d)),
        (true, false) => (OUT, Some(s)),
        (true, true) => (INTERNAL, Some(d)),
        (false, false) => (OTHER, None),
    }
}

/// A thread's window of one remote source added to the whole count: past
/// `tracked` sources, a newcomer's packets are untracked, as on one thread.
fn add_source<A: std::hash::Hash + Eq>(
    sources: &mut FxHashMap<A, Pb>,
    a: A,
    pb: Pb,
    tracked: usize,
    untracked: &mut u64,
) {
    let room = sources.len() < tracked;
    match sources.get_mut(&a) {
        Some(s) => s.merge(pb),
        None if room => {
            sources.insert(a, pb);
        }
        None => *untracked += pb.packets,
    }
}

#[inline]
fn touch_host(hosts: &mut [Host], touched: &mut Vec<u32>, h: u32, mark: u64, len: u32) {
    let host = &mut hosts[h as usize];
    host.flow.window.add(len);
    if host.mark != mark {
        host.mark = mark;
        touched.push(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::LINK_RAW;
    use ipfib::engine::auto::AutoOptions;
    use ipfib::prefix::{AnyPrefix, HostBits};
    use std::cell::RefCell;

    const SEC: u64 = 1_000_000_000;

    fn table() -> ipfib::table::CompiledTable<String> {
        let mut t = ipfib::table::Table::new();
        t.insert(
            AnyPrefix::parse("10.0.0.0/8", HostBits::Reject).unwrap(),
            "inside".to_string(),
        )
        .unwrap();
        t.compile(&AutoOptions::default()).unwrap()
    }

    /// A raw IPv4 header, `src` to `dst`.
    fn ip(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0];
        h.extend_from_slice(&src);
        h.extend_from_slice(&dst);
        h
    }

    #[test]
    fn advance_closes_windows_on_the_clock_and_reports_them() {
        let t = table();
        let seen: RefCell<Vec<WindowSummary>> = RefCell::new(Vec::new());
        let mut c = Classifier::new(&t, Vec::new());
        c.on_window(|w| seen.borrow_mut().push(w.clone()));
        // Nothing to close before the first frame.
        c.advance(100 * SEC);
        assert!(seen.borrow().is_empty());
        assert_eq!(c.windows(), 0);
        let into_a = ip([192, 0, 2, 1], [10, 0, 0, 1]);
        let into_b = ip([192, 0, 2, 1], [10, 0, 0, 2]);
        for _ in 0..3 {
            c.frame(100 * SEC + 5, 100, LINK_RAW, &into_a);
        }
        c.frame(100 * SEC + 6, 60, LINK_RAW, &into_b);
        // Same second: still open, and nothing counted yet in a summary.
        c.advance(100 * SEC + SEC / 2);
        assert!(seen.borrow().is_empty());
        // A later second: window 100 closes with the batch flushed into it.
        c.advance(101 * SEC + 1);
        {
            let s = seen.borrow();
            assert_eq!(s.len(), 1);
            assert_eq!(s[0].window, 100);
            assert_eq!(
                s[0].dirs[IN],
                Pb {
                    packets: 4,
                    bytes: 360
                }
            );
            assert_eq!(s[0].dirs[OUT], Pb::default());
            let hosts: Vec<_> = s[0]
                .top_hosts
                .iter()
                .map(|(a, n, g, pb)| (*a, n.as_str(), g.as_str(), pb.packets))
                .collect();
            assert_eq!(
                hosts,
                [
                    (AnyAddr::V4(0x0a00_0001), "10.0.0.0/8", "inside", 3),
                    (AnyAddr::V4(0x0a00_0002), "10.0.0.0/8", "inside", 1),
                ]
            );
        }
        // Idle seconds close empty windows, one per call.
        c.advance(102 * SEC);
        assert_eq!(seen.borrow().len(), 2);
        assert_eq!(seen.borrow()[1].window, 101);
        assert_eq!(seen.borrow()[1].dirs[IN], Pb::default());
        // A frame stamped before the window in progress counts in it.
        c.frame(101 * SEC + 9, 40, LINK_RAW, &into_a);
        c.finish();
        let s = seen.borrow();
        assert_eq!(s.len(), 3);
        assert_eq!((s[2].window, s[2].dirs[IN].packets), (102, 1));
        assert_eq!(
            c.totals.dir[IN].total,
            Pb {
                packets: 5,
                bytes: 400
            }
        );
        assert_eq!(c.totals.dir[IN].peak.packets, 4);
        assert_eq!(c.windows(), 3);
    }

    /// A table breaking `Networks`' contract: every address answers
    /// ordinal 5 of a single route.
    struct PastTheRoutes;

    impl Networks for PastTheRoutes {
        fn batch_v4(&self, _: &[u32], ordinals: &mut [u32]) {
            ordinals.fill(5);
        }
        fn batch_v6(&self, _: &[u128], ordinals: &mut [u32]) {
            ordinals.fill(5);
        }
        fn route_v4(&self, o: u32) -> Option<(ipfib::prefix::Prefix<u32>, &str)> {
            (o == 0).then(|| ("10.0.0.0/8".parse().unwrap(), "inside"))
        }
        fn route_v6(&self, _: u32) -> Option<(ipfib::prefix::Prefix<u128>, &str)> {
            None
        }
        fn routes_v4(&self) -> usize {
            1
        }
        fn routes_v6(&self) -> usize {
            0
        }
    }

    #[test]
    fn ordinals_past_the_routes_count_as_misses() {
        let t = PastTheRoutes;
        let mut c = Classifier::new(&t, Vec::new());
        c.frame(SEC, 100, LINK_RAW, &ip([192, 0, 2, 1], [10, 0, 0, 1]));
        c.finish();
        assert_eq!(c.totals.dir[OTHER].total.packets, 1);
        assert_eq!(c.totals.dir[IN].total, Pb::default());
        assert!(c.nets.is_empty());
    }

    #[test]
    fn window_summary_keeps_the_five_busiest_hosts_in_order() {
        let t = table();
        let seen: RefCell<Vec<WindowSummary>> = RefCell::new(Vec::new());
        let mut c = Classifier::new(&t, Vec::new());
        c.on_window(|w| seen.borrow_mut().push(w.clone()));
        // Host 10.0.0.k receives k packets (k = 1..=8), and 10.0.0.9 as
        // many as 10.0.0.8 but fewer bytes.
        for k in 1..=8u8 {
            for _ in 0..k {
                c.frame(SEC, 100, LINK_RAW, &ip([192, 0, 2, 1], [10, 0, 0, k]));
            }
        }
        for _ in 0..8 {
            c.frame(SEC, 50, LINK_RAW, &ip([192, 0, 2, 1], [10, 0, 0, 9]));
        }
        c.finish();
        let s = seen.borrow();
        let top: Vec<_> = s[0]
            .top_hosts
            .iter()
            .map(|(a, _, _, pb)| (*a, pb.packets))
            .collect();
        let h = |k: u32| AnyAddr::V4(0x0a00_0000 + k);
        assert_eq!(top, [(h(8), 8), (h(9), 8), (h(7), 7), (h(6), 6), (h(5), 5)]);
    }
}
