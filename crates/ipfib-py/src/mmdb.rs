//! `Table.to_mmdb`: the table as a MaxMind DB file (ipfib_io::mmdb_write),
//! with Python values made records:
//! - `str`: as `ipfib compile --output-format mmdb` makes them (`record`
//!   mode `auto`, `field` or `json`);
//! - `int` (non-negative, below 2^128) -> uint32/64/128, negative down to
//!   -2^31 -> int32; `float` (finite) -> double; `bool` -> boolean; under
//!   `auto` and `field` as `{field: V}`, under `json` as the record itself;
//! - anything else is a `TypeError` naming a prefix with that value.
//!
//! Python objects are converted with the GIL held, before the table is
//! written without it.

use crate::value::{Objects, Value};
use ipfib::table::Table;
use ipfib_io::mmdb_write::{
    self, IpVersion, Options, RecordMode, Stats, Value as Record, WriteError,
};
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};
use std::collections::HashMap;
use std::path::Path;

/// The options the keyword arguments ask for.
#[allow(clippy::too_many_arguments)]
pub fn options(
    field: &str,
    record: &str,
    database_type: &str,
    description: &str,
    ip_version: u8,
    record_size: Option<u16>,
    merge: bool,
    build_epoch: Option<u64>,
) -> PyResult<Options> {
    let mut o = Options {
        record: record
            .parse::<RecordMode>()
            .map_err(PyValueError::new_err)?,
        field: field.to_string(),
        database_type: database_type.to_string(),
        description: description.to_string(),
        record_size,
        merge_neighbours: merge,
        ..Options::default()
    };
    o.ip_version = match ip_version {
        4 => IpVersion::Four,
        6 => IpVersion::Six,
        v => {
            return Err(PyValueError::new_err(format!(
                "ip_version {v}: expected 4 or 6"
            )))
        }
    };
    if let Some(e) = build_epoch {
        o.build_epoch = e;
    }
    Ok(o)
}

/// A number or boolean as its record: `{field: V}`, or V under `json`.
fn scalar_record(v: Record, opts: &Options) -> Record {
    match opts.record {
        RecordMode::Json => v,
        _ => Record::Map(vec![(opts.field.clone(), v)]),
    }
}

fn int_record(i: i128) -> Result<Record, String> {
    if let Ok(u) = u128::try_from(i) {
        return Ok(Record::uint(u));
    }
    i32::try_from(i)
        .map(Record::Int32)
        .map_err(|_| format!("integer {i} has no MaxMind DB type (int32 is the only signed one)"))
}

/// The record of each object value the table holds (by object index).
pub fn object_records(
    py: Python<'_>,
    objects: &Objects,
    table: &Table<Value>,
    opts: &Options,
) -> PyResult<HashMap<u32, Result<Record, String>>> {
    let mut out = HashMap::new();
    let slots = table
        .v4
        .values()
        .to_vec()
        .into_iter()
        .chain(table.v6.values().to_vec());
    for v in slots.flatten() {
        let Value::Obj(i) = v else { continue };
        if out.contains_key(&i) {
            continue;
        }
        let obj = objects.to_py(py, &v)?.into_bound(py);
        // Exact types only: no user code (`__str__`, `__float__`) runs.
        let rec = if let Ok(b) = obj.cast::<PyBool>() {
            Ok(scalar_record(Record::Bool(b.is_true()), opts))
        } else if let Ok(f) = obj.cast::<PyFloat>() {
            let d = f.value();
            if d.is_finite() {
                Ok(scalar_record(Record::Double(d), opts))
            } else {
                Err(format!("value {d} has no MaxMind DB form (not finite)"))
            }
        } else if obj.cast::<PyInt>().is_ok() {
            match obj.extract::<i128>() {
                Ok(n) => int_record(n).map(|r| scalar_record(r, opts)),
                Err(_) => Err("an integer beyond 128 bits has no MaxMind DB type".to_string()),
            }
        } else if let Ok(s) = obj.cast::<PyString>() {
            let text = s.to_cow()?.into_owned();
            mmdb_write::record_of(&text, opts.record, &opts.field)
        } else {
            let t = obj.get_type().name()?;
            return Err(PyTypeError::new_err(format!(
                "to_mmdb: values of type {t} have no MaxMind DB form (use int, str, float, bool)"
            )));
        };
        out.insert(i, rec);
    }
    Ok(out)
}

/// The record of one route value.
pub fn record(
    v: &Value,
    objects: &HashMap<u32, Result<Record, String>>,
    opts: &Options,
) -> Result<Record, String> {
    match v {
        Value::Int(i) => int_record(*i as i128).map(|r| scalar_record(r, opts)),
        Value::Str(s) => mmdb_write::record_of(s, opts.record, &opts.field)
            .map_err(|e| format!("value {s:?}: {e}")),
        Value::Obj(i) => objects
            .get(i)
            .cloned()
            .unwrap_or_else(|| Err("an unknown object value".to_string())),
        Value::Fields(_) => Err(
            "a value of several fields (Table.from_file(value=[...])): export the table \
             read with one field, or with the whole record (the default JSON value)"
                .to_string(),
        ),
    }
}

/// Write `table` to `path` (no GIL needed).
pub fn write(
    path: &Path,
    table: &Table<Value>,
    objects: &HashMap<u32, Result<Record, String>>,
    opts: &Options,
) -> Result<Stats, WriteError> {
    mmdb_write::write_file_with(path, |w| {
        mmdb_write::write_with(w, &table.v4, &table.v6, opts, |v| record(v, objects, opts))
    })
}

/// A write error as the Python exception for it.
pub fn error(e: WriteError) -> PyErr {
    match e {
        WriteError::File { .. } | WriteError::Io(_) => PyOSError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// What was written, as a dict.
pub fn stats<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ip_version", s.ip_version)?;
    d.set_item("record_size", s.record_size)?;
    d.set_item("node_count", s.node_count)?;
    d.set_item("records", s.records)?;
    d.set_item("data_bytes", s.data_bytes)?;
    d.set_item("file_bytes", s.file_bytes)?;
    d.set_item("routes_v4", s.routes_v4)?;
    d.set_item("routes_v6", s.routes_v6)?;
    d.set_item("v6_mapped_routes", s.v6_mapped_routes)?;
    d.set_item("v6_compat_routes", s.v6_compat_routes)?;
    d.set_item("v6_compat_overridden", s.v6_compat_overridden)?;
    Ok(d)
}
