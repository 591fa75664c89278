//! `ipfib lookup`'s stdin path: input read in large blocks and split into
//! lines in place (no per-line allocation), addresses parsed from bytes
//! (`AnyAddr::parse_ascii`), looked up a batch at a time per family
//! (`lookup_batch`), and answered in input order into one output buffer
//! written in large pieces.
//!
//! Lines mean what they meant to the per-line reader this replaced: a line
//! ends at `\n` or at the end of input; one longer than `max_line` bytes
//! (not counting its `\n`) is a bad line, skipped and never held whole
//! (only `max_line` bytes of it are ever buffered); one that is not UTF-8
//! is a bad line; surrounding whitespace (`str::trim`, so a CR of CR LF
//! too) is dropped, and an empty line is skipped without a word. Anything
//! the byte parser refuses goes through `AnyAddr::parse` on the `str`, so
//! acceptance, the echoed text and the error messages are the old ones.
//! Only the first [`ipfib_io::KEPT_ERRORS`] bad lines (or arguments) are
//! named on stderr, then one line with their total, as table loading does:
//! a file of a million bad lines should not become a million stderr lines.

use super::answer::{put, Answer, Tails, PAD};
use ipfib::engine::NO_ROUTE;
use ipfib::prefix::AnyAddr;
use std::fmt;
use std::io::{self, Read, Write};

/// Sizes of the pieces.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Bytes asked of each read (at least `max_line + 2`).
    pub block: usize,
    /// The longest line read (`ipfib_io::MAX_LINE_BYTES`).
    pub max_line: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            block: 1 << 20,
            max_line: usize::try_from(ipfib_io::MAX_LINE_BYTES).unwrap_or(usize::MAX),
        }
    }
}

/// Lines parsed before their batch is looked up and written.
const BATCH: usize = 1024;
/// Output bytes gathered before a write.
const OUT_CHUNK: usize = 1 << 18;
/// The top bit of a pending answer's slot: an IPv6 one.
const V6: u32 = 1 << 31;

/// Why the stream stopped early.
#[derive(Debug)]
pub enum Failure {
    Read(io::Error),
    Write(io::Error),
}

/// Answers, in input order, for one batch of lines, with the lookups of
/// each family done together.
pub struct Responder<'t, T: Answer, E: Write> {
    table: &'t T,
    /// Slots of 32 bytes hold IPv4 tails of up to 31 (as long as
    /// ` 255.255.255.255/32 4294967295\n`), of 64 most IPv6 ones.
    tails_v4: Tails<32>,
    tails_v6: Tails<64>,
    /// Per answered line: its text (`start..end` in the current block) and
    /// its slot in `v4` (or in `v6`, with the `V6` bit).
    pending: Vec<(u32, u32, u32)>,
    v4: Vec<u32>,
    v6: Vec<u128>,
    ordinals_v4: Vec<u32>,
    ordinals_v6: Vec<u32>,
    /// Answers not yet written: `out[..used]` (the rest is room).
    out: Vec<u8>,
    used: usize,
    err: E,
    line_no: u64,
    bad: u64,
    /// The total of bad lines past the ones shown has been written.
    summarised: bool,
    /// `finish` writes that total (not a worker of `--threads`, whose
    /// writer totals every chunk's).
    pub(super) summarise: bool,
}

impl<'t, T: Answer, E: Write> Responder<'t, T, E> {
    pub fn new(table: &'t T, err: E) -> Self {
        Responder {
            table,
            tails_v4: Tails::new(table.routes_v4()),
            tails_v6: Tails::new(table.routes_v6()),
            pending: Vec::with_capacity(BATCH),
            v4: Vec::with_capacity(BATCH),
            v6: Vec::new(),
            ordinals_v4: vec![0; BATCH],
            ordinals_v6: vec![0; BATCH],
            out: vec![0; OUT_CHUNK + (1 << 16)],
            used: 0,
            err,
            line_no: 0,
            bad: 0,
            summarised: false,
            summarise: true,
        }
    }

