//! Helpers shared by the integration tests: scratch files in a unique
//! directory under the system temp dir, removed when the guard drops.

#![allow(dead_code)]

use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Scratch {
    pub dir: PathBuf,
}

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "ipfib-io-{tag}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch { dir }
    }

    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    pub fn write_gz(&self, name: &str, text: &[u8]) -> PathBuf {
        self.write(name, &gzip(text))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// The message of the error a read of `path` fails with.
pub fn read_error(path: &Path, opts: &ipfib_io::LoadOptions) -> (ipfib_io::ReadError, String) {
    let err = ipfib_io::read_routes(path, opts).expect_err("the read should fail");
    let msg = err.to_string();
    (err, msg)
}

/// The routes of a load as `(prefix, value, line)`, for comparing with a
/// literal.
pub fn triples(loaded: &ipfib_io::LoadedRoutes) -> Vec<(ipfib_io::AnyPrefix, &str, u64)> {
    loaded
        .routes
        .iter()
        .map(|r| (r.prefix, r.value.as_str(), r.line))
        .collect()
}

pub mod mrt;
pub mod ranges;

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

/// FNV-1a 64 of `text` (the digest of tests/expected/mrtparse_view.py).
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The order-independent digest of a table (the later duplicate wins).
pub fn digest(routes: &[ipfib_io::Route]) -> u64 {
    let mut last = std::collections::HashMap::new();
    for r in routes {
        last.insert(r.prefix, r.value.as_str());
    }
    last.iter()
        .map(|(p, v)| fnv1a(&format!("{p} {v}")))
        .fold(0u64, u64::wrapping_add)
}

pub fn bzip2(bytes: &[u8]) -> Vec<u8> {
    let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

pub fn zstd(bytes: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
}

/// A 20,000-line text table (value i on line i + 1), long enough that damage
/// in the middle of its compressed form leaves whole lines before it.
pub fn big_table() -> String {
    (0..20_000u32)
        .map(|i| {
            format!(
                "{}.{}.{}.0/24 {}\n",
                1 + i / 65536,
                (i / 256) % 256,
                i % 256,
                i
            )
        })
        .collect()
}
