//! `ipfib compile TABLE -o OUT [--output-format ipfib|mmdb]`: a table file
//! (any format `lookup` reads) written out in another form.
//!
//! - `ipfib` (the default): a compiled table file (`ipfib::image`): the
//!   engines built once, opened memory-mapped by `ipfib lookup --table OUT`
//!   and Python's `ipfib.Table.open` in milliseconds.
//! - `mmdb`: a MaxMind DB file (ipfib_io::mmdb_write: the LPM table
//!   flattened into the MMDB search tree; every address gets the record of
//!   its longest matching prefix from the official readers).
//!
//! The output is written to a temporary file beside OUT and renamed over
//! it when complete, so a failed write never leaves a partial file (and
//! leaves an existing OUT as it was). Exit status: 0 written, 1 written but
//! the input had bad or damaged records (reported on stderr, the rest
//! exported), 2 nothing written (unreadable input, bad arguments, a value
//! the output cannot hold, unwritable output).

use crate::load::{load, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::engine::auto::AutoOptions;
use ipfib::engine::registry::{EngineSpec, SpecError};
use ipfib_io::mmdb_write::{self, IpVersion, Options, RecordMode, Stats};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// A compiled ipfib table file.
    Ipfib,
    /// A MaxMind DB (`.mmdb`) file.
    Mmdb,
}

#[derive(clap::Args)]
pub struct Args {
    /// The table file (any format `ipfib lookup --table` reads).
    table: PathBuf,
    /// The file to write (replaced only once the new one is complete).
    #[arg(short, long)]
    output: PathBuf,
    /// What to write.
    #[arg(long, value_enum, default_value = "ipfib")]
    output_format: OutputFormat,
    /// Input file format: auto, text, ipasn, pfx2as, mrt, updates, ranges,
    /// compiled.
    #[arg(long, default_value = "auto")]
    format: String,
    // The help text names optional parts in brackets (`poptrie[:S]`),
    // which rustdoc would read as links.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// ipfib: the engine compiled in: auto (the default: chosen per
    /// family), planb, poptrie[:S], poptrie32[:S], poptrie-flat[:S].
    #[arg(long, default_value = "auto")]
    engine: String,
    /// Clear host bits instead of rejecting the line.
    #[arg(long)]
    mask_host_bits: bool,
    /// The value of a prefix (see `ipfib lookup --help`).
    #[arg(long)]
    value: Option<String>,
    /// With --value next-hop: the peer, by index or address.
    #[arg(long)]
    peer: Option<String>,
    /// Fail at the first problem in the input instead of reporting it.
    #[arg(long)]
    strict: bool,
    /// Ranges tables: the 1-based column holding the value (default 3).
    #[arg(long, value_name = "N")]
    value_column: Option<usize>,
    /// mmdb: how a value becomes a record: auto (a JSON object value is the
    /// record, any other value `{FIELD: V}`), field (always `{FIELD: V}`),
    /// json (every value is JSON, written as the record).
    #[arg(long)]
    mmdb_record: Option<String>,
    /// mmdb: the key of `{FIELD: V}` records (V an unsigned integer when the
    /// value is one, else a string) [default: value]; e.g.
    /// autonomous_system_number for GeoLite2-ASN-style records.
    #[arg(long)]
    mmdb_field: Option<String>,
    /// mmdb: metadata database_type [default: ipfib].
    #[arg(long)]
    mmdb_database_type: Option<String>,
    /// mmdb: metadata description (English) [default: "ipfib export of TABLE"].
    #[arg(long)]
    mmdb_description: Option<String>,
    /// mmdb: 6 (default: IPv4 at ::/96 and ::ffff:0:0/96, every address
    /// answered) or 4 (IPv4 only; refused when the table has IPv6 routes).
    #[arg(long)]
    mmdb_ip_version: Option<u8>,
    /// mmdb: record size in bits, 24, 28 or 32 [default: the smallest that
    /// fits].
    #[arg(long)]
    mmdb_record_size: Option<u16>,
    /// mmdb: merge neighbouring networks of different routes with the same
    /// record (a smaller file; a reported network may then span several
    /// routes). Without it, every network lies inside its route.
    #[arg(long)]
    mmdb_merge: bool,
}

impl Args {
    /// The `--mmdb-*` flags given, by name.
    fn mmdb_flags(&self) -> Vec<&'static str> {
        let given = [
            ("--mmdb-record", self.mmdb_record.is_some()),
            ("--mmdb-field", self.mmdb_field.is_some()),
            ("--mmdb-database-type", self.mmdb_database_type.is_some()),
            ("--mmdb-description", self.mmdb_description.is_some()),
            ("--mmdb-ip-version", self.mmdb_ip_version.is_some()),
            ("--mmdb-record-size", self.mmdb_record_size.is_some()),
            ("--mmdb-merge", self.mmdb_merge),
        ];
        given.iter().filter(|g| g.1).map(|g| g.0).collect()
    }
}

pub fn run(args: Args) -> CmdResult {
    if args.output_format != OutputFormat::Mmdb {
        if let Some(flag) = args.mmdb_flags().first() {
            return Err(format!("{flag} applies to --output-format mmdb").into());
        }
    }
    if args.output_format != OutputFormat::Ipfib && args.engine != "auto" {
        return Err("--engine applies to --output-format ipfib".into());
    }
    match args.output_format {
        OutputFormat::Ipfib => compiled(args),
        OutputFormat::Mmdb => mmdb(args),
    }
}

