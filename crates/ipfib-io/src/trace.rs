//! Address traces: the addresses a benchmark looks up, read from a file so
//! that ipfib and every peer answer exactly the same addresses
//! (`bench/peers/make_inputs.py` writes them).
//!
//! Two forms, told apart by the first bytes:
//! - binary: the 16-byte header `IPFIBTR1`, the family (one byte, 4 or 6),
//!   seven zero bytes, then the addresses in network byte order (4 or 16
//!   bytes each); one family per file;
//! - text: one address per line, IPv4 and IPv6 mixed; `#` comments and
//!   blank lines are skipped; IPv4-mapped IPv6 addresses count as IPv4 (the
//!   lookup rule, see `ipfib::prefix::AnyAddr`).
//!
//! Either may be gzip-compressed. A text line longer than
//! [`MAX_LINE_BYTES`](crate::MAX_LINE_BYTES) is an error naming its line, so
//! a file without newlines takes bounded memory.

use crate::input::{next_line, open_maybe_compressed, LineTooLong, MAX_LINE_BYTES};
use ipfib::prefix::AnyAddr;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// Magic of the binary form.
pub const TRACE_MAGIC: &[u8; 8] = b"IPFIBTR1";

/// The addresses of a trace, per family, in file order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Trace {
    pub v4: Vec<u32>,
    pub v6: Vec<u128>,
}

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be opened (missing, unreadable, a compression we
    /// cannot decode).
    #[error(transparent)]
    Open(#[from] crate::error::ReadError),
    /// The file could not be decompressed or read.
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The binary header names no family we know.
    #[error("{}: trace header names family {family} (expected 4 or 6)", .path.display())]
    Family { path: PathBuf, family: u8 },
    /// The binary body is not a whole number of addresses.
    #[error("{}: trace body of {bytes} bytes is not a whole number of {width}-byte addresses", .path.display())]
    Truncated {
        path: PathBuf,
        bytes: usize,
        width: usize,
    },
    /// A text line is not an address (or not UTF-8; `text` shows it
    /// lossily).
    #[error("{}:{line}: not an address: {text:?}", .path.display())]
    Address {
        path: PathBuf,
        line: u64,
        text: String,
    },
    /// A text line is longer than [`MAX_LINE_BYTES`]; `line` is 1-based.
    #[error("{}:{line}: line longer than {limit} bytes", .path.display())]
    LineTooLong {
        path: PathBuf,
        line: u64,
        limit: u64,
    },
}

/// Read a trace file (binary or text, see the module documentation).
pub fn read_trace(path: &Path) -> Result<Trace, TraceError> {
    let io = |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut input = open_maybe_compressed(path)?;
    if input.fill_buf().map_err(io)?.starts_with(TRACE_MAGIC) {
        let mut bytes = Vec::new();
        input.read_to_end(&mut bytes).map_err(io)?;
        return binary(path, &bytes);
    }
    text(path, input)
}

fn binary(path: &Path, bytes: &[u8]) -> Result<Trace, TraceError> {
    let family = bytes.get(8).copied().unwrap_or(0);
    let width = match family {
        4 => 4,
        6 => 16,
        _ => {
            return Err(TraceError::Family {
                path: path.to_path_buf(),
                family,
            })
        }
    };
    let body = bytes.get(16..).unwrap_or_default();
    if body.len() % width != 0 {
        return Err(TraceError::Truncated {
            path: path.to_path_buf(),
            bytes: body.len(),
            width,
        });
    }
    let mut t = Trace::default();
    if family == 4 {
        t.v4 = body
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes(array(c)))
            .collect();
    } else {
        t.v6 = body
            .chunks_exact(16)
            .map(|c| u128::from_be_bytes(array(c)))
            .collect();
    }
    Ok(t)
}

/// The `N` bytes of an exact chunk as an array.
fn array<const N: usize>(chunk: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(chunk);
    a
}

