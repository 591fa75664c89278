//! A decoded record as a route value: the whole record as compact JSON, or
//! one field picked by a dot path.
//!
//! JSON rendering (no spaces, keys in file order):
//! - maps `{"k":v}`, arrays `[..]`, strings JSON-escaped (`"`, `\`, control
//!   characters; everything else as UTF-8);
//! - uint16/32/64/128 and int32 as exact decimal integers (a uint128 is not
//!   rounded through a double);
//! - doubles as the shortest text that reads back as the same double
//!   (`42.123456`, `1e300`, `1.0`); floats as the shortest text that reads
//!   back as the same float32 (`1.1`, not `1.100000023841858`); NaN and the
//!   infinities, which JSON cannot write, as `null`;
//! - bytes as a string of lowercase hex, two digits per byte;
//! - booleans `true` / `false`.
//!
//! A field (`--value PATH`): a string or bytes without JSON quotes, numbers
//! and booleans as above, maps and arrays as compact JSON.

use super::decode::Val;
use std::fmt::Write;

/// A dot path into a record: `country.iso_code`, `subdivisions.0.iso_code`
/// (a numeric segment indexes an array; on a map it is a key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
}

impl FieldPath {
    /// Parse a dot path; empty segments (`a..b`, a leading or trailing dot)
    /// are refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() || text.split('.').any(str::is_empty) {
            return Err(format!(
                "invalid field path {text:?}: segments separated by '.', none empty \
                 (e.g. country.iso_code, subdivisions.0.iso_code)"
            ));
        }
        Ok(FieldPath {
            text: text.to_string(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The value at this path in `record`, if every step exists. Of
    /// duplicate keys in one map the last wins (as in the official
    /// readers' dictionaries).
    pub fn select<'v, 'a>(&self, record: &'v Val<'a>) -> Option<&'v Val<'a>> {
        let mut at = record;
        for seg in self.text.split('.') {
            at = match at {
                Val::Map(pairs) => pairs
                    .iter()
                    .rev()
                    .find(|(k, _)| *k == seg)
                    .map(|(_, v)| v)?,
                Val::Array(items) => {
                    let canonical = seg == "0" || !seg.starts_with('0');
                    let i: usize = seg.parse().ok().filter(|_| canonical)?;
                    items.get(i)?
                }
                _ => return None,
            };
        }
        Some(at)
    }
}

/// The whole value as compact JSON.
pub fn json(v: &Val<'_>) -> String {
    let mut out = String::new();
    write_json(v, &mut out);
    out
}

/// A selected field as route text: strings and bytes unquoted, the rest as
/// JSON. A string that is empty or holds a line break (which would forge
/// an output line of `ipfib lookup`) is written as a JSON string, quoted
/// and escaped.
pub fn field_text(v: &Val<'_>) -> String {
    match v {
        Val::Str(s) if s.is_empty() || s.contains(['\n', '\r']) => json(v),
        Val::Str(s) => (*s).to_string(),
        Val::Bytes(b) => hex(b),
        other => json(other),
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

fn write_json(v: &Val<'_>, out: &mut String) {
    match v {
        Val::Map(pairs) => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write_json(v, out);
            }
            out.push('}');
        }
        Val::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(v, out);
            }
            out.push(']');
        }
        Val::Str(s) => write_str(s, out),
        Val::Bytes(b) => {
            out.push('"');
            out.push_str(&hex(b));
            out.push('"');
        }
        Val::Uint(u) => {
            let _ = write!(out, "{u}");
        }
        Val::Int(i) => {
            let _ = write!(out, "{i}");
        }
        // `{:?}` is the shortest text that round-trips, with an exponent
        // for very large or small magnitudes: valid JSON numbers.
        Val::Double(d) if d.is_finite() => {
            let _ = write!(out, "{d:?}");
        }
        Val::Float(f) if f.is_finite() => {
            let _ = write!(out, "{f:?}");
        }
        Val::Double(_) | Val::Float(_) => out.push_str("null"),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {

    #[test]
    fn selected_strings_cannot_forge_output_lines() {
        assert_eq!(field_text(&Val::Str("GB")), "GB");
        assert_eq!(field_text(&Val::Str("United States")), "United States");
        assert_eq!(
            field_text(&Val::Str("a\nb 1.2.3.4 x")),
            "\"a\\nb 1.2.3.4 x\""
        );
        assert_eq!(field_text(&Val::Str("")), "\"\"");
    }

    use super::*;

    #[test]
    fn json_of_every_type() {
        let v = Val::Map(vec![
            ("s", Val::Str("a\"b\\c\n\u{1}é")),
            ("u", Val::Uint(u128::MAX)),
            ("i", Val::Int(-5)),
            ("d", Val::Double(42.123456)),
            ("big", Val::Double(1e300)),
            ("one", Val::Double(1.0)),
            ("f", Val::Float(1.1)),
            ("nan", Val::Double(f64::NAN)),
            ("inf", Val::Float(f32::INFINITY)),
            ("b", Val::Bytes(&[0, 42, 255])),
            ("t", Val::Bool(true)),
            ("a", Val::Array(vec![Val::Uint(1), Val::Map(vec![])])),
        ]);
        assert_eq!(
            json(&v),
            r#"{"s":"a\"b\\c\n\u0001é","u":340282366920938463463374607431768211455,"i":-5,"d":42.123456,"big":1e300,"one":1.0,"f":1.1,"nan":null,"inf":null,"b":"002aff","t":true,"a":[1,{}]}"#
        );
    }

    #[test]
    fn paths_select_fields() {
        let rec = Val::Map(vec![
            ("country", Val::Map(vec![("iso_code", Val::Str("GB"))])),
            (
                "subdivisions",
                Val::Array(vec![
                    Val::Map(vec![("iso_code", Val::Str("ENG"))]),
                    Val::Map(vec![("iso_code", Val::Str("WSM"))]),
                ]),
            ),
            ("asn", Val::Uint(13335)),
            ("asn", Val::Uint(64512)),
            ("0", Val::Bool(false)),
        ]);
        let get = |p: &str| FieldPath::parse(p).unwrap().select(&rec).map(field_text);
        assert_eq!(get("country.iso_code").as_deref(), Some("GB"));
        assert_eq!(get("subdivisions.1.iso_code").as_deref(), Some("WSM"));
        assert_eq!(get("subdivisions.01.iso_code"), None);
        assert_eq!(get("subdivisions.2.iso_code"), None);
        assert_eq!(get("asn").as_deref(), Some("64512"));
        assert_eq!(get("0").as_deref(), Some("false"));
        assert_eq!(get("country").as_deref(), Some(r#"{"iso_code":"GB"}"#));
        assert_eq!(get("country.iso_code.x"), None);
        assert_eq!(get("city"), None);
        assert!(FieldPath::parse("a..b").is_err());
        assert!(FieldPath::parse("").is_err());
        assert!(FieldPath::parse(".a").is_err());
    }
}
