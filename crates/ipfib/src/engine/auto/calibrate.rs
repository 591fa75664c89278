//! `auto`'s second step: every candidate built and timed on two seeded
//! samples of the table, single lookups and batches apart; the winners
//! kept.

use super::choice::Choice;
use super::options::AutoOptions;
use crate::engine::kind::{label, Kind, Pick};
use crate::engine::poptrie::PoptrieError;
use crate::engine::registry::{AutoError, Built};
use crate::engine::Family;
use crate::intervals::Intervals;

/// Tables with fewer intervals take the family default without timing:
/// every candidate then fits in L2 and answers within a few nanoseconds,
/// while a calibration costs about 10 ms, more than the build itself
/// (and the bindings rebuild small tables often).
///
/// ```
/// use ipfib::engine::auto::{AutoEngine, AutoOptions, MIN_CALIBRATED_INTERVALS};
/// use ipfib::engine::Engine;
/// let iv = ipfib::intervals::compile::<u32>([]);
/// assert!(iv.len() < MIN_CALIBRATED_INTERVALS);
/// let e = AutoEngine::build(&iv, &AutoOptions::default())?; // calibrate: true, but
/// assert!(e.choice().reason.contains("too small to be worth timing"));
/// # Ok::<(), ipfib::engine::auto::AutoError>(())
/// ```
pub const MIN_CALIBRATED_INTERVALS: usize = 8192;

/// Addresses per calibration sample (each of the two traces).
const SAMPLE: usize = 1 << 15;
/// Passes per (engine, mode, trace) after one that warms the caches; the
/// fastest of all four counts.
const PASSES: usize = 3;

/// Seeded samples of `iv`: addresses inside intervals drawn uniformly (the
/// "matched" shape of traffic that hits routes) and uniformly random ones.
pub(super) fn samples<A: Family>(iv: &Intervals<A>) -> [Vec<A>; 2] {
    let mut rng = crate::rng::Rng::new(0x6175_746f);
    let n = iv.len() as u64;
    let matched = (0..SAMPLE)
        .map(|_| {
            let i = rng.below(n) as usize;
            let lo = iv.starts[i].to_u128();
            let hi = iv
                .starts
                .get(i + 1)
                .map_or(A::MAX.to_u128(), |s| s.to_u128() - 1);
            let span = hi - lo;
            let off = if span == u128::MAX {
                rng.next_u128()
            } else {
                rng.next_u128() % (span + 1)
            };
            A::from_u128_truncate(lo + off)
        })
        .collect();
    let uniform = (0..SAMPLE).map(|_| rng.addr()).collect();
    [matched, uniform]
}

/// Lookups per second of `e` on `addrs`: single lookups or batches of 32.
fn rate<A: Family>(e: &Built<A>, addrs: &[A], batch: bool) -> f64 {
    let mut out = vec![0u32; addrs.len()];
    let mut best = f64::INFINITY;
    for _ in 0..=PASSES {
        let t = std::time::Instant::now();
        if batch {
            e.lookup_batch::<32>(addrs, &mut out);
            std::hint::black_box(&out);
        } else {
            let mut acc = 0u32;
            for &a in addrs {
                acc = acc.wrapping_add(e.lookup(std::hint::black_box(a)));
            }
            std::hint::black_box(acc);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    addrs.len() as f64 / best.max(1e-9)
}

/// Per mode, the candidate whose worst ratio to the best rate over the two
/// samples is highest (the one furthest from being a bad choice on either
/// kind of traffic); ties go to the earlier candidate.
pub(super) fn pick_best(rates: &[[f64; 2]]) -> usize {
    let best = [0, 1].map(|t| rates.iter().map(|r| r[t]).fold(0.0, f64::max));
    let score = |r: &[f64; 2]| (r[0] / best[0]).min(r[1] / best[1]);
    let mut winner = 0;
    for (i, r) in rates.iter().enumerate() {
        if score(r) > score(&rates[winner]) {
            winner = i;
        }
    }
    winner
}

/// The engines a calibration kept, and why.
pub(super) struct Calibrated<A: Family> {
    pub(super) single: Built<A>,
    /// `None`: the single engine won batches too.
    pub(super) batch: Option<Built<A>>,
    pub(super) choice: Choice,
}

/// Build every candidate, time each on the samples, keep the winners.
pub(super) fn calibrate<A: Family>(
    iv: &Intervals<A>,
    picks: &[Pick],
    opts: &AutoOptions,
    figures: String,
) -> Result<Calibrated<A>, AutoError> {
    let [matched, uniform] = samples(iv);
    let mut built = Vec::new();
    let mut single = Vec::new();
    let mut batch = Vec::new();
    let mut skipped = Vec::new();
    for &pick in picks {
        match Built::build(iv, pick, opts) {
            Ok(e) => {
                single.push([rate(&e, &matched, false), rate(&e, &uniform, false)]);
                batch.push([rate(&e, &matched, true), rate(&e, &uniform, true)]);
                built.push((pick, e));
            }
            // A trie outgrowing its index space is a shape verdict, not
            // a failure: the other candidates remain.
            Err(AutoError::Poptrie(
                e @ (PoptrieError::TooManyNodes(_)
                | PoptrieError::TooManyEntries(_)
                | PoptrieError::TooManyLeaves(_)),
            )) => skipped.push(format!("{} not built: {e}", label(pick))),
            Err(e) => return Err(e),
        }
    }
    if built.is_empty() {
        // Only tries were tried and none fit: PlanB never outgrows them.
        let e = Built::build(iv, (Kind::PlanB, None), opts)?;
        return Ok(Calibrated {
            single: e,
            batch: None,
            choice: Choice {
                single: (Kind::PlanB, None),
                batch: (Kind::PlanB, None),
                reason: format!("{figures}; {}", skipped.join("; ")),
                intervals: iv.len(),
            },
        });
    }
    let (s, b) = (pick_best(&single), pick_best(&batch));
    let mlps = |r: [f64; 2]| format!("{:.0}/{:.0}", r[0] / 1e6, r[1] / 1e6);
    let mut measured: Vec<String> = built
        .iter()
        .enumerate()
        .map(|(i, (p, _))| {
            format!(
                "{} {} single, {} batch",
                label(*p),
                mlps(single[i]),
                mlps(batch[i])
            )
        })
        .collect();
    measured.extend(skipped);
    let choice = Choice {
        single: built[s].0,
        batch: built[b].0,
        reason: format!(
            "{figures}; calibrated, MLPS matched/uniform on {SAMPLE}-address samples: {}",
            measured.join(", ")
        ),
        intervals: iv.len(),
    };
    // Take the winners out without cloning: remove the higher index first
    // so the lower one stays where it is.
    let (single, batch) = match s.cmp(&b) {
        std::cmp::Ordering::Equal => (built.swap_remove(s).1, None),
        std::cmp::Ordering::Greater => {
            let single = built.swap_remove(s).1;
            (single, Some(built.swap_remove(b).1))
        }
        std::cmp::Ordering::Less => {
            let batch = built.swap_remove(b).1;
            (built.swap_remove(s).1, Some(batch))
        }
    };
    Ok(Calibrated {
        single,
        batch,
        choice,
    })
}
