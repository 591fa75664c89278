//! `Table.lookup_many`: what the input is (numpy, list, Arrow buffers via
//! `ipfib._inputs.canonical`), what the output is (integer or object
//! array, masked, with prefix lengths), and the GIL-free work between.

use crate::batch::{
    answer_v4, decode_packed, decode_text, BadItem, CountSink, Extra, FamilySink, IndexSink,
    IntSink, Items, ManyError, Mixed, OnError, OutInt, SlotSink, SplitSink, Tally,
};
use crate::live::Live;
use crate::snapshot::slot_objects;
use crate::snapshot::Snapshot;
use crate::value::Objects;
use ipfib::engine::NO_ROUTE;
use ipfib::prefix::AnyAddr;
use numpy::{
    PyArray1, PyArray2, PyArrayDescr, PyArrayDescrMethods, PyArrayMethods, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyString, PyTuple};

/// What the vectorised lookups read of a `Table`: its live snapshot, the
/// Python objects of its values, the field names of a MaxMind DB loaded
/// with several fields.
#[derive(Clone, Copy)]
pub(crate) struct TableView<'t> {
    pub live: &'t Live,
    pub objects: &'t Objects,
    pub fields: &'t Option<Vec<String>>,
}

/// The inputs the GIL-free path reads (through [`Input::items`]).
pub(crate) enum Input<'py> {
    /// IPv4 as numbers.
    V4(numpy::PyReadonlyArray1<'py, u32>),
    /// IPv6, 16 bytes per row, network order.
    V6Bytes(numpy::PyReadonlyArray2<'py, u8>),
    /// IPv6, two words per row: bits 127..64, bits 63..0.
    V6Words(numpy::PyReadonlyArray2<'py, u64>),
    /// Already split by family (a Python list, parsed with the GIL).
    Parsed(Mixed, usize),
    /// Arrow-style variable-length items: `offsets` (n + 1), bytes, nulls.
    Buffers {
        packed: bool,
        offsets: numpy::PyReadonlyArray1<'py, i64>,
        data: numpy::PyReadonlyArray1<'py, u8>,
        nulls: Option<numpy::PyReadonlyArray1<'py, bool>>,
    },
}

impl Input<'_> {
    /// The addresses as plain slices, for the GIL-free part.
    pub(crate) fn items(&self) -> PyResult<Items<'_>> {
        Ok(match self {
            Input::V4(a) => Items::V4(a.as_slice().map_err(slice_err)?),
            Input::V6Bytes(a) => Items::V6Bytes(a.as_slice().map_err(slice_err)?),
            Input::V6Words(a) => Items::V6Words(a.as_slice().map_err(slice_err)?),
            Input::Parsed(mixed, _) => Items::Parsed(mixed),
            Input::Buffers {
                packed,
                offsets,
                data,
                nulls,
            } => Items::Buffers {
                packed: *packed,
                offsets: offsets.as_slice().map_err(slice_err)?,
                data: data.as_slice().map_err(slice_err)?,
                nulls: nulls
                    .as_ref()
                    .map(|m| m.as_slice())
                    .transpose()
                    .map_err(slice_err)?,
            },
        })
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Input::V4(a) => a.len(),
            Input::V6Bytes(a) => a.shape()[0],
            Input::V6Words(a) => a.shape()[0],
            Input::Parsed(_, n) => *n,
            Input::Buffers { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }
}

pub(crate) fn bad_item(e: BadItem) -> PyErr {
    PyValueError::new_err(format!(
        "invalid IP address {:?} at index {}",
        e.text, e.index
    ))
}

/// Numpy inputs the fast paths read directly (C-contiguous, native dtype).
fn direct<'py>(obj: &Bound<'py, PyAny>) -> Option<Input<'py>> {
    if let Ok(a) = obj.cast::<PyArray1<u32>>() {
        if a.is_c_contiguous() {
            return a.try_readonly().ok().map(Input::V4);
        }
    }
    if let Ok(a) = obj.cast::<PyArray2<u8>>() {
        if a.is_c_contiguous() && a.shape()[1] == 16 {
            return a.try_readonly().ok().map(Input::V6Bytes);
        }
    }
    if let Ok(a) = obj.cast::<PyArray2<u64>>() {
        if a.is_c_contiguous() && a.shape()[1] == 2 {
            return a.try_readonly().ok().map(Input::V6Words);
        }
    }
    None
}

