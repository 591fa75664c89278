//! The `ranges` format: IP ranges with a value, `FIRST,LAST,VALUE...`, as
//! CSV, TSV or blank-separated columns (the separator is decided per line:
//! `fields.rs`), turned into the prefixes a longest-prefix match needs
//! (`paint.rs`).
//!
//! - `#` lines and blank lines are skipped. The first data line is a
//!   header (`start,end,asn`) when its first field is a word rather than an
//!   address (see [`fields::is_header`]); it is skipped and reported.
//! - The value is the column given by [`TableOptions::value_column`]
//!   (1-based, default 3), unquoted, kept as written. Columns past the ones
//!   used are ignored (iptoasn's `start end ASN country description`).
//! - Overlapping ranges: the later line wins on the addresses they share.
//!   Ranges are painted in file order onto disjoint intervals; each maximal
//!   run of adjacent intervals with one value becomes its minimal CIDR
//!   cover. A prefix's line is that of the range that painted its first
//!   address.
//! - A bad line (an address that does not parse, FIRST after LAST, mixed
//!   families, no value column, a broken quote) is skipped and counted, or
//!   with `strict` ends the read; its error names the file and line.

pub(crate) mod fields;
mod paint;

use fields::is_header;

use crate::error::{quote, ReadError};
use crate::format::Format;
use crate::input::{next_line, Compression};
use crate::options::{TableLoad, TableOptions};
use crate::read::{damage_behind, line_damage, read_failed, trim_line_end, UTF8_BOM};
use crate::report::Report;
pub use crate::stats::RangeStats;
use fields::{parse_range_line, RangeLine, Span};
use paint::Painter;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

/// The value column of a ranges table unless told otherwise: the one after
/// FIRST and LAST.
pub const DEFAULT_VALUE_COLUMN: usize = 3;

/// The column to read values from, checked.
pub(crate) fn value_column(opts: &TableOptions, path: &Path) -> Result<usize, ReadError> {
    match opts.value_column.unwrap_or(DEFAULT_VALUE_COLUMN) {
        c if c >= DEFAULT_VALUE_COLUMN => Ok(c),
        c => Err(ReadError::Policy {
            path: path.to_path_buf(),
            reason: format!(
                "value column {c}: columns 1 and 2 are the range's first and last address, \
                 so the value is column 3 or later"
            ),
        }),
    }
}

/// Distinct values, each stored once.
#[derive(Default)]
struct Values {
    index: HashMap<Box<str>, u32>,
    all: Vec<Box<str>>,
}

impl Values {
    fn id(&mut self, value: &str) -> Option<u32> {
        if let Some(&id) = self.index.get(value) {
            return Some(id);
        }
        let id = u32::try_from(self.all.len()).ok()?;
        self.all.push(value.into());
        self.index.insert(value.into(), id);
        Some(id)
    }
}

/// Whether `[first, last]` is exactly one prefix: its size is a power of
/// two and `first` is aligned to it.
fn is_cidr(first: u128, last: u128) -> bool {
    let span = last - first;
    span & span.wrapping_add(1) == 0 && first & span == 0
}

/// Read a ranges table to the end (or to damage), leniently unless
/// `opts.strict`.
pub(crate) fn load(
    reader: &mut (dyn BufRead + Send),
    compression: Compression,
    path: &Path,
    opts: &TableOptions,
) -> Result<TableLoad, ReadError> {
    let column = value_column(opts, path)?;
    let mut report = Report::new(Format::Ranges);
    let mut stats = RangeStats {
        value_column: column,
        ..RangeStats::default()
    };
    let (mut v4, mut v6) = (Painter::<u32>::default(), Painter::<u128>::default());
    let mut values = Values::default();
    let mut buf = Vec::with_capacity(256);
    let (mut line, mut offset) = (0u64, 0u64);
    let mut seen_data = false;
    loop {
        match next_line(reader, &mut buf) {
            Ok(true) => line += 1,
            Ok(false) => break,
            Err(source) => {
                let error = read_failed(source, path, line + 1, offset, compression);
                report.damage = Some(line_damage(error, opts.strict)?);
                break;
            }
        }
        offset += buf.len() as u64;
        let mut bytes = trim_line_end(&buf);
        if line == 1 {
            bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
        }
        let error = match std::str::from_utf8(bytes) {
            Err(_) => ReadError::InvalidUtf8 {
                path: path.to_path_buf(),
                line,
                text: quote(&String::from_utf8_lossy(bytes)),
            },
            Ok(text) => match parse_range_line(text, column) {
                Ok(RangeLine::Skip) => continue,
                Ok(RangeLine::Range { span, value }) => {
                    seen_data = true;
                    let Some(id) = values.id(&value) else {
                        return Err(ReadError::Policy {
                            path: path.to_path_buf(),
                            reason: "more than 2^32 distinct values".into(),
                        });
                    };
                    let (first, last) = match span {
                        Span::V4(a, b) => {
                            v4.paint(a, b, id, line);
                            (u128::from(a), u128::from(b))
                        }
                        Span::V6(a, b) => {
                            v6.paint(a, b, id, line);
                            (a, b)
                        }
                    };
                    stats.ranges += 1;
                    stats.unaligned += u64::from(!is_cidr(first, last));
                    continue;
                }
                Err(_) if !seen_data && is_header(text) => {
                    seen_data = true;
                    stats.header_line = Some(line);
                    continue;
                }
                Err(reason) => ReadError::BadRange {
                    path: path.to_path_buf(),
                    line,
                    text: quote(text.trim_ascii()),
                    reason,
                },
            },
        };
        seen_data = true;
        if opts.strict {
            let at = (line, offset);
            return Err(damage_behind(
                error,
                reader,
                &mut buf,
                at,
                path,
                compression,
            ));
        }
        report.skip(error);
    }
    report.records = report.damage.as_ref().map_or(line, |d| d.records_before);
    report.bytes = report.damage.as_ref().map_or(offset, |d| d.offset);
    stats.overlapping = v4.overlapping + v6.overlapping;
    report.ranges = Some(stats);
    let mut routes = Vec::new();
    v4.into_routes(&values.all, &mut routes);
    v6.into_routes(&values.all, &mut routes);
    Ok(TableLoad { routes, report })
}
