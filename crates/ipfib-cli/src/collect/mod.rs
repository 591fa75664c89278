//! `ipfib collect`: the BMP collector service (ARCHITECTURE §4).
//!
//! ```text
//!  BMP senders --TCP--> ingest::listen --one task per connection--> Rib
//!  HTTP clients -----> http::router (lookup, routes, peers, metrics, /)
//! ```
//! Shutdown: SIGINT or SIGTERM flips one watch channel; the listeners stop
//! accepting, sessions end, the HTTP server finishes in-flight requests,
//! and the process exits 0 within a bounded time.

mod http;
mod ingest;
mod json;
mod metrics;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ipfib_rib::Rib;
use tokio::sync::watch;

use crate::{CmdResult, Outcome};

/// Run the BMP collector: a multi-peer RIB fed by BMP sessions, served
/// over HTTP.
#[derive(clap::Args)]
pub struct Args {
    /// Address to accept BMP sessions on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:11019")]
    bmp: SocketAddr,
    /// Address of the HTTP API and looking-glass page (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    http: SocketAddr,
    /// MRT RIB dumps to load before sessions arrive (each MRT peer becomes
    /// a peer of kind "mrt").
    #[arg(long)]
    mrt: Vec<PathBuf>,
    /// Seconds a closed session's routes stay before its peers go down.
    #[arg(long, default_value_t = 30.0)]
    grace: f64,
    /// Seconds without any data before a session is closed.
    #[arg(long, default_value_t = 600.0)]
    idle_timeout: f64,
    /// Seconds a started message may take to arrive whole.
    #[arg(long, default_value_t = 60.0)]
    slow_timeout: f64,
    /// Largest BMP message accepted, in bytes (a larger one ends its session).
    #[arg(long, default_value_t = ipfib_rib::bmp::DEFAULT_MAX_MESSAGE)]
    max_message: usize,
    /// Most concurrent BMP sessions; more are refused.
    #[arg(long, default_value_t = 1024)]
    max_sessions: usize,
    /// Worker threads of the runtime.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Log level: error, warn, info, debug.
    #[arg(long, default_value = "info")]
    log_level: String,
}

pub struct Opts {
    pub grace: Duration,
    pub idle_timeout: Duration,
    pub slow_timeout: Duration,
    pub max_message: usize,
    pub max_sessions: usize,
}

/// What every task shares.
pub struct Ctx {
    pub rib: Arc<Rib>,
    /// `/api/v1/dump.mrt` builds one dump at a time.
    pub dump_lock: Arc<tokio::sync::Semaphore>,
    pub metrics: metrics::Metrics,
    pub sessions: ingest::Registry,
    pub opts: Opts,
}

fn secs(name: &str, v: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(v).map_err(|_| format!("--{name} {v}: expected seconds >= 0"))
}

pub fn run(args: Args) -> CmdResult {
    let level = match args.log_level.as_str() {
        "error" => tracing::Level::ERROR,
        "warn" => tracing::Level::WARN,
        "info" => tracing::Level::INFO,
        "debug" => tracing::Level::DEBUG,
        other => {
            return Err(
                format!("--log-level {other:?}: expected error, warn, info or debug").into(),
            )
        }
    };
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false)
        .init();
    let opts = Opts {
        grace: secs("grace", args.grace)?,
        idle_timeout: secs("idle-timeout", args.idle_timeout)?,
        slow_timeout: secs("slow-timeout", args.slow_timeout)?,
        max_message: args.max_message.max(64),
        max_sessions: args.max_sessions,
    };
    // Two runtimes: BMP ingest is CPU work that can keep every worker
    // busy, and HTTP lookups must not queue behind it (measured: with one
    // shared runtime and 32 sessions replaying, lookups waited 75 ms at
    // the median). The HTTP runtime's own thread gets its share of the
    // CPU from the OS scheduler instead.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
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
        let mut signals = Signals::new()?;
        let rib =
            Arc::new(Rib::try_new().map_err(|e| format!("cannot start the RIB's threads: {e}"))?);
        // The dumps load on a blocking thread while signals are watched: a
        // SIGTERM during a long load ends the process at once (exit 0).
        let load = {
            let (rib, paths) = (Arc::clone(&rib), args.mrt.clone());
            tokio::task::spawn_blocking(move || paths.iter().try_for_each(|p| load_mrt(&rib, p)))
        };
        tokio::select! {
            done = load => done.map_err(|e| format!("MRT load failed: {e}"))??,
            _ = signals.wait() => {
                tracing::info!("stopped during the MRT load");
                return Ok(());
            }
        }
        let ctx = Arc::new(Ctx {
            rib,
            dump_lock: Arc::new(tokio::sync::Semaphore::new(1)),
            metrics: metrics::Metrics::default(),
            sessions: ingest::Registry::default(),
            opts,
        });
        serve(ctx, args.bmp, args.http, http_rt.handle().clone(), signals).await
    });
    // Session tasks that are still winding down do not hold up the exit.
    http_rt.shutdown_timeout(Duration::from_secs(2));
    rt.shutdown_timeout(Duration::from_secs(2));
    result?;
    Ok(Outcome::Ok)
}

/// Load one MRT RIB dump into the RIB before sessions arrive; a truncated
/// dump loads what precedes the cut and says where it was.
fn load_mrt(rib: &Rib, path: &std::path::Path) -> Result<(), String> {
    let r = ipfib_rib::mrt::load(path, rib).map_err(|e| e.to_string())?;
    rib.sync();
    let damage = r
        .damage
        .as_ref()
        .map(|d| format!("; truncated at byte {}, loaded what precedes it", d.offset))
        .unwrap_or_default();
    eprintln!(
        "ipfib collect: {}: {} routes of {} peers, {} IPv4 + {} IPv6 prefixes in {:.2} s{damage}",
        path.display(),
        r.routes,
        r.peers,
        r.prefixes_v4,
        r.prefixes_v6,
        r.elapsed.as_secs_f64()
    );
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
    mut signals: Signals,
) -> Result<(), Box<dyn std::error::Error>> {
    let bmp_l = tokio::net::TcpListener::bind(bmp)
        .await
        .map_err(|e| format!("cannot listen for BMP on {bmp}: {e}"))?;
    let http_l = std::net::TcpListener::bind(http)
        .map_err(|e| format!("cannot listen for HTTP on {http}: {e}"))?;
    http_l.set_nonblocking(true)?;
    let (bmp_at, http_at) = (bmp_l.local_addr()?, http_l.local_addr()?);
    // One line for people and scripts (tests read the ports from it).
    eprintln!("ipfib collect: BMP on {bmp_at}, HTTP on http://{http_at}/");
    tracing::info!(bmp = %bmp_at, http = %http_at, "listening");
    let (stop_tx, stop_rx) = watch::channel(false);
    let ingest = tokio::spawn(ingest::listen(bmp_l, Arc::clone(&ctx), stop_rx.clone()));
    let mut http_stop = stop_rx.clone();
    let router = http::router(Arc::clone(&ctx));
    let server = http_rt.spawn(async move {
        let l = tokio::net::TcpListener::from_std(http_l)?;
        axum::serve(l, router)
            .with_graceful_shutdown(async move {
                let _ = http_stop.changed().await;
            })
            .await
    });
    signals.wait().await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), ingest).await;
    match tokio::time::timeout(Duration::from_secs(5), server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::warn!(error = %e, "HTTP server ended with an error"),
        _ => tracing::warn!("HTTP server did not finish within 5 s"),
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
