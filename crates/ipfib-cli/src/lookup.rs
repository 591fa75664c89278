//! `ipfib lookup`: one output line per address, `ADDR PREFIX VALUE` or
//! `ADDR - -`. Addresses come from the arguments or, with none, from stdin
//! (read in blocks, answered in batches: `lookup/stream.rs`; blank lines
//! are skipped). A bad address is reported on stderr with its line (or
//! argument) number and the rest is still answered; the exit status is
//! then 1. A stdin line longer than `ipfib_io::MAX_LINE_BYTES` is such a
//! bad line, skipped without being held in memory.
//!
//! The engine is chosen here (`Engine`: `auto`'s choice, or the named
//! engine built through `auto` with its choice forced, or radix);
//! everything after that is generic over the compiled table
//! (`lookup/answer.rs`'s `Answer`).

pub mod answer;
mod parallel;
mod stream;

use crate::load::{open_table, OpenedTable, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::engine::auto::AutoOptions;
use ipfib::engine::kernel::Kernel;
use ipfib::engine::registry::{self, EngineSpec};
use ipfib::table::CompiledTable;
use std::io;
use stream::Failure;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    table: TableArgs,
    // The help text names optional parts in brackets (`poptrie[:S]`),
    // which rustdoc would read as links.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Lookup engine: auto (the default: chosen per family from the
    /// table's shape and a short calibration; `ipfib info` says which),
    /// planb (linearized B+-tree), poptrie[:S] (Poptrie with
    /// S direct-pointing bits, 0-24, default 18), poptrie32[:S] (32-ary
    /// nodes; `poptrie5` before), poptrie-flat[:S] (32-ary nodes inline
    /// with the leaves) or radix (the route table itself); `ipfib engines`
    /// lists them.
    #[arg(long, default_value = "auto")]
    engine: String,
    /// Search kernel (scalar, popcnt, avx2, avx512, neon): a named engine
    /// runs it or refuses; auto runs it in every engine that has it on this
    /// CPU (the others their best); default: each engine's best. `ipfib
    /// engines` lists each engine's kernels.
    #[arg(long)]
    kernel: Option<String>,
    /// Threads answering stdin (0: one per CPU): the input is cut into
    /// chunks of whole lines, answered in parallel and written in input
    /// order; the output and messages are one thread's.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Addresses to look up; with none, read stdin one per line.
    addrs: Vec<String>,
}

/// Every engine but radix is built as `auto`'s engine, its choice forced
/// when one is named, so the answering code below is written once.
enum Engine {
    Compiled(Box<CompiledTable<String>>),
    Radix,
}

pub fn run(args: Args) -> CmdResult {
    let kernel = args
        .kernel
        .as_deref()
        .map(str::parse::<Kernel>)
        .transpose()?;
    // Checked up front, whatever the engine (radix ignores the kernel).
    if let Some(k) = kernel.filter(|&k| !registry::kernel_runs_here(k)) {
        return Err(format!("kernel {k} is not supported by this CPU (by any engine)").into());
    }
    let spec = EngineSpec::parse_lookup(&args.engine)?;
    // A named engine runs the named kernel or refuses (auto runs it in
    // every engine that has it here, the others their best).
    if let (Some(k), EngineSpec::Engine { kind, .. }) = (kernel, spec) {
        let set = kind.kernels();
        if !set.is_supported(k) {
            let here: Vec<&str> = set.supported().iter().map(|k| k.name()).collect();
            return Err(format!(
                "{} has no kernel {k} on this CPU (here: {})",
                kind.name(),
                here.join(", ")
            )
            .into());
        }
    }
    let t = &args.table;
    // What a compiled table file refuses, the first named: its engines
    // are compiled into it, and so are its routes and values.
    let engine_given = spec != EngineSpec::Auto || kernel.is_some();
    let given = [
        ("--engine", engine_given),
        ("--value", t.value.is_some()),
        ("--peer", t.peer.is_some()),
        ("--value-column", t.value_column.is_some()),
        ("--mask-host-bits", t.mask_host_bits),
        ("--strict", t.strict),
    ];
    let refused = given.iter().find(|g| g.1).map(|g| g.0);
    let loaded = match open_table(t, refused) {
        Ok(OpenedTable::Image(img)) => return finish(respond(&img, &args.addrs, args.threads), 0),
        Ok(OpenedTable::Loaded(loaded)) => loaded,
        Err(e) => return Err(not_for_compiled(e)),
    };
    let table = loaded.table;
    let force = spec.force();
    let engine = match spec {
        EngineSpec::Radix => Engine::Radix,
        // Route payloads (`Compiled`), so the matching prefix is printed.
        _ => Engine::Compiled(Box::new(table.compile(&AutoOptions {
            kernel,
            force,
            ..AutoOptions::default()
        })?)),
    };
    let addrs = &args.addrs;
    let answered = match &engine {
        Engine::Compiled(c) => respond(&**c, addrs, args.threads),
        Engine::Radix => respond(&answer::Radix::new(&table), addrs, args.threads),
    };
    // Damage or skipped records in the table (reported by `load`): exit 1.
    finish(answered, u64::from(loaded.had_problems))
}

/// The outcome of answering: `bad` problems so far plus the bad addresses.
fn finish(answered: Result<u64, Failure>, mut bad: u64) -> CmdResult {
    match answered {
        Ok(n) => bad += n,
        // The reader went away (`| head`): not an error of ours.
        Err(Failure::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(Outcome::Ok),
        Err(Failure::Write(e)) => return Err(format!("writing output: {e}").into()),
        Err(Failure::Read(e)) => return Err(format!("reading stdin: {e}").into()),
    }
    Ok(if bad > 0 {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}

/// Answer `addrs`, or stdin's lines when there are none, from `table`;
/// the number of bad ones.
fn respond<T: answer::Answer + Sync>(
    table: &T,
    addrs: &[String],
    threads: usize,
) -> Result<u64, Failure> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    // At most one worker per CPU: each holds an answer cache of its own
    // (tens of MB on a full table) and chunks in flight.
    let threads = ipfib::par::thread_count(threads).min(ipfib::par::cpus());
    if addrs.is_empty() && threads > 1 {
        let answered = parallel::answer_lines_threads(
            table,
            io::stdin().lock(),
            &mut out,
            &mut io::stderr(),
            stream::Limits::default(),
            threads,
        );
        if let Some(a) = answered {
            return a;
        }
    }
    let mut r = stream::Responder::new(table, io::stderr());
    if addrs.is_empty() {
        stream::answer_lines(
            &mut r,
            io::stdin().lock(),
            &mut out,
            stream::Limits::default(),
        )?;
    } else {
        for (i, text) in addrs.iter().enumerate() {
            r.argument(i + 1, text, &mut out).map_err(Failure::Write)?;
        }
        r.finish(&mut out).map_err(Failure::Write)?;
    }
    Ok(r.bad())
}

/// A compiled table file refused for an option it does not take, said as
/// `lookup` says it; any other error as it is.
fn not_for_compiled(e: Box<dyn std::error::Error>) -> Box<dyn std::error::Error> {
    match e.downcast_ref::<ipfib_io::OpenError>() {
        Some(ipfib_io::OpenError::NotForCompiled {
            option: "--engine", ..
        }) => "a compiled table file answers with the engines compiled into it: \
             choose them with `ipfib compile --engine` (no --engine or --kernel here)"
            .into(),
        Some(ipfib_io::OpenError::NotForCompiled { option, .. }) => format!(
            "{option} does not apply to a compiled table file (its routes and values are \
             as compiled: pass it to `ipfib compile`)"
        )
        .into(),
        _ => e,
    }
}
