//! What a lenient read went through besides the routes it returned
//! ([`Report`]): what it skipped, where it stopped, each format's
//! statistics; and the report as the messages every front end shows.

use crate::damage::Damage;
use crate::error::ReadError;
use crate::format::Format;
use crate::input::Compression;
use crate::stats::{MmdbInfo, MrtStats, RangeStats};
use std::path::Path;

/// How many skipped lines or records a [`Report`] keeps the errors of.
pub const KEPT_ERRORS: usize = 10;

/// What a lenient read went through, besides the routes it returned.
///
/// ```
/// use ipfib_io::{load_table_from, Compression, TableOptions};
///
/// let text = b"10.0.0.0/8 a\n10.0.0.1/8 b\n";
/// let report = load_table_from(&text[..], "t", &TableOptions::default())?.report;
/// assert_eq!((report.records, report.bad, report.compression), (2, 1, Compression::None));
/// assert!(report.has_problems() && report.damage.is_none());
/// # Ok::<(), ipfib_io::ReadError>(())
/// ```
#[derive(Debug, Default)]
pub struct Report {
    /// The format the input was read as (never `Auto`).
    pub format: Format,
    /// How the file was compressed.
    pub compression: Compression,
    /// Lines (text formats, comments included) or MRT records framed whole.
    pub records: u64,
    /// Lines or records that were skipped because they did not parse.
    pub bad: u64,
    /// The first [`KEPT_ERRORS`] of them.
    pub errors: Vec<ReadError>,
    /// MRT records of types or subtypes that carry no routes we read
    /// (BGP4MP_ENTRY, OSPF, ...), per `(type, subtype)`, in order of first
    /// appearance. Not damage, but not silently dropped either.
    pub unsupported: Vec<((u16, u16), u64)>,
    /// Where each pair is in `unsupported`: a file of many distinct pairs
    /// must not cost a scan of the list per record.
    unsupported_at: std::collections::HashMap<(u16, u16), usize>,
    /// Where reading stopped early, if it did.
    pub damage: Option<Damage>,
    /// Decompressed bytes read (up to the damage, if any).
    pub bytes: u64,
    /// MRT detail (peers, multi-origin prefixes, ...); `None` for text.
    pub mrt: Option<MrtStats>,
    /// MaxMind DB detail (metadata, distinct records); `None` otherwise.
    pub mmdb: Option<MmdbInfo>,
    /// Ranges detail (overlaps, the header, ...); `None` for other formats.
    pub ranges: Option<RangeStats>,
}

impl Report {
    pub(crate) fn new(format: Format) -> Self {
        Report {
            format,
            ..Report::default()
        }
    }

    /// Count one skipped line or record, keeping its error if among the first.
    pub(crate) fn skip(&mut self, e: ReadError) {
        self.bad += 1;
        if self.errors.len() < KEPT_ERRORS {
            self.errors.push(e);
        }
    }

    pub(crate) fn unsupported(&mut self, key: (u16, u16)) {
        let at = *self
            .unsupported_at
            .entry(key)
            .or_insert(self.unsupported.len());
        match self.unsupported.get_mut(at) {
            Some((_, n)) => *n += 1,
            None => self.unsupported.push((key, 1)),
        }
    }

    /// Whether anything was skipped or cut short (exit status 1 in the CLI).
    pub fn has_problems(&self) -> bool {
        self.bad > 0 || self.damage.is_some() || !self.unsupported.is_empty()
    }

    /// What a lenient load skipped or where it stopped, one message per
    /// line, each naming the file: the kept errors, how many bad lines or
    /// records there were in all when not every error was kept, the
    /// unsupported MRT record types, the damage. The CLI prints these on
    /// stderr, the C ABI keeps them as the table's report text, Python
    /// warns with them.
    pub fn problems(&self, path: &Path) -> Vec<String> {
        let path = path.display();
        let mut out: Vec<String> = self.errors.iter().map(|e| e.to_string()).collect();
        if self.bad > self.errors.len() as u64 {
            out.push(format!(
                "{path}: {} bad lines or records in all (the first {} shown)",
                self.bad,
                self.errors.len()
            ));
        }
        for ((t, s), n) in &self.unsupported {
            out.push(format!(
                "{path}: {n} MRT records of type {t} subtype {s} not read (unsupported)"
            ));
        }
        if let Some(d) = &self.damage {
            out.push(format!("{path}: {d}; loaded what was complete"));
        }
        out
    }
}
