//! One line of a ranges table: its fields, and the range and value they
//! hold, without allocating unless the value has `""` escapes.
//!
//! The separator is decided per line, by the gap after the first field:
//! a gap holding a comma makes the line comma-separated (CSV), else one
//! holding a tab makes it tab-separated (TSV), else it is separated by runs
//! of spaces. Comma and tab lines keep empty fields (`a,,b` has three);
//! blanks around a field are not part of it (spaces and tabs in CSV, spaces
//! in TSV). A field whose first non-blank character is `"` is quoted: it
//! runs to the next lone `"`, may hold separators, and `""` in it stands
//! for one `"`; after the closing quote only blanks may come before the
//! separator. A `"` inside an unquoted field is an ordinary character.
//! A quoted field cannot span lines.

use std::borrow::Cow;
use std::net::IpAddr;

/// How one line's fields are separated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sep {
    Comma,
    Tab,
    /// Runs of spaces and tabs.
    Blank,
}

/// One field: its text between the quotes (if quoted) or the separators,
/// and whether it holds `""` escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field<'a> {
    pub text: &'a str,
    escaped: bool,
}

impl<'a> Field<'a> {
    /// The field's value: `""` turned into `"`.
    pub fn unescaped(self) -> Cow<'a, str> {
        if self.escaped {
            Cow::Owned(self.text.replace("\"\"", "\""))
        } else {
            Cow::Borrowed(self.text)
        }
    }
}

/// Why a line's fields cannot be split; the 1-based column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldError {
    UnterminatedQuote(usize),
    TextAfterQuote(usize),
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldError::UnterminatedQuote(c) => write!(f, "unterminated quote in column {c}"),
            FieldError::TextAfterQuote(c) => {
                write!(f, "text after the closing quote in column {c}")
            }
        }
    }
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The separator of `line` (no surrounding whitespace), from the gap after
/// its first field.
pub(crate) fn separator(line: &str) -> Sep {
    let bytes = line.as_bytes();
    let end = if bytes.first() == Some(&b'"') {
        closing_quote(bytes, 1).map_or(bytes.len(), |(q, _)| q + 1)
    } else {
        bytes
            .iter()
            .position(|&b| b == b',' || is_blank(b))
            .unwrap_or(bytes.len())
    };
    let gap = bytes
        .get(end..)
        .unwrap_or_default()
        .iter()
        .take_while(|&&b| b == b',' || is_blank(b));
    let mut sep = Sep::Blank;
    for &b in gap {
        if b == b',' {
            return Sep::Comma;
        }
        if b == b'\t' {
            sep = Sep::Tab;
        }
    }
    sep
}

/// The index of the `"` closing a quoted field whose text starts at
/// `from`, and whether the text holds `""` escapes.
fn closing_quote(bytes: &[u8], mut from: usize) -> Option<(usize, bool)> {
    let mut escaped = false;
    loop {
        let q = from + bytes.get(from..)?.iter().position(|&b| b == b'"')?;
        if bytes.get(q + 1) == Some(&b'"') {
            escaped = true;
            from = q + 2;
        } else {
            return Some((q, escaped));
        }
    }
}

/// The fields of one line (no surrounding whitespace), in order.
pub(crate) struct Fields<'a> {
    line: &'a str,
    sep: Sep,
    pos: usize,
    column: usize,
    done: bool,
}

impl<'a> Fields<'a> {
    pub fn new(line: &'a str) -> Self {
        Fields {
            line,
            sep: separator(line),
            pos: 0,
            column: 0,
            done: line.is_empty(),
        }
    }

    /// Blanks that surround a field (and are no part of it).
    fn is_pad(&self, b: u8) -> bool {
        match self.sep {
            Sep::Tab => b == b' ',
            Sep::Comma | Sep::Blank => is_blank(b),
        }
    }

    fn is_sep(&self, b: u8) -> bool {
        match self.sep {
            Sep::Comma => b == b',',
            Sep::Tab => b == b'\t',
            Sep::Blank => is_blank(b),
        }
    }

