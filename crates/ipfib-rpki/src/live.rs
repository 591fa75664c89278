//! The live RPKI data of a collector: any number of sources (RTR caches,
//! files, sets given by an embedding program), SLURM exceptions on top,
//! published as one immutable [`Snapshot`] that readers load without locks.
//!
//! The published VRPs are the union of every source's, with the SLURM
//! files applied in order (each file's filters, then its assertions, RFC
//! 8416 §4); ASPAs likewise (a customer's providers from every source
//! merged). A source's whole new set (a file, an RTR Reset Query's answer)
//! rebuilds the snapshot from the union; a source's changes (an RTR
//! Serial Query's answer) are applied to the previous snapshot by one
//! merge of its sorted arrays ([`Vrps::with_changes`]), the union kept as
//! a count per VRP of the sources holding it. Route statuses are not
//! stored: a route's ROV and ASPA state is computed from the current
//! snapshot when it is shown, so it can never be stale
//! (docs/architecture.md, "RPKI").

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use arc_swap::ArcSwap;

use crate::aspa::{Aspa, Aspas};
use crate::files::{load_payloads, LoadError, Slurm};
use crate::rtr::{Event, RtrClient, RtrOptions};
use crate::vrp::{Vrp, VrpSet, Vrps};

/// Where one source stands.
#[derive(Clone, Debug)]
pub struct SourceStatus {
    /// `rtr://host:port`, the file's path, or the name given.
    pub name: String,
    pub vrps: usize,
    pub aspas: usize,
    /// `"loaded"` (a file or a given set), `"connecting"` (no data yet),
    /// `"synced"` (data in use), `"expired"` (data dropped after the
    /// expire interval).
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
    /// How long the last publication took to build, seconds.
    pub build_seconds: f64,
}

struct Source {
    status: SourceStatus,
    vrps: VrpSet,
    aspas: Aspas,
}

/// What the sources' lock guards: the sources, and the union of their
/// VRPs as a count of the sources holding each.
#[derive(Default)]
struct Sources {
    list: Vec<Source>,
    union: hashbrown::HashMap<Vrp, u32>,
}

/// Sources, exceptions and the published snapshot.
pub struct Live {
    current: ArcSwap<Snapshot>,
    sources: Mutex<Sources>,
    slurm: Vec<Slurm>,
    clients: Mutex<Vec<RtrClient>>,
}

impl Live {
    /// An empty set with `slurm` exceptions applied to every publication.
    pub fn new(slurm: Vec<Slurm>) -> Arc<Live> {
        Arc::new(Live {
            current: ArcSwap::from_pointee(Snapshot::default()),
            sources: Mutex::new(Sources::default()),
            slurm,
            clients: Mutex::new(Vec::new()),
        })
    }

