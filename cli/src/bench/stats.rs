//! Order statistics of the benchmarks' samples: medians resist other tenants of the machine
//! better than means.

/// The value at quantile `q` (0 to 1) of `sorted`, which must be in increasing order; NaN
/// when it is empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let at = ((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(at).copied().unwrap_or(f64::NAN)
}

/// `values` in increasing order.
pub fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

/// The median of `values` (the upper one of an even count); NaN when there are none.
pub fn median(values: Vec<f64>) -> f64 {
    quantile(&sorted(values), 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_unsorted_samples() {
        let values = sorted((1..=100).rev().map(f64::from).collect());
        assert_eq!(quantile(&values, 0.5), 51.0);
        assert_eq!(quantile(&values, 0.99), 100.0);
        assert_eq!(quantile(&values, 1.0), 100.0);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert!(median(Vec::new()).is_nan());
    }
}
