//! Model check of the dynamic FIB: run a script of operations (insert,
//! remove, batches, `replace_all`, flush, `publish_if_due`, snapshots held
//! across them and dropped later) against a [`Fib`] and the brute-force
//! [`Oracle`], and compare every published version with the oracle as it
//! was when that version was published.
//!
//! One definition for the property tests (`tests/fib.rs`) and the fuzz
//! target (`fuzz/fuzz_targets/fib_ops.rs`): [`FibScript::decode`] turns
//! arbitrary bytes into a script biased to the edges (prefixes of length
//! 0, around the direct-pointing bits, the longest; the ends of the space;
//! a few shared bases so that routes nest and repeat; a handful of values
//! so that value indices are freed and reused all the time).

use super::bytes::{any_prefix, Bytes, DIRECT_BITS};
use crate::engine::poptrie::PoptrieOptions;
use crate::engine::Family;
use crate::fib::{Fib, FibEngine, FibOptions, FibUpdate, Snapshot};
use crate::intervals::NO_ROUTE;
use crate::oracle::Oracle;
use crate::prefix::{AnyPrefix, Prefix};
use crate::table::Table;
use std::collections::BTreeSet;
use std::time::Duration;

/// How many operations the `fib_ops` fuzz target decodes from one input
/// (its regression inputs replay with the same bound).
pub const FIB_FUZZ_MAX_OPS: usize = 400;

/// One step of a script.
#[derive(Clone, Debug)]
pub enum FibOp {
    Insert(AnyPrefix, u32),
    Remove(AnyPrefix),
    Batch(Vec<FibUpdate<u32>>),
    ReplaceAll(Vec<(AnyPrefix, u32)>),
    Flush,
    PublishIfDue,
    /// Take a snapshot and keep it.
    Hold,
    /// Drop the held snapshot with this index (modulo how many are held).
    Release(usize),
}

/// Options and operations for [`check_fib_script`].
#[derive(Clone, Debug)]
pub struct FibScript {
    pub opts: FibOptions,
    pub ops: Vec<FibOp>,
}

impl FibScript {
    /// The script that `data` spells: the first bytes choose the options,
    /// the rest the operations (at most `max_ops` of them).
    pub fn decode(data: &[u8], max_ops: usize) -> FibScript {
        let mut b = Bytes(data);
        let engine = b.below(5);
        let mut opts = FibOptions::with_engine(if engine == 0 {
            FibEngine::PlanB
        } else {
            FibEngine::Poptrie
        });
        let s = DIRECT_BITS[usize::from(engine.saturating_sub(1)) % DIRECT_BITS.len()];
        opts.poptrie = PoptrieOptions {
            direct_bits: Some(s),
            ..PoptrieOptions::default()
        };
        opts.max_pending = [1, 2, 7, 64][usize::from(b.below(4))];
        // No timing in a script: publications
        // come from `max_pending`, a zero `max_delay` (every change due at
        // once) or the explicit calls, so a script replays the same way.
        opts.max_delay = if b.below(2) == 0 {
            Duration::ZERO
        } else {
            Duration::from_secs(3600)
        };
        // This byte chose a setting the FIB no longer has; it is still
        // read so that saved scripts replay the same way.
        let _ = b.below(2);
        opts.validate = true;
        let mut ops = Vec::new();
        while !b.0.is_empty() && ops.len() < max_ops {
            let op = match b.below(16) {
                0..=5 => FibOp::Insert(any_prefix(&mut b, s), u32::from(b.below(6))),
                6..=8 => FibOp::Remove(any_prefix(&mut b, s)),
                9 => FibOp::Batch(
                    (0..=b.below(8))
                        .map(|_| {
                            if b.below(3) == 0 {
                                FibUpdate::Remove(any_prefix(&mut b, s))
                            } else {
                                FibUpdate::Insert(any_prefix(&mut b, s), u32::from(b.below(6)))
                            }
                        })
                        .collect(),
                ),
                10 => FibOp::ReplaceAll(
                    (0..b.below(5))
                        .map(|_| (any_prefix(&mut b, s), u32::from(b.below(6))))
                        .collect(),
                ),
                11 => FibOp::Flush,
                12 => FibOp::PublishIfDue,
                13 | 14 => FibOp::Hold,
                _ => FibOp::Release(usize::from(b.byte())),
            };
            ops.push(op);
        }
        FibScript { opts, ops }
    }
}

