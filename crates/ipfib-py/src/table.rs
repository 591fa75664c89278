//! The Python `ipfib.Table`: construction, scalar lookups, the mapping
//! protocol, mutations, pickling and `info()`. `lookup_many` is in
//! `many.rs`.

use crate::args::{exact_prefix, parse_addr, parse_prefix, text_of};
use crate::live::Live;
use crate::load;
use crate::snapshot::{slot_objects, EngineSpec, FamilySnap, Snapshot};
use crate::value::{Objects, Value};
use ipfib::addr::Addr;
use ipfib::engine::{Family, NO_ROUTE};
use ipfib::prefix::{AnyAddr, AnyPrefix, HostBits, Prefix};
use ipfib::table::Table as RouteTables;
use ipfib_io::{Compiled, FieldPath, Options, TableOptions};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use std::path::PathBuf;

/// A longest-prefix-match table of IPv4 and IPv6 routes (see the stub
/// `_ipfib.pyi` for the documented Python API).
#[pyclass(frozen, module = "ipfib", name = "Table")]
pub struct Table {
    pub(crate) live: Live,
    pub(crate) objects: Objects,
    /// The field names of a MaxMind DB loaded with several fields (each
    /// route's value is a tuple, one item per field): `lookup_fields`
    /// answers one array per field.
    pub(crate) fields: Option<Vec<String>>,
}

fn build_err(e: String) -> PyErr {
    PyValueError::new_err(format!("ipfib: cannot compile the table: {e}"))
}

fn engine_spec(engine: &str) -> PyResult<EngineSpec> {
    EngineSpec::parse_lookup(engine).map_err(|e| PyValueError::new_err(e.to_string()))
}

impl Table {
    /// What the vectorised lookups (many.rs) read.
    fn view(&self) -> crate::many::TableView<'_> {
        crate::many::TableView {
            live: &self.live,
            objects: &self.objects,
            fields: &self.fields,
        }
    }

    fn open_image(
        py: Python<'_>,
        path: &std::path::Path,
        verify: bool,
        map: bool,
    ) -> PyResult<Self> {
        let opts = ipfib::image::OpenOptions {
            verify_checksums: verify,
            map,
        };
        let snap = py
            .detach(|| ipfib::image::ImageTable::open_with(path, opts).map(Snapshot::from_image))
            .map_err(|source| {
                load::to_py_err(ipfib_io::ReadError::Image {
                    path: path.to_path_buf(),
                    source,
                })
            })?;
        Ok(Self::from_snapshot(py, snap))
    }

    /// A table answering from a compiled file's snapshot.
    fn from_snapshot(py: Python<'_>, snap: Snapshot) -> Self {
        Table {
            live: Live::from_snapshot(snap),
            objects: Objects::new(py),
            fields: None,
        }
    }

    fn build(
        py: Python<'_>,
        table: RouteTables<Value>,
        objects: Objects,
        spec: EngineSpec,
    ) -> PyResult<Self> {
        let live = py.detach(|| Live::new(table, spec))?;
        Ok(Table {
            live,
            objects,
            fields: None,
        })
    }

    /// `(prefix, value)` for a family's ordinal.
    fn route_at<A: Family>(
        &self,
        py: Python<'_>,
        snap: &FamilySnap<A>,
        ord: u32,
    ) -> PyResult<Option<(String, Py<PyAny>)>>
    where
        AnyPrefix: From<Prefix<A>>,
    {
        let Some((prefix, slot)) = snap.route(ord) else {
            return Ok(None);
        };
        let value = match snap.values.get(slot as usize) {
            Some(Some(v)) => self.objects.to_py(py, v)?,
            _ => py.None(),
        };
        Ok(Some((AnyPrefix::from(prefix).to_string(), value)))
    }

    /// The routes covering (supernets) or covered by (subnets) `prefix`.
    fn related(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        which: Related,
    ) -> PyResult<Vec<(String, Py<PyAny>)>> {
        let p = parse_prefix(prefix, HostBits::Reject)?;
        let routes = self.live.with_table(py, |t| match (p, which) {
            (AnyPrefix::V4(p), Related::Supernets) => collect(t.v4.supernets(&p)),
            (AnyPrefix::V4(p), Related::Subnets) => collect(t.v4.subnets(&p)),
            (AnyPrefix::V6(p), Related::Supernets) => collect(t.v6.supernets(&p)),
            (AnyPrefix::V6(p), Related::Subnets) => collect(t.v6.subnets(&p)),
        })?;
        self.pairs(py, routes)
    }

    fn pairs(
        &self,
        py: Python<'_>,
        routes: Vec<(AnyPrefix, Value)>,
    ) -> PyResult<Vec<(String, Py<PyAny>)>> {
        routes
            .into_iter()
            .map(|(p, v)| Ok((p.to_string(), self.objects.to_py(py, &v)?)))
            .collect()
    }

    /// Every `(prefix, value)` of the current snapshot, IPv4 first, each
    /// family in address order (shorter prefix first).
    fn snapshot_items(&self, py: Python<'_>) -> PyResult<Vec<(String, Py<PyAny>)>> {
        let snap = self.live.snapshot();
        let mut out = Vec::with_capacity(snap.v4.len() + snap.v6.len());
        for o in 0..snap.v4.len() as u32 {
            out.extend(self.route_at(py, &snap.v4, o)?);
        }
        for o in 0..snap.v6.len() as u32 {
            out.extend(self.route_at(py, &snap.v6, o)?);
        }
        Ok(out)
    }
}

