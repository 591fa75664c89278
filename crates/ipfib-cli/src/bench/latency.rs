//! `--latency`: the distribution of single-lookup times in time-stamp
//! counter ticks (the Poptrie paper's Figure 10 and Table 4 measure CPU
//! cycles per lookup the same way). Each address of the sample is timed on
//! its own, the counter read with fences around the one lookup
//! ([`super::tsc`]); one untimed pass over the sample first warms the
//! caches as the throughput passes are warmed.

use super::rows::{LatencyRow, Subject};
use super::stats::quantile;
use super::tsc;
use std::hint::black_box;

/// Percentiles of the CDF kept in the JSON (`cdf_ticks[i]` = the i-th
/// percentile, 0 to 100): enough to redraw the curve.
const CDF_POINTS: usize = 101;

/// Ticks of each single lookup of `sample`, after one untimed pass.
pub fn measure<A: Copy>(sample: &[A], lookup: impl Fn(A) -> u32) -> Vec<u64> {
    for &a in sample {
        black_box(lookup(black_box(a)));
    }
    sample
        .iter()
        .map(|&a| {
            let a = black_box(a);
            let t0 = tsc::start();
            let r = lookup(a);
            let t1 = tsc::stop();
            black_box(r);
            t1.wrapping_sub(t0)
        })
        .collect()
}

/// The distribution's figures, for `id`.
pub fn summarize(id: Subject, ticks: &[u64], overhead: u64, tsc_hz: Option<f64>) -> LatencyRow {
    let mut v: Vec<f64> = ticks.iter().map(|&t| t as f64).collect();
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    LatencyRow {
        id,
        samples: v.len(),
        ticks_mean: mean,
        ticks_p50: quantile(&v, 0.50),
        ticks_p75: quantile(&v, 0.75),
        ticks_p95: quantile(&v, 0.95),
        ticks_p99: quantile(&v, 0.99),
        ticks_max: quantile(&v, 1.0),
        overhead_ticks: overhead as f64,
        ns_mean: tsc_hz.map(|hz| mean / hz * 1e9),
        cdf_ticks: (0..CDF_POINTS)
            .map(|i| quantile(&v, i as f64 / (CDF_POINTS - 1) as f64))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_ticks() {
        let ticks: Vec<u64> = (1..=100).collect();
        let r = summarize(Subject::default(), &ticks, 20, Some(2e9));
        assert_eq!(r.samples, 100);
        assert_eq!(r.ticks_mean, 50.5);
        assert_eq!(r.ticks_p50, 50.5);
        assert_eq!(r.ticks_max, 100.0);
        assert!((r.ticks_p99 - 99.01).abs() < 1e-9);
        assert_eq!(r.cdf_ticks.len(), 101);
        assert_eq!((r.cdf_ticks[0], r.cdf_ticks[100]), (1.0, 100.0));
        assert!(r.cdf_ticks.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(r.ns_mean, Some(50.5 / 2.0));
        assert_eq!(r.overhead_ticks, 20.0);
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn measures_every_lookup() {
        let sample: Vec<u32> = (0..1000).collect();
        let ticks = measure(&sample, |a| a.count_ones());
        assert_eq!(ticks.len(), 1000);
        // The counter moves forward (no figure is a wrapped negative).
        assert!(ticks.iter().all(|&t| t < 1 << 40));
    }
}
