//! Route values as MaxMind DB data: the record a value becomes
//! ([`RecordMode`]), and a small strict JSON parser (RFC 8259) for values
//! that are records already (what the MMDB reader hands out by default).
//!
//! Types chosen (decided here, documented in docs/architecture.md):
//! - an unsigned decimal integer written canonically (no sign, no leading
//!   zero) becomes uint32, uint64 or uint128, the smallest that holds it;
//!   any other text stays a UTF-8 string (`007` stays `"007"`, so the
//!   value's text survives a read back);
//! - JSON: objects -> maps (keys in order, duplicates kept), arrays ->
//!   arrays, strings -> strings, non-negative integers -> uint32/64/128 by
//!   size, negative integers down to -2^31 -> int32, numbers with a
//!   fraction or exponent -> double, `true`/`false` -> booleans. `null`, a
//!   negative integer below -2^31, an integer of 2^128 or more and a
//!   number that overflows a double have no MMDB form: an error, never a
//!   silent substitute.

use std::fmt::Write as _;

/// How deeply JSON may nest: the depth past which the spec's readers
/// refuse a data entry ("Maximum Data Structure Depth").
pub const MAX_JSON_DEPTH: usize = 512;

/// A value of the MMDB data section (the types this writer produces).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Map(Vec<(String, Value)>),
    Array(Vec<Value>),
    Str(String),
    Double(f64),
    Uint16(u16),
    Uint32(u32),
    Uint64(u64),
    Uint128(u128),
    Int32(i32),
    Bool(bool),
}

impl Value {
    /// An unsigned integer in the smallest of uint32, uint64, uint128.
    pub fn uint(n: u128) -> Value {
        if let Ok(v) = u32::try_from(n) {
            Value::Uint32(v)
        } else if let Ok(v) = u64::try_from(n) {
            Value::Uint64(v)
        } else {
            Value::Uint128(n)
        }
    }
}

/// How a route's value text becomes the record of its networks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecordMode {
    /// A value that is a JSON object is the record itself (so a table read
    /// from an MMDB writes back the records it was read from); any other
    /// value is written as in `Field`.
    #[default]
    Auto,
    /// Every value is a one-entry map `{FIELD: V}`: V an unsigned integer
    /// when the text is one (canonical decimal), a string otherwise.
    Field,
    /// Every value is JSON (any JSON value: object, array, string, number,
    /// boolean) and is written as the record; a value that is not is an
    /// error.
    Json,
}

impl RecordMode {
    /// The names the command line takes.
    pub const NAMES: &'static str = "auto, field, json";
}

impl std::str::FromStr for RecordMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(RecordMode::Auto),
            "field" => Ok(RecordMode::Field),
            "json" => Ok(RecordMode::Json),
            _ => Err(format!(
                "unknown MMDB record mode {s:?} (expected one of: {})",
                Self::NAMES
            )),
        }
    }
}

/// The record for a route value.
pub fn record_of(text: &str, mode: RecordMode, field: &str) -> Result<Value, String> {
    let as_field = || Value::Map(vec![(field.to_string(), scalar(text))]);
    match mode {
        RecordMode::Field => Ok(as_field()),
        RecordMode::Json => parse_json(text),
        RecordMode::Auto => {
            if text.trim_start().starts_with('{') {
                if let Ok(v @ Value::Map(_)) = parse_json(text) {
                    return Ok(v);
                }
            }
            Ok(as_field())
        }
    }
}

/// A plain value: an unsigned integer when the text is one, written
/// canonically and below 2^128; otherwise the text.
pub fn scalar(text: &str) -> Value {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    match text.parse::<u128>() {
        Ok(n) if canonical => Value::uint(n),
        _ => Value::Str(text.to_string()),
    }
}

