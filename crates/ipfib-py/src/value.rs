//! Route values as the Rust side keeps them, and their way back to Python.
//!
//! The route table interns values (`Eq + Hash`) and must be usable without
//! the GIL, so it cannot hold Python objects directly. Python `int`s that
//! fit an `i64` and `str`s, of exactly those types (`bool`, an `IntEnum`
//! or a `str` subclass stays the object it is), are kept as Rust data (what table files and
//! nearly every user hold: ASNs, next hops, names); any other hashable
//! object is interned once in the table's [`Objects`] registry and the
//! route keeps its index. A table whose values are all `Int` answers
//! `lookup_many` with an integer array without touching Python objects.

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyInt, PyString, PyTuple};
use std::sync::{Arc, Mutex};

/// One route's value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    Int(i64),
    Str(Arc<str>),
    /// Index into the table's [`Objects`].
    Obj(u32),
    /// Several fields of one MaxMind DB record (`Table.from_file(...,
    /// value=[...])`): a tuple in Python, `None` where the record lacks
    /// the field.
    Fields(Arc<[Option<Value>]>),
}

impl Value {
    /// A value read from a table file: a canonical decimal integer (no sign,
    /// no leading zero) that fits an `i64` becomes `Int`, so that
    /// `str(value)` gives back exactly what the file (and `ipfib lookup`)
    /// says; anything else stays text.
    pub fn from_file_text(text: String) -> Value {
        let canonical = !text.is_empty()
            && text.bytes().all(|b| b.is_ascii_digit())
            && (text == "0" || !text.starts_with('0'));
        match text.parse::<i64>() {
            Ok(i) if canonical => Value::Int(i),
            _ => Value::Str(Arc::from(text)),
        }
    }
}

/// Python objects used as values that are neither `int` (in `i64`) nor
/// `str`, interned by type and Python equality. Append-only: an object stays
/// registered after its last route is removed (a table only grows by the
/// distinct objects ever inserted).
///
/// Locking rule (why this cannot deadlock): `list`'s mutex is held only
/// around pure Rust work (a length, a push, a `clone_ref`, i.e. an
/// incref); no Python code runs while it is held. `index` is a Python
/// dict, used only with the GIL held and with no Rust lock held, because
/// every operation on it hashes and compares the object, running user
/// `__hash__` / `__eq__`, which may release the GIL (letting any other
/// thread run) or call back into this very table. So a holder of the mutex
/// never waits for the GIL or for anything else, and never re-enters: with
/// the GIL a critical section cannot even be interrupted by another Python
/// thread, so the mutex is never contended (it is there because a frozen
/// `Table` must be `Sync`). It is still taken with `lock_py_attached`,
/// which detaches from the interpreter if it ever has to wait.
///
/// Interning is a reserve-then-publish: look the object up; on a miss push
/// it (under the mutex) and `setdefault` its new index in the dict. If an
/// equal object was registered meanwhile (another thread ran while this
/// one's `__hash__` / `__eq__` had let go of the GIL), `setdefault` returns
/// that object's index and the slot just pushed stays unused: equal
/// objects always get one index, and a lost race costs one slot.
pub struct Objects {
    list: Mutex<Vec<Py<PyAny>>>,
    index: Py<PyDict>,
}

impl Objects {
    pub fn new(py: Python<'_>) -> Self {
        Objects {
            list: Mutex::new(Vec::new()),
            index: PyDict::new(py).unbind(),
        }
    }

    /// The value for a Python object (interning it if needed).
    pub fn value_of(&self, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
        // Exact types only: a subclass (`bool`, an `IntEnum`, a `str`
        // subclass) is kept as the object it is, so a route answers the
        // type it was given.
        if obj.is_exact_instance_of::<PyInt>() {
            if let Ok(i) = obj.extract::<i64>() {
                return Ok(Value::Int(i));
            }
        }
        if let Ok(s) = obj.cast_exact::<PyString>() {
            return Ok(Value::Str(Arc::from(&*s.to_cow()?)));
        }
        let py = obj.py();
        if obj.hash().is_err() {
            return Err(PyTypeError::new_err(format!(
                "route values must be hashable, got {}",
                obj.get_type().name()?
            )));
        }
        // Keyed by type and object: Python calls `True`, `1.0` and
        // `Decimal(1)` equal (with equal hashes), but a route given `True`
        // must answer `True`, not whichever equal object came first.
        let key = PyTuple::new(py, [obj.get_type().into_any(), obj.clone()])?;
        // Python code may run here (no lock held).
        let index = self.index.bind(py);
        if let Some(i) = index.get_item(&key)? {
            return Ok(Value::Obj(i.extract()?));
        }
        // Pure Rust under the lock: reserve the next slot.
        let reserved = {
            let mut list = self.list.lock_py_attached(py).map_err(poisoned)?;
            let i = u32::try_from(list.len())
                .map_err(|_| PyTypeError::new_err("too many distinct object values"))?;
            list.push(obj.clone().unbind());
            i
        };
        // Python code may run here again (no lock held): publish the slot,
        // or take the one an equal object got meanwhile.
        match index.call_method1(intern!(py, "setdefault"), (key, reserved)) {
            Ok(i) => Ok(Value::Obj(i.extract()?)),
            Err(e) => {
                // `__hash__` / `__eq__` raised: nothing refers to the
                // reserved slot, so let go of the object it keeps.
                // The object leaves the list under the lock and is dropped
                // after it (a decref can run Python code).
                let freed = {
                    let mut list = self.list.lock_py_attached(py).map_err(poisoned)?;
                    list.get_mut(reserved as usize)
                        .map(|slot| std::mem::replace(slot, py.None()))
                };
                drop(freed);
                Err(e)
            }
        }
    }

    /// The Python object for a value.
    pub fn to_py(&self, py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
        Ok(match v {
            Value::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
            Value::Str(s) => PyString::new(py, s).into_any().unbind(),
            Value::Obj(i) => {
                // Pure Rust under the lock: an incref.
                let list = self.list.lock_py_attached(py).map_err(poisoned)?;
                match list.get(*i as usize) {
                    Some(o) => o.clone_ref(py),
                    None => py.None(),
                }
            }
            Value::Fields(items) => {
                let items = items
                    .iter()
                    .map(|v| match v {
                        Some(v) => self.to_py(py, v),
                        None => Ok(py.None()),
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                PyTuple::new(py, items)?.into_any().unbind()
            }
        })
    }
}

/// A lock was poisoned by a panic in another thread (cannot happen: no code
/// holding these locks panics; reported rather than trusted).
pub fn poisoned<T>(_: T) -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err("ipfib: internal lock poisoned")
}