#[derive(Clone, Copy)]
enum Related {
    Supernets,
    Subnets,
}

#[pymethods]
impl Table {
    #[new]
    #[pyo3(signature = (*, engine = "auto"))]
    fn new(py: Python<'_>, engine: &str) -> PyResult<Self> {
        Self::build(
            py,
            RouteTables::new(),
            Objects::new(py),
            engine_spec(engine)?,
        )
    }

    #[classmethod]
    #[pyo3(signature = (path, format = "auto", value = None, *, peer = None, engine = "auto", mask_host_bits = false, strict = false, value_column = None))]
    #[allow(clippy::too_many_arguments)]
    fn from_file(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        path: PathBuf,
        format: &str,
        value: Option<Bound<'_, PyAny>>,
        peer: Option<Bound<'_, PyAny>>,
        engine: &str,
        mask_host_bits: bool,
        strict: bool,
        value_column: Option<usize>,
    ) -> PyResult<Self> {
        let spec = engine_spec(engine)?;
        let peer = peer.map(|p| p.str().map(|s| s.to_string())).transpose()?;
        // Several MaxMind DB fields: a list or tuple of dot paths.
        let names: Option<Vec<String>> = match &value {
            Some(v) if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() => {
                Some(v.extract().map_err(|_| {
                    PyTypeError::new_err("value: a str, or a list of str (MaxMind DB field paths)")
                })?)
            }
            _ => None,
        };
        if let Some(names) = names {
            if !matches!(format.to_ascii_lowercase().as_str(), "auto" | "mmdb") {
                return Err(PyValueError::new_err(format!(
                    "several fields (value=[...]) are for MaxMind DB files, not format {format:?}"
                )));
            }
            if peer.is_some() || value_column.is_some() {
                return Err(PyValueError::new_err(
                    "peer and value_column do not apply to a MaxMind DB",
                ));
            }
            if names.is_empty() {
                return Err(PyValueError::new_err("value=[]: name at least one field"));
            }
            let paths = names
                .iter()
                .map(|n| FieldPath::parse(n))
                .collect::<Result<Vec<_>, _>>()
                .map_err(PyValueError::new_err)?;
            let (table, problems) = py
                .detach(|| load::read_fields(&path, &paths, strict))
                .map_err(load::to_py_err)?;
            warn_problems(py, &problems)?;
            let mut t = Self::build(py, table, Objects::new(py), spec)?;
            t.fields = Some(names);
            return Ok(t);
        }
        let value: Option<String> = value
            .map(|v| {
                v.extract().map_err(|_| {
                    PyTypeError::new_err(
                        "value: a str (a value policy or a MaxMind DB field path), or a list of str",
                    )
                })
            })
            .transpose()?;
        let opts = TableOptions {
            value_column,
            ..TableOptions::from_names(
                format,
                value.as_deref(),
                peer.as_deref(),
                mask_host_bits,
                strict,
            )
            .map_err(PyValueError::new_err)?
        };
        // A compiled table file is mapped (its engines are in it), unless
        // another engine is asked for: then it is read as routes. Loading
        // options it cannot honour are refused, not ignored.
        let given = [
            ("value", opts.value.is_some() || opts.field.is_some()),
            ("value_column", opts.value_column.is_some()),
            ("mask_host_bits", mask_host_bits),
            ("strict", strict),
        ];
        let compiled = if spec == EngineSpec::Auto {
            Compiled::Map(ipfib::image::OpenOptions {
                verify_checksums: true,
                map: true,
            })
        } else {
            Compiled::Load
        };
        let options = Options {
            compiled,
            not_for_compiled: given.iter().find(|g| g.1).map(|g| g.0),
            ..Options::new(opts.format, Ok(opts))
        };
        let (table, problems) = match py
            .detach(|| load::open(&path, &options))
            .map_err(load::open_err)?
        {
            load::Read::Image(snap) => return Ok(Self::from_snapshot(py, snap)),
            load::Read::Table(table, problems) => (table, problems),
        };
        warn_problems(py, &problems)?;
        Self::build(py, table, Objects::new(py), spec)
    }

