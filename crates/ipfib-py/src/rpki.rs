//! `ipfib.Vrps`: VRP and ASPA sets for route origin validation (RFC 6811)
//! and ASPA path verification, vectorised for data work; and the states
//! `Rib.lookup_many(..., rpki=)` adds (see `_ipfib.pyi`).

use std::path::PathBuf;
use std::sync::Arc;

use ipfib::prefix::{AnyPrefix, HostBits};
use ipfib_rib::{AttrSet, Route};
use ipfib_rpki::{route_origin, Aspa, AspaStatus, Aspas, RouteOrigin, Rov, Slurm, Vrp, VrpSet};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::load::TableFileError;

/// ROV state codes of `validate_many` and `Rib.lookup_many(rpki=)`:
/// the index into `Vrps.STATES`.
pub const ROV_STATES: [&str; 4] = ["not-found", "valid", "invalid-as", "invalid-length"];
/// The code of a row with no route (`found` is False).
pub const NO_ROUTE: u8 = 255;

pub fn rov_code(r: Rov) -> u8 {
    match r {
        Rov::NotFound => 0,
        Rov::Valid => 1,
        Rov::InvalidOrigin => 2,
        Rov::InvalidLength => 3,
    }
}

pub fn aspa_code(a: AspaStatus) -> u8 {
    match a {
        AspaStatus::Unknown => 0,
        AspaStatus::Valid => 1,
        AspaStatus::Invalid => 2,
    }
}

/// VRPs and ASPAs, immutable once made (share it between threads freely).
#[pyclass(frozen, module = "ipfib", name = "Vrps")]
pub struct Vrps {
    pub vrps: Arc<ipfib_rpki::Vrps>,
    pub aspas: Arc<Aspas>,
}

impl Vrps {
    /// Both states of a RIB route (its origin per RFC 6811, the speaker's
    /// AS for an empty path).
    pub fn route_codes(&self, r: &Route) -> (u8, u8) {
        let (rov, aspa) = status(&self.vrps, &self.aspas, &r.prefix, &r.attrs, r.peer.key.asn);
        (rov_code(rov), aspa_code(aspa))
    }
}

fn status(
    vrps: &ipfib_rpki::Vrps,
    aspas: &Aspas,
    prefix: &AnyPrefix,
    attrs: &AttrSet,
    speaker: u32,
) -> (Rov, AspaStatus) {
    let segs = || attrs.as_path.segments().map(|s| (s.kind, s.asns));
    (
        vrps.validate(prefix, route_origin(segs(), speaker)),
        aspas.verify_upstream(segs()),
    )
}

/// A path-like or a list of them.
fn paths(obj: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    if let Ok(p) = obj.extract::<PathBuf>() {
        return Ok(vec![p]);
    }
    obj.try_iter()?.map(|p| p?.extract::<PathBuf>()).collect()
}

fn load_err(e: ipfib_rpki::LoadError) -> PyErr {
    TableFileError::new_err(e.to_string())
}

fn prefix_of(text: &str) -> PyResult<AnyPrefix> {
    AnyPrefix::parse(text, HostBits::Reject)
        .map_err(|e| PyValueError::new_err(format!("prefix {text:?}: {e}")))
}

/// An origin argument: an AS number, or None (an AS_SET origin, "NONE").
fn origin_of(obj: &Bound<'_, PyAny>) -> PyResult<RouteOrigin> {
    if obj.is_none() {
        return Ok(RouteOrigin::None);
    }
    let n: i64 = obj
        .extract()
        .map_err(|_| PyTypeError::new_err("origin must be an AS number or None"))?;
    u32::try_from(n)
        .map(RouteOrigin::As)
        .map_err(|_| PyValueError::new_err(format!("origin {n} is not a 32-bit AS number")))
}

fn rov_name(r: Rov) -> &'static str {
    ROV_STATES[rov_code(r) as usize]
}

