//! The HTTP server loop: hyper's HTTP/1 connections under the collector's
//! own limits (a stranger's connections must not take the process's file
//! descriptors, memory or the BMP side's accepts).
//!
//! - at most `max_conns` connections at a time; past that a new one gets
//!   a short 503 written without waiting and is closed;
//! - the request head (and, between keep-alive requests, the next one)
//!   must arrive within `header_timeout`, or the connection is closed;
//! - a handler has `request_timeout` to produce its answer's head (503
//!   past it), and a response body the client stops reading for
//!   `write_stall` ends the connection;
//! - accept errors (e.g. out of file descriptors) are logged at most once
//!   a second, with a count of the ones not logged, and back off briefly.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio::time::Sleep;

use super::Ctx;

/// The HTTP side's limits (`ipfib collect --http-*`).
#[derive(Clone, Debug)]
pub struct HttpLimits {
    pub max_conns: usize,
    pub header_timeout: Duration,
    pub request_timeout: Duration,
    pub write_stall: Duration,
}

const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\
content-type: text/plain\r\ncontent-length: 32\r\nretry-after: 1\r\n\r\n\
too many connections, try again\n";

/// Accept and serve HTTP connections until `stop` flips; then let each
/// connection finish its request (bounded by the caller's timeout).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    ctx: Arc<Ctx>,
    mut stop: watch::Receiver<bool>,
) -> io::Result<()> {
    let limits = ctx.opts.http.clone();
    let slots = Arc::new(Semaphore::new(limits.max_conns.max(1)));
    let mut errors = ErrorLog::default();
    loop {
        let (stream, _remote) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    errors.note("HTTP accept failed", &e);
                    // Out of descriptors: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            ctx.metrics.http_refused.fetch_add(1, Ordering::Relaxed);
            // Best effort, never waits: a full socket buffer just closes.
            let _ = stream.try_write(BUSY);
            drop(stream);
            continue;
        };
        ctx.metrics.http_conns.fetch_add(1, Ordering::Relaxed);
        let (router, ctx, stop, limits) = (
            router.clone(),
            Arc::clone(&ctx),
            stop.clone(),
            limits.clone(),
        );
        tokio::spawn(async move {
            connection(stream, router, &limits, stop).await;
            ctx.metrics.http_conns.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
    }
    // Wait (the caller bounds it) for the open connections to finish.
    let _ = slots.acquire_many(limits.max_conns.max(1) as u32).await;
    Ok(())
}

async fn connection(
    stream: TcpStream,
    router: Router,
    limits: &HttpLimits,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(Stalling::new(stream, limits.write_stall));
    let svc = hyper_util::service::TowerToHyperService::new(router);
    let mut b = hyper::server::conn::http1::Builder::new();
    b.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(64 * 1024)
        .keep_alive(true);
    let conn = b.serve_connection(io, svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = stop.changed() => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(Duration::from_secs(4), conn).await;
}

/// A TCP stream whose writes fail with `TimedOut` once one has been
/// pending (the client not reading) for longer than `stall`.
struct Stalling {
    inner: TcpStream,
    stall: Duration,
    blocked: Option<Pin<Box<Sleep>>>,
}

impl Stalling {
    fn new(inner: TcpStream, stall: Duration) -> Self {
        Stalling {
            inner,
            stall,
            blocked: None,
        }
    }

    fn check<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match r {
            Poll::Pending => {
                let stall = self.stall;
                let timer = self
                    .blocked
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
                if timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client stopped reading",
                    )));
                }
                Poll::Pending
            }
            ready => {
                self.blocked = None;
                ready
            }
        }
    }
}

impl AsyncRead for Stalling {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stalling {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.check(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.check(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.check(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Accept errors, logged at most once a second (a descriptor shortage
/// fails every accept: one line per failure would flood the log).
#[derive(Default)]
pub struct ErrorLog {
    last: Option<Instant>,
    quiet: u64,
}

impl ErrorLog {
    pub fn note(&mut self, what: &str, e: &io::Error) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            self.quiet += 1;
            return;
        }
        self.last = Some(now);
        let suppressed = std::mem::take(&mut self.quiet);
        tracing::warn!(error = %e, suppressed, "{what}");
    }
}

/// Raise the soft limit of open files to the hard limit: each connection
/// (BMP or HTTP) is one descriptor, and the default soft limit (often
/// 1024) is below what `--max-sessions` plus `--http-max-conns` need.
/// Returns (before, after), or `None` where it is not supported.
#[cfg(target_os = "linux")]
pub fn raise_nofile() -> Option<(u64, u64)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the limits into `r`, a valid, owned
    // `rlimit`; failure is reported through the return value.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return None;
    }
    let before = r.rlim_cur;
    if r.rlim_cur < r.rlim_max {
        r.rlim_cur = r.rlim_max;
        // SAFETY: setrlimit reads the `rlimit` passed by reference; raising
        // the soft limit up to the hard one needs no privilege, and failure
        // is reported through the return value.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } != 0 {
            return Some((before, before));
        }
    }
    Some((before, r.rlim_cur))
}

#[cfg(not(target_os = "linux"))]
pub fn raise_nofile() -> Option<(u64, u64)> {
    None
}
