//! `ipfib`: look up addresses in routing tables and benchmark the engines.
//!
//! Exit status everywhere (ARCHITECTURE §4): 0 success, 1 some input lines
//! were bad (the rest was processed), 2 the command could not run.

/// `println!` that returns the write's error (a closed pipe, a full disk)
/// instead of panicking: `outln!(...)?`. A closed pipe then ends the
/// command quietly with status 0, any other error is exit 2.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

/// A command-level failure: printed as `ipfib: ...`, exit status 2.
pub type CmdResult = Result<Outcome, Box<dyn std::error::Error>>;

mod alloc;
mod bench;
mod bmp_replay;
mod classify;
mod collect;
mod compile;
mod engines;
mod info;
mod load;
mod lookup;
mod replay;
mod rov;
mod udf;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ipfib",
    version,
    about = "Fast, exact longest-prefix match for IPv4 and IPv6"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Look up addresses (arguments, or stdin one per line): prints
    /// `ADDR PREFIX VALUE`, or `ADDR - -` when nothing matches.
    Lookup(lookup::Args),
    /// Benchmark the engines side by side (a built-in synthetic table by default).
    Bench(bench::Args),
    /// Describe a table file: format, counts, lengths, values, peers, damage.
    Info(info::Args),
    /// Replay an update stream (LINX text or MRT BGP4MP) into a dynamic FIB
    /// while reader threads look up: update cost, publication latency,
    /// readers' rate during the replay vs without updates.
    Replay(replay::Args),
    Collect(collect::Args),
    BmpReplay(bmp_replay::Args),
    /// Compile a table into a file that `lookup` and Python's
    /// `ipfib.Table.open` map in milliseconds, or (`--output-format mmdb`)
    /// a MaxMind DB answering every address like `ipfib lookup`.
    Compile(compile::Args),
    /// List the engines (every name `--engine` takes, with a line each)
    /// and the kernels each has on this CPU.
    Engines(engines::Args),
    /// Count a capture's traffic per network of a table (FastNetMon's job):
    /// packets, bytes and rates per direction, hostgroup, network and host,
    /// top remote sources, alerts on thresholds.
    Classify(classify::Args),
    /// Answer a ClickHouse executable UDF (`executable_pool`, RowBinary)
    /// from a compiled table file, reopened when it is replaced.
    Udf(udf::Args),
    /// Validate routes against RPKI data offline: ROV (RFC 6811) and ASPA
    /// for an MRT RIB dump or a table, with a summary per state and origin.
    Rov(rov::Args),
}

/// How a command ended.
pub enum Outcome {
    Ok,
    /// Some lines were bad; the rest was processed.
    BadInput,
}

fn main() -> ExitCode {
    alloc::install();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(2),
            };
        }
    };
    let result = match cli.command {
        Command::Lookup(a) => lookup::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Info(a) => info::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Collect(a) => collect::run(a),
        Command::BmpReplay(a) => bmp_replay::run(a),
        Command::Compile(a) => compile::run(a),
        Command::Classify(a) => classify::run(a),
        Command::Engines(a) => engines::run(a),
        Command::Udf(a) => udf::run(a),
        Command::Rov(a) => rov::run(a),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::BadInput) => ExitCode::from(1),
        // A reader that went away (`ipfib info FILE | head`): done.
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ipfib: {e:#}");
            ExitCode::from(2)
        }
    }
}
