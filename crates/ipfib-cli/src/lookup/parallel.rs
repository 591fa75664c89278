//! `ipfib lookup --threads N` on stdin: the calling thread reads the input
//! and cuts it into chunks of whole lines (about one read block each),
//! `N` workers answer chunks as the one-thread reader answers its input
//! (`stream::answer_lines`, each worker with its own answer cache), and
//! the calling thread writes their answers and messages in input order.
//!
//! What a chunk is, so that every line means what it means on one thread:
//! whole lines ending at `\n`, or the input's last line without one. A
//! line longer than `max_line` is cut at `max_line + 1` bytes into a chunk
//! of its own (its worker reports it as too long, counted once, as one
//! thread does) and the rest of it is dropped here unread by any worker.
//! Each chunk carries its first line's number (the `\n`s before it), so
//! messages name the same lines. Each worker shows at most
//! `ipfib_io::KEPT_ERRORS` messages per chunk; the writer shows the
//! input's first `KEPT_ERRORS` and then the same total line.
//!
//! Memory: at most `2 * N + 2` chunks are read and not yet written (a
//! token per chunk, returned when its answers are written), so a slow
//! worker holds the reader back instead of the answers piling up.

use super::answer::Answer;
use super::stream::{answer_lines, Failure, Limits, Responder};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Mutex;

/// A chunk of whole lines: its place in the input and its first line's
/// number (lines before it).
struct Chunk {
    seq: u64,
    first_line: u64,
    bytes: Vec<u8>,
}

/// A chunk answered (`failed`: its worker panicked, a bug: the run
/// stops rather than wait for answers that will never come).
struct Done {
    seq: u64,
    out: Vec<u8>,
    err: Vec<u8>,
    bad: u64,
    failed: bool,
}

/// Answer every line of `input` onto `out` on up to `threads` workers,
/// messages onto `err`; the number of bad lines. A read or write error
/// stops it (what was answered before a read error is written). `None`:
/// no worker thread could start, and nothing was read (answer on this
/// thread instead).
pub fn answer_lines_threads<T: Answer + Sync>(
    table: &T,
    input: impl Read,
    out: &mut impl Write,
    err: &mut impl Write,
    limits: Limits,
    threads: usize,
) -> Option<Result<u64, Failure>> {
    let max_line = limits.max_line;
    let block = limits.block.max(max_line.saturating_add(2)).min(1 << 30);
    let in_flight = 2 * threads + 2;
    let (chunk_tx, chunk_rx) = mpsc::sync_channel::<Chunk>(in_flight);
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    // Tokens: one per chunk read and not yet written.
    let (token_tx, token_rx) = mpsc::sync_channel::<()>(in_flight);
    for _ in 0..in_flight {
        let _ = token_tx.send(());
    }
    let chunk_rx = Mutex::new(chunk_rx);
    // Borrowed by the workers; the rest moves in, so that the chunk
    // sender drops (and the workers end) when the scope's body returns.
    let chunk_rx = &chunk_rx;
    // Set after a write error: the workers answer nothing more.
    let stop = &AtomicBool::new(false);
    let mut input = input;
    std::thread::scope(move |s| {
        let started = (0..threads)
            .filter(|_| {
                let done_tx = done_tx.clone();
                std::thread::Builder::new()
                    .name("ipfib-lookup".into())
                    .spawn_scoped(s, move || work(table, chunk_rx, done_tx, limits, stop))
                    .is_ok()
            })
            .count();
        drop(done_tx);
        if started == 0 {
            return None;
        }
        let mut w = Writer {
            next: 0,
            held: BTreeMap::new(),
            bad: 0,
            shown: 0,
            tokens: &token_tx,
        };
        let read = read_chunks(&mut input, block, max_line, |c| {
            // Wait for a token (a chunk written), writing what is ready.
            while token_rx.try_recv().is_err() {
                let d = done_rx
                    .recv()
                    .map_err(|_| io::Error::other("the lookup threads ended"))?;
                w.take(d, out, err)?;
            }
            chunk_tx
                .send(c)
                .map_err(|_| io::Error::other("the lookup threads ended"))
        });
        // The workers end once the chunks sent are answered.
        drop(chunk_tx);
        if let Err(ReadStop::Write(e)) = read {
            stop.store(true, Ordering::Relaxed);
            return Some(Err(Failure::Write(e)));
        }
        let written = (|| {
            for d in done_rx.iter() {
                w.take(d, out, err)?;
            }
            out.flush()
        })();
        if written.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        // As one thread: a read error is the one reported (the answers
        // before it written as far as they could be), and after a write
        // error no total is written.
        if written.is_ok() {
            w.summary(err);
        }
        Some(match (read, written) {
            (Err(ReadStop::Read(e)), _) => Err(Failure::Read(e)),
            (Err(ReadStop::Write(e)), _) | (Ok(()), Err(e)) => Err(Failure::Write(e)),
            (Ok(()), Ok(())) => Ok(w.bad),
        })
    })
}

