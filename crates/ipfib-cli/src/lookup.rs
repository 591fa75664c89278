//! `ipfib lookup`: one output line per address, `ADDR PREFIX VALUE` or
//! `ADDR - -`. Addresses come from the arguments or, with none, from stdin
//! (buffered; blank lines are skipped). A bad address is reported on stderr
//! with its line (or argument) number and the rest is still answered; the
//! exit status is then 1. A stdin line longer than `ipfib_io::MAX_LINE_BYTES`
//! is such a bad line, skipped without being held in memory.

use crate::engines::{EngineSpec, Layout, LOOKUP_ENGINES};
use crate::load::{load, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::engine::auto::AutoOptions;
use ipfib::engine::planb::kernel::Kernel;
use ipfib::engine::planb::{PlanB, PlanbOptions};
use ipfib::engine::poptrie::{self, FlatPoptrie, Node, Node32, Poptrie, PoptrieOptions};
use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib::table::{CompiledTable, Table};
use ipfib_io::MAX_LINE_BYTES;
use std::io::{self, BufRead, BufWriter, Read, Write};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    table: TableArgs,
    /// Lookup engine: auto (the default: chosen per family from the
    /// table's shape and a short calibration; `ipfib info` says which),
    /// planb (linearized B+-tree), poptrie[:S] (Poptrie with
    /// S direct-pointing bits, 0-24, default 18), poptrie5[:S] (32-ary
    /// nodes), poptrie-flat[:S] (32-ary nodes inline with the leaves: the
    /// fastest batches on IPv6) or radix (the route table itself).
    #[arg(long, default_value = "auto")]
    engine: String,
    /// PlanB search kernel (avx512, avx2, neon, scalar); default: the best
    /// this CPU supports. Poptrie: scalar forces the portable popcount,
    /// any other the hardware one.
    #[arg(long)]
    kernel: Option<String>,
    /// Addresses to look up; with none, read stdin one per line.
    addrs: Vec<String>,
}

/// A table compiled into Poptries of node layout `N`, both families.
type PoptrieTable<N> = CompiledTable<String, Poptrie<u32, N>, Poptrie<u128, N>>;

enum Engine {
    Auto(Box<CompiledTable<String>>),
    Planb(Box<CompiledTable<String, PlanB<u32>, PlanB<u128>>>),
    Poptrie(Box<PoptrieTable<Node>>),
    Poptrie5(Box<PoptrieTable<Node32>>),
    PoptrieFlat(Box<CompiledTable<String, FlatPoptrie<u32>, FlatPoptrie<u128>>>),
    Radix,
}

