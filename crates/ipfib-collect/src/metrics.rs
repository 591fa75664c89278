//! The collector's counters, exported as Prometheus text at `/metrics`.
//! Lock-free: session tasks and HTTP handlers bump atomics.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ipfib_rib::bmp::TYPE_NAMES;
use ipfib_rib::Rib;

/// Upper bounds (seconds) of the lookup latency histogram's buckets.
const BUCKETS: [f64; 12] = [
    1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 1e-2, 1e-1,
];

/// Why sessions ended.
pub const END_REASONS: [&str; 8] = [
    "closed",
    "decode_error",
    "idle_timeout",
    "slow_sender",
    "io_error",
    "shutdown",
    "no_initiation",
    "buffer_limit",
];

/// Why BMP connections were closed at accept
/// (`ipfib_bmp_refused_total{reason}`).
pub const REFUSE_REASONS: [&str; 3] = ["not_allowed", "per_source_limit", "session_limit"];

#[derive(Default)]
pub struct Metrics {
    pub sessions_accepted: AtomicU64,
    pub sessions_refused: AtomicU64,
    pub sessions_open: AtomicU64,
    pub session_ends: [AtomicU64; END_REASONS.len()],
    pub messages: [AtomicU64; 7],
    pub bytes: AtomicU64,
    pub lookups: [AtomicU64; BUCKETS.len() + 1],
    pub lookup_nanos: AtomicU64,
    pub http_requests: AtomicU64,
    /// RFC 7606 UPDATE errors by action ([`UPDATE_ERROR_ACTIONS`] order).
    pub update_errors: [AtomicU64; 3],
    /// Error log lines left out by the per-session rate limit.
    pub update_error_logs_suppressed: AtomicU64,
    /// NLRI decoded from labeled-unicast and VPN attributes; MP
    /// attributes of families not decoded.
    pub labeled_nlri: AtomicU64,
    pub vpn_nlri: AtomicU64,
    pub skipped_families: AtomicU64,
    /// Route Monitoring messages of Adj-RIB-Out (RFC 8671).
    pub adj_rib_out: AtomicU64,
    pub refused: [AtomicU64; REFUSE_REASONS.len()],
    /// Messages of neighbours past `--max-peers-per-session`, dropped.
    pub peers_over_limit: AtomicU64,
    /// New routes past `--max-routes-per-peer`, dropped.
    pub routes_over_limit: AtomicU64,
    /// Bytes of unfinished BMP messages held, over all sessions.
    pub buffered: AtomicU64,
    pub http_conns: AtomicU64,
    /// HTTP connections closed at once: `--http-max-conns` reached.
    pub http_refused: AtomicU64,
    /// HTTP requests refused: bad or missing token, Host not allowed.
    pub http_denied: AtomicU64,
    /// Addresses looked up by `POST /api/v1/lookup`.
    pub bulk_addresses: AtomicU64,
}

/// RFC 7606 actions, as the `action` label of
/// `ipfib_bmp_update_errors_total`.
pub const UPDATE_ERROR_ACTIONS: [&str; 3] =
    ["attribute-discard", "treat-as-withdraw", "session-reset"];

