//! `ipfib udf`: a ClickHouse executable UDF (`executable_pool`) answering
//! from a compiled table file. ClickHouse writes the function's arguments
//! to the process's stdin in `RowBinary`, a block at a time, and reads
//! exactly one answer per row from its stdout before it sends more.
//!
//! - Argument: one column of the type declared in the function's
//!   `<argument><type>`: `IPv4` (UInt32, little-endian), `IPv6` or
//!   `FixedString(16)` (16 bytes, network order; IPv4-mapped addresses are
//!   looked up as IPv4), `UInt32` (an IPv4 address as a number), `String`
//!   (address text of either family), each optionally `Nullable(...)`
//!   (a null flag byte first; a null matches nothing).
//! - Answer (`--answer`): the matched route's `value`, its `prefix`, or
//!   `field:PATH`, a field of a JSON value by dot path (the record of a
//!   table compiled from a MaxMind DB without `--value`).
//! - Return type (`--return-type`, the function's `<return_type>`):
//!   `String`, `UInt32`, `UInt64`, `Int64`, or `Nullable(...)` of one of
//!   them. A miss (or a bad address, or a value that is not a number of
//!   a numeric type) is NULL for a Nullable type, else the empty string or 0.
//! - Blocks: with `--chunk-header` (the function's `<send_chunk_header>1`)
//!   each block starts with its row count as a text line. Either way the
//!   answers are flushed whenever the input runs dry, so the process never
//!   holds answers ClickHouse waits for.
//! - Reload: when rows arrive (at most once per `--reload-check` seconds)
//!   the file's identity (device, inode, size, modification time) is
//!   checked; a file replaced by rename (what `ipfib compile` does) is
//!   opened whole, checked, and answers every later row. Every answer comes
//!   from one whole table. A replacement that fails to open is reported on
//!   stderr and the table already open keeps answering (until the file
//!   changes again). A file rewritten in place while mapped is what must
//!   not be done (the mapping would change under the answers).

use crate::{CmdResult, Outcome};
use ipfib::engine::{Engine as _, NO_ROUTE};
use ipfib::image::ImageTable;
use ipfib::prefix::AnyAddr;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

#[derive(clap::Args)]
pub struct Args {
    /// The compiled table file (`ipfib compile`); replace it by renaming a
    /// new one over it and it is reopened between blocks.
    #[arg(long)]
    table: PathBuf,
    /// The argument's type, as in the function's `<argument><type>`:
    /// IPv4, IPv6, FixedString(16), UInt32 or String, optionally
    /// Nullable(...).
    #[arg(long, default_value = "String")]
    argument: String,
    /// What to answer: value, prefix, or field:PATH (a field of a JSON
    /// value by dot path, e.g. field:country.iso_code).
    #[arg(long, default_value = "value")]
    answer: String,
    /// The function's `<return_type>`: String, UInt32, UInt64 or Int64,
    /// optionally Nullable(...).
    #[arg(long, default_value = "Nullable(String)")]
    return_type: String,
    /// The function sets `<send_chunk_header>1`: each block starts with
    /// its row count on a line.
    #[arg(long)]
    chunk_header: bool,
    /// Seconds between checks for a replaced table file (0: every block).
    #[arg(long, default_value_t = 1.0)]
    reload_check: f64,
    /// The function's `<format>`: RowBinary (the only one taken).
    #[arg(long, default_value = "RowBinary")]
    format: String,
}

/// The argument column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArgType {
    Ipv4,
    Ipv6,
    Text,
}

/// The return type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RetType {
    Text,
    U32,
    U64,
    I64,
}

/// Strip `Nullable(...)` from a type name.
fn nullable(t: &str) -> (bool, &str) {
    let t = t.trim();
    match t
        .strip_prefix("Nullable(")
        .and_then(|r| r.strip_suffix(')'))
    {
        Some(inner) => (true, inner.trim()),
        None => (false, t),
    }
}

