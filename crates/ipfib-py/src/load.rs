//! `Table.from_file`: any format ipfib-io reads, through [`ipfib_io::open`]
//! as the CLI and the C ABI do (bad lines in text tables raise naming file
//! and line; damage in MRT or compressed streams loads what is complete and
//! warns with the byte offset, and bad lines of a ranges table are skipped
//! with a warning naming file and line; `strict=True` raises instead; a
//! compiled table file is mapped). What is Python's own is here: the
//! exceptions and the warning, the values as Python values.

use crate::snapshot::Snapshot;
use crate::value::Value;
use ipfib::table::Table;
use ipfib_io::{load_mmdb_fields, FieldPath, OpenError, Opened, Options, ReadError};
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

/// What a table file opened as.
// One per open, moved once into the `Table`: the sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Read {
    /// A compiled table file, mapped: its engines and values.
    Image(Snapshot),
    /// Any other table file, loaded: the routes, and the problems a
    /// lenient load skipped (one message each, for a warning).
    Table(Table<Value>, Vec<String>),
}

/// Open `path` through [`ipfib_io::open`] (no GIL needed).
pub fn open(path: &Path, options: &Options) -> Result<Read, OpenError> {
    match ipfib_io::open(path, options)? {
        Opened::Image(img) => Ok(Read::Image(Snapshot::from_image(img))),
        Opened::Table(loaded) => {
            let problems = loaded.report.problems(path);
            let mut table = Table::new();
            for r in loaded.routes {
                // Over 2^30 distinct values: impossible for any file we
                // read, but refused rather than trusted.
                if table
                    .insert(r.prefix, Value::from_file_text(r.value))
                    .is_err()
                {
                    return Err(too_many_values(path).into());
                }
            }
            Ok(Read::Table(table, problems))
        }
    }
}

fn too_many_values(path: &Path) -> ReadError {
    ReadError::Policy {
        path: path.to_path_buf(),
        reason: "more than 2^30 distinct values".into(),
    }
}

/// Read a MaxMind DB with several fields per network: each route's value
/// is [`Value::Fields`], one entry per field.
pub fn read_fields(
    path: &Path,
    fields: &[FieldPath],
    strict: bool,
) -> Result<(Table<Value>, Vec<String>), ReadError> {
    let (networks, report) = load_mmdb_fields(path, fields, strict)?;
    let problems = report.problems(path);
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
            return Err(too_many_values(path));
        }
    }
    Ok((table, problems))
}

/// An open error as a Python exception: a compiled table file refuses a
/// loading option by its keyword; the rest as [`to_py_err`].
pub fn open_err(e: OpenError) -> PyErr {
    match e {
        OpenError::Read(e) => to_py_err(e),
        OpenError::Options(why) => PyValueError::new_err(why),
        OpenError::NotForCompiled { path, option } => PyValueError::new_err(format!(
            "{}: a compiled table file holds its routes and values as compiled; \
             {option}= does not apply (pass it to `ipfib compile`)",
            path.display()
        )),
    }
}

/// A read error as a Python exception: missing files are
/// `FileNotFoundError`, other I/O `OSError`, the rest [`TableFileError`];
/// every message names the file (and line or byte offset).
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
