//! The Python `ipfib.Rib`: a multi-peer RIB (`ipfib_rib::Rib`) loaded from
//! an MRT RIB dump, with route lookups that answer the whole route (as the
//! collector's HTTP API does), `routes`, `peers` and `info`.
//! `lookup_many` is in `rib_many.rs`.

use crate::args::text_of;
use crate::load::{self, DamagedTableWarning, TableFileError};
use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_rib::attrs::{AS_CONFED_SET, AS_SET};
use ipfib_rib::mrt::{self, LoadReport, MrtError};
use ipfib_rib::{Match, PeerFilter, PeerInfo, Query, Route};
use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyList};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

/// Every route of every peer of an MRT RIB dump (see the stub `_ipfib.pyi`
/// for the documented Python API).
#[pyclass(frozen, module = "ipfib", name = "Rib")]
pub struct Rib {
    pub(crate) rib: ipfib_rib::Rib,
    path: PathBuf,
    report: LoadReport,
}

/// An address argument: text or an `ipaddress` object (not int, as for
/// `Table`), returned as given and as the RIB looks it up (IPv4-mapped
/// IPv6 addresses unmapped).
fn ip_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<IpAddr> {
    let text = text_of(obj)?;
    text.trim()
        .parse::<IpAddr>()
        .map_err(|_| PyValueError::new_err(format!("invalid {what} {text:?}")))
}

/// `prefix` of `routes`: `ADDR/LEN` text or an `ipaddress` network (host
/// bits set are an error), or an address alone (its host prefix).
fn prefix_arg(obj: &Bound<'_, PyAny>) -> PyResult<AnyPrefix> {
    let text = text_of(obj)?;
    // `::ffff:a.b.c.d/96+n` is the IPv4 prefix `a.b.c.d/n` (the mapped
    // rule lookups apply to addresses).
    ipfib_rib::target::parse_prefix_or_addr(text.trim())
        .map(ipfib_rib::target::fold_mapped)
        .map_err(|e| PyValueError::new_err(format!("invalid prefix {text:?}: {e}")))
}

/// The `peer=` argument: an int is a peer id, text or an `ipaddress`
/// object every peer with that address. A filter that names no peer of
/// the RIB is an error (a typo would otherwise answer "no route").
pub(crate) fn peer_arg(
    rib: &ipfib_rib::Rib,
    obj: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<PeerFilter>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let peers = rib.peers();
    if obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(
            "peer is a peer id (int) or a peer address, not a bool",
        ));
    }
    // An int, or anything with `__index__` that is not text (numpy
    // integers, e.g. a `peer` value from `lookup_many`'s result).
    let index = if obj.is_instance_of::<PyInt>() {
        Some(obj.clone())
    } else if obj.hasattr(intern!(obj.py(), "__index__"))?
        && !obj.is_instance_of::<pyo3::types::PyString>()
    {
        Some(obj.call_method0(intern!(obj.py(), "__index__"))?)
    } else {
        None
    };
    if let Some(obj) = index.as_ref() {
        let id = obj.extract::<i64>().unwrap_or(-1);
        return match u32::try_from(id).ok().filter(|&id| peers.get(id).is_some()) {
            Some(id) => Ok(Some(PeerFilter::Id(id))),
            None => Err(PyValueError::new_err(format!(
                "no peer with id {} (this RIB has ids 0 to {}; see peers())",
                obj.repr()?,
                i64::from(peers.count()) - 1
            ))),
        };
    }
    let a = ip_arg(obj, "peer address")
        .map(ipfib_rib::unmap)
        .map_err(|_| {
            PyValueError::new_err(format!(
                "peer {:?} is neither a peer id (int) nor an address",
                text_of(obj).unwrap_or_default()
            ))
        })?;
    if peers.all().any(|p| ipfib_rib::unmap(p.key.address) == a) {
        Ok(Some(PeerFilter::Address(a)))
    } else {
        Err(PyValueError::new_err(format!(
            "no peer with address {a} (see peers())"
        )))
    }
}

/// An MRT load error as a Python exception naming the file: missing files
/// are `FileNotFoundError`, other I/O `OSError`, the rest `TableFileError`.
fn mrt_err(e: MrtError) -> PyErr {
    match e {
        MrtError::Open(e) => load::to_py_err(e),
        other => TableFileError::new_err(other.to_string()),
    }
}