    /// The field names of a table loaded with several MaxMind DB fields
    /// (each value a tuple in this order), else `None`.
    #[getter]
    fn fields(&self) -> Option<Vec<String>> {
        self.fields.clone()
    }

    /// One result per field (see `_ipfib.pyi`).
    #[pyo3(signature = (addrs, default = None, *, frame = None, errors = "raise"))]
    fn lookup_fields<'py>(
        &self,
        py: Python<'py>,
        addrs: &Bound<'py, PyAny>,
        default: Option<Py<PyAny>>,
        frame: Option<&str>,
        errors: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let default = default.unwrap_or_else(|| py.None());
        crate::many::lookup_fields(self.view(), py, addrs, default, frame, errors)
    }

    /// Open a compiled table file (`ipfib compile`) memory-mapped.
    #[classmethod]
    #[pyo3(signature = (path, *, verify_checksums = true, mmap = true))]
    fn open(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        path: PathBuf,
        verify_checksums: bool,
        mmap: bool,
    ) -> PyResult<Self> {
        Self::open_image(py, &path, verify_checksums, mmap)
    }

    #[classmethod]
    #[pyo3(signature = (routes, *, engine = "auto", mask_host_bits = false))]
    fn from_prefixes(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        routes: &Bound<'_, PyAny>,
        engine: &str,
        mask_host_bits: bool,
    ) -> PyResult<Self> {
        let spec = engine_spec(engine)?;
        let host_bits = if mask_host_bits {
            HostBits::Mask
        } else {
            HostBits::Reject
        };
        let objects = Objects::new(py);
        let mut table = RouteTables::new();
        for (i, item) in routes.try_iter()?.enumerate() {
            let item = item?;
            let add = |table: &mut RouteTables<Value>| -> PyResult<()> {
                let (p, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                    item.extract().map_err(|_| {
                        PyTypeError::new_err("expected a (prefix, value) pair".to_string())
                    })?;
                let prefix = parse_prefix(&p, host_bits)?;
                let value = objects.value_of(&v)?;
                table
                    .insert(prefix, value)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                Ok(())
            };
            add(&mut table).map_err(|e| {
                let msg = format!(
                    "route {i} ({}): {}",
                    item.repr().map(|r| r.to_string()).unwrap_or_default(),
                    e.value(py)
                );
                if e.is_instance_of::<PyTypeError>(py) {
                    PyTypeError::new_err(msg)
                } else {
                    PyValueError::new_err(msg)
                }
            })?;
        }
        Self::build(py, table, objects, spec)
    }

    #[classmethod]
    #[pyo3(signature = (df, prefix_col = "prefix", value_col = "value", *, engine = "auto", mask_host_bits = false))]
    fn from_pandas(
        cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        df: &Bound<'_, PyAny>,
        prefix_col: &str,
        value_col: &str,
        engine: &str,
        mask_host_bits: bool,
    ) -> PyResult<Self> {
        let prefixes = df.get_item(prefix_col)?.call_method0("tolist")?;
        let values = df.get_item(value_col)?.call_method0("tolist")?;
        let zip = py
            .import("builtins")?
            .getattr("zip")?
            .call1((prefixes, values))?;
        Self::from_prefixes(cls, py, &zip, engine, mask_host_bits)
    }

    /// The value of the longest matching prefix, or None.
    fn lookup(&self, py: Python<'_>, addr: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        let snap = self.live.snapshot();
        let value = match parse_addr(addr)? {
            AnyAddr::V4(a) => snap.v4.values.get(snap.v4.slot(a) as usize),
            AnyAddr::V6(a) => snap.v6.values.get(snap.v6.slot(a) as usize),
        };
        match value {
            Some(Some(v)) => Ok(Some(self.objects.to_py(py, v)?)),
            _ => Ok(None),
        }
    }

    /// `(prefix, value)` of the longest matching prefix, or None.
    fn lookup_prefix(
        &self,
        py: Python<'_>,
        addr: &Bound<'_, PyAny>,
    ) -> PyResult<Option<(String, Py<PyAny>)>> {
        let snap = self.live.snapshot();
        match parse_addr(addr)? {
            AnyAddr::V4(a) => {
                let o = snap.v4.ordinal_attached(py, a).map_err(build_err)?;
                self.route_at(py, &snap.v4, o)
            }
            AnyAddr::V6(a) => {
                let o = snap.v6.ordinal_attached(py, a).map_err(build_err)?;
                self.route_at(py, &snap.v6, o)
            }
        }
    }

    /// An address: whether some route matches it. A prefix (`a/len`):
    /// whether some route covers all of it (it or a supernet is present).
    fn __contains__(&self, x: &Bound<'_, PyAny>) -> PyResult<bool> {
        let scalar =
            x.is_instance_of::<pyo3::types::PyInt>() || x.is_instance_of::<pyo3::types::PyBytes>();
        if !scalar && text_of(x)?.contains('/') {
            let prefix = parse_prefix(x, HostBits::Reject)?;
            return self.live.with_table(x.py(), |t| match prefix {
                AnyPrefix::V4(p) => !t.v4.supernets(&p).is_empty(),
                AnyPrefix::V6(p) => !t.v6.supernets(&p).is_empty(),
            });
        }
        let snap = self.live.snapshot();
        Ok(match parse_addr(x)? {
            AnyAddr::V4(a) => snap.v4.slot(a) != NO_ROUTE,
            AnyAddr::V6(a) => snap.v6.slot(a) != NO_ROUTE,
        })
    }

    /// Vectorised longest-prefix match (see `_ipfib.pyi`).
    #[pyo3(signature = (addrs, default = crate::many::unset(), *, masked = false, with_prefix_len = false, errors = "raise", dtype = None, return_index = false, threads = 1))]
    #[pyo3(
        text_signature = "(self, addrs, default=..., *, masked=False, with_prefix_len=False, errors='raise', dtype=None, return_index=False, threads=1)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn lookup_many<'py>(
        &self,
        py: Python<'py>,
        addrs: &Bound<'py, PyAny>,
        default: Py<PyAny>,
        masked: bool,
        with_prefix_len: bool,
        errors: &str,
        dtype: Option<Bound<'py, PyAny>>,
        return_index: bool,
        threads: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::many::lookup_many(
            self.view(),
            py,
            addrs,
            default,
            masked,
            with_prefix_len,
            errors,
            dtype.as_ref(),
            return_index,
            threads,
        )
    }

    /// Per-route totals of addresses (see `_ipfib.pyi`).
    #[pyo3(signature = (addrs, weights = None, *, errors = "raise", threads = 1))]
    #[pyo3(text_signature = "(self, addrs, weights=None, *, errors='raise', threads=1)")]
    fn count_many<'py>(
        &self,
        py: Python<'py>,
        addrs: &Bound<'py, PyAny>,
        weights: Option<Bound<'py, PyAny>>,
        errors: &str,
        threads: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::many::count_many(self.view(), py, addrs, weights.as_ref(), errors, threads)
    }

    /// Exact match: the value stored for exactly `prefix` (KeyError if none).
    fn __getitem__(&self, py: Python<'_>, prefix: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let p = exact_prefix(prefix, "t[...]")?;
        match self.live.with_table(py, |t| t.get(&p).cloned())? {
            Some(v) => self.objects.to_py(py, &v),
            None => Err(PyKeyError::new_err(p.to_string())),
        }
    }

    /// Exact match with a default.
    #[pyo3(signature = (prefix, default = None))]
    fn get(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let p = exact_prefix(prefix, "t.get(...)")?;
        match self.live.with_table(py, |t| t.get(&p).cloned())? {
            Some(v) => self.objects.to_py(py, &v),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.insert(py, prefix, value).map(|_| ())
    }

    fn __delitem__(&self, py: Python<'_>, prefix: &Bound<'_, PyAny>) -> PyResult<()> {
        self.remove(py, prefix).map(|_| ())
    }

    /// Insert or replace a route; returns the previous value or None.
    fn insert(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let p = parse_prefix(prefix, HostBits::Reject)?;
        let v = self.objects.value_of(value)?;
        let old = py.detach(|| self.live.insert(p, v))?;
        old.map(|v| self.objects.to_py(py, &v)).transpose()
    }

    /// Remove exactly `prefix`; returns its value (KeyError if absent).
    fn remove(&self, py: Python<'_>, prefix: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let p = parse_prefix(prefix, HostBits::Reject)?;
        match py.detach(|| self.live.remove(p))? {
            Some(v) => self.objects.to_py(py, &v),
            None => Err(PyKeyError::new_err(p.to_string())),
        }
    }

    fn __len__(&self) -> usize {
        let snap = self.live.snapshot();
        snap.v4.len() + snap.v6.len()
    }

    /// Prefixes in order (IPv4 first; address order, shorter first).
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(py, self.keys())?
            .try_iter()
            .map(|i| i.into_any())
    }

    /// `(prefix, value)` pairs in iteration order.
    fn items(&self, py: Python<'_>) -> PyResult<Vec<(String, Py<PyAny>)>> {
        self.snapshot_items(py)
    }

    /// The prefixes in iteration order (as `list(t)`), without building
    /// the values.
    fn keys(&self) -> Vec<String> {
        let snap = self.live.snapshot();
        let v4 = (0..snap.v4.len() as u32).filter_map(|o| snap.v4.route(o));
        let v6 = (0..snap.v6.len() as u32).filter_map(|o| snap.v6.route(o));
        v4.map(|(p, _)| AnyPrefix::from(p).to_string())
            .chain(v6.map(|(p, _)| AnyPrefix::from(p).to_string()))
            .collect()
    }

    /// The values in iteration order (one per prefix).
    fn values(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        Ok(self
            .snapshot_items(py)?
            .into_iter()
            .map(|(_, v)| v)
            .collect())
    }

    /// Routes covering `prefix` (itself included when present), shortest first.
    fn supernets(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<(String, Py<PyAny>)>> {
        self.related(py, prefix, Related::Supernets)
    }

    /// Routes covered by `prefix` (itself included when present), in address order.
    fn subnets(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<(String, Py<PyAny>)>> {
        self.related(py, prefix, Related::Subnets)
    }

    /// The engine name, as the registry spells it (`auto`, `planb`,
    /// `poptrie:16`, `radix`; an old name such as `poptrie5` reads as the
    /// new one, `poptrie32`).
    #[getter]
    fn engine(&self) -> String {
        self.live.snapshot().spec.to_string()
    }

    /// Write the table as a MaxMind DB file (see `mmdb.rs` and the stub).
    #[pyo3(signature = (path, *, field = "value", record = "auto", database_type = "ipfib", description = "ipfib table", ip_version = 6, record_size = None, merge = false, build_epoch = None))]
    #[allow(clippy::too_many_arguments)]
    fn to_mmdb<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        field: &str,
        record: &str,
        database_type: &str,
        description: &str,
        ip_version: u8,
        record_size: Option<u16>,
        merge: bool,
        build_epoch: Option<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let opts = crate::mmdb::options(
            field,
            record,
            database_type,
            description,
            ip_version,
            record_size,
            merge,
            build_epoch,
        )?;
        // A copy, so that writing holds neither the table's lock nor the GIL.
        let table = self.live.with_table(py, |t| t.clone())?;
        let objects = crate::mmdb::object_records(py, &self.objects, &table, &opts)?;
        let stats = py
            .detach(|| crate::mmdb::write(&path, &table, &objects, &opts))
            .map_err(crate::mmdb::error)?;
        crate::mmdb::stats(py, &stats)
    }

    /// Whether every value is an `int` (what `lookup_many` answers as an
    /// integer array), from the snapshot: no route table is built.
    #[getter]
    fn _integer_values(&self) -> bool {
        self.live.snapshot().ints().is_some()
    }

    /// For `ipfib._enrich` (cluster enrichment): one snapshot answers the
    /// route index (-1: none), the prefix length (-1), and when asked the
    /// matched prefixes as Arrow string buffers and the values (see
    /// `many::lookup_columns`). Bad items are misses.
    #[pyo3(signature = (addrs, *, prefix = false, value = false))]
    fn _lookup_columns<'py>(
        &self,
        py: Python<'py>,
        addrs: &Bound<'py, PyAny>,
        prefix: bool,
        value: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        crate::many::lookup_columns(self.view(), py, addrs, prefix, value)
    }

    /// Write a compiled table file (`ipfib compile`'s format; see the stub).
    #[pyo3(signature = (path, *, source = "ipfib.Table.save"))]
    fn save<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        source: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        if self.fields.is_some() {
            return Err(PyTypeError::new_err(
                "save: a table of several MaxMind DB fields cannot be written as a compiled \
                 table file (its values are tuples); load it with one field",
            ));
        }
        let spec = self.live.snapshot().spec;
        // A copy, so that writing holds neither the table's lock nor the GIL.
        let table = self.live.with_table(py, |t| t.clone())?;
        let text = py.detach(|| text_table(&table))?;
        let opts = ipfib::engine::auto::AutoOptions {
            force: spec.force(),
            ..Default::default()
        };
        let stats = py
            .detach(|| ipfib::image::write_table(&text, &path, &opts, source))
            .map_err(|e| match e {
                ipfib::image::ImageError::Io(e) => {
                    pyo3::exceptions::PyOSError::new_err(format!("{}: {e}", path.display()))
                }
                e => PyValueError::new_err(format!("{}: {e}", path.display())),
            })?;
        let d = PyDict::new(py);
        d.set_item("bytes", stats.bytes)?;
        d.set_item("prefixes_v4", text.v4.len())?;
        d.set_item("prefixes_v6", text.v6.len())?;
        d.set_item("engines_v4", stats.engines_v4)?;
        d.set_item("engines_v6", stats.engines_v6)?;
        Ok(d)
    }

    /// Sizes, footprint and engine layout (kernel, direct-pointing bits).
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let snap = self.live.snapshot();
        let d = PyDict::new(py);
        let (n4, n6) = (snap.v4.len(), snap.v6.len());
        let footprint = snap.v4.footprint_bytes() + snap.v6.footprint_bytes();
        let distinct = |vals: &[Option<Value>]| vals.iter().filter(|v| v.is_some()).count();
        d.set_item("engine", snap.spec.to_string())?;
        d.set_item("engine_v4", snap.v4.engine_name())?;
        d.set_item("engine_v6", snap.v6.engine_name())?;
        for (key, fam) in [
            ("v4", snap.v4.engine_choice()),
            ("v6", snap.v6.engine_choice()),
        ] {
            let (chosen, reason) = fam.unzip();
            d.set_item(format!("chosen_{key}"), chosen)?;
            d.set_item(format!("chosen_reason_{key}"), reason)?;
        }
        d.set_item("prefixes", n4 + n6)?;
        d.set_item("prefixes_v4", n4)?;
        d.set_item("prefixes_v6", n6)?;
        d.set_item("values_v4", distinct(&snap.v4.values))?;
        d.set_item("values_v6", distinct(&snap.v6.values))?;
        d.set_item("integer_values", snap.ints().is_some())?;
        d.set_item("footprint_bytes", footprint)?;
        d.set_item(
            "bytes_per_prefix",
            if n4 + n6 == 0 {
                0.0
            } else {
                footprint as f64 / (n4 + n6) as f64
            },
        )?;
        let table_bytes = self
            .live
            .with_table(py, |t| t.v4.footprint_bytes() + t.v6.footprint_bytes())?;
        d.set_item("route_table_bytes", table_bytes)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let snap = self.live.snapshot();
        format!(
            "<ipfib.Table: {} IPv4 + {} IPv6 prefixes, engine {}>",
            snap.v4.len(),
            snap.v6.len(),
            snap.spec
        )
    }

    /// Pickle as the route list: `ipfib._unpickle(state)` rebuilds it.
    /// State: (engine, IPv4 addresses as big-endian u32 bytes, IPv4
    /// lengths, IPv6 addresses as 16-byte big-endian, IPv6 lengths,
    /// value index per route as little-endian u32 bytes, distinct values,
    /// the field names of a several-field MaxMind DB table or None).
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyTuple>,))> {
        let snap = self.live.snapshot();
        let values = slot_objects(py, &self.objects, &snap)?;
        let v6_base = snap.v4.values.len() as u32;
        let (a4, l4, s4) = packed(&snap.v4, 0, |a: u32| a.to_be_bytes().to_vec());
        let (a6, l6, s6) = packed(&snap.v6, v6_base, |a: u128| a.to_be_bytes().to_vec());
        let mut slots = s4;
        slots.extend(s6);
        let state = PyTuple::new(
            py,
            [
                PyString::new(py, &snap.spec.to_string()).into_any(),
                PyBytes::new(py, &a4).into_any(),
                PyBytes::new(py, &l4).into_any(),
                PyBytes::new(py, &a6).into_any(),
                PyBytes::new(py, &l6).into_any(),
                PyBytes::new(py, &slots).into_any(),
                PyList::new(py, values)?.into_any(),
                match &self.fields {
                    Some(f) => PyList::new(py, f)?.into_any(),
                    None => py.None().into_bound(py),
                },
            ],
        )?;
        let rebuild = py.import("ipfib")?.getattr("_unpickle")?;
        Ok((rebuild, (state,)))
    }

    /// Rebuild from `__reduce__`'s state (used by `ipfib._unpickle`).
    #[staticmethod]
    fn _from_state(py: Python<'_>, state: &Bound<'_, PyTuple>) -> PyResult<Self> {
        let bad = || PyValueError::new_err("ipfib: malformed pickle state");
        // Seven items from before several-field tables, eight since.
        let fields: Option<Vec<String>> = match state.len() {
            8 => state.get_item(7)?.extract()?,
            _ => None,
        };
        let state = state.get_slice(0, 7);
        let (engine, a4, l4, a6, l6, slots, values): PickleState<'_> = state.extract()?;
        let (a4, l4, a6, l6, slots) = (
            a4.as_bytes(),
            l4.as_bytes(),
            a6.as_bytes(),
            l6.as_bytes(),
            slots.as_bytes(),
        );
        let objects = Objects::new(py);
        let values = values
            .iter()
            .map(|v| objects.value_of(&v))
            .collect::<PyResult<Vec<_>>>()?;
        if a4.len() != l4.len() * 4
            || a6.len() != l6.len() * 16
            || slots.len() != (l4.len() + l6.len()) * 4
        {
            return Err(bad());
        }
        let mut table = RouteTables::new();
        let slot = |i: usize| -> PyResult<Value> {
            let b = slots.get(i * 4..i * 4 + 4).ok_or_else(bad)?;
            let s = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
            values.get(s).cloned().ok_or_else(bad)
        };
        for (i, (a, &len)) in a4.chunks_exact(4).zip(l4).enumerate() {
            let addr = u32::from_be_bytes([a[0], a[1], a[2], a[3]]);
            let p = Prefix::new(addr, len).map_err(|_| bad())?;
            table.v4.insert(p, slot(i)?).map_err(|_| bad())?;
        }
        for (i, (a, &len)) in a6.chunks_exact(16).zip(l6).enumerate() {
            let mut b = [0u8; 16];
            b.copy_from_slice(a);
            let p = Prefix::new(u128::from_be_bytes(b), len).map_err(|_| bad())?;
            table.v6.insert(p, slot(l4.len() + i)?).map_err(|_| bad())?;
        }
        let mut t = Self::build(py, table, objects, engine_spec(&engine)?)?;
        t.fields = fields;
        Ok(t)
    }
}