/// The reference: both families' oracles.
#[derive(Clone, Default)]
struct Model {
    v4: Oracle<u32, u32>,
    v6: Oracle<u128, u32>,
}

impl Model {
    fn insert(&mut self, p: AnyPrefix, v: u32) {
        match p {
            AnyPrefix::V4(p) => self.v4.insert(p, v),
            AnyPrefix::V6(p) => self.v6.insert(p, v),
        }
    }

    fn remove(&mut self, p: &AnyPrefix) -> Option<u32> {
        match p {
            AnyPrefix::V4(p) => self.v4.remove(p),
            AnyPrefix::V6(p) => self.v6.remove(p),
        }
    }

    /// The value of exactly `p`.
    fn get(&self, p: &AnyPrefix) -> Option<u32> {
        match p {
            AnyPrefix::V4(p) => self.v4.routes().iter().find(|r| r.0 == *p).map(|r| r.1),
            AnyPrefix::V6(p) => self.v6.routes().iter().find(|r| r.0 == *p).map(|r| r.1),
        }
    }
}

/// Every prefix the script touched: their boundaries are where any
/// version, stale or current, could differ from another.
#[derive(Default)]
struct Touched {
    v4: BTreeSet<Prefix<u32>>,
    v6: BTreeSet<Prefix<u128>>,
}

impl Touched {
    fn add(&mut self, p: AnyPrefix) {
        match p {
            AnyPrefix::V4(p) => drop(self.v4.insert(p)),
            AnyPrefix::V6(p) => drop(self.v6.insert(p)),
        }
    }
}

/// `snap` answers what `model` answers on every boundary of every touched
/// prefix, single and batch.
fn compare(
    snap: &Snapshot<u32>,
    model: &Model,
    touched: &Touched,
    what: &str,
) -> Result<(), String> {
    let q4 = super::differential::boundary_queries(touched.v4.iter().copied());
    family(
        &q4,
        |a| snap.lookup_v4(a).copied(),
        |a, o| snap.lookup_batch_v4(a, o),
        |i| snap.value_v4(i).copied(),
        |a| model.v4.lookup(a).map(|(_, v)| *v),
        what,
    )?;
    let q6 = super::differential::boundary_queries(touched.v6.iter().copied());
    family(
        &q6,
        |a| snap.lookup_v6(a).copied(),
        |a, o| snap.lookup_batch_v6(a, o),
        |i| snap.value_v6(i).copied(),
        |a| model.v6.lookup(a).map(|(_, v)| *v),
        what,
    )
}

fn family<A: Family>(
    queries: &[A],
    single: impl Fn(A) -> Option<u32>,
    batch: impl Fn(&[A], &mut [u32]),
    value: impl Fn(u32) -> Option<u32>,
    want: impl Fn(A) -> Option<u32>,
    what: &str,
) -> Result<(), String> {
    let mut out = vec![0; queries.len()];
    batch(queries, &mut out);
    for (&a, &i) in queries.iter().zip(&out) {
        let w = want(a);
        let got = single(a);
        if got != w {
            return Err(format!("{what}: {a:?} answered {got:?}, want {w:?}"));
        }
        let got = if i == NO_ROUTE { None } else { value(i) };
        if got != w || (i != NO_ROUTE && got.is_none()) {
            return Err(format!(
                "{what}: {a:?} batch index {i} means {got:?}, want {w:?}"
            ));
        }
    }
    Ok(())
}