    /// The current snapshot.
    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sources> {
        self.sources.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add_source(&self, name: String, state: &'static str) -> usize {
        let mut s = self.lock();
        s.list.push(Source {
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
        s.list.len() - 1
    }

    /// Adds a validator's output file (JSON or CSV) as a source.
    pub fn add_file(&self, path: PathBuf) -> Result<(), LoadError> {
        let (vrps, aspas) = load_payloads(&path)?.into_sets();
        self.add_set(path.display().to_string(), vrps, aspas);
        Ok(())
    }

    /// Adds a source holding `vrps` and `aspas` (an embedding program's
    /// own data); returns its index for [`Live::change_set`].
    pub fn add_set(&self, name: String, vrps: VrpSet, aspas: Aspas) -> usize {
        let i = self.add_source(name, "loaded");
        self.replace(i, |s| {
            s.vrps = vrps;
            s.aspas = aspas;
            s.status.updated = Some(SystemTime::now());
        });
        i
    }

    /// Changes the VRPs of source `i` (from [`Live::add_set`]): `removed`
    /// taken out, then `added` put in; published incrementally.
    pub fn change_set(&self, i: usize, added: &[Vrp], removed: &[Vrp]) {
        self.change(i, added, removed, None, |st| {
            st.updated = Some(SystemTime::now());
        });
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
                    changes,
                    session,
                    serial,
                    version,
                } => {
                    let synced = |st: &mut SourceStatus| {
                        st.state = "synced";
                        st.problem = None;
                        st.serial = Some((session, serial));
                        st.version = Some(version);
                        st.updated = Some(SystemTime::now());
                    };
                    let unchanged = live
                        .with_status(i, |st| {
                            st.state == "synced"
                                && st.serial == Some((session, serial))
                                && changes
                                    .is_some_and(|c| c.added.is_empty() && c.removed.is_empty())
                        })
                        .unwrap_or(false);
                    match changes {
                        // A refresh that brought nothing: the data stands.
                        Some(_) if unchanged => {
                            live.with_status(i, |st| st.problem = None);
                        }
                        Some(c) => live.change(i, &c.added, &c.removed, Some(aspas), synced),
                        None => live.replace(i, |s| {
                            s.vrps.clone_from(vrps);
                            s.aspas.clone_from(aspas);
                            synced(&mut s.status);
                        }),
                    }
                }
                Event::Expired => live.replace(i, |s| {
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
    /// every publication is: one cannot undo another).
    fn with_status<R>(&self, i: usize, edit: impl FnOnce(&mut SourceStatus) -> R) -> Option<R> {
        let mut sources = self.lock();
        let r = sources.list.get_mut(i).map(|s| edit(&mut s.status));
        let cur = self.load();
        self.publish(
            &sources,
            Arc::clone(&cur.vrps),
            Arc::clone(&cur.aspas),
            cur.generation,
            cur.build_seconds,
        );
        r
    }

    /// Stores a snapshot of `vrps` and `aspas` with the sources' statuses.
    /// Called with the sources' lock held.
    fn publish(
        &self,
        sources: &Sources,
        vrps: Arc<Vrps>,
        aspas: Arc<Aspas>,
        generation: u64,
        secs: f64,
    ) {
        self.current.store(Arc::new(Snapshot {
            vrps,
            aspas,
            sources: sources.list.iter().map(|s| s.status.clone()).collect(),
            generation,
            build_seconds: secs,
        }));
    }

    /// Whether `v` is published, given whether some source holds it: the
    /// SLURM files as one (every file's filters, then every file's
    /// assertions: the order of the files does not matter).
    fn effective(&self, v: &Vrp, held: bool) -> bool {
        (held && !self.slurm.iter().any(|x| x.filters(v)))
            || self.slurm.iter().any(|x| x.asserts(v))
    }

    /// The ASPAs of every source merged, SLURM applied.
    fn aspa_union(&self, sources: &Sources) -> Aspas {
        let mut providers: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for s in &sources.list {
            for a in s.aspas.to_vec() {
                providers.entry(a.customer).or_default().extend(a.providers);
            }
        }
        let mut aspas: Aspas = providers
            .into_iter()
            .map(|(c, p)| Aspa::new(c, p))
            .collect();
        Slurm::apply_aspas_all(&self.slurm, &mut aspas);
        aspas
    }

    /// Edits source `i` wholly, then rebuilds the union and the snapshot.
    fn replace(&self, i: usize, edit: impl FnOnce(&mut Source)) {
        let mut sources = self.lock();
        if let Some(s) = sources.list.get_mut(i) {
            edit(s);
            s.status.vrps = s.vrps.len();
            s.status.aspas = s.aspas.len();
        }
        let t = Instant::now();
        let mut union: hashbrown::HashMap<Vrp, u32> = hashbrown::HashMap::new();
        for s in &sources.list {
            for v in s.vrps.iter() {
                *union.entry(*v).or_default() += 1;
            }
        }
        let mut published = VrpSet::new();
        published.extend(union.keys().copied().filter(|v| self.effective(v, true)));
        for x in &self.slurm {
            published.extend(x.prefix_assertions.iter().copied());
        }
        sources.union = union;
        let vrps = published.snapshot();
        let aspas = self.aspa_union(&sources);
        let generation = self.load().generation + 1;
        self.publish(
            &sources,
            Arc::new(vrps),
            Arc::new(aspas),
            generation,
            t.elapsed().as_secs_f64(),
        );
    }

    /// Applies changes to source `i`'s VRPs (and, when given, replaces its
    /// ASPAs), then publishes the previous snapshot with the net changes of
    /// the published set merged in.
    fn change(
        &self,
        i: usize,
        added: &[Vrp],
        removed: &[Vrp],
        aspas: Option<&Aspas>,
        status: impl FnOnce(&mut SourceStatus),
    ) {
        let mut guard = self.lock();
        let sources = &mut *guard;
        let Some(s) = sources.list.get_mut(i) else {
            return;
        };
        let t = Instant::now();
        let (mut out, mut back) = (Vec::new(), Vec::new());
        for v in removed {
            if !s.vrps.remove(v) {
                continue;
            }
            if let hashbrown::hash_map::Entry::Occupied(mut e) = sources.union.entry(*v) {
                *e.get_mut() -= 1;
                if *e.get() == 0 {
                    e.remove();
                    if self.effective(v, true) && !self.effective(v, false) {
                        out.push(*v);
                    }
                }
            }
        }
        for v in added {
            if !s.vrps.insert(*v) {
                continue;
            }
            let n = sources.union.entry(*v).or_default();
            *n += 1;
            if *n == 1 && self.effective(v, true) && !self.effective(v, false) {
                back.push(*v);
            }
        }
        let aspas_changed = match aspas {
            Some(a) => {
                let same = s.aspas == *a;
                if !same {
                    s.aspas.clone_from(a);
                }
                !same
            }
            None => false,
        };
        status(&mut s.status);
        s.status.vrps = s.vrps.len();
        s.status.aspas = s.aspas.len();
        let cur = self.load();
        let vrps = if out.is_empty() && back.is_empty() {
            Arc::clone(&cur.vrps)
        } else {
            Arc::new(cur.vrps.with_changes(&back, &out))
        };
        let aspas = if aspas_changed {
            Arc::new(self.aspa_union(sources))
        } else {
            Arc::clone(&cur.aspas)
        };
        // Nothing published changed (a new serial with no changes, or
        // changes SLURM hides): the same generation, so nothing recounts.
        let same = Arc::ptr_eq(&vrps, &cur.vrps) && Arc::ptr_eq(&aspas, &cur.aspas);
        let generation = cur.generation + u64::from(!same);
        self.publish(sources, vrps, aspas, generation, t.elapsed().as_secs_f64());
    }

    /// Stops every RTR session.
    pub fn stop(&self) {
        let clients = std::mem::take(&mut *self.clients.lock().unwrap_or_else(|e| e.into_inner()));
        // Every session told first, then each joined: they wind down
        // together, not one after another.
        for c in &clients {
            c.signal();
        }
        for c in clients {
            c.stop();
        }
    }
}
