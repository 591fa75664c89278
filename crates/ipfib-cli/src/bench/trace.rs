//! Traces as named on the command line (`--trace`), and their addresses.
//!
//! - `uniform`: uniformly random addresses over the whole family (mostly
//!   misses for IPv6, whose routed space is 2000::/3);
//! - `matched`: for each address a prefix drawn uniformly from the table,
//!   then random host bits inside it;
//! - `sequential`: the Poptrie paper's sequential pattern: consecutive
//!   addresses, counting up by one from a random start;
//! - `repeat` (`repeat:K`): the paper's repeated pattern: each uniformly
//!   random address looked up 16 (K) times in a row;
//! - `uniform-in:PREFIX`: random addresses inside PREFIX (that family only);
//! - a trace file (binary `IPFIBTR1` or one address per line).

use ipfib::engine::Family;
use ipfib::gen::{matched_trace, repeat_trace, sequential_trace, uniform_trace};
use ipfib::prefix::{AnyPrefix, HostBits, Prefix};
use ipfib_io::{read_trace, Trace};
use std::path::Path;

/// The Poptrie paper's repeat count.
pub const REPEAT: usize = 16;

#[derive(Clone, Debug)]
pub enum TraceSpec {
    Uniform,
    Matched,
    Sequential,
    /// Each random address this many times in a row.
    Repeat(usize),
    /// Uniform inside one prefix (of one family).
    UniformIn(AnyPrefix),
    /// The addresses of a trace file, by the name given.
    File(String, Trace),
}

impl TraceSpec {
    pub fn parse(t: &str) -> Result<TraceSpec, String> {
        let repeat = |k: &str| match k.parse::<usize>() {
            Ok(k) if k >= 1 => Ok(TraceSpec::Repeat(k)),
            _ => Err(format!(
                "trace {t:?}: the repeat count must be a whole number of at least 1"
            )),
        };
        match t {
            "uniform" => Ok(TraceSpec::Uniform),
            "matched" => Ok(TraceSpec::Matched),
            "sequential" => Ok(TraceSpec::Sequential),
            "repeat" => Ok(TraceSpec::Repeat(REPEAT)),
            _ => match (t.strip_prefix("uniform-in:"), t.strip_prefix("repeat:")) {
                (Some(p), _) => AnyPrefix::parse(p, HostBits::Reject)
                    .map(TraceSpec::UniformIn)
                    .map_err(|e| format!("trace {t:?}: {e}")),
                (_, Some(k)) => repeat(k),
                _ if Path::new(t).is_file() => read_trace(Path::new(t))
                    .map(|trace| TraceSpec::File(t.to_string(), trace))
                    .map_err(|e| e.to_string()),
                _ => Err(format!(
                    "unknown trace {t:?} (available: uniform, matched, sequential, repeat, \
                     repeat:K, uniform-in:PREFIX, or a trace file)"
                )),
            },
        }
    }

    /// The trace for family `A`, or `None` when it belongs to the other one.
    pub fn generate<A: Family>(
        &self,
        prefixes: &[Prefix<A>],
        n: usize,
        seed: u64,
    ) -> Option<Vec<A>> {
        match self {
            TraceSpec::Uniform => Some(uniform_trace(n, seed)),
            TraceSpec::Matched => Some(matched_trace(prefixes, n, seed + 1)),
            TraceSpec::Sequential => Some(sequential_trace(n, seed + 3)),
            TraceSpec::Repeat(k) => Some(repeat_trace(n, *k, seed + 4)),
            TraceSpec::UniformIn(p) => {
                let (addr, len) = match *p {
                    AnyPrefix::V4(p) => (p.addr() as u128, p.len()),
                    AnyPrefix::V6(p) => (p.addr(), p.len()),
                };
                if p.family() != A::FAMILY {
                    return None;
                }
                let p = Prefix::new(A::from_u128_truncate(addr), len).ok()?;
                Some(matched_trace(&[p], n, seed + 2))
            }
            TraceSpec::File(_, t) => {
                let addrs: Vec<A> = if A::FAMILY == 4 {
                    t.v4.iter()
                        .map(|&a| A::from_u128_truncate(a.into()))
                        .collect()
                } else {
                    t.v6.iter().map(|&a| A::from_u128_truncate(a)).collect()
                };
                // A file without addresses of this family: nothing to run.
                (!addrs.is_empty()).then_some(addrs)
            }
        }
    }

    pub fn name(&self) -> String {
        match self {
            TraceSpec::Uniform => "uniform".into(),
            TraceSpec::Matched => "matched".into(),
            TraceSpec::Sequential => "sequential".into(),
            TraceSpec::Repeat(k) => format!("repeat{k}"),
            TraceSpec::UniformIn(p) => format!("in:{p}"),
            TraceSpec::File(name, _) => name.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_errors() {
        for (arg, name) in [
            ("uniform", "uniform"),
            ("matched", "matched"),
            ("sequential", "sequential"),
            ("repeat", "repeat16"),
            ("repeat:4", "repeat4"),
            ("uniform-in:10.0.0.0/8", "in:10.0.0.0/8"),
        ] {
            assert_eq!(TraceSpec::parse(arg).map(|t| t.name()), Ok(name.into()));
        }
        for bad in ["repeat:0", "repeat:x", "uniform-in:10.0.0.1/8", "bogus"] {
            assert!(TraceSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn shapes() {
        let seq = TraceSpec::Sequential.generate::<u32>(&[], 500, 1).unwrap();
        assert!(seq.windows(2).all(|w| w[1] == w[0].wrapping_add(1)));
        let rep = TraceSpec::Repeat(REPEAT)
            .generate::<u128>(&[], 160, 1)
            .unwrap();
        assert!(rep.chunks(REPEAT).all(|c| c.iter().all(|&a| a == c[0])));
        assert_eq!(rep.chunk_by(|a, b| a == b).count(), 10);
    }

    #[test]
    fn uniform_in_stays_inside_its_prefix_and_family() {
        let spec = TraceSpec::parse("uniform-in:2001:db8::/32").unwrap();
        assert!(spec.generate::<u32>(&[], 10, 1).is_none(), "IPv6 only");
        let p: Prefix<u128> = Prefix::new(0x2001_0db8u128 << 96, 32).unwrap();
        let t = spec.generate::<u128>(&[], 10_000, 1).unwrap();
        assert_eq!(t.len(), 10_000);
        assert!(t.iter().all(|&a| p.contains(a)));
        let spec = TraceSpec::parse("uniform-in:192.168.0.0/16").unwrap();
        let q: Prefix<u32> = Prefix::new(0xc0a8_0000, 16).unwrap();
        let t = spec.generate::<u32>(&[], 10_000, 1).unwrap();
        assert!(t.iter().all(|&a| q.contains(a)));
    }
}
