//! `Table.lookup_many`: what the input is (numpy, list, Arrow buffers via
//! `ipfib._inputs.canonical`), what the output is (integer or object
//! array, masked, with prefix lengths), and the GIL-free work between.

use crate::batch::{
    answer_decoded, answer_v4, decode_packed, decode_text, BadItem, Extra, FamilySink, IntSink,
    ManyError, Mixed, OnError, SlotSink,
};
use crate::snapshot::Snapshot;
use crate::table::{slot_objects, Table};
use ipfib::engine::NO_ROUTE;
use ipfib::prefix::AnyAddr;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyList, PyString, PyTuple};

/// The inputs the GIL-free path reads.
enum Input<'py> {
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
    fn len(&self) -> usize {
        match self {
            Input::V4(a) => a.len(),
            Input::V6Bytes(a) => a.shape()[0],
            Input::V6Words(a) => a.shape()[0],
            Input::Parsed(_, n) => *n,
            Input::Buffers { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }
}

fn bad_item(e: BadItem) -> PyErr {
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
            Ok(())
        } else if let Ok(b) = item.cast::<PyBytes>() {
            decode_packed(i, b.as_bytes(), &mut mixed)
        } else if item.cast::<PyFloat>().is_ok_and(|f| f.value().is_nan()) {
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
            _ => {}
        }
    }
    Ok(Input::Parsed(mixed, n))
}

/// Classify `addrs`, asking `ipfib._inputs.canonical` to turn anything
/// else (other dtypes, pandas, pyarrow, iterables) into one of ours.
fn classify<'py>(addrs: &Bound<'py, PyAny>, on_error: OnError) -> PyResult<Input<'py>> {
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
        "lookup_many: unsupported input {}",
        addrs.get_type().name()?
    )))
}

/// Run the lookups of `input` into `sink`, without the GIL.
fn run<S: FamilySink + Send>(
    py: Python<'_>,
    snap: &Snapshot,
    input: &Input<'_>,
    on_error: OnError,
    with_len: bool,
    sink: &mut S,
) -> PyResult<()> {
    let r: Result<(), ManyError> = match input {
        Input::V4(a) => {
            let addrs = a.as_slice().map_err(slice_err)?;
            py.detach(|| Ok(answer_v4(snap, addrs, with_len, sink)?))
        }
        Input::V6Bytes(a) => {
            let raw = a.as_slice().map_err(slice_err)?;
            py.detach(|| {
                let decode =
                    |i: usize, m: &mut Mixed| decode_packed(i, &raw[i * 16..i * 16 + 16], m);
                answer_decoded(snap, raw.len() / 16, on_error, with_len, decode, sink)
            })
        }
        Input::V6Words(a) => {
            let raw = a.as_slice().map_err(slice_err)?;
            py.detach(|| {
                let decode = |i: usize, m: &mut Mixed| {
                    m.push_v6(i, (raw[2 * i] as u128) << 64 | raw[2 * i + 1] as u128);
                    Ok(())
                };
                answer_decoded(snap, raw.len() / 2, on_error, with_len, decode, sink)
            })
        }
        Input::Parsed(mixed, _) => py.detach(|| Ok(mixed.answer(snap, with_len, sink)?)),
        Input::Buffers {
            packed,
            offsets,
            data,
            nulls,
        } => {
            let offsets = offsets.as_slice().map_err(slice_err)?;
            let data = data.as_slice().map_err(slice_err)?;
            let nulls = nulls
                .as_ref()
                .map(|m| m.as_slice())
                .transpose()
                .map_err(slice_err)?;
            let packed = *packed;
            py.detach(|| {
                let decode = |i: usize, m: &mut Mixed| {
                    if nulls.is_some_and(|n| n.get(i).copied().unwrap_or(false)) {
                        return Ok(());
                    }
                    let (s, e) = (offsets[i], offsets[i + 1]);
                    let bytes = usize::try_from(s)
                        .ok()
                        .zip(usize::try_from(e).ok())
                        .and_then(|(s, e)| data.get(s..e))
                        .ok_or(BadItem {
                            index: i,
                            text: format!("offsets {s}..{e} outside the data"),
                        })?;
                    if packed {
                        decode_packed(i, bytes, m)
                    } else {
                        decode_text(i, bytes, m)
                    }
                };
                answer_decoded(
                    snap,
                    offsets.len().saturating_sub(1),
                    on_error,
                    with_len,
                    decode,
                    sink,
                )
            })
        }
    };
    r.map_err(|e| match e {
        ManyError::Bad(b) => bad_item(b),
        ManyError::Build(m) => {
            PyValueError::new_err(format!("ipfib: cannot compile the table: {m}"))
        }
    })
}

