//! `ipfib classify`: the flags, the table loading, the progress bar and
//! the output streams; the counting itself is the `ipfib-classify` crate.

use crate::load::{load, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::engine::auto::AutoOptions;
use ipfib_classify::capture::Capture;
use ipfib_classify::count::{Classifier, Threshold};
use ipfib_classify::fan::{self, Count};
use ipfib_classify::{count_capture, live, report, synth, Networks};
use std::cell::RefCell;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

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
    /// Give this or --interface.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Capture live on this interface instead (Linux, root or
    /// CAP_NET_RAW): an AF_PACKET socket with a TPACKET_V3 ring, the
    /// interface in promiscuous mode. Stops at --duration, --count, Ctrl-C
    /// or SIGTERM, then reports as for a file.
    #[arg(long, value_name = "IF")]
    interface: Option<String>,
    /// --interface: stop after this many seconds.
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// --interface: stop after this many frames.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Write each 1-second window's counts as a JSON line to this file when
    /// it closes (`-`: stdout): per direction packets and bytes, and the
    /// window's top 5 hosts by incoming packets.
    #[arg(long, value_name = "FILE")]
    windows: Option<PathBuf>,
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
    /// rate (the report's whole work, on --threads).
    #[arg(long, value_name = "N")]
    synthetic: Option<usize>,
    /// Passes of `--synthetic`.
    #[arg(long, default_value_t = 5)]
    passes: usize,
    /// Count on N threads (0: one per CPU; at most one per CPU): with 2 or
    /// more, N counting threads and the one reading the frames, which keeps
    /// the clock and deals the packets out; 1 counts on the reading thread.
    /// The report, alerts and windows are one thread's (past the memory
    /// bounds on hosts, sources and the alert sample, each thread holds
    /// its share of them per window).
    #[arg(long, default_value_t = 1, value_name = "N")]
    threads: usize,
}

impl Args {
    /// `--threads`: 0 is one per CPU, and at most one per CPU.
    fn counting_threads(&self) -> usize {
        ipfib::par::thread_count(self.threads).min(ipfib::par::cpus())
    }
}

