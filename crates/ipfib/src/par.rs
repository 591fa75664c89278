//! Bulk lookups on every core: the input cut into contiguous shares, one
//! scoped thread per share, every thread reading the same immutable table
//! and writing its own disjoint part of the output.
//!
//! Nothing is shared but the table (read-only) and the input (read-only):
//! no lock, no atomic, no cache line written by two threads (the shares'
//! output slices meet at most in one line at each cut). The answers are
//! those of one thread, whatever the thread count.
//!
//! A share is at least [`MIN_SHARE`] addresses: starting a thread costs
//! tens of microseconds, about what 64K batch lookups take, so small calls
//! stay on the calling thread. [`Compiled::lookup_batch_par`] is the Rust
//! entry; the Python `threads=` arguments and the C ABI's `_mt` batch
//! calls use the same cut.
//!
//! [`Compiled::lookup_batch_par`]: crate::compiled::Compiled::lookup_batch_par

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The fewest addresses one thread is given.
pub const MIN_SHARE: usize = 1 << 16;

/// The most threads one call starts.
pub const MAX_THREADS: usize = 256;

/// A requested thread count made real: 0 means one per CPU this process
/// may run on; at most [`MAX_THREADS`].
///
/// ```
/// use ipfib::par::{thread_count, MAX_THREADS};
/// assert_eq!(thread_count(3), 3);
/// assert!(thread_count(0) >= 1);
/// assert_eq!(thread_count(usize::MAX), MAX_THREADS);
/// ```
pub fn thread_count(threads: usize) -> usize {
    let t = if threads == 0 { cpus() } else { threads };
    t.min(MAX_THREADS)
}

/// The CPUs this process may run on, asked once (`available_parallelism`
/// reads the affinity mask and the cgroup quota files: tens of
/// microseconds a call).
pub fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Where each share of `n` items starts, then `n`: at most `threads`
/// shares (see [`thread_count`]), each of at least [`MIN_SHARE`] items
/// (one share when there are fewer), sizes differing by at most one.
///
/// ```
/// use ipfib::par::{shares, MIN_SHARE};
/// assert_eq!(shares(10, 4), [0, 10]);
/// assert_eq!(shares(3 * MIN_SHARE + 2, 3), [0, MIN_SHARE + 1, 2 * MIN_SHARE + 2, 3 * MIN_SHARE + 2]);
/// assert_eq!(shares(0, 8), [0, 0]);
/// ```
pub fn shares(n: usize, threads: usize) -> Vec<usize> {
    if n < 2 * MIN_SHARE {
        return vec![0, n];
    }
    let k = thread_count(threads).min(n / MIN_SHARE).max(1);
    (0..=k).map(|i| n / k * i + (n % k).min(i)).collect()
}

/// Cut `out` into the shares of [`shares`]`(out.len(), threads)` and call
/// `f(start, part)` once for each, `part` being
/// `out[start..start + part.len()]` (see [`run_shares`] for the threads).
///
/// ```
/// let mut out = vec![0usize; 300_000];
/// ipfib::par::split_run(&mut out, 4, |start, part| {
///     for (i, o) in part.iter_mut().enumerate() {
///         *o = start + i;
///     }
/// });
/// assert!(out.iter().enumerate().all(|(i, &o)| o == i));
/// ```
pub fn split_run<U: Send>(out: &mut [U], threads: usize, f: impl Fn(usize, &mut [U]) + Sync) {
    let cuts = shares(out.len(), threads);
    let mut parts = Vec::with_capacity(cuts.len() - 1);
    let mut rest = out;
    for w in cuts.windows(2) {
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
        parts.push((w[0], part));
        rest = tail;
    }
    run_shares(parts, |(start, part)| f(start, part));
}

/// `f(part)` for every part, the results in the parts' order: the first
/// part on the calling thread, and one scoped thread per other part
/// ("ipfib-lookup"). The threads take parts from a common counter, so a
/// thread the system refuses only means the others (the calling thread
/// at least) answer its part. A panic in `f` is raised again here once
/// every thread has ended.
pub fn run_shares<P: Send, R: Send>(parts: Vec<P>, f: impl Fn(P) -> R + Sync) -> Vec<R> {
    run_shares_with(parts, f, |_| true)
}