/// A Python list of addresses, parsed with the GIL: `str` (either family),
/// `bytes` (4 or 16, network order), `ipaddress` objects; `None` and NaN
/// are nulls (no match).
fn parse_list(list: &Bound<'_, PyList>, on_error: OnError) -> PyResult<Input<'static>> {
    let mut mixed = Mixed::default();
    let n = list.len();
    for (i, item) in list.iter().enumerate() {
        let r = if let Ok(s) = item.cast::<PyString>() {
            decode_text(i, s.to_cow()?.as_bytes(), &mut mixed)
        } else if item.is_none() {
            mixed.push_none(i);
            Ok(())
        } else if let Ok(b) = item.cast::<PyBytes>() {
            decode_packed(i, b.as_bytes(), &mut mixed)
        } else if item.cast::<PyFloat>().is_ok_and(|f| f.value().is_nan()) {
            mixed.push_none(i);
            Ok(())
        } else if item.is_instance_of::<pyo3::types::PyInt>() || item.is_instance_of::<PyBool>() {
            Err(BadItem {
                index: i,
                text: item.repr()?.to_string(),
            })
        } else {
            let text = item.str()?.to_string();
            match AnyAddr::parse(&text) {
                Ok(a) => {
                    mixed.push(i, a);
                    Ok(())
                }
                Err(_) => Err(BadItem { index: i, text }),
            }
        };
        match r {
            Err(e) if on_error == OnError::Raise => return Err(bad_item(e)),
            Err(_) => mixed.push_none(i),
            Ok(()) => {}
        }
    }
    Ok(Input::Parsed(mixed, n))
}

/// Classify `addrs`, asking `ipfib._inputs.canonical` to turn anything
/// else (other dtypes, pandas, pyarrow, iterables) into one of ours.
pub(crate) fn classify<'py>(addrs: &Bound<'py, PyAny>, on_error: OnError) -> PyResult<Input<'py>> {
    if let Some(input) = direct(addrs) {
        return Ok(input);
    }
    if let Ok(list) = addrs.cast::<PyList>() {
        return parse_list(list, on_error);
    }
    let py = addrs.py();
    let canonical = py
        .import("ipfib._inputs")?
        .getattr("canonical")?
        .call1((addrs,))?;
    if let Some(input) = direct(&canonical) {
        return Ok(input);
    }
    if let Ok(list) = canonical.cast::<PyList>() {
        return parse_list(list, on_error);
    }
    if let Ok(t) = canonical.cast::<PyTuple>() {
        let (kind, offsets, data, nulls): (
            String,
            Bound<'py, PyAny>,
            Bound<'py, PyAny>,
            Option<Bound<'py, PyAny>>,
        ) = t.extract()?;
        let nulls = match nulls {
            Some(m) => Some(m.cast_into::<PyArray1<bool>>()?.try_readonly()?),
            None => None,
        };
        let offsets = offsets.cast_into::<PyArray1<i64>>()?.try_readonly()?;
        let data = data.cast_into::<PyArray1<u8>>()?.try_readonly()?;
        if !offsets.is_c_contiguous() || !data.is_c_contiguous() {
            return Err(PyTypeError::new_err("ipfib: non-contiguous buffers"));
        }
        return Ok(Input::Buffers {
            packed: kind == "packed",
            offsets,
            data,
            nulls,
        });
    }
    Err(PyTypeError::new_err(format!(
        "ipfib: unsupported address input {} (expected a list, numpy array, \
         pandas/polars Series, pyarrow array or iterable of addresses)",
        addrs.get_type().name()?
    )))
}

/// Run the lookups of `input` into `sink`, without the GIL, on up to
/// `threads` threads (see [`answer_split`]).
#[allow(clippy::too_many_arguments)]
fn run<S: SplitSink>(
    py: Python<'_>,
    snap: &Snapshot,
    input: &Input<'_>,
    on_error: OnError,
    with_len: bool,
    sink: &mut S,
    threads: usize,
) -> PyResult<()> {
    let items = input.items()?;
    let r = py.detach(|| answer_split(snap, &items, on_error, with_len, sink, threads));
    r.map_err(|e| match e {
        ManyError::Bad(b) => bad_item(b),
        ManyError::Build(m) => {
            PyValueError::new_err(format!("ipfib: cannot compile the table: {m}"))
        }
    })
}