/// A numpy array of `n` copies of `v` (numpy's own allocation).
fn filled<T: numpy::Element + Copy + Default + PartialEq>(
    py: Python<'_>,
    n: usize,
    v: T,
) -> PyResult<Bound<'_, PyArray1<T>>> {
    let a = PyArray1::<T>::zeros(py, n, false);
    if v != T::default() {
        a.try_readwrite()
            .map_err(borrow_err)?
            .as_slice_mut()
            .map_err(slice_err)?
            .fill(v);
    }
    Ok(a)
}

fn borrow_err(e: numpy::BorrowError) -> PyErr {
    PyTypeError::new_err(e.to_string())
}

fn slice_err(e: numpy::AsSliceError) -> PyErr {
    PyTypeError::new_err(e.to_string())
}

/// `0` as a Python object: `lookup_many`'s default `default`.
pub fn zero() -> Py<PyAny> {
    Python::attach(|py| {
        0i64.into_pyobject(py)
            .map(|i| i.into_any().unbind())
            .unwrap_or_else(|e| match e {})
    })
}

/// Vectorised longest-prefix match (see `_ipfib.pyi`).
pub fn lookup_many<'py>(
    table: &Table,
    py: Python<'py>,
    addrs: &Bound<'py, PyAny>,
    default: Py<PyAny>,
    masked: bool,
    with_prefix_len: bool,
    errors: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let on_error = match errors {
        "raise" => OnError::Raise,
        "coerce" => OnError::Coerce,
        _ => {
            return Err(PyValueError::new_err(format!(
                "errors must be 'raise' or 'coerce', not {errors:?}"
            )))
        }
    };
    let input = classify(addrs, on_error)?;
    let n = input.len();
    if u32::try_from(n).is_err() {
        return Err(PyValueError::new_err(
            "lookup_many: at most 2^32 - 1 addresses per call",
        ));
    }
    let snap = table.live.snapshot();
    // Outputs are allocated by numpy, which asks for transparent huge
    // pages on large arrays: a fresh 80 MB result then costs a few hundred
    // page faults, not 20,000 (measured: a quarter of a 10M-address call).
    let lens = with_prefix_len.then(|| filled(py, n, -1i16)).transpose()?;
    let miss = masked.then(|| filled(py, n, true)).transpose()?;
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
    let default_int = default
        .bind(py)
        .cast::<pyo3::types::PyInt>()
        .ok()
        .filter(|_| !default.bind(py).is_instance_of::<PyBool>())
        .and_then(|i| i.extract::<i64>().ok());
    let values: Bound<'py, PyAny> = match (snap.ints(), default_int) {
        (Some(ints), Some(d)) => {
            let vals = filled(py, n, d)?;
            {
                let mut rw = vals.try_readwrite().map_err(borrow_err)?;
                let mut sink = IntSink::new(rw.as_slice_mut().map_err(slice_err)?, ints, d, extra);
                run(py, &snap, &input, on_error, with_prefix_len, &mut sink)?;
            }
            vals.into_any()
        }
        _ => {
            let mut slots = vec![NO_ROUTE; n];
            let v6_base = snap.v4.values.len() as u32;
            let mut sink = SlotSink::new(&mut slots, v6_base, extra);
            run(py, &snap, &input, on_error, with_prefix_len, &mut sink)?;
            let objs = slot_objects(py, &table.objects, &snap)?;
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
    match lens {
        Some(l) => Ok(PyTuple::new(py, [values, l])?.into_any()),
        None => Ok(values),
    }
}