impl Metrics {
    pub fn end(&self, reason: &str) {
        if let Some(i) = END_REASONS.iter().position(|r| *r == reason) {
            self.session_ends[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn refuse(&self, reason: &str) {
        if let Some(i) = REFUSE_REASONS.iter().position(|r| *r == reason) {
            self.refused[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn observe_lookup(&self, d: Duration) {
        let s = d.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|&b| s <= b)
            .unwrap_or(BUCKETS.len());
        self.lookups[i].fetch_add(1, Ordering::Relaxed);
        self.lookup_nanos
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self, rib: &Rib) -> String {
        let mut o = String::new();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let counter = |o: &mut String, name: &str, help: &str, kind: &str| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        counter(
            &mut o,
            "ipfib_bmp_sessions",
            "BMP sessions open now.",
            "gauge",
        );
        let _ = writeln!(o, "ipfib_bmp_sessions {}", get(&self.sessions_open));
        counter(
            &mut o,
            "ipfib_bmp_sessions_accepted_total",
            "BMP connections accepted.",
            "counter",
        );
        let _ = writeln!(
            o,
            "ipfib_bmp_sessions_accepted_total {}",
            get(&self.sessions_accepted)
        );
        counter(
            &mut o,
            "ipfib_bmp_sessions_refused_total",
            "BMP connections refused (session limit).",
            "counter",
        );
        let _ = writeln!(
            o,
            "ipfib_bmp_sessions_refused_total {}",
            get(&self.sessions_refused)
        );
        counter(
            &mut o,
            "ipfib_bmp_refused_total",
            "BMP connections closed at accept, by reason.",
            "counter",
        );
        for (i, r) in REFUSE_REASONS.iter().enumerate() {
            let _ = writeln!(
                o,
                "ipfib_bmp_refused_total{{reason=\"{r}\"}} {}",
                get(&self.refused[i])
            );
        }
        let one = |o: &mut String, name: &str, help: &str, kind: &str, v: u64| {
            counter(o, name, help, kind);
            let _ = writeln!(o, "{name} {v}");
        };
        one(
            &mut o,
            "ipfib_bmp_buffered_bytes",
            "Bytes of unfinished BMP messages held, over all sessions.",
            "gauge",
            get(&self.buffered),
        );
        one(
            &mut o,
            "ipfib_bmp_peers_over_limit_total",
            "BMP messages of neighbours past the per-session peer limit, dropped.",
            "counter",
            get(&self.peers_over_limit),
        );
        one(
            &mut o,
            "ipfib_bmp_routes_over_limit_total",
            "New routes past the per-peer route limit, dropped.",
            "counter",
            get(&self.routes_over_limit),
        );
        one(
            &mut o,
            "ipfib_http_connections",
            "HTTP connections open now.",
            "gauge",
            get(&self.http_conns),
        );
        one(
            &mut o,
            "ipfib_http_refused_total",
            "HTTP connections closed at once: connection limit reached.",
            "counter",
            get(&self.http_refused),
        );
        one(
            &mut o,
            "ipfib_http_denied_total",
            "HTTP requests refused: missing or wrong token, Host not allowed.",
            "counter",
            get(&self.http_denied),
        );
        one(
            &mut o,
            "ipfib_http_bulk_addresses_total",
            "Addresses looked up by POST /api/v1/lookup.",
            "counter",
            get(&self.bulk_addresses),
        );
        counter(
            &mut o,
            "ipfib_bmp_session_ends_total",
            "BMP sessions ended, by reason.",
            "counter",
        );
        for (i, r) in END_REASONS.iter().enumerate() {
            let _ = writeln!(
                o,
                "ipfib_bmp_session_ends_total{{reason=\"{r}\"}} {}",
                get(&self.session_ends[i])
            );
        }
        counter(
            &mut o,
            "ipfib_bmp_messages_total",
            "BMP messages received, by type.",
            "counter",
        );
        for (i, t) in TYPE_NAMES.iter().enumerate() {
            let _ = writeln!(
                o,
                "ipfib_bmp_messages_total{{type=\"{t}\"}} {}",
                get(&self.messages[i])
            );
        }
        counter(
            &mut o,
            "ipfib_bmp_received_bytes_total",
            "BMP bytes received.",
            "counter",
        );
        let _ = writeln!(o, "ipfib_bmp_received_bytes_total {}", get(&self.bytes));
        counter(
            &mut o,
            "ipfib_bmp_update_errors_total",
            "Path attribute errors in BGP UPDATEs, by RFC 7606 action.",
            "counter",
        );
        for (i, a) in UPDATE_ERROR_ACTIONS.iter().enumerate() {
            let _ = writeln!(
                o,
                "ipfib_bmp_update_errors_total{{action=\"{a}\"}} {}",
                get(&self.update_errors[i])
            );
        }
        counter(
            &mut o,
            "ipfib_bmp_update_error_logs_suppressed_total",
            "UPDATE error log lines left out by the per-session rate limit.",
            "counter",
        );
        let _ = writeln!(
            o,
            "ipfib_bmp_update_error_logs_suppressed_total {}",
            get(&self.update_error_logs_suppressed)
        );
        counter(
            &mut o,
            "ipfib_bmp_nlri_total",
            "NLRI decoded from labeled-unicast (SAFI 4) and VPN (SAFI 128) attributes.",
            "counter",
        );
        let _ = writeln!(
            o,
            "ipfib_bmp_nlri_total{{family=\"labeled-unicast\"}} {}\nipfib_bmp_nlri_total{{family=\"vpn\"}} {}",
            get(&self.labeled_nlri),
            get(&self.vpn_nlri)
        );
        counter(
            &mut o,
            "ipfib_bmp_skipped_families_total",
            "MP_REACH/MP_UNREACH attributes of address families not decoded (skipped).",
            "counter",
        );
        let _ = writeln!(
            o,
            "ipfib_bmp_skipped_families_total {}",
            get(&self.skipped_families)
        );
        counter(
            &mut o,
            "ipfib_bmp_adj_rib_out_messages_total",
            "Route Monitoring messages of Adj-RIB-Out (RFC 8671), kept as their own RIB kinds.",
            "counter",
        );
        let _ = writeln!(
            o,
            "ipfib_bmp_adj_rib_out_messages_total {}",
            get(&self.adj_rib_out)
        );
        let c = rib.counters();
        counter(
            &mut o,
            "ipfib_rib_announcements_total",
            "Routes announced (ingest rate: rate() of this).",
            "counter",
        );
        let _ = writeln!(o, "ipfib_rib_announcements_total {}", get(&c.announcements));
        counter(
            &mut o,
            "ipfib_rib_withdrawals_total",
            "Routes withdrawn.",
            "counter",
        );
        let _ = writeln!(o, "ipfib_rib_withdrawals_total {}", get(&c.withdrawals));
        counter(
            &mut o,
            "ipfib_rib_swept_routes_total",
            "Routes of downed peers removed by the sweeper.",
            "counter",
        );
        let _ = writeln!(o, "ipfib_rib_swept_routes_total {}", get(&c.swept_routes));
        counter(
            &mut o,
            "ipfib_rib_routes_over_prefix_limit_total",
            "New routes dropped: their prefix held --max-routes-per-prefix routes.",
            "counter",
        );
        let _ = writeln!(
            o,
            "ipfib_rib_routes_over_prefix_limit_total {}",
            get(&c.over_prefix_limit)
        );
        counter(
            &mut o,
            "ipfib_rib_prefixes_freed_total",
            "Prefixes that lost their last route and gave back their id.",
            "counter",
        );
        let _ = writeln!(
            o,
            "ipfib_rib_prefixes_freed_total {}",
            get(&c.prefixes_freed)
        );
        counter(
            &mut o,
            "ipfib_rib_peers_freed_total",
            "Downed peers swept and removed from the registry.",
            "counter",
        );
        let _ = writeln!(o, "ipfib_rib_peers_freed_total {}", get(&c.peers_freed));
        counter(
            &mut o,
            "ipfib_bmp_strings_cut_total",
            "BMP Initiation and Peer Up strings cut to 255 bytes.",
            "counter",
        );
        let _ = writeln!(o, "ipfib_bmp_strings_cut_total {}", get(&c.strings_cut));
        let (mut up, mut down, mut stale, mut stale_routes) = (0u64, 0u64, 0u64, 0u64);
        for p in rib.peers().all() {
            if p.is_up() {
                up += 1;
                if p.stale {
                    stale += 1;
                    stale_routes += p.route_count();
                }
            } else {
                down += 1
            }
        }
        counter(&mut o, "ipfib_rib_peers", "RIB peers by state.", "gauge");
        let _ = writeln!(
            o,
            "ipfib_rib_peers{{state=\"up\"}} {up}\nipfib_rib_peers{{state=\"down\"}} {down}"
        );
        counter(
            &mut o,
            "ipfib_rib_routes",
            "Live routes over all peers.",
            "gauge",
        );
        let _ = writeln!(o, "ipfib_rib_routes {}", rib.route_count());
        counter(
            &mut o,
            "ipfib_rib_stale_peers",
            "Peers restored from a snapshot whose router has not sent its table again.",
            "gauge",
        );
        let _ = writeln!(o, "ipfib_rib_stale_peers {stale}");
        counter(
            &mut o,
            "ipfib_rib_stale_routes",
            "Routes restored from a snapshot not yet sent again, replaced, withdrawn or swept.",
            "gauge",
        );
        let _ = writeln!(o, "ipfib_rib_stale_routes {stale_routes}");
        counter(
            &mut o,
            "ipfib_rib_prefixes",
            "Distinct prefixes known.",
            "gauge",
        );
        let _ = writeln!(o, "ipfib_rib_prefixes {}", rib.prefix_count());
        counter(
            &mut o,
            "ipfib_rib_attribute_sets",
            "Distinct interned attribute sets.",
            "gauge",
        );
        let _ = writeln!(o, "ipfib_rib_attribute_sets {}", rib.attrs().counts().0);
        counter(
            &mut o,
            "ipfib_http_requests_total",
            "HTTP requests received, whatever their answer.",
            "counter",
        );
        let _ = writeln!(o, "ipfib_http_requests_total {}", get(&self.http_requests));
        counter(
            &mut o,
            "ipfib_lookup_duration_seconds",
            "RIB lookup latency of /api/v1/lookup (the lookup itself, not HTTP).",
            "histogram",
        );
        let mut cum = 0;
        for (i, b) in BUCKETS.iter().enumerate() {
            cum += get(&self.lookups[i]);
            let _ = writeln!(
                o,
                "ipfib_lookup_duration_seconds_bucket{{le=\"{b:e}\"}} {cum}"
            );
        }
        cum += get(&self.lookups[BUCKETS.len()]);
        let _ = writeln!(
            o,
            "ipfib_lookup_duration_seconds_bucket{{le=\"+Inf\"}} {cum}"
        );
        let _ = writeln!(
            o,
            "ipfib_lookup_duration_seconds_sum {}",
            get(&self.lookup_nanos) as f64 / 1e9
        );
        let _ = writeln!(o, "ipfib_lookup_duration_seconds_count {cum}");
        o
    }
}

/// The `rov` label of a ROV state: `valid`, `not-found`, `invalid-as`,
/// `invalid-length`.
pub fn rov_label(r: ipfib_rpki::Rov) -> &'static str {
    match r.reason() {
        None => r.as_str(),
        Some("as") => "invalid-as",
        Some(_) => "invalid-length",
    }
}

/// The snapshot part of `/metrics` (with `--state`).
pub(crate) fn render_state(o: &mut String, s: &crate::state::Snapshots) {
    use std::fmt::Write as _;
    let head = |o: &mut String, name: &str, help: &str, kind: &str| {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };
    head(
        o,
        "ipfib_snapshots_total",
        "RIB snapshots written.",
        "counter",
    );
    let _ = writeln!(
        o,
        "ipfib_snapshots_total {}",
        s.written.load(Ordering::Relaxed)
    );
    head(
        o,
        "ipfib_snapshot_failures_total",
        "RIB snapshots that could not be written (the last good one stays).",
        "counter",
    );
    let _ = writeln!(
        o,
        "ipfib_snapshot_failures_total {}",
        s.failures.load(Ordering::Relaxed)
    );
    if let Some(r) = s.last.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        head(
            o,
            "ipfib_snapshot_last_timestamp_seconds",
            "Unix time of the last snapshot written.",
            "gauge",
        );
        let _ = writeln!(o, "ipfib_snapshot_last_timestamp_seconds {}", r.created);
        head(
            o,
            "ipfib_snapshot_last_bytes",
            "Size of the last snapshot.",
            "gauge",
        );
        let _ = writeln!(o, "ipfib_snapshot_last_bytes {}", r.bytes);
        head(
            o,
            "ipfib_snapshot_last_duration_seconds",
            "Time the last snapshot took to write.",
            "gauge",
        );
        let _ = writeln!(o, "ipfib_snapshot_last_duration_seconds {:.3}", r.seconds);
    }
}

/// The RPKI part of `/metrics`: the data held, each source's state, and
/// (once counted) routes per status per peer.
pub fn render_rpki(
    o: &mut String,
    snap: &ipfib_rpki::Snapshot,
    counts: Option<&crate::rpki::Counts>,
    rib: &Rib,
) {
    use std::fmt::Write as _;
    let head = |o: &mut String, name: &str, help: &str| {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} gauge");
    };
    head(
        o,
        "ipfib_rpki_vrps",
        "VRPs in use (every source, SLURM applied).",
    );
    let _ = writeln!(o, "ipfib_rpki_vrps {}", snap.vrps.len());
    head(o, "ipfib_rpki_aspas", "ASPAs in use.");
    let _ = writeln!(o, "ipfib_rpki_aspas {}", snap.aspas.len());
    head(
        o,
        "ipfib_rpki_source_synced",
        "1 when the source's data is current (a file, or an RTR cache synced and not expired).",
    );
    for s in &snap.sources {
        let up = matches!(s.state, "loaded" | "synced");
        let _ = writeln!(
            o,
            "ipfib_rpki_source_synced{{source=\"{}\"}} {}",
            s.name.replace('\\', "\\\\").replace('"', "\\\""),
            u8::from(up)
        );
    }
    let Some(c) = counts else { return };
    head(
        o,
        "ipfib_rpki_count_seconds",
        "How long the last count of route statuses took.",
    );
    let _ = writeln!(o, "ipfib_rpki_count_seconds {:.6}", c.seconds);
    head(
        o,
        "ipfib_rpki_routes",
        "Live routes per peer and ROV state (at the last count).",
    );
    let peer_label = |id: u32| {
        rib.peers()
            .get(id)
            .map(|p| p.key.address.to_string())
            .unwrap_or_default()
    };
    for (peer, rov, _) in &c.per_peer {
        let addr = peer_label(*peer);
        for r in ipfib_rpki::Rov::ALL {
            let _ = writeln!(
                o,
                "ipfib_rpki_routes{{peer=\"{peer}\",peer_address=\"{addr}\",rov=\"{}\"}} {}",
                rov_label(r),
                rov[r.index()]
            );
        }
    }
    head(
        o,
        "ipfib_rpki_aspa_routes",
        "Live routes per peer and ASPA status (at the last count).",
    );
    for (peer, _, aspa) in &c.per_peer {
        let addr = peer_label(*peer);
        for a in ipfib_rpki::AspaStatus::ALL {
            let _ = writeln!(
                o,
                "ipfib_rpki_aspa_routes{{peer=\"{peer}\",peer_address=\"{addr}\",aspa=\"{}\"}} {}",
                a.as_str(),
                aspa[a.index()]
            );
        }
    }
}
