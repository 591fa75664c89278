//! The BMP collector as a library: a multi-peer RIB fed by BMP sessions,
//! served over HTTP (the `ipfib collect` command is argument parsing
//! around [`run`]; ARCHITECTURE §4 pins its routes, JSON and metrics).
//!
//! ```text
//!  BMP senders --TCP--> ingest::listen --one task per connection--> Rib
//!  HTTP clients -----> http::router (lookup, routes, peers, metrics, /)
//! ```
//!
//! Where to start reading:
//! - `lib.rs`: [`Config`], [`run`]: runtimes, MRT bootstrap, listeners,
//!   shutdown;
//! - `ingest.rs`: BMP accept (allow-list, per-source and session caps),
//!   one task per session, framing and timeouts;
//! - `server.rs`: the HTTP connection loop under the collector's limits;
//! - `http.rs`: routes, parameters, the guard (token, `Host`), the page;
//! - `json.rs`: routes and peers as JSON; `paging.rs`: `routes` pages and
//!   cursors; `metrics.rs`: counters and their Prometheus text.
//!
//! Shutdown: SIGINT or SIGTERM flips one watch channel; the listeners stop
//! accepting, sessions end, the HTTP server finishes in-flight requests,
//! and [`run`] returns within a bounded time.

mod bulk;
mod http;
mod ingest;
mod json;
mod metrics;
mod paging;
pub mod rpki;
mod server;
mod state;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipfib_rib::mrt::LoadReport;
use ipfib_rib::snapshot::SnapshotReport;
use ipfib_rib::Rib;
use tokio::sync::watch;

pub use http::allowed_hosts;
pub use ingest::DEFAULT_MAX_MESSAGE;
pub use server::HttpLimits;
pub use state::StateConfig;

/// Why the collector could not run. `Display` is the whole message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A listener, the RIB, a signal handler or an MRT dump could not be
    /// set up; the message names which.
    #[error("{0}")]
    Start(String),
    /// The runtime or a socket failed at the system level.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<String> for Error {
    fn from(s: String) -> Self {
        Error::Start(s)
    }
}

/// What the collector tells its caller as it starts: the caller decides
/// how to show it (the command prints one line each on stderr).
pub enum Event<'a> {
    /// An MRT dump of [`Config::mrt`] is loaded (`report.damage`: where a
    /// truncated dump was cut; what precedes it is loaded).
    MrtLoaded {
        path: &'a Path,
        report: &'a LoadReport,
    },
    /// The RIB came back from a snapshot of [`Config::state`] (and the
    /// MRT dumps were not loaded: the snapshot holds their routes).
    SnapshotLoaded {
        path: &'a Path,
        report: &'a SnapshotReport,
    },
    /// Both listeners are bound (port 0 resolved): sessions and requests
    /// are accepted from now on.
    Listening { bmp: SocketAddr, http: SocketAddr },
}

/// Limits and policies of the sessions and the HTTP API.
pub struct Opts {
    /// How long a closed session's routes stay before its peers go down.
    pub grace: Duration,
    /// A session without any data this long is closed.
    pub idle_timeout: Duration,
    /// How long a started message may take to arrive whole.
    pub slow_timeout: Duration,
    /// Largest BMP message accepted, in bytes.
    pub max_message: usize,
    /// Most concurrent BMP sessions.
    pub max_sessions: usize,
    /// BMP sources accepted (empty: any).
    pub bmp_allow: Vec<ipfib::prefix::AnyPrefix>,
    /// Most concurrent sessions from one IPv4 address (an IPv6 /64 may
    /// hold 8 times as many); at least 1.
    pub max_per_source: usize,
    /// Time a new connection has to deliver its Initiation message.
    pub initiation_timeout: Duration,
    /// Bytes of unfinished messages held over all sessions.
    pub max_buffered: usize,
    /// Per-session caps on peers and routes.
    pub limits: ipfib_rib::bmp::SessionLimits,
    /// The HTTP server's limits.
    pub http: HttpLimits,
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
    /// Allowed `Host` header values (lowercase); empty: any.
    pub hosts: Vec<String>,
}

