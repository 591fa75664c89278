//! `ipfib bmp-replay`: send recorded BMP streams to a collector, at full
//! speed or at a given rate, over several concurrent sessions. The load
//! generator of the collector's tests and benchmarks.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipfib_rib::bmp::frame;

use crate::{CmdResult, Outcome};

/// Send recorded BMP streams (zstd, gzip, bzip2 or plain) to a collector.
#[derive(clap::Args)]
pub struct Args {
    /// Recorded BMP streams (one BMP session each).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The collector's BMP address.
    #[arg(long)]
    to: SocketAddr,
    /// Concurrent sessions per file (each sends the whole file).
    #[arg(long, default_value_t = 1)]
    sessions: usize,
    /// Messages per second per session (0: as fast as the collector reads).
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Keep each connection open this many seconds after the last message
    /// (a router whose BMP session stays up).
    #[arg(long, default_value_t = 0.0)]
    linger: f64,
    /// Leave out Peer Down messages and Route Monitoring messages that only
    /// withdraw: the collector ends up holding every route the stream
    /// announced, as if the routers stayed up.
    #[arg(long)]
    keep_routes: bool,
    /// Write a JSON summary here.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Message boundaries of a whole stream; an error names the byte offset.
fn split(buf: &[u8], name: &str) -> Result<Vec<(usize, usize)>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        match frame(&buf[at..], usize::MAX) {
            Ok(Some(n)) => {
                out.push((at, n));
                at += n;
            }
            Ok(None) => return Err(format!("{name}: truncated BMP message at byte {at}")),
            Err(e) => return Err(format!("{name}: byte {at}: {e}")),
        }
    }
    Ok(out)
}

struct Sent {
    messages: u64,
    bytes: u64,
    /// Until the last byte was handed to the socket (socket buffers
    /// included: not the collector's speed).
    secs: f64,
    /// Until the collector closed the connection after reading all of it,
    /// the linger left out; `None` when it did not within the wait.
    read_secs: Option<f64>,
}

/// How long to wait for the collector to close a connection after the
/// last message (it closes once it has read everything).
const CLOSE_WAIT: Duration = Duration::from_secs(10);

fn send(
    addr: SocketAddr,
    buf: &[u8],
    msgs: &[(usize, usize)],
    rate: f64,
    linger: Duration,
) -> Result<Sent, String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let _ = s.set_nodelay(rate > 0.0);
    let start = Instant::now();
    if rate <= 0.0 {
        s.write_all(buf)
            .map_err(|e| format!("send to {addr}: {e}"))?;
    } else {
        // Paced in batches of about a millisecond's worth.
        let per_batch = ((rate / 1000.0).ceil() as usize).max(1);
        for (i, chunk) in msgs.chunks(per_batch).enumerate() {
            let due = Duration::from_secs_f64((i * per_batch) as f64 / rate);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
            let (a, _) = chunk[0];
            let (b, n) = chunk[chunk.len() - 1];
            s.write_all(&buf[a..b + n])
                .map_err(|e| format!("send to {addr}: {e}"))?;
        }
    }
    s.flush().map_err(|e| format!("send to {addr}: {e}"))?;
    let secs = start.elapsed().as_secs_f64();
    if !linger.is_zero() {
        std::thread::sleep(linger);
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    // Wait (bounded) for the collector to close its side: it has read all.
    let _ = s.set_read_timeout(Some(CLOSE_WAIT));
    let mut sink = [0u8; 256];
    let read_secs = loop {
        match s.read(&mut sink) {
            Ok(0) => break Some((start.elapsed().saturating_sub(linger)).as_secs_f64()),
            Ok(_) => {}
            // A reset after our shutdown is the collector closing too.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                break Some((start.elapsed().saturating_sub(linger)).as_secs_f64())
            }
            Err(_) => break None,
        }
    };
    Ok(Sent {
        messages: msgs.len() as u64,
        bytes: buf.len() as u64,
        secs,
        read_secs,
    })
}