    fn text(&self, from: usize, to: usize) -> &'a str {
        // Separators, blanks and quotes are ASCII: always char boundaries.
        self.line.get(from..to).unwrap_or_default()
    }

    /// Step over the separator at `self.pos` (or note the end of the line).
    fn after_field(&mut self) {
        let bytes = self.line.as_bytes();
        match bytes.get(self.pos) {
            None => self.done = true,
            Some(_) if self.sep == Sep::Blank => {
                while bytes.get(self.pos).copied().is_some_and(is_blank) {
                    self.pos += 1;
                }
                self.done = self.pos >= bytes.len();
            }
            Some(_) => self.pos += 1,
        }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, FieldError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.column += 1;
        let bytes = self.line.as_bytes();
        let mut start = self.pos;
        while bytes.get(start).is_some_and(|&b| self.is_pad(b)) {
            start += 1;
        }
        if bytes.get(start) == Some(&b'"') {
            let Some((close, escaped)) = closing_quote(bytes, start + 1) else {
                self.done = true;
                return Some(Err(FieldError::UnterminatedQuote(self.column)));
            };
            let mut end = close + 1;
            while bytes.get(end).is_some_and(|&b| self.is_pad(b)) {
                end += 1;
            }
            // In blank-separated lines the pad is the separator: step back
            // onto it.
            if self.sep == Sep::Blank && end > close + 1 {
                end = close + 1;
            }
            if bytes.get(end).is_some_and(|&b| !self.is_sep(b)) {
                self.done = true;
                return Some(Err(FieldError::TextAfterQuote(self.column)));
            }
            self.pos = end;
            self.after_field();
            return Some(Ok(Field {
                text: self.text(start + 1, close),
                escaped,
            }));
        }
        let end = bytes
            .get(start..)
            .unwrap_or_default()
            .iter()
            .position(|&b| self.is_sep(b))
            .map_or(bytes.len(), |i| start + i);
        let mut trimmed = end;
        while trimmed > start && bytes.get(trimmed - 1).is_some_and(|&b| self.is_pad(b)) {
            trimmed -= 1;
        }
        self.pos = end;
        self.after_field();
        Some(Ok(Field {
            text: self.text(start, trimmed),
            escaped: false,
        }))
    }
}

/// What one line holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RangeLine<'a> {
    /// Blank, or a `#` comment.
    Skip,
    Range {
        span: Span,
        value: Cow<'a, str>,
    },
}

/// A range's first and last address (`first <= last`), of one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Span {
    V4(u32, u32),
    V6(u128, u128),
}

/// Parse one line (without its line ending); `value_column` is 1-based.
/// The error is the reason, for the caller to add file, line and text.
pub(crate) fn parse_range_line(line: &str, value_column: usize) -> Result<RangeLine<'_>, String> {
    let line = line.trim_ascii();
    if line.is_empty() || line.starts_with('#') {
        return Ok(RangeLine::Skip);
    }
    let (mut first, mut last, mut value) = (None, None, None);
    let mut columns = 0;
    // Every field is split, so a bad quote anywhere makes the line bad,
    // whichever column the value is taken from.
    for (i, field) in Fields::new(line).enumerate() {
        let field = field.map_err(|e| e.to_string())?;
        columns = i + 1;
        match columns {
            1 => first = Some(field.text),
            2 => last = Some(field.text),
            _ => {}
        }
        if columns == value_column {
            value = Some(field);
        }
    }
    let first = address(first.unwrap_or_default(), "first")?;
    let last = match last {
        None => return Err("no last address (a line is FIRST,LAST,VALUE...)".to_string()),
        Some(text) => address(text, "last")?,
    };
    let span = match (first, last) {
        (IpAddr::V4(a), IpAddr::V4(b)) if a <= b => Span::V4(a.into(), b.into()),
        (IpAddr::V6(a), IpAddr::V6(b)) if a <= b => Span::V6(a.into(), b.into()),
        (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
            return Err(format!(
                "the first address {first} is after the last address {last}"
            ))
        }
        _ => {
            return Err(format!(
                "the first address {first} and the last address {last} are of different families"
            ))
        }
    };
    let value = match value {
        None => {
            return Err(format!(
                "no value column {value_column} (the line has {columns} columns)"
            ))
        }
        Some(f) if f.text.is_empty() => {
            return Err(format!("empty value in column {value_column}"))
        }
        Some(f) => f.unescaped(),
    };
    Ok(RangeLine::Range { span, value })
}

