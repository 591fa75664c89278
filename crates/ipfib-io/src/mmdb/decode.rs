//! The MaxMind DB data section decoder (MaxMind-DB-spec.md, "Output Data
//! Section"): one data entry into a borrowed value tree, under the resource
//! limits of the spec's "Reader Resource Limits" section.
//!
//! Limits, per decoded entry (one record, or the metadata map):
//! - depth: entering a map or an array, or following a pointer, adds one;
//!   beyond [`MAX_DEPTH`] the entry is refused (stops pointer cycles and
//!   absurd nesting);
//! - values: every logical occurrence counts once (the root, each container,
//!   each map key and each value; a pointer is charged as the value it
//!   resolves to, at each place it occurs); beyond [`MAX_VALUES`] the entry
//!   is refused (stops pointer fan-out, which is exponential in depth);
//! - payload: string and bytes lengths (map keys included), per occurrence;
//!   beyond [`MAX_PAYLOAD`] the entry is refused (stops one large value
//!   pointed at many times).
//!
//! A container's declared size is checked against what is left of the value
//! budget and of the section before anything is allocated. These are the
//! limits of the official readers (a 2 MiB payload, 65,536 values, depth
//! 512), so an entry they refuse we refuse too.

use crate::mmdb::kind::{
    ARRAY, BOOLEAN, BYTES, DOUBLE, FLOAT, INT32, MAP, POINTER, STRING, UINT128, UINT16, UINT32,
    UINT64,
};
use std::fmt;

/// Deepest nesting of containers and pointers in one entry.
pub const MAX_DEPTH: u32 = 512;
/// Most values decoded for one entry.
pub const MAX_VALUES: u32 = 65_536;
/// Most string and bytes payload materialised for one entry.
pub const MAX_PAYLOAD: u64 = 2 * 1024 * 1024;

/// A decoded value, borrowing strings and bytes from the file.
#[derive(Debug, Clone, PartialEq)]
pub enum Val<'a> {
    /// Pairs in file order (a later duplicate key wins where it matters).
    Map(Vec<(&'a str, Val<'a>)>),
    Array(Vec<Val<'a>>),
    Str(&'a str),
    Bytes(&'a [u8]),
    /// uint16, uint32, uint64 and uint128.
    Uint(u128),
    /// int32.
    Int(i32),
    Double(f64),
    Float(f32),
    Bool(bool),
}

/// Why an entry could not be decoded: `offset` is where in the section
/// (data or metadata) the offending field starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub offset: usize,
    pub reason: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (section byte {})", self.reason, self.offset)
    }
}

fn err<T>(offset: usize, reason: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError {
        offset,
        reason: reason.into(),
    })
}

/// A field's control information: type, size (pairs, items, bytes or the
/// boolean's value), and where its payload starts.
struct Field {
    kind: u8,
    size: usize,
    payload: usize,
}

/// A decoder over one section (the data section, or the metadata): pointers
/// are relative to its start.
pub struct Decoder<'a> {
    section: &'a [u8],
    values: u32,
    payload: u64,
}

impl<'a> Decoder<'a> {
    pub fn new(section: &'a [u8]) -> Self {
        Decoder {
            section,
            values: 0,
            payload: 0,
        }
    }

