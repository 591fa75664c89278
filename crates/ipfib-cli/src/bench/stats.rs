//! Order statistics of the timed passes and of the latency samples.
//!
//! Quantiles interpolate linearly between order statistics (Hyndman and
//! Fan's type 7, numpy's and R's default): the quantile `p` of sorted
//! `v[0..n]` sits at position `h = (n - 1) p`, between `v[floor h]` and
//! `v[floor h + 1]`. So the median of an even count is the mean of the two
//! middle values, and quartiles of tiny samples stay inside their range.

use serde::{Deserialize, Serialize};

/// Five-number summary (and IQR) of a sample, e.g. MLPS per timed pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
}

impl Summary {
    /// Summary of `values` (any order; NaN sorts last); all zero when empty.
    pub fn of(mut values: Vec<f64>) -> Summary {
        values.sort_by(f64::total_cmp);
        Summary {
            min: quantile(&values, 0.0),
            q1: quantile(&values, 0.25),
            median: quantile(&values, 0.5),
            q3: quantile(&values, 0.75),
            max: quantile(&values, 1.0),
        }
    }

    /// Interquartile range, `q3 - q1`.
    pub fn iqr(&self) -> f64 {
        self.q3 - self.q1
    }
}

/// Quantile `p` (0 to 1) of an ascending slice, linearly interpolated;
/// 0 for an empty slice.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    let Some(&last) = sorted.last() else {
        return 0.0;
    };
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    match sorted.get(lo + 1) {
        Some(&next) => sorted[lo] + (h - lo as f64) * (next - sorted[lo]),
        None => last,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn odd_count() {
        // Shuffled on purpose: Summary sorts.
        let s = Summary::of(vec![5.0, 1.0, 4.0, 2.0, 3.0]);
        assert_eq!(
            (s.min, s.q1, s.median, s.q3, s.max),
            (1.0, 2.0, 3.0, 4.0, 5.0)
        );
        assert_eq!(s.iqr(), 2.0);
        // Seven values: h = 1.5 and 4.5.
        let s = Summary::of(vec![10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]);
        assert!(close(s.q1, 25.0) && close(s.median, 40.0) && close(s.q3, 55.0));
    }

    #[test]
    fn even_count() {
        // numpy.percentile([1, 2, 3, 4], [25, 50, 75]) = 1.75, 2.5, 3.25
        let s = Summary::of(vec![4.0, 3.0, 2.0, 1.0]);
        assert!(close(s.q1, 1.75) && close(s.median, 2.5) && close(s.q3, 3.25));
        assert!(close(s.iqr(), 1.5));
        assert_eq!((s.min, s.max), (1.0, 4.0));
        // Six values: h = 1.25, 2.5, 3.75.
        let s = Summary::of(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0]);
        assert!(close(s.q1, 2.5) && close(s.median, 6.0) && close(s.q3, 14.0));
    }

    #[test]
    fn one_two_and_none() {
        let s = Summary::of(vec![7.5]);
        assert_eq!(
            (s.min, s.q1, s.median, s.q3, s.max),
            (7.5, 7.5, 7.5, 7.5, 7.5)
        );
        assert_eq!(s.iqr(), 0.0);
        let s = Summary::of(vec![2.0, 1.0]);
        assert!(close(s.q1, 1.25) && close(s.median, 1.5) && close(s.q3, 1.75));
        assert_eq!(Summary::of(Vec::new()), Summary::default());
        assert_eq!(quantile(&[1.0, 2.0, 3.0], 0.99), 2.98);
    }
}