fn parse_arg(t: &str) -> Result<(bool, ArgType), String> {
    let (null, inner) = nullable(t);
    let kind = match inner {
        "IPv4" | "UInt32" => ArgType::Ipv4,
        "IPv6" | "FixedString(16)" => ArgType::Ipv6,
        "String" => ArgType::Text,
        _ => {
            return Err(format!(
                "argument type {t:?}: expected IPv4, IPv6, FixedString(16), UInt32 or String, \
                 optionally Nullable(...)"
            ))
        }
    };
    Ok((null, kind))
}

fn parse_ret(t: &str) -> Result<(bool, RetType), String> {
    let (null, inner) = nullable(t);
    let kind = match inner {
        "String" => RetType::Text,
        "UInt32" => RetType::U32,
        "UInt64" => RetType::U64,
        "Int64" => RetType::I64,
        _ => {
            return Err(format!(
                "return type {t:?}: expected String, UInt32, UInt64 or Int64, optionally \
                 Nullable(...)"
            ))
        }
    };
    Ok((null, kind))
}

/// What each row is answered with.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    Value,
    Prefix,
    Field(Vec<String>),
}

fn parse_answer(t: &str) -> Result<Answer, String> {
    match t {
        "value" => Ok(Answer::Value),
        "prefix" => Ok(Answer::Prefix),
        _ => match t.strip_prefix("field:") {
            Some(p) if !p.is_empty() && p.split('.').all(|s| !s.is_empty()) => {
                Ok(Answer::Field(p.split('.').map(String::from).collect()))
            }
            _ => Err(format!(
                "answer {t:?}: expected value, prefix or field:PATH (e.g. field:country.iso_code)"
            )),
        },
    }
}

/// The settings a session runs with.
#[derive(Clone, Debug)]
struct Spec {
    arg_null: bool,
    arg: ArgType,
    ret_null: bool,
    ret: RetType,
    answer: Answer,
    chunk_header: bool,
}

pub fn run(args: Args) -> CmdResult {
    if args.format != "RowBinary" {
        return Err(format!("format {:?}: only RowBinary is taken", args.format).into());
    }
    let (arg_null, arg) = parse_arg(&args.argument)?;
    let (ret_null, ret) = parse_ret(&args.return_type)?;
    let spec = Spec {
        arg_null,
        arg,
        ret_null,
        ret,
        answer: parse_answer(&args.answer)?,
        chunk_header: args.chunk_header,
    };
    let every = Duration::try_from_secs_f64(args.reload_check)
        .map_err(|_| "--reload-check: a number of seconds, 0 or more")?;
    let source = FileSource::open(&args.table, every)?;
    let stdin = io::stdin();
    let stdout = io::stdout();
    serve(&spec, source, stdin.lock(), stdout.lock())?;
    Ok(Outcome::Ok)
}

/// Where the table comes from, and whether a newer one is there.
trait Source {
    fn table(&self) -> &Loaded;
    /// Called between blocks: swap in a replaced table if there is one.
    fn refresh(&mut self);
}

/// A file's identity: a rename over it changes the inode, a rewrite the
/// size or time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<SystemTime>,
}

fn file_id(path: &Path) -> io::Result<FileId> {
    let m = std::fs::metadata(path)?;
    #[cfg(unix)]
    let (dev, ino) = {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    };
    #[cfg(not(unix))]
    let (dev, ino) = (0, 0);
    Ok(FileId {
        dev,
        ino,
        len: m.len(),
        modified: m.modified().ok(),
    })
}

struct FileSource {
    path: PathBuf,
    every: Duration,
    checked: Instant,
    id: FileId,
    /// The identity of a replacement that failed to open (reported once).
    refused: Option<FileId>,
    table: Loaded,
}

impl FileSource {
    fn open(path: &Path, every: Duration) -> Result<Self, String> {
        let id = file_id(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let table = Loaded::open(path)?;
        Ok(FileSource {
            path: path.to_path_buf(),
            every,
            checked: Instant::now(),
            id,
            refused: None,
            table,
        })
    }
}

impl Source for FileSource {
    fn table(&self) -> &Loaded {
        &self.table
    }