/// What a load skipped or where it stopped, one message each.
fn problems(path: &Path, r: &LoadReport) -> Vec<String> {
    let mut out: Vec<String> = r.errors.iter().map(|e| e.to_string()).collect();
    let skipped = r.bad_records + r.bad_entries;
    if skipped > r.errors.len() as u64 {
        out.push(format!(
            "{}: {} records and {} RIB entries skipped in all (the first {} shown)",
            path.display(),
            r.bad_records,
            r.bad_entries,
            r.errors.len()
        ));
    }
    for ((t, s), n) in &r.unsupported {
        out.push(format!(
            "{}: {n} MRT records of type {t} subtype {s} not read (they hold no unicast RIB)",
            path.display()
        ));
    }
    if let Some(d) = &r.damage {
        out.push(format!("{}: {d}; loaded what was complete", path.display()));
    }
    out
}

/// The AS path as the HTTP API shows it: sequences flat, each set
/// (`AS_SET`, `AS_CONFED_SET`) a nested list.
fn as_path<'py>(py: Python<'py>, r: &Route) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for s in r.attrs.as_path.segments() {
        if s.kind == AS_SET || s.kind == AS_CONFED_SET {
            out.append(PyList::new(py, s.asns)?)?;
        } else {
            for &a in s.asns {
                out.append(a)?;
            }
        }
    }
    Ok(out)
}

/// One route as a dict with the keys of the HTTP API's JSON (`ip` first
/// when given).
pub(crate) fn route_dict<'py>(
    py: Python<'py>,
    r: &Route,
    ip: Option<&IpAddr>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let a = &r.attrs;
    let peer = &r.peer.key;
    if let Some(ip) = ip {
        d.set_item(intern!(py, "ip"), ip.to_string())?;
    }
    d.set_item(intern!(py, "prefix"), r.prefix.to_string())?;
    d.set_item(intern!(py, "origin_asn"), a.origin_asn)?;
    d.set_item(intern!(py, "as_path"), as_path(py, r)?)?;
    d.set_item(intern!(py, "next_hop"), a.next_hop.map(|n| n.to_string()))?;
    d.set_item(intern!(py, "peer"), r.peer.id)?;
    d.set_item(intern!(py, "peer_address"), peer.address.to_string())?;
    d.set_item(intern!(py, "peer_asn"), peer.asn)?;
    d.set_item(
        intern!(py, "peer_bgp_id"),
        Ipv4Addr::from(peer.bgp_id).to_string(),
    )?;
    d.set_item(intern!(py, "rib"), peer.rib.as_str())?;
    d.set_item(
        intern!(py, "peer_type"),
        ipfib_rib::instance::peer_type_name(peer.peer_type),
    )?;
    let global = ipfib_rib::instance::is_global(peer.peer_type, peer.distinguisher);
    d.set_item(
        intern!(py, "rd"),
        (!global).then(|| ipfib_rib::instance::format_rd(peer.distinguisher)),
    )?;
    d.set_item(intern!(py, "path_id"), r.path_id)?;
    let communities = a
        .communities
        .iter()
        .map(|&c| format!("{}:{}", c >> 16, c & 0xffff));
    d.set_item(intern!(py, "communities"), PyList::new(py, communities)?)?;
    let large = a
        .large_communities
        .iter()
        .map(|l| format!("{}:{}:{}", l[0], l[1], l[2]));
    d.set_item(intern!(py, "large_communities"), PyList::new(py, large)?)?;
    d.set_item(intern!(py, "origin"), a.origin.as_str())?;
    d.set_item(intern!(py, "med"), a.med)?;
    d.set_item(intern!(py, "local_pref"), a.local_pref)?;
    d.set_item(intern!(py, "stale"), r.peer.stale)?;
    Ok(d)
}

/// One peer as a dict with the keys of the HTTP API's JSON.
fn peer_dict<'py>(py: Python<'py>, p: &PeerInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let down = p.down_since();
    d.set_item("id", p.id)?;
    d.set_item("session", p.session)?;
    d.set_item("peer_type", p.key.peer_type)?;
    d.set_item("distinguisher", p.key.distinguisher)?;
    d.set_item("address", p.key.address.to_string())?;
    d.set_item("asn", p.key.asn)?;
    d.set_item("bgp_id", Ipv4Addr::from(p.key.bgp_id).to_string())?;
    d.set_item("rib", p.key.rib.as_str())?;
    d.set_item("table_name", p.table_name())?;
    d.set_item("stale", p.stale)?;
    d.set_item("state", if down == 0 { "up" } else { "down" })?;
    d.set_item("up_since", p.up_since)?;
    d.set_item("down_since", (down != 0).then_some(down))?;
    let routes = if down == 0 { p.route_count() } else { 0 };
    d.set_item("routes", routes)?;
    Ok(d)
}