    /// Decode the entry at `offset` with a fresh budget.
    pub fn decode_entry(&mut self, offset: usize) -> Result<Val<'a>, DecodeError> {
        self.values = 0;
        self.payload = 0;
        self.decode(offset, 0).map(|(v, _)| v)
    }

    fn byte(&self, at: usize, field: usize) -> Result<u8, DecodeError> {
        match self.section.get(at) {
            Some(&b) => Ok(b),
            None => err(field, "field runs past the end of the section"),
        }
    }

    fn bytes(&self, at: usize, n: usize, field: usize) -> Result<&'a [u8], DecodeError> {
        let section: &'a [u8] = self.section;
        match at.checked_add(n).and_then(|end| section.get(at..end)) {
            Some(b) => Ok(b),
            None => err(
                field,
                format!("field of {n} bytes runs past the end of the section"),
            ),
        }
    }

    /// The big-endian unsigned number in `n` (at most 16) bytes at `at`.
    fn uint(&self, at: usize, n: usize, field: usize) -> Result<u128, DecodeError> {
        Ok(self
            .bytes(at, n, field)?
            .iter()
            .fold(0u128, |acc, &b| (acc << 8) | u128::from(b)))
    }

    /// The control byte(s) of the field at `at`; for a pointer, `size` is
    /// the pointer's target and `payload` the end of the pointer.
    fn field(&self, at: usize) -> Result<Field, DecodeError> {
        let ctrl = self.byte(at, at)?;
        let mut next = at + 1;
        let mut kind = ctrl >> 5;
        if kind == POINTER {
            // 001SSVVV: SS more bytes; VVV the top bits (not for SS = 3).
            let ss = usize::from((ctrl >> 3) & 3);
            let vvv = usize::from(ctrl & 7);
            let tail = self.uint(next, ss + 1, at)? as usize;
            let target = match ss {
                0 => (vvv << 8) | tail,
                1 => ((vvv << 16) | tail) + 2048,
                2 => ((vvv << 24) | tail) + 526_336,
                _ => tail,
            };
            return Ok(Field {
                kind,
                size: target,
                payload: next + ss + 1,
            });
        }
        if kind == 0 {
            let ext = self.byte(next, at)?;
            next += 1;
            // Extended types are 8 and up (type 7 + the byte).
            if ext == 0 || ext > 8 {
                return err(at, format!("unknown extended type {}", u16::from(ext) + 7));
            }
            kind = ext + 7;
        }
        let size = match ctrl & 0x1f {
            s @ 0..=28 => usize::from(s),
            29 => 29 + self.uint(next, 1, at)? as usize,
            30 => 285 + self.uint(next, 2, at)? as usize,
            _ => 65_821 + self.uint(next, 3, at)? as usize,
        };
        let extra = match ctrl & 0x1f {
            29 => 1,
            30 => 2,
            31 => 3,
            _ => 0,
        };
        Ok(Field {
            kind,
            size,
            payload: next + extra,
        })
    }

    fn charge_value(&mut self, at: usize) -> Result<(), DecodeError> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return err(
                at,
                format!("entry decodes to more than {MAX_VALUES} values (resource limit)"),
            );
        }
        Ok(())
    }

    fn charge_payload(&mut self, at: usize, n: usize) -> Result<(), DecodeError> {
        self.payload += n as u64;
        if self.payload > MAX_PAYLOAD {
            return err(
                at,
                format!("entry holds more than {MAX_PAYLOAD} bytes of strings and bytes (resource limit)"),
            );
        }
        Ok(())
    }

    /// Decode the field at `at`; returns the value and where the next field
    /// starts (after a pointer: after the pointer itself).
    fn decode(&mut self, at: usize, depth: u32) -> Result<(Val<'a>, usize), DecodeError> {
        let f = self.field(at)?;
        if f.kind == POINTER {
            let depth = deeper(depth, at)?;
            let target = self.field(f.size).map_err(|e| DecodeError {
                offset: at,
                reason: format!("pointer to offset {} of the section: {}", f.size, e.reason),
            })?;
            if target.kind == POINTER {
                return err(at, "pointer to a pointer");
            }
            let (v, _) = self.decode(f.size, depth)?;
            return Ok((v, f.payload));
        }
        self.charge_value(at)?;
        let p = f.payload;
        let n = f.size;
        let scalar = |v| Ok((v, p + n));
        match f.kind {
            STRING => {
                self.charge_payload(at, n)?;
                let b = self.bytes(p, n, at)?;
                match std::str::from_utf8(b) {
                    Ok(s) => scalar(Val::Str(s)),
                    Err(e) => err(at, format!("string is not UTF-8: {e}")),
                }
            }
            BYTES => {
                self.charge_payload(at, n)?;
                scalar(Val::Bytes(self.bytes(p, n, at)?))
            }
            DOUBLE => {
                if n != 8 {
                    return err(at, format!("double of {n} bytes (must be 8)"));
                }
                scalar(Val::Double(f64::from_bits(self.uint(p, 8, at)? as u64)))
            }
            FLOAT => {
                if n != 4 {
                    return err(at, format!("float of {n} bytes (must be 4)"));
                }
                scalar(Val::Float(f32::from_bits(self.uint(p, 4, at)? as u32)))
            }
            UINT16 | UINT32 | UINT64 | UINT128 => {
                let max = match f.kind {
                    UINT16 => 2,
                    UINT32 => 4,
                    UINT64 => 8,
                    _ => 16,
                };
                if n > max {
                    return err(at, format!("{}-byte unsigned integer of {n} bytes", max));
                }
                scalar(Val::Uint(self.uint(p, n, at)?))
            }
            INT32 => {
                if n > 4 {
                    return err(at, format!("int32 of {n} bytes (at most 4)"));
                }
                // Shorter than 4 bytes: positive; 4 bytes: two's complement.
                let u = self.uint(p, n, at)? as u32;
                scalar(Val::Int(u as i32))
            }
            BOOLEAN => match n {
                0 | 1 => Ok((Val::Bool(n == 1), p)),
                _ => err(at, format!("boolean with value {n} (must be 0 or 1)")),
            },
            MAP => {
                let depth = deeper(depth, at)?;
                self.reserve(at, p, n, 2)?;
                let mut pairs = Vec::with_capacity(n);
                let mut next = p;
                for _ in 0..n {
                    let (key, after) = self.decode(next, depth)?;
                    let Val::Str(key) = key else {
                        return err(next, "map key is not a string");
                    };
                    let (value, after) = self.decode(after, depth)?;
                    pairs.push((key, value));
                    next = after;
                }
                Ok((Val::Map(pairs), next))
            }
            ARRAY => {
                let depth = deeper(depth, at)?;
                self.reserve(at, p, n, 1)?;
                let mut items = Vec::with_capacity(n);
                let mut next = p;
                for _ in 0..n {
                    let (v, after) = self.decode(next, depth)?;
                    items.push(v);
                    next = after;
                }
                Ok((Val::Array(items), next))
            }
            12 | 13 => err(at, format!("deprecated type {} (not supported)", f.kind)),
            k => err(at, format!("unknown type {k}")),
        }
    }

    /// Check, before allocating, that `n` children (`per` values each) fit
    /// both the value budget and the section (every field is at least one
    /// byte).
    fn reserve(&self, at: usize, payload: usize, n: usize, per: usize) -> Result<(), DecodeError> {
        let values = n.saturating_mul(per);
        let left = (MAX_VALUES - self.values.min(MAX_VALUES)) as usize;
        if values > left {
            return err(
                at,
                format!("container of {n} entries exceeds the limit of {MAX_VALUES} values per entry (resource limit)"),
            );
        }
        let room = self.section.len().saturating_sub(payload);
        if values > room {
            return err(
                at,
                format!(
                    "container of {n} entries cannot fit in the {room} bytes left in the section"
                ),
            );
        }
        Ok(())
    }
}