pub fn run(args: Args) -> CmdResult {
    match (&args.pcap, &args.interface) {
        (None, None) => return Err("give --pcap FILE or --interface IF".into()),
        (Some(_), Some(_)) => {
            return Err("--pcap and --interface exclude each other: give one".into())
        }
        (None, Some(_)) if args.synthetic.is_some() => {
            return Err("--synthetic takes its addresses from --pcap FILE, not --interface".into())
        }
        (Some(_), None) if args.duration.is_some() || args.count.is_some() => {
            return Err("--duration and --count apply to --interface only".into())
        }
        _ => {}
    }
    if let Some(d) = args.duration {
        if !(d.is_finite() && d > 0.0) {
            return Err(format!("--duration {d}: expected a positive number of seconds").into());
        }
    }
    let thresholds = args
        .threshold
        .iter()
        .map(|t| Threshold::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    // One stream on stdout at most: JSON lines and a JSON document (or
    // the human report) interleaved would be neither.
    let dash = |p: &Option<PathBuf>| p.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if [dash(&args.alerts), dash(&args.windows), dash(&args.json)]
        .iter()
        .filter(|&&d| d)
        .count()
        > 1
    {
        return Err("only one of --json, --alerts and --windows can be `-` (stdout)".into());
    }
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

fn classify<T: Networks + Sync>(
    table: &T,
    args: &Args,
    thresholds: Vec<Threshold>,
    table_problems: bool,
) -> CmdResult {
    let threads = args.counting_threads();
    if let Some(n) = args.synthetic {
        return synthetic(table, args, n, threads, thresholds);
    }
    let alerts = LineSink::open(args.alerts.as_deref())?;
    let windows = LineSink::open(args.windows.as_deref())?;
    if let Some(interface) = &args.interface {
        return live_capture(
            table,
            args,
            interface,
            thresholds,
            table_problems,
            &alerts,
            &windows,
        );
    }
    let Some(path) = args.pcap.as_deref() else {
        return Err("give --pcap FILE or --interface IF".into());
    };
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let read = Arc::new(AtomicU64::new(0));
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
                c.top = args.top;
                hook_sinks(&mut c, &alerts, &windows);
                let counted = if threads > 1 {
                    fan::run(&mut c, threads, |f| count_capture(&mut cap, f))?
                } else {
                    count_capture(&mut cap, &mut c)
                };
                let damage = counted.map_err(|e| format!("{}: {e}", path.display()))?;
                Ok::<_, String>((c, damage, cap.kind(), cap.links.clone()))
            })();
            drop(done);
            r
        })?
    };
    let elapsed = started.elapsed();
    alerts.check("alerts")?;
    windows.check("windows")?;
    let doc = report::Report {
        c: &mut c,
        file: path,
        format: kind.name(),
        links: &links,
        damage: damage.as_ref(),
        live: None,
        top: args.top,
        elapsed,
    };
    output(&doc, args.json.as_deref())?;
    if let Some(d) = &damage {
        eprintln!("ipfib: {}: {d}; counted what was complete", path.display());
    }
    Ok(if damage.is_some() || table_problems {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}

/// `--synthetic N`: the classifier's rate on an in-memory capture.
fn synthetic<T: Networks + Sync>(
    table: &T,
    args: &Args,
    n: usize,
    threads: usize,
    thresholds: Vec<Threshold>,
) -> CmdResult {
    let pcap = args
        .pcap
        .as_deref()
        .ok_or("--synthetic takes its addresses from --pcap FILE")?;
    let rates = synth::bench(table, pcap, n, args.passes, threads, thresholds, |s| {
        let d = &s.directions;
        println!(
            "synthetic capture: {} frames of 64 bytes ({:.1} MB), {:.0}% IPv6; \
             incoming {}, outgoing {}, internal {}, other {}; {} hosts, {} sources",
            s.frames,
            s.bytes as f64 / 1e6,
            s.v6_share * 100.0,
            d[0],
            d[1],
            d[2],
            d[3],
            s.hosts,
            s.sources
        );
    })?;
    let mut sorted = rates;
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    println!(
        "classify: {median:.2} M packets/s median [{:.2}-{:.2}] over {} passes \
         ({:.2} M lookups/s), {}",
        sorted[0],
        sorted[sorted.len() - 1],
        sorted.len(),
        median * 2.0,
        if threads > 1 {
            format!("{threads} counting threads and the reading one")
        } else {
            "one thread".to_string()
        }
    );
    Ok(Outcome::Ok)
}

/// `--interface`: count a live capture until it is stopped, then report.
fn live_capture<T: Networks + Sync>(
    table: &T,
    args: &Args,
    interface: &str,
    thresholds: Vec<Threshold>,
    table_problems: bool,
    alerts: &LineSink,
    windows: &LineSink,
) -> CmdResult {
    let opts = live::Options {
        interface: interface.to_string(),
        // A duration past what `Duration` holds means no deadline.
        duration: args
            .duration
            .and_then(|d| std::time::Duration::try_from_secs_f64(d).ok()),
        count: args.count,
    };
    let started = std::time::Instant::now();
    let mut c = Classifier::new(table, thresholds);
    c.top = args.top;
    hook_sinks(&mut c, alerts, windows);
    let threads = args.counting_threads();
    let stats = if threads > 1 {
        fan::run(&mut c, threads, |f| {
            let stats = live::capture(f, &opts);
            f.finish();
            stats
        })??
    } else {
        let stats = live::capture(&mut c, &opts)?;
        c.finish();
        stats
    };
    let elapsed = started.elapsed();
    alerts.check("alerts")?;
    windows.check("windows")?;
    let file = PathBuf::from(format!("interface {interface}"));
    let doc = report::Report {
        c: &mut c,
        file: &file,
        format: "af_packet",
        links: &[stats.link],
        damage: None,
        live: Some(&stats),
        top: args.top,
        elapsed,
    };
    output(&doc, args.json.as_deref())?;
    if stats.kernel_drops > 0 {
        eprintln!(
            "ipfib: {interface}: the kernel dropped {} of {} packets (ring full); the counts miss them",
            stats.kernel_drops, stats.kernel_packets
        );
    }
    Ok(if table_problems {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}

/// The report as JSON (`-`: stdout, instead of the human report) and/or
/// the human report on stdout.
fn output<T: Networks>(doc: &report::Report<'_, '_, T>, json: Option<&Path>) -> Result<(), String> {
    let text = || serde_json::to_string_pretty(&doc.json()).map_err(|e| e.to_string());
    match json {
        Some(p) if p.as_os_str() == "-" => {
            // A reader that went away (`| head`) is not an error of ours;
            // a full disk is.
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            if let Err(e) = writeln!(out, "{}", text()?).and_then(|_| out.flush()) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(format!("writing output: {e}"));
                }
            }
        }
        other => {
            if let Some(p) = other {
                std::fs::write(p, text()? + "\n").map_err(|e| format!("{}: {e}", p.display()))?;
            }
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            if let Err(e) = doc.human(&mut out) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(format!("writing output: {e}"));
                }
            }
        }
    }
    Ok(())
}

/// Stream alerts and closed windows as JSON lines into their sinks.
fn hook_sinks<'t, T: Networks>(
    c: &mut Classifier<'t, T>,
    alerts: &'t LineSink,
    windows: &'t LineSink,
) {
    if alerts.is_open() {
        c.on_alert(move |a| alerts.write(&report::alert_json(a)));
    }
    if windows.is_open() {
        c.on_window(move |w| windows.write(&report::window_json(w)));
    }
}

/// Where `--alerts` or `--windows` lines go (`-`: stdout), each flushed as
/// written so a reader follows them live; the first write error is kept
/// for the end (the count goes on without the stream).
struct LineSink {
    out: RefCell<Option<Box<dyn Write>>>,
    err: RefCell<Option<std::io::Error>>,
}

impl LineSink {
    fn open(path: Option<&Path>) -> Result<LineSink, String> {
        let out: Option<Box<dyn Write>> = match path {
            None => None,
            Some(p) if p.as_os_str() == "-" => Some(Box::new(std::io::stdout())),
            Some(p) => Some(Box::new(std::io::BufWriter::new(
                std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
            ))),
        };
        Ok(LineSink {
            out: RefCell::new(out),
            err: RefCell::new(None),
        })
    }

    fn is_open(&self) -> bool {
        self.out.borrow().is_some()
    }

    fn write(&self, line: &serde_json::Value) {
        let mut err = self.err.borrow_mut();
        if err.is_some() {
            return;
        }
        if let Some(out) = self.out.borrow_mut().as_mut() {
            if let Err(e) = writeln!(out, "{line}").and_then(|_| out.flush()) {
                *err = Some(e);
            }
        }
    }

    /// The first write error, as `writing WHAT: ...`.
    /// A reader that went away (`| head`) is not an error of ours, as
    /// for the report.
    fn check(&self, what: &str) -> Result<(), String> {
        match self.err.borrow_mut().take() {
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            Some(e) => Err(format!("writing {what}: {e}")),
            None => Ok(()),
        }
    }
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
