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