/// Everything [`run`] needs.
pub struct Config {
    /// Where to accept BMP sessions (port 0: any free port).
    pub bmp: SocketAddr,
    /// Where to serve the HTTP API and the looking-glass page.
    pub http: SocketAddr,
    /// MRT RIB dumps loaded before sessions arrive.
    pub mrt: Vec<PathBuf>,
    /// Worker threads of the BMP ingest runtime (at least 1).
    pub threads: usize,
    /// Routes one prefix may hold over every peer, as
    /// `Rib::set_max_routes_per_prefix` takes it.
    pub max_routes_per_prefix: usize,
    pub opts: Opts,
    /// RPKI sources; `None`: routes carry no RPKI status.
    pub rpki: Option<RpkiConfig>,
    /// Warm restart: where the RIB's snapshots are kept; `None`: nothing
    /// is kept across restarts.
    pub state: Option<StateConfig>,
    /// Called as the collector starts (see [`Event`]); from any thread.
    pub on_event: Arc<dyn Fn(Event<'_>) + Send + Sync>,
}

/// Where the collector's RPKI data comes from (docs/architecture.md, "RPKI").
#[derive(Clone, Debug, Default)]
pub struct RpkiConfig {
    /// RTR caches, `host:port` each.
    pub rtr: Vec<String>,
    /// Validator output files (rpki-client or Routinator JSON, CSV).
    pub vrps: Vec<PathBuf>,
    /// SLURM files (RFC 8416) applied on top.
    pub slurm: Vec<PathBuf>,
    pub rtr_options: ipfib_rpki::rtr::RtrOptions,
    /// Per-peer status counts are recounted at least this often, and
    /// within [`RPKI_RECOUNT_MIN`] of a change of the VRP or ASPA set.
    pub count_every: Duration,
}

/// The least time between two counts of the RIB's route statuses.
pub const RPKI_RECOUNT_MIN: Duration = Duration::from_secs(5);

/// What every task shares.
pub(crate) struct Ctx {
    pub rib: Arc<Rib>,
    /// `/api/v1/dump.mrt` builds one dump at a time.
    pub dump_lock: Arc<tokio::sync::Semaphore>,
    /// `POST /api/v1/lookup` answers `bulk::CONCURRENT` requests at once.
    pub bulk_lock: Arc<tokio::sync::Semaphore>,
    pub metrics: metrics::Metrics,
    pub sessions: ingest::Registry,
    pub opts: Opts,
    /// The RPKI data, when configured.
    pub rpki: Option<Arc<ipfib_rpki::Live>>,
    /// The last count of route statuses (for `/metrics`).
    pub rpki_counts: std::sync::Mutex<Option<Arc<rpki::Counts>>>,
    /// Warm restart, when configured.
    pub state_config: Option<StateConfig>,
    pub snapshots: Option<state::Snapshots>,
    /// The state directory's lock, held for the whole run.
    pub _state_lock: Option<std::fs::File>,
    /// SIGUSR1, watched since the start; the snapshot task takes it.
    pub usr1: std::sync::Mutex<Option<tokio::signal::unix::Signal>>,
}

/// Run the collector until SIGINT or SIGTERM (watched from the start, so
/// one during the MRT load ends it cleanly too), then shut down within a
/// bounded time. Blocks the calling thread; builds its own runtimes and
/// logs through `tracing` (the caller installs a subscriber).
pub fn run(config: Config) -> Result<(), Error> {
    start(config, None)
}

/// [`run`], stopped when `stop` completes instead of by a signal (an
/// embedding program's own shutdown, a test). `stop` is first polled on
/// the collector's runtime, so it may use tokio's timers.
pub fn run_until(
    config: Config,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    start(config, Some(Box::pin(stop)))
}

/// What ends the collector: a future, or (`None`) SIGINT or SIGTERM.
type Stop = Pin<Box<dyn Future<Output = ()> + Send>>;

fn start(config: Config, stop: Option<Stop>) -> Result<(), Error> {
    let Config {
        bmp,
        http,
        mrt,
        threads,
        max_routes_per_prefix,
        opts,
        rpki: rpki_config,
        state: state_config,
        on_event,
    } = config;
    let live = rpki_config.as_ref().map(start_rpki).transpose()?;
    if let Some((before, after)) = server::raise_nofile() {
        tracing::info!(before, after, "open file limit");
        let need = (opts.max_sessions + opts.http.max_conns + 64) as u64;
        if after < need {
            tracing::warn!(
                limit = after,
                need,
                "the open file limit is below --max-sessions + --http-max-conns: accepts may fail"
            );
        }
    }
    // Two runtimes: BMP ingest is CPU work that can keep every worker
    // busy, and HTTP lookups must not queue behind it (measured: with one
    // shared runtime and 32 sessions replaying, lookups waited 75 ms at
    // the median). The HTTP runtime's own thread gets its share of the
    // CPU from the OS scheduler instead.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .thread_name("bmp-ingest")
        .enable_all()
        .build()?;
    let http_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("http")
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        // Signals first: a SIGTERM during the MRT load or right after the
        // "listening" line still ends the process cleanly (exit 0).
        let mut stop: Stop = match stop {
            Some(f) => f,
            None => {
                let mut signals = Signals::new()?;
                Box::pin(async move { signals.wait().await })
            }
        };
        // The snapshot (with `--state`), else the dumps, load on a
        // blocking thread while signals are watched: a SIGTERM during a
        // long load ends the process at once (exit 0). A snapshot holds
        // the dumps' routes as they were when it was written: the dumps
        // are not loaded again over it.
        // With `--state`: the directory locked for this process, SIGUSR1
        // watched before the load (its default action ends a process).
        let state_lock = state_config
            .as_ref()
            .map(|c| state::lock_dir(&c.dir))
            .transpose()?;
        let usr1 = state_config.as_ref().and_then(|_| state::watch_usr1());
        let load = {
            let on_event = Arc::clone(&on_event);
            let dir = state_config.as_ref().map(|c| c.dir.clone());
            tokio::task::spawn_blocking(move || -> Result<Rib, String> {
                if let Some(dir) = &dir {
                    if let Some(rib) = state::restore(dir, max_routes_per_prefix, &*on_event)? {
                        if !mrt.is_empty() {
                            tracing::info!("--mrt not loaded: the snapshot holds its routes");
                        }
                        return Ok(rib);
                    }
                }
                let rib =
                    Rib::try_new().map_err(|e| format!("cannot start the RIB's threads: {e}"))?;
                // Before the dumps load: the bound applies to them.
                rib.set_max_routes_per_prefix(max_routes_per_prefix);
                mrt.iter().try_for_each(|p| load_mrt(&rib, p, &*on_event))?;
                Ok(rib)
            })
        };
        let rib = tokio::select! {
            done = load => Arc::new(done.map_err(|e| format!("start failed: {e}"))??),
            _ = &mut stop => {
                tracing::info!("stopped during the load");
                return Ok(());
            }
        };
        let ctx = Arc::new(Ctx {
            rib,
            dump_lock: Arc::new(tokio::sync::Semaphore::new(1)),
            bulk_lock: Arc::new(tokio::sync::Semaphore::new(bulk::CONCURRENT)),
            metrics: metrics::Metrics::default(),
            sessions: ingest::Registry::default(),
            opts,
            rpki: live.clone(),
            rpki_counts: std::sync::Mutex::new(None),
            snapshots: state_config.as_ref().map(|_| state::Snapshots::default()),
            state_config,
            _state_lock: state_lock,
            usr1: std::sync::Mutex::new(usr1),
        });
        let every = rpki_config.as_ref().map(|c| c.count_every);
        serve(
            ctx,
            bmp,
            http,
            http_rt.handle().clone(),
            stop,
            &*on_event,
            every,
        )
        .await
    });
    if let Some(l) = &live {
        l.stop();
    }
    // Session tasks that are still winding down do not hold up the exit.
    http_rt.shutdown_timeout(Duration::from_secs(2));
    rt.shutdown_timeout(Duration::from_secs(2));
    result
}

