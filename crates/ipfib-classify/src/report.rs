//! The report: a JSON document (every network and hostgroup that saw
//! traffic, the top lists, the alerts) and the human tables drawn from it.

use super::capture::Damage;
use super::count::{
    addr_key, Alert, Classifier, Counters, Flow, Host, Net, WindowSummary, DIRECTIONS,
};
use super::decode::Skip;
use super::live;
use crate::Networks;
use ipfib::prefix::AnyAddr;
use serde_json::{json, Value};
use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

pub struct Report<'a, 't, T: Networks> {
    pub c: &'a mut Classifier<'t, T>,
    /// The capture file, or `interface IF`.
    pub file: &'a Path,
    /// `pcap`, `pcapng` or `af_packet`.
    pub format: &'static str,
    pub links: &'a [u16],
    pub damage: Option<&'a Damage>,
    /// A live capture's kernel counters and why it stopped.
    pub live: Option<&'a live::Stats>,
    pub top: usize,
    pub elapsed: Duration,
}

fn addr_text(a: AnyAddr) -> String {
    a.to_ip().to_string()
}

fn flow_json(f: &Flow, windows: u64) -> Value {
    let w = windows.max(1) as f64;
    json!({
        "packets": f.total.packets,
        "bytes": f.total.bytes,
        "peak_pps": f.peak.packets,
        "peak_bps": f.peak.bytes * 8,
        "mean_pps": f.total.packets as f64 / w,
        "mean_bps": (f.total.bytes * 8) as f64 / w,
    })
}

/// The directions of `c`; `other` (neither end in a network) only for
/// the totals, as it belongs to no network or hostgroup.
fn dirs_json(c: &Counters, windows: u64, into: &mut serde_json::Map<String, Value>, other: bool) {
    for (d, name) in DIRECTIONS
        .iter()
        .enumerate()
        .take(if other { 4 } else { 3 })
    {
        into.insert((*name).into(), flow_json(&c.dir[d], windows));
    }
}

fn total_packets(c: &Counters) -> u64 {
    c.dir.iter().map(|f| f.total.packets).sum()
}

/// One alert as a JSON object (also a line of `--alerts`).
pub fn alert_json(a: &Alert) -> Value {
    json!({
        "host": addr_text(a.host),
        "hostgroup": a.hostgroup,
        "network": a.network,
        "window": a.window,
        "incoming_pps": a.pps,
        "incoming_bps": a.bps,
        "incoming_mbps": a.bps as f64 / 1e6,
        "threshold": a.threshold,
        "sampled_packets": a.sampled_packets,
        "top_sources": a.top_sources.iter().map(|(s, p, b)| json!({
            "address": addr_text(*s), "packets": p, "bytes": b
        })).collect::<Vec<_>>(),
    })
}

/// One closed window as a JSON object (a line of `--windows`).
pub fn window_json(w: &WindowSummary) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("window".into(), json!(w.window));
    for (d, name) in DIRECTIONS.iter().enumerate() {
        m.insert(
            (*name).into(),
            json!({"packets": w.dirs[d].packets, "bytes": w.dirs[d].bytes}),
        );
    }
    m.insert(
        "top_hosts".into(),
        w.top_hosts
            .iter()
            .map(|(a, network, group, pb)| {
                json!({
                    "host": addr_text(*a),
                    "hostgroup": group,
                    "network": network,
                    "packets": pb.packets,
                    "bytes": pb.bytes,
                })
            })
            .collect(),
    );
    Value::Object(m)
}

fn link_name(l: u16) -> String {
    match l {
        0 => "null".into(),
        1 => "ethernet".into(),
        101 | 12 | 14 => "raw".into(),
        108 => "loop".into(),
        113 => "linux_sll".into(),
        228 => "ipv4".into(),
        229 => "ipv6".into(),
        276 => "linux_sll2".into(),
        n => format!("linktype {n}"),
    }
}

impl<T: Networks> Report<'_, '_, T> {
    /// Networks that saw traffic, most packets first.
    fn networks(&self) -> Vec<&Net> {
        let mut v: Vec<&Net> = self.c.nets.iter().collect();
        v.sort_by(|a, b| {
            total_packets(&b.c)
                .cmp(&total_packets(&a.c))
                .then(a.net.cmp(&b.net))
        });
        v
    }

