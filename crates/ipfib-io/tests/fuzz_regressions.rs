//! Inputs the fuzzers (`fuzz/`, `cargo +nightly fuzz run TARGET`) found,
//! kept under `tests/fuzz_regressions/TARGET-what`, replayed through the
//! same checks the fuzz targets make (`fuzz/fuzz_targets/common.rs`).

#[path = "../../../fuzz/fuzz_targets/common.rs"]
mod fuzz_common;

#[test]
fn every_kept_fuzz_input_passes_its_target() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz_regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let target = name.split('-').next().unwrap();
        let data = std::fs::read(&path).unwrap();
        fuzz_common::run(target, &data);
        n += 1;
    }
    assert!(n > 0, "no inputs in {dir}");
}