pub fn run(args: Args) -> CmdResult {
    let kernel = args
        .kernel
        .as_deref()
        .map(str::parse::<Kernel>)
        .transpose()?;
    // Checked up front, whatever the engine (radix ignores the kernel).
    if let Some(k) = kernel.filter(|k| !k.is_supported()) {
        return Err(format!("kernel {k} is not supported by this CPU").into());
    }
    let spec = match EngineSpec::parse(&args.engine) {
        Ok(
            spec @ (EngineSpec::Auto
            | EngineSpec::Planb
            | EngineSpec::Radix
            | EngineSpec::Poptrie {
                leafvec: true,
                aggregate: true,
                ..
            }),
        ) => spec,
        Ok(_) => {
            return Err(format!(
                "engine {:?} is for `ipfib bench` (lookup takes: {LOOKUP_ENGINES})",
                args.engine
            )
            .into())
        }
        Err(e) => return Err(format!("{e} (available: {LOOKUP_ENGINES})").into()),
    };
    let loaded = load(&args.table)?;
    let table = loaded.table;
    let engine = match spec {
        EngineSpec::Radix => Engine::Radix,
        EngineSpec::Auto => Engine::Auto(Box::new(
            table.compile(&AutoOptions {
                planb_kernel: kernel,
                poptrie_kernel: kernel
                    .filter(|&k| k == Kernel::Scalar)
                    .map(|_| poptrie::Kernel::Scalar),
                ..AutoOptions::default()
            })?,
        )),
        // Route payloads (`Compiled`), so the matching prefix is printed.
        EngineSpec::Poptrie { s, layout, .. } => {
            let opts = PoptrieOptions {
                direct_bits: s,
                kernel: kernel
                    .filter(|&k| k == Kernel::Scalar)
                    .map(|_| poptrie::Kernel::Scalar),
                ..Default::default()
            };
            match layout {
                Layout::Node64 => Engine::Poptrie(Box::new(table.compile_with(&opts)?)),
                Layout::Node32 => Engine::Poptrie5(Box::new(table.compile_with(&opts)?)),
                Layout::Flat => Engine::PoptrieFlat(Box::new(table.compile_with(&opts)?)),
            }
        }
        _ => Engine::Planb(Box::new(table.compile_with(&PlanbOptions {
            kernel,
            direct_bits: None,
            ..Default::default()
        })?)),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    // Damage or skipped records in the table (reported by `load`): exit 1.
    let mut bad = usize::from(loaded.had_problems);
    // Answer one address; Ok(false) when the text was not an address.
    let answer = |text: &str,
                  out: &mut BufWriter<io::StdoutLock>,
                  place: &dyn Fn() -> String|
     -> io::Result<bool> {
        match AnyAddr::parse(text) {
            Ok(a) => write_answer(out, text, lookup(&engine, &table, a)).map(|()| true),
            Err(e) => {
                eprintln!("ipfib: {}: {e}", place());
                Ok(false)
            }
        }
    };
    let result = if args.addrs.is_empty() {
        let stdin = io::stdin();
        let mut input = io::BufReader::with_capacity(1 << 16, stdin.lock());
        let mut buf = Vec::with_capacity(128);
        let mut line_no = 0u64;
        loop {
            match read_line_bounded(&mut input, &mut buf) {
                Ok(None) => break Ok(()),
                Ok(Some(true)) => line_no += 1,
                Ok(Some(false)) => {
                    line_no += 1;
                    bad += 1;
                    eprintln!(
                        "ipfib: stdin line {line_no}: line longer than {MAX_LINE_BYTES} bytes (skipped)"
                    );
                    continue;
                }
                Err(e) => return Err(format!("reading stdin: {e}").into()),
            }
            let text = match std::str::from_utf8(&buf) {
                Ok(t) => t.trim(),
                Err(_) => {
                    bad += 1;
                    eprintln!("ipfib: stdin line {line_no}: not valid UTF-8");
                    continue;
                }
            };
            if text.is_empty() {
                continue;
            }
            match answer(text, &mut out, &|| format!("stdin line {line_no}")) {
                Ok(true) => {}
                Ok(false) => bad += 1,
                Err(e) => break Err(e),
            }
        }
    } else {
        args.addrs.iter().enumerate().try_for_each(|(i, text)| {
            if !answer(text.trim(), &mut out, &|| format!("argument {}", i + 1))? {
                bad += 1;
            }
            Ok(())
        })
    };
    match result.and_then(|()| out.flush()) {
        Ok(()) => {}
        // The reader went away (`| head`): not an error of ours.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(Outcome::Ok),
        Err(e) => return Err(format!("writing output: {e}").into()),
    }
    Ok(if bad > 0 {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}

/// Read one line of at most [`MAX_LINE_BYTES`] (not counting its `\n`)
/// into `buf` (cleared first),
/// so input without newlines takes bounded memory: `None` at the end,
/// `Some(true)` for a line, `Some(false)` for a longer one, whose rest is
/// read and dropped.
fn read_line_bounded<R: BufRead>(input: &mut R, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
    buf.clear();
    let n = input
        .by_ref()
        .take(MAX_LINE_BYTES + 1)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(None);
    }
    if (n as u64) <= MAX_LINE_BYTES || buf.last() == Some(&b'\n') {
        return Ok(Some(true));
    }
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        let (used, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        input.consume(used);
        if end {
            break;
        }
    }
    Ok(Some(false))
}

#[inline]
fn lookup<'a>(
    engine: &'a Engine,
    table: &'a Table<String>,
    a: AnyAddr,
) -> Option<(AnyPrefix, &'a String)> {
    match engine {
        Engine::Auto(c) => c.lookup(a),
        Engine::Planb(c) => c.lookup(a),
        Engine::Poptrie(c) => c.lookup(a),
        Engine::Poptrie5(c) => c.lookup(a),
        Engine::PoptrieFlat(c) => c.lookup(a),
        Engine::Radix => table.lookup(a),
    }
}

fn write_answer(
    out: &mut impl Write,
    text: &str,
    hit: Option<(AnyPrefix, &String)>,
) -> io::Result<()> {
    match hit {
        Some((p, v)) => writeln!(out, "{text} {p} {v}"),
        None => writeln!(out, "{text} - -"),
    }
}