    fn groups(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.c.groups.len())
            .filter(|&g| total_packets(&self.c.group_counters[g]) > 0)
            .collect();
        v.sort_by(|&a, &b| {
            total_packets(&self.c.group_counters[b])
                .cmp(&total_packets(&self.c.group_counters[a]))
                .then(self.c.groups[a].cmp(&self.c.groups[b]))
        });
        v
    }

    fn top_hosts(&self, by_bytes: bool) -> Vec<&Host> {
        let mut v: Vec<&Host> = self.c.hosts.iter().collect();
        let key = |h: &Host| {
            if by_bytes {
                (h.flow.peak.bytes, h.flow.total.bytes)
            } else {
                (h.flow.peak.packets, h.flow.total.packets)
            }
        };
        v.sort_by(|a, b| {
            key(b)
                .cmp(&key(a))
                .then(addr_key(a.addr).cmp(&addr_key(b.addr)))
        });
        v.truncate(self.top);
        v
    }

    fn top_sources(&self) -> Vec<(AnyAddr, u64, u64)> {
        let mut v: Vec<(AnyAddr, u64, u64)> = self
            .c
            .sources_v4
            .iter()
            .map(|(a, pb)| (AnyAddr::V4(*a), pb.packets, pb.bytes))
            .chain(
                self.c
                    .sources_v6
                    .iter()
                    .map(|(a, pb)| (AnyAddr::V6(*a), pb.packets, pb.bytes)),
            )
            .collect();
        v.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(b.2.cmp(&a.2))
                .then(addr_key(a.0).cmp(&addr_key(b.0)))
        });
        v.truncate(self.top);
        v
    }

    fn host_json(&self, h: &Host) -> Value {
        let (network, group) = self.c.network(h.net);
        json!({
            "host": addr_text(h.addr),
            "hostgroup": group,
            "network": network,
            "incoming_packets": h.flow.total.packets,
            "incoming_bytes": h.flow.total.bytes,
            "peak_pps": h.flow.peak.packets,
            "peak_bps": h.flow.peak.bytes * 8,
        })
    }

    pub fn json(&self) -> Value {
        let c = &*self.c;
        let windows = c.windows();
        let mut totals = serde_json::Map::new();
        dirs_json(&c.totals, windows, &mut totals, true);
        let groups: Vec<Value> = self
            .groups()
            .into_iter()
            .map(|g| {
                let mut m = serde_json::Map::new();
                m.insert("hostgroup".into(), json!(c.groups[g]));
                dirs_json(&c.group_counters[g], windows, &mut m, false);
                Value::Object(m)
            })
            .collect();
        let networks: Vec<Value> = self
            .networks()
            .into_iter()
            .map(|net| {
                let (prefix, group) = c.network(net.net);
                let mut m = serde_json::Map::new();
                m.insert("network".into(), json!(prefix));
                m.insert("hostgroup".into(), json!(group));
                dirs_json(&net.c, windows, &mut m, false);
                Value::Object(m)
            })
            .collect();
        let mut skipped = serde_json::Map::new();
        for s in Skip::ALL {
            skipped.insert(s.name().into(), json!(c.skipped(s)));
        }
        json!({
            "capture": {
                "file": self.file.display().to_string(),
                "format": self.format,
                "link_types": self.links.iter().map(|&l| link_name(l)).collect::<Vec<_>>(),
                "frames": c.frames,
                "bytes": c.frame_bytes,
                "first_window": c.first_window,
                "last_window": c.first_window.map(|_| c.last_window),
                "windows": windows,
                "damaged": self.damage.is_some(),
                "damage_offset": self.damage.map(|d| d.offset),
                "damage": self.damage.map(|d| d.reason.clone()),
                "seconds": self.elapsed.as_secs_f64(),
                "time_jumps": c.time_jumps,
                "kernel_packets": self.live.map(|l| l.kernel_packets),
                "kernel_drops": self.live.map(|l| l.kernel_drops),
                "stopped_by": self.live.map(|l| l.stopped_by.name()),
            },
            "skipped": skipped,
            "fragments": c.fragments,
            "untracked": {"hosts_packets": c.untracked_hosts, "sources_packets": c.untracked_sources},
            "totals": totals,
            "hostgroups": groups,
            "networks": networks,
            "top_hosts_pps": self.top_hosts(false).into_iter().map(|h| self.host_json(h)).collect::<Vec<_>>(),
            "top_hosts_bps": self.top_hosts(true).into_iter().map(|h| self.host_json(h)).collect::<Vec<_>>(),
            "top_sources": self.top_sources().into_iter().map(|(a, p, b)| json!({
                "address": addr_text(a), "packets": p, "bytes": b
            })).collect::<Vec<_>>(),
            "alerts": c.alerts.iter().map(alert_json).collect::<Vec<_>>(),
        })
    }

    /// The human report: the capture, totals, hostgroups, networks, top
    /// hosts and sources, alerts.
    pub fn human(&self, out: &mut impl Write) -> io::Result<()> {
        let c = &*self.c;
        let windows = c.windows();
        let links: Vec<String> = self.links.iter().map(|&l| link_name(l)).collect();
        writeln!(
            out,
            "capture   {} ({}, {}): {} frames, {} bytes, {} one-second window{}",
            self.file.display(),
            self.format,
            links.join(", "),
            c.frames,
            c.frame_bytes,
            windows,
            if windows == 1 { "" } else { "s" }
        )?;
        let skipped: Vec<String> = Skip::ALL
            .iter()
            .filter(|&&s| c.skipped(s) > 0)
            .map(|&s| format!("{} {}", s.name(), c.skipped(s)))
            .collect();
        writeln!(
            out,
            "skipped   {}; fragments counted: {}",
            if skipped.is_empty() {
                "none".to_string()
            } else {
                skipped.join(", ")
            },
            c.fragments
        )?;
        if let Some(d) = self.damage {
            writeln!(out, "damaged   {d}; the frames before it are counted")?;
        }
        if c.time_jumps > 0 {
            writeln!(
                out,
                "time      {} jump(s) back in time or gap(s) over a day: means divide by the \
                 {} seconds of the stretches between them",
                c.time_jumps,
                c.windows()
            )?;
        }
        if c.untracked_hosts + c.untracked_sources > 0 {
            writeln!(
                out,
                "untracked packets to hosts, from sources past the first {} of each: {}, {} \
                 (counted in every other figure)",
                super::count::MAX_TRACKED,
                c.untracked_hosts,
                c.untracked_sources
            )?;
        }
        if let Some(l) = self.live {
            writeln!(
                out,
                "kernel    {} packets received, {} dropped (ring full){}; stopped by {}",
                l.kernel_packets,
                l.kernel_drops,
                if l.kernel_drops > 0 {
                    ": counts are short by those"
                } else {
                    ""
                },
                l.stopped_by.name()
            )?;
        }
        writeln!(out)?;
        let header = |out: &mut dyn Write, first: &str| {
            writeln!(
                out,
                "{first:<28} {:>10} {:>12} {:>9} {:>10} {:>10} {:>12} {:>10} {:>10}",
                "in pkts",
                "in bytes",
                "peak pps",
                "peak Mbps",
                "out pkts",
                "out bytes",
                "internal",
                "other"
            )
        };
        let row = |out: &mut dyn Write, first: &str, k: &Counters| {
            let f = &k.dir;
            writeln!(
                out,
                "{first:<28} {:>10} {:>12} {:>9} {:>10.3} {:>10} {:>12} {:>10} {:>10}",
                f[0].total.packets,
                f[0].total.bytes,
                f[0].peak.packets,
                (f[0].peak.bytes * 8) as f64 / 1e6,
                f[1].total.packets,
                f[1].total.bytes,
                f[2].total.packets,
                f[3].total.packets
            )
        };
        header(out, "total")?;
        row(out, "all packets", &c.totals)?;
        writeln!(out)?;
        header(out, "hostgroup")?;
        for g in self.groups() {
            row(out, &c.groups[g], &c.group_counters[g])?;
        }
        writeln!(out)?;
        let nets = self.networks();
        header(
            out,
            &format!(
                "network (top {} of {})",
                self.top.min(nets.len()),
                nets.len()
            ),
        )?;
        for net in nets.into_iter().take(self.top) {
            let (p, _) = c.network(net.net);
            row(out, &p, &net.c)?;
        }
        for (by_bytes, what) in [(false, "peak incoming pps"), (true, "peak incoming Mbps")] {
            writeln!(out)?;
            writeln!(
                out,
                "{:<40} {:>10} {:>12} {:>9} {:>10}  hostgroup",
                format!("host (top by {what})"),
                "in pkts",
                "in bytes",
                "peak pps",
                "peak Mbps"
            )?;
            for h in self.top_hosts(by_bytes) {
                let (_, group) = c.network(h.net);
                writeln!(
                    out,
                    "{:<40} {:>10} {:>12} {:>9} {:>10.3}  {group}",
                    addr_text(h.addr),
                    h.flow.total.packets,
                    h.flow.total.bytes,
                    h.flow.peak.packets,
                    (h.flow.peak.bytes * 8) as f64 / 1e6
                )?;
            }
        }
        writeln!(out)?;
        writeln!(
            out,
            "{:<40} {:>10} {:>12}",
            "remote source (top by incoming packets)", "packets", "bytes"
        )?;
        for (a, p, b) in self.top_sources() {
            writeln!(out, "{:<40} {p:>10} {b:>12}", addr_text(a))?;
        }
        if !c.alerts.is_empty() {
            writeln!(out)?;
            writeln!(out, "alerts ({})", c.alerts.len())?;
            for a in &c.alerts {
                let srcs: Vec<String> = a
                    .top_sources
                    .iter()
                    .take(5)
                    .map(|(s, p, _)| format!("{} ({p})", addr_text(*s)))
                    .collect();
                writeln!(
                    out,
                    "  window {}: {} [{}] {} pps, {:.3} Mbps >= {}; top sources {}",
                    a.window,
                    addr_text(a.host),
                    a.hostgroup,
                    a.pps,
                    a.bps as f64 / 1e6,
                    a.threshold,
                    srcs.join(", ")
                )?;
            }
        }
        Ok(())
    }
}