/// What `__reduce__` pickles: engine, IPv4 addresses and lengths, IPv6
/// addresses and lengths, value index per route, distinct values.
type PickleState<'py> = (
    String,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyList>,
);

fn collect<'a, A: Addr, V: Clone + 'a>(
    routes: impl IntoIterator<Item = (Prefix<A>, &'a V)>,
) -> Vec<(AnyPrefix, V)>
where
    AnyPrefix: From<Prefix<A>>,
{
    routes
        .into_iter()
        .map(|(p, v)| (p.into(), v.clone()))
        .collect()
}

/// A family's routes as packed addresses, lengths and value slots
/// (`base + slot`, little-endian u32).
fn packed<A: Family>(
    snap: &FamilySnap<A>,
    base: u32,
    bytes: impl Fn(A) -> Vec<u8>,
) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let mut addrs = Vec::new();
    let mut lens = Vec::new();
    let mut slots = Vec::new();
    for o in 0..snap.len() as u32 {
        if let Some((p, s)) = snap.route(o) {
            addrs.extend(bytes(p.addr()));
            lens.push(p.len());
            slots.extend((base + s).to_le_bytes());
        }
    }
    (addrs, lens, slots)
}

/// Warn `DamagedTableWarning` with what a lenient load skipped.
fn warn_problems(py: Python<'_>, problems: &[String]) -> PyResult<()> {
    if !problems.is_empty() {
        let category = py.get_type::<load::DamagedTableWarning>();
        let msg = std::ffi::CString::new(problems.join("\n").replace('\0', " "))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        PyErr::warn(py, &category, &msg, 2)?;
    }
    Ok(())
}

