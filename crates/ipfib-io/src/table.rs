//! The lenient front door: any table format (text, ipasn, pfx2as, MRT,
//! text updates, ranges, MaxMind DB), any compression, damage reported
//! instead of fatal
//! ([`load_table`]); and update streams as typed events ([`read_updates`]).

use crate::damage::{Damage, DamageKind};
use crate::error::ReadError;
use crate::format::Format;
use crate::input::{open_input, Compression};
use crate::linx::TextEvents;
use crate::mmdb::FieldPath;
use crate::mrt::{MrtEvents, Replayer};
use crate::options::{TableLoad, TableOptions};
use crate::policy::{PeerSelector, ValuePolicy};
use crate::read::{line_damage, read_lines, LoadOptions, Route};
use crate::report::Report;
use crate::sniff::{sniff, HEAD_BYTES};
use crate::update::Event;
use std::io::{self, BufRead, Cursor, Read};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Load the table at `path` in any format and compression.
///
/// Without `strict`, bad lines and records are skipped and counted, and
/// damage (a truncated or corrupt stream, an MRT header that breaks
/// framing) ends the load with every complete record kept; the
/// [`Report`] says what happened, with byte offsets in the decompressed
/// stream. Errors: the file cannot be opened, its format is unrecognised,
/// the value policy does not apply, or (strict) the first problem.
///
/// ```
/// # use ipfib_io::{load_table, TableOptions};
/// let path = std::env::temp_dir().join(format!("ipfib-doc-load-{}.dat", std::process::id()));
/// std::fs::write(&path, "; pyasn\n192.0.2.0/24\t64500\n")?;
/// let table = load_table(&path, &TableOptions::default());
/// std::fs::remove_file(&path)?;
/// let table = table?;
/// assert_eq!(table.report.format.name(), "ipasn");
/// assert_eq!(table.routes[0].value, "64500");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load_table(path: &Path, opts: &TableOptions) -> Result<TableLoad, ReadError> {
    load_table_with_progress(path, opts, None)
}

