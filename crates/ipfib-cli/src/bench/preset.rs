//! `--preset NAME`: named sets of tables, traces, engines and batch sizes.
//!
//! `standing` reproduces the standing rows of BENCHMARKS.md: the real
//! tables of `bench/peers/run.sh` (RouteViews 2015 IPv4 606K and IPv6
//! 27.7K in one file, LINX IPv6 20.4K, RouteViews 2026 IPv4 1.1M and IPv6
//! 259K), uniform and matched traces, the standing's engines and batch
//! sizes 1, 16, 32. The traces are generated here (same kinds, seeded)
//! rather than read from `bench/peers/make_inputs.py`'s files, so the
//! figures compare with the standing's but the checksums differ.

use std::path::{Path, PathBuf};

/// A resolved preset: the table files, in run order.
pub struct Preset {
    pub files: Vec<PathBuf>,
}

/// The standing's table files, in `bench/peers/run.sh` order.
const STANDING_FILES: &[&str] = &[
    "routeviews-20151101.ipasn.dat.gz",
    "routeviews-rv2-20260730-1400.pfx2as.txt.gz",
    "routeviews-rv6-20260730-1400.pfx2as.txt.gz",
    "linx-rib-ipv6.20141225.0000.p69.txt.gz",
];

/// The standing's engines (BENCHMARKS.md, "Standing").
const STANDING_ENGINES: &[&str] = &[
    "auto",
    "planb",
    "poptrie:18",
    "poptrie32:18",
    "poptrie-flat:16",
    "poptrie-flat:18",
    "radix",
];

pub const PRESETS: &str = "standing";

impl Preset {
    /// The preset `name` with its files in `data` (else `$IPFIB_DATA`,
    /// else `../shared/data`); an error names the first missing file.
    pub fn resolve(name: &str, data: Option<&Path>) -> Result<Preset, String> {
        if name != "standing" {
            return Err(format!(
                "--preset {name:?}: unknown preset (available: {PRESETS})"
            ));
        }
        let dir = data.map(Path::to_path_buf).unwrap_or_else(|| {
            std::env::var_os("IPFIB_DATA")
                .map_or_else(|| PathBuf::from("../shared/data"), PathBuf::from)
        });
        let files: Vec<PathBuf> = STANDING_FILES.iter().map(|f| dir.join(f)).collect();
        if let Some(missing) = files.iter().find(|f| !f.is_file()) {
            return Err(format!(
                "--preset standing: missing {} (the real tables of the data directory: \
                 give it with --data DIR or IPFIB_DATA)",
                missing.display()
            ));
        }
        Ok(Preset { files })
    }

    pub fn engines(&self) -> Vec<String> {
        STANDING_ENGINES.iter().map(|e| e.to_string()).collect()
    }

    pub fn batches(&self) -> Vec<usize> {
        vec![1, 16, 32]
    }

    pub fn traces(&self) -> Vec<String> {
        vec!["uniform".into(), "matched".into()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_missing_file_and_unknown_presets() {
        let dir = std::env::temp_dir().join("ipfib-preset-test-none");
        let e = Preset::resolve("standing", Some(&dir))
            .err()
            .unwrap_or_default();
        assert!(e.contains("routeviews-20151101.ipasn.dat.gz"), "{e}");
        assert!(e.contains("--data"), "{e}");
        let e = Preset::resolve("nope", Some(&dir))
            .err()
            .unwrap_or_default();
        assert!(e.contains("unknown preset"), "{e}");
    }
}
