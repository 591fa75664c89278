//! `ipfib_table_open`: a table file of any format, loaded as the CLI loads
//! it (crates/ipfib-cli/src/load.rs: lenient, a bad text line fatal), or a
//! compiled table file, mapped.

use crate::error::{Error, IpfibStatus};
use crate::handle::IpfibTable;
use crate::{IPFIB_OPEN_MASK_HOST_BITS, IPFIB_OPEN_STRICT};
use ipfib_core::image::{is_image, ImageError, ImageTable};
use ipfib_core::table::Table;
use ipfib_io::{load_table, Format, ReadError, Report, TableOptions};
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

pub fn open(
    path: &Path,
    format: Option<&str>,
    value: Option<&str>,
    flags: u32,
) -> Result<IpfibTable, Error> {
    if flags & !(IPFIB_OPEN_STRICT | IPFIB_OPEN_MASK_HOST_BITS) != 0 {
        return Err(Error::invalid(format!("unknown flags {flags:#x}")));
    }
    let format = format.unwrap_or("auto");
    let shown = path.display();
    if is_compiled(path, format)? {
        if value.is_some() {
            return Err(Error::invalid(
                "a value choice does not apply to a compiled table file (its values are fixed)",
            ));
        }
        let t = ImageTable::open(path).map_err(|e| {
            let status = match e {
                ImageError::Io(_) => IpfibStatus::Io,
                _ => IpfibStatus::Parse,
            };
            Error::new(status, format!("{shown}: {e}"))
        })?;
        return Ok(IpfibTable::image(t));
    }
    let opts = TableOptions::from_names(
        format,
        value,
        None,
        flags & IPFIB_OPEN_MASK_HOST_BITS != 0,
        flags & IPFIB_OPEN_STRICT != 0,
    )
    .map_err(Error::invalid)?;
    let mut loaded = load_table(path, &opts).map_err(read_error)?;
    // As the CLI: a bad line in a text table is an error naming the line.
    if loaded.report.format.is_line_table() && !loaded.report.errors.is_empty() {
        return Err(read_error(loaded.report.errors.swap_remove(0)));
    }
    let report = report_text(&shown.to_string(), &loaded.report);
    let mut table = Table::new();
    for r in loaded.routes {
        table
            .insert(r.prefix, r.value)
            .map_err(|e| Error::new(IpfibStatus::Build, format!("{shown}: {e}")))?;
    }
    IpfibTable::compile(&table, report)
        .map_err(|e| Error::new(IpfibStatus::Build, format!("{shown}: {e}")))
}

/// Named `compiled`, or `auto` and starting with the compiled file magic.
fn is_compiled(path: &Path, format: &str) -> Result<bool, Error> {
    let f: Format = format.parse().map_err(|e| Error::invalid(format!("{e}")))?;
    match f {
        Format::Compiled => Ok(true),
        Format::Auto => {
            let mut head = [0u8; 8];
            let n = std::fs::File::open(path)
                .and_then(|mut f| f.read(&mut head))
                .map_err(|e| Error::new(IpfibStatus::Io, format!("{}: {e}", path.display())))?;
            Ok(is_image(head.get(..n).unwrap_or_default()))
        }
        _ => Ok(false),
    }
}

fn read_error(e: ReadError) -> Error {
    let status = match e {
        ReadError::Io { .. } => IpfibStatus::Io,
        _ => IpfibStatus::Parse,
    };
    Error::new(status, e.to_string())
}

/// What the CLI prints on stderr for a lenient load, as text.
fn report_text(path: &str, report: &Report) -> String {
    let mut s = String::new();
    for e in &report.errors {
        let _ = writeln!(s, "{e}");
    }
    if report.bad > report.errors.len() as u64 {
        let _ = writeln!(
            s,
            "{path}: {} bad lines or records in all (the first {} shown)",
            report.bad,
            report.errors.len()
        );
    }
    for ((t, st), n) in &report.unsupported {
        let _ = writeln!(
            s,
            "{path}: {n} MRT records of type {t} subtype {st} not read (unsupported)"
        );
    }
    if let Some(d) = &report.damage {
        let _ = writeln!(s, "{path}: {d}; loaded what was complete");
    }
    s
}
