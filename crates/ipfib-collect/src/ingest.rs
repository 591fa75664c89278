//! The BMP side: a listener and one task per connection. Each task owns
//! its session (framing buffer, neighbours, decoder); the only shared
//! things are the RIB (lock-free for readers), the metrics (atomics) and
//! the session registry (touched at connect and disconnect only).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ipfib_rib::bmp::{frame, Session, SessionStats, INITIATION};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::Ctx;

/// The largest legal BMP message, the default `--max-message`:
/// - a BGP message is at most 65,535 bytes (RFC 8654 extended messages;
///   4,096 without them), and a Route Monitoring message is the common
///   header (6) + the per-peer header (42) + one BGP message: 65,583;
/// - Route Mirroring carries the BGP message in a TLV (4-byte TLV header)
///   next to an Information TLV (4 + 2): 6 + 42 + 4 + 65,535 + 6 = 65,593;
/// - Peer Up: 6 + 42 + 20 (addresses, ports) + two OPENs (at most 4,096
///   each, RFC 8654 leaves OPEN at 4,096) = 8,260, plus TLVs;
/// - Initiation, Termination and Statistics are TLV lists of short
///   strings and counters.
///
/// The largest of these plus 4,096 bytes of information TLVs (sysDescr,
/// table names, the RFC 9069 and draft TLVs trailing a Route Monitoring
/// message): 65,593 + 4,096 = 69,689.
pub const DEFAULT_MAX_MESSAGE: usize = 6 + 42 + 4 + 65_535 + 6 + 4_096;

/// Open sessions per source (the per-source cap). A source is an IPv4
/// address (IPv4-mapped IPv6 included) or an IPv6 /64: one host commonly
/// holds a whole /64, so counting IPv6 addresses one by one would give it
/// 2^64 times the cap. Several routers may share a management /64, so
/// a /64 may hold [`V6_NET_FACTOR`] times the cap.
#[derive(Default)]
pub struct Sources {
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// The key the per-source cap counts `ip` under.
pub fn source_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

/// How many times the per-source cap an IPv6 /64 may hold.
pub const V6_NET_FACTOR: usize = 8;

impl Sources {
    fn try_add(&self, ip: IpAddr, max: usize) -> bool {
        let mut m = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let key = source_key(ip);
        let max = match key {
            IpAddr::V4(_) => max,
            IpAddr::V6(_) => max.saturating_mul(V6_NET_FACTOR),
        };
        let n = m.entry(key).or_insert(0);
        if *n >= max {
            return false;
        }
        *n += 1;
        true
    }

    fn remove(&self, ip: IpAddr) {
        let mut m = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let key = source_key(ip);
        if let Some(n) = m.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                m.remove(&key);
            }
        }
    }
}

/// Whether `ip` is inside one of `allow` (empty: every address).
pub fn allowed(allow: &[ipfib::prefix::AnyPrefix], ip: IpAddr) -> bool {
    use ipfib::prefix::{AnyAddr, AnyPrefix};
    if allow.is_empty() {
        return true;
    }
    let a = AnyAddr::unmapped(ip);
    allow.iter().any(|p| match (p, a) {
        (AnyPrefix::V4(p), AnyAddr::V4(a)) => p.contains(a),
        (AnyPrefix::V6(p), AnyAddr::V6(a)) => p.contains(a),
        _ => false,
    })
}

/// Bytes of unfinished messages a session holds, counted in the shared
/// gauge (`--max-buffered`); given back when the session ends.
struct Held<'a> {
    gauge: &'a AtomicU64,
    mine: u64,
}

impl Held<'_> {
    /// Set this session's share to `n`; false if that takes the total
    /// past `max` (the share is then unchanged).
    fn set(&mut self, n: u64, max: u64) -> bool {
        if n > self.mine {
            let more = n - self.mine;
            let before = self.gauge.fetch_add(more, Ordering::Relaxed);
            if before + more > max {
                self.gauge.fetch_sub(more, Ordering::Relaxed);
                return false;
            }
        } else {
            self.gauge.fetch_sub(self.mine - n, Ordering::Relaxed);
        }
        self.mine = n;
        true
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.gauge.fetch_sub(self.mine, Ordering::Relaxed);
    }
}

/// What the HTTP API shows of a session.
pub struct SessionShared {
    pub id: u64,
    pub remote: SocketAddr,
    pub connected_at: i64,
    pub messages: AtomicU64,
    pub bytes: AtomicU64,
    pub sys_name: OnceLock<String>,
    pub sys_descr: OnceLock<String>,
    /// Why it ended; unset while open.
    pub ended: OnceLock<(i64, String)>,
}