    /// A worker of `--threads` starts a chunk whose first line is stdin
    /// line `lines + 1`: line numbers go on from there, bad lines are
    /// counted afresh.
    pub(super) fn start_chunk(&mut self, lines: u64) {
        self.line_no = lines;
        self.bad = 0;
    }

    /// Where messages went (a worker's, taken after each chunk).
    pub(super) fn err_mut(&mut self) -> &mut E {
        &mut self.err
    }

    /// Bad lines (or arguments) so far.
    pub fn bad(&self) -> u64 {
        self.bad
    }

    /// Report a bad line or argument on stderr (the first
    /// [`ipfib_io::KEPT_ERRORS`]; `finish` gives the total). A failing
    /// stderr is not worth stopping for (nor panicking, as `eprintln!`
    /// would).
    fn report(&mut self, place: fmt::Arguments<'_>, what: &dyn fmt::Display) {
        self.bad += 1;
        if self.bad <= ipfib_io::KEPT_ERRORS as u64 {
            let _ = self
                .err
                .write_all(format!("ipfib: {place}: {what}\n").as_bytes());
        }
    }

    /// The next stdin line is longer than `max_line` bytes.
    fn too_long(&mut self, max_line: usize) {
        self.line_no += 1;
        let n = self.line_no;
        self.report(
            format_args!("stdin line {n}"),
            &format_args!("line longer than {max_line} bytes (skipped)"),
        );
    }