/// [`load_table`], counting the file's (compressed) bytes read into
/// `progress` as it goes, for a progress bar.
pub fn load_table_with_progress(
    path: &Path,
    opts: &TableOptions,
    progress: Option<Arc<AtomicU64>>,
) -> Result<TableLoad, ReadError> {
    // A MaxMind DB is recognised by its end, which a stream's head cannot
    // show: look at the file's tail first, and read the file whole.
    if matches!(opts.format, Format::Auto | Format::Mmdb) && mmdb_tail(path)? {
        let file = std::fs::read(path).map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if let Some(p) = &progress {
            p.fetch_add(file.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
        return load_mmdb(&file, Compression::None, path, opts);
    }
    let input = open_input(path, progress)?;
    load_stream(input.reader, input.compression, path, opts)
}

/// Load the MaxMind DB at `path` (uncompressed, or gzip, bzip2, zstd) with
/// several fields per network: one entry per field of `fields`, `None`
/// where the record lacks it; networks with none of them are left out
/// (counted in [`MmdbInfo::without_field`](crate::MmdbInfo)). Lenient
/// unless `strict`, as [`load_table`].
pub fn load_mmdb_fields(
    path: &Path,
    fields: &[FieldPath],
    strict: bool,
) -> Result<(Vec<crate::mmdb::MmdbNetwork>, Report), ReadError> {
    let file = if mmdb_tail(path)? {
        std::fs::read(path).map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?
    } else {
        let mut input = open_input(path, None)?;
        read_capped(&mut input.reader, MMDB_STREAM_BYTES, path, "a MaxMind DB")?
    };
    crate::mmdb::load_fields(&file, path, fields, strict)
}

/// Whether the file at `path`, as stored, ends with MaxMind DB metadata.
fn mmdb_tail(path: &Path) -> Result<bool, ReadError> {
    use std::io::{Seek, SeekFrom};
    let io_error = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Look before opening: a FIFO or pipe opened here and closed unread
    // would lose its writer, and the loader's own open would wait forever.
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        _ => return Ok(false),
    }
    let mut file = std::fs::File::open(path).map_err(io_error)?;
    let len = file.metadata().map_err(io_error)?.len();
    let from = len.saturating_sub(crate::mmdb::METADATA_MAX as u64);
    file.seek(SeekFrom::Start(from)).map_err(io_error)?;
    let mut tail = Vec::new();
    file.take(crate::mmdb::METADATA_MAX as u64)
        .read_to_end(&mut tail)
        .map_err(io_error)?;
    Ok(crate::mmdb::looks_like_mmdb(&tail))
}

/// A MaxMind DB in memory (decompressed) into routes.
fn load_mmdb(
    file: &[u8],
    compression: Compression,
    path: &Path,
    opts: &TableOptions,
) -> Result<TableLoad, ReadError> {
    policy_for(Format::Mmdb, opts, path)?;
    if opts.value_column.is_some() {
        return Err(ReadError::Policy {
            path: path.to_path_buf(),
            reason: "--value-column applies to ranges tables, not to a mmdb table".into(),
        });
    }
    let (routes, mut report) = crate::mmdb::load(file, path, opts.field.as_ref(), opts.strict)?;
    report.compression = compression;
    Ok(TableLoad { routes, report })
}

/// [`load_table`] for uncompressed bytes already in hand; `name` stands for
/// the path in messages.
///
/// ```
/// use ipfib_io::{load_table_from, ReadError, TableOptions};
///
/// let opts = TableOptions { strict: true, ..Default::default() };
/// let text = b"10.0.0.0/8 a\n10.0.0.0/8\n";
/// let err = load_table_from(&text[..], "t.txt", &opts).unwrap_err();
/// assert!(matches!(err, ReadError::MissingValue { line: 2, .. }));
/// ```
pub fn load_table_from<R: BufRead + Send + 'static>(
    reader: R,
    name: &str,
    opts: &TableOptions,
) -> Result<TableLoad, ReadError> {
    load_stream(Box::new(reader), Compression::None, Path::new(name), opts)
}

fn load_stream(
    reader: Box<dyn BufRead + Send>,
    compression: Compression,
    path: &Path,
    opts: &TableOptions,
) -> Result<TableLoad, ReadError> {
    let (format, mut reader) = resolve(reader, path, opts.format)?;
    if format == Format::Mmdb {
        let mut file = Vec::new();
        (&mut reader)
            .take(MMDB_STREAM_BYTES)
            .read_to_end(&mut file)
            .map_err(|source| ReadError::Damaged {
                path: path.to_path_buf(),
                damage: Damage {
                    offset: file.len() as u64,
                    records_before: 0,
                    kind: DamageKind::Stream,
                    stream_error: Some(source.to_string()),
                },
            })?;
        return load_mmdb(&file, compression, path, opts);
    }
    let policy = policy_for(format, opts, path)?;
    if format != Format::Ranges && opts.value_column.is_some() {
        return Err(ReadError::Policy {
            path: path.to_path_buf(),
            reason: format!("--value-column applies to ranges tables, not to a {format} table"),
        });
    }
    let mut loaded = match format {
        Format::Mrt => {
            let (routes, report) =
                crate::mrt::load(&mut reader, path, policy.unwrap_or_default(), opts.strict)?;
            Ok(TableLoad { routes, report })
        }
        Format::Updates => {
            let policy = policy.unwrap_or(ValuePolicy::NextHop(PeerSelector::Index(0)));
            let mut events = TextEvents::new(reader, path, opts.host_bits, opts.strict);
            let mut rib = Replayer::new(policy);
            while let Some(ev) = events.next_event() {
                rib.apply(events.report.records, &ev?);
            }
            let (routes, stats) = rib.finish(path)?;
            let mut report = events.report;
            report.mrt = Some(stats);
            Ok(TableLoad { routes, report })
        }
        Format::Compiled => load_image(reader, path),
        Format::Ranges => crate::ranges::load(&mut reader, compression, path, opts),
        _ => load_lines(reader, compression, path, format, opts),
    }?;
    loaded.report.compression = compression;
    Ok(loaded)
}

