//! CPU features by name. Each engine's kernel lists the target features
//! its `#[target_feature]` functions are compiled with (one constant list
//! per kernel, compared with the attributes by the engines' tests), and
//! its detection is [`has_all`] of that list: a kernel is never chosen on a
//! CPU that lacks a feature its code was compiled for.

/// Whether this CPU has target feature `name`; `None` for a name this
/// build does not know how to detect (a kernel listing one is never
/// supported).
pub(crate) fn has(name: &str) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as detected;
        Some(match name {
            "popcnt" => detected!("popcnt"),
            "bmi1" => detected!("bmi1"),
            "bmi2" => detected!("bmi2"),
            "avx2" => detected!("avx2"),
            "avx512f" => detected!("avx512f"),
            "avx512vl" => detected!("avx512vl"),
            "avx512vpopcntdq" => detected!("avx512vpopcntdq"),
            _ => return None,
        })
    }
    #[cfg(target_arch = "aarch64")]
    {
        match name {
            "neon" => Some(std::arch::is_aarch64_feature_detected!("neon")),
            _ => None,
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = name;
        None
    }
}

/// Whether this CPU has every feature of `names` (true for none).
pub(crate) fn has_all(names: &[&str]) -> bool {
    names.iter().all(|n| has(n) == Some(true))
}

/// Every `#[target_feature(...)]` attribute in `source` (a file's text),
/// whitespace removed: `#[target_feature(enable="a,b")]`.
#[cfg(test)]
pub(crate) fn target_feature_attributes(source: &str) -> Vec<String> {
    source
        .match_indices("#[target_feature")
        .map(|(i, _)| {
            let rest = &source[i..];
            let end = rest.find(']').map_or(rest.len(), |e| e + 1);
            rest[..end]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
        })
        // Prose that names the attribute (`#[target_feature]`) has no list.
        .filter(|a| a.starts_with("#[target_feature("))
        .collect()
}

/// The features of every `#[target_feature(enable = "...")]` attribute in
/// `source` (however spaced), for the tests that compare them with a
/// kernel's list. An attribute whose features are not a string literal
/// (PlanB's macro) yields its text as one "feature", which matches no list.
#[cfg(test)]
pub(crate) fn target_features_in(source: &str) -> Vec<Vec<String>> {
    target_feature_attributes(source)
        .into_iter()
        .map(|a| {
            let inner = a
                .trim_start_matches("#[target_feature(enable=")
                .trim_end_matches(")]");
            match inner.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
                Some(list) => list.split(',').map(str::to_string).collect(),
                None => vec![a.clone()],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// Files whose `#[target_feature]` attributes the kernel tests compare
    /// with the kernels' lists (`engine::*::tests::
    /// detection_checks_every_target_feature`). An attribute anywhere else
    /// would compile code for features no detection checks: this test
    /// fails until the new file joins a kernel's test.
    const CHECKED: [&str; 5] = [
        "engine/planb/search.rs",
        "engine/poptrie/search.rs",
        "engine/poptrie/avx512.rs",
        "engine/poptrie/flat/search.rs",
        "engine/poptrie/flat/avx512.rs",
    ];

    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_target_feature_attribute_is_in_a_checked_file() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut found = 0;
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let rel = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let attrs = super::target_feature_attributes(&text);
            // This file's own test text holds an attribute too.
            if rel == "cpu.rs" || attrs.is_empty() {
                continue;
            }
            assert!(
                CHECKED.contains(&rel.as_str()),
                "{rel}: #[target_feature] outside the files the kernel tests check: {attrs:?}"
            );
            found += attrs.len();
        }
        assert!(
            found >= 10,
            "only {found} attributes found: is the scan broken?"
        );
    }

    #[test]
    fn attributes_are_read_however_spaced() {
        let text = "#[target_feature( enable =\"avx2, popcnt\" )]\nfn f() {}";
        assert_eq!(
            super::target_features_in(text),
            vec![vec!["avx2", "popcnt"]]
        );
    }
}
