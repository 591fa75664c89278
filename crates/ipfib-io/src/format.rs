//! `Format`: which table format a file is in, by name or by sniffing.

use std::fmt;
use std::str::FromStr;

/// The format of a route table file.
///
/// `Text` and `Ipasn` are read today; `Pfx2as` (CAIDA's `ADDR<TAB>LEN<TAB>ASN`)
/// and `Mrt` (RFC 6396 dumps) are named so the CLI can accept them, and
/// reading them fails with [`ReadError::UnsupportedFormat`](crate::ReadError)
/// until their reader lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// Decide from the content: `Ipasn` when the first non-blank line starts
    /// with `;`, `Text` otherwise (see the crate docs for why).
    #[default]
    Auto,
    /// `PREFIX/LEN VALUE` per line, `#` comments.
    Text,
    /// pyasn's IPASN `.dat`: `;` comment lines, then `PREFIX/LEN<TAB>ASN`.
    Ipasn,
    /// CAIDA RouteViews pfx2as (not supported yet).
    Pfx2as,
    /// MRT RIB dump (not supported yet).
    Mrt,
}

impl Format {
    /// Every format, in the order the CLI lists them.
    pub const ALL: [Format; 5] = [
        Format::Auto,
        Format::Text,
        Format::Ipasn,
        Format::Pfx2as,
        Format::Mrt,
    ];

    /// The name used on the command line and in messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Text => "text",
            Format::Ipasn => "ipasn",
            Format::Pfx2as => "pfx2as",
            Format::Mrt => "mrt",
        }
    }

    /// Whether this crate can read the format now (`Auto` always resolves to
    /// one that it can).
    pub fn is_supported(self) -> bool {
        !matches!(self, Format::Pfx2as | Format::Mrt)
    }

    /// The format `Auto` resolves to, given the first non-blank line (with
    /// its leading whitespace already removed).
    pub(crate) fn sniff(first_line: &[u8]) -> Format {
        if first_line.starts_with(b";") {
            Format::Ipasn
        } else {
            Format::Text
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is none of `auto`, `text`, `ipasn`, `pfx2as`, `mrt`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format '{0}' (expected auto, text, ipasn, pfx2as or mrt)")]
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
        assert_eq!(
            "csv".parse::<Format>().unwrap_err().to_string(),
            "unknown format 'csv' (expected auto, text, ipasn, pfx2as or mrt)"
        );
        assert_eq!(Format::default(), Format::Auto);
    }

    #[test]
    fn sniffs_ipasn_by_its_semicolon() {
        assert_eq!(Format::sniff(b"; IP-ASN32-DAT file"), Format::Ipasn);
        assert_eq!(Format::sniff(b"# source"), Format::Text);
        assert_eq!(Format::sniff(b"1.0.0.0/24\t15169"), Format::Text);
    }

    #[test]
    fn only_text_and_ipasn_are_supported() {
        let supported: Vec<Format> = Format::ALL
            .into_iter()
            .filter(|f| f.is_supported())
            .collect();
        assert_eq!(supported, [Format::Auto, Format::Text, Format::Ipasn]);
    }
}
