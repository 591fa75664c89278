//! `ipfib_table_open`: a table file of any format opened through
//! [`ipfib_io::open`], as the CLI opens it (lenient, a bad text line fatal,
//! a compiled table file mapped). What is the C ABI's own: the status codes,
//! a value choice refused for a compiled file, and the load's report kept
//! as text for `ipfib_table_report`.

use crate::error::{Error, IpfibStatus};
use crate::handle::IpfibTable;
use crate::{IPFIB_OPEN_MASK_HOST_BITS, IPFIB_OPEN_STRICT};
use ipfib_core::image::ImageError;
use ipfib_core::table::Table;
use ipfib_io::{Format, OpenError, Opened, Options, ReadError, TableOptions};
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
    let parsed: Format = format.parse().map_err(|e| Error::invalid(format!("{e}")))?;
    let table = TableOptions::from_names(
        format,
        value,
        None,
        flags & IPFIB_OPEN_MASK_HOST_BITS != 0,
        flags & IPFIB_OPEN_STRICT != 0,
    );
    let options = Options {
        not_for_compiled: value.map(|_| "a value choice"),
        ..Options::new(parsed, table)
    };
    let loaded = match ipfib_io::open(path, &options) {
        Ok(Opened::Image(t)) => return Ok(IpfibTable::image(t)),
        Ok(Opened::Table(loaded)) => loaded,
        Err(OpenError::NotForCompiled { .. }) => {
            return Err(Error::invalid(
                "a value choice does not apply to a compiled table file (its values are fixed)",
            ))
        }
        Err(OpenError::Options(why)) => return Err(Error::invalid(why)),
        Err(OpenError::Read(e)) => return Err(read_error(e)),
    };
    // What the CLI prints on stderr, one line each.
    let report: String = loaded
        .report
        .problems(path)
        .into_iter()
        .map(|line| line + "\n")
        .collect();
    let mut table = Table::new();
    for r in loaded.routes {
        table
            .insert(r.prefix, r.value)
            .map_err(|e| Error::new(IpfibStatus::Build, format!("{shown}: {e}")))?;
    }
    IpfibTable::compile(&table, report)
        .map_err(|e| Error::new(IpfibStatus::Build, format!("{shown}: {e}")))
}

/// I/O failures (the file, or a compiled file's mapping) are `Io`; the
/// rest is `Parse`.
fn read_error(e: ReadError) -> Error {
    let status = match e {
        ReadError::Io { .. }
        | ReadError::Image {
            source: ImageError::Io(_),
            ..
        } => IpfibStatus::Io,
        _ => IpfibStatus::Parse,
    };
    Error::new(status, e.to_string())
}