fn text(path: &Path, mut input: Box<dyn BufRead + Send>) -> Result<Trace, TraceError> {
    let mut t = Trace::default();
    let mut buf = Vec::with_capacity(64);
    let mut line = 0u64;
    loop {
        match next_line(&mut input, &mut buf) {
            Ok(true) => line += 1,
            Ok(false) => break,
            Err(e) if e.get_ref().is_some_and(|i| i.is::<LineTooLong>()) => {
                return Err(TraceError::LineTooLong {
                    path: path.to_path_buf(),
                    line: line + 1,
                    limit: MAX_LINE_BYTES,
                })
            }
            Err(source) => {
                return Err(TraceError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
        let whole = String::from_utf8_lossy(&buf);
        let text = whole.split('#').next().unwrap_or_default().trim();
        if text.is_empty() {
            continue;
        }
        match AnyAddr::parse(text) {
            Ok(AnyAddr::V4(a)) => t.v4.push(a),
            Ok(AnyAddr::V6(a)) => t.v6.push(a),
            Err(_) => {
                return Err(TraceError::Address {
                    path: path.to_path_buf(),
                    line,
                    text: text.chars().take(80).collect(),
                })
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ipfib-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn header(family: u8) -> Vec<u8> {
        let mut h = TRACE_MAGIC.to_vec();
        h.push(family);
        h.extend([0u8; 7]);
        h
    }

    #[test]
    fn binary_both_families() {
        let mut v4 = header(4);
        v4.extend([10, 0, 0, 1, 255, 255, 255, 255]);
        let t = read_trace(&write("v4.trace", &v4)).unwrap();
        assert_eq!(t.v4, vec![0x0a00_0001, u32::MAX]);
        assert!(t.v6.is_empty());
        let mut v6 = header(6);
        v6.extend((0x2001_0db8u128 << 96).to_be_bytes());
        let t = read_trace(&write("v6.trace", &v6)).unwrap();
        assert_eq!(t.v6, vec![0x2001_0db8u128 << 96]);
    }

    #[test]
    fn binary_errors_name_the_problem() {
        let mut bad = header(5);
        bad.extend([1, 2, 3, 4]);
        let e = read_trace(&write("f5.trace", &bad)).unwrap_err();
        assert!(matches!(e, TraceError::Family { family: 5, .. }), "{e}");
        let mut cut = header(4);
        cut.extend([1, 2, 3]);
        let e = read_trace(&write("cut.trace", &cut)).unwrap_err();
        assert!(e.to_string().contains("3 bytes"), "{e}");
    }

    #[test]
    fn text_mixed_with_comments_and_mapped_addresses() {
        let p = write(
            "t.txt",
            b"# addresses\n10.0.0.1\n\n2001:db8::1  # doc\n::ffff:192.0.2.1\n",
        );
        let t = read_trace(&p).unwrap();
        assert_eq!(t.v4, vec![0x0a00_0001, 0xc000_0201]);
        assert_eq!(t.v6, vec![0x2001_0db8u128 << 96 | 1]);
        let p = write("bad.txt", b"10.0.0.1\nnot-an-address\n");
        let e = read_trace(&p).unwrap_err();
        assert!(
            e.to_string()
                .ends_with(":2: not an address: \"not-an-address\""),
            "{e}"
        );
    }

    #[test]
    fn text_line_longer_than_the_bound_is_an_error_naming_its_line() {
        let limit = usize::try_from(crate::MAX_LINE_BYTES).unwrap();
        let mut bytes = b"10.0.0.1\n".to_vec();
        bytes.resize(bytes.len() + limit + 1, b'a');
        let p = write("long.txt", &bytes);
        let e = read_trace(&p).unwrap_err();
        assert!(
            e.to_string()
                .ends_with(&format!(":2: line longer than {limit} bytes")),
            "{e}"
        );
        // A line of exactly the bound (newline included) is still read.
        let mut bytes = b"10.0.0.1".to_vec();
        bytes.resize(limit - 1, b' ');
        bytes.push(b'\n');
        let t = read_trace(&write("edge.txt", &bytes)).unwrap();
        assert_eq!(t.v4, vec![0x0a00_0001]);
    }
}