/// The table with its values as the text a compiled table file keeps:
/// `int` as decimal, `str` as itself. A value that would not read back as
/// itself is refused, naming its prefix: a negative `int` (table files'
/// integers are unsigned decimals), a `str` that is a canonical decimal
/// integer (it would come back as an `int`, as every table file's values
/// do), or any other object (only `int` and `str` have a text form).
fn text_table(table: &RouteTables<Value>) -> PyResult<RouteTables<String>> {
    fn text(prefix: AnyPrefix, v: &Value) -> PyResult<String> {
        match v {
            // Table files' integers are unsigned decimals: a negative int
            // would come back as text.
            Value::Int(i) if *i < 0 => Err(PyValueError::new_err(format!(
                "save: the value of {prefix} is the negative int {i}, which a compiled file \
                 gives back as the text \"{i}\" (table files keep integers unsigned)"
            ))),
            Value::Int(i) => Ok(i.to_string()),
            Value::Str(s) => match Value::from_file_text(s.to_string()) {
                Value::Str(_) => Ok(s.to_string()),
                _ => Err(PyValueError::new_err(format!(
                    "save: the value of {prefix} is the text {s:?}, which a compiled file \
                     gives back as the int {s} (store it as an int, or as other text)"
                ))),
            },
            Value::Obj(_) | Value::Fields(_) => Err(PyTypeError::new_err(format!(
                "save: the value of {prefix} is neither an int nor a str (a compiled table \
                 file keeps values as text)"
            ))),
        }
    }
    let mut out = RouteTables::new();
    let too_many = |e: ipfib::values::TooManyValues| PyValueError::new_err(format!("save: {e}"));
    for (p, v) in table.v4.iter() {
        let p = AnyPrefix::from(p);
        out.insert(p, text(p, v)?).map_err(too_many)?;
    }
    for (p, v) in table.v6.iter() {
        let p = AnyPrefix::from(p);
        out.insert(p, text(p, v)?).map_err(too_many)?;
    }
    Ok(out)
}
