//! Helpers shared by the integration tests: the shared recordings and how
//! to cut them into messages, and a deterministic random generator.

#![allow(dead_code)]

pub mod rng;

use std::io::Read;
use std::path::{Path, PathBuf};

pub const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data");

/// The path of a shared data file, or `None` (after saying so) when the
/// shared data is absent; in CI (`CI=true`) its absence is a failure.
pub fn data_file(name: &str) -> Option<PathBuf> {
    data_file_in(Path::new(DATA), name)
}

pub fn data_file_in(dir: &Path, name: &str) -> Option<PathBuf> {
    if !dir.is_dir() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!(
                "../shared/data not found at {}, and CI=true requires it",
                dir.display()
            );
        }
        eprintln!(
            "SKIPPED: ../shared/data not found (looked in {})",
            dir.display()
        );
        return None;
    }
    Some(dir.join(name))
}

/// A recorded BMP stream (`bmp/NAME`), decompressed; `None` when the
/// shared data is absent (see [`data_file`]).
pub fn recording(name: &str) -> Option<Vec<u8>> {
    let path = data_file(&format!("bmp/{name}"))?;
    let mut buf = Vec::new();
    ipfib_io::open_maybe_compressed(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .read_to_end(&mut buf)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some(buf)
}

/// The messages of a stream as `frame` delimits them; panics on a framing
/// error or trailing bytes (the recordings are whole).
pub fn messages(buf: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(n) = ipfib_rib::bmp::frame(&buf[at..], ipfib_rib::bmp::DEFAULT_MAX_MESSAGE)
        .unwrap_or_else(|e| panic!("framing at byte {at}: {e}"))
    {
        out.push(&buf[at..at + n]);
        at += n;
    }
    assert_eq!(at, buf.len(), "a partial message at the end");
    out
}