/// [`run_shares`], starting the thread for part `i` only when
/// `try_start(i)` (tests: threads the system refuses).
fn run_shares_with<P: Send, R: Send>(
    parts: Vec<P>,
    f: impl Fn(P) -> R + Sync,
    try_start: impl Fn(usize) -> bool,
) -> Vec<R> {
    if parts.len() <= 1 {
        return parts.into_iter().map(f).collect();
    }
    let cells: Vec<Mutex<(Option<P>, Option<R>)>> = parts
        .into_iter()
        .map(|p| Mutex::new((Some(p), None)))
        .collect();
    let next = AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(cell) = cells.get(i) else { break };
        // Each part is taken once (the counter hands every index out
        // once), so the lock is never contended; `f` runs with no guard
        // held, so a panic in it poisons nothing.
        let taken = cell.lock().map(|mut g| g.0.take()).unwrap_or(None);
        if let Some(p) = taken {
            let r = f(p);
            if let Ok(mut g) = cell.lock() {
                g.1 = Some(r);
            }
        }
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..cells.len())
            .filter(|&i| try_start(i))
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("ipfib-lookup".into())
                    .spawn_scoped(s, work)
                    .ok()
            })
            .collect();
        work();
        let mut panic = None;
        for h in handles {
            if let Err(p) = h.join() {
                panic.get_or_insert(p);
            }
        }
        if let Some(p) = panic {
            std::panic::resume_unwind(p);
        }
    });
    cells
        .into_iter()
        .map(|c| {
            c.into_inner()
                .ok()
                .and_then(|(_, r)| r)
                .expect("every part answered (a panic was raised above)")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_the_input_in_order() {
        for n in [
            0,
            1,
            MIN_SHARE - 1,
            MIN_SHARE,
            2 * MIN_SHARE - 1,
            2 * MIN_SHARE,
            1 << 20,
            (1 << 20) + 3,
        ] {
            for threads in [1, 2, 3, 7, 64, 1000] {
                let c = shares(n, threads);
                let k = c.len() - 1;
                assert_eq!((c[0], c[k]), (0, n));
                assert!(k >= 1 && k <= threads.min(MAX_THREADS));
                assert!(c.windows(2).all(|w| w[0] <= w[1]));
                let sizes: Vec<_> = c.windows(2).map(|w| w[1] - w[0]).collect();
                if k > 1 {
                    assert!(
                        sizes.iter().all(|&s| s >= MIN_SHARE),
                        "{n} {threads}: {sizes:?}"
                    );
                }
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= 1);
                // As many shares as allowed: one more would be too small.
                assert!(k == threads.min(MAX_THREADS) || n / (k + 1) < MIN_SHARE);
            }
        }
    }

    /// Threads the system refuses: the others (the calling thread at
    /// least) answer their parts, every part once, in order.
    #[test]
    fn refused_threads_leave_no_part_unanswered() {
        for started in [0usize, 1, 3] {
            let parts: Vec<usize> = (0..6).collect();
            let calls = AtomicUsize::new(0);
            let got = run_shares_with(
                parts,
                |p| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    p * 10
                },
                |i| i <= started,
            );
            assert_eq!(got, [0, 10, 20, 30, 40, 50], "{started} started");
            assert_eq!(calls.load(Ordering::Relaxed), 6);
        }
    }

    #[test]
    fn every_share_answered_once_and_a_panic_comes_back() {
        let mut out = vec![0u8; 5 * MIN_SHARE];
        split_run(&mut out, 5, |_, part| part.iter_mut().for_each(|o| *o += 1));
        assert!(out.iter().all(|&o| o == 1));
        let r = std::panic::catch_unwind(|| {
            let mut out = vec![0u8; 4 * MIN_SHARE];
            split_run(&mut out, 4, |start, _| {
                assert!(start < 3 * MIN_SHARE, "last share")
            });
        });
        let msg = r.unwrap_err();
        assert_eq!(msg.downcast_ref::<&str>(), Some(&"last share"));
    }
}