fn deeper(depth: u32, at: usize) -> Result<u32, DecodeError> {
    if depth >= MAX_DEPTH {
        return err(
            at,
            format!("nested deeper than {MAX_DEPTH} (containers and pointers; resource limit)"),
        );
    }
    Ok(depth + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(bytes: &[u8]) -> Result<Val<'_>, DecodeError> {
        Decoder::new(bytes).decode_entry(0)
    }

    /// The control bytes of an array of `n` items (extended type 4).
    pub(crate) fn array_header(n: usize) -> Vec<u8> {
        match n {
            0..=28 => vec![n as u8, 0x04],
            29..=284 => vec![29, 0x04, (n - 29) as u8],
            285..=65_820 => {
                let s = (n - 285) as u16;
                vec![30, 0x04, (s >> 8) as u8, s as u8]
            }
            _ => {
                let s = (n - 65_821) as u32;
                vec![31, 0x04, (s >> 16) as u8, (s >> 8) as u8, s as u8]
            }
        }
    }

    /// Examples written from the spec's text, byte by byte.
    #[test]
    fn scalars_from_the_spec() {
        // 010SSSSS: a string of 2 bytes.
        assert_eq!(one(b"\x42hi"), Ok(Val::Str("hi")));
        assert_eq!(one(b"\x40"), Ok(Val::Str("")));
        // Size 29 + next byte: 29 + 51 = 80.
        let mut s = vec![0x5d, 51];
        s.extend(std::iter::repeat_n(b'x', 80));
        assert_eq!(one(&s), Ok(Val::Str(&"x".repeat(80))));
        // Size 30: 285 + 13,107 = 13,392.
        let mut s = vec![0x5e, 0x33, 0x33];
        s.extend(std::iter::repeat_n(b'y', 13_392));
        assert!(matches!(one(&s), Ok(Val::Str(t)) if t.len() == 13_392));
        // uint32 (110), one byte; zero bytes means 0.
        assert_eq!(one(b"\xc1\x2a"), Ok(Val::Uint(42)));
        assert_eq!(one(b"\xc0"), Ok(Val::Uint(0)));
        // uint16 (101), two bytes.
        assert_eq!(one(b"\xa2\x01\x00"), Ok(Val::Uint(256)));
        // Extended: uint128 = 000 then 3 (10 - 7), 3 bytes.
        assert_eq!(one(b"\x03\x03\x01\x00\x00"), Ok(Val::Uint(65_536)));
        let mut big = vec![0x10, 0x03];
        big.extend([0xff; 16]);
        assert_eq!(one(&big), Ok(Val::Uint(u128::MAX)));
        // uint64 = extended 2.
        assert_eq!(
            one(b"\x08\x02\xff\xff\xff\xff\xff\xff\xff\xff"),
            Ok(Val::Uint(u64::MAX.into()))
        );
        // int32 = extended 1: 4 bytes are two's complement, fewer positive.
        assert_eq!(one(b"\x04\x01\xff\xff\xff\xff"), Ok(Val::Int(-1)));
        assert_eq!(one(b"\x03\x01\xff\xff\xff"), Ok(Val::Int(0x00ff_ffff)));
        // double (011), 8 bytes; float = extended 8.
        let mut d = vec![0x68];
        d.extend(42.123456f64.to_be_bytes());
        assert_eq!(one(&d), Ok(Val::Double(42.123456)));
        let mut f = vec![0x04, 0x08];
        f.extend(1.1f32.to_be_bytes());
        assert_eq!(one(&f), Ok(Val::Float(1.1)));
        // boolean = extended 7: the size is the value.
        assert_eq!(one(b"\x01\x07"), Ok(Val::Bool(true)));
        assert_eq!(one(b"\x00\x07"), Ok(Val::Bool(false)));
        // bytes (100).
        assert_eq!(one(b"\x82\x00\x2a"), Ok(Val::Bytes(&[0, 42])));
    }

    #[test]
    fn containers_and_pointers() {
        // map (111) of 1 pair: "en" -> "x".
        assert_eq!(
            one(b"\xe1\x42en\x41x"),
            Ok(Val::Map(vec![("en", Val::Str("x"))]))
        );
        // array = extended 4, 2 items.
        assert_eq!(
            one(b"\x02\x04\xc1\x01\xc1\x02"),
            Ok(Val::Array(vec![Val::Uint(1), Val::Uint(2)]))
        );
        // A pointer (size 0) to byte 6, where "hi" is; the array's second
        // item follows the pointer's own two bytes.
        let data = b"\x02\x04\x20\x06\xc1\x07\x42hi";
        assert_eq!(
            one(data),
            Ok(Val::Array(vec![Val::Str("hi"), Val::Uint(7)]))
        );
        // Pointer sizes 1 and 2 add 2048 and 526,336.
        let mut d = vec![0x28, 0x00, 0x00];
        d.resize(2048, 0);
        d.extend(b"\x41z");
        assert_eq!(one(&d), Ok(Val::Str("z")));
        let mut d = vec![0x30, 0x00, 0x00, 0x00];
        d.resize(526_336, 0);
        d.extend(b"\xc1\x05");
        assert_eq!(one(&d), Ok(Val::Uint(5)));
        // Size 3: the next four bytes, the control bits ignored.
        let mut d = vec![0x3f, 0x00, 0x00, 0x00, 0x06, 0];
        d.extend(b"\xc1\x09");
        assert_eq!(one(&d), Ok(Val::Uint(9)));
    }

    #[test]
    fn malformed_fields_are_errors_with_offsets() {
        for (bytes, what) in [
            (&b"\x45ab"[..], "past the end"),
            (b"\x42\xff\xfe", "not UTF-8"),
            (b"\x67\x00", "double of 7 bytes"),
            (b"\xa3\x00\x00\x00", "unsigned integer of 3 bytes"),
            (b"\x05\x01\x00\x00\x00\x00\x00", "int32 of 5 bytes"),
            (b"\x02\x07", "boolean with value 2"),
            (b"\x00\x05", "deprecated type 12"),
            (b"\x00\x06", "deprecated type 13"),
            (b"\x00\x09", "unknown extended type 16"),
            (b"\x00\x00", "unknown extended type 7"),
            (b"\xe1\xc1\x01\xc1\x01", "map key is not a string"),
            (b"\x20\x02\x20\x00", "pointer to a pointer"),
            (b"\x20\x09", "pointer to offset 9 of the section"),
            (b"\xfd\xff", "cannot fit"),
        ] {
            let e = one(bytes).unwrap_err();
            assert!(e.reason.contains(what), "{bytes:?}: {e}");
        }
        // The offset is the offending field's, inside a container.
        let e = one(b"\x02\x04\xc1\x01\x42\xff\xfe").unwrap_err();
        assert_eq!(e.offset, 4);
    }

    #[test]
    fn limits_bound_cycles_fan_out_and_payload() {
        // A map whose value points back at the map: depth limit.
        let e = one(b"\xe1\x41k\x20\x00").unwrap_err();
        assert!(e.reason.contains("nested deeper than 512"), "{e}");
        // Fan-out: level i is an array of two pointers to level i + 1;
        // 2^20 leaves from a few hundred bytes: value limit.
        let levels = 20;
        let mut d = Vec::new();
        for i in 0..levels {
            let next = (i + 1) * 6;
            d.extend([0x02, 0x04, 0x20, next as u8, 0x20, next as u8]);
        }
        d.extend(b"\xc1\x01");
        let e = one(&d).unwrap_err();
        assert!(e.reason.contains("65536 values"), "{e}");
        // Exactly 65,536 values is accepted (an array and 65,535 uints);
        // one more is not.
        for (n, ok) in [(65_535usize, true), (65_536, false)] {
            let mut d = array_header(n);
            d.extend(std::iter::repeat_n(0xc0, n));
            match one(&d) {
                Ok(Val::Array(v)) => assert!(ok && v.len() == n),
                Err(e) => assert!(!ok && e.reason.contains("65536"), "{e}"),
                other => panic!("{other:?}"),
            }
        }
        // Payload: 40 pointers to one 64 KiB string is 2.5 MiB; 30 is
        // under 2 MiB.
        for (items, ok) in [(40usize, false), (30, true)] {
            let mut d = array_header(items);
            for _ in 0..items {
                d.extend([0x28, 0, 0]); // size-1 pointer to 2048 + 0
            }
            d.resize(2048, 0);
            d.extend([0x5e, 0xfe, 0xe3]); // string of 285 + 0xfee3 = 65,536
            d.extend(std::iter::repeat_n(b'a', 65_536));
            let r = one(&d);
            assert_eq!(r.is_ok(), ok, "{items}: {r:?}");
            if let Err(e) = r {
                assert!(e.reason.contains("2097152 bytes"), "{e}");
            }
        }
    }
}