    fn refresh(&mut self) {
        if self.checked.elapsed() < self.every {
            return;
        }
        self.checked = Instant::now();
        // Gone for a moment (a replacement by unlink then create): keep
        // answering from the open table.
        let Ok(id) = file_id(&self.path) else { return };
        if id == self.id || Some(id) == self.refused {
            return;
        }
        match Loaded::open(&self.path) {
            Ok(t) => {
                self.table = t;
                self.id = id;
                self.refused = None;
            }
            Err(e) => {
                eprintln!("ipfib udf: the replaced table is not used (the open one answers): {e}");
                self.refused = Some(id);
            }
        }
    }
}

/// `field:` answers by (IPv6, value slot).
type FieldCache = HashMap<(bool, u32), Option<Box<str>>>;

/// An open table with the per-value cache of `field:` answers.
struct Loaded {
    img: ImageTable,
    /// `field:` answers by (family, value slot), filled as values are met.
    fields: std::cell::RefCell<FieldCache>,
}

impl Loaded {
    fn open(path: &Path) -> Result<Self, String> {
        // Only a regular file (or a link to one): opening a FIFO renamed
        // over the table would wait for a writer forever.
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !meta.is_file() {
            return Err(format!("{}: not a regular file", path.display()));
        }
        let img = ImageTable::open(path).map_err(|e| {
            format!(
                "{}: {e} (the UDF answers from a compiled table file: `ipfib compile`)",
                path.display()
            )
        })?;
        Ok(Self::of(img))
    }

    fn of(img: ImageTable) -> Self {
        Loaded {
            img,
            fields: Default::default(),
        }
    }
}

/// A JSON value's field by path (object keys, or array indices as
/// numbers), as text: a string as it is, anything else as compact JSON;
/// `None` when the value is not JSON, the field is missing or null.
fn field_of(value: &str, path: &[String]) -> Option<Box<str>> {
    let mut v: serde_json::Value = serde_json::from_str(value).ok()?;
    for key in path {
        v = match v {
            serde_json::Value::Object(mut m) => m.remove(key)?,
            serde_json::Value::Array(mut a) => {
                let i: usize = key.parse().ok()?;
                (i < a.len()).then(|| a.swap_remove(i))?
            }
            _ => return None,
        };
    }
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.into()),
        other => Some(other.to_string().into()),
    }
}

/// Rows decoded per lookup batch.
const BATCH: usize = 1024;
/// The longest address text parsed (surrounding whitespace included); a
/// longer string is a miss, skipped without being held.
const MAX_TEXT: usize = 256;
/// Bytes asked of stdin per read.
const READ: usize = 256 * 1024;

/// An argument row, decoded.
#[derive(Clone, Copy)]
enum Row {
    Miss,
    Addr(AnyAddr),
}

/// Where the decoder is inside a row or a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    None,
    /// The rest of a string too long to be an address (`n` bytes).
    Bytes(usize),
}