/// The lookups of `items` into `sink` on this thread.
fn answer_share<S: FamilySink>(
    snap: &Snapshot,
    items: &Items<'_>,
    on_error: OnError,
    with_len: bool,
    sink: &mut S,
) -> Result<(), ManyError> {
    match items {
        Items::V4(addrs) => Ok(answer_v4(snap, addrs, with_len, sink)?),
        _ => items.each_chunk(on_error, |m: &Mixed| Ok(m.answer(snap, with_len, sink)?)),
    }
}

/// The lookups of `items` into `sink`, the items cut into contiguous
/// shares (see [`ipfib::par::shares`]), one thread each (this one answers the first),
/// every thread into its own part of the sink. From one snapshot, so the
/// answers are those of one thread. The error is the input's first (each
/// share stops at its first, and shares are in input order). A parsed
/// list is answered on this thread alone.
pub(crate) fn answer_split<S: SplitSink>(
    snap: &Snapshot,
    items: &Items<'_>,
    on_error: OnError,
    with_len: bool,
    sink: &mut S,
    threads: usize,
) -> Result<(), ManyError> {
    on_shares(
        items,
        threads,
        sink,
        |s, at| s.split_off(at),
        |s, part| s.absorb(part),
        |share, start, _, part| {
            answer_share(snap, share, on_error, with_len, part).map_err(|e| offset(e, start))
        },
    )
}

/// The cut every threaded bulk call shares: `items` in contiguous shares
/// ([`ipfib::par::shares`]), `head` cut by `split` into one part per
/// share (`head` keeps the first), `f(share, start, end, part)` on one
/// thread per share, then the parts taken back by `absorb` in order.
/// Shares are in input order and each stops at its first error, so the
/// first share's error is the input's first. One share, or a parsed list
/// (its positions are not contiguous by family): `f` over all of `items`
/// on this thread.
pub(crate) fn on_shares<S: Send, E: Send>(
    items: &Items<'_>,
    threads: usize,
    head: &mut S,
    split: impl Fn(&mut S, usize) -> S,
    absorb: impl Fn(&mut S, S),
    f: impl Fn(&Items<'_>, usize, usize, &mut S) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let n = items.len();
    let cuts = ipfib::par::shares(n, threads);
    if cuts.len() <= 2 || items.slice(0, 0).is_none() {
        return f(items, 0, n, head);
    }
    // Parts cut from the end: `parts[j]` answers share j + 1.
    let mut parts: Vec<S> = cuts[1..cuts.len() - 1]
        .iter()
        .rev()
        .map(|&at| split(head, at))
        .collect();
    parts.reverse();
    let work = std::iter::once(&mut *head)
        .chain(parts.iter_mut())
        .zip(cuts.windows(2))
        .map(|(part, w)| (w[0], w[1], part))
        .collect();
    let results = ipfib::par::run_shares(work, |(start, end, part)| {
        let share = items.slice(start, end).expect("sliceable, checked above");
        f(&share, start, end, part)
    });
    for part in parts {
        absorb(head, part);
    }
    results
        .into_iter()
        .find_map(Result::err)
        .map_or(Ok(()), Err)
}

/// A share's error, its item numbered in the whole input.
fn offset(e: ManyError, start: usize) -> ManyError {
    match e {
        ManyError::Bad(mut b) => {
            b.index += start;
            ManyError::Bad(b)
        }
        other => other,
    }
}

pub(crate) fn borrow_err(e: numpy::BorrowError) -> PyErr {
    PyTypeError::new_err(e.to_string())
}

pub(crate) fn slice_err(e: numpy::AsSliceError) -> PyErr {
    PyTypeError::new_err(e.to_string())
}

/// `lookup_many`'s `default` when the caller gives none: one private
/// object, told apart by identity, so that an explicit `default=None` or
/// `default=0` keeps its meaning. It stands for `0` when the answers are
/// integers and `None` when they are objects (a miss among strings is
/// `None`, as people expect, not the integer `0`).
static UNSET: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

pub fn unset() -> Py<PyAny> {
    Python::attach(|py| {
        UNSET
            .get_or_init(py, || pyo3::types::PyList::empty(py).into_any().unbind())
            .clone_ref(py)
    })
}

/// Whether the caller gave no `default`.
fn is_unset(py: Python<'_>, default: &Py<PyAny>) -> bool {
    UNSET
        .get(py)
        .is_some_and(|u| default.bind(py).is(u.bind(py)))
}

/// `default` as given, or what an unset one stands for: `0` when every
/// value of the table is an int, else `None` (whatever `dtype` asks).
fn resolve_default(py: Python<'_>, default: Py<PyAny>, int_answers: bool) -> Py<PyAny> {
    match (is_unset(py, &default), int_answers) {
        (false, _) => default,
        (true, true) => 0i64
            .into_pyobject(py)
            .map(|i| i.into_any().unbind())
            .unwrap_or_else(|e| match e {}),
        (true, false) => py.None(),
    }
}

/// The result type `lookup_many` was asked for (`dtype=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OutType {
    /// `None`: `int64` when every value and `default` are ints, else objects.
    Auto,
    /// `object`: the values themselves, whatever they are.
    Object,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

impl OutType {
    /// What `numpy.dtype(obj)` names, if we answer in it.
    fn parse(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Some(obj) = obj.filter(|o| !o.is_none()) else {
            return Ok(OutType::Auto);
        };
        let descr = PyArrayDescr::new(obj.py(), obj)?;
        let native = descr.is_native_byteorder().unwrap_or(true);
        Ok(match (descr.kind(), descr.itemsize(), native) {
            (b'O', _, _) => OutType::Object,
            (b'i', 1, true) => OutType::I8,
            (b'i', 2, true) => OutType::I16,
            (b'i', 4, true) => OutType::I32,
            (b'i', 8, true) => OutType::I64,
            (b'u', 1, true) => OutType::U8,
            (b'u', 2, true) => OutType::U16,
            (b'u', 4, true) => OutType::U32,
            (b'u', 8, true) => OutType::U64,
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "lookup_many: dtype must be None, object or a native-order \
                     integer dtype, not {}",
                    descr.str()?
                )))
            }
        })
    }
}

