//! The live RPKI data of a collector: any number of sources (RTR caches,
//! files), SLURM exceptions on top, published as one immutable
//! [`Snapshot`] that readers load without locks.
//!
//! A source's update replaces that source's sets; the snapshot is then
//! rebuilt from the union of every source (VRPs: a set union; ASPAs: a
//! customer's providers from every source merged), with the SLURM
//! exceptions applied, and swapped in. Route statuses are not stored: a
//! route's ROV and ASPA state is computed from the current snapshot when
//! it is shown, so it can never be stale (docs/architecture.md, "RPKI").

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use arc_swap::ArcSwap;

use crate::aspa::{Aspa, Aspas};
use crate::files::{load_payloads, LoadError, Slurm};
use crate::rtr::{Event, RtrClient, RtrOptions};
use crate::vrp::{VrpSet, Vrps};

/// Where one source stands.
#[derive(Clone, Debug)]
pub struct SourceStatus {
    /// `rtr://host:port` or the file's path.
    pub name: String,
    pub vrps: usize,
    pub aspas: usize,
    /// `"loaded"` (a file), `"connecting"` (no data yet), `"synced"`
    /// (data in use), `"expired"` (data dropped after the expire interval).
    pub state: &'static str,
    /// The last connection or protocol problem, cleared by fresh data.
    pub problem: Option<String>,
    /// Session id and serial of the last End of Data (RTR).
    pub serial: Option<(u16, u32)>,
    pub version: Option<u8>,
    /// When its data last changed.
    pub updated: Option<SystemTime>,
}

/// The published RPKI data.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub vrps: Arc<Vrps>,
    pub aspas: Arc<Aspas>,
    pub sources: Vec<SourceStatus>,
    /// Counts publications, from 1 (0: nothing published yet).
    pub generation: u64,
    /// How long the last rebuild took, seconds.
    pub build_seconds: f64,
}

struct Source {
    status: SourceStatus,
    vrps: VrpSet,
    aspas: Aspas,
}

/// Sources, exceptions and the published snapshot.
pub struct Live {
    current: ArcSwap<Snapshot>,
    sources: Mutex<Vec<Source>>,
    slurm: Vec<Slurm>,
    clients: Mutex<Vec<RtrClient>>,
}

impl Live {
    /// An empty set with `slurm` exceptions applied to every publication.
    pub fn new(slurm: Vec<Slurm>) -> Arc<Live> {
        Arc::new(Live {
            current: ArcSwap::from_pointee(Snapshot::default()),
            sources: Mutex::new(Vec::new()),
            slurm,
            clients: Mutex::new(Vec::new()),
        })
    }

    /// The current snapshot.
    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    fn add_source(&self, name: String, state: &'static str) -> usize {
        let mut s = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        s.push(Source {
            status: SourceStatus {
                name,
                vrps: 0,
                aspas: 0,
                state,
                problem: None,
                serial: None,
                version: None,
                updated: None,
            },
            vrps: VrpSet::new(),
            aspas: Aspas::new(),
        });
        s.len() - 1
    }

    /// Adds a validator's output file (JSON or CSV) as a source.
    pub fn add_file(&self, path: PathBuf) -> Result<(), LoadError> {
        let (vrps, aspas) = load_payloads(&path)?.into_sets();
        let i = self.add_source(path.display().to_string(), "loaded");
        self.update(i, |s| {
            s.vrps = vrps;
            s.aspas = aspas;
            s.status.updated = Some(SystemTime::now());
        });
        Ok(())
    }

    /// Starts an RTR session to `addr` as a source.
    pub fn add_rtr(self: &Arc<Self>, addr: String, opts: RtrOptions) {
        let i = self.add_source(format!("rtr://{addr}"), "connecting");
        let weak = Arc::downgrade(self);
        let client = RtrClient::spawn(addr, opts, move |ev| {
            let Some(live) = weak.upgrade() else { return };
            match ev {
                Event::Data {
                    vrps,
                    aspas,
                    session,
                    serial,
                    version,
                } => {
                    // A refresh that brought nothing new (same session and
                    // serial): the published data stands, no rebuild.
                    let unchanged = live
                        .with_status(i, |st| {
                            let same = st.serial == Some((session, serial)) && st.state == "synced";
                            if same {
                                st.problem = None;
                            }
                            same
                        })
                        .unwrap_or(false);
                    if !unchanged {
                        live.update(i, |s| {
                            s.vrps.clone_from(vrps);
                            s.aspas.clone_from(aspas);
                            s.status.state = "synced";
                            s.status.problem = None;
                            s.status.serial = Some((session, serial));
                            s.status.version = Some(version);
                            s.status.updated = Some(SystemTime::now());
                        });
                    }
                }
                Event::Expired => live.update(i, |s| {
                    s.vrps.clear();
                    s.aspas.clear();
                    s.status.state = "expired";
                    s.status.serial = None;
                    s.status.updated = Some(SystemTime::now());
                }),
                Event::Problem(p) => {
                    live.with_status(i, |st| st.problem = Some(p));
                }
                Event::Connected { version } => {
                    live.with_status(i, |st| st.version = Some(version));
                }
            }
        });
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(client);
    }

    /// Edits a source's status (not its data) and republishes the
    /// statuses beside the data as it is (under the sources' lock, as
    /// [`Live::update`] publishes: one cannot undo the other).
    fn with_status<R>(&self, i: usize, edit: impl FnOnce(&mut SourceStatus) -> R) -> Option<R> {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        let r = sources.get_mut(i).map(|s| edit(&mut s.status));
        let statuses = sources.iter().map(|s| s.status.clone()).collect();
        let cur = self.load();
        self.current.store(Arc::new(Snapshot {
            vrps: Arc::clone(&cur.vrps),
            aspas: Arc::clone(&cur.aspas),
            sources: statuses,
            generation: cur.generation,
            build_seconds: cur.build_seconds,
        }));
        r
    }

    /// Edits source `i`, then rebuilds and publishes the union.
    fn update(&self, i: usize, edit: impl FnOnce(&mut Source)) {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = sources.get_mut(i) {
            edit(s);
            s.status.vrps = s.vrps.len();
            s.status.aspas = s.aspas.len();
        }
        let t = Instant::now();
        let mut union = VrpSet::new();
        let mut providers: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for s in sources.iter() {
            for v in s.vrps.iter() {
                union.insert(*v);
            }
            for a in s.aspas.to_vec() {
                providers.entry(a.customer).or_default().extend(a.providers);
            }
        }
        let mut aspas: Aspas = providers
            .into_iter()
            .map(|(c, p)| Aspa::new(c, p))
            .collect();
        for x in &self.slurm {
            x.apply(&mut union, &mut aspas);
        }
        let vrps = union.snapshot();
        let statuses = sources.iter().map(|s| s.status.clone()).collect();
        let generation = self.load().generation + 1;
        self.current.store(Arc::new(Snapshot {
            vrps: Arc::new(vrps),
            aspas: Arc::new(aspas),
            sources: statuses,
            generation,
            build_seconds: t.elapsed().as_secs_f64(),
        }));
    }

    /// Stops every RTR session.
    pub fn stop(&self) {
        let clients = std::mem::take(&mut *self.clients.lock().unwrap_or_else(|e| e.into_inner()));
        for c in clients {
            c.stop();
        }
    }
}
