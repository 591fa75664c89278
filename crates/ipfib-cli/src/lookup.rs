//! `ipfib lookup`: one output line per address, `ADDR PREFIX VALUE` or
//! `ADDR - -`. Addresses come from the arguments or, with none, from stdin
//! (read in blocks, answered in batches: `lookup/stream.rs`; blank lines
//! are skipped). A bad address is reported on stderr with its line (or
//! argument) number and the rest is still answered; the exit status is
//! then 1. A stdin line longer than `ipfib_io::MAX_LINE_BYTES` is such a
//! bad line, skipped without being held in memory.
//!
//! The engine is chosen here (`Engine`); everything after that is generic
//! over the compiled table (`lookup/answer.rs`'s `Answer`), so an engine
//! is one more match arm in `run`.

mod answer;
mod stream;

use crate::engines::{EngineSpec, Layout, LOOKUP_ENGINES};
use crate::load::{load, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::engine::planb::kernel::Kernel;
use ipfib::engine::planb::PlanbOptions;
use ipfib::engine::poptrie::{self, FlatPoptrie, Node, Node32, Poptrie, PoptrieOptions};
use ipfib::table::CompiledTable;
use std::io;
use stream::Failure;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    table: TableArgs,
    /// Lookup engine: planb (linearized B+-tree), poptrie[:S] (Poptrie with
    /// S direct-pointing bits, 0-24, default 18), poptrie5[:S] (32-ary
    /// nodes), poptrie-flat[:S] (32-ary nodes inline with the leaves: the
    /// fastest batches on IPv6) or radix (the route table itself).
    #[arg(long, default_value = "planb")]
    engine: String,
    /// PlanB search kernel (avx512, avx2, neon, scalar); default: the best
    /// this CPU supports. Poptrie: scalar forces the portable popcount,
    /// any other the hardware one.
    #[arg(long)]
    kernel: Option<String>,
    /// Addresses to look up; with none, read stdin one per line.
    addrs: Vec<String>,
}

/// A table compiled into Poptries of node layout `N`, both families.
type PoptrieTable<N> = CompiledTable<String, Poptrie<u32, N>, Poptrie<u128, N>>;

enum Engine {
    Planb(Box<CompiledTable<String>>),
    Poptrie(Box<PoptrieTable<Node>>),
    Poptrie5(Box<PoptrieTable<Node32>>),
    PoptrieFlat(Box<CompiledTable<String, FlatPoptrie<u32>, FlatPoptrie<u128>>>),
    Radix,
}

pub fn run(args: Args) -> CmdResult {
    let kernel = args
        .kernel
        .as_deref()
        .map(str::parse::<Kernel>)
        .transpose()?;
    // Checked up front, whatever the engine (radix ignores the kernel).
    if let Some(k) = kernel.filter(|k| !k.is_supported()) {
        return Err(format!("kernel {k} is not supported by this CPU").into());
    }
    let spec = match EngineSpec::parse(&args.engine) {
        Ok(
            spec @ (EngineSpec::Planb
            | EngineSpec::Radix
            | EngineSpec::Poptrie {
                leafvec: true,
                aggregate: true,
                ..
            }),
        ) => spec,
        Ok(_) => {
            return Err(format!(
                "engine {:?} is for `ipfib bench` (lookup takes: {LOOKUP_ENGINES})",
                args.engine
            )
            .into())
        }
        Err(e) => return Err(format!("{e} (available: {LOOKUP_ENGINES})").into()),
    };
    let loaded = load(&args.table)?;
    let table = loaded.table;
    let engine = match spec {
        EngineSpec::Radix => Engine::Radix,
        // Route payloads (`Compiled`), so the matching prefix is printed.
        EngineSpec::Poptrie { s, layout, .. } => {
            let opts = PoptrieOptions {
                direct_bits: s,
                kernel: kernel
                    .filter(|&k| k == Kernel::Scalar)
                    .map(|_| poptrie::Kernel::Scalar),
                ..Default::default()
            };
            match layout {
                Layout::Node64 => Engine::Poptrie(Box::new(table.compile_with(&opts)?)),
                Layout::Node32 => Engine::Poptrie5(Box::new(table.compile_with(&opts)?)),
                Layout::Flat => Engine::PoptrieFlat(Box::new(table.compile_with(&opts)?)),
            }
        }
        _ => Engine::Planb(Box::new(table.compile(&PlanbOptions {
            kernel,
            direct_bits: None,
            ..Default::default()
        })?)),
    };
    // Damage or skipped records in the table (reported by `load`): exit 1.
    let mut bad = u64::from(loaded.had_problems);
    let addrs = &args.addrs;
    let answered = match &engine {
        Engine::Planb(c) => respond(&**c, addrs),
        Engine::Poptrie(c) => respond(&**c, addrs),
        Engine::Poptrie5(c) => respond(&**c, addrs),
        Engine::PoptrieFlat(c) => respond(&**c, addrs),
        Engine::Radix => respond(&answer::Radix::new(&table), addrs),
    };
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
fn respond<T: answer::Answer>(table: &T, addrs: &[String]) -> Result<u64, Failure> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
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
