//! Shared by the CLI test files: run the real `ipfib` binary.

#![allow(dead_code)] // each test file uses a different part

use std::io::Write as _;
use std::process::{Command, Stdio};

pub const IPFIB: &str = env!("CARGO_BIN_EXE_ipfib");

/// What one run of the binary produced.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Run `ipfib ARGS`, feeding `stdin` (None: stdin is closed at once, as
/// `< /dev/null`). The input is written from a thread so a large input
/// cannot deadlock against a full stdout pipe.
pub fn ipfib<S: AsRef<std::ffi::OsStr>>(args: &[S], stdin: Option<&[u8]>) -> Run {
    let mut child = Command::new(IPFIB)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start the ipfib binary");
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.map(<[u8]>::to_vec);
    let writer = std::thread::spawn(move || {
        if let Some(bytes) = input {
            // The binary may exit early (exit 2) without reading: ignore EPIPE.
            let _ = pipe.write_all(&bytes);
        }
        drop(pipe);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    Run {
        code: out.status.code().expect("ipfib was killed by a signal"),
        stdout: String::from_utf8(out.stdout).expect("stdout is not UTF-8"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The shared data folder (`../shared/data` beside the repository).
pub const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data");

/// The path of a data file, or `None` (after printing `SKIPPED`) when it is
/// absent; under `CI=true` its absence is a failure.
pub fn data_file(name: &str) -> Option<std::path::PathBuf> {
    let path = std::path::Path::new(DATA).join(name);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "{} not found, and CI=true requires the real-table data (../shared/data)",
            path.display()
        );
    }
    eprintln!(
        "SKIPPED: {} not found (real-data tests need ../shared/data)",
        path.display()
    );
    None
}
