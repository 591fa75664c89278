//! Reading a whole table: lines to routes, in file order, with every
//! problem reported by file and line.

use crate::damage::{Damage, DamageKind};
use crate::error::{quote, ReadError};
use crate::format::Format;
use crate::input::{next_line, open_input, Compression, LineTooLong, MAX_LINE_BYTES};
use crate::parse::{parse_line, Line, LineError};
use ipfib::prefix::{AnyPrefix, HostBits};
use std::io::{self, BufRead};
use std::path::Path;

/// How to read a table.
///
/// ```
/// use ipfib_io::{read_routes_from, Format, HostBits, LoadOptions};
///
/// let opts = LoadOptions { format: Format::Text, host_bits: HostBits::Mask };
/// let table = read_routes_from(&b"10.1.2.3/8 a\n"[..], "t.txt", &opts)?;
/// assert_eq!(table.routes[0].prefix.to_string(), "10.0.0.0/8");
/// # Ok::<(), ipfib_io::ReadError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadOptions {
    /// The file's format; `Auto` (the default) sniffs it.
    pub format: Format,
    /// Whether host bits beyond the length are an error (the default) or
    /// cleared.
    pub host_bits: HostBits,
}

/// One route of a table.
///
/// ```
/// # use ipfib_io::{read_routes_from, LoadOptions};
/// let text = b"# comment\n192.0.2.0/24 AS64500\n";
/// let table = read_routes_from(&text[..], "t.txt", &LoadOptions::default())?;
/// let route = &table.routes[0];
/// assert_eq!(route.prefix, "192.0.2.0/24".parse()?);
/// assert_eq!((route.value.as_str(), route.line), ("AS64500", 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The prefix, canonical (host bits cleared if the caller asked to mask).
    pub prefix: AnyPrefix,
    /// The value as written: an unsigned integer or a word (an ASN, a next
    /// hop address, a name).
    pub value: String,
    /// The 1-based line it came from (text formats), or the 1-based MRT
    /// record (for a prefix in several records: the first).
    pub line: u64,
}

/// A whole table as read.
///
/// ```
/// use ipfib_io::{read_routes_from, Format, LoadOptions};
///
/// let text = b";ipasn\n10.0.0.0/8\t64500\n10.0.0.0/8\t64501\n";
/// let table = read_routes_from(&text[..], "t.dat", &LoadOptions::default())?;
/// assert_eq!(table.format, Format::Ipasn);
/// assert_eq!(table.lines, 3);
/// // Duplicates are kept in file order: the later line wins on insert.
/// assert_eq!(table.routes.last().map(|r| r.value.as_str()), Some("64501"));
/// # Ok::<(), ipfib_io::ReadError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedRoutes {
    /// The format the file was read as (never `Auto`).
    pub format: Format,
    /// Every route in file order, duplicates included: insert them in order
    /// and the later line wins, as the text format specifies.
    pub routes: Vec<Route>,
    /// Lines read, comments and blank lines included.
    pub lines: u64,
}

/// What a streaming read went through.
///
/// ```
/// use ipfib_io::{for_each_route_from, Format, LoadOptions};
///
/// let text = b"192.0.2.0\t24\t64500_64501\n";
/// let summary = for_each_route_from(&text[..], "p", &LoadOptions::default(), |r| r.map(drop))?;
/// assert_eq!(summary.format, Format::Pfx2as);
/// assert_eq!((summary.lines, summary.routes, summary.bytes), (1, 1, 25));
/// # Ok::<(), ipfib_io::ReadError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadSummary {
    /// The format the input was read as (never `Auto`).
    pub format: Format,
    /// Lines read, comments and blank lines included.
    pub lines: u64,
    /// Routes handed to the callback (bad lines not counted).
    pub routes: u64,
    /// Decompressed bytes read.
    pub bytes: u64,
}

/// Read the table at `path` (gzip-compressed or plain), stopping at the
/// first bad line.
///
/// Allocates one `String` per route for its value, plus the `Vec`.
///
/// ```
/// # use ipfib_io::{read_routes, LoadOptions};
/// let path = std::env::temp_dir().join(format!("ipfib-doc-read-{}.txt", std::process::id()));
/// std::fs::write(&path, "10.0.0.0/8 a\n2001:db8::/32 b\n")?;
/// let table = read_routes(&path, &LoadOptions::default());
/// std::fs::remove_file(&path)?;
/// let values: Vec<_> = table?.routes.into_iter().map(|r| r.value).collect();
/// assert_eq!(values, ["a", "b"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_routes(path: &Path, opts: &LoadOptions) -> Result<LoadedRoutes, ReadError> {
    collect(|sink| for_each_route(path, opts, sink))
}

