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

/// The features of every `#[target_feature(enable = "...")]` attribute in
/// `source` (a file's text), for the tests that compare them with a
/// kernel's list.
#[cfg(test)]
pub(crate) fn target_features_in(source: &str) -> Vec<Vec<&str>> {
    const ATTR: &str = "target_feature(enable = \"";
    source
        .match_indices(ATTR)
        .map(|(i, _)| {
            let rest = &source[i + ATTR.len()..];
            let end = rest.find('"').unwrap_or(rest.len());
            rest[..end].split(',').map(str::trim).collect()
        })
        .collect()
}
