//! Loading a table file into both families' route tables, leniently by
//! default: what is complete is loaded, damage and skipped records are
//! reported on stderr (and make the exit status 1), `--strict` fails
//! instead. Bad lines in text tables stay fatal (the text format's
//! contract: an error naming the line); bad lines in ranges tables are
//! skipped and reported like bad MRT records (exit 1: the file is painted
//! whole, so the rest of it still loads).

use ipfib::image::ImageTable;
use ipfib::prefix::AnyPrefix;
use ipfib::table::Table;
use ipfib_io::{
    open, probe_compiled, Compiled, Format, OpenError, Opened, Options, Report, Route, TableLoad,
    TableOptions,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Table options shared by the commands.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct TableArgs {
    /// Routing table file: text (`PREFIX/LEN VALUE`), pyasn IPASN, CAIDA
    /// pfx2as, MRT (RIB dump or BGP4MP updates), text updates, IP ranges
    /// (`FIRST,LAST,VALUE...`), MaxMind DB; gzip, bzip2 and zstd are read
    /// transparently.
    #[arg(long)]
    pub table: PathBuf,
    /// File format: auto, text, ipasn, pfx2as, mrt, updates, ranges, compiled
    /// (an `ipfib compile` output, which `lookup` maps instead of loading),
    /// mmdb.
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Clear host bits (`10.0.0.1/8` becomes `10.0.0.0/8`) instead of
    /// rejecting the line.
    #[arg(long)]
    pub mask_host_bits: bool,
    /// MRT / updates: the value of a prefix: origin-asn (the origin announced
    /// by the most peers, ties to the lowest ASN; the MRT default),
    /// next-hop (of the peer given by --peer), peer-count. MaxMind DB: the
    /// record field by dot path (country.iso_code, subdivisions.0.iso_code;
    /// without it the whole record as JSON); a network whose record lacks
    /// the field has no route.
    #[arg(long)]
    pub value: Option<String>,
    /// With --value next-hop: the peer, by index (PEER_INDEX_TABLE order,
    /// else first appearance) or address.
    #[arg(long)]
    pub peer: Option<String>,
    /// Fail at the first damaged or unparsable record instead of loading
    /// what is complete and reporting the rest.
    #[arg(long)]
    pub strict: bool,
    /// Ranges tables: the 1-based column holding the value (default 3,
    /// the one after FIRST and LAST).
    #[arg(long, value_name = "N")]
    pub value_column: Option<usize>,
}

/// Whether the table is a compiled table file (named `--format compiled`,
/// or `auto` and a regular file starting with the file magic), which
/// `lookup` maps rather than loads.
pub fn is_compiled(args: &TableArgs) -> Result<bool, Box<dyn std::error::Error>> {
    Ok(probe_compiled(&args.table, args.format.parse::<Format>()?)?)
}

/// What a table file opened as: mapped, or loaded.
// One per command, moved once: the sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum OpenedTable {
    Image(ImageTable),
    Loaded(Loaded),
}

/// A loaded table.
pub struct Loaded {
    pub table: Table<String>,
    /// Damage, skipped records or unsupported records were reported on
    /// stderr: the command should exit 1 when it is done.
    pub had_problems: bool,
}

/// The table options the arguments ask for.
pub fn table_options(args: &TableArgs) -> Result<TableOptions, Box<dyn std::error::Error>> {
    Ok(TableOptions {
        value_column: args.value_column,
        ..TableOptions::from_names(
            &args.format,
            args.value.as_deref(),
            args.peer.as_deref(),
            args.mask_host_bits,
            args.strict,
        )?
    })
}

/// Read the file (with a progress bar on a terminal when it takes over a
/// second) as `ipfib info` does: a compiled file read as routes, every
/// problem reported rather than fatal.
pub fn load_file(
    path: &Path,
    opts: &TableOptions,
) -> Result<(TableLoad, Duration), Box<dyn std::error::Error>> {
    let options = Options {
        compiled: Compiled::Load,
        line_errors_fatal: false,
        ..Options::new(opts.format, Ok(opts.clone()))
    };
    match open_with_progress(path, options)? {
        (Opened::Table(loaded), took) => Ok((loaded, took)),
        // Not asked to map: a compiled file is read as routes.
        (Opened::Image(_), _) => Err(format!("{}: a compiled table file", path.display()).into()),
    }
}

/// [`ipfib_io::open`] with a progress bar over the bytes read, and how
/// long it took.
fn open_with_progress(
    path: &Path,
    mut options: Options,
) -> Result<(Opened, Duration), Box<dyn std::error::Error>> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let read = Arc::new(AtomicU64::new(0));
    options.progress = Some(Arc::clone(&read));
    let (done, finished) = mpsc::channel::<()>();
    let start = Instant::now();
    let opened = std::thread::scope(|s| {
        s.spawn(|| progress("loading", finished, &read, size));
        let r = open(path, &options);
        drop(done);
        r
    })
    .map_err(cli_error)?;
    Ok((opened, start.elapsed()))
}

/// An open error as the CLI returns it: a read error as itself (naming the
/// file and line or byte offset), an options error as its message, a
/// compiled file refused as itself (the command says why in its words).
fn cli_error(e: OpenError) -> Box<dyn std::error::Error> {
    match e {
        OpenError::Read(e) => Box::new(e),
        OpenError::Options(why) => why.into(),
        e @ OpenError::NotForCompiled { .. } => Box::new(e),
    }
}

