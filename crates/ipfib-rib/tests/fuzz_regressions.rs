//! The `bmp_session` fuzz target's check (`fuzz/fuzz_targets/bmp_check.rs`)
//! in the normal test run: on every input the fuzzer failed on, kept in
//! `tests/fuzz_regressions/bmp_session-what`, and on the target's
//! minimized corpus (`fuzz/seeds/bmp_session/`, grown from cuts of the
//! real recordings).

#[path = "../../../fuzz/fuzz_targets/bmp_check.rs"]
mod bmp_check;

use std::path::Path;

fn inputs(dir: &Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_kept_input_and_seed_passes_the_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let kept = inputs(&root.join("tests/fuzz_regressions"), "bmp_session-");
    let seeds = inputs(&root.join("../../fuzz/seeds/bmp_session"), "");
    assert!(!seeds.is_empty(), "no seeds in fuzz/seeds/bmp_session");
    for path in kept.iter().chain(&seeds) {
        let data = std::fs::read(path).unwrap();
        eprintln!("{}", path.display());
        bmp_check::bmp_session(&data);
    }
}