/// The session: stdin to stdout until stdin ends.
fn serve<S: Source>(spec: &Spec, mut src: S, mut input: impl Read, out: impl Write) -> CmdResult {
    let mut out = io::BufWriter::with_capacity(256 * 1024, out);
    // Bytes read and not yet decoded are `buf[start..end]`; what is left
    // at a read is less than a row (a string too long for an address is
    // skipped, not held), so moving it to the front always makes room.
    let mut buf = vec![0u8; READ];
    let mut start = 0usize;
    let mut end = 0usize;
    let mut rows: Vec<Row> = Vec::with_capacity(BATCH);
    let mut skip = Skip::None;
    // Rows left in the block (chunk headers only).
    let mut left: Option<u64> = None;
    let mut row_no: u64 = 0;
    let mut enc = Encoder::new(spec);
    loop {
        // Decode what is buffered.
        loop {
            if rows.len() >= BATCH {
                enc.answer(src.table(), &rows, &mut out)?;
                rows.clear();
            }
            if let Skip::Bytes(n) = skip {
                let take = n.min(end - start);
                start += take;
                skip = if take == n {
                    Skip::None
                } else {
                    Skip::Bytes(n - take)
                };
                if skip != Skip::None {
                    break;
                }
                // The skipped string's row, answered as a miss.
                rows.push(Row::Miss);
                row_no += 1;
                if let Some(l) = &mut left {
                    *l -= 1;
                }
            }
            if spec.chunk_header && left.is_none() {
                match header(&buf[start..end]) {
                    Header::Need => break,
                    Header::Rows(n, used) => {
                        start += used;
                        left = Some(n);
                    }
                    Header::Bad => {
                        return Err(format!(
                            "row {row_no}: a block header (a row count on a line) was expected"
                        )
                        .into())
                    }
                }
            }
            if left == Some(0) {
                left = None;
                continue;
            }
            match decode(spec, &buf[start..end]) {
                Decoded::Need => break,
                Decoded::Row(r, used) => {
                    start += used;
                    rows.push(r);
                    row_no += 1;
                }
                Decoded::TooLong { used, rest } => {
                    start += used;
                    skip = Skip::Bytes(rest);
                    continue;
                }
                Decoded::Bad(why) => return Err(format!("row {row_no}: {why}").into()),
            }
            if let Some(l) = &mut left {
                *l -= 1;
            }
        }
        // The input ran dry: everything decoded is answered and sent.
        if !rows.is_empty() {
            enc.answer(src.table(), &rows, &mut out)?;
            rows.clear();
        }
        out.flush()?;
        buf.copy_within(start..end, 0);
        end -= start;
        start = 0;
        let have = end;
        let n = loop {
            match input.read(&mut buf[have..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("reading stdin: {e}").into()),
            }
        };
        end = have + n;
        if n > 0 {
            // New rows: a table replaced while this process waited for
            // them answers them (an idle pool process waits here for hours).
            src.refresh();
        }
        if n == 0 {
            if have > 0 || skip != Skip::None || left.is_some_and(|l| l > 0) {
                return Err(format!("stdin ended inside row {row_no}").into());
            }
            return Ok(Outcome::Ok);
        }
    }
}

enum Header {
    Need,
    Rows(u64, usize),
    Bad,
}

/// A block header: decimal digits and a newline.
fn header(b: &[u8]) -> Header {
    let Some(end) = b.iter().take(21).position(|&c| c == b'\n') else {
        return if b.len() > 20 {
            Header::Bad
        } else {
            Header::Need
        };
    };
    let digits = b.get(..end).unwrap_or(&[]);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Header::Bad;
    }
    match std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(n) => Header::Rows(n, end + 1),
        None => Header::Bad,
    }
}

enum Decoded {
    Need,
    Row(Row, usize),
    /// A string too long to be an address: `used` bytes read so far,
    /// `rest` still to skip.
    TooLong {
        used: usize,
        rest: usize,
    },
    Bad(String),
}

/// A LEB128 length: (value, bytes used), `None` when more bytes are
/// needed, `Err` past ten bytes.
fn varint(b: &[u8]) -> Result<Option<(u64, usize)>, String> {
    let mut v: u64 = 0;
    for (i, &c) in b.iter().enumerate().take(10) {
        v |= u64::from(c & 0x7f) << (7 * i);
        if c & 0x80 == 0 {
            return Ok(Some((v, i + 1)));
        }
    }
    if b.len() >= 10 {
        return Err("a string length of more than ten bytes".into());
    }
    Ok(None)
}