/// A progress bar over the file's bytes, shown after one second; indicatif
/// draws nothing when stderr is not a terminal.
pub fn progress(label: &str, finished: mpsc::Receiver<()>, read: &AtomicU64, size: u64) {
    // The sender is dropped when loading ends: `Disconnected`, not `Timeout`.
    let still_loading = |wait| {
        matches!(
            finished.recv_timeout(wait),
            Err(mpsc::RecvTimeoutError::Timeout)
        )
    };
    if !still_loading(Duration::from_secs(1)) {
        return;
    }
    let bar = indicatif::ProgressBar::new(size);
    if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
        "{label} {{bar:40}} {{bytes}}/{{total_bytes}} ({{eta}})"
    )) {
        bar.set_style(style);
    }
    loop {
        bar.set_position(read.load(Ordering::Relaxed));
        if !still_loading(Duration::from_millis(100)) {
            break;
        }
    }
    bar.finish_and_clear();
}

/// Print what a lenient load skipped or where it stopped; whether anything was.
pub fn report_problems(path: &Path, report: &Report) -> bool {
    for line in report.problems(path) {
        eprintln!("ipfib: {line}");
    }
    report.has_problems()
}

/// Read the file and insert its routes in file order (the later duplicate wins).
pub fn load(args: &TableArgs) -> Result<Loaded, Box<dyn std::error::Error>> {
    let options = Options {
        compiled: Compiled::Load,
        ..Options::new(
            args.format.parse()?,
            table_options(args).map_err(|e| e.to_string()),
        )
    };
    match open_with_progress(&args.table, options)?.0 {
        Opened::Table(loaded) => loaded_table(args, loaded),
        Opened::Image(_) => Err(format!("{}: a compiled table file", args.table.display()).into()),
    }
}

/// A compiled table file mapped, or any other loaded: what `lookup`
/// answers from. `not_for_compiled`: the first option given that a
/// compiled file refuses (`--engine`, `--value`, ...).
pub fn open_table(
    args: &TableArgs,
    not_for_compiled: Option<&'static str>,
) -> Result<OpenedTable, Box<dyn std::error::Error>> {
    let options = Options {
        not_for_compiled,
        ..Options::new(
            args.format.parse()?,
            table_options(args).map_err(|e| e.to_string()),
        )
    };
    match open_with_progress(&args.table, options)?.0 {
        Opened::Image(img) => Ok(OpenedTable::Image(img)),
        Opened::Table(loaded) => Ok(OpenedTable::Loaded(loaded_table(args, loaded)?)),
    }
}

/// The loaded routes as a table: a load that read nothing is an error when
/// it is not a table at all, and what the load skipped is reported.
fn loaded_table(args: &TableArgs, loaded: TableLoad) -> Result<Loaded, Box<dyn std::error::Error>> {
    if loaded.routes.is_empty() {
        if let Some(why) = nothing_read(args, &loaded.report) {
            return Err(why.into());
        }
        // Empty is a table (every answer a miss), but rarely the one meant.
        eprintln!(
            "ipfib: {}: no route in it ({}): every address misses",
            args.table.display(),
            loaded.report.format
        );
    }
    let had_problems = report_problems(&args.table, &loaded.report);
    Ok(Loaded {
        table: table_of(loaded.routes)?,
        had_problems,
    })
}

/// Why a load that gave no route at all is not a table, when it is not:
/// every line or record was bad, the file is not the format named, or no
/// MaxMind DB record has the `--value` field. One message and exit 2, not
/// a page of per-line errors followed by every answer a miss. An input
/// that is merely empty (no lines, an empty dump) is still a table.
pub fn nothing_read(args: &TableArgs, report: &Report) -> Option<String> {
    let path = args.table.display();
    let first = report
        .errors
        .first()
        .map(|e| e.to_string())
        .or_else(|| report.damage.as_ref().map(|d| d.to_string()));
    if let Some(first) = first {
        let all = match report.bad {
            0 => String::new(),
            1 => "its only line or record is bad; ".to_string(),
            n => format!("all {n} lines or records are bad; the first: "),
        };
        let given = if args.format == "auto" {
            "read as"
        } else {
            "--format"
        };
        return Some(format!(
            "{path}: no route could be read ({given} {}: {all}{first})",
            report.format
        ));
    }
    let mmdb = report.mmdb.as_ref()?;
    let field = args.value.as_deref()?;
    (mmdb.without_field > 0).then(|| {
        format!(
            "{path}: no record has the field {field:?} (--value): all {} networks lack it; \
             without --value each answer is the whole record, which shows the fields there are",
            mmdb.without_field
        )
    })
}

/// Insert routes in order into a compacted table.
pub fn table_of(routes: Vec<Route>) -> Result<Table<String>, Box<dyn std::error::Error>> {
    let mut table = Table::new();
    for r in routes {
        table.insert(r.prefix, r.value)?;
    }
    table.compact();
    Ok(table)
}

/// Build a table from in-memory routes (the synthetic generators).
pub fn from_routes(
    v4: Vec<(ipfib::prefix::Prefix<u32>, u32)>,
    v6: Vec<(ipfib::prefix::Prefix<u128>, u32)>,
) -> Table<String> {
    let mut t = Table::new();
    for (p, v) in v4 {
        let _ = t.insert(AnyPrefix::V4(p), v.to_string());
    }
    for (p, v) in v6 {
        let _ = t.insert(AnyPrefix::V6(p), v.to_string());
    }
    t.compact();
    t
}