#[pymethods]
impl Vrps {
    /// `(not-found, valid, invalid-as, invalid-length)`: the names of
    /// `validate_many`'s codes 0..3.
    #[classattr]
    const STATES: (&'static str, &'static str, &'static str, &'static str) =
        ("not-found", "valid", "invalid-as", "invalid-length");
    /// `(unknown, valid, invalid)`: ASPA codes 0..2.
    #[classattr]
    const ASPA_STATES: (&'static str, &'static str, &'static str) = ("unknown", "valid", "invalid");

    /// VRPs (and ASPAs) from validator output files (rpki-client or
    /// Routinator JSON, Routinator CSV), SLURM files applied on top.
    #[classmethod]
    #[pyo3(signature = (path, *, slurm = None))]
    fn from_file(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        slurm: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let files = paths(path)?;
        let slurms = slurm.map(paths).transpose()?.unwrap_or_default();
        py.detach(|| {
            let mut vrps = VrpSet::new();
            let mut all = Vec::new();
            for f in &files {
                let p = ipfib_rpki::load_payloads(f).map_err(load_err)?;
                vrps.extend(p.vrps);
                all.extend(p.aspas);
            }
            let (_, mut aspas) = ipfib_rpki::Payloads {
                vrps: Vec::new(),
                aspas: all,
            }
            .into_sets();
            let slurms = slurms
                .iter()
                .map(|f| Slurm::load(f))
                .collect::<Result<Vec<_>, _>>()
                .map_err(load_err)?;
            Slurm::apply_all(&slurms, &mut vrps, &mut aspas);
            Ok(Vrps {
                vrps: Arc::new(vrps.snapshot()),
                aspas: Arc::new(aspas),
            })
        })
    }

    /// From records: `vrps` of `(prefix, max_length, asn)`, `aspas` of
    /// `(customer, [providers])`.
    #[classmethod]
    #[pyo3(signature = (vrps, aspas = None))]
    fn from_records(
        _cls: &Bound<'_, PyType>,
        vrps: &Bound<'_, PyAny>,
        aspas: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut set = VrpSet::new();
        for (i, item) in vrps.try_iter()?.enumerate() {
            let (p, max, asn): (String, u8, u32) = item?.extract().map_err(|e| {
                PyValueError::new_err(format!("vrps[{i}]: (prefix, max_length, asn): {e}"))
            })?;
            let v = Vrp::new(prefix_of(&p)?, max, asn)
                .map_err(|e| PyValueError::new_err(format!("vrps[{i}]: {e}")))?;
            set.insert(v);
        }
        let mut a = Aspas::new();
        if let Some(list) = aspas {
            for (i, item) in list.try_iter()?.enumerate() {
                let (c, ps): (u32, Vec<u32>) = item?.extract().map_err(|e| {
                    PyValueError::new_err(format!("aspas[{i}]: (customer, [providers]): {e}"))
                })?;
                a.insert(Aspa::new(c, ps));
            }
        }
        Ok(Vrps {
            vrps: Arc::new(set.snapshot()),
            aspas: Arc::new(a),
        })
    }

    /// The ROV state of a route: `"valid"`, `"invalid-as"`,
    /// `"invalid-length"` or `"not-found"`. `origin` None is an AS_SET
    /// origin (RFC 6811's NONE).
    fn validate(&self, prefix: &str, origin: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        Ok(rov_name(
            self.vrps.validate(&prefix_of(prefix)?, origin_of(origin)?),
        ))
    }

    /// ROV state codes (uint8, names in `Vrps.STATES`) of `prefixes` (a
    /// sequence of prefix strings) originated by `origins` (a sequence or
    /// array of AS numbers, same length; None or a negative number: an
    /// AS_SET origin).
    fn validate_many<'py>(
        &self,
        py: Python<'py>,
        prefixes: &Bound<'py, PyAny>,
        origins: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let mut ps: Vec<AnyPrefix> = Vec::new();
        for (i, p) in prefixes.try_iter()?.enumerate() {
            let p = p?;
            let text: std::borrow::Cow<'_, str> = p
                .extract()
                .map_err(|_| PyTypeError::new_err(format!("prefixes[{i}] is not a string")))?;
            ps.push(
                prefix_of(&text).map_err(|e| {
                    PyValueError::new_err(format!("prefixes[{i}]: {}", e.value(py)))
                })?,
            );
        }
        let os: Vec<RouteOrigin> = if let Ok(a) = origins.extract::<PyReadonlyArray1<'_, i64>>() {
            // as_array: strided arrays (a[::2]) too.
            a.as_array()
                .iter()
                .map(|&n| int_origin(n))
                .collect::<PyResult<_>>()?
        } else if let Ok(a) = origins.extract::<PyReadonlyArray1<'_, u32>>() {
            a.as_array().iter().map(|&n| RouteOrigin::As(n)).collect()
        } else {
            origins
                .try_iter()?
                .map(|o| {
                    let o = o?;
                    if o.is_none() {
                        return Ok(RouteOrigin::None);
                    }
                    int_origin(o.extract()?)
                })
                .collect::<PyResult<_>>()?
        };
        if os.len() != ps.len() {
            return Err(PyValueError::new_err(format!(
                "{} prefixes but {} origins: one origin per prefix",
                ps.len(),
                os.len()
            )));
        }
        let vrps = Arc::clone(&self.vrps);
        let codes: Vec<u8> = py.detach(move || {
            let mut cur = ipfib_rpki::Cursor::default();
            ps.iter()
                .zip(&os)
                .map(|(p, o)| rov_code(vrps.validate_at(p, *o, &mut cur)))
                .collect()
        });
        Ok(PyArray1::from_vec(py, codes))
    }

    /// Every VRP covering `prefix`, longest first: `(prefix, max_length, asn)`.
    fn covering(&self, prefix: &str) -> PyResult<Vec<(String, u8, u32)>> {
        Ok(self
            .vrps
            .covering(&prefix_of(prefix)?)
            .iter()
            .map(|v| (v.prefix.to_string(), v.max_len, v.asn))
            .collect())
    }

    /// The ASPA status (`"valid"`, `"invalid"`, `"unknown"`) of an AS path
    /// as received (neighbour first, origin last): a list of AS numbers,
    /// an inner list being an AS_SET.
    fn verify_path(&self, path: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        let mut segments: Vec<(u8, Vec<u32>)> = Vec::new();
        for item in path.try_iter()? {
            let item = item?;
            if let Ok(a) = item.extract::<u32>() {
                match segments.last_mut() {
                    Some((ipfib_rpki::AS_SEQUENCE, v)) => v.push(a),
                    _ => segments.push((ipfib_rpki::AS_SEQUENCE, vec![a])),
                }
            } else {
                let set: Vec<u32> = item.extract().map_err(|_| {
                    PyTypeError::new_err("a path holds AS numbers and lists of them")
                })?;
                segments.push((ipfib_rpki::AS_SET, set));
            }
        }
        Ok(self
            .aspas
            .verify_upstream(segments.iter().map(|(k, v)| (*k, &v[..])))
            .as_str())
    }

    /// VRPs held.
    fn __len__(&self) -> usize {
        self.vrps.len()
    }

    /// ASPAs held.
    #[getter]
    fn aspa_count(&self) -> usize {
        self.aspas.len()
    }

    fn __repr__(&self) -> String {
        let (v4, v6) = self.vrps.prefix_counts();
        format!(
            "<ipfib.Vrps: {} VRPs over {v4} IPv4 + {v6} IPv6 prefixes, {} ASPAs>",
            self.vrps.len(),
            self.aspas.len()
        )
    }
}

fn int_origin(n: i64) -> PyResult<RouteOrigin> {
    if n < 0 {
        return Ok(RouteOrigin::None);
    }
    u32::try_from(n)
        .map(RouteOrigin::As)
        .map_err(|_| PyValueError::new_err(format!("origin {n} is not a 32-bit AS number")))
}