/// Answer `input` as integers of type `T` into a new numpy array.
/// Fresh zeroed pages: every element is written exactly once (see
/// `batch.rs`), so nothing is prefilled.
#[allow(clippy::too_many_arguments)]
fn int_answers<'py, T: OutInt>(
    py: Python<'py>,
    snap: &Snapshot,
    input: &Input<'_>,
    on_error: OnError,
    with_len: bool,
    ints: (&[i64], &[i64]),
    default: i64,
    extra: Extra<'_>,
    threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let check = |what: &str, v: i64| {
        if T::fits(v) {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!(
                "lookup_many: {what} {v} does not fit dtype {}",
                numpy::dtype::<T>(py)
            )))
        }
    };
    if let Some((lo, hi)) = snap.int_range() {
        check("table value", lo)?;
        check("table value", hi)?;
    }
    check("default", default)?;
    let vals = PyArray1::<T>::zeros(py, input.len(), false);
    {
        let mut rw = vals.try_readwrite().map_err(borrow_err)?;
        let out = rw.as_slice_mut().map_err(slice_err)?;
        let mut sink = IntSink::new(out, ints, default, extra);
        run(py, snap, input, on_error, with_len, &mut sink, threads)?;
    }
    Ok(vals.into_any())
}

/// Per-route totals of `addrs` (see `_ipfib.pyi`): how many addresses,
/// or the sum of their weights, each route is the longest match of, in
/// `Table.items()` order; from one snapshot.
pub fn count_many<'py>(
    table: TableView<'_>,
    py: Python<'py>,
    addrs: &Bound<'py, PyAny>,
    weights: Option<&Bound<'py, PyAny>>,
    errors: &str,
    threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let on_error = OnError::parse(errors)?;
    let input = classify(addrs, on_error)?;
    let n = input.len();
    if u32::try_from(n).is_err() {
        return Err(PyValueError::new_err(
            "count_many: at most 2^32 - 1 addresses per call",
        ));
    }
    let snap = table.live.snapshot();
    let routes = snap.v4.len() + snap.v6.len();
    let v6_base = snap.v4.len();
    let Some(w) = weights else {
        return tally::<i64>(
            py, &snap, &input, on_error, None, 1, routes, v6_base, threads,
        );
    };
    // Integer weights sum exactly (int64); float weights as float64.
    let np = py.import("numpy")?;
    let arr = np.call_method1("asarray", (w,))?;
    let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
    if shape != [n] {
        return Err(PyValueError::new_err(format!(
            "count_many: weights must be one-dimensional with one weight per address \
             ({n}), not of shape {shape:?}"
        )));
    }
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    let as_type = |t: &str| -> PyResult<Bound<'py, PyAny>> {
        let kw = PyDict::new(py);
        kw.set_item("casting", "safe")?;
        kw.set_item("order", "C")?;
        arr.call_method("astype", (np.getattr(t)?,), Some(&kw))
    };
    match kind.as_str() {
        "b" | "i" | "u" => {
            let ints = as_type("int64").map_err(|_| {
                PyTypeError::new_err(
                    "count_many: uint64 weights may not fit int64: cast them to int64 or float64",
                )
            })?;
            let ints = ints.cast_into::<PyArray1<i64>>()?.try_readonly()?;
            let ws = ints.as_slice().map_err(slice_err)?;
            tally::<i64>(
                py,
                &snap,
                &input,
                on_error,
                Some(ws),
                1,
                routes,
                v6_base,
                threads,
            )
        }
        "f" => {
            let floats = as_type("float64")?;
            let floats = floats.cast_into::<PyArray1<f64>>()?.try_readonly()?;
            let ws = floats.as_slice().map_err(slice_err)?;
            // A NaN (a null weight read as a number) would make its
            // route's total NaN without a word: refused, naming it.
            if let Some(i) = ws.iter().position(|w| w.is_nan()) {
                return Err(PyValueError::new_err(format!(
                    "count_many: weight {i} is NaN or null (a weight per address, by position)"
                )));
            }
            tally::<f64>(
                py,
                &snap,
                &input,
                on_error,
                Some(ws),
                1.0,
                routes,
                v6_base,
                threads,
            )
        }
        _ => Err(PyTypeError::new_err(format!(
            "count_many: weights must be numbers (integers or floats), not dtype {}",
            arr.getattr("dtype")?.str()?
        ))),
    }
}