/// [`read_routes`] for an already opened, uncompressed input; `name` stands
/// for the path in errors.
///
/// ```
/// use ipfib_io::{read_routes_from, LoadOptions, ReadError};
///
/// let text = b"10.0.0.0/8 a\n10.0.0.0/33 b\n";
/// let err = read_routes_from(&text[..], "t.txt", &LoadOptions::default()).unwrap_err();
/// assert!(matches!(err, ReadError::Prefix { line: 2, .. }));
/// assert!(err.to_string().starts_with("t.txt:2: "));
/// ```
pub fn read_routes_from<R: BufRead>(
    reader: R,
    name: &str,
    opts: &LoadOptions,
) -> Result<LoadedRoutes, ReadError> {
    collect(|sink| for_each_route_from(reader, name, opts, sink))
}

/// The sink both `read_routes*` share: stop at the first bad line,
/// otherwise keep every route in file order.
type Sink<'a> = &'a mut dyn FnMut(Result<Route, ReadError>) -> Result<(), ReadError>;

fn collect(
    run: impl FnOnce(Sink<'_>) -> Result<ReadSummary, ReadError>,
) -> Result<LoadedRoutes, ReadError> {
    let mut routes = Vec::new();
    let summary = run(&mut |route| {
        routes.push(route?);
        Ok(())
    })?;
    Ok(LoadedRoutes {
        format: summary.format,
        routes,
        lines: summary.lines,
    })
}

/// Stream the table at `path` (gzip-compressed or plain) through `f`, in
/// file order.
///
/// `f` receives each route, or the error of a bad line (one whose
/// [`ReadError::line`] is `Some`). Returning `Err` from `f` stops the read
/// and makes it the result: pass errors through with `?` to stop at the
/// first bad line, or collect them and return `Ok(())` to read on. Errors
/// that end the read (I/O, damaged gzip, unsupported format) are returned
/// without going through `f`.
///
/// ```
/// # use ipfib_io::{for_each_route, LoadOptions};
/// let path = std::env::temp_dir().join(format!("ipfib-doc-each-{}.txt", std::process::id()));
/// std::fs::write(&path, "10.0.0.0/8 a\nnot-a-prefix b\n192.0.2.0/24 c\n")?;
/// let (mut good, mut bad_lines) = (0, vec![]);
/// let summary = for_each_route(&path, &LoadOptions::default(), |r| {
///     match r { Ok(_) => good += 1, Err(e) => bad_lines.push(e.line()) }
///     Ok(())
/// });
/// std::fs::remove_file(&path)?;
/// assert_eq!((summary?.lines, good, bad_lines), (3, 2, vec![Some(2)]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn for_each_route<F>(path: &Path, opts: &LoadOptions, f: F) -> Result<ReadSummary, ReadError>
where
    F: FnMut(Result<Route, ReadError>) -> Result<(), ReadError>,
{
    check_supported(opts.format)?;
    let mut input = open_input(path, None)?;
    read_lines(&mut input.reader, path, input.compression, opts, f)
}

/// [`for_each_route`] for an already opened, uncompressed input; `name`
/// stands for the path in errors.
///
/// ```
/// use ipfib_io::{for_each_route_from, LoadOptions};
///
/// let mut values = Vec::new();
/// let text = b"10.0.0.0/8 a\n10.1.0.0/16 b\n";
/// for_each_route_from(&text[..], "t.txt", &LoadOptions::default(), |r| {
///     values.push(r?.value);
///     Ok(())
/// })?;
/// assert_eq!(values, ["a", "b"]);
/// # Ok::<(), ipfib_io::ReadError>(())
/// ```
pub fn for_each_route_from<R: BufRead, F>(
    mut reader: R,
    name: &str,
    opts: &LoadOptions,
    f: F,
) -> Result<ReadSummary, ReadError>
where
    F: FnMut(Result<Route, ReadError>) -> Result<(), ReadError>,
{
    check_supported(opts.format)?;
    read_lines(&mut reader, Path::new(name), Compression::None, opts, f)
}

fn check_supported(format: Format) -> Result<(), ReadError> {
    if format.is_line_table() {
        Ok(())
    } else {
        Err(ReadError::UnsupportedFormat { format })
    }
}

pub(crate) const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

pub(crate) fn read_lines<R, F>(
    reader: &mut R,
    path: &Path,
    compression: Compression,
    opts: &LoadOptions,
    mut f: F,
) -> Result<ReadSummary, ReadError>
where
    R: BufRead + ?Sized,
    F: FnMut(Result<Route, ReadError>) -> Result<(), ReadError>,
{
    let mut format = opts.format;
    let mut buf = Vec::with_capacity(256);
    let mut line = 0u64;
    let mut routes = 0u64;
    let mut offset = 0u64;
    loop {
        match next_line(reader, &mut buf) {
            Ok(true) => line += 1,
            Ok(false) => break,
            Err(source) => return Err(read_failed(source, path, line + 1, offset, compression)),
        }
        offset += buf.len() as u64;
        let mut bytes = trim_line_end(&buf);
        if line == 1 {
            bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
        }
        if format == Format::Auto {
            let start = bytes.trim_ascii_start();
            if start.is_empty() {
                continue;
            }
            if looks_binary(start) {
                let error = ReadError::Binary {
                    path: path.to_path_buf(),
                };
                return Err(damage_behind(
                    error,
                    reader,
                    &mut buf,
                    (line, offset),
                    path,
                    compression,
                ));
            }
            format = crate::sniff::line_format(start);
            if !format.is_line_table() {
                // Ranges are painted whole, not read line by line.
                return Err(ReadError::UnsupportedFormat { format });
            }
        }
        let result = match std::str::from_utf8(bytes) {
            Err(_) => Err(ReadError::InvalidUtf8 {
                path: path.to_path_buf(),
                line,
                text: quote(&String::from_utf8_lossy(bytes)),
            }),
            Ok(text) => match parse_line(text, format, opts.host_bits) {
                Ok(Line::Skip) => continue,
                Ok(Line::Route(prefix, value)) => {
                    routes += 1;
                    Ok(Route {
                        prefix,
                        value: value.to_string(),
                        line,
                    })
                }
                Err(e) => Err(line_error(e, path, line, text)),
            },
        };
        if let Err(e) = f(result) {
            return Err(damage_behind(
                e,
                reader,
                &mut buf,
                (line, offset),
                path,
                compression,
            ));
        }
    }
    if format == Format::Auto {
        // Empty or blank input: nothing to sniff, and text reads it fine.
        format = Format::Text;
    }
    Ok(ReadSummary {
        format,
        lines: line,
        routes,
        bytes: offset,
    })
}

/// `line` is the line being read, `offset` where it starts.
pub(crate) fn read_failed(
    source: io::Error,
    path: &Path,
    line: u64,
    offset: u64,
    compression: Compression,
) -> ReadError {
    let path = path.to_path_buf();
    match compression {
        Compression::None => ReadError::Read {
            path,
            line,
            offset,
            source,
        },
        c => ReadError::DamagedStream {
            path,
            compression: c.name(),
            line,
            offset,
            source,
        },
    }
}

/// The error to report when a read stops at `error` on line `line`.
///
/// A damaged compressed stream often decodes to garbage before the decoder
/// notices (gzip checks its CRC only at the end of each member), so a bad
/// line (or a binary first line) in compressed input may be a symptom:
/// decode the rest, and if the stream is damaged, report that, with the line
/// the decoder failed at. Costs the rest of the decompression, on the error
/// path only.
pub(crate) fn damage_behind<R: BufRead + ?Sized>(
    error: ReadError,
    reader: &mut R,
    buf: &mut Vec<u8>,
    (mut line, mut offset): (u64, u64),
    path: &Path,
    compression: Compression,
) -> ReadError {
    let symptom = error.line().is_some() || matches!(error, ReadError::Binary { .. });
    if compression == Compression::None || !symptom {
        return error;
    }
    loop {
        match next_line(reader, buf) {
            Ok(true) => line += 1,
            Ok(false) => return error,
            Err(source) => return read_failed(source, path, line + 1, offset, compression),
        }
        offset += buf.len() as u64;
    }
}

/// The line without its `\n` or `\r\n`.
#[inline]
pub(crate) fn trim_line_end(buf: &[u8]) -> &[u8] {
    let line = buf.strip_suffix(b"\n").unwrap_or(buf);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Control bytes other than whitespace: no text table has them, and an MRT
/// header always does (its type field starts with a zero byte).
fn looks_binary(line: &[u8]) -> bool {
    line.iter()
        .any(|&b| (b < 0x20 && !b.is_ascii_whitespace()) || b == 0x7f)
}

fn line_error(e: LineError<'_>, path: &Path, line: u64, text: &str) -> ReadError {
    let path = path.to_path_buf();
    let text = quote(text);
    match e {
        LineError::Prefix(source) => ReadError::Prefix {
            path,
            line,
            text,
            source,
        },
        LineError::MissingValue => ReadError::MissingValue { path, line, text },
        LineError::InvalidValue(value, reason) => ReadError::InvalidValue {
            path,
            line,
            text,
            value: quote(value),
            reason,
        },
        LineError::ExtraText(extra) => ReadError::ExtraText {
            path,
            line,
            text,
            extra: quote(extra),
        },
    }
}
/// A line read that failed: damage when the stream broke (a damaged or
/// truncated stream, a line too long to be text) and the read is lenient,
/// keeping the complete lines before it; otherwise the error itself.
pub(crate) fn line_damage(error: ReadError, strict: bool) -> Result<Damage, ReadError> {
    match error {
        ReadError::DamagedStream {
            line,
            offset,
            source,
            ..
        }
        | ReadError::Read {
            line,
            source,
            offset,
            ..
        } if !strict => {
            let kind = if source.get_ref().is_some_and(|e| e.is::<LineTooLong>()) {
                DamageKind::LineTooLong {
                    limit: MAX_LINE_BYTES,
                }
            } else {
                DamageKind::Stream
            };
            Ok(Damage {
                offset,
                records_before: line - 1,
                kind,
                stream_error: Some(source.to_string()),
            })
        }
        e => Err(e),
    }
}