fn address(text: &str, which: &str) -> Result<IpAddr, String> {
    text.parse()
        .map_err(|_| format!("invalid {which} address {text:?}"))
}

/// Whether `line` (a first data line) is a header such as
/// `start,end,asn`: its first field is no address and has a letter that no
/// address has (so a misspelt address is a bad line, not a header), and its
/// second field is no address either.
pub(crate) fn is_header(line: &str) -> bool {
    let mut fields = Fields::new(line.trim_ascii());
    let Some(Ok(first)) = fields.next() else {
        return false;
    };
    let wordy = first
        .text
        .bytes()
        .any(|b| b.is_ascii_alphabetic() && !b.is_ascii_hexdigit());
    let second_is_address =
        matches!(fields.next(), Some(Ok(f)) if f.text.parse::<IpAddr>().is_ok());
    wordy && first.text.parse::<IpAddr>().is_err() && !second_is_address
}

/// Whether a data line starts with two addresses of one family (for
/// `--format auto`).
pub(crate) fn looks_like_range(line: &str) -> bool {
    let mut fields = Fields::new(line.trim_ascii());
    let mut address = || match fields.next() {
        Some(Ok(f)) => f.text.parse::<IpAddr>().ok(),
        _ => None,
    };
    matches!(
        (address(), address()),
        (Some(IpAddr::V4(_)), Some(IpAddr::V4(_))) | (Some(IpAddr::V6(_)), Some(IpAddr::V6(_)))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(line: &str) -> Result<Vec<String>, FieldError> {
        Fields::new(line)
            .map(|f| f.map(|f| f.unescaped().into_owned()))
            .collect()
    }

    #[test]
    fn separators_are_decided_by_the_gap_after_the_first_field() {
        assert_eq!(separator("a,b c\td"), Sep::Comma);
        assert_eq!(separator("a ,b"), Sep::Comma);
        assert_eq!(separator("a\tb,c d"), Sep::Tab);
        assert_eq!(separator("a \t b"), Sep::Tab);
        assert_eq!(separator("a  b,c"), Sep::Blank);
        assert_eq!(separator("\"a,b\",c"), Sep::Comma);
        assert_eq!(separator("\"a b\"\tc"), Sep::Tab);
        assert_eq!(separator("a"), Sep::Blank);
    }

    #[test]
    fn csv_fields() {
        assert_eq!(fields("a,b,c").unwrap(), ["a", "b", "c"]);
        assert_eq!(fields("a, b ,\tc").unwrap(), ["a", "b", "c"]);
        assert_eq!(fields("a,,c,").unwrap(), ["a", "", "c", ""]);
        assert_eq!(
            fields("1,2,13335,\"Cloudflare, Inc.\"").unwrap(),
            ["1", "2", "13335", "Cloudflare, Inc."]
        );
        assert_eq!(
            fields("1,2,3,\"LLC \"\"SPUTNIK\"\"\"").unwrap(),
            ["1", "2", "3", "LLC \"SPUTNIK\""]
        );
        assert_eq!(fields("a, \"b,c\" ,d").unwrap(), ["a", "b,c", "d"]);
        assert_eq!(fields("a,\"\",d").unwrap(), ["a", "", "d"]);
        assert_eq!(fields("a,b \"c\" d").unwrap(), ["a", "b \"c\" d"]);
        assert_eq!(fields("a,\"b,c"), Err(FieldError::UnterminatedQuote(2)));
        assert_eq!(fields("a,\"b\"x,c"), Err(FieldError::TextAfterQuote(2)));
        assert_eq!(
            fields("a,\"b\"\"").unwrap_err(),
            FieldError::UnterminatedQuote(2)
        );
    }

    #[test]
    fn tsv_and_blank_fields() {
        assert_eq!(
            fields("1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET - Cloudflare, Inc.").unwrap(),
            [
                "1.0.0.0",
                "1.0.0.255",
                "13335",
                "US",
                "CLOUDFLARENET - Cloudflare, Inc."
            ]
        );
        assert_eq!(fields("a\t\tc").unwrap(), ["a", "", "c"]);
        assert_eq!(fields("a \t b\t\"c\td\" ").unwrap(), ["a", "b", "c\td"]);
        assert_eq!(fields("a   b \t c").unwrap(), ["a", "b", "c"]);
        assert_eq!(fields("a \"b c\"  d").unwrap(), ["a", "b c", "d"]);
        assert_eq!(fields("a \"b c\"d"), Err(FieldError::TextAfterQuote(2)));
        assert_eq!(fields("").unwrap(), Vec::<String>::new());
    }

    fn range(line: &str, column: usize) -> Result<(String, String, String), String> {
        match parse_range_line(line, column)? {
            RangeLine::Skip => Ok(Default::default()),
            RangeLine::Range { span, value } => {
                let (first, last) = match span {
                    Span::V4(a, b) => (
                        std::net::Ipv4Addr::from(a).to_string(),
                        std::net::Ipv4Addr::from(b).to_string(),
                    ),
                    Span::V6(a, b) => (
                        std::net::Ipv6Addr::from(a).to_string(),
                        std::net::Ipv6Addr::from(b).to_string(),
                    ),
                };
                Ok((first, last, value.into_owned()))
            }
        }
    }

    #[test]
    fn range_lines() {
        let r = |a: &str, b: &str, v: &str| Ok((a.to_string(), b.to_string(), v.to_string()));
        assert_eq!(range("", 3), Ok(Default::default()));
        assert_eq!(range("  # c,d", 3), Ok(Default::default()));
        assert_eq!(
            range("1.0.0.0,1.0.0.255,13335", 3),
            r("1.0.0.0", "1.0.0.255", "13335")
        );
        assert_eq!(
            range("1.0.0.0,1.0.0.255,13335,\"Cloudflare, Inc.\"", 4),
            r("1.0.0.0", "1.0.0.255", "Cloudflare, Inc.")
        );
        assert_eq!(
            range("2001:db8::\t2001:db8::ff\t64496\tZZ\tAn org", 5),
            r("2001:db8::", "2001:db8::ff", "An org")
        );
        assert_eq!(range(" ::  ::1 x ", 3), r("::", "::1", "x"));
        assert!(range("1.0.0.0,1.0.0.255", 3)
            .unwrap_err()
            .contains("no value column 3 (the line has 2 columns)"));
        assert!(range("1.0.0.0,1.0.0.255,,x", 3)
            .unwrap_err()
            .contains("empty value in column 3"));
        assert!(range("1.0.0.0", 3).unwrap_err().contains("no last address"));
        assert!(range("1.0.0.256,1.0.0.255,1", 3)
            .unwrap_err()
            .contains("invalid first address \"1.0.0.256\""));
        assert!(range("1.0.0.0,::1,1", 3)
            .unwrap_err()
            .contains("different families"));
        assert!(range("1.0.0.2,1.0.0.1,1", 3)
            .unwrap_err()
            .contains("is after the last address"));
        assert!(range("1.0.0.0,1.0.0.1,1,\"x", 3)
            .unwrap_err()
            .contains("unterminated quote in column 4"));
    }

    #[test]
    fn headers_and_sniffing() {
        assert!(is_header("start,end,asn"));
        assert!(is_header("ip_from\tip_to\tasn"));
        assert!(is_header("\"range start\",\"range end\""));
        assert!(!is_header("1.2.3.256,1.2.3.300,1"), "a misspelt address");
        assert!(
            !is_header("1.2.3.x,1.2.3.255,1"),
            "the second field is an address"
        );
        assert!(!is_header("dead,beef,1"), "hex digits only");
        assert!(!is_header("1.0.0.0,1.0.0.255,1"));
        assert!(looks_like_range("1.0.0.0,1.0.0.255,13335"));
        assert!(looks_like_range("2001::\t2001::ff\t1"));
        assert!(looks_like_range("1.0.0.0 1.0.0.255"));
        assert!(!looks_like_range("1.0.0.0,::1,1"));
        assert!(!looks_like_range("1.0.0.0/24 1"));
        assert!(!looks_like_range("1.0.0.0\t24\t13335"));
    }
}