/// Sessions, open and recently closed (the last `KEEP_CLOSED`).
#[derive(Default)]
pub struct Registry {
    sessions: Mutex<BTreeMap<u64, Arc<SessionShared>>>,
}

const KEEP_CLOSED: usize = 256;

impl Registry {
    fn add(&self, s: Arc<SessionShared>) {
        let mut m = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        m.insert(s.id, s);
        let closed: Vec<u64> = m
            .values()
            .filter(|s| s.ended.get().is_some())
            .map(|s| s.id)
            .collect();
        if closed.len() > KEEP_CLOSED {
            for id in &closed[..closed.len() - KEEP_CLOSED] {
                m.remove(id);
            }
        }
    }

    pub fn list(&self) -> Vec<Arc<SessionShared>> {
        let m = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        m.values().cloned().collect()
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Error log lines per second a session may write; the rest are counted.
const ERROR_LINES_PER_SECOND: u32 = 10;

/// The per-session rate limit of UPDATE error log lines.
struct LogLimit {
    since: Instant,
    lines: u32,
    suppressed: u64,
}

/// Log the session's RFC 7606 errors (rate-limited) and add its new
/// counts to the service's metrics.
fn publish(ctx: &Ctx, id: u64, s: &mut Session, seen: &mut SessionStats, limit: &mut LogLimit) {
    let m = &ctx.metrics;
    let st = &s.stats;
    let add = |a: &AtomicU64, now: u64, before: u64| {
        if now > before {
            a.fetch_add(now - before, Ordering::Relaxed);
        }
    };
    add(
        &m.update_errors[0],
        st.attribute_discard,
        seen.attribute_discard,
    );
    add(
        &m.update_errors[1],
        st.treat_as_withdraw,
        seen.treat_as_withdraw,
    );
    add(&m.update_errors[2], st.session_reset, seen.session_reset);
    add(&m.labeled_nlri, st.labeled_nlri, seen.labeled_nlri);
    add(&m.vpn_nlri, st.vpn_nlri, seen.vpn_nlri);
    add(
        &m.skipped_families,
        st.skipped_families,
        seen.skipped_families,
    );
    add(&m.adj_rib_out, st.adj_rib_out, seen.adj_rib_out);
    add(
        &m.peers_over_limit,
        st.peers_over_limit,
        seen.peers_over_limit,
    );
    add(
        &m.routes_over_limit,
        st.routes_over_limit,
        seen.routes_over_limit,
    );
    // Each limit is noted once per neighbour (or session): no rate limit.
    for note in s.limit_notes.drain(..) {
        tracing::warn!(session = id, "{note}");
    }
    let new_errors = (st.attribute_discard + st.treat_as_withdraw)
        .saturating_sub(seen.attribute_discard + seen.treat_as_withdraw);
    *seen = st.clone();
    let events = s.take_errors();
    // Errors past the session's event buffer were counted, not kept.
    let unkept = new_errors.saturating_sub(events.len() as u64);
    limit.suppressed += unkept;
    m.update_error_logs_suppressed
        .fetch_add(unkept, Ordering::Relaxed);
    for e in events {
        if limit.since.elapsed() >= Duration::from_secs(1) {
            if limit.suppressed > 0 {
                tracing::warn!(
                    session = id,
                    suppressed = limit.suppressed,
                    "UPDATE error log lines suppressed"
                );
            }
            limit.since = Instant::now();
            limit.lines = 0;
            limit.suppressed = 0;
        }
        if limit.lines < ERROR_LINES_PER_SECOND {
            limit.lines += 1;
            tracing::warn!(
                session = id,
                peer = %e.peer,
                peer_type = e.peer_type,
                rd = %ipfib_rib::instance::format_rd(e.distinguisher),
                offset = e.at,
                action = e.action,
                error = %e.what,
                "BGP UPDATE attribute error (RFC 7606)"
            );
        } else {
            limit.suppressed += 1;
            m.update_error_logs_suppressed
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Accept BMP connections until shutdown.
pub async fn listen(listener: TcpListener, ctx: Arc<Ctx>, shutdown: watch::Receiver<bool>) {
    let next_id = AtomicU64::new(1);
    let mut stop = shutdown.clone();
    let sources = Arc::new(Sources::default());
    let mut errors = super::server::ErrorLog::default();
    let mut refusals = super::server::ErrorLog::default();
    loop {
        let (stream, remote) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    errors.note("BMP accept failed", &e);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        let m = &ctx.metrics;
        let refuse = |reason: &str| {
            m.refuse(reason);
            if reason == "session_limit" {
                m.sessions_refused.fetch_add(1, Ordering::Relaxed);
            }
        };
        if !allowed(&ctx.opts.bmp_allow, remote.ip()) {
            refuse("not_allowed");
            let e = std::io::Error::other(format!("{remote} is not in --bmp-allow"));
            refusals.note("BMP connection refused", &e);
            drop(stream);
            continue;
        }
        if m.sessions_open.load(Ordering::Relaxed) as usize >= ctx.opts.max_sessions {
            refuse("session_limit");
            tracing::warn!(%remote, limit = ctx.opts.max_sessions, "BMP session refused: session limit reached");
            drop(stream);
            continue;
        }
        if !sources.try_add(remote.ip(), ctx.opts.max_per_source) {
            refuse("per_source_limit");
            let e = std::io::Error::other(format!(
                "source {} already has {} sessions",
                match source_key(remote.ip()) {
                    IpAddr::V6(net) => format!("{net}/64"),
                    v4 => v4.to_string(),
                },
                ctx.opts.max_per_source
            ));
            refusals.note("BMP connection refused", &e);
            drop(stream);
            continue;
        }
        m.sessions_accepted.fetch_add(1, Ordering::Relaxed);
        m.sessions_open.fetch_add(1, Ordering::Relaxed);
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let ctx = Arc::clone(&ctx);
        let shutdown = shutdown.clone();
        let sources = Arc::clone(&sources);
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            run_session(stream, remote, id, &ctx, shutdown).await;
            sources.remove(remote.ip());
            ctx.metrics.sessions_open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Read, frame and apply one connection's messages until it ends; then,
/// after the grace period, its peers go down.
async fn run_session(
    mut stream: TcpStream,
    remote: SocketAddr,
    id: u64,
    ctx: &Arc<Ctx>,
    mut shutdown: watch::Receiver<bool>,
) {
    let shared = Arc::new(SessionShared {
        id,
        remote,
        connected_at: unix_now(),
        messages: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        sys_name: OnceLock::new(),
        sys_descr: OnceLock::new(),
        ended: OnceLock::new(),
    });
    ctx.sessions.add(Arc::clone(&shared));
    tracing::info!(session = id, %remote, "BMP session open");
    let mut session = Session::new(id, Arc::clone(&ctx.rib));
    // A warm restart matches a router's returning peers on its address.
    session.router = Some(ipfib_rib::unmap(remote.ip()));
    let opts = &ctx.opts;
    session.limits = opts.limits;
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut partial_since: Option<Instant> = None;
    let mut seen = SessionStats::default();
    let mut limit = LogLimit {
        since: Instant::now(),
        lines: 0,
        suppressed: 0,
    };
    let mut held = Held {
        gauge: &ctx.metrics.buffered,
        mine: 0,
    };
    // Until the first complete message: the Initiation deadline.
    let initiation_by = Instant::now() + opts.initiation_timeout;
    let (reason, detail): (&str, String) = 'outer: loop {
        // Apply every complete message in the buffer.
        let mut start = 0;
        loop {
            match frame(&buf[start..], opts.max_message) {
                Ok(Some(n)) => {
                    let msg = &buf[start..start + n];
                    let kind = msg[5] as usize;
                    let r = session.handle(msg);
                    publish(ctx, id, &mut session, &mut seen, &mut limit);
                    if msg[5] == INITIATION {
                        // Shown by /api/v1/peers as soon as it is read.
                        if let Some(n) = &session.info.sys_name {
                            let _ = shared.sys_name.set(n.clone());
                        }
                        if let Some(d) = &session.info.sys_descr {
                            let _ = shared.sys_descr.set(d.clone());
                        }
                    }
                    if let Err(e) = r {
                        break 'outer (
                            "decode_error",
                            format!(
                                "message at byte {} of the stream: {e}",
                                shared.bytes.load(Ordering::Relaxed)
                            ),
                        );
                    }
                    ctx.metrics.messages[kind].fetch_add(1, Ordering::Relaxed);
                    ctx.metrics.bytes.fetch_add(n as u64, Ordering::Relaxed);
                    shared.messages.fetch_add(1, Ordering::Relaxed);
                    shared.bytes.fetch_add(n as u64, Ordering::Relaxed);
                    start += n;
                }
                Ok(None) => break,
                Err(e) => {
                    break 'outer (
                        "decode_error",
                        format!(
                            "header at byte {} of the stream: {e}",
                            shared.bytes.load(Ordering::Relaxed)
                        ),
                    )
                }
            }
        }
        if start > 0 {
            buf.drain(..start);
        }
        // A message begun and not finished within the slow-sender
        // timeout ends the session; otherwise wait up to the idle timeout.
        // The clock runs from the start of the unfinished message: it
        // restarts whenever a message completed in this round.
        partial_since = if buf.is_empty() {
            None
        } else if start > 0 {
            Some(Instant::now())
        } else {
            partial_since.or(Some(Instant::now()))
        };
        if !held.set(buf.len() as u64, opts.max_buffered as u64) {
            break (
                "buffer_limit",
                format!(
                    "{} bytes of an unfinished message with --max-buffered {} reached",
                    buf.len(),
                    opts.max_buffered
                ),
            );
        }
        let first = shared.messages.load(Ordering::Relaxed) == 0;
        if first && Instant::now() >= initiation_by {
            break (
                "no_initiation",
                format!("no complete message within {:?}", opts.initiation_timeout),
            );
        }
        let wait = match partial_since {
            Some(t) => match opts.slow_timeout.checked_sub(t.elapsed()) {
                Some(w) => w,
                None => {
                    break (
                        "slow_sender",
                        format!(
                            "{} bytes of an unfinished message for {:?}",
                            buf.len(),
                            opts.slow_timeout
                        ),
                    )
                }
            },
            None => opts.idle_timeout,
        };
        let wait = if first {
            wait.min(initiation_by.saturating_duration_since(Instant::now()))
        } else {
            wait
        };
        if buf.capacity() - buf.len() < 1 << 14 {
            buf.reserve(1 << 16);
        }
        tokio::select! {
            r = tokio::time::timeout(wait, stream.read_buf(&mut buf)) => match r {
                Err(_) if partial_since.is_some() => continue,
                Err(_) if first && Instant::now() >= initiation_by => continue,
                Err(_) => break ("idle_timeout", format!("no data for {wait:?}")),
                Ok(Ok(0)) => break ("closed", if session.info.terminated { "after Termination".into() } else { "by the sender".into() }),
                Ok(Ok(_)) => {}
                Ok(Err(e)) => break ("io_error", e.to_string()),
            },
            _ = shutdown.changed() => break ("shutdown", String::new()),
        }
    };
    let _ = shared
        .ended
        .set((unix_now(), format!("{reason}: {detail}")));
    ctx.metrics.end(reason);
    let peers = session.live_peers();
    match reason {
        "closed" | "shutdown" => {
            tracing::info!(session = id, %remote, reason, detail, messages = shared.messages.load(Ordering::Relaxed), "BMP session ended")
        }
        _ => {
            tracing::warn!(session = id, %remote, reason, detail, messages = shared.messages.load(Ordering::Relaxed), "BMP session ended")
        }
    }
    if reason == "shutdown" || peers.is_empty() {
        return;
    }
    // The grace period: the routes stay (a router restarting its BMP
    // session keeps its collector's view), then go.
    let rib = Arc::clone(&ctx.rib);
    let grace = opts.grace;
    tokio::spawn(async move {
        tokio::time::sleep(grace).await;
        let n = peers.iter().filter(|&&p| rib.peer_down(p)).count();
        tracing::info!(
            session = id,
            peers = n,
            "grace period over: the session's peers are down"
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_count_ipv4_addresses_and_ipv6_64s() {
        let k = |s: &str| source_key(s.parse().unwrap()).to_string();
        assert_eq!(k("192.0.2.7"), "192.0.2.7");
        assert_eq!(k("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(k("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::");
        assert_eq!(k("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::");
        let s = Sources::default();
        let ip = |i: usize| format!("2001:db8:1:2::{i:x}").parse().unwrap();
        // A /64 holds V6_NET_FACTOR times the cap of 2, over any addresses.
        for i in 0..2 * V6_NET_FACTOR {
            assert!(s.try_add(ip(i + 1), 2), "session {i}");
        }
        assert!(!s.try_add(ip(100), 2));
        assert!(s.try_add("2001:db8:1:3::3".parse().unwrap(), 2));
        s.remove(ip(1));
        assert!(s.try_add(ip(100), 2));
        // IPv4: the cap itself, per address.
        assert!(s.try_add("192.0.2.1".parse().unwrap(), 2));
        assert!(s.try_add("::ffff:192.0.2.1".parse().unwrap(), 2));
        assert!(!s.try_add("192.0.2.1".parse().unwrap(), 2));
        for i in 1..2 * V6_NET_FACTOR {
            s.remove(ip(i + 1));
        }
        s.remove(ip(100));
        s.remove("2001:db8:1:3::3".parse().unwrap());
        s.remove("192.0.2.1".parse().unwrap());
        s.remove("192.0.2.1".parse().unwrap());
        assert!(s.open.lock().unwrap().is_empty());
    }
}