/// Whether a message is a Peer Down, or a Route Monitoring whose UPDATE
/// announces nothing (no NLRI after the attributes, no MP_REACH_NLRI).
fn only_removes(m: &[u8]) -> bool {
    match m.get(5) {
        Some(2) => true,
        Some(0) => {
            let bgp = m.get(6 + 42..).unwrap_or(&[]);
            let be16 = |b: &[u8], i: usize| {
                b.get(i..i + 2)
                    .map(|x| u16::from_be_bytes([x[0], x[1]]) as usize)
            };
            let (Some(total), Some(wlen)) = (be16(bgp, 16), be16(bgp, 19)) else {
                return false;
            };
            let Some(alen) = be16(bgp, 21 + wlen) else {
                return false;
            };
            let attrs_at = 23 + wlen;
            let Some(mut attrs) = bgp.get(attrs_at..attrs_at + alen) else {
                return false;
            };
            let nlri = total.saturating_sub(attrs_at + alen);
            let mut mp_reach = false;
            while attrs.len() >= 3 {
                let (flags, code) = (attrs[0], attrs[1]);
                let (len, head): (usize, usize) = if flags & 0x10 != 0 {
                    (be16(attrs, 2).unwrap_or(usize::MAX), 4)
                } else {
                    (attrs[2] as usize, 3)
                };
                mp_reach |= code == 14;
                attrs = attrs.get(head.saturating_add(len)..).unwrap_or(&[]);
            }
            nlri == 0 && !mp_reach
        }
        _ => false,
    }
}

pub fn run(args: Args) -> CmdResult {
    if !(args.rate.is_finite() && (args.rate == 0.0 || args.rate >= 0.001)) {
        return Err(format!(
            "--rate {}: expected 0 (full speed) or at least 0.001 messages/s",
            args.rate
        )
        .into());
    }
    if args.sessions == 0 {
        return Err("--sessions 0: expected at least 1".into());
    }
    let mut streams = Vec::new();
    for f in &args.files {
        let mut buf = Vec::new();
        ipfib_io::open_maybe_compressed(f)
            .map_err(|e| format!("{}: {e}", f.display()))?
            .read_to_end(&mut buf)
            .map_err(|e| format!("{}: {e}", f.display()))?;
        let mut msgs = split(&buf, &f.display().to_string())?;
        if args.keep_routes {
            msgs.retain(|&(a, n)| !only_removes(&buf[a..a + n]));
            let mut kept = Vec::with_capacity(buf.len());
            let mut at = 0;
            for m in msgs.iter_mut() {
                kept.extend_from_slice(&buf[m.0..m.0 + m.1]);
                *m = (at, m.1);
                at += m.1;
            }
            buf = kept;
        }
        streams.push((Arc::new(buf), Arc::new(msgs)));
    }
    let linger =
        Duration::try_from_secs_f64(args.linger).map_err(|_| "--linger: expected seconds >= 0")?;
    let start = Instant::now();
    let mut handles = Vec::new();
    for (buf, msgs) in &streams {
        for _ in 0..args.sessions {
            let (buf, msgs) = (Arc::clone(buf), Arc::clone(msgs));
            let (to, rate) = (args.to, args.rate);
            handles.push(std::thread::spawn(move || {
                send(to, &buf, &msgs, rate, linger)
            }));
        }
    }
    let (mut messages, mut bytes, mut failed) = (0u64, 0u64, 0usize);
    let mut slowest = 0f64;
    // The slowest session's time until the collector had read it all;
    // `None` once one session's close was not seen.
    let mut read = Some(0f64);
    for h in handles {
        match h.join() {
            Ok(Ok(s)) => {
                messages += s.messages;
                bytes += s.bytes;
                slowest = slowest.max(s.secs);
                read = read.zip(s.read_secs).map(|(a, b)| a.max(b));
            }
            Ok(Err(e)) => {
                eprintln!("ipfib bmp-replay: {e}");
                failed += 1;
            }
            Err(_) => failed += 1,
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let sessions = streams.len() * args.sessions;
    // The rate is the collector's: messages over the time until it had
    // read everything (it closes each connection then), not over the
    // time the writes took, which socket buffers make look instant.
    let rate = match read {
        Some(r) if failed == 0 => format!(
            "read by the collector in {r:.3} s ({:.0} messages/s)",
            messages as f64 / r.max(1e-9)
        ),
        _ => format!(
            "the collector did not close every session within {} s of its last message: \
             no read rate",
            CLOSE_WAIT.as_secs()
        ),
    };
    println!(
        "bmp-replay: {sessions} sessions, {messages} messages, {bytes} bytes written in \
         {slowest:.3} s, {rate}; {failed} failed; {wall:.3} s in all"
    );
    if let Some(out) = &args.json {
        let v = serde_json::json!({
            "sessions": sessions, "messages": messages, "bytes": bytes,
            "send_seconds": slowest, "read_seconds": read.filter(|_| failed == 0),
            "wall_seconds": wall, "failed": failed,
        });
        std::fs::write(out, serde_json::to_string_pretty(&v)?)
            .map_err(|e| format!("{}: {e}", out.display()))?;
    }
    if failed > 0 {
        return Err(format!("{failed} of {sessions} sessions failed").into());
    }
    Ok(Outcome::Ok)
}
