//! What a table load is asked for ([`TableOptions`]) and what it gives
//! ([`TableLoad`]), shared by the loader (table.rs) and the readers it
//! dispatches to.

use crate::format::Format;
use crate::mmdb::FieldPath;
use crate::policy::{PeerSelector, ValuePolicy};
use crate::read::Route;
use crate::report::Report;
use ipfib::prefix::HostBits;

/// How to load a table with [`load_table`](crate::load_table).
///
/// ```
/// use ipfib_io::{load_table_from, Format, TableOptions};
///
/// let opts = TableOptions { format: Format::Ranges, value_column: Some(4), ..Default::default() };
/// let csv = b"10.0.0.0,10.0.0.255,NL,64500\n";
/// let table = load_table_from(&csv[..], "r.csv", &opts)?;
/// assert_eq!(table.routes[0].prefix.to_string(), "10.0.0.0/24");
/// assert_eq!(table.routes[0].value, "64500");
/// # Ok::<(), ipfib_io::ReadError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableOptions {
    /// The format; `Auto` (the default) sniffs the content.
    pub format: Format,
    pub host_bits: HostBits,
    /// How MRT dumps and update streams turn routes per peer into one value
    /// per prefix; `None` for the format's own default (origin-asn for MRT,
    /// the next hop for text updates). Line tables carry their value, and
    /// refuse a policy.
    pub value: Option<ValuePolicy>,
    /// Fail at the first bad line or record, or at damage, instead of
    /// skipping, counting and reporting it.
    pub strict: bool,
    /// MaxMind DB: the field of each record that becomes the value (a dot
    /// path); `None` for the whole record as compact JSON. A network whose
    /// record lacks the field gets no route.
    pub field: Option<FieldPath>,
    /// Ranges tables: the 1-based column holding the value; `None` for
    /// [`DEFAULT_VALUE_COLUMN`](crate::DEFAULT_VALUE_COLUMN) (3). Other
    /// formats refuse it.
    pub value_column: Option<usize>,
}

impl TableOptions {
    /// The options named as on the command line (and in the Python
    /// bindings): a format name, a `--value` policy name, a `--peer` (index
    /// or address; alone it means `next-hop`), host-bit masking, strictness.
    /// For a MaxMind DB (`mmdb`) the value is a field path instead; with
    /// `auto`, a value that is not a policy name is kept as a field path
    /// (and one that is, as both: which applies depends on the format the
    /// file turns out to be). The error says what was wrong.
    ///
    /// ```
    /// use ipfib_io::{Format, HostBits, TableOptions, ValuePolicy};
    ///
    /// let opts = TableOptions::from_names("mrt", Some("peer-count"), None, true, false)?;
    /// assert_eq!((opts.format, opts.host_bits), (Format::Mrt, HostBits::Mask));
    /// assert_eq!(opts.value, Some(ValuePolicy::PeerCount));
    /// assert!(TableOptions::from_names("csv", None, None, false, false).is_err());
    /// # Ok::<(), String>(())
    /// ```
    pub fn from_names(
        format: &str,
        value: Option<&str>,
        peer: Option<&str>,
        mask_host_bits: bool,
        strict: bool,
    ) -> Result<Self, String> {
        let format: Format = format.parse().map_err(|e| format!("{e}"))?;
        let peer = peer.map(str::parse::<PeerSelector>).transpose()?;
        if format == Format::Mmdb && peer.is_some() {
            return Err(
                "--peer applies to MRT dumps and update streams, not to a MaxMind DB".into(),
            );
        }
        let field = match (format, value) {
            (Format::Mmdb, Some(path)) => Some(FieldPath::parse(path)?),
            (Format::Auto, Some(path)) => FieldPath::parse(path).ok(),
            _ => None,
        };
        let value = match (format, value, peer) {
            (Format::Mmdb, _, _) | (_, None, None) => None,
            (_, None, Some(p)) => Some(ValuePolicy::NextHop(p)),
            // Not a policy: under auto, a field path (checked against the
            // format once it is known).
            (Format::Auto, Some(name), None) if field.is_some() => {
                ValuePolicy::from_name(name, None).ok()
            }
            (_, Some(name), p) => Some(ValuePolicy::from_name(name, p)?),
        };
        Ok(TableOptions {
            format,
            host_bits: if mask_host_bits {
                HostBits::Mask
            } else {
                HostBits::Reject
            },
            value,
            strict,
            field,
            value_column: None,
        })
    }
}

/// A loaded table and what the load went through.
///
/// ```
/// use ipfib_io::{load_table_from, Format, TableOptions};
///
/// let text = b"10.0.0.0/8 a\n10.0.0.0/99 b\n";
/// let table = load_table_from(&text[..], "t.txt", &TableOptions::default())?;
/// assert_eq!(table.routes.len(), 1);
/// assert_eq!((table.report.format, table.report.bad), (Format::Text, 1));
/// assert_eq!(table.report.errors[0].line(), Some(2));
/// # Ok::<(), ipfib_io::ReadError>(())
/// ```
#[derive(Debug)]
pub struct TableLoad {
    /// Routes in file order (MRT: one per prefix, in first-seen order);
    /// insert them in order and the later duplicate wins.
    pub routes: Vec<Route>,
    pub report: Report,
}
