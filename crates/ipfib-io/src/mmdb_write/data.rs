//! The data section encoder (MaxMind DB spec, "Output Data Section").
//!
//! Every field is a control byte (type in the top three bits, 0 meaning
//! "extended": the type minus 7 follows in the next byte), then the size
//! (five bits, or 29/30/31 followed by one to three bytes), then the
//! payload. Deduplication: a value whose encoding was already written
//! (a whole record, a map key, a string, a map or an array inside a
//! record) is not written again where a pointer to the first copy is
//! shorter than the copy. Pointers only ever point at a value written
//! inline, never at another pointer (which the spec forbids).

use super::value::Value;
use crate::mmdb::kind::{
    ARRAY, BOOLEAN, DOUBLE, INT32, MAP, POINTER, STRING, UINT128, UINT16, UINT32, UINT64,
};
use std::collections::HashMap;

/// Largest payload size (and map or array entry count) a control byte can
/// say: 65,821 + 2^24 - 1.
pub const MAX_SIZE: usize = 65_821 + (1 << 24) - 1;

/// A value the encoding cannot hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// A string longer, or a map or array with more entries, than a
    /// control byte can say.
    TooLong(usize),
    /// The data section passed the 4 GiB that pointers and tree records
    /// can reach.
    SectionFull,
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::TooLong(n) => write!(
                f,
                "a string or container of size {n} (the MaxMind DB format allows {MAX_SIZE})"
            ),
            EncodeError::SectionFull => {
                write!(f, "the data section would pass 4 GiB (the format's limit)")
            }
        }
    }
}

/// Append a control byte (and extended type byte, and size bytes).
pub fn control(out: &mut Vec<u8>, type_num: u8, size: usize) -> Result<(), EncodeError> {
    let (code, extra): (u8, &[u8]) = match size {
        0..=28 => (size as u8, &[]),
        29..=284 => (29, &[(size - 29) as u8]),
        285..=65_820 => (30, &(((size - 285) as u16).to_be_bytes())),
        65_821..=MAX_SIZE => (31, {
            let b = ((size - 65_821) as u32).to_be_bytes();
            // Three bytes: the value is below 2^24 by the range.
            &[b[1], b[2], b[3]][..]
        }),
        _ => return Err(EncodeError::TooLong(size)),
    };
    if type_num <= 7 {
        out.push(type_num << 5 | code);
    } else {
        out.push(code);
        out.push(type_num - 7);
    }
    out.extend_from_slice(extra);
    Ok(())
}

/// The encoding of a pointer to `offset`: the smallest of the four forms.
pub fn pointer(offset: u32) -> Vec<u8> {
    let o = offset as u64;
    let ctrl = |size: u64, high: u64| (POINTER << 5) | (size << 3) as u8 | (high & 7) as u8;
    if o < 2048 {
        vec![ctrl(0, o >> 8), o as u8]
    } else if o < 2048 + (1 << 19) {
        let v = o - 2048;
        vec![ctrl(1, v >> 16), (v >> 8) as u8, v as u8]
    } else if o < 526_336 + (1 << 27) {
        let v = o - 526_336;
        vec![ctrl(2, v >> 24), (v >> 16) as u8, (v >> 8) as u8, v as u8]
    } else {
        let mut p = vec![ctrl(3, 0)];
        p.extend_from_slice(&offset.to_be_bytes());
        p
    }
}

/// Bytes of a pointer to `offset`.
fn pointer_len(offset: u32) -> usize {
    match offset {
        0..2048 => 2,
        2048..526_336 => 3,
        526_336..134_744_064 => 4,
        _ => 5,
    }
}

/// An unsigned integer's payload: big-endian without leading zero bytes
/// (zero is the empty payload).
fn uint_bytes(v: u128, max: usize) -> Vec<u8> {
    let b = v.to_be_bytes();
    let skip = (v.leading_zeros() / 8) as usize;
    let payload = b.get(skip..).unwrap_or_default();
    debug_assert!(payload.len() <= max);
    payload.to_vec()
}

/// The encoding of `v` with every part inline (no pointers): the key
/// under which copies are found.
pub fn plain(v: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match v {
        Value::Map(pairs) => {
            control(out, MAP, pairs.len())?;
            for (k, v) in pairs {
                plain_str(k, out)?;
                plain(v, out)?;
            }
        }
        Value::Array(items) => {
            control(out, ARRAY, items.len())?;
            for v in items {
                plain(v, out)?;
            }
        }
        Value::Str(s) => plain_str(s, out)?,
        Value::Double(d) => {
            control(out, DOUBLE, 8)?;
            out.extend_from_slice(&d.to_be_bytes());
        }
        Value::Uint16(n) => uint(out, UINT16, *n as u128, 2)?,
        Value::Uint32(n) => uint(out, UINT32, *n as u128, 4)?,
        Value::Uint64(n) => uint(out, UINT64, *n as u128, 8)?,
        Value::Uint128(n) => uint(out, UINT128, *n, 16)?,
        Value::Int32(i) => {
            // Shorter than four bytes is always positive (spec): negative
            // numbers take all four, two's complement.
            let p = if *i < 0 {
                i.to_be_bytes().to_vec()
            } else {
                uint_bytes(*i as u128, 4)
            };
            control(out, INT32, p.len())?;
            out.extend_from_slice(&p);
        }
        Value::Bool(b) => control(out, BOOLEAN, *b as usize)?,
    }
    Ok(())
}

