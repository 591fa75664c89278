//! `ipfib collect`: the flags of the BMP collector (ARCHITECTURE §4), turned
//! into an [`ipfib_collect::Config`]; the service itself is the
//! `ipfib-collect` crate.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ipfib_collect::Event;

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
    #[arg(long, default_value_t = ipfib_collect::DEFAULT_MAX_MESSAGE)]
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
    /// An RTR cache (`HOST:PORT`, repeatable) whose VRPs and ASPAs give
    /// every route its `rov` and `aspa` status (RFC 8210 versions 2, 1, 0).
    #[arg(long, value_name = "HOST:PORT")]
    rtr: Vec<String>,
    /// A validator's output file (rpki-client or Routinator JSON,
    /// Routinator CSV; repeatable), read once at start.
    #[arg(long, value_name = "FILE")]
    vrps: Vec<PathBuf>,
    /// SLURM local exceptions (RFC 8416; repeatable) applied on top of
    /// every source.
    #[arg(long, value_name = "FILE")]
    slurm: Vec<PathBuf>,
    /// Caps the RTR caches' refresh interval, seconds (0: the cache's).
    #[arg(long, default_value_t = 0.0)]
    rtr_refresh: f64,
    /// Caps the RTR caches' retry interval, seconds (0: the cache's).
    #[arg(long, default_value_t = 0.0)]
    rtr_retry: f64,
    /// Caps the RTR caches' expire interval, seconds (0: the cache's):
    /// data not refreshed this long is dropped.
    #[arg(long, default_value_t = 0.0)]
    rtr_expire: f64,
    /// Seconds between counts of route statuses per peer (`/metrics`);
    /// a change of the RPKI data also triggers one, at most every 5 s.
    #[arg(long, default_value_t = 300.0)]
    rpki_count_every: f64,
    /// Keep the RIB across restarts in this directory (created if
    /// missing): a snapshot every --snapshot-every seconds, on SIGUSR1 and
    /// at shutdown; at start the newest loads and answers at once, its
    /// routers' routes marked stale until they send them again. With a
    /// snapshot, --mrt is not loaded (the snapshot holds its routes).
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// Seconds between two snapshots (with --state).
    #[arg(long, default_value_t = 300.0)]
    snapshot_every: f64,
    /// Seconds restored routes wait for their router to send them again
    /// (End-of-RIB sweeps them sooner); then the rest are swept.
    #[arg(long, default_value_t = 600.0)]
    stale_grace: f64,
    /// Log level: error, warn, info, debug.
    #[arg(long, default_value = "info")]
    log_level: String,
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
    let opts = ipfib_collect::Opts {
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
        http: ipfib_collect::HttpLimits {
            max_conns: args.http_max_conns.max(1),
            header_timeout: secs("http-header-timeout", args.http_header_timeout)?,
            request_timeout: secs("http-request-timeout", args.http_request_timeout)?,
            write_stall: secs("http-write-stall", args.http_write_stall)?,
        },
        token,
        hosts: ipfib_collect::allowed_hosts(&args.http_host, args.http),
    };
    let cap = |name: &str, v: f64| -> Result<Option<Duration>, String> {
        Ok((v > 0.0).then_some(secs(name, v)?))
    };
    let rpki = (!args.rtr.is_empty() || !args.vrps.is_empty())
        .then(|| -> Result<_, String> {
            Ok(ipfib_collect::RpkiConfig {
                rtr: args.rtr.clone(),
                vrps: args.vrps.clone(),
                slurm: args.slurm.clone(),
                rtr_options: ipfib_rpki::rtr::RtrOptions {
                    max_refresh: cap("rtr-refresh", args.rtr_refresh)?,
                    max_retry: cap("rtr-retry", args.rtr_retry)?,
                    max_expire: cap("rtr-expire", args.rtr_expire)?,
                    ..Default::default()
                },
                count_every: secs("rpki-count-every", args.rpki_count_every)?
                    .max(ipfib_collect::RPKI_RECOUNT_MIN),
            })
        })
        .transpose()?;
    if rpki.is_none() && !args.slurm.is_empty() {
        return Err("--slurm needs --rtr or --vrps".into());
    }
    let state = match args.state {
        None => None,
        Some(dir) => {
            let every = secs("snapshot-every", args.snapshot_every)?;
            if every < Duration::from_secs(1) {
                return Err(format!(
                    "--snapshot-every {}: at least 1 second",
                    args.snapshot_every
                )
                .into());
            }
            Some(ipfib_collect::StateConfig {
                dir,
                every,
                stale_grace: secs("stale-grace", args.stale_grace)?,
            })
        }
    };
    let config = ipfib_collect::Config {
        rpki,
        state,
        bmp: args.bmp,
        http: args.http,
        mrt: args.mrt,
        threads: args.threads,
        max_routes_per_prefix: args.max_routes_per_prefix,
        opts,
        on_event: Arc::new(print_event),
    };
    match ipfib_collect::run(config) {
        Ok(()) => Ok(Outcome::Ok),
        // The system's error itself, as `main` tells a closed pipe apart.
        Err(ipfib_collect::Error::Io(e)) => Err(e.into()),
        Err(e) => Err(e.into()),
    }
}

/// One line on stderr per event, for people and scripts (tests read the
/// ports from the `listening` line).
fn print_event(e: Event<'_>) {
    match e {
        Event::MrtLoaded { path, report: r } => {
            let mut damage = String::new();
            if r.routes_dropped > 0 {
                damage += &format!(
                    "; {} routes dropped by the per-prefix or per-peer bounds",
                    r.routes_dropped
                );
            }
            if r.superseded_peers > 0 {
                damage += &format!(
                    "; {} peers of earlier dumps of the same view went down",
                    r.superseded_peers
                );
            }
            if r.bad_records + r.bad_entries > 0 {
                damage += &format!(
                    "; {} records and {} entries skipped",
                    r.bad_records, r.bad_entries
                );
            }
            if let Some(d) = &r.damage {
                damage += &format!("; truncated at byte {}, loaded what precedes it", d.offset);
            }
            eprintln!(
                "ipfib collect: {}: {} routes of {} peers, {} IPv4 + {} IPv6 prefixes in {:.2} s{damage}",
                path.display(),
                r.routes,
                r.peers,
                r.prefixes_v4,
                r.prefixes_v6,
                r.elapsed.as_secs_f64()
            );
        }
        Event::SnapshotLoaded { path, report: r } => {
            eprintln!(
                "ipfib collect: {}: {} routes of {} peers, {} prefixes in {:.2} s (written {} s ago; routers' routes stale until sent again)",
                path.display(),
                r.routes,
                r.peers,
                r.prefixes,
                r.seconds,
                (std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64)
                    - r.created)
                    .max(0)
            );
        }
        Event::Listening { bmp, http } => {
            eprintln!("ipfib collect: BMP on {bmp}, HTTP on http://{http}/");
        }
    }
}
