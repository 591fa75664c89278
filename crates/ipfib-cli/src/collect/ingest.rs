//! The BMP side: a listener and one task per connection. Each task owns
//! its session (framing buffer, neighbours, decoder); the only shared
//! things are the RIB (lock-free for readers), the metrics (atomics) and
//! the session registry (touched at connect and disconnect only).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ipfib_rib::bmp::{frame, Session, SessionStats, INITIATION};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::Ctx;

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
    loop {
        let (stream, remote) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(error = %e, "BMP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        let m = &ctx.metrics;
        if m.sessions_open.load(Ordering::Relaxed) as usize >= ctx.opts.max_sessions {
            m.sessions_refused.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%remote, limit = ctx.opts.max_sessions, "BMP session refused: session limit reached");
            drop(stream);
            continue;
        }
        m.sessions_accepted.fetch_add(1, Ordering::Relaxed);
        m.sessions_open.fetch_add(1, Ordering::Relaxed);
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        let ctx = Arc::clone(&ctx);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            run_session(stream, remote, id, &ctx, shutdown).await;
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
    let opts = &ctx.opts;
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut partial_since: Option<Instant> = None;
    let mut seen = SessionStats::default();
    let mut limit = LogLimit {
        since: Instant::now(),
        lines: 0,
        suppressed: 0,
    };
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
        if buf.capacity() - buf.len() < 1 << 14 {
            buf.reserve(1 << 16);
        }
        tokio::select! {
            r = tokio::time::timeout(wait, stream.read_buf(&mut buf)) => match r {
                Err(_) if partial_since.is_some() => continue,
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