/// A compiled table file read whole (what a command that wants routes gets;
/// `ipfib lookup` and Python's `Table.open` map it instead): its routes,
/// IPv4 first, each family in address order.
fn load_image(mut reader: Box<dyn BufRead + Send>, path: &Path) -> Result<TableLoad, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).map_err(io_err)?;
    let img = ipfib::image::ImageTable::from_bytes(&bytes).map_err(|source| ReadError::Image {
        path: path.to_path_buf(),
        source,
    })?;
    let mut routes = Vec::with_capacity(img.v4.len() + img.v6.len());
    let mut push = |prefix: ipfib::prefix::AnyPrefix, value: &str| {
        let line = routes.len() as u64 + 1;
        routes.push(Route {
            prefix,
            value: value.to_owned(),
            line,
        });
    };
    for o in 0..img.v4.len() as u32 {
        if let Some((p, v)) = img.v4.route(o) {
            push(p.into(), v);
        }
    }
    for o in 0..img.v6.len() as u32 {
        if let Some((p, v)) = img.v6.route(o) {
            push(p.into(), v);
        }
    }
    let mut report = Report::new(Format::Compiled);
    report.records = routes.len() as u64;
    report.bytes = bytes.len() as u64;
    Ok(TableLoad { routes, report })
}

/// Most decompressed bytes read to find a MaxMind DB by its trailing
/// marker when the format is not named: a few MB of zstd can expand to
/// gigabytes of zeros, so sniffing a binary stream stops here (name the
/// format with `--format mmdb` for a larger one).
pub const MMDB_SNIFF_BYTES: u64 = 256 << 20;
/// Most decompressed bytes of a MaxMind DB read through a stream (the
/// format's 32-bit pointers put its data section under 4 GiB).
pub const MMDB_STREAM_BYTES: u64 = 4 << 30;

/// Read `reader` to its end, refusing more than `cap` bytes.
fn read_capped(
    reader: &mut dyn Read,
    cap: u64,
    path: &Path,
    what: &str,
) -> Result<Vec<u8>, ReadError> {
    let mut all = Vec::new();
    reader
        .take(cap + 1)
        .read_to_end(&mut all)
        .map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if all.len() as u64 > cap {
        return Err(ReadError::Io {
            path: path.to_path_buf(),
            source: io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{what}: more than {cap} bytes after decompression"),
            ),
        });
    }
    Ok(all)
}

/// The format to read: as asked, or sniffed from the head of the stream
/// (which is put back in front of the rest).
fn resolve(
    mut reader: Box<dyn BufRead + Send>,
    path: &Path,
    format: Format,
) -> Result<(Format, Box<dyn BufRead + Send>), ReadError> {
    if format != Format::Auto {
        return Ok((format, reader));
    }
    let mut head = Vec::with_capacity(HEAD_BYTES);
    // A stream damaged within its first bytes: sniff what came, and hand
    // the error on at the same place for the reader to report.
    let failure = (&mut reader)
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .err();
    let format = match sniff(&head) {
        Ok(f) => f,
        // Binary and not MRT: a MaxMind DB shows only at its end (a
        // compressed one, or bytes handed in: read it all to see).
        Err(tried) if failure.is_none() => {
            let mut all = head;
            let rest = read_capped(
                &mut reader,
                MMDB_SNIFF_BYTES,
                path,
                "binary input that is not MRT, looked at as a MaxMind DB (name the format with --format for a larger one)",
            )?;
            all.extend_from_slice(&rest);
            if crate::mmdb::looks_like_mmdb(&all) {
                return Ok((Format::Mmdb, Box::new(Cursor::new(all))));
            }
            return Err(ReadError::UnknownFormat {
                path: path.to_path_buf(),
                tried: format!("{tried}; mmdb (no MaxMind DB metadata marker at the end)"),
            });
        }
        Err(tried) => {
            return Err(ReadError::UnknownFormat {
                path: path.to_path_buf(),
                tried,
            })
        }
    };
    let rest: Box<dyn BufRead + Send> = match failure {
        None => reader,
        Some(e) => Box::new(io::BufReader::new(Failing(e.kind(), e.to_string()))),
    };
    Ok((format, Box::new(Cursor::new(head).chain(rest))))
}