#[allow(clippy::too_many_arguments)]
fn tally<'py, T: Tally>(
    py: Python<'py>,
    snap: &Snapshot,
    input: &Input<'_>,
    on_error: OnError,
    weights: Option<&[T]>,
    one: T,
    routes: usize,
    v6_base: usize,
    threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    // Each thread sums into totals of its own (16 bytes a route), added
    // up at the end: at most one thread per CPU, and each share at least
    // four times the routes (the totals then cost at most 4 bytes an
    // address, the size of an IPv4 input).
    let threads = ipfib::par::thread_count(threads)
        .min(ipfib::par::cpus())
        .min((input.len() / (4 * routes.max(1))).max(1));
    let mut sink = CountSink::new(routes, weights, one, v6_base);
    run(py, snap, input, on_error, true, &mut sink, threads)?;
    let totals = sink.into_totals().ok_or_else(|| {
        pyo3::exceptions::PyOverflowError::new_err(
            "count_many: a route's total does not fit int64 (pass float weights)",
        )
    })?;
    Ok(PyArray1::from_vec(py, totals).into_any())
}

/// Vectorised longest-prefix match (see `_ipfib.pyi`).
#[allow(clippy::too_many_arguments)]
pub fn lookup_many<'py>(
    table: TableView<'_>,
    py: Python<'py>,
    addrs: &Bound<'py, PyAny>,
    default: Py<PyAny>,
    masked: bool,
    with_prefix_len: bool,
    errors: &str,
    dtype: Option<&Bound<'py, PyAny>>,
    return_index: bool,
    threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let on_error = OnError::parse(errors)?;
    let out_type = OutType::parse(dtype)?;
    if return_index && !matches!(out_type, OutType::Auto | OutType::I64) {
        return Err(PyTypeError::new_err(
            "lookup_many: return_index=True answers int64 route indices (dtype must be None)",
        ));
    }
    let d = default.bind(py);
    if return_index
        && !is_unset(py, &default)
        && !(d.is_instance_of::<pyo3::types::PyInt>()
            && !d.is_instance_of::<PyBool>()
            && d.extract::<i64>().ok() == Some(0))
    {
        return Err(PyTypeError::new_err(
            "lookup_many: return_index=True answers -1 where nothing matches; \
             a default does not apply (use masked=True for a mask)",
        ));
    }
    let input = classify(addrs, on_error)?;
    let n = input.len();
    if u32::try_from(n).is_err() {
        return Err(PyValueError::new_err(
            "lookup_many: at most 2^32 - 1 addresses per call",
        ));
    }
    let snap = table.live.snapshot();
    // Outputs are allocated zeroed by numpy, which asks for transparent
    // huge pages on large arrays: a fresh 80 MB result then costs a few
    // hundred page faults, not 20,000 (measured: a quarter of a
    // 10M-address call). Every element is written once (no prefill).
    let lens = with_prefix_len.then(|| PyArray1::<i16>::zeros(py, n, false));
    let miss = masked.then(|| PyArray1::<bool>::zeros(py, n, false));
    let mut lens_rw = lens
        .as_ref()
        .map(|a| a.try_readwrite())
        .transpose()
        .map_err(borrow_err)?;
    let mut miss_rw = miss
        .as_ref()
        .map(|a| a.try_readwrite())
        .transpose()
        .map_err(borrow_err)?;
    let extra = Extra {
        lens: lens_rw
            .as_mut()
            .map(|a| a.as_slice_mut())
            .transpose()
            .map_err(slice_err)?,
        miss: miss_rw
            .as_mut()
            .map(|a| a.as_slice_mut())
            .transpose()
            .map_err(slice_err)?,
    };
    let ints = snap.ints();
    let default = resolve_default(py, default, ints.is_some());
    let default_is_int = default.bind(py).is_instance_of::<pyo3::types::PyInt>()
        && !default.bind(py).is_instance_of::<PyBool>();
    let default_int = default_is_int
        .then(|| default.bind(py).extract::<i64>().ok())
        .flatten();
    if !matches!(out_type, OutType::Auto | OutType::Object) {
        if ints.is_none() {
            return Err(PyTypeError::new_err(
                "lookup_many: an integer dtype needs every value in the table to be an int \
                 (use dtype=None or object)",
            ));
        }
        if !default_is_int {
            return Err(PyTypeError::new_err(
                "lookup_many: an integer dtype needs an int default",
            ));
        }
        if default_int.is_none() {
            return Err(PyValueError::new_err(format!(
                "lookup_many: default {} does not fit a 64-bit integer",
                default.bind(py).repr()?
            )));
        }
    }
    let ints_default = ints.zip(default_int);
    let (s, i, w) = (&*snap, &input, with_prefix_len);
    let values: Bound<'py, PyAny> = match (out_type, ints_default) {
        _ if return_index => {
            // The route-ordinal engine answers (it knows which route
            // matched); every position is written once, as for values.
            let index = PyArray1::<i64>::zeros(py, n, false);
            {
                let mut rw = index.try_readwrite().map_err(borrow_err)?;
                let out = rw.as_slice_mut().map_err(slice_err)?;
                let mut sink = IndexSink::new(out, snap.v4.len() as i64, extra);
                run(py, s, i, on_error, true, &mut sink, threads)?;
            }
            index.into_any()
        }
        (OutType::Auto | OutType::I64, Some((ints, d))) => {
            int_answers::<i64>(py, s, i, on_error, w, ints, d, extra, threads)?
        }
        (OutType::I32, Some((ints, d))) => {
            int_answers::<i32>(py, s, i, on_error, w, ints, d, extra, threads)?
        }
        (OutType::I16, Some((ints, d))) => {
            int_answers::<i16>(py, s, i, on_error, w, ints, d, extra, threads)?
        }
        (OutType::I8, Some((ints, d))) => {
            int_answers::<i8>(py, s, i, on_error, w, ints, d, extra, threads)?
        }
        (OutType::U64, Some((ints, d))) => {
            int_answers::<u64>(py, s, i, on_error, w, ints, d, extra, threads)?
        }
        (OutType::U32, Some((ints, d))) => {
            int_answers::<u32>(py, s, i, on_error, w, ints, d, extra, threads)?
        }
        (OutType::U16, Some((ints, d))) => {
            int_answers::<u16>(py, s, i, on_error, w, ints, d, extra, threads)?
        }
        (OutType::U8, Some((ints, d))) => {
            int_answers::<u8>(py, s, i, on_error, w, ints, d, extra, threads)?
        }
        _ => {
            let mut slots = vec![NO_ROUTE; n];
            let v6_base = snap.v4.values.len() as u32;
            let mut sink = SlotSink::new(&mut slots, v6_base, extra);
            run(
                py,
                &snap,
                &input,
                on_error,
                with_prefix_len,
                &mut sink,
                threads,
            )?;
            let objs = slot_objects(py, table.objects, &snap)?;
            let out: Vec<Py<PyAny>> = slots
                .iter()
                .map(|&s| match objs.get(s as usize) {
                    Some(o) => o.clone_ref(py),
                    None => default.clone_ref(py),
                })
                .collect();
            PyArray1::from_vec(py, out).into_any()
        }
    };
    drop((lens_rw, miss_rw));
    let ma = || py.import("numpy.ma");
    let lens = lens.map(|l| l.into_any());
    let (values, lens) = match &miss {
        Some(mask) => {
            let values = ma()?.call_method1("masked_array", (values, mask))?;
            let lens = lens
                .map(|l| ma()?.call_method1("masked_array", (l, mask)))
                .transpose()?;
            (values, lens)
        }
        None => (values, lens),
    };
    let result = match lens {
        Some(l) => PyTuple::new(py, [values, l])?.into_any(),
        None => values,
    };
    // polars in, polars out (named after the input Series).
    let module = addrs.get_type().module()?;
    if module.to_cow()?.starts_with("polars") {
        let name = addrs.getattr("name")?;
        return py
            .import("ipfib._inputs")?
            .call_method1("to_polars", (result, name));
    }
    Ok(result)
}