/// Parse one JSON value (whitespace around it allowed, nothing else).
pub fn parse_json(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.at != p.s.len() {
        return Err(p.err("text after the JSON value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        format!("invalid JSON at byte {}: {what}", self.at)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &str) -> bool {
        if self.s.get(self.at..self.at + word.len()) == Some(word.as_bytes()) {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        match self.peek() {
            Some(b'{') | Some(b'[') if depth >= MAX_JSON_DEPTH => Err(self.err(&format!(
                "nested deeper than {MAX_JSON_DEPTH} (MMDB readers refuse it)"
            ))),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Value::Str),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ if self.literal("true") => Ok(Value::Bool(true)),
            _ if self.literal("false") => Ok(Value::Bool(false)),
            _ if self.literal("null") => Err(self.err("null has no MaxMind DB type")),
            Some(_) => Err(self.err("expected a value")),
            None => Err(self.err("unexpected end")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        self.at += 1;
        let mut pairs = Vec::new();
        self.ws();
        if self.eat(b'}') {
            return Ok(Value::Map(pairs));
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a string key"));
            }
            let k = self.string()?;
            self.ws();
            if !self.eat(b':') {
                return Err(self.err("expected ':'"));
            }
            self.ws();
            let v = self.value(depth)?;
            pairs.push((k, v));
            self.ws();
            if self.eat(b'}') {
                return Ok(Value::Map(pairs));
            }
            if !self.eat(b',') {
                return Err(self.err("expected ',' or '}'"));
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.at += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat(b']') {
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth)?);
            self.ws();
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            if !self.eat(b',') {
                return Err(self.err("expected ',' or ']'"));
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .s
            .get(self.at..self.at + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.err("expected four hex digits after \\u"))?;
        let v = u32::from_str_radix(digits, 16).map_err(|_| self.err("bad \\u escape"))?;
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            // Copy the run of plain bytes up to the next quote or escape.
            let start = self.at;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.at += 1;
            }
            let run = self.s.get(start..self.at).unwrap_or_default();
            // The input is a &str and runs end at ASCII bytes: valid UTF-8.
            out.push_str(std::str::from_utf8(run).map_err(|_| self.err("not UTF-8"))?);
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let c = self.peek().ok_or_else(|| self.err("unexpected end"))?;
                    self.at += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xd800..0xdc00).contains(&hi) {
                                if !self.literal("\\u") {
                                    return Err(self.err("lone surrogate in \\u escape"));
                                }
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return Err(self.err("lone surrogate in \\u escape"));
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            let ch = char::from_u32(code)
                                .ok_or_else(|| self.err("lone surrogate in \\u escape"))?;
                            out.push(ch);
                        }
                        _ => return Err(self.err("unknown escape")),
                    }
                }
                Some(_) => return Err(self.err("control character in a string")),
                None => return Err(self.err("unterminated string")),
            }
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.at;
        let negative = self.eat(b'-');
        let digits = |p: &mut Self| {
            let s = p.at;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.at += 1;
            }
            p.at - s
        };
        let int_start = self.at;
        let n = digits(self);
        if n == 0 || (n > 1 && self.s.get(int_start) == Some(&b'0')) {
            return Err(self.err("bad number"));
        }
        let mut integer = true;
        if self.eat(b'.') {
            integer = false;
            if digits(self) == 0 {
                return Err(self.err("bad number"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integer = false;
            self.at += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if digits(self) == 0 {
                return Err(self.err("bad number"));
            }
        }
        let text = std::str::from_utf8(self.s.get(start..self.at).unwrap_or_default())
            .map_err(|_| self.err("bad number"))?;
        if !integer {
            return match text.parse::<f64>() {
                Ok(d) if d.is_finite() => Ok(Value::Double(d)),
                _ => Err(format!("number {text} does not fit a double")),
            };
        }
        if negative {
            return match text.parse::<i64>() {
                Ok(0) => Ok(Value::Uint32(0)),
                Ok(i) => i32::try_from(i).map(Value::Int32).map_err(|_| {
                    format!("integer {text} has no MaxMind DB type (int32 is the only signed one)")
                }),
                Err(_) => Err(format!(
                    "integer {text} has no MaxMind DB type (int32 is the only signed one)"
                )),
            };
        }
        text.parse::<u128>()
            .map(Value::uint)
            .map_err(|_| format!("integer {text} does not fit uint128"))
    }
}

/// A short quotation of a value for messages.
pub fn quote(text: &str) -> String {
    let mut s = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == crate::MAX_QUOTED_CHARS {
            s.push_str("...");
            break;
        }
        s.push(c);
    }
    let mut out = String::new();
    let _ = write!(out, "{s:?}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars() {
        assert_eq!(scalar("13335"), Value::Uint32(13335));
        assert_eq!(scalar("0"), Value::Uint32(0));
        assert_eq!(scalar("4294967295"), Value::Uint32(u32::MAX));
        assert_eq!(scalar("4294967296"), Value::Uint64(1 << 32));
        assert_eq!(scalar("18446744073709551616"), Value::Uint128(1 << 64));
        assert_eq!(
            scalar("340282366920938463463374607431768211456"),
            Value::Str("340282366920938463463374607431768211456".into())
        );
        for s in ["007", "+5", "-5", "1_2", "", " 5", "AS13335"] {
            assert_eq!(scalar(s), Value::Str(s.into()), "{s}");
        }
    }

    #[test]
    fn json_values() {
        let v = parse_json(
            r#" {"a":1,"b":[true,false,-5,2.5,1e3,"x\"\u00e9\ud83d\ude00"],"a":{},"n":18446744073709551616} "#,
        )
        .unwrap();
        assert_eq!(
            v,
            Value::Map(vec![
                ("a".into(), Value::Uint32(1)),
                (
                    "b".into(),
                    Value::Array(vec![
                        Value::Bool(true),
                        Value::Bool(false),
                        Value::Int32(-5),
                        Value::Double(2.5),
                        Value::Double(1000.0),
                        Value::Str("x\"é😀".into()),
                    ])
                ),
                ("a".into(), Value::Map(vec![])),
                ("n".into(), Value::Uint128(1 << 64)),
            ])
        );
        assert_eq!(parse_json("-2147483648").unwrap(), Value::Int32(i32::MIN));
        assert_eq!(parse_json("-0").unwrap(), Value::Uint32(0));
    }

    #[test]
    fn json_refusals() {
        for bad in [
            "",
            "null",
            "[null]",
            "{\"a\":1,}",
            "[1,]",
            "01",
            "1.",
            "-",
            "1e",
            "-2147483649",
            "340282366920938463463374607431768211456",
            "1e999",
            "\"\\ud800\"",
            "\"\\udc00x\"",
            "\"a\nb\"",
            "\"abc",
            "{\"a\" 1}",
            "[1] 2",
            "tru",
            "{1:2}",
        ] {
            assert!(parse_json(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(MAX_JSON_DEPTH) + &"]".repeat(MAX_JSON_DEPTH);
        assert!(parse_json(&deep).is_ok());
        let deeper = "[".repeat(MAX_JSON_DEPTH + 1) + &"]".repeat(MAX_JSON_DEPTH + 1);
        assert!(parse_json(&deeper).is_err());
    }

    #[test]
    fn records_by_mode() {
        let f = |t, m| record_of(t, m, "asn");
        let field = |v| Value::Map(vec![("asn".into(), v)]);
        assert_eq!(
            f("13335", RecordMode::Auto),
            Ok(field(Value::Uint32(13335)))
        );
        assert_eq!(
            f("{\"a\":\"b\"}", RecordMode::Auto),
            Ok(Value::Map(vec![("a".into(), Value::Str("b".into()))]))
        );
        // Not an object, or not JSON: a string under the field.
        assert_eq!(
            f("{oops}", RecordMode::Auto),
            Ok(field(Value::Str("{oops}".into())))
        );
        assert_eq!(
            f("[1]", RecordMode::Auto),
            Ok(field(Value::Str("[1]".into())))
        );
        assert_eq!(
            f("{\"a\":1}", RecordMode::Field),
            Ok(field(Value::Str("{\"a\":1}".into())))
        );
        assert_eq!(
            f("[1]", RecordMode::Json),
            Ok(Value::Array(vec![Value::Uint32(1)]))
        );
        assert_eq!(f("\"x\"", RecordMode::Json), Ok(Value::Str("x".into())));
        assert!(f("AS1", RecordMode::Json).is_err());
    }
}