fn decode(spec: &Spec, b: &[u8]) -> Decoded {
    let mut at = 0;
    if spec.arg_null {
        match b.first() {
            None => return Decoded::Need,
            Some(1) => return Decoded::Row(Row::Miss, 1),
            Some(0) => at = 1,
            Some(f) => return Decoded::Bad(format!("null flag {f}: expected 0 or 1")),
        }
    }
    let b = b.get(at..).unwrap_or(&[]);
    match spec.arg {
        ArgType::Ipv4 => match b.get(..4) {
            None => Decoded::Need,
            Some(x) => {
                let a = u32::from_le_bytes([x[0], x[1], x[2], x[3]]);
                Decoded::Row(Row::Addr(AnyAddr::V4(a)), at + 4)
            }
        },
        ArgType::Ipv6 => match b.get(..16).and_then(|x| <[u8; 16]>::try_from(x).ok()) {
            None => Decoded::Need,
            Some(x) => {
                let ip = std::net::Ipv6Addr::from(x);
                Decoded::Row(
                    Row::Addr(AnyAddr::unmapped(std::net::IpAddr::V6(ip))),
                    at + 16,
                )
            }
        },
        ArgType::Text => {
            let (len, used) = match varint(b) {
                Err(e) => return Decoded::Bad(e),
                Ok(None) => return Decoded::Need,
                Ok(Some(x)) => x,
            };
            let Ok(len) = usize::try_from(len) else {
                return Decoded::Bad(format!("a string of {len} bytes"));
            };
            if len > MAX_TEXT {
                return Decoded::TooLong {
                    used: at + used,
                    rest: len,
                };
            }
            match b.get(used..used + len) {
                None => Decoded::Need,
                Some(text) => {
                    let addr = AnyAddr::parse_ascii(text).or_else(|| {
                        // Surrounding whitespace, as `ipfib lookup` takes it.
                        std::str::from_utf8(text)
                            .ok()
                            .and_then(|t| AnyAddr::parse(t).ok())
                    });
                    Decoded::Row(addr.map_or(Row::Miss, Row::Addr), at + used + len)
                }
            }
        }
    }
}

/// Answers, written in the return type.
struct Encoder<'s> {
    spec: &'s Spec,
    v4: Vec<u32>,
    v4_at: Vec<usize>,
    v6: Vec<u128>,
    v6_at: Vec<usize>,
    ord: Vec<u32>,
    /// Each row's route ordinal and family (`true`: IPv6).
    hits: Vec<(bool, u32)>,
    text: String,
}

impl<'s> Encoder<'s> {
    fn new(spec: &'s Spec) -> Self {
        Encoder {
            spec,
            v4: Vec::with_capacity(BATCH),
            v4_at: Vec::with_capacity(BATCH),
            v6: Vec::with_capacity(BATCH),
            v6_at: Vec::with_capacity(BATCH),
            ord: vec![0; BATCH],
            hits: Vec::with_capacity(BATCH),
            text: String::new(),
        }
    }

    fn answer(&mut self, t: &Loaded, rows: &[Row], out: &mut impl Write) -> io::Result<()> {
        self.v4.clear();
        self.v4_at.clear();
        self.v6.clear();
        self.v6_at.clear();
        self.hits.clear();
        for (i, r) in rows.iter().enumerate() {
            match r {
                Row::Addr(AnyAddr::V4(a)) => {
                    self.v4.push(*a);
                    self.v4_at.push(i);
                }
                Row::Addr(AnyAddr::V6(a)) => {
                    self.v6.push(*a);
                    self.v6_at.push(i);
                }
                Row::Miss => {}
            }
            self.hits.push((false, NO_ROUTE));
        }
        // Values come from the value engine (a slot straight to the text,
        // in a table of distinct values that stays in cache); only the
        // prefix needs the route ordinal (and the route arrays, a cache
        // miss or two more per row on a full table).
        let by_route = self.spec.answer == Answer::Prefix;
        let n4 = self.v4.len();
        if by_route {
            t.img.v4.lookup_batch::<32>(&self.v4, &mut self.ord[..n4]);
        } else {
            t.img
                .v4
                .by_value()
                .lookup_batch::<32>(&self.v4, &mut self.ord[..n4]);
        }
        for (&i, &o) in self.v4_at.iter().zip(&self.ord[..n4]) {
            self.hits[i] = (false, o);
        }
        let n6 = self.v6.len();
        if by_route {
            t.img.v6.lookup_batch::<32>(&self.v6, &mut self.ord[..n6]);
        } else {
            t.img
                .v6
                .by_value()
                .lookup_batch::<32>(&self.v6, &mut self.ord[..n6]);
        }
        for (&i, &o) in self.v6_at.iter().zip(&self.ord[..n6]) {
            self.hits[i] = (true, o);
        }
        for k in 0..self.hits.len() {
            let (v6, o) = self.hits[k];
            self.one(t, v6, o, out)?;
        }
        Ok(())
    }

