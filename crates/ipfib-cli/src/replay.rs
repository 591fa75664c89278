//! `ipfib replay`: apply a real update stream to a dynamic FIB while reader
//! threads look up, and report what updates cost and what readers lost.
//!
//! Per run: a fresh `Fib` from the table; reader threads (pinned) look up a
//! matched trace, one snapshot per batch; first `--idle-ms` without updates
//! (the idle rate), then the writer (pinned) applies every update, timing
//! each `apply` (publications included, the Instant read too), and notes
//! when each update became visible (the publication after it). The final
//! `flush` counts in the total.
//!
//! Update values: an announcement's origin AS (the last AS of its AS path)
//! when the stream has AS paths (MRT), else its next hop (LINX text), else
//! `-`. Every update is applied as a FIB change (announce = insert or
//! replace, withdraw = remove), as the Poptrie paper's §4.9 experiment does
//! with one peer's stream; BGP4MP peer state changes are counted, not
//! applied.

use crate::bench::machine::{pin_to, worker_cpus};
use crate::bench::stats::{quantile, Summary};
use crate::load::{self, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::engine::registry::{EngineSpec, Kind, SpecError, Variant};
use ipfib::engine::Family;
use ipfib::fib::{Fib, FibEngine, FibOptions, FibReader, FibUpdate};
use ipfib::gen::matched_trace;
use ipfib_io::{read_updates, AsSegment, Change, Event};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub table: TableArgs,
    /// Update stream: LINX text (`UNIXTIME a|w PREFIX/LEN NEXTHOP`) or MRT
    /// BGP4MP; gzip, bzip2, zstd read transparently.
    #[arg(long)]
    pub updates: PathBuf,
    /// Engine: auto (the default: poptrie unless the table's shape is one
    /// a trie handles badly, then planb), poptrie (one copy shared by every version; changed slots rewritten into free space)
    /// or planb (rebuild and swap).
    #[arg(long, default_value = "auto")]
    pub engine: String,
    /// Publish once this many changes are pending.
    #[arg(long, default_value_t = FibOptions::default().max_pending)]
    pub max_pending: usize,
    /// ... or when a change arrives this many microseconds after the oldest
    /// pending one.
    #[arg(long, default_value_t = 1000)]
    pub max_delay_us: u64,
    /// Reader threads.
    #[arg(long, default_value_t = 1)]
    pub readers: usize,
    /// Lookups per reader snapshot.
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
    /// Runs (a fresh FIB each); figures are medians with [min-max].
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Milliseconds of reading without updates per run (the idle rate),
    /// split into one window before each piece of the stream.
    #[arg(long, default_value_t = 300)]
    pub idle_ms: u64,
    /// Pieces the stream is applied in, each after an idle window and
    /// ending with a flush: readers' rate during a piece is compared with
    /// the window just before it, so that a VM's slow drift cancels.
    #[arg(long, default_value_t = 10)]
    pub pieces: usize,
    /// Pin the writer to this CPU and readers to the next ones (default:
    /// the CPUs this process may run on, writer on the first).
    #[arg(long)]
    pub pin: Option<usize>,
    /// Write the results as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// One run's figures.
#[derive(Serialize, Clone)]
struct Run {
    total_ms: f64,
    per_update_us_mean: f64,
    per_update_us_p99: f64,
    publish_latency_us_p50: f64,
    publish_latency_us_p99: f64,
    reader_mlps_idle: f64,
    reader_mlps_during: f64,
    /// Median over the pieces of (readers' rate during the piece / their
    /// rate in the idle window just before it).
    reader_during_over_idle: f64,
    publications: u64,
    full_builds: u64,
    slot_rebuilds: u64,
    waiting: u64,
    publish_ms_total: f64,
}

/// The JSON report (ARCHITECTURE §4 fields first: medians over runs).
#[derive(Serialize)]
struct Report {
    updates: usize,
    total_ms: f64,
    per_update_us_mean: f64,
    per_update_us_p99: f64,
    publish_latency_us_p99: f64,
    reader_mlps_idle: f64,
    reader_mlps_during: f64,
    engine: String,
    table: String,
    updates_file: String,
    prefixes_v4: usize,
    prefixes_v6: usize,
    announcements: usize,
    withdrawals: usize,
    peer_state_changes: usize,
    max_pending: usize,
    max_delay_us: u64,
    readers: usize,
    batch: usize,
    writer_cpu: Option<usize>,
    reader_cpus: Vec<usize>,
    rebuild_ms: f64,
    final_prefixes_v4: usize,
    final_prefixes_v6: usize,
    runs: Vec<Run>,
}

pub fn run(args: Args) -> CmdResult {
    // Names go through the registry (one error for unknown ones); the
    // dynamic FIB updates two of its engines in place.
    // An unknown name's list is the three a FIB runs.
    let spec = args.engine.parse::<EngineSpec>().map_err(|e| match e {
        SpecError::Unknown { name, .. } => SpecError::Unknown {
            name,
            valid: "auto, planb, poptrie".into(),
        },
        other => other,
    })?;
    let named = match spec {
        EngineSpec::Auto => None,
        EngineSpec::Engine {
            kind: Kind::Poptrie,
            bits: None,
            variant: Variant::Values,
        } => Some(FibEngine::Poptrie),
        EngineSpec::Engine {
            kind: Kind::PlanB,
            variant: Variant::Values,
            ..
        } => Some(FibEngine::PlanB),
        other => {
            return Err(format!(
                "engine {other}: the dynamic FIB runs auto, poptrie (S = 18) or planb"
            )
            .into())
        }
    };
    if args.runs == 0 || args.batch == 0 || args.readers == 0 {
        return Err("--runs, --batch and --readers must be at least 1".into());
    }
    let loaded = load::load(&args.table)?;
    let engine = match named {
        Some(e) => e,
        None => {
            let (e, why) = FibEngine::choose(&loaded.table);
            eprintln!("replay: engine auto: {} ({why})", e.name());
            e
        }
    };
    let opts = load::table_options(&args.table)?;
    let (updates, counts, bad) = read_stream(&args.updates, &opts)?;
    let table = loaded.table;
    let fib_opts = FibOptions {
        max_pending: args.max_pending.max(1),
        max_delay: Duration::from_micros(args.max_delay_us),
        ..FibOptions::with_engine(engine)
    };
    let cpus = worker_cpus(args.pin, 1 + args.readers);
    let (writer_cpu, reader_cpus) = match cpus.split_first() {
        Some((w, r)) => (Some(*w), r.to_vec()),
        None => (None, Vec::new()),
    };
    if let Some(cpu) = writer_cpu {
        pin_to(cpu)?;
    }
    // Readers look up the family with more routes, inside its prefixes.
    let v4 = table.v4.len() >= table.v6.len();
    let trace4: Vec<u32> = if v4 {
        matched_trace(
            &table.v4.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            1 << 20,
            1,
        )
    } else {
        Vec::new()
    };
    let trace6: Vec<u128> = if v4 {
        Vec::new()
    } else {
        matched_trace(
            &table.v6.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            1 << 20,
            1,
        )
    };

    let mut runs = Vec::new();
    let mut rebuild = Vec::new();
    let mut final_sizes = (0, 0);
    for _ in 0..args.runs {
        let mut fib = Fib::from_table(table.clone(), fib_opts.clone())?;
        let same = table.clone();
        let t = Instant::now();
        fib.replace_all(same)?;
        rebuild.push(t.elapsed().as_secs_f64() * 1e3);
        let mut fib = Fib::from_table(table.clone(), fib_opts.clone())?;
        let run = if v4 {
            one_run(&mut fib, &updates, &trace4, &args, &reader_cpus)?
        } else {
            one_run(&mut fib, &updates, &trace6, &args, &reader_cpus)?
        };
        final_sizes = (fib.routes_v4().len(), fib.routes_v6().len());
        runs.push(run);
    }

    let med = |f: fn(&Run) -> f64| Summary::of(runs.iter().map(f).collect());
    let report = Report {
        updates: updates.len(),
        total_ms: med(|r| r.total_ms).median,
        per_update_us_mean: med(|r| r.per_update_us_mean).median,
        per_update_us_p99: med(|r| r.per_update_us_p99).median,
        publish_latency_us_p99: med(|r| r.publish_latency_us_p99).median,
        reader_mlps_idle: med(|r| r.reader_mlps_idle).median,
        reader_mlps_during: med(|r| r.reader_mlps_during).median,
        engine: engine.name().to_string(),
        table: args.table.table.display().to_string(),
        updates_file: args.updates.display().to_string(),
        prefixes_v4: table.v4.len(),
        prefixes_v6: table.v6.len(),
        announcements: counts.0,
        withdrawals: counts.1,
        peer_state_changes: counts.2,
        max_pending: fib_opts.max_pending,
        max_delay_us: args.max_delay_us,
        readers: args.readers,
        batch: args.batch,
        writer_cpu,
        reader_cpus,
        rebuild_ms: Summary::of(rebuild).median,
        final_prefixes_v4: final_sizes.0,
        final_prefixes_v6: final_sizes.1,
        runs: runs.clone(),
    };
    print_text(&report, &runs);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    }
    Ok(if loaded.had_problems || bad {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}

/// Read the whole stream into FIB updates (not timed):
/// `(updates, (announcements, withdrawals, peer state changes), damaged)`.
#[allow(clippy::type_complexity)]
fn read_stream(
    path: &std::path::Path,
    opts: &ipfib_io::TableOptions,
) -> Result<(Vec<FibUpdate<String>>, (usize, usize, usize), bool), Box<dyn std::error::Error>> {
    let mut reader = read_updates(path, opts)?;
    let mut out = Vec::new();
    let mut counts = (0, 0, 0);
    for ev in reader.by_ref() {
        match ev? {
            Event::Update(u) => match u.change {
                Change::Announce { next_hop, as_path } => {
                    counts.0 += 1;
                    out.push(FibUpdate::Insert(u.prefix, value_of(next_hop, as_path)));
                }
                Change::Withdraw => {
                    counts.1 += 1;
                    out.push(FibUpdate::Remove(u.prefix));
                }
            },
            Event::PeerState { .. } => counts.2 += 1,
        }
    }
    let bad = load::report_problems(path, reader.report());
    Ok((out, counts, bad))
}

/// An announcement's value: origin AS, else next hop, else `-`.
fn value_of(next_hop: Option<std::net::IpAddr>, as_path: Option<ipfib_io::AsPath>) -> String {
    let origin = as_path.and_then(|p| {
        p.iter().rev().find_map(|seg| match seg {
            AsSegment::Sequence(asns) => asns.last().copied(),
            _ => None,
        })
    });
    match (origin, next_hop) {
        (Some(asn), _) => asn.to_string(),
        (None, Some(nh)) => nh.to_string(),
        (None, None) => "-".to_string(),
    }
}

/// Which family a reader trace searches.
trait Lookups: Family {
    fn batch(reader: &ipfib::fib::Snapshot<String>, addrs: &[Self], out: &mut [u32]);
}

impl Lookups for u32 {
    #[inline]
    fn batch(s: &ipfib::fib::Snapshot<String>, addrs: &[u32], out: &mut [u32]) {
        s.lookup_batch_v4(addrs, out)
    }
}

impl Lookups for u128 {
    #[inline]
    fn batch(s: &ipfib::fib::Snapshot<String>, addrs: &[u128], out: &mut [u32]) {
        s.lookup_batch_v6(addrs, out)
    }
}

/// Reader threads count lookups until `stop`; one snapshot per batch.
fn reader_loop<A: Lookups>(
    reader: FibReader<String>,
    trace: &[A],
    batch: usize,
    count: &AtomicU64,
    stop: &AtomicBool,
    cpu: Option<usize>,
) -> u64 {
    if let Some(c) = cpu {
        let _ = pin_to(c);
    }
    let mut out = vec![0u32; batch];
    let mut sum = 0u64;
    let mut done = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for chunk in trace.chunks(batch) {
            let snap = reader.snapshot();
            A::batch(&snap, chunk, &mut out);
            drop(snap);
            sum = sum.wrapping_add(u64::from(out[0]));
            done += chunk.len() as u64;
            count.store(done, Ordering::Relaxed);
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
    }
    sum
}

fn one_run<A: Lookups>(
    fib: &mut Fib<String>,
    updates: &[FibUpdate<String>],
    trace: &[A],
    args: &Args,
    reader_cpus: &[usize],
) -> Result<Run, Box<dyn std::error::Error>> {
    let counts: Vec<AtomicU64> = (0..args.readers).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let total = |c: &[AtomicU64]| c.iter().map(|x| x.load(Ordering::Relaxed)).sum::<u64>();
    std::thread::scope(|s| {
        for (i, count) in counts.iter().enumerate() {
            let reader = fib.reader();
            let cpu = reader_cpus.get(i).copied();
            let stop = &stop;
            s.spawn(move || {
                std::hint::black_box(reader_loop(reader, trace, args.batch, count, stop, cpu))
            });
        }
        // Let the readers start and warm up. Then, per piece of the
        // stream: an idle window, the piece, a flush.
        std::thread::sleep(Duration::from_millis(50));
        // No empty piece (its "during" would be a flush with nothing to
        // publish), and windows of at least a millisecond.
        let pieces = args.pieces.clamp(1, updates.len().max(1));
        let per_piece = updates.len().div_ceil(pieces).max(1);
        let pieces = updates.len().div_ceil(per_piece).max(1);
        let window =
            (Duration::from_millis(args.idle_ms) / pieces as u32).max(Duration::from_millis(1));
        let mut per_update = Vec::with_capacity(updates.len());
        let mut latency = Vec::with_capacity(updates.len());
        let mut applied_at: Vec<Instant> = Vec::with_capacity(updates.len());
        let mut version = fib.version();
        let (mut idle_n, mut idle_s, mut during_n, mut during_s) = (0u64, 0f64, 0u64, 0f64);
        let mut ratios = Vec::with_capacity(pieces);
        // Owned copies, so the timed loop moves updates in, clones nothing.
        let owned: Vec<FibUpdate<String>> = updates.to_vec();
        let mut owned = owned.into_iter();
        let mut result = Ok(());
        for _ in 0..pieces {
            // Let readers refill their caches after the last piece's
            // publications before the idle window counts.
            std::thread::sleep(window / 4);
            let (c0, t0) = (total(&counts), Instant::now());
            std::thread::sleep(window);
            let (n_idle, s_idle) = (total(&counts) - c0, t0.elapsed().as_secs_f64());
            let (c1, start) = (total(&counts), Instant::now());
            let mut prev = start;
            for u in owned.by_ref().take(per_piece) {
                if let Err(e) = fib.apply(u) {
                    result = Err(e);
                    break;
                }
                let now = Instant::now();
                per_update.push((now - prev).as_secs_f64() * 1e6);
                prev = now;
                applied_at.push(now);
                if fib.version() != version {
                    version = fib.version();
                    latency.extend(applied_at.drain(..).map(|t| (now - t).as_secs_f64() * 1e6));
                }
            }
            if result.is_ok() {
                result = fib.flush();
            }
            let end = Instant::now();
            version = fib.version();
            latency.extend(applied_at.drain(..).map(|t| (end - t).as_secs_f64() * 1e6));
            let (n_during, s_during) = (total(&counts) - c1, (end - start).as_secs_f64());
            if n_idle > 0 && s_during > 0.0 {
                ratios.push((n_during as f64 / s_during) / (n_idle as f64 / s_idle));
            }
            idle_n += n_idle;
            idle_s += s_idle;
            during_n += n_during;
            during_s += s_during;
            if result.is_err() {
                break;
            }
        }
        let elapsed = during_s;
        let idle = idle_n as f64 / idle_s / 1e6;
        let during = during_n as f64 / during_s.max(f64::MIN_POSITIVE) / 1e6;
        stop.store(true, Ordering::Relaxed);
        result?;
        ratios.sort_by(f64::total_cmp);

        per_update.sort_by(f64::total_cmp);
        latency.sort_by(f64::total_cmp);
        let stats = fib.stats();
        Ok(Run {
            total_ms: elapsed * 1e3,
            per_update_us_mean: per_update.iter().sum::<f64>() / per_update.len().max(1) as f64,
            per_update_us_p99: pct(&per_update, 0.99),
            publish_latency_us_p50: pct(&latency, 0.5),
            publish_latency_us_p99: pct(&latency, 0.99),
            reader_mlps_idle: idle,
            reader_mlps_during: during,
            reader_during_over_idle: pct(&ratios, 0.5),
            publications: stats.publications,
            full_builds: stats.full_builds,
            slot_rebuilds: stats.slot_rebuilds,
            waiting: stats.waiting,
            publish_ms_total: stats.publish_total.as_secs_f64() * 1e3,
        })
    })
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        0.0
    } else {
        quantile(sorted, p)
    }
}

fn print_text(r: &Report, runs: &[Run]) {
    let range = |f: fn(&Run) -> f64| {
        let s = Summary::of(runs.iter().map(f).collect());
        format!("{:.3} [{:.3}-{:.3}]", s.median, s.min, s.max)
    };
    println!(
        "replay: {} updates ({} announce, {} withdraw) on {} IPv4 + {} IPv6 prefixes, engine {}",
        r.updates, r.announcements, r.withdrawals, r.prefixes_v4, r.prefixes_v6, r.engine
    );
    let writer = r
        .writer_cpu
        .map_or_else(|| "unpinned".to_string(), |c| format!("on CPU {c}"));
    let readers = match r.reader_cpus.as_slice() {
        [] => "unpinned".to_string(),
        cpus => {
            let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
            format!("on CPU {}", list.join(","))
        }
    };
    println!(
        "publish: every {} changes or {} us; writer {writer}, {} reader(s) {readers}, {} lookups per snapshot; {} runs (median [min-max])",
        r.max_pending, r.max_delay_us, r.readers, r.batch, runs.len()
    );
    println!("total ms             {}", range(|x| x.total_ms));
    println!("per update us mean   {}", range(|x| x.per_update_us_mean));
    println!("per update us p99    {}", range(|x| x.per_update_us_p99));
    println!(
        "publish latency p50  {}",
        range(|x| x.publish_latency_us_p50)
    );
    println!(
        "publish latency p99  {}",
        range(|x| x.publish_latency_us_p99)
    );
    println!("reader MLPS idle     {}", range(|x| x.reader_mlps_idle));
    println!("reader MLPS during   {}", range(|x| x.reader_mlps_during));
    println!(
        "during / idle        {}",
        range(|x| x.reader_during_over_idle)
    );
    println!(
        "run 1: {} publications taking {:.1} ms in all (full builds {}, slot rebuilds {}; at the end {} waiting for readers); full rebuild of the table {:.1} ms",
        runs[0].publications, runs[0].publish_ms_total, runs[0].full_builds, runs[0].slot_rebuilds, runs[0].waiting, r.rebuild_ms
    );
}