/// A reader that fails with the error a stream failed with.
struct Failing(io::ErrorKind, String);

impl Read for Failing {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(io::Error::new(self.0, self.1.clone()))
    }
}

/// The value policy, checked against the format.
fn policy_for(
    format: Format,
    opts: &TableOptions,
    path: &Path,
) -> Result<Option<ValuePolicy>, ReadError> {
    let refuse = |reason: &str| ReadError::Policy {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let value = opts.value;
    match (format, value, &opts.field) {
        // A field path, which only a MaxMind DB takes.
        (Format::Mmdb, None, _) | (Format::Mmdb, Some(_), Some(_)) => return Ok(None),
        (Format::Mmdb, Some(_), None) => {
            return Err(refuse(
                "a MaxMind DB takes a field path (--value country.iso_code), not a value policy",
            ))
        }
        (Format::Mrt | Format::Updates, None, Some(f)) => {
            let e = ValuePolicy::from_name(f.as_str(), None).err().unwrap_or_default();
            return Err(refuse(&e));
        }
        (_, None, Some(f)) => {
            return Err(refuse(&format!(
                "--value {} applies to MRT, update streams and MaxMind DBs; a {format} table carries its own value",
                f.as_str()
            )))
        }
        _ => {}
    }
    match (format, value) {
        (_, None) | (Format::Mrt, _) => Ok(value),
        (Format::Updates, Some(ValuePolicy::OriginAsn)) => Err(refuse(
            "text updates carry no AS path: use --value next-hop --peer 0 or peer-count",
        )),
        (Format::Updates, _) => Ok(value),
        (f, Some(_)) => Err(refuse(&format!(
            "--value and --peer apply to MRT and update streams; a {f} table carries its own value"
        ))),
    }
}

/// Text, ipasn and pfx2as, leniently: bad lines skipped and counted, damage
/// ends the read with the complete lines kept (a line cut by the damage is
/// dropped, never read as a shorter prefix).
fn load_lines(
    mut reader: Box<dyn BufRead + Send>,
    compression: Compression,
    path: &Path,
    format: Format,
    opts: &TableOptions,
) -> Result<TableLoad, ReadError> {
    let mut report = Report::new(format);
    let mut routes = Vec::new();
    let line_opts = LoadOptions {
        format,
        host_bits: opts.host_bits,
    };
    let strict = opts.strict;
    let result = read_lines(&mut reader, path, compression, &line_opts, |r| {
        match r {
            Ok(route) => routes.push(route),
            Err(e) if strict => return Err(e),
            Err(e) => report.skip(e),
        }
        Ok(())
    });
    match result {
        Ok(summary) => {
            report.records = summary.lines;
            report.bytes = summary.bytes;
        }
        Err(e) => {
            let damage = line_damage(e, strict)?;
            report.records = damage.records_before;
            report.bytes = damage.offset;
            report.damage = Some(damage);
        }
    }
    Ok(TableLoad { routes, report })
}

/// Update events from an MRT (BGP4MP) or text update stream, lazily, in
/// stream order. Without `strict`, bad records are skipped and counted and
/// damage ends the stream; [`UpdateReader::report`] says what happened.
/// With `strict`, the first problem is the last item.
///
/// ```
/// use ipfib_io::{read_updates_from, Change, Event, TableOptions};
///
/// let text = b"1000 a 10.0.0.0/8 192.0.2.1\n1001 w 10.0.0.0/8 192.0.2.1\n";
/// let events: Vec<Event> = read_updates_from(&text[..], "u", &TableOptions::default())?
///     .collect::<Result<_, _>>()?;
/// let Event::Update(last) = &events[1] else { panic!("an update") };
/// assert_eq!((last.timestamp, &last.change), (1001, &Change::Withdraw));
/// # Ok::<(), ipfib_io::ReadError>(())
/// ```
pub struct UpdateReader {
    inner: Inner,
}

enum Inner {
    Mrt(MrtEvents<Box<dyn BufRead + Send>>),
    Text(TextEvents<Box<dyn BufRead + Send>>),
}

impl UpdateReader {
    /// What the stream has gone through so far (complete once the iterator
    /// has returned `None`).
    ///
    /// ```
    /// # use ipfib_io::{read_updates_from, TableOptions};
    /// let text = b"1000 a 10.0.0.0/8 192.0.2.1\n1001 x 10.0.0.0/8 192.0.2.1\n";
    /// let mut updates = read_updates_from(&text[..], "u", &TableOptions::default())?;
    /// assert_eq!(updates.by_ref().filter(Result::is_ok).count(), 1);
    /// assert_eq!((updates.report().records, updates.report().bad), (2, 1));
    /// assert!(updates.report().has_problems());
    /// # Ok::<(), ipfib_io::ReadError>(())
    /// ```
    pub fn report(&self) -> &Report {
        match &self.inner {
            Inner::Mrt(m) => &m.report,
            Inner::Text(t) => &t.report,
        }
    }
}

impl Iterator for UpdateReader {
    type Item = Result<Event, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::Mrt(m) => m.next_event(),
            Inner::Text(t) => t.next_event(),
        }
    }
}