/// One worker: answer chunks until there are none.
fn work<T: Answer>(
    table: &T,
    chunks: &Mutex<Receiver<Chunk>>,
    done: mpsc::Sender<Done>,
    limits: Limits,
    stop: &AtomicBool,
) {
    let mut r = Responder::new(table, Vec::new());
    r.summarise = false;
    loop {
        let next = chunks.lock().ok().and_then(|rx| rx.recv().ok());
        let Some(c) = next else { break };
        if stop.load(Ordering::Relaxed) {
            break;
        }
        r.start_chunk(c.first_line);
        let mut out = Vec::with_capacity(c.bytes.len() * 2);
        // Reading a slice cannot fail, nor writing to a Vec.
        let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = answer_lines(&mut r, &c.bytes[..], &mut out, limits);
        }));
        let failed = answered.is_err();
        let d = Done {
            seq: c.seq,
            out,
            err: std::mem::take(r.err_mut()),
            bad: r.bad(),
            failed,
        };
        if done.send(d).is_err() || failed {
            break;
        }
    }
}

/// Writes chunks' answers in input order.
struct Writer<'a> {
    next: u64,
    held: BTreeMap<u64, Done>,
    bad: u64,
    /// Messages shown so far (of the first `KEPT_ERRORS`).
    shown: u64,
    tokens: &'a SyncSender<()>,
}

impl Writer<'_> {
    fn take(&mut self, d: Done, out: &mut impl Write, err: &mut impl Write) -> io::Result<()> {
        if d.failed {
            return Err(io::Error::other(
                "a lookup thread panicked (a bug in ipfib: please report it)",
            ));
        }
        self.held.insert(d.seq, d);
        while let Some(d) = self.held.remove(&self.next) {
            // Messages first: one thread writes a line's message as it
            // reads the line, before its buffered answers go out.
            self.bad += d.bad;
            let kept = ipfib_io::KEPT_ERRORS as u64;
            for line in d.err.split_inclusive(|&b| b == b'\n') {
                if self.shown < kept {
                    self.shown += 1;
                    // A failing stderr is not worth stopping for.
                    let _ = err.write_all(line);
                }
            }
            out.write_all(&d.out)?;
            self.next += 1;
            let _ = self.tokens.try_send(());
        }
        Ok(())
    }

    /// The total of bad lines past the ones shown, as one thread writes
    /// it (a failing stderr is not worth stopping for).
    fn summary(&self, err: &mut impl Write) {
        let shown = ipfib_io::KEPT_ERRORS as u64;
        if self.bad > shown {
            let _ = err.write_all(
                format!(
                    "ipfib: {} bad stdin lines in all (the first {shown} shown)\n",
                    self.bad
                )
                .as_bytes(),
            );
        }
    }
}

/// Why reading stopped early.
enum ReadStop {
    Read(io::Error),
    Write(io::Error),
}

/// Cut `input` into chunks of whole lines (see the module's comment) and
/// hand each to `send`, in order.
fn read_chunks(
    input: &mut impl Read,
    block: usize,
    max_line: usize,
    mut send: impl FnMut(Chunk) -> io::Result<()>,
) -> Result<(), ReadStop> {
    let mut seq = 0u64;
    let mut line = 0u64;
    let mut emit = |bytes: Vec<u8>, lines: u64| -> Result<(), ReadStop> {
        let c = Chunk {
            seq,
            first_line: line,
            bytes,
        };
        seq += 1;
        line += lines;
        send(c).map_err(ReadStop::Write)
    };
    let mut scratch = vec![0u8; block];
    let mut buf: Vec<u8> = Vec::with_capacity(2 * block);
    // `buf[tail..]` is the unfinished line (no `\n`).
    let mut tail = 0;
    // The rest of an over-long line (already sent) is being dropped.
    let mut skipping = false;
    loop {
        let n = loop {
            match input.read(&mut scratch) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // The whole lines read before the error are answered
                    // (as on one thread; the unfinished one is not).
                    if tail > 0 {
                        buf.truncate(tail);
                        let lines = count_lines(&buf);
                        emit(buf, lines)?;
                    }
                    return Err(ReadStop::Read(e));
                }
            }
        };
        let eof = n == 0;
        let mut piece = &scratch[..n];
        if skipping {
            match piece.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    piece = &piece[i + 1..];
                    skipping = false;
                }
                None => piece = &[],
            }
        }
        let old = buf.len();
        buf.extend_from_slice(piece);
        if let Some(j) = piece.iter().rposition(|&b| b == b'\n') {
            tail = old + j + 1;
        }
        // Whole lines out once a block's worth is gathered, or before an
        // over-long line, or at the end.
        let long = buf.len() - tail > max_line;
        if tail > 0 && (tail >= block || long || eof) {
            let rest = buf.split_off(tail);
            let whole = std::mem::replace(&mut buf, rest);
            tail = 0;
            let lines = count_lines(&whole);
            emit(whole, lines)?;
        }
        if long {
            // Its first `max_line + 1` bytes alone: a bad line, counted
            // once; the rest dropped up to its `\n`.
            buf.truncate(max_line + 1);
            emit(std::mem::take(&mut buf), 1)?;
            skipping = true;
        }
        if eof {
            if !buf.is_empty() {
                emit(std::mem::take(&mut buf), 1)?;
            }
            return Ok(());
        }
    }
}

/// Lines in a chunk of whole lines: its `\n`s.
fn count_lines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}
