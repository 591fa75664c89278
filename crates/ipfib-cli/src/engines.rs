//! Engine names on the command line: `auto` (the default: chosen per
//! family from the table, `ipfib::engine::auto`), `planb`, `planb-routes`, `radix`,
//! `poptrie[:S]`, `poptrie-routes[:S]`, `poptrie-basic[:S]`, and
//! `poptrie5[:S]` (the 32-ary node layout, with leafvec and aggregation)
//! and `poptrie-flat[:S]` (32-ary nodes held inline, with aggregation).

use ipfib::engine::auto::{Kind, Pick};
use ipfib::engine::poptrie::PoptrieOptions;

/// One engine as named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineSpec {
    /// Chosen per family from the table's shape and a calibration.
    Auto,
    /// PlanB over value payloads (aggregated intervals).
    Planb,
    /// PlanB over route payloads (the matching prefix is known).
    PlanbRoutes,
    /// The route table (radix trie).
    Radix,
    /// Poptrie with direct-pointing bits `s` (`None`: the default).
    Poptrie {
        s: Option<u8>,
        /// Leaf compression (`leafvec`, §3.3); off for `poptrie-basic`.
        leafvec: bool,
        /// Route aggregation (value payloads); off for `poptrie-routes`
        /// and `poptrie-basic` (route payloads: no two prefixes merge).
        aggregate: bool,
        /// Node layout.
        layout: Layout,
    },
}

/// How a Poptrie lays out its nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// The paper's 64-ary nodes (`poptrie`).
    Node64,
    /// 32-ary nodes, one gather per level in batches (`poptrie5`).
    Node32,
    /// 32-ary nodes held inline with the leaves (`poptrie-flat`): one
    /// 64-bit read per level and nothing else.
    Flat,
}

/// What the commands accept, for error messages.
pub const BENCH_ENGINES: &str =
    "auto, planb, planb-routes, radix, poptrie[:S], poptrie-routes[:S], \
     poptrie-basic[:S], poptrie5[:S], poptrie-flat[:S]";
pub const LOOKUP_ENGINES: &str = "auto, planb, poptrie[:S], poptrie5[:S], poptrie-flat[:S], radix";

impl EngineSpec {
    /// The engine `auto` is forced to build for this name (`None`: auto
    /// chooses; radix is not an `auto` engine).
    pub fn force(self) -> Option<Pick> {
        match self {
            EngineSpec::Poptrie { s, layout, .. } => {
                let kind = match layout {
                    Layout::Node64 => Kind::Poptrie,
                    Layout::Node32 => Kind::Poptrie5,
                    Layout::Flat => Kind::Flat,
                };
                Some((kind, Some(s.unwrap_or(PoptrieOptions::DEFAULT_DIRECT_BITS))))
            }
            EngineSpec::Planb | EngineSpec::PlanbRoutes => Some((Kind::Planb, None)),
            EngineSpec::Auto | EngineSpec::Radix => None,
        }
    }

    /// Parse one name; the error says what was wrong.
    pub fn parse(text: &str) -> Result<EngineSpec, String> {
        let (base, s) = match text.split_once(':') {
            Some((base, bits)) => (base, Some(bits)),
            None => (text, None),
        };
        let poptrie = |leafvec, aggregate, layout| -> Result<EngineSpec, String> {
            let s = s
                .map(parse_bits)
                .transpose()
                .map_err(|e| format!("{text:?}: {e}"))?;
            Ok(EngineSpec::Poptrie {
                s,
                leafvec,
                aggregate,
                layout,
            })
        };
        match (base, s) {
            ("auto", None) => Ok(EngineSpec::Auto),
            ("planb", None) => Ok(EngineSpec::Planb),
            ("planb-routes", None) => Ok(EngineSpec::PlanbRoutes),
            ("radix", None) => Ok(EngineSpec::Radix),
            ("poptrie", _) => poptrie(true, true, Layout::Node64),
            ("poptrie-routes", _) => poptrie(true, false, Layout::Node64),
            ("poptrie-basic", _) => poptrie(false, false, Layout::Node64),
            ("poptrie5", _) => poptrie(true, true, Layout::Node32),
            ("poptrie-flat", _) => poptrie(true, true, Layout::Flat),
            _ => Err(format!("unknown engine {text:?}")),
        }
    }

    /// The name as printed in reports (`poptrie:18`, with the `s` in use).
    pub fn label(&self, default_s: u8) -> String {
        match self {
            EngineSpec::Auto => "auto".into(),
            EngineSpec::Planb => "planb".into(),
            EngineSpec::PlanbRoutes => "planb-routes".into(),
            EngineSpec::Radix => "radix".into(),
            EngineSpec::Poptrie {
                s,
                leafvec,
                aggregate,
                layout,
            } => {
                let base = match (leafvec, aggregate, layout) {
                    (_, _, Layout::Node32) => "poptrie5",
                    (_, _, Layout::Flat) => "poptrie-flat",
                    (true, true, _) => "poptrie",
                    (true, false, _) => "poptrie-routes",
                    _ => "poptrie-basic",
                };
                format!("{base}:{}", s.unwrap_or(default_s))
            }
        }
    }
}

fn parse_bits(bits: &str) -> Result<u8, String> {
    let max = PoptrieOptions::MAX_DIRECT_BITS;
    match bits.parse::<u8>() {
        Ok(s) if s <= max => Ok(s),
        _ => Err(format!(
            "direct-pointing bits must be a number from 0 to {max} (e.g. poptrie:18), not {bits:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(EngineSpec::parse("planb"), Ok(EngineSpec::Planb));
        assert_eq!(
            EngineSpec::parse("poptrie:16"),
            Ok(EngineSpec::Poptrie {
                s: Some(16),
                leafvec: true,
                aggregate: true,
                layout: Layout::Node64,
            })
        );
        assert_eq!(
            EngineSpec::parse("poptrie5:12").map(|e| e.label(18)),
            Ok("poptrie5:12".into())
        );
        assert_eq!(
            EngineSpec::parse("poptrie-flat:13").map(|e| e.label(18)),
            Ok("poptrie-flat:13".into())
        );
        assert_eq!(
            EngineSpec::parse("poptrie-basic").map(|e| e.label(18)),
            Ok("poptrie-basic:18".into())
        );
        assert_eq!(
            EngineSpec::parse("auto").map(|e| e.label(18)),
            Ok("auto".into())
        );
        for bad in [
            "poptrie:x",
            "poptrie:25",
            "poptrie:",
            "planb:3",
            "auto:18",
            "bogus",
        ] {
            assert!(EngineSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