impl Args {
    fn table_args(&self) -> TableArgs {
        TableArgs {
            table: self.table.clone(),
            format: self.format.clone(),
            mask_host_bits: self.mask_host_bits,
            value: self.value.clone(),
            peer: self.peer.clone(),
            strict: self.strict,
            value_column: self.value_column,
        }
    }
}

/// A compiled table file, with the engines `--engine` names.
fn compiled(args: Args) -> CmdResult {
    // An unknown name's list leaves out radix, which a file cannot hold.
    let spec = EngineSpec::parse_lookup(&args.engine).map_err(|e| match e {
        SpecError::Unknown { name, valid } => SpecError::Unknown {
            name,
            valid: valid
                .split(", ")
                .filter(|n| *n != "radix")
                .collect::<Vec<_>>()
                .join(", "),
        },
        other => other,
    })?;
    if spec == EngineSpec::Radix {
        return Err("radix is the route table itself, not a compiled engine".into());
    }
    let start = Instant::now();
    let loaded = load(&args.table_args())?;
    let loaded_s = start.elapsed().as_secs_f64();
    let opts = AutoOptions {
        force: spec.force(),
        ..AutoOptions::default()
    };
    let source = args.table.display().to_string();
    let stats = ipfib::image::write_table(&loaded.table, &args.output, &opts, &source)
        .map_err(|e| format!("{}: {e}", args.output.display()))?;
    // A family without routes has an (empty) engine in the file, but
    // naming it would suggest there is something to answer.
    let engines = |routes: usize, e: &(String, String)| match routes {
        0 => "none (no routes)".to_string(),
        _ => format!("engines {} (values) / {} (routes)", e.0, e.1),
    };
    eprintln!(
        "ipfib compile: {} ({} IPv4 + {} IPv6 routes) -> {} ({:.1} MiB) in {:.2} s (load {:.2} s); \
         IPv4 {}, IPv6 {}",
        args.table.display(),
        loaded.table.v4.len(),
        loaded.table.v6.len(),
        args.output.display(),
        stats.bytes as f64 / (1 << 20) as f64,
        start.elapsed().as_secs_f64(),
        loaded_s,
        engines(loaded.table.v4.len(), &stats.engines_v4),
        engines(loaded.table.v6.len(), &stats.engines_v6),
    );
    Ok(if loaded.had_problems {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}

/// The MaxMind DB options the flags ask for (checked before the table is
/// loaded, so a bad flag costs nothing).
fn mmdb_options(args: &Args) -> Result<Options, Box<dyn std::error::Error>> {
    let mut opts = Options {
        description: format!("ipfib export of {}", file_name(&args.table)),
        build_epoch: build_epoch()?,
        ..Options::default()
    };
    if let Some(m) = &args.mmdb_record {
        opts.record = m.parse::<RecordMode>()?;
    }
    if let Some(f) = &args.mmdb_field {
        opts.field = f.clone();
    }
    if let Some(t) = &args.mmdb_database_type {
        opts.database_type = t.clone();
    }
    if let Some(d) = &args.mmdb_description {
        opts.description = d.clone();
    }
    opts.ip_version = match args.mmdb_ip_version {
        None | Some(6) => IpVersion::Six,
        Some(4) => IpVersion::Four,
        Some(v) => return Err(format!("--mmdb-ip-version {v}: expected 4 or 6").into()),
    };
    if let Some(s) = args.mmdb_record_size {
        if ![24, 28, 32].contains(&s) {
            return Err(format!("--mmdb-record-size {s}: expected 24, 28 or 32").into());
        }
        opts.record_size = Some(s);
    }
    opts.merge_neighbours = args.mmdb_merge;
    Ok(opts)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
}

/// Metadata build_epoch: $SOURCE_DATE_EPOCH when set (reproducible
/// builds: the same table gives the same bytes), else now.
fn build_epoch() -> Result<u64, Box<dyn std::error::Error>> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("SOURCE_DATE_EPOCH={s:?} is not a Unix time in seconds").into()),
        Err(_) => Ok(Options::default().build_epoch),
    }
}

fn mmdb(args: Args) -> CmdResult {
    let opts = mmdb_options(&args)?;
    let loaded = load(&args.table_args())?;
    let start = Instant::now();
    let stats = mmdb_write::write_table_file(&args.output, &loaded.table, &opts)?;
    report(&args.output, &stats, start.elapsed().as_secs_f64() * 1e3);
    Ok(if loaded.had_problems {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}

fn report(out: &Path, s: &Stats, ms: f64) {
    println!(
        "{}: MaxMind DB, ip_version {}, {}-bit records, {} nodes, {} distinct records, \
         {} bytes ({} IPv4 + {} IPv6 routes) in {ms:.0} ms",
        out.display(),
        s.ip_version,
        s.record_size,
        s.node_count,
        s.records,
        s.file_bytes,
        s.routes_v4,
        s.routes_v6,
    );
    if s.v6_mapped_routes > 0 {
        eprintln!(
            "ipfib: note: {} IPv6 routes inside ::ffff:0:0/96 not written: those \
             addresses answer from the IPv4 routes (as ipfib lookup answers them)",
            s.v6_mapped_routes
        );
    }
    if s.v6_compat_overridden {
        eprintln!(
            "ipfib: warning: IPv6 addresses inside ::/96 answer from the IPv4 routes in \
             a MaxMind DB (IPv4 lives there), not from the table's IPv6 routes \
             ({} inside ::/96, or a covering route such as ::/0)",
            s.v6_compat_routes
        );
    }
}
