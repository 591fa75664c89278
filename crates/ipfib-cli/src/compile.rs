//! `ipfib compile TABLE -o OUT`: load a table in any format and write it as
//! a compiled table file (`ipfib::image`): the engines built once, opened
//! memory-mapped by `ipfib lookup --table OUT` and Python's
//! `ipfib.Table.open` in milliseconds.

use crate::engines::{EngineSpec, LOOKUP_ENGINES};
use crate::load::{load, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::engine::auto::AutoOptions;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The table to compile (any format `--format` names; auto-detected).
    table: PathBuf,
    /// Where to write the compiled file (replaced atomically).
    #[arg(short, long)]
    output: PathBuf,
    /// Output: ipfib (a compiled table file, the default) or mmdb (a
    /// MaxMind DB file).
    #[arg(long, default_value = "ipfib")]
    output_format: String,
    /// Input format: auto, text, ipasn, pfx2as, mrt, updates, ranges,
    /// compiled.
    #[arg(long, default_value = "auto")]
    format: String,
    /// Engine compiled in: auto (the default: chosen per family), planb,
    /// poptrie[:S], poptrie5[:S], poptrie-flat[:S].
    #[arg(long, default_value = "auto")]
    engine: String,
    /// Clear host bits instead of rejecting the line.
    #[arg(long)]
    mask_host_bits: bool,
    /// MRT / updates: the value of a prefix (origin-asn, next-hop,
    /// peer-count), as for `ipfib lookup`.
    #[arg(long)]
    value: Option<String>,
    /// With --value next-hop: the peer, by index or address.
    #[arg(long)]
    peer: Option<String>,
    /// Fail at the first damaged or unparsable record.
    #[arg(long)]
    strict: bool,
    /// Ranges tables: the 1-based column holding the value (default 3).
    #[arg(long, value_name = "N")]
    value_column: Option<usize>,
}

pub fn run(args: Args) -> CmdResult {
    let spec = EngineSpec::parse(&args.engine)
        .map_err(|e| format!("{e} (available: {LOOKUP_ENGINES} but radix)"))?;
    if spec == EngineSpec::Radix {
        return Err("radix is the route table itself, not a compiled engine".into());
    }
    if args.output_format != "ipfib" {
        return Err(format!(
            "unknown output format {:?} (expected ipfib or mmdb)",
            args.output_format
        )
        .into());
    }
    let table_args = TableArgs {
        table: args.table.clone(),
        format: args.format,
        mask_host_bits: args.mask_host_bits,
        value: args.value,
        peer: args.peer,
        strict: args.strict,
        value_column: args.value_column,
    };
    let start = Instant::now();
    let loaded = load(&table_args)?;
    let loaded_s = start.elapsed().as_secs_f64();
    let opts = AutoOptions {
        force: spec.force(),
        ..AutoOptions::default()
    };
    let source = format!("{}", args.table.display());
    let stats = ipfib::image::write_table(&loaded.table, &args.output, &opts, &source)
        .map_err(|e| format!("{}: {e}", args.output.display()))?;
    eprintln!(
        "ipfib compile: {} ({} IPv4 + {} IPv6 routes) -> {} ({:.1} MiB) in {:.2} s (load {:.2} s); \
         IPv4 engines {} (values) / {} (routes), IPv6 {} / {}",
        args.table.display(),
        loaded.table.v4.len(),
        loaded.table.v6.len(),
        args.output.display(),
        stats.bytes as f64 / (1 << 20) as f64,
        start.elapsed().as_secs_f64(),
        loaded_s,
        stats.engines_v4.0,
        stats.engines_v4.1,
        stats.engines_v6.0,
        stats.engines_v6.1,
    );
    Ok(if loaded.had_problems {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}