    /// Take the next stdin line, `block[start..end]` (without its `\n`):
    /// queue its answer or report it. Call [`Responder::flush`] with the
    /// same block before it changes, and when `is_full`.
    #[inline]
    fn line(&mut self, block: &[u8], start: usize, end: usize, max_line: usize) {
        let line = block.get(start..end).unwrap_or_default();
        if line.len() > max_line {
            return self.too_long(max_line);
        }
        self.line_no += 1;
        // `str::trim` on ASCII: these six bytes are the ASCII part of
        // Unicode White_Space (`u8::is_ascii_whitespace` lacks \x0b).
        let ws = |b: &u8| matches!(b, b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r' | b' ');
        let lead = line.iter().take_while(|b| ws(b)).count();
        let trail = line[lead..].iter().rev().take_while(|b| ws(b)).count();
        let text = &line[lead..line.len() - trail];
        if text.is_empty() {
            return;
        }
        if let Some(addr) = AnyAddr::parse_ascii(text) {
            // The whole line is ASCII: the old reader's `trim` cut the same.
            return self.queue(start + lead, start + lead + text.len(), addr);
        }
        // Not a plain address: the per-line reader's path, for its
        // verdict and message (and non-ASCII whitespace around an address).
        let n = self.line_no;
        match std::str::from_utf8(line) {
            Err(_) => self.report(format_args!("stdin line {n}"), &"not valid UTF-8"),
            Ok(s) => {
                let t = s.trim();
                if t.is_empty() {
                    return;
                }
                match AnyAddr::parse(t) {
                    Ok(addr) => {
                        let lead = s.len() - s.trim_start().len();
                        self.queue(start + lead, start + lead + t.len(), addr)
                    }
                    Err(e) => self.report(format_args!("stdin line {n}"), &e),
                }
            }
        }
    }

    #[inline]
    fn queue(&mut self, start: usize, end: usize, addr: AnyAddr) {
        // Blocks are far below 4 GiB (`Limits`), so offsets fit in u32.
        let (start, end) = (start as u32, end as u32);
        match addr {
            AnyAddr::V4(a) => {
                self.pending.push((start, end, self.v4.len() as u32));
                self.v4.push(a);
            }
            AnyAddr::V6(a) => {
                self.pending.push((start, end, self.v6.len() as u32 | V6));
                self.v6.push(a);
            }
        }
    }

    fn is_full(&self) -> bool {
        self.pending.len() >= BATCH
    }

    /// Look up the queued lines, whose text is in `block`, and write their
    /// answers to `out` once enough are gathered.
    fn flush(&mut self, block: &[u8], out: &mut impl Write) -> io::Result<()> {
        let (n4, n6) = (self.v4.len(), self.v6.len());
        if self.ordinals_v4.len() < n4 {
            self.ordinals_v4.resize(n4, 0);
        }
        if self.ordinals_v6.len() < n6 {
            self.ordinals_v6.resize(n6, 0);
        }
        if n4 > 0 {
            self.table.batch_v4(&self.v4, &mut self.ordinals_v4[..n4]);
        }
        if n6 > 0 {
            self.table.batch_v6(&self.v6, &mut self.ordinals_v6[..n6]);
        }
        // First a read of every answer's tail slot, then the answers: on
        // large tables the slot reads miss the cache, and here they do not
        // wait for each other (while answering, where an answer goes
        // depends on the previous tail's length).
        let mut touched = 0u8;
        for &(_, _, slot) in &self.pending {
            touched ^= if slot & V6 == 0 {
                let o = ordinal(&self.ordinals_v4, slot);
                self.tails_v4.touch(o)
            } else {
                let o = ordinal(&self.ordinals_v6, slot & !V6);
                self.tails_v6.touch(o)
            };
        }
        // Then, for tails not made yet (first answers of a route), a read
        // of the route and its value, for the same reason.
        let table = self.table;
        for &(_, _, slot) in &self.pending {
            touched ^= if slot & V6 == 0 {
                let o = ordinal(&self.ordinals_v4, slot);
                if self.tails_v4.touch(o) == 0 {
                    table.route_v4(o).map_or(0, |(_, v)| touch(v))
                } else {
                    0
                }
            } else {
                let o = ordinal(&self.ordinals_v6, slot & !V6);
                if self.tails_v6.touch(o) == 0 {
                    table.route_v6(o).map_or(0, |(_, v)| touch(v))
                } else {
                    0
                }
            };
        }
        std::hint::black_box(touched);
        for &(start, end, slot) in &self.pending {
            put(
                &mut self.out,
                &mut self.used,
                block,
                start as usize,
                end as usize,
            );
            let (bytes, s, e) = if slot & V6 == 0 {
                let o = ordinal(&self.ordinals_v4, slot);
                self.tails_v4
                    .piece(o, || table.route_v4(o).map(|(p, v)| (p.into(), v)))
            } else {
                let o = ordinal(&self.ordinals_v6, slot & !V6);
                self.tails_v6
                    .piece(o, || table.route_v6(o).map(|(p, v)| (p.into(), v)))
            };
            put(&mut self.out, &mut self.used, bytes, s, e);
        }
        self.pending.clear();
        self.v4.clear();
        self.v6.clear();
        if self.used >= OUT_CHUNK {
            out.write_all(self.out.get(..self.used).unwrap_or_default())?;
            self.used = 0;
        }
        Ok(())
    }

    /// Write what is gathered and flush `out`.
    pub fn finish(&mut self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(self.out.get(..self.used).unwrap_or_default())?;
        self.used = 0;
        let shown = ipfib_io::KEPT_ERRORS as u64;
        if self.summarise && self.bad > shown && !self.summarised {
            self.summarised = true;
            let what = if self.line_no > 0 {
                "stdin lines"
            } else {
                "arguments"
            };
            let _ = self.err.write_all(
                format!(
                    "ipfib: {} bad {what} in all (the first {shown} shown)\n",
                    self.bad
                )
                .as_bytes(),
            );
        }
        out.flush()
    }

    /// Answer one command-line argument (`number` from 1), text as given.
    pub fn argument(&mut self, number: usize, text: &str, out: &mut impl Write) -> io::Result<()> {
        let text = text.trim();
        match AnyAddr::parse(text) {
            Ok(addr) => {
                self.queue(0, text.len(), addr);
                self.flush(text.as_bytes(), out)
            }
            Err(e) => {
                self.report(format_args!("argument {number}"), &e);
                Ok(())
            }
        }
    }
}

/// A read of a value's text, for its cache line.
#[inline]
/// The route ordinal answered for pending slot `slot` of one family
/// (`NO_ROUTE` past the end, which `flush` never asks for).
fn ordinal(ordinals: &[u32], slot: u32) -> u32 {
    ordinals.get(slot as usize).copied().unwrap_or(NO_ROUTE)
}

fn touch(value: &str) -> u8 {
    value.as_bytes().first().copied().unwrap_or(0)
}

/// The first `\n` in `bytes`, eight bytes at a time (lines are short:
/// a call to `memchr` would cost more than the search).
#[inline]
fn newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const NEWLINES: u64 = u64::from_ne_bytes([b'\n'; 8]);
    let mut i = 0;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        // A zero byte where `word` has a newline; the lowest flagged byte
        // is the first newline (false flags only appear above a true one).
        let x = u64::from_le_bytes(word) ^ NEWLINES;
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    let rest = bytes.get(i..).unwrap_or_default();
    rest.iter().position(|&b| b == b'\n').map(|p| i + p)
}