fn match_arg(m: &str) -> PyResult<Match> {
    match m {
        "exact" => Ok(Match::Exact),
        "longer" => Ok(Match::Longer),
        "shorter" => Ok(Match::Shorter),
        other => Err(PyValueError::new_err(format!(
            "match must be 'exact', 'longer' or 'shorter', not {other:?}"
        ))),
    }
}

#[pymethods]
impl Rib {
    #[classmethod]
    #[pyo3(signature = (path, *, strict = false))]
    fn from_mrt(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        path: PathBuf,
        strict: bool,
    ) -> PyResult<Self> {
        let (rib, loaded) = py
            .detach(|| {
                let rib = ipfib_rib::Rib::try_new()?;
                let loaded = mrt::load(&path, &rib);
                // Lookups go through the FIB, which its thread publishes
                // within about 1 ms of a change: wait for it once here, so
                // every route loaded is found from the first lookup on.
                rib.sync();
                Ok::<_, std::io::Error>((rib, loaded))
            })
            .map_err(|e| PyOSError::new_err(format!("cannot start the RIB's threads: {e}")))?;
        let report = loaded.map_err(mrt_err)?;
        if report.records == 0 {
            if let Some(d) = &report.damage {
                return Err(TableFileError::new_err(format!(
                    "{}: not an MRT file (no complete record): {d}",
                    path.display()
                )));
            }
        }
        let problems = problems(&path, &report);
        if !problems.is_empty() {
            let msg = problems.join("\n");
            if strict {
                return Err(TableFileError::new_err(msg));
            }
            let category = py.get_type::<DamagedTableWarning>();
            let msg = std::ffi::CString::new(msg.replace('\0', " "))
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
            PyErr::warn(py, &category, &msg, 2)?;
        }
        Ok(Rib { rib, path, report })
    }

    /// A RIB snapshot (`ipfib collect --state`, or [`Rib::save`]) loaded
    /// whole: every route answers at once.
    #[classmethod]
    fn open(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        path: PathBuf,
    ) -> PyResult<Self> {
        use ipfib_rib::snapshot::{self, SnapshotError};
        let rib = py
            .detach(|| {
                let (rib, _) = snapshot::load(&path)?;
                rib.sync();
                Ok::<_, SnapshotError>(rib)
            })
            .map_err(|e| match e {
                SnapshotError::Io(source) => load::to_py_err(ipfib_io::ReadError::Io {
                    path: path.clone(),
                    source,
                }),
                other => TableFileError::new_err(format!("{}: {other}", path.display())),
            })?;
        Ok(Rib {
            rib,
            path,
            report: LoadReport::default(),
        })
    }

