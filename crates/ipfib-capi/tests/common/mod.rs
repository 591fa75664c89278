//! What the C tests share: where the data, the built library and the
//! header are, skipping without data (failing under CI=true), compiling C
//! with the system's `cc`, and a scratch directory.

#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The real data: ../shared/data from the project root, or
/// $IPFIB_SHARED_DATA (to try the tests' skipping without it).
pub fn data_dir() -> PathBuf {
    std::env::var_os("IPFIB_SHARED_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        PathBuf::from,
    )
}

/// Whether to go on without `what`: prints SKIPPED and says no, or under
/// CI=true fails.
pub fn skip(what: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{what}, and CI=true requires it");
    }
    eprintln!("SKIPPED: {what}");
}

/// `DATA/rel`, or `None` (after [`skip`]) if it is missing.
pub fn data(rel: &str) -> Option<PathBuf> {
    let p = data_dir().join(rel);
    if p.exists() {
        Some(p)
    } else {
        skip(&format!("{} not found", p.display()));
        None
    }
}

/// The directory holding libipfib.so and libipfib.a: the profile directory
/// above this test binary (target/debug/deps/.. = target/debug).
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/PROFILE/deps/TEST")
        .to_path_buf();
    for lib in ["libipfib.so", "libipfib.a"] {
        assert!(
            dir.join(lib).exists(),
            "{} missing: cargo builds it before this test",
            dir.join(lib).display()
        );
    }
    dir
}

pub fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The C compiler: $CC, else `cc`.
pub fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// How to link a C program with the library.
#[derive(Clone, Copy, Debug)]
pub enum Link {
    /// Against libipfib.so, found through an rpath.
    Shared,
    /// Against libipfib.a with Rust std's system libraries, and the C code
    /// built with AddressSanitizer and UndefinedBehaviorSanitizer.
    StaticSanitized,
}

/// The system libraries a Rust staticlib needs on Linux (what `cargo rustc
/// -- --print native-static-libs` lists).
pub const NATIVE_STATIC_LIBS: [&str; 7] = [
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// Compile `sources` into `out`, with `extra` arguments after them (other
/// libraries); panics with the compiler's output on failure.
pub fn compile(sources: &[&Path], out: &Path, link: Link, extra: &[&str]) {
    let lib = lib_dir();
    let mut c = Command::new(cc());
    c.args([
        "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread",
    ])
    .arg("-I")
    .arg(include_dir())
    .args(sources)
    .arg("-o")
    .arg(out);
    match link {
        Link::Shared => {
            c.arg("-L")
                .arg(&lib)
                .arg(format!("-Wl,-rpath,{}", lib.display()))
                .arg("-lipfib");
        }
        Link::StaticSanitized => {
            c.args([
                "-fsanitize=address,undefined",
                "-fno-sanitize-recover=all",
                "-fno-omit-frame-pointer",
            ])
            .arg(lib.join("libipfib.a"))
            .args(NATIVE_STATIC_LIBS);
        }
    }
    c.args(extra);
    let o = c
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", cc()));
    assert!(
        o.status.success(),
        "compiling {sources:?} failed ({c:?}):\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Run a compiled program; its output, printed.
pub fn run(program: &Path, args: &[&Path], link: Link) -> Output {
    let mut c = Command::new(program);
    c.args(args);
    if let Link::StaticSanitized = link {
        // Leaks are errors too; Rust's own thread-local and runtime
        // allocations are freed at exit or held by reachable pointers.
        c.env(
            "ASAN_OPTIONS",
            "detect_leaks=1:abort_on_error=0:exitcode=23",
        )
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1");
    }
    let o = c
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
    print!("{}", String::from_utf8_lossy(&o.stdout));
    eprint!("{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// A fresh scratch directory under the target directory.
pub fn scratch(name: &str) -> PathBuf {
    let d = lib_dir()
        .join("tmp-capi")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create the scratch directory");
    d
}

/// An ipfib.pc for the build tree (as scripts/install-capi writes one for
/// an install), in `dir`: a Makefile using pkg-config finds the library
/// with PKG_CONFIG_PATH=dir.
pub fn pc_file(dir: &Path) {
    let template =
        std::fs::read_to_string(manifest_dir().join("ipfib.pc.in")).expect("ipfib.pc.in");
    let pc = template
        .replace("@PREFIX@", &lib_dir().display().to_string())
        .replace("@LIBDIR@", &lib_dir().display().to_string())
        .replace("@INCLUDEDIR@", &include_dir().display().to_string())
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"));
    std::fs::write(dir.join("ipfib.pc"), pc).expect("write ipfib.pc");
}

/// Whether pkg-config knows `pkg`; if not, [`skip`] with `what`.
pub fn pkg_exists(pkg: &str, what: &str) -> bool {
    let ok = Command::new("pkg-config")
        .args(["--exists", pkg])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip(what);
    }
    ok
}

/// Builds an example with its Makefile (`makefile`, from the repository
/// root) in a fresh scratch directory `name`, against the library through
/// an ipfib.pc for the build tree and an rpath; the directory.
pub fn build_example(name: &str, makefile: &str, cflags: &str) -> PathBuf {
    let dir = scratch(name);
    pc_file(&dir);
    let make = Command::new("make")
        .arg("-s")
        .arg("-f")
        .arg(manifest_dir().join("../..").join(makefile))
        .arg("-C")
        .arg(&dir)
        .env("PKG_CONFIG_PATH", &dir)
        .env("CFLAGS", cflags)
        .env("LDFLAGS", format!("-Wl,-rpath,{}", lib_dir().display()))
        .output()
        .expect("run make");
    assert!(
        make.status.success(),
        "make failed:\n{}{}",
        String::from_utf8_lossy(&make.stdout),
        String::from_utf8_lossy(&make.stderr)
    );
    dir
}