/// Open an update stream: MRT with BGP4MP records, or text updates
/// (`opts.format` `Auto`, `Mrt` or `Updates`; `value` is ignored).
///
/// ```
/// # use ipfib_io::{read_updates, Event, TableOptions};
/// let path = std::env::temp_dir().join(format!("ipfib-doc-upd-{}.txt", std::process::id()));
/// std::fs::write(&path, "1000 a 2001:db8::/32 2001:db8::1\n")?;
/// let events: Result<Vec<Event>, _> = read_updates(&path, &TableOptions::default())?.collect();
/// std::fs::remove_file(&path)?;
/// let Event::Update(u) = &events?[0] else { panic!("an update") };
/// assert_eq!(u.prefix.to_string(), "2001:db8::/32");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_updates(path: &Path, opts: &TableOptions) -> Result<UpdateReader, ReadError> {
    let input = open_input(path, None)?;
    updates_from(input.reader, path, opts)
}

/// [`read_updates`] for uncompressed bytes already in hand.
///
/// ```
/// use ipfib_io::{read_updates_from, ReadError, TableOptions};
///
/// let table = b"10.0.0.0/8 a\n";
/// let err = read_updates_from(&table[..], "t.txt", &TableOptions::default()).err();
/// assert!(matches!(err, Some(ReadError::Policy { .. })));
/// ```
pub fn read_updates_from<R: BufRead + Send + 'static>(
    reader: R,
    name: &str,
    opts: &TableOptions,
) -> Result<UpdateReader, ReadError> {
    updates_from(Box::new(reader), Path::new(name), opts)
}

fn updates_from(
    reader: Box<dyn BufRead + Send>,
    path: &Path,
    opts: &TableOptions,
) -> Result<UpdateReader, ReadError> {
    let (format, reader) = resolve(reader, path, opts.format)?;
    let inner = match format {
        Format::Mrt => Inner::Mrt(MrtEvents::new(reader, path, opts.strict)),
        Format::Updates => Inner::Text(TextEvents::new(reader, path, opts.host_bits, opts.strict)),
        other => {
            return Err(ReadError::Policy {
                path: path.to_path_buf(),
                reason: format!("a {other} table is not an update stream (mrt or updates)"),
            })
        }
    };
    Ok(UpdateReader { inner })
}