    /// Write the RIB as a snapshot file (written beside it, then renamed
    /// over it).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| {
            let mut tmp = path.clone().into_os_string();
            tmp.push(".tmp");
            let tmp = PathBuf::from(tmp);
            let f = std::fs::File::create(&tmp)?;
            ipfib_rib::snapshot::write(&self.rib, &f)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        })
        .map_err(|source| {
            load::to_py_err(ipfib_io::ReadError::Io {
                path: path.clone(),
                source,
            })
        })
    }

    /// The chosen route for `addr` as a dict, or None.
    #[pyo3(signature = (addr, peer = None, nexthop = None))]
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        addr: &Bound<'py, PyAny>,
        peer: Option<Bound<'py, PyAny>>,
        nexthop: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let ip = ip_arg(addr, "IP address")?;
        let query = Query {
            peer: peer_arg(&self.rib, peer.as_ref())?,
            next_hop: nexthop
                .filter(|n| !n.is_none())
                .map(|n| ip_arg(&n, "next hop"))
                .transpose()?
                .map(|n| AnyAddr::unmapped(n).to_ip()),
            ..Query::default()
        };
        self.rib
            .lookup(AnyAddr::unmapped(ip), &query)
            .map(|r| route_dict(py, &r, Some(&ip)))
            .transpose()
    }

    /// Routes of `prefix` and, per `match`, of more or less specific ones.
    #[pyo3(signature = (prefix, r#match = "exact", limit = None))]
    fn routes<'py>(
        &self,
        py: Python<'py>,
        prefix: &Bound<'py, PyAny>,
        r#match: &str,
        limit: Option<i64>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let p = prefix_arg(prefix)?;
        let m = match_arg(r#match)?;
        let limit = match limit {
            None => usize::MAX,
            Some(l) => usize::try_from(l)
                .map_err(|_| PyValueError::new_err(format!("limit must be 0 or more, not {l}")))?,
        };
        // `longer` walks every prefix of the RIB: without the GIL. The
        // global instance's routes, as lookups answer (and the HTTP API).
        let found = py.detach(|| self.rib.routes_matching_in(&p, m, limit, &Query::default()));
        found.iter().map(|r| route_dict(py, r, None)).collect()
    }

    /// Every peer the RIB knows, in id order.
    fn peers<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.rib.peers().all().map(|p| peer_dict(py, &p)).collect()
    }

    /// Vectorised lookups for flow enrichment (see `_ipfib.pyi`).
    #[pyo3(signature = (addrs, peer = None, nexthops = None, *, errors = "raise", rpki = None, threads = 1))]
    #[allow(clippy::too_many_arguments)]
    fn lookup_many<'py>(
        &self,
        py: Python<'py>,
        addrs: &Bound<'py, PyAny>,
        peer: Option<Bound<'py, PyAny>>,
        nexthops: Option<Bound<'py, PyAny>>,
        errors: &str,
        rpki: Option<PyRef<'py, crate::rpki::Vrps>>,
        threads: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let on_error = crate::batch::OnError::parse(errors)?;
        let peer = peer_arg(&self.rib, peer.as_ref())?;
        crate::rib_many::lookup_many(
            &self.rib,
            py,
            addrs,
            peer,
            nexthops.as_ref(),
            on_error,
            rpki.as_deref(),
            threads,
        )
    }

    /// What `from_mrt` read (a fresh dict each call).
    #[getter]
    fn load_report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = &self.report;
        let d = PyDict::new(py);
        d.set_item("path", self.path.display().to_string())?;
        d.set_item("records", r.records)?;
        d.set_item("peers", r.peers)?;
        d.set_item("routes", r.routes)?;
        d.set_item("routes_dropped", r.routes_dropped)?;
        d.set_item("prefixes_v4", r.prefixes_v4)?;
        d.set_item("prefixes_v6", r.prefixes_v6)?;
        d.set_item("superseded_peers", r.superseded_peers)?;
        d.set_item("bytes", r.bytes)?;
        d.set_item("damaged_at", r.damaged_at())?;
        d.set_item("damage", r.damage.as_ref().map(|d| d.to_string()))?;
        let unsupported = PyDict::new(py);
        for ((t, s), n) in &r.unsupported {
            unsupported.set_item((*t, *s), *n)?;
        }
        d.set_item("unsupported", unsupported)?;
        d.set_item("bad_records", r.bad_records)?;
        d.set_item("bad_entries", r.bad_entries)?;
        let errors: Vec<String> = r.errors.iter().map(|e| e.to_string()).collect();
        d.set_item("errors", errors)?;
        d.set_item("attr_decodes", r.attr_decodes)?;
        d.set_item("seconds", r.elapsed.as_secs_f64())?;
        Ok(d)
    }

    /// The RIB as it is now: peers, routes, prefixes, interned attributes.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let rib = &self.rib;
        let (v4, v6) = py.detach(|| {
            let peers = rib.peers();
            let (mut v4, mut v6) = (0u64, 0u64);
            rib.for_each_prefix(|r| {
                if r.iter().any(|e| peers.is_live(e.peer)) {
                    match r.prefix {
                        AnyPrefix::V4(_) => v4 += 1,
                        AnyPrefix::V6(_) => v6 += 1,
                    }
                }
            });
            (v4, v6)
        });
        let (sets, paths, communities, large) = rib.attrs().counts();
        let d = PyDict::new(py);
        d.set_item("peers", rib.peers().count())?;
        d.set_item("peers_up", rib.peers().all().filter(|p| p.is_up()).count())?;
        d.set_item("routes", rib.route_count())?;
        d.set_item("prefixes", v4 + v6)?;
        d.set_item("prefixes_v4", v4)?;
        d.set_item("prefixes_v6", v6)?;
        d.set_item("attr_sets", sets)?;
        d.set_item("as_paths", paths)?;
        d.set_item("community_lists", communities)?;
        d.set_item("large_community_lists", large)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let r = &self.report;
        format!(
            "<ipfib.Rib: {} peers, {} routes, {} IPv4 + {} IPv6 prefixes from {}>",
            self.rib.peers().count(),
            self.rib.route_count(),
            r.prefixes_v4,
            r.prefixes_v6,
            self.path.display()
        )
    }
}