/// `Table.lookup_fields`: one array per field of a table loaded with
/// several MaxMind DB fields (see `_ipfib.pyi`). Each field's array is
/// `int64` when every value of that field in the table is an `int` and
/// `default` is one, else `object`; `frame="pandas"` makes a DataFrame of
/// them (one column per field, in field order), `frame="polars"` a polars
/// DataFrame with nulls for misses (its types inferred, `default` unused).
pub fn lookup_fields<'py>(
    table: TableView<'_>,
    py: Python<'py>,
    addrs: &Bound<'py, PyAny>,
    default: Py<PyAny>,
    frame: Option<&str>,
    errors: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(names) = &table.fields else {
        return Err(PyTypeError::new_err(
            "lookup_fields: this table was not loaded with several fields \
             (Table.from_file(path, value=[\"country.iso_code\", ...]))",
        ));
    };
    let maker = match frame {
        None => None,
        Some(lib @ ("pandas" | "polars")) => Some(py.import(lib)?.getattr("DataFrame")?),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "lookup_fields: frame must be None, \"pandas\" or \"polars\", not {other:?}"
            )))
        }
    };
    let on_error = OnError::parse(errors)?;
    let input = classify(addrs, on_error)?;
    let n = input.len();
    if u32::try_from(n).is_err() {
        return Err(PyValueError::new_err(
            "lookup_fields: at most 2^32 - 1 addresses per call",
        ));
    }
    let snap = table.live.snapshot();
    let mut slots = vec![NO_ROUTE; n];
    let v6_base = snap.v4.values.len() as u32;
    let extra = Extra {
        lens: None,
        miss: None,
    };
    let mut sink = SlotSink::new(&mut slots, v6_base, extra);
    run(py, &snap, &input, on_error, false, &mut sink, 1)?;
    // Per value slot: its tuple (a route whose value is not a tuple of
    // one item per field answers `default` in every field).
    let objs = slot_objects(py, table.objects, &snap)?;
    let tuples: Vec<Option<Bound<'py, PyTuple>>> = objs
        .into_iter()
        .map(|o| {
            o.into_bound(py)
                .cast_into::<PyTuple>()
                .ok()
                .filter(|t| t.len() == names.len())
        })
        .collect();
    let default = default.into_bound(py);
    let default_int = (default.is_exact_instance_of::<pyo3::types::PyInt>())
        .then(|| default.extract::<i64>().ok())
        .flatten();
    let out = pyo3::types::PyDict::new(py);
    for (i, name) in names.iter().enumerate() {
        let items: Vec<Option<Bound<'py, PyAny>>> = tuples
            .iter()
            .map(|t| {
                t.as_ref()
                    .and_then(|t| t.get_item(i).ok())
                    .filter(|x| !x.is_none())
            })
            .collect();
        if frame == Some("polars") {
            // polars: a miss is null (polars' own way; `default` is not
            // used), and the column's type is inferred from the values.
            let column: Vec<Option<Bound<'py, PyAny>>> = slots
                .iter()
                .map(|&s| items.get(s as usize).cloned().flatten())
                .collect();
            out.set_item(name, PyList::new(py, column)?)?;
            continue;
        }
        let ints: Option<Vec<i64>> = default_int.and_then(|d| {
            items
                .iter()
                .map(|x| match x {
                    None => Some(d),
                    Some(o) if o.is_exact_instance_of::<pyo3::types::PyInt>() => {
                        o.extract::<i64>().ok()
                    }
                    Some(_) => None,
                })
                .collect()
        });
        let column = match (ints, default_int) {
            (Some(ints), Some(d)) => PyArray1::from_iter(
                py,
                slots
                    .iter()
                    .map(|&s| ints.get(s as usize).copied().unwrap_or(d)),
            )
            .into_any(),
            _ => {
                let objects: Vec<Py<PyAny>> = slots
                    .iter()
                    .map(|&s| match items.get(s as usize) {
                        Some(Some(o)) => o.clone().unbind(),
                        _ => default.clone().unbind(),
                    })
                    .collect();
                PyArray1::from_vec(py, objects).into_any()
            }
        };
        out.set_item(name, column)?;
    }
    match maker {
        Some(make) if frame == Some("polars") => {
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("strict", false)?;
            make.call((out,), Some(&kwargs))
        }
        Some(make) => make.call1((out,)),
        None => Ok(out.into_any()),
    }
}

