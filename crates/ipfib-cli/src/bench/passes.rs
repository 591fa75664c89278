//! Timed passes over a trace: one discarded warm-up, then `runs` timed
//! passes, each the whole trace; on one thread, or split over worker
//! threads, each pinned to its own CPU and answering its contiguous share
//! of the trace into its share of the output (so the answers, and the
//! checksum, are the same whatever the thread count).
//!
//! With threads, every pass starts at a barrier and lasts from the first
//! thread's start to the last thread's end (the slowest thread's time
//! when they truly run in parallel; honest too when two share a CPU and
//! run one after the other): aggregate MLPS = whole trace / that time.

use super::machine::pin_to;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// One pass over `addrs`, answers into `out` (same length).
pub trait Pass<A>: Fn(&[A], &mut [u32]) + Sync {}
impl<A, F: Fn(&[A], &mut [u32]) + Sync> Pass<A> for F {}

/// MLPS of each timed pass (the warm-up is not returned).
pub fn time_passes<A: Sync>(
    runs: usize,
    trace: &[A],
    out: &mut [u32],
    cpus: &[usize],
    pass: &impl Pass<A>,
) -> Result<Vec<f64>, String> {
    let n = trace.len() as f64;
    let times = if cpus.len() <= 1 {
        (0..=runs.max(1))
            .map(|_| {
                let t0 = Instant::now();
                pass(trace, out);
                t0.elapsed()
            })
            .collect()
    } else {
        threaded(runs.max(1), trace, out, cpus, pass)?
    };
    Ok(times[1..]
        .iter()
        .map(|t| n / t.as_secs_f64().max(1e-12) / 1e6)
        .collect())
}

/// Warm-up + `runs` passes on `cpus.len()` pinned threads; per pass, the
/// first start to the last end.
fn threaded<A: Sync>(
    runs: usize,
    trace: &[A],
    out: &mut [u32],
    cpus: &[usize],
    pass: &impl Pass<A>,
) -> Result<Vec<Duration>, String> {
    let threads = cpus.len();
    let share = trace.len().div_ceil(threads).max(1);
    let barrier = Barrier::new(threads);
    let failed = AtomicBool::new(false);
    type Spans = Vec<(Instant, Instant)>;
    let per_thread: Vec<Result<Spans, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = trace
            .chunks(share)
            .zip(out.chunks_mut(share))
            .zip(cpus)
            .map(|((addrs, out), &cpu)| {
                let (barrier, failed) = (&barrier, &failed);
                s.spawn(move || {
                    let pinned = pin_to(cpu);
                    if pinned.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    // Every thread reaches this barrier, pinned or not,
                    // so none waits for a thread that gave up.
                    barrier.wait();
                    if failed.load(Ordering::SeqCst) {
                        return pinned.map(|_| Vec::new());
                    }
                    Ok((0..=runs)
                        .map(|_| {
                            barrier.wait();
                            let t0 = Instant::now();
                            pass(addrs, out);
                            (t0, Instant::now())
                        })
                        .collect())
                })
            })
            .collect();
        // A trace shorter than the thread count leaves threads without a
        // share: they still take part in every barrier.
        let idle = threads - handles.len();
        let idlers: Vec<_> = (0..idle)
            .map(|_| {
                let (barrier, failed) = (&barrier, &failed);
                s.spawn(move || {
                    barrier.wait();
                    if !failed.load(Ordering::SeqCst) {
                        for _ in 0..=runs {
                            barrier.wait();
                        }
                    }
                })
            })
            .collect();
        for h in idlers {
            let _ = h.join();
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a worker thread panicked".into()))
            })
            .collect()
    });
    let per_thread = per_thread
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--threads: cannot pin a worker thread to {e}"))?;
    Ok((0..=runs)
        .map(|i| {
            let spans = per_thread.iter().filter_map(|t| t.get(i));
            let first = spans.clone().map(|s| s.0).min();
            let last = spans.map(|s| s.1).max();
            first.zip(last).map_or(Duration::ZERO, |(a, b)| b - a)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::machine::worker_cpus;

    fn square(addrs: &[u32], out: &mut [u32]) {
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = a.wrapping_mul(a);
        }
    }

    #[test]
    fn threads_answer_like_one_thread() {
        let trace: Vec<u32> = (0..10_007).collect();
        let mut one = vec![0; trace.len()];
        let mlps = time_passes(2, &trace, &mut one, &[], &square).unwrap();
        assert_eq!(mlps.len(), 2);
        for threads in [2, 3, 7] {
            let mut many = vec![0; trace.len()];
            let cpus = worker_cpus(None, threads);
            let mlps = time_passes(3, &trace, &mut many, &cpus, &square).unwrap();
            assert_eq!(mlps.len(), 3);
            assert!(mlps.iter().all(|&m| m > 0.0));
            assert_eq!(one, many, "{threads} threads");
        }
        // Fewer addresses than threads: idle threads, same answers.
        let short = [3u32, 4];
        let mut out = [0; 2];
        time_passes(1, &short, &mut out, &worker_cpus(None, 4), &square).unwrap();
        assert_eq!(out, [9, 16]);
    }

    #[test]
    fn an_unpinnable_cpu_is_an_error_not_a_hang() {
        let trace: Vec<u32> = (0..100).collect();
        let mut out = vec![0; 100];
        let err = time_passes(1, &trace, &mut out, &[0, 100_000], &square);
        assert!(err.is_err_and(|e| e.contains("100000")));
    }
}
