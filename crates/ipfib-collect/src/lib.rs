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
mod paging;
mod server;

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
    /// Largest BMP message accepted, in bytes (a larger one ends its
    /// session); the default fits the largest legal message.
    #[arg(long, default_value_t = ingest::DEFAULT_MAX_MESSAGE)]
    max_message: usize,
    /// Most concurrent BMP sessions; more are refused.
    #[arg(long, default_value_t = 1024)]
    max_sessions: usize,
    /// Accept BMP connections only from this network (repeatable; an
    /// address alone is its host prefix). Without it, any source.
    #[arg(long = "bmp-allow", value_name = "CIDR")]
    bmp_allow: Vec<String>,
    /// Most concurrent BMP sessions from one IPv4 address (0 is taken as
    /// 1); an IPv6 /64 may hold 8 times as many.
    #[arg(long, default_value_t = 8)]
    max_sessions_per_source: usize,
    /// Seconds a new BMP connection has to deliver its first complete
    /// message (the Initiation) before it is closed.
    #[arg(long, default_value_t = 10.0)]
    initiation_timeout: f64,
    /// Bytes of unfinished BMP messages held over all sessions; a session
    /// whose read would go past it is closed.
    #[arg(long, default_value_t = 64 << 20)]
    max_buffered: usize,
    /// Monitored neighbours one BMP session may have (0: no limit);
    /// messages of further ones are dropped and counted.
    #[arg(long, default_value_t = 2048)]
    max_peers_per_session: usize,
    /// Routes one BMP peer may hold (0: no limit); past it the peer's new
    /// routes are dropped and counted (like BGP maximum-prefix).
    #[arg(long, default_value_t = 4_000_000)]
    max_routes_per_peer: u64,
    /// RIB peers one BMP session's live neighbours may have in all, one
    /// per (neighbour, RIB kind, route distinguisher) (0: no limit); past
    /// it routes needing another are dropped and counted. VPN routes make
    /// one per distinguisher: this keeps one session from filling the
    /// peer registry (about a million) that every router shares.
    #[arg(long, default_value_t = 16_384)]
    max_rib_peers_per_session: usize,
    /// Routes one prefix may hold, over every peer, instance and RIB kind
    /// (0: no limit); past it new routes of the prefix are dropped and
    /// counted. Bounds what one prefix announced by many invented peers
    /// holds, and what a lookup restricted to a peer or next hop scans.
    #[arg(long, default_value_t = ipfib_rib::rib::MAX_ROUTES_PER_PREFIX)]
    max_routes_per_prefix: usize,
    /// Most concurrent HTTP connections; past it new ones get a short 503.
    #[arg(long, default_value_t = 256)]
    http_max_conns: usize,
    /// Seconds an HTTP client has to send a request head (also the idle
    /// time allowed between keep-alive requests).
    #[arg(long, default_value_t = 10.0)]
    http_header_timeout: f64,
    /// Seconds a request may take to get its answer's head.
    #[arg(long, default_value_t = 30.0)]
    http_request_timeout: f64,
    /// Seconds a client may stop reading an answer before its connection
    /// is closed.
    #[arg(long, default_value_t = 30.0)]
    http_write_stall: f64,
    /// A file whose first line is a bearer token every API request must
    /// carry (`Authorization: Bearer TOKEN`); `/` and `/metrics` included.
    #[arg(long, value_name = "FILE")]
    http_token_file: Option<PathBuf>,
    /// Host names (optionally with :port) the HTTP API answers to
    /// (repeatable), against DNS rebinding. Default: loopback names and
    /// addresses when --http is a loopback address, any otherwise.
    #[arg(long = "http-host", value_name = "NAME")]
    http_host: Vec<String>,
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
    pub bmp_allow: Vec<ipfib::prefix::AnyPrefix>,
    pub max_per_source: usize,
    pub initiation_timeout: Duration,
    pub max_buffered: usize,
    pub limits: ipfib_rib::bmp::SessionLimits,
    pub http: server::HttpLimits,
    pub token: Option<String>,
    /// Allowed `Host` header values (lowercase); empty: any.
    pub hosts: Vec<String>,
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

/// A network (`192.0.2.0/24`, host bits must be clear) or an address alone
/// (its host prefix); IPv4-mapped IPv6 addresses count as IPv4.
fn parse_cidr(t: &str) -> Result<ipfib::prefix::AnyPrefix, String> {
    use ipfib_rib::target::{parse_prefix_or_addr, TargetError};
    parse_prefix_or_addr(t).map_err(|e| match e {
        TargetError::Address(e) => format!("not an address or network: {e}"),
        e => e.to_string(),
    })
}

/// The token file's first line, trimmed; empty is an error.
fn read_token(f: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(f)
        .map_err(|e| format!("--http-token-file {}: {e}", f.display()))?;
    let t = text.lines().next().unwrap_or("").trim().to_string();
    if t.is_empty() {
        return Err(format!(
            "--http-token-file {}: the first line is empty",
            f.display()
        ));
    }
    Ok(t)
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
    let bmp_allow = args
        .bmp_allow
        .iter()
        .map(|t| parse_cidr(t).map_err(|e| format!("--bmp-allow {t:?}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let token = match &args.http_token_file {
        None => None,
        Some(f) => Some(read_token(f)?),
    };
    let opts = Opts {
        grace: secs("grace", args.grace)?,
        idle_timeout: secs("idle-timeout", args.idle_timeout)?,
        slow_timeout: secs("slow-timeout", args.slow_timeout)?,
        max_message: args.max_message.max(64),
        max_sessions: args.max_sessions,
        bmp_allow,
        max_per_source: args.max_sessions_per_source.max(1),
        initiation_timeout: secs("initiation-timeout", args.initiation_timeout)?,
        max_buffered: args.max_buffered,
        limits: ipfib_rib::bmp::SessionLimits {
            max_peers: (args.max_peers_per_session > 0).then_some(args.max_peers_per_session),
            max_routes_per_peer: (args.max_routes_per_peer > 0).then_some(args.max_routes_per_peer),
            max_rib_peers: (args.max_rib_peers_per_session > 0)
                .then_some(args.max_rib_peers_per_session),
        },
        http: server::HttpLimits {
            max_conns: args.http_max_conns.max(1),
            header_timeout: secs("http-header-timeout", args.http_header_timeout)?,
            request_timeout: secs("http-request-timeout", args.http_request_timeout)?,
            write_stall: secs("http-write-stall", args.http_write_stall)?,
        },
        token,
        hosts: http::allowed_hosts(&args.http_host, args.http),
    };
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
        rib.set_max_routes_per_prefix(args.max_routes_per_prefix);
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
    let http_stop = stop_rx.clone();
    let router = http::router(Arc::clone(&ctx));
    let http_ctx = Arc::clone(&ctx);
    let server = http_rt.spawn(async move {
        let l = tokio::net::TcpListener::from_std(http_l)?;
        server::serve(l, router, http_ctx, http_stop).await
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