/// `Table._lookup_columns` (for `ipfib._enrich`): every answer from one
/// snapshot, so a row's index, length, prefix and value always belong to
/// one version of the table. Returns a dict: `index` (int64, the route's
/// position in `items()` order, -1 on a miss or a null or bad item),
/// `prefix_len` (int16, -1), and when asked `prefix_offsets` (int64, n + 1)
/// with `prefix_data` (uint8: the matched prefixes' text, empty on a
/// miss; Arrow large_string buffers) and `value` (int64 when every value is
/// an int, else objects; 0 / None on a miss).
pub fn lookup_columns<'py>(
    table: TableView<'_>,
    py: Python<'py>,
    addrs: &Bound<'py, PyAny>,
    want_prefix: bool,
    want_value: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let input = classify(addrs, OnError::Coerce)?;
    let n = input.len();
    if u32::try_from(n).is_err() {
        return Err(PyValueError::new_err(
            "ipfib: at most 2^32 - 1 addresses per call",
        ));
    }
    let snap = table.live.snapshot();
    let n4 = snap.v4.len() as i64;
    let mut index = vec![0i64; n];
    let mut lens = vec![0i16; n];
    {
        let extra = Extra {
            lens: Some(&mut lens),
            miss: None,
        };
        let mut sink = IndexSink::new(&mut index, n4, extra);
        run(py, &snap, &input, OnError::Coerce, true, &mut sink, 1)?;
    }
    // The matched route of a row: (prefix, value slot, v6 base of slots).
    let v6_base = snap.v4.values.len() as u32;
    let route = |i: i64| -> Option<(ipfib::prefix::AnyPrefix, u32)> {
        if i < 0 {
            None
        } else if i < n4 {
            let (p, slot) = snap.v4.route(i as u32)?;
            Some((p.into(), slot))
        } else {
            let (p, slot) = snap.v6.route((i - n4) as u32)?;
            Some((p.into(), v6_base + slot))
        }
    };
    let d = PyDict::new(py);
    if want_prefix {
        let (offsets, data) = py.detach(|| {
            use std::fmt::Write;
            let mut offsets = Vec::with_capacity(n + 1);
            let mut data = String::with_capacity(n * 16);
            offsets.push(0i64);
            for &i in &index {
                if let Some((p, _)) = route(i) {
                    // Writing to a String cannot fail.
                    let _ = write!(data, "{p}");
                }
                offsets.push(data.len() as i64);
            }
            (offsets, data.into_bytes())
        });
        d.set_item("prefix_offsets", PyArray1::from_vec(py, offsets))?;
        d.set_item("prefix_data", PyArray1::from_vec(py, data))?;
    }
    if want_value {
        match snap.ints() {
            Some((i4, i6)) => {
                let vals: Vec<i64> = index
                    .iter()
                    .map(|&i| {
                        route(i)
                            .and_then(|(_, slot)| {
                                if slot < v6_base {
                                    i4.get(slot as usize)
                                } else {
                                    i6.get((slot - v6_base) as usize)
                                }
                            })
                            .copied()
                            .unwrap_or(0)
                    })
                    .collect();
                d.set_item("value", PyArray1::from_vec(py, vals))?;
            }
            None => {
                let objs = slot_objects(py, table.objects, &snap)?;
                let vals: Vec<Py<PyAny>> = index
                    .iter()
                    .map(
                        |&i| match route(i).and_then(|(_, s)| objs.get(s as usize)) {
                            Some(o) => o.clone_ref(py),
                            None => py.None(),
                        },
                    )
                    .collect();
                d.set_item("value", PyArray1::from_vec(py, vals))?;
            }
        }
    }
    d.set_item("index", PyArray1::from_vec(py, index))?;
    d.set_item("prefix_len", PyArray1::from_vec(py, lens))?;
    Ok(d)
}