/// Loads the RPKI files and starts the RTR sessions.
fn start_rpki(c: &RpkiConfig) -> Result<Arc<ipfib_rpki::Live>, Error> {
    let slurm = c
        .slurm
        .iter()
        .map(|p| ipfib_rpki::Slurm::load(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let live = ipfib_rpki::Live::new(slurm);
    for p in &c.vrps {
        live.add_file(p.clone()).map_err(|e| e.to_string())?;
    }
    for a in &c.rtr {
        live.add_rtr(a.clone(), c.rtr_options.clone());
    }
    Ok(live)
}

/// Recounts route statuses per peer after each RPKI publication (at most
/// once per [`RPKI_RECOUNT_MIN`]) and every `every`, until `stop`.
async fn count_rpki(ctx: Arc<Ctx>, every: Duration, mut stop: watch::Receiver<bool>) {
    let Some(live) = ctx.rpki.clone() else { return };
    let mut counted: Option<(u64, Instant)> = None;
    loop {
        let snap = live.load();
        let due = match counted {
            None => true,
            Some((generation, at)) => {
                let since = at.elapsed();
                (generation != snap.generation && since >= RPKI_RECOUNT_MIN) || since >= every
            }
        };
        if due {
            let c = Arc::clone(&ctx);
            let counts = tokio::task::spawn_blocking(move || rpki::count(&c.rib, &snap)).await;
            if let Ok(counts) = counts {
                tracing::debug!(
                    routes = counts.routes,
                    seconds = counts.seconds,
                    "RPKI statuses counted"
                );
                counted = Some((counts.generation, Instant::now()));
                *ctx.rpki_counts.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(counts));
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Load one MRT RIB dump into the RIB before sessions arrive; a truncated
/// dump loads what precedes the cut and says where it was.
fn load_mrt(rib: &Rib, path: &Path, on_event: &dyn Fn(Event<'_>)) -> Result<(), String> {
    let r = ipfib_rib::mrt::load(path, rib).map_err(|e| e.to_string())?;
    // Not a single record read: not an MRT dump (or an empty one); refuse
    // rather than serve an empty RIB as if the dump were loaded.
    if r.records == 0 {
        let why = r
            .damage
            .as_ref()
            .map_or_else(|| "the file is empty".to_string(), |d| d.to_string());
        return Err(format!(
            "{}: no MRT record could be read ({why})",
            path.display()
        ));
    }
    rib.sync();
    on_event(Event::MrtLoaded { path, report: &r });
    for e in &r.errors {
        tracing::warn!(file = %path.display(), error = %e, "MRT record skipped");
    }
    Ok(())
}

async fn serve(
    ctx: Arc<Ctx>,
    bmp: SocketAddr,
    http: SocketAddr,
    http_rt: tokio::runtime::Handle,
    stop: Stop,
    on_event: &(dyn Fn(Event<'_>) + Send + Sync),
    rpki_every: Option<Duration>,
) -> Result<(), Error> {
    let bmp_l = tokio::net::TcpListener::bind(bmp)
        .await
        .map_err(|e| format!("cannot listen for BMP on {bmp}: {e}"))?;
    let http_l = std::net::TcpListener::bind(http)
        .map_err(|e| format!("cannot listen for HTTP on {http}: {e}"))?;
    http_l.set_nonblocking(true)?;
    let (bmp_at, http_at) = (bmp_l.local_addr()?, http_l.local_addr()?);
    on_event(Event::Listening {
        bmp: bmp_at,
        http: http_at,
    });
    tracing::info!(bmp = %bmp_at, http = %http_at, "listening");
    let (stop_tx, stop_rx) = watch::channel(false);
    let ingest = tokio::spawn(ingest::listen(bmp_l, Arc::clone(&ctx), stop_rx.clone()));
    if let Some(every) = rpki_every {
        tokio::spawn(count_rpki(Arc::clone(&ctx), every, stop_rx.clone()));
    }
    let usr1 = ctx.usr1.lock().unwrap_or_else(|e| e.into_inner()).take();
    tokio::spawn(state::keep(Arc::clone(&ctx), usr1, stop_rx.clone()));
    tokio::spawn(state::expire(Arc::clone(&ctx), stop_rx.clone()));
    let http_stop = stop_rx.clone();
    let router = http::router(Arc::clone(&ctx));
    let http_ctx = Arc::clone(&ctx);
    let server = http_rt.spawn(async move {
        let l = tokio::net::TcpListener::from_std(http_l)?;
        server::serve(l, router, http_ctx, http_stop).await
    });
    stop.await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), ingest).await;
    match tokio::time::timeout(Duration::from_secs(5), server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::warn!(error = %e, "HTTP server ended with an error"),
        _ => tracing::warn!("HTTP server did not finish within 5 s"),
    }
    // Sessions have ended (their peers stay up): the RIB as it stands.
    if ctx.state_config.is_some() {
        state::write_now(&ctx, "shutdown").await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// SIGTERM and SIGINT, registered when made (signals that arrive before
/// `wait` is called are not lost).
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Signals, String> {
        use tokio::signal::unix::{signal, SignalKind};
        let watch =
            |k: SignalKind, name: &str| signal(k).map_err(|e| format!("cannot watch {name}: {e}"));
        Ok(Signals {
            term: watch(SignalKind::terminate(), "SIGTERM")?,
            int: watch(SignalKind::interrupt(), "SIGINT")?,
        })
    }

    async fn wait(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The collector binds, says where, and returns once `stop` completes.
    #[test]
    fn run_until_stops_when_told() {
        let heard = Arc::new(Mutex::new(None));
        let config = Config {
            bmp: "127.0.0.1:0".parse().unwrap(),
            http: "127.0.0.1:0".parse().unwrap(),
            mrt: Vec::new(),
            threads: 1,
            max_routes_per_prefix: 0,
            rpki: None,
            state: None,
            opts: Opts {
                grace: Duration::from_secs(1),
                idle_timeout: Duration::from_secs(1),
                slow_timeout: Duration::from_secs(1),
                max_message: DEFAULT_MAX_MESSAGE,
                max_sessions: 4,
                bmp_allow: Vec::new(),
                max_per_source: 1,
                initiation_timeout: Duration::from_secs(1),
                max_buffered: 1 << 20,
                limits: ipfib_rib::bmp::SessionLimits::default(),
                http: HttpLimits {
                    max_conns: 4,
                    header_timeout: Duration::from_secs(1),
                    request_timeout: Duration::from_secs(1),
                    write_stall: Duration::from_secs(1),
                },
                token: None,
                hosts: Vec::new(),
            },
            on_event: {
                let heard = Arc::clone(&heard);
                Arc::new(move |e| {
                    if let Event::Listening { bmp, http } = e {
                        *heard.lock().unwrap() = Some((bmp, http));
                    }
                })
            },
        };
        let started = std::time::Instant::now();
        run_until(config, async {
            tokio::time::sleep(Duration::from_millis(200)).await;
        })
        .unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        let (bmp, http) = heard.lock().unwrap().expect("a Listening event");
        assert_ne!(bmp.port(), 0);
        assert_ne!(http.port(), 0);
    }
}
