//! include/ipfib.h is what cbindgen generates from the sources now: a
//! changed entry point without a regenerated header fails here.
//! Regenerate with `IPFIB_BLESS=1 cargo test -p ipfib-capi --test header`.

use std::path::Path;

#[test]
fn committed_header_is_fresh() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    let path = dir.join("include/ipfib.h");
    if std::env::var_os("IPFIB_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/ipfib.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "{} is stale (first difference at line {}): regenerate it with \
             `IPFIB_BLESS=1 cargo test -p ipfib-capi --test header`",
            path.display(),
            line + 1
        );
    }
}
