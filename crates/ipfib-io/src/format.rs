//! `Format`: which table format a file is in, by name or by sniffing.

use std::fmt;
use std::str::FromStr;

/// The format of a route table file.
///
/// `Auto` sniffs the content; [`load_table_from`](crate::load_table_from)
/// reports the format it resolved to.
///
/// ```
/// use ipfib_io::{load_table_from, Format, TableOptions};
///
/// let sniffed = |bytes: &'static [u8]| {
///     load_table_from(bytes, "t", &TableOptions::default()).map(|t| t.report.format)
/// };
/// assert_eq!(sniffed(b"10.0.0.0/8 a\n")?, Format::Text);
/// assert_eq!(sniffed(b"10.0.0.0\t8\t64500\n")?, Format::Pfx2as);
/// assert_eq!(sniffed(b"10.0.0.0,10.0.0.255,x\n")?, Format::Ranges);
/// # Ok::<(), ipfib_io::ReadError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// Decide from the content (see `sniff.rs`).
    #[default]
    Auto,
    /// `PREFIX/LEN VALUE` per line, `#` comments.
    Text,
    /// pyasn's IPASN `.dat`: `;` comment lines, then `PREFIX/LEN<TAB>ASN`.
    Ipasn,
    /// CAIDA RouteViews pfx2as: `ADDR<TAB>LEN<TAB>ASN`, where ASN may be a
    /// multi-origin list (`_`) of AS sets (`,`), kept as written.
    Pfx2as,
    /// MRT (RFC 6396): TABLE_DUMP, TABLE_DUMP_V2, BGP4MP.
    Mrt,
    /// Text updates (the LINX files): `UNIXTIME a|w PREFIX/LEN NEXTHOP`.
    Updates,
    /// A compiled table file (`ipfib compile`, [`ipfib::image`]).
    Compiled,
    /// IP ranges with a value, `FIRST,LAST,VALUE...` (CSV, TSV or
    /// blank-separated), turned into prefixes; the later range wins where
    /// two overlap.
    Ranges,
    /// MaxMind DB (`.mmdb`): every network of the search tree, valued by
    /// its record as JSON or one field of it (see `mmdb/`).
    Mmdb,
}

impl Format {
    /// Every format, in the order the CLI lists them.
    pub const ALL: [Format; 9] = [
        Format::Auto,
        Format::Text,
        Format::Ipasn,
        Format::Pfx2as,
        Format::Mrt,
        Format::Updates,
        Format::Ranges,
        Format::Compiled,
        Format::Mmdb,
    ];

    /// The name used on the command line and in messages.
    ///
    /// ```
    /// use ipfib_io::Format;
    ///
    /// assert_eq!(Format::Pfx2as.name(), "pfx2as");
    /// assert_eq!(Format::Mmdb.to_string(), "mmdb");
    /// assert_eq!("IPASN".parse::<Format>(), Ok(Format::Ipasn));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Text => "text",
            Format::Ipasn => "ipasn",
            Format::Pfx2as => "pfx2as",
            Format::Mrt => "mrt",
            Format::Updates => "updates",
            Format::Mmdb => "mmdb",
            Format::Compiled => "compiled",
            Format::Ranges => "ranges",
        }
    }

    /// Whether the format is read line by line into routes (the
    /// `read_routes` family); MRT, update streams and ranges (painted
    /// whole) go through [`load_table`](crate::load_table).
    ///
    /// ```
    /// use ipfib_io::Format;
    ///
    /// assert!(Format::Ipasn.is_line_table());
    /// assert!(!Format::Mrt.is_line_table() && !Format::Ranges.is_line_table());
    /// ```
    pub fn is_line_table(self) -> bool {
        matches!(
            self,
            Format::Auto | Format::Text | Format::Ipasn | Format::Pfx2as
        )
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is none of `auto`, `text`, `ipasn`, `pfx2as`, `mrt`,
/// `updates`, `ranges`, `compiled`, `mmdb`.
///
/// ```
/// use ipfib_io::{Format, UnknownFormat};
///
/// assert_eq!("csv".parse::<Format>(), Err(UnknownFormat("csv".into())));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown format '{0}' (expected auto, text, ipasn, pfx2as, mrt, updates, ranges, compiled or mmdb)"
)]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    /// Parse a format name; ASCII case is ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.to_string().parse::<Format>(), Ok(f));
        }
        assert_eq!("IPASN".parse::<Format>(), Ok(Format::Ipasn));
        assert_eq!("ranges".parse::<Format>(), Ok(Format::Ranges));
        assert_eq!("MMDB".parse::<Format>(), Ok(Format::Mmdb));
        assert_eq!(
            "csv".parse::<Format>().unwrap_err().to_string(),
            "unknown format 'csv' (expected auto, text, ipasn, pfx2as, mrt, updates, ranges, compiled or mmdb)"
        );
        assert_eq!(Format::default(), Format::Auto);
    }
}