fn plain_str(s: &str, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    control(out, STRING, s.len())?;
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn uint(out: &mut Vec<u8>, t: u8, v: u128, max: usize) -> Result<(), EncodeError> {
    let p = uint_bytes(v, max);
    control(out, t, p.len())?;
    out.extend_from_slice(&p);
    Ok(())
}

/// A data section being written, with what it holds for deduplication.
#[derive(Default)]
pub struct DataSection {
    pub bytes: Vec<u8>,
    /// Plain encoding -> offset of the first copy written inline.
    seen: HashMap<Vec<u8>, u32>,
}

impl DataSection {
    /// Write `v` as a record (inline at the returned offset, which a tree
    /// record can point at), or find the copy already written.
    pub fn record(&mut self, v: &Value) -> Result<u32, EncodeError> {
        let mut key = Vec::new();
        plain(v, &mut key)?;
        if let Some(&o) = self.seen.get(&key) {
            return Ok(o);
        }
        let start = self.offset()?;
        self.inline(v)?;
        self.seen.insert(key, start);
        self.offset()?;
        Ok(start)
    }

    fn offset(&self) -> Result<u32, EncodeError> {
        u32::try_from(self.bytes.len()).map_err(|_| EncodeError::SectionFull)
    }

    /// Write `v` inside a container: a pointer to an earlier copy when
    /// that is shorter, else inline (and remembered).
    fn part(&mut self, v: &Value) -> Result<(), EncodeError> {
        let mut key = Vec::new();
        plain(v, &mut key)?;
        if let Some(&o) = self.seen.get(&key) {
            if pointer_len(o) < key.len() {
                self.bytes.extend_from_slice(&pointer(o));
                return Ok(());
            }
        }
        let start = self.offset()?;
        if matches!(v, Value::Map(_) | Value::Array(_)) {
            self.inline(v)?;
        } else {
            self.bytes.extend_from_slice(&key);
        }
        // Worth finding again only if a pointer could ever be shorter.
        if key.len() > 2 {
            self.seen.entry(key).or_insert(start);
        }
        Ok(())
    }

    fn inline(&mut self, v: &Value) -> Result<(), EncodeError> {
        match v {
            Value::Map(pairs) => {
                control(&mut self.bytes, MAP, pairs.len())?;
                for (k, v) in pairs {
                    self.part_str(k)?;
                    self.part(v)?;
                }
            }
            Value::Array(items) => {
                control(&mut self.bytes, ARRAY, items.len())?;
                for v in items {
                    self.part(v)?;
                }
            }
            leaf => plain(leaf, &mut self.bytes)?,
        }
        Ok(())
    }

    fn part_str(&mut self, k: &str) -> Result<(), EncodeError> {
        // Keys are strings; a clone is cheaper than a second code path.
        self.part(&Value::Str(k.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctrl(t: u8, size: usize) -> Vec<u8> {
        let mut v = Vec::new();
        control(&mut v, t, size).unwrap();
        v
    }

    /// The spec's worked examples ("Payload Size", the type table).
    #[test]
    fn control_bytes_of_the_spec() {
        assert_eq!(ctrl(STRING, 2), [0b0100_0010]);
        assert_eq!(ctrl(STRING, 28), [0b0101_1100]);
        assert_eq!(ctrl(UINT32, 1), [0b1100_0001]);
        assert_eq!(ctrl(UINT128, 3), [0b0000_0011, 0b0000_0011]);
        assert_eq!(ctrl(ARRAY, 0), [0, 4]);
        assert_eq!(ctrl(STRING, 80), [0b0101_1101, 0b0011_0011]);
        assert_eq!(
            ctrl(STRING, 13_392),
            [0b0101_1110, 0b0011_0011, 0b0011_0011]
        );
        assert_eq!(
            ctrl(STRING, 3_421_264),
            [0b0101_1111, 0b0011_0011, 0b0011_0011, 0b0011_0011]
        );
        // The edges of each size form.
        assert_eq!(ctrl(MAP, 29), [0b1111_1101, 0]);
        assert_eq!(ctrl(MAP, 284), [0b1111_1101, 255]);
        assert_eq!(ctrl(MAP, 285), [0b1111_1110, 0, 0]);
        assert_eq!(ctrl(MAP, 65_820), [0b1111_1110, 255, 255]);
        assert_eq!(ctrl(MAP, 65_821), [0b1111_1111, 0, 0, 0]);
        assert_eq!(ctrl(ARRAY, MAX_SIZE), [31, 4, 255, 255, 255]);
        assert_eq!(
            control(&mut Vec::new(), STRING, MAX_SIZE + 1),
            Err(EncodeError::TooLong(MAX_SIZE + 1))
        );
    }

    /// Decode a pointer as the spec's "Pointers" section defines it.
    fn spec_pointer(p: &[u8]) -> u64 {
        assert_eq!(p[0] >> 5, POINTER);
        let size = (p[0] >> 3) & 3;
        let vvv = (p[0] & 7) as u64;
        let rest = p[1..].iter().fold(0u64, |acc, &b| acc << 8 | b as u64);
        assert_eq!(p.len(), size as usize + 2);
        match size {
            0 => vvv << 8 | rest,
            1 => (vvv << 16 | rest) + 2048,
            2 => (vvv << 24 | rest) + 526_336,
            _ => rest,
        }
    }

    #[test]
    fn pointers_at_every_form_edge() {
        for o in [
            0u32,
            1,
            2047,
            2048,
            2049,
            526_335,
            526_336,
            134_744_063,
            134_744_064,
            u32::MAX,
        ] {
            let p = pointer(o);
            assert_eq!(p.len(), pointer_len(o), "{o}");
            assert_eq!(spec_pointer(&p), o as u64, "{o}");
        }
    }

    fn enc(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        plain(v, &mut out).unwrap();
        out
    }

    #[test]
    fn integer_widths() {
        assert_eq!(enc(&Value::Uint32(0)), [0xc0]);
        assert_eq!(enc(&Value::Uint32(255)), [0xc1, 255]);
        assert_eq!(enc(&Value::Uint32(256)), [0xc2, 1, 0]);
        assert_eq!(enc(&Value::Uint32(u32::MAX)), [0xc4, 255, 255, 255, 255]);
        assert_eq!(enc(&Value::Uint16(500)), [0xa2, 1, 244]);
        assert_eq!(enc(&Value::Uint64(1 << 32)), [5, 2, 1, 0, 0, 0, 0]);
        assert_eq!(enc(&Value::Uint64(0)), [0, 2]);
        let mut big = vec![16, 3];
        big.extend_from_slice(&[255; 16]);
        assert_eq!(enc(&Value::Uint128(u128::MAX)), big);
        assert_eq!(enc(&Value::Int32(-1)), [4, 1, 255, 255, 255, 255]);
        assert_eq!(enc(&Value::Int32(i32::MIN)), [4, 1, 128, 0, 0, 0]);
        assert_eq!(enc(&Value::Int32(5)), [1, 1, 5]);
        assert_eq!(enc(&Value::Bool(true)), [1, 7]);
        assert_eq!(enc(&Value::Bool(false)), [0, 7]);
        let mut d = vec![0x68];
        d.extend_from_slice(&42.123456f64.to_be_bytes());
        assert_eq!(enc(&Value::Double(42.123456)), d);
    }

    #[test]
    fn strings_and_maps() {
        let s = "x".repeat(300);
        let e = enc(&Value::Str(s.clone()));
        assert_eq!(&e[..3], &[0b0101_1110, 0, 15]);
        assert_eq!(&e[3..], s.as_bytes());
        let m = Value::Map(vec![("en".into(), Value::Str("Hi".into()))]);
        assert_eq!(enc(&m), [0xe1, 0x42, b'e', b'n', 0x42, b'H', b'i']);
    }

    #[test]
    fn duplicates_become_pointers() {
        let mut d = DataSection::default();
        let rec = |v: u32| {
            Value::Map(vec![(
                "autonomous_system_organization".into(),
                Value::Uint32(v),
            )])
        };
        let a = d.record(&rec(1)).unwrap();
        let len_a = d.bytes.len();
        assert_eq!(a, 0);
        // The same record again: found, nothing written.
        assert_eq!(d.record(&rec(1)).unwrap(), 0);
        assert_eq!(d.bytes.len(), len_a);
        // Another record with the same key: the key is a 2-byte pointer
        // to offset 1 (after the first map's control byte).
        let b = d.record(&rec(2)).unwrap();
        assert_eq!(b as usize, len_a);
        assert_eq!(&d.bytes[len_a..], &[0xe1, 0x20, 1, 0xc1, 2]);
        // Small values are inline even when seen before.
        let c = d
            .record(&Value::Array(vec![Value::Uint32(2), Value::Uint32(2)]))
            .unwrap();
        assert_eq!(&d.bytes[c as usize..], [2, 4, 0xc1, 2, 0xc1, 2]);
    }
}