    /// One row's answer: for `prefix`, the route at ordinal `id` of a
    /// family; otherwise the value at slot `id`.
    fn one(&mut self, t: &Loaded, v6: bool, id: u32, out: &mut impl Write) -> io::Result<()> {
        let spec = self.spec;
        let value = |slot| {
            if v6 {
                t.img.v6.value(slot)
            } else {
                t.img.v4.value(slot)
            }
        };
        match &spec.answer {
            Answer::Value => match value(id) {
                Some(v) => put(spec, v, out),
                None => miss(spec, out),
            },
            Answer::Prefix => {
                use std::fmt::Write as _;
                self.text.clear();
                let written = if v6 {
                    t.img.v6.route(id).map(|(p, _)| write!(self.text, "{p}"))
                } else {
                    t.img.v4.route(id).map(|(p, _)| write!(self.text, "{p}"))
                };
                match written {
                    Some(_) => put(spec, &self.text, out),
                    None => miss(spec, out),
                }
            }
            Answer::Field(path) => {
                let Some(v) = value(id) else {
                    return miss(spec, out);
                };
                let mut cache = t.fields.borrow_mut();
                match cache.entry((v6, id)).or_insert_with(|| field_of(v, path)) {
                    Some(f) => put(spec, f, out),
                    None => miss(spec, out),
                }
            }
        }
    }
}

/// A miss in the return type: NULL, or the empty string or 0.
fn miss(spec: &Spec, out: &mut impl Write) -> io::Result<()> {
    if spec.ret_null {
        return out.write_all(&[1]);
    }
    match spec.ret {
        RetType::Text => out.write_all(&[0]),
        RetType::U32 => out.write_all(&[0; 4]),
        RetType::U64 | RetType::I64 => out.write_all(&[0; 8]),
    }
}

/// An answer's text in the return type (a number type parses it; text
/// that is not such a number is a miss).
fn put(spec: &Spec, text: &str, out: &mut impl Write) -> io::Result<()> {
    let flag: &[u8] = if spec.ret_null { &[0] } else { &[] };
    let t = text.trim();
    let number = match spec.ret {
        RetType::Text => {
            let mut len = [0u8; 10];
            let mut n = text.len() as u64;
            let mut i = 0;
            loop {
                let more = n >= 0x80;
                len[i] = (n as u8 & 0x7f) | if more { 0x80 } else { 0 };
                i += 1;
                n >>= 7;
                if !more {
                    break;
                }
            }
            out.write_all(flag)?;
            out.write_all(&len[..i])?;
            return out.write_all(text.as_bytes());
        }
        RetType::U32 => t
            .parse::<u32>()
            .ok()
            .map(|v| (u64::from(v).to_le_bytes(), 4)),
        RetType::U64 => t.parse::<u64>().ok().map(|v| (v.to_le_bytes(), 8)),
        RetType::I64 => t.parse::<i64>().ok().map(|v| (v.to_le_bytes(), 8)),
    };
    match number {
        Some((bytes, width)) => {
            out.write_all(flag)?;
            out.write_all(&bytes[..width])
        }
        None => miss(spec, out),
    }
}

#[cfg(test)]
mod tests;