/// Answer every line of `input` onto `out`, reporting bad lines on the
/// responder's stderr. A read or write error stops it (what was answered
/// before a read error is written).
pub fn answer_lines<T: Answer, E: Write>(
    r: &mut Responder<'_, T, E>,
    mut input: impl Read,
    out: &mut impl Write,
    limits: Limits,
) -> Result<(), Failure> {
    let max_line = limits.max_line;
    // Room for a carried partial line of `max_line` bytes plus one more.
    let block = limits.block.max(max_line.saturating_add(2)).min(1 << 30);
    // `PAD` spare bytes after the block let `put` copy a fixed width.
    let mut buf = vec![0u8; block + PAD];
    // `buf[..filled]` holds input not yet taken: the start of a line.
    let mut filled = 0;
    // The rest of an over-long line (already reported) is being dropped.
    let mut skipping = false;
    loop {
        let n = loop {
            match input.read(buf.get_mut(filled..block).unwrap_or_default()) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = r.finish(out);
                    return Err(Failure::Read(e));
                }
            }
        };
        let eof = n == 0;
        filled += n;
        let mut pos = 0;
        if skipping {
            match newline(&buf[..filled]) {
                Some(i) => {
                    pos = i + 1;
                    skipping = false;
                }
                None => {
                    filled = 0;
                    if eof {
                        break;
                    }
                    continue;
                }
            }
        }
        while let Some(i) = newline(&buf[pos..filled]) {
            r.line(&buf, pos, pos + i, max_line);
            pos += i + 1;
            if r.is_full() {
                r.flush(&buf, out).map_err(Failure::Write)?;
            }
        }
        if eof {
            if pos < filled {
                r.line(&buf, pos, filled, max_line);
            }
            r.flush(&buf, out).map_err(Failure::Write)?;
            break;
        }
        r.flush(&buf, out).map_err(Failure::Write)?;
        if filled - pos > max_line {
            r.too_long(max_line);
            skipping = true;
            filled = 0;
        } else {
            buf.copy_within(pos..filled, 0);
            filled -= pos;
        }
    }
    r.finish(out).map_err(Failure::Write)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::answer::Radix;
    use ipfib::engine::auto::AutoOptions;
    use ipfib::gen::Rng;
    use ipfib::table::Table;
    use std::io::BufRead;

    /// Keep the first `KEPT_ERRORS` lines of a reference's stderr (one per
    /// bad line) and add the total line when there were more.
    fn capped(err: Vec<u8>, bad: u64) -> Vec<u8> {
        let kept = ipfib_io::KEPT_ERRORS;
        let text = String::from_utf8(err).unwrap();
        let mut out: String = text.lines().take(kept).map(|l| format!("{l}\n")).collect();
        if bad > kept as u64 {
            out += &format!("ipfib: {bad} bad stdin lines in all (the first {kept} shown)\n");
        }
        out.into_bytes()
    }

    /// The per-line reader `ipfib lookup` had before blocks: one bounded
    /// `read_until` per line, `str::trim`, `AnyAddr::parse`, the radix
    /// table's lookup, `writeln!`. Stdout and stderr bytes, bad lines.
    fn reference(table: &Table<String>, input: &[u8], max_line: usize) -> (Vec<u8>, Vec<u8>, u64) {
        let (mut out, mut err, mut bad) = (Vec::new(), Vec::new(), 0);
        let mut input = io::BufReader::with_capacity(7, input);
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            let n = input
                .by_ref()
                .take(max_line as u64 + 1)
                .read_until(b'\n', &mut buf)
                .unwrap();
            if n == 0 {
                break;
            }
            line_no += 1;
            if n > max_line && buf.last() != Some(&b'\n') {
                let mut rest = Vec::new();
                input.read_until(b'\n', &mut rest).unwrap();
                bad += 1;
                writeln!(
                    err,
                    "ipfib: stdin line {line_no}: line longer than {max_line} bytes (skipped)"
                )
                .unwrap();
                continue;
            }
            let text = match std::str::from_utf8(&buf) {
                Ok(t) => t.trim(),
                Err(_) => {
                    bad += 1;
                    writeln!(err, "ipfib: stdin line {line_no}: not valid UTF-8").unwrap();
                    continue;
                }
            };
            if text.is_empty() {
                continue;
            }
            match AnyAddr::parse(text) {
                Ok(a) => match table.lookup(a) {
                    Some((p, v)) => writeln!(out, "{text} {p} {v}").unwrap(),
                    None => writeln!(out, "{text} - -").unwrap(),
                },
                Err(e) => {
                    bad += 1;
                    writeln!(err, "ipfib: stdin line {line_no}: {e}").unwrap();
                }
            }
        }
        (out, capped(err, bad), bad)
    }

    /// A reader handing out pieces of random sizes, as a pipe does.
    struct Pieces<'a> {
        bytes: &'a [u8],
        rng: Rng,
        most: u64,
    }

    impl Read for Pieces<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = (self.rng.below(self.most) as usize + 1)
                .min(buf.len())
                .min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn table() -> Table<String> {
        let mut t = Table::new();
        for (p, v) in [
            ("10.0.0.0/8", "A"),
            ("10.1.0.0/16", "B"),
            ("192.0.2.0/24", "65000"),
            ("0.0.0.0/1", "LOW"),
            ("2001:db8::/32", "C"),
            ("2001:db8:1::/48", "D"),
            ("::ffff:0:0/96", "MAPPED6"),
            ("::/3", "V6LOW"),
        ] {
            t.insert(p.parse().unwrap(), v.to_string()).unwrap();
        }
        // Tails too long for their slots (32 bytes for IPv4, 64 for IPv6).
        t.insert("10.1.2.0/24".parse().unwrap(), "L".repeat(40))
            .unwrap();
        t.insert("2001:db8:1:2::/64".parse().unwrap(), "M".repeat(70))
            .unwrap();
        t
    }

    /// One line of a random mix: good addresses of both families in
    /// several spellings, surrounding whitespace, bad text, non-UTF-8,
    /// non-ASCII whitespace, blank and over-long lines.
    fn random_line(rng: &mut Rng, max_line: usize) -> Vec<u8> {
        let v4 = |rng: &mut Rng| {
            let a = if rng.below(2) == 0 {
                0x0a01_0000 | rng.below(1 << 10) as u32
            } else {
                rng.next_u64() as u32
            };
            std::net::Ipv4Addr::from(a).to_string()
        };
        let v6 = |rng: &mut Rng| {
            let a = if rng.below(2) == 0 {
                (0x2001_0db8_0001u128 << 80)
                    | u128::from(rng.below(4)) << 64
                    | u128::from(rng.next_u64())
            } else {
                rng.next_u128() >> (rng.below(4) * 2)
            };
            std::net::Ipv6Addr::from(a).to_string()
        };
        let mut s: Vec<u8> = match rng.below(16) {
            0..=5 => v4(rng).into_bytes(),
            6..=8 => v6(rng).into_bytes(),
            9 => format!("::ffff:{}", v4(rng)).into_bytes(),
            10 => v6(rng).to_uppercase().into_bytes(),
            11 => [
                &b"01."[..],
                b"1.2.3",
                b"::1%eth0",
                b"1.2.3.4/8",
                b"x",
                b"1.2.3.4 5",
            ][rng.below(6) as usize]
                .to_vec(),
            12 => b"\xff\xfe1.2.3.4".to_vec(),
            13 => format!("\u{a0}{}\u{3000}", v4(rng)).into_bytes(),
            14 => Vec::new(),
            _ => vec![b"a "[rng.below(2) as usize]; max_line - 2 + rng.below(5) as usize],
        };
        // Surrounding ASCII whitespace (incl. \x0b and \x0c) and CR LF.
        for _ in 0..rng.below(3) {
            let w = b" \t\x0b\x0c\r"[rng.below(5) as usize];
            if rng.below(2) == 0 {
                s.insert(0, w);
            } else {
                s.push(w);
            }
        }
        s
    }

    /// The block reader answers, reports and counts exactly as the
    /// per-line reader did, for every engine shape (compiled and radix),
    /// for lines split anywhere across blocks and reads.
    #[test]
    fn blocks_answer_as_the_per_line_reader() {
        let table = table();
        let compiled = table.compile(&AutoOptions::default()).unwrap();
        let radix = Radix::new(&table);
        let mut rng = Rng::new(5);
        for round in 0..300 {
            let max_line = 30 + rng.below(30) as usize;
            let mut input = Vec::new();
            for _ in 0..rng.below(200) {
                input.extend(random_line(&mut rng, max_line));
                input.extend_from_slice(if rng.below(4) == 0 { b"\r\n" } else { b"\n" });
            }
            if rng.below(2) == 0 {
                // No newline after the last line.
                input.extend(random_line(&mut rng, max_line));
            }
            let want = reference(&table, &input, max_line);
            let limits = Limits {
                block: rng.below(100) as usize,
                max_line,
            };
            let check = |got: (Vec<u8>, Vec<u8>, u64), what: &str| {
                assert_eq!(
                    String::from_utf8_lossy(&got.0),
                    String::from_utf8_lossy(&want.0),
                    "round {round} {what} stdout, input {:?}",
                    String::from_utf8_lossy(&input)
                );
                assert_eq!(
                    String::from_utf8_lossy(&got.1),
                    String::from_utf8_lossy(&want.1),
                    "round {round} {what} stderr"
                );
                assert_eq!(got.2, want.2, "round {round} {what} bad lines");
            };
            let most = 1 + rng.below(80);
            check(run(&compiled, &input, limits, most), "planb");
            check(run(&radix, &input, limits, most), "radix");
        }
    }

    /// `--threads`: the same answers, messages and count as one thread,
    /// for chunks cut anywhere (blocks of 0-100 bytes, reads of 1-80),
    /// over-long lines included, on 2 and 3 workers.
    #[test]
    fn threads_answer_as_one_thread() {
        let table = table();
        let compiled = table.compile(&AutoOptions::default()).unwrap();
        let radix = Radix::new(&table);
        let mut rng = Rng::new(9);
        let long = "7".repeat(150);
        for round in 0..300 {
            let max_line = 30 + rng.below(30) as usize;
            let mut input = Vec::new();
            for _ in 0..rng.below(300) {
                if rng.below(40) == 0 {
                    input.extend_from_slice(long.as_bytes());
                } else {
                    input.extend(random_line(&mut rng, max_line));
                }
                input.extend_from_slice(if rng.below(4) == 0 { b"\r\n" } else { b"\n" });
            }
            if rng.below(2) == 0 {
                input.extend(random_line(&mut rng, max_line));
            }
            if rng.below(8) == 0 {
                input.extend_from_slice(long.as_bytes());
            }
            let want = reference(&table, &input, max_line);
            let limits = Limits {
                block: rng.below(100) as usize,
                max_line,
            };
            let most = 1 + rng.below(80);
            for threads in [2, 3] {
                for (got, what) in [
                    (
                        run_threads(&compiled, &input, limits, most, threads),
                        "planb",
                    ),
                    (run_threads(&radix, &input, limits, most, threads), "radix"),
                ] {
                    assert_eq!(
                        String::from_utf8_lossy(&got.0),
                        String::from_utf8_lossy(&want.0),
                        "round {round} {what} threads {threads} stdout"
                    );
                    assert_eq!(
                        String::from_utf8_lossy(&got.1),
                        String::from_utf8_lossy(&want.1),
                        "round {round} {what} threads {threads} stderr"
                    );
                    assert_eq!(got.2, want.2, "round {round} {what} bad lines");
                }
            }
        }
    }

    /// A worker that panics (a bug) stops the run with an error instead
    /// of leaving the writer waiting for its chunk.
    #[test]
    fn a_panicking_worker_stops_the_run() {
        struct Bomb<'t>(Radix<'t>);
        impl Answer for Bomb<'_> {
            fn batch_v4(&self, addrs: &[u32], ordinals: &mut [u32]) {
                assert!(!addrs.contains(&0x0a01_0203), "boom");
                self.0.batch_v4(addrs, ordinals)
            }
            fn batch_v6(&self, addrs: &[u128], ordinals: &mut [u32]) {
                self.0.batch_v6(addrs, ordinals)
            }
            fn route_v4(&self, o: u32) -> Option<(ipfib::prefix::Prefix<u32>, &str)> {
                self.0.route_v4(o)
            }
            fn route_v6(&self, o: u32) -> Option<(ipfib::prefix::Prefix<u128>, &str)> {
                self.0.route_v6(o)
            }
            fn routes_v4(&self) -> usize {
                self.0.routes_v4()
            }
            fn routes_v6(&self) -> usize {
                self.0.routes_v6()
            }
        }
        let table = table();
        let bomb = Bomb(Radix::new(&table));
        let mut input = b"10.9.9.9\n".repeat(5000);
        input.extend_from_slice(b"10.1.2.3\n");
        input.extend(b"10.9.9.9\n".repeat(5000));
        let limits = Limits {
            block: 64,
            max_line: 40,
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let got = super::super::parallel::answer_lines_threads(
            &bomb,
            &input[..],
            &mut out,
            &mut err,
            limits,
            2,
        );
        match got {
            Some(Err(Failure::Write(e))) => assert!(e.to_string().contains("panicked"), "{e}"),
            _ => panic!("the run went on past a panicked worker"),
        }
    }

    /// A stdout that fails: the messages of the lines read before it are
    /// written, no total after it, and the error is a write error, as one
    /// thread does (and a read error outranks it).
    #[test]
    fn a_failing_stdout_keeps_the_messages_and_writes_no_total() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Err(io::Error::other("full"))
            }
        }
        let table = table();
        let radix = Radix::new(&table);
        let mut input = b"bad\n10.1.2.3\n".to_vec();
        input.extend(b"also-bad\n".repeat(20));
        for threads in [1, 2] {
            let mut err = Vec::new();
            let got = if threads == 1 {
                let mut r = Responder::new(&radix, &mut err);
                answer_lines(&mut r, &input[..], &mut Full, Limits::default()).map(|_| 0)
            } else {
                super::super::parallel::answer_lines_threads(
                    &radix,
                    &input[..],
                    &mut Full,
                    &mut err,
                    Limits::default(),
                    threads,
                )
                .unwrap()
            };
            assert!(matches!(got, Err(Failure::Write(_))), "{threads}");
            let err = String::from_utf8(err).unwrap();
            assert!(err.starts_with("ipfib: stdin line 1: "), "{threads}: {err}");
            assert_eq!(err.lines().count(), 10, "{threads}: {err}");
            assert!(!err.contains("in all"), "{threads}: {err}");
        }
    }

    fn run_threads<T: Answer + Sync>(
        t: &T,
        input: &[u8],
        limits: Limits,
        most: u64,
        threads: usize,
    ) -> (Vec<u8>, Vec<u8>, u64) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let pieces = Pieces {
            bytes: input,
            rng: Rng::new(most),
            most,
        };
        let bad = super::super::parallel::answer_lines_threads(
            t, pieces, &mut out, &mut err, limits, threads,
        )
        .expect("workers started")
        .unwrap();
        (out, err, bad)
    }

    fn run<T: Answer>(t: &T, input: &[u8], limits: Limits, most: u64) -> (Vec<u8>, Vec<u8>, u64) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut r = Responder::new(t, &mut err);
        let pieces = Pieces {
            bytes: input,
            rng: Rng::new(most),
            most,
        };
        answer_lines(&mut r, pieces, &mut out, limits).unwrap();
        let bad = r.bad();
        (out, err, bad)
    }

    /// Over-long lines: counted once, skipped whole, whether they end in a
    /// newline, at the end of input, or span many reads; a line of exactly
    /// `max_line` bytes is a line.
    #[test]
    fn over_long_lines_are_skipped_in_bounded_memory() {
        let table = table();
        let compiled = table.compile(&AutoOptions::default()).unwrap();
        let max_line = 16;
        let long = "9".repeat(100);
        let exact = format!("{:>16}", "10.1.2.3");
        for input in [
            format!("10.1.2.3\n{long}\n192.0.2.1\n"),
            format!("{long}\n{long}"),
            format!("{exact}\n{exact}"),
            format!("{long}\r\n\n{exact}\n"),
        ] {
            let want = reference(&table, input.as_bytes(), max_line);
            for block in [0, 17, 18, 19, 40, 1000] {
                for most in [1, 3, 17, 1000] {
                    let limits = Limits { block, max_line };
                    assert_eq!(
                        run(&compiled, input.as_bytes(), limits, most),
                        want,
                        "{input:?} block {block} pieces {most}"
                    );
                }
            }
        }
        // The reference itself: the long lines were refused.
        let (out, err, bad) = reference(&table, format!("{long}\n{exact}").as_bytes(), max_line);
        assert_eq!(
            (out.is_empty(), bad),
            (false, 1),
            "{}",
            String::from_utf8_lossy(&err)
        );
    }

    #[test]
    fn a_read_error_stops_after_writing_what_was_answered() {
        struct Failing(bool);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if std::mem::replace(&mut self.0, true) {
                    return Err(io::Error::other("boom"));
                }
                buf[..9].copy_from_slice(b"10.1.9.3\n");
                Ok(9)
            }
        }
        let table = table();
        let mut out = Vec::new();
        let radix = Radix::new(&table);
        let mut r = Responder::new(&radix, io::sink());
        let got = answer_lines(&mut r, Failing(false), &mut out, Limits::default());
        assert!(matches!(got, Err(Failure::Read(_))));
        assert_eq!(out, b"10.1.9.3 10.1.0.0/16 B\n");
        // The same with threads: what was read whole is answered first.
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let got = super::super::parallel::answer_lines_threads(
            &radix,
            Failing(false),
            &mut out,
            &mut err,
            Limits::default(),
            2,
        );
        assert!(matches!(got, Some(Err(Failure::Read(_)))));
        assert_eq!(out, b"10.1.9.3 10.1.0.0/16 B\n");
    }
}
