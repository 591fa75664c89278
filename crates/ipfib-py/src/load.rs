//! `Table.from_file`: any format ipfib-io reads, leniently as the CLI does
//! (bad lines in text tables raise naming file and line; damage in MRT or
//! compressed streams loads what is complete and warns with the byte
//! offset, and bad lines of a ranges table are skipped with a warning
//! naming file and line; `strict=True` raises instead).

use crate::value::Value;
use ipfib::table::Table;
use ipfib_io::{load_mmdb_fields, load_table, FieldPath, ReadError, Report, TableOptions};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

pyo3::create_exception!(
    ipfib,
    TableFileError,
    PyValueError,
    "A table file could not be read; the message names the file and the line or byte offset."
);
pyo3::create_exception!(
    ipfib,
    DamagedTableWarning,
    pyo3::exceptions::PyUserWarning,
    "A table file was damaged or had records ipfib skipped; what was complete was loaded."
);

/// Read `path` (no GIL needed) into a route table, with the problems a
/// lenient load skipped (one message each, for a warning).
pub fn read(path: &Path, opts: &TableOptions) -> Result<(Table<Value>, Vec<String>), ReadError> {
    let mut loaded = load_table(path, opts)?;
    // As in the CLI: a bad line in a text table is an error naming the line.
    if loaded.report.format.is_line_table() && !loaded.report.errors.is_empty() {
        return Err(loaded.report.errors.swap_remove(0));
    }
    let problems = problems(path, &loaded.report);
    let mut table = Table::new();
    for r in loaded.routes {
        // Over 2^30 distinct values: impossible for any file we read, but
        // refused rather than trusted.
        if table
            .insert(r.prefix, Value::from_file_text(r.value))
            .is_err()
        {
            return Err(ReadError::Policy {
                path: path.to_path_buf(),
                reason: "more than 2^30 distinct values".into(),
            });
        }
    }
    Ok((table, problems))
}

/// Read a MaxMind DB with several fields per network: each route's value
/// is [`Value::Fields`], one entry per field.
pub fn read_fields(
    path: &Path,
    fields: &[FieldPath],
    strict: bool,
) -> Result<(Table<Value>, Vec<String>), ReadError> {
    let (networks, report) = load_mmdb_fields(path, fields, strict)?;
    let problems = problems(path, &report);
    let mut table = Table::new();
    // Networks with one record share one `Arc` (all alive while `networks`
    // is): convert each record once, keyed by its address.
    let mut converted: HashMap<usize, Value> = HashMap::new();
    for n in &networks {
        let key = Arc::as_ptr(&n.fields) as *const () as usize;
        let value = converted
            .entry(key)
            .or_insert_with(|| {
                Value::Fields(
                    n.fields
                        .iter()
                        .map(|f| f.clone().map(Value::from_file_text))
                        .collect(),
                )
            })
            .clone();
        if table.insert(n.prefix, value).is_err() {
            return Err(ReadError::Policy {
                path: path.to_path_buf(),
                reason: "more than 2^30 distinct values".into(),
            });
        }
    }
    Ok((table, problems))
}

/// What a lenient load skipped or where it stopped.
fn problems(path: &Path, report: &Report) -> Vec<String> {
    let mut out: Vec<String> = report.errors.iter().map(|e| e.to_string()).collect();
    if report.bad > report.errors.len() as u64 {
        out.push(format!(
            "{}: {} bad lines or records in all (the first {} shown)",
            path.display(),
            report.bad,
            report.errors.len()
        ));
    }
    for ((t, s), n) in &report.unsupported {
        out.push(format!(
            "{}: {n} MRT records of type {t} subtype {s} not read (unsupported)",
            path.display()
        ));
    }
    if let Some(d) = &report.damage {
        out.push(format!("{}: {d}; loaded what was complete", path.display()));
    }
    out
}

/// A read error as a Python exception: missing files are
/// `FileNotFoundError`, other I/O `OSError`, the rest [`TableFileError`];
/// every message names the file (and line or byte offset).
/// Whether `path` is a compiled table file: named so, or `auto` and
/// starting with the file magic.
pub fn is_compiled(path: &std::path::Path, format: ipfib_io::Format) -> Result<bool, ReadError> {
    match format {
        ipfib_io::Format::Compiled => Ok(true),
        ipfib_io::Format::Auto => {
            let mut head = [0u8; 8];
            let n = std::fs::File::open(path)
                .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
                .map_err(|source| ReadError::Io {
                    path: path.to_path_buf(),
                    source,
                })?;
            Ok(ipfib::image::is_image(&head[..n]))
        }
        _ => Ok(false),
    }
}

pub fn to_py_err(e: ReadError) -> PyErr {
    let msg = e.to_string();
    match &e {
        ReadError::Image {
            source: ipfib::image::ImageError::Io(io),
            ..
        } if io.kind() == std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
        ReadError::Image {
            source: ipfib::image::ImageError::Io(_),
            ..
        } => PyOSError::new_err(msg),
        ReadError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(msg)
        }
        ReadError::Io { .. } => PyOSError::new_err(msg),
        _ => TableFileError::new_err(msg),
    }
}
