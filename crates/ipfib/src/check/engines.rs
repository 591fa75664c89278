//! Arbitrary bytes as an engine test case: both families' routes, biased
//! to the edges, and extra query addresses; every engine variant is
//! checked against the route table and the brute-force oracle
//! ([`super::check_engines_small`]: every kernel and layout on small
//! direct tables) on every boundary of those routes, its structure
//! validated after each build. One
//! definition for the `engines` fuzz target and the test that replays its
//! inputs.

use super::bytes::{prefix, Bytes};
use super::differential::{boundary_queries, check_engines_small};
use crate::engine::Family;
use crate::oracle::Oracle;
use crate::prefix::Prefix;
use crate::route_table::RouteTable;

/// Routes and extra queries of both families.
#[derive(Clone, Debug, Default)]
pub struct EngineCase {
    pub v4: Vec<(Prefix<u32>, u32)>,
    pub v6: Vec<(Prefix<u128>, u32)>,
    pub q4: Vec<u32>,
    pub q6: Vec<u128>,
}

/// Direct-pointing bits the route lengths cluster around: the small
/// checker's `s` values (PlanB 1, 4, 8; Poptrie 0, 5, 8) and 16.
const NEAR_BITS: [u8; 4] = [4, 5, 8, 16];

impl EngineCase {
    /// At most 96 routes per family: every variant is built per case.
    pub fn decode(data: &[u8]) -> EngineCase {
        let mut b = Bytes(data);
        let s = NEAR_BITS[usize::from(b.below(4))];
        let values = 1 + b.below(8);
        let mut c = EngineCase::default();
        while !b.0.is_empty() {
            match b.below(8) {
                0..=3 if c.v4.len() < 96 => {
                    c.v4.push((prefix(&mut b, s), u32::from(b.below(values))))
                }
                4 | 5 if c.v6.len() < 96 => {
                    c.v6.push((prefix(&mut b, s), u32::from(b.below(values))))
                }
                6 => c.q4.push(b.u64() as u32),
                7 => c.q6.push(u128::from(b.u64()) << 64 | u128::from(b.u64())),
                _ => break,
            }
        }
        c
    }
}

fn family<A: Family>(routes: &[(Prefix<A>, u32)], extra: &[A]) -> Result<(), String> {
    let mut table = RouteTable::new();
    for &(p, v) in routes {
        table.insert(p, v).map_err(|e| e.to_string())?;
    }
    let oracle = Oracle::new(routes.iter().copied());
    let mut q = boundary_queries(routes.iter().map(|r| r.0));
    q.extend_from_slice(extra);
    check_engines_small(&table, Some(&oracle), &q).map_err(|m| m.to_string())
}

/// Check every engine variant on the case `data` spells.
pub fn check_engine_bytes(data: &[u8]) -> Result<(), String> {
    let c = EngineCase::decode(data);
    family(&c.v4, &c.q4).map_err(|e| format!("IPv4: {e}"))?;
    family(&c.v6, &c.q6).map_err(|e| format!("IPv6: {e}"))
}
