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
use crate::lookup::answer::Answer;
use ipfib::engine::NO_ROUTE;
use ipfib::prefix::AnyAddr;
use rustc_hash::FxHashMap;

/// Frames decoded per batch of lookups.
pub const BATCH: usize = 256;
/// Incoming packets per window kept to name an alert's top sources.
pub const SAMPLE_PER_WINDOW: usize = 1 << 20;

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
}

/// What is called with each alert as it is raised.
type AlertHook<'t> = Box<dyn FnMut(&Alert) + 't>;

/// Everything counted.
pub struct Classifier<'t, T: Answer> {
    table: &'t T,
    /// Hostgroup index of each route ordinal, per family.
    group_of_v4: Vec<u32>,
    group_of_v6: Vec<u32>,
    pub groups: Vec<String>,
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
    sample: Vec<(u32, AnyAddr, u32)>,
    pub alerts: Vec<Alert>,
    /// Called with each alert as it is raised.
    on_alert: Option<AlertHook<'t>>,
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

impl<'t, T: Answer> Classifier<'t, T> {
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
        let group_of_v4: Vec<u32> = (0..table.routes_v4() as u32)
            .map(|o| table.route_v4(o).map_or(0, |(_, v)| group(v)))
            .collect();
        let group_of_v6: Vec<u32> = (0..table.routes_v6() as u32)
            .map(|o| table.route_v6(o).map_or(0, |(_, v)| group(v)))
            .collect();
        Classifier {
            table,
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
            alerts: Vec::new(),
            on_alert: None,
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

    /// Count one frame.
    #[inline]
    pub fn frame(&mut self, ts_ns: u64, wire_len: u32, link: u16, data: &[u8]) {
        self.frames += 1;
        self.frame_bytes += u64::from(wire_len);
        let sec = ts_ns / 1_000_000_000;
        match self.window {
            Some(w) if sec <= w => {}
            Some(_) => {
                self.flush();
                self.close_window();
                self.window = Some(sec);
                self.last_window = sec;
            }
            None => {
                self.window = Some(sec);
                self.first_window = Some(sec);
                self.last_window = sec;
            }
        }
        match decode(link, data) {
            Ok(Packet::V4 { src, dst, fragment }) => {
                self.fragments += u64::from(fragment);
                if self.b4.push(src, dst, wire_len) {
                    self.flush_v4();
                }
            }
            Ok(Packet::V6 { src, dst, fragment }) => {
                self.fragments += u64::from(fragment);
                if self.b6.push(src, dst, wire_len) {
                    self.flush_v6();
                }
            }
            Err(s) => self.skipped[s as usize] += 1,
        }
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

    /// Windows the capture spans, first to last (0 with no frames).
    pub fn windows(&self) -> u64 {
        self.first_window
            .map_or(0, |f| self.last_window.saturating_sub(f) + 1)
    }

    pub fn skipped(&self, s: Skip) -> u64 {
        self.skipped[s as usize]
    }

    fn flush_v4(&mut self) {
        let n = self.b4.n;
        if n == 0 {
            return;
        }
        let b = &mut self.b4;
        self.table.batch_v4(&b.src[..n], &mut b.so[..n]);
        self.table.batch_v4(&b.dst[..n], &mut b.do_[..n]);
        let mark = self.closed + 1;
        for i in 0..n {
            let (s, d, len) = (b.so[i], b.do_[i], b.len[i]);
            let (dir, net) = direction(s, d);
            self.totals.dir[dir].window.add(len);
            if let Some(o) = net {
                let slot = &mut self.slot_v4[o as usize];
                if *slot == 0 {
                    self.nets.push(Net {
                        net: (4, o),
                        c: Counters::default(),
                    });
                    *slot = self.nets.len() as u32;
                }
                let i = *slot - 1;
                let c = &mut self.nets[i as usize].c;
                c.dir[dir].window.add(len);
                if c.mark != mark {
                    c.mark = mark;
                    self.touched_nets.push(i);
                }
            }
            if dir == IN {
                let (dst, src) = (b.dst[i], b.src[i]);
                let next = self.hosts.len() as u32;
                let h = *self.hosts_v4.entry(dst).or_insert(next);
                if h == next {
                    self.hosts.push(Host {
                        addr: AnyAddr::V4(dst),
                        net: (4, d),
                        flow: Flow::default(),
                        mark: 0,
                    });
                }
                touch_host(&mut self.hosts, &mut self.touched_hosts, h, mark, len);
                self.sources_v4.entry(src).or_default().add(len);
                if !self.thresholds.is_empty() && self.sample.len() < SAMPLE_PER_WINDOW {
                    self.sample.push((h, AnyAddr::V4(src), len));
                }
            }
        }
        b.n = 0;
    }

    fn flush_v6(&mut self) {
        let n = self.b6.n;
        if n == 0 {
            return;
        }
        let b = &mut self.b6;
        self.table.batch_v6(&b.src[..n], &mut b.so[..n]);
        self.table.batch_v6(&b.dst[..n], &mut b.do_[..n]);
        let mark = self.closed + 1;
        for i in 0..n {
            let (s, d, len) = (b.so[i], b.do_[i], b.len[i]);
            let (dir, net) = direction(s, d);
            self.totals.dir[dir].window.add(len);
            if let Some(o) = net {
                let slot = &mut self.slot_v6[o as usize];
                if *slot == 0 {
                    self.nets.push(Net {
                        net: (6, o),
                        c: Counters::default(),
                    });
                    *slot = self.nets.len() as u32;
                }
                let i = *slot - 1;
                let c = &mut self.nets[i as usize].c;
                c.dir[dir].window.add(len);
                if c.mark != mark {
                    c.mark = mark;
                    self.touched_nets.push(i);
                }
            }
            if dir == IN {
                let (dst, src) = (b.dst[i], b.src[i]);
                let next = self.hosts.len() as u32;
                let h = *self.hosts_v6.entry(dst).or_insert(next);
                if h == next {
                    self.hosts.push(Host {
                        addr: AnyAddr::V6(dst),
                        net: (6, d),
                        flow: Flow::default(),
                        mark: 0,
                    });
                }
                touch_host(&mut self.hosts, &mut self.touched_hosts, h, mark, len);
                self.sources_v6.entry(src).or_default().add(len);
                if !self.thresholds.is_empty() && self.sample.len() < SAMPLE_PER_WINDOW {
                    self.sample.push((h, AnyAddr::V6(src), len));
                }
            }
        }
        b.n = 0;
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

    fn close_window(&mut self) {
        let window = self.window.unwrap_or(0);
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
        let mut alerted: Vec<(u32, String, Pb)> = Vec::new();
        for &h in &touched {
            let w = self.hosts[h as usize].flow.window;
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
                    alerted.push((h, t.text.clone(), w));
                }
            }
            self.hosts[h as usize].flow.close();
        }
        self.touched_hosts = touched;
        self.touched_hosts.clear();
        for (h, threshold, counts) in alerted {
            let host = &self.hosts[h as usize];
            let mut by_src: FxHashMap<AnyAddr, Pb> = FxHashMap::default();
            for &(sh, src, len) in &self.sample {
                if sh == h {
                    by_src.entry(src).or_default().add(len);
                }
            }
            let mut top: Vec<(AnyAddr, u64, u64)> = by_src
                .into_iter()
                .map(|(a, pb)| (a, pb.packets, pb.bytes))
                .collect();
            top.sort_by(|a, b| {
                b.1.cmp(&a.1)
                    .then(b.2.cmp(&a.2))
                    .then(addr_key(a.0).cmp(&addr_key(b.0)))
            });
            top.truncate(10);
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
            };
            if let Some(f) = self.on_alert.as_mut() {
                f(&alert);
            }
            self.alerts.push(alert);
        }
        self.sample.clear();
        self.closed += 1;
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

#[inline]
fn touch_host(hosts: &mut [Host], touched: &mut Vec<u32>, h: u32, mark: u64, len: u32) {
    let host = &mut hosts[h as usize];
    host.flow.window.add(len);
    if host.mark != mark {
        host.mark = mark;
        touched.push(h);
    }
}
