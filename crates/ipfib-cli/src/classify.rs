//! `ipfib classify`: FastNetMon's job on a capture file. Every IP packet's
//! source and destination are looked up in a table of the operator's
//! networks (any table format; a network's value is its hostgroup), the
//! packet's direction decided, and packets and bytes counted per network,
//! per hostgroup, per host and per remote source in 1-second windows, with
//! thresholds on a host's incoming rate raising alerts.
//!
//! - `classify/capture.rs`: pcap and pcapng, streamed, damage located;
//! - `classify/decode.rs`: link layers and IP headers;
//! - `classify/count.rs`: the counters, windows, hosts and alerts;
//! - `classify/report.rs`: the human report and the JSON document;
//! - `classify/synth.rs`: `--synthetic N`, the in-memory benchmark.

mod capture;
mod count;
mod decode;
mod report;
mod synth;

use crate::load::{load, TableArgs};
use crate::lookup::answer::Answer;
use crate::{CmdResult, Outcome};
use capture::{Capture, ReadError};
use count::{Classifier, Threshold};
use ipfib::engine::auto::AutoOptions;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

pub use count::Alert;

#[derive(clap::Args)]
pub struct Args {
    /// The operator's networks: any table file `lookup` reads (text
    /// `PREFIX/LEN HOSTGROUP`, ranges, MRT, MaxMind DB, compiled); a
    /// network's value is its hostgroup.
    #[arg(long)]
    networks: PathBuf,
    /// The networks file's format (see `ipfib lookup --help`).
    #[arg(long, default_value = "auto")]
    format: String,
    /// MRT: the value of a prefix (origin-asn, next-hop, peer-count);
    /// MaxMind DB: the field to use as hostgroup, by dot path.
    #[arg(long)]
    value: Option<String>,
    /// Clear host bits in the networks file instead of rejecting the line.
    #[arg(long)]
    mask_host_bits: bool,
    /// Capture file: pcap (micro- or nanosecond) or pcapng; Ethernet (with
    /// 802.1Q/QinQ tags), Linux cooked (SLL, SLL2), raw IP or loopback.
    #[arg(long)]
    pcap: PathBuf,
    /// Also write the report as JSON to this file (`-`: stdout, instead of
    /// the human report).
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Raise an alert when one host's incoming rate in a 1-second window
    /// reaches a threshold: `incoming_pps>=N`, `incoming_mbps>=N`, either
    /// prefixed `HOSTGROUP:` to apply to that hostgroup's hosts only.
    /// Repeatable; the first threshold crossed is named.
    #[arg(long, value_name = "T")]
    threshold: Vec<String>,
    /// Write each alert as a JSON line to this file when it is raised
    /// (`-`: stdout). Alerts are in the report either way.
    #[arg(long, value_name = "FILE")]
    alerts: Option<PathBuf>,
    /// How many hosts and sources the top lists hold.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Benchmark: instead of counting --pcap, build N 64-byte frames in
    /// memory whose sources are --pcap's addresses and whose destinations
    /// lie in the networks, classify them `--passes` times and print the
    /// rate (one core, the report's whole work).
    #[arg(long, value_name = "N")]
    synthetic: Option<usize>,
    /// Passes of `--synthetic`.
    #[arg(long, default_value_t = 5)]
    passes: usize,
}

pub fn run(args: Args) -> CmdResult {
    let thresholds = args
        .threshold
        .iter()
        .map(|t| Threshold::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    let table_args = TableArgs {
        table: args.networks.clone(),
        format: args.format.clone(),
        value: args.value.clone(),
        mask_host_bits: args.mask_host_bits,
        ..TableArgs::default()
    };
    if crate::load::is_compiled(&table_args)? {
        if args.value.is_some() || args.mask_host_bits {
            return Err(
                "--value and --mask-host-bits do not apply to a compiled table file".into(),
            );
        }
        let path = &args.networks;
        let img =
            ipfib::image::ImageTable::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        return classify(&img, &args, thresholds, false);
    }
    let loaded = load(&table_args)?;
    let compiled = loaded.table.compile(&AutoOptions::default())?;
    classify(&compiled, &args, thresholds, loaded.had_problems)
}

fn classify<T: Answer>(
    table: &T,
    args: &Args,
    thresholds: Vec<Threshold>,
    table_problems: bool,
) -> CmdResult {
    if let Some(n) = args.synthetic {
        return synth::bench(table, args, n, thresholds);
    }
    let path = &args.pcap;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let read = Arc::new(AtomicU64::new(0));
    let alert_out: Option<Box<dyn Write>> = match &args.alerts {
        None => None,
        Some(p) if p.as_os_str() == "-" => Some(Box::new(std::io::stdout())),
        Some(p) => Some(Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
        ))),
    };
    let alert_err: std::cell::RefCell<Option<std::io::Error>> = Default::default();
    let started = std::time::Instant::now();
    let (mut c, damage, kind, links) = {
        let (done, finished) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            s.spawn(|| crate::load::progress("reading", finished, &read, size));
            let r = (|| {
                let mut cap = Capture::open(Counting {
                    inner: std::io::BufReader::with_capacity(1 << 20, file),
                    read: &read,
                })
                .map_err(|e| format!("{}: {e}", path.display()))?;
                let mut c = Classifier::new(table, thresholds);
                if let Some(mut out) = alert_out {
                    let err = &alert_err;
                    c.on_alert(move |a: &Alert| {
                        let line = report::alert_json(a);
                        let mut err = err.borrow_mut();
                        if err.is_none() {
                            if let Err(e) = writeln!(out, "{line}").and_then(|_| out.flush()) {
                                *err = Some(e);
                            }
                        }
                    });
                }
                let damage = loop {
                    match cap.next_frame() {
                        Ok(Some(f)) => c.frame(f.ts_ns, f.wire_len, f.link, f.data),
                        Ok(None) => break None,
                        Err(ReadError::Damaged(d)) => break Some(d),
                        Err(ReadError::Fatal(e)) => return Err(format!("{}: {e}", path.display())),
                    }
                };
                c.finish();
                Ok::<_, String>((c, damage, cap.kind(), cap.links.clone()))
            })();
            drop(done);
            r
        })?
    };
    let elapsed = started.elapsed();
    if let Some(e) = alert_err.borrow_mut().take() {
        return Err(format!("writing alerts: {e}").into());
    }
    let doc = report::Report {
        c: &mut c,
        file: path,
        kind,
        links: &links,
        damage: damage.as_ref(),
        top: args.top,
        elapsed,
    };
    let json = doc.json();
    match &args.json {
        Some(p) if p.as_os_str() == "-" => {
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
        other => {
            if let Some(p) = other {
                std::fs::write(p, serde_json::to_string_pretty(&json)? + "\n")
                    .map_err(|e| format!("{}: {e}", p.display()))?;
            }
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            if let Err(e) = doc.human(&mut out) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(format!("writing output: {e}").into());
                }
            }
        }
    }
    if let Some(d) = &damage {
        eprintln!("ipfib: {}: {d}; counted what was complete", path.display());
    }
    Ok(if damage.is_some() || table_problems {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}

/// A reader counting the bytes read, for the progress bar.
struct Counting<'a, R> {
    inner: R,
    read: &'a AtomicU64,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