/// Run `script`; `Err` describes the first step at which a published
/// version (the current one or one a held snapshot shows) differs from the
/// oracle of its time, or a call failed.
pub fn check_fib_script(script: &FibScript) -> Result<(), String> {
    let mut fib: Fib<u32> = Fib::new(script.opts.clone()).map_err(|e| format!("Fib::new: {e}"))?;
    let reader = fib.reader();
    let mut model = Model::default();
    // The oracle as of the last publication, and per held snapshot.
    let mut published = model.clone();
    let mut held: Vec<(Snapshot<u32>, Model)> = Vec::new();
    let mut touched = Touched::default();
    for (step, op) in script.ops.iter().enumerate() {
        let what = format!("step {step} ({op:?})");
        let before = fib.version();
        let result = match op.clone() {
            FibOp::Insert(p, v) => {
                touched.add(p);
                let want = model.get(&p);
                model.insert(p, v);
                fib.insert(p, v).map(|old| {
                    (old != want).then(|| format!("{what}: returned {old:?}, want {want:?}"))
                })
            }
            FibOp::Remove(p) => {
                touched.add(p);
                let want = model.remove(&p);
                fib.remove(&p).map(|old| {
                    (old != want).then(|| format!("{what}: returned {old:?}, want {want:?}"))
                })
            }
            FibOp::Batch(updates) => {
                for u in &updates {
                    match u {
                        FibUpdate::Insert(p, v) => {
                            touched.add(*p);
                            model.insert(*p, *v);
                        }
                        FibUpdate::Remove(p) => {
                            touched.add(*p);
                            model.remove(p);
                        }
                    }
                }
                fib.apply_batch(updates).map(|()| None)
            }
            FibOp::ReplaceAll(routes) => {
                let mut table = Table::new();
                model = Model::default();
                for (p, v) in routes {
                    touched.add(p);
                    model.insert(p, v);
                    table.insert(p, v).map_err(|e| format!("{what}: {e}"))?;
                }
                fib.replace_all(table).map(|()| None)
            }
            FibOp::Flush => fib.flush().map(|()| None),
            FibOp::PublishIfDue => fib.publish_if_due().map(|_| None),
            FibOp::Hold => {
                held.push((reader.snapshot(), published.clone()));
                Ok(None)
            }
            FibOp::Release(k) => {
                if !held.is_empty() {
                    let (snap, then) = held.swap_remove(k % held.len());
                    compare(&snap, &then, &touched, &format!("{what}: released"))?;
                }
                Ok(None)
            }
        };
        if let Some(wrong) = result.map_err(|e| format!("{what}: {e}"))? {
            return Err(wrong);
        }
        // The staleness bound (nothing puts a publication off, held
        // snapshots included): never `max_pending` changes pending after a
        // call, and none at all with a zero `max_delay`.
        let opts = fib.options();
        if !matches!(op, FibOp::Hold | FibOp::Release(_))
            && (fib.pending() >= opts.max_pending
                || (opts.max_delay.is_zero() && fib.pending() > 0))
        {
            return Err(format!("{what}: {} changes overdue", fib.pending()));
        }
        if fib.version() != before {
            published = model.clone();
        }
        let snap = reader.snapshot();
        if snap.version() != fib.version() {
            return Err(format!(
                "{what}: reader sees version {}, writer published {}",
                snap.version(),
                fib.version()
            ));
        }
        // A version is compared when it is published, every few steps
        // after (it must not change while published), and when a held
        // snapshot of it is released.
        if fib.version() != before || step % 16 == 0 {
            compare(&snap, &published, &touched, &what)?;
        }
        if matches!(op, FibOp::Flush | FibOp::ReplaceAll(_)) && fib.pending() != 0 {
            return Err(format!("{what}: {} changes still pending", fib.pending()));
        }
        if fib.routes_v4().len() != model.v4.routes().len()
            || fib.routes_v6().len() != model.v6.routes().len()
        {
            return Err(format!("{what}: the route table lost or gained a route"));
        }
    }
    for (k, (snap, then)) in held.iter().enumerate() {
        compare(
            snap,
            then,
            &touched,
            &format!("held snapshot {k} at the end"),
        )?;
    }
    fib.flush().map_err(|e| format!("final flush: {e}"))?;
    compare(
        &reader.snapshot(),
        &model,
        &touched,
        "after the final flush",
    )
}
