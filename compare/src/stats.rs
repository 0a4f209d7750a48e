//! The statistics of the suite: medians, and for `compare check` a bootstrap
//! confidence interval for the ratio of two medians and the verdict the
//! Criterion rule draws from it (a change counts only when the whole
//! interval lies beyond the threshold).

/// Resamples per interval: enough for stable 95% bounds.
pub const RESAMPLES: usize = 10_000;

/// The ratio candidate / baseline of the medians, and its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
}

/// Bootstraps the ratio of medians: each resample draws every side's runs
/// with replacement; the interval is the central `confidence` of the
/// resampled ratios. `seed` makes it repeatable.
pub fn ratio_of_medians(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
    seed: u64,
) -> Option<Interval> {
    let ratio = median(candidate)? / median(baseline)?;
    let (baseline, candidate) = (Sorted::new(baseline), Sorted::new(candidate));
    let mut draw = Resample::new(seed);
    let ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| draw.median(&candidate) / draw.median(&baseline))
        .collect();
    let (low, high) = central(ratios, confidence);
    Some(Interval { ratio, low, high })
}

/// Pairs the runs of the two sides in order (a run of each per round, the
/// rounds interleaved), and bootstraps the median of the pairs' ratios: what
/// drifts between rounds hits both runs of a pair alike and cancels.
pub fn paired_ratio(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
    seed: u64,
) -> Option<Interval> {
    let ratios: Vec<f64> = baseline.iter().zip(candidate).map(|(b, c)| c / b).collect();
    let ratio = median(&ratios)?;
    let ratios = Sorted::new(&ratios);
    let mut draw = Resample::new(seed);
    let medians: Vec<f64> = (0..RESAMPLES).map(|_| draw.median(&ratios)).collect();
    let (low, high) = central(medians, confidence);
    Some(Interval { ratio, low, high })
}

/// One side's values in ascending order, and where each value stands
/// among them: a resample's median is read from its places, unsorted.
struct Sorted {
    values: Vec<f64>,
    /// `place[i]`: the index in `values` of the sample's value `i`.
    place: Vec<usize>,
}

impl Sorted {
    fn new(sample: &[f64]) -> Self {
        let mut order: Vec<usize> = (0..sample.len()).collect();
        order.sort_by(|&a, &b| sample[a].total_cmp(&sample[b]));
        let mut place = vec![0; sample.len()];
        for (at, &i) in order.iter().enumerate() {
            place[i] = at;
        }
        Self {
            values: order.iter().map(|&i| sample[i]).collect(),
            place,
        }
    }
}

/// Draws samples again, with replacement: a bootstrap takes tens of
/// thousands of medians. Each draw counts how often each place was drawn,
/// so a median costs no sort and no allocation: in the tests' unoptimised
/// builds, sorting every resample was most of what rendering a report took.
struct Resample {
    rng: fastrand::Rng,
    /// `drawn[at]`: how often the value at `at` of the sorted sample was drawn.
    drawn: Vec<usize>,
}

impl Resample {
    fn new(seed: u64) -> Self {
        Self {
            rng: fastrand::Rng::with_seed(seed),
            drawn: Vec::new(),
        }
    }

    /// The median of `sample` drawn again, as many, with replacement: the
    /// same draws, and the same median, as sorting the drawn values.
    fn median(&mut self, sample: &Sorted) -> f64 {
        let n = sample.values.len();
        self.drawn.clear();
        self.drawn.resize(n, 0);
        for _ in 0..n {
            self.drawn[sample.place[self.rng.usize(..n)]] += 1;
        }
        // The `k`th smallest drawn value, counting from 0.
        let nth = |k: usize| {
            let mut seen = 0;
            let at = self.drawn.iter().position(|&times| {
                seen += times;
                seen > k
            });
            sample.values[at.expect("k is under the draws' count")]
        };
        let mid = n / 2;
        if n % 2 == 1 {
            nth(mid)
        } else {
            (nth(mid - 1) + nth(mid)) / 2.0
        }
    }
}

/// The central `confidence` of bootstrap draws.
fn central(mut draws: Vec<f64>, confidence: f64) -> (f64, f64) {
    let tail = (1.0 - confidence) / 2.0;
    let last = draws.len() - 1;
    let mut at = |q: f64| {
        let index = ((q * draws.len() as f64) as usize).min(last);
        *draws.select_nth_unstable_by(index, f64::total_cmp).1
    };
    (at(tail), at(1.0 - tail))
}

/// The upper interquartile fence, Q3 + 1.5 (Q3 - Q1), with quartiles
/// interpolated between order statistics: beyond it lies an outlier (Tukey;
/// rustc-perf's significance threshold over past changes). None of fewer
/// than two values.
pub fn upper_fence(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.len() < 2 {
        return None;
    }
    let quartile = |q: f64| {
        let at = q * (v.len() - 1) as f64;
        let (low, high) = (at.floor() as usize, at.ceil() as usize);
        v[low] + (v[high] - v[low]) * (at - low as f64)
    };
    let (q1, q3) = (quartile(0.25), quartile(0.75));
    Some(q3 + 1.5 * (q3 - q1))
}

/// The steps of a series (a cell's medians, run after run): the places
/// where it moves from one level to another, found by binary segmentation.
/// The best split of a stretch is the one that fits two levels best (the
/// least sum of each side's absolute deviations from its median, as a
/// piecewise-constant fit does); it is a step when the two sides' medians
/// differ by more than the noise of the stretch (the upper fence of the
/// changes between consecutive values on either side), and never by less
/// than `floor`, a fraction. Each side keeps at least `fewest` values.
/// Returns the first index after each step, in order.
pub fn steps(series: &[f64], fewest: usize, floor: f64) -> Vec<usize> {
    let fewest = fewest.max(2);
    let mut found = Vec::new();
    let mut stretches = vec![(0, series.len())];
    while let Some((start, end)) = stretches.pop() {
        let Some(at) = best_split(&series[start..end], fewest, floor) else {
            continue;
        };
        found.push(start + at);
        stretches.push((start, start + at));
        stretches.push((start + at, end));
    }
    found.sort_unstable();
    found
}

/// The split of `v` that is a step, if any (see [`steps`]).
fn best_split(v: &[f64], fewest: usize, floor: f64) -> Option<usize> {
    let change = |a: f64, b: f64| (b / a - 1.0).abs();
    let misfit = |side: &[f64]| {
        let level = median(side).unwrap_or(0.0);
        side.iter().map(|x| (x - level).abs()).sum::<f64>()
    };
    let at = (fewest..=v.len().checked_sub(fewest)?).min_by(|&a, &b| {
        let cost = |at: usize| misfit(&v[..at]) + misfit(&v[at..]);
        cost(a).total_cmp(&cost(b))
    })?;
    let size = change(median(&v[..at])?, median(&v[at..])?);
    let within: Vec<f64> = [&v[..at], &v[at..]]
        .iter()
        .flat_map(|side| side.windows(2).map(|w| change(w[0], w[1])))
        .collect();
    let noise = upper_fence(&within).unwrap_or(0.0).max(floor);
    (size > noise).then_some(at)
}

/// The median: the middle value, or the mean of the two middle ones; none of nothing.
pub fn median(values: &[f64]) -> Option<f64> {
    middle(&mut values.to_vec())
}

/// The median of `v`, which it sorts.
fn middle(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[mid]),
        _ => Some((v[mid - 1] + v[mid]) / 2.0),
    }
}

/// The distribution-free interval of the median of `values`: the pair of
/// order statistics x(k), x(n+1-k) with the largest k whose coverage is at
/// least `confidence` (binomial, no assumption about the distribution), and
/// that coverage. With too few values for `confidence` (fewer than 6 for
/// 95%), the range [min, max] and its lower coverage.
pub fn median_interval(values: &[f64], confidence: f64) -> Option<(f64, f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return None;
    }
    // P(X <= j) for X ~ Binomial(n, 1/2), j = 0..n.
    let mut cumulative = Vec::with_capacity(n + 1);
    let (mut choose, mut sum) = (1.0f64, 0.0);
    for j in 0..=n {
        if j > 0 {
            choose *= (n + 1 - j) as f64 / j as f64;
        }
        sum += choose;
        cumulative.push(sum / 2f64.powi(n as i32));
    }
    let coverage = |k: usize| 1.0 - 2.0 * cumulative[k - 1];
    let k = (1..=n.div_ceil(2))
        .rev()
        .find(|&k| coverage(k) >= confidence)
        .unwrap_or(1);
    Some((v[k - 1], v[n - k], coverage(k)))
}

/// Two modes in `values`, as each cluster's median, where the runs fall
/// into two groups of at least two, apart by at least 15% of the median and
/// by at least twice the width of either group: a cell whose median would
/// flip between states rather than a noisy one.
pub fn modes(values: &[f64]) -> Option<[f64; 2]> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.len() < 4 {
        return None;
    }
    let all = median(&v)?;
    let split =
        (2..=v.len() - 2).max_by(|&a, &b| (v[a] - v[a - 1]).total_cmp(&(v[b] - v[b - 1])))?;
    let (low, high) = v.split_at(split);
    let gap = high[0] - low[low.len() - 1];
    let width = (low[low.len() - 1] - low[0]).max(high[high.len() - 1] - high[0]);
    (gap >= 0.15 * all && gap >= 2.0 * width)
        .then(|| [median(low), median(high)].map(Option::unwrap))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Regressed,
    NoChange,
    Improved,
}

impl Verdict {
    /// How tables and messages say it: a regression stands out.
    pub fn word(self) -> &'static str {
        match self {
            Self::Regressed => "REGRESSED",
            Self::NoChange => "no change",
            Self::Improved => "improved",
        }
    }

    /// The Criterion rule: regressed or improved only when the whole interval
    /// lies beyond `threshold` (0.05 for 5%) in that direction.
    pub fn of(interval: Interval, threshold: f64, bigger_is_better: bool) -> Self {
        let (worse, better) = if bigger_is_better {
            (
                interval.high < 1.0 - threshold,
                interval.low > 1.0 + threshold,
            )
        } else {
            (
                interval.low > 1.0 + threshold,
                interval.high < 1.0 - threshold,
            )
        };
        match (worse, better) {
            (true, _) => Self::Regressed,
            (_, true) => Self::Improved,
            _ => Self::NoChange,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_found_near_where_it_is_and_noise_makes_none() {
        let step = [
            100.0, 102.0, 99.0, 101.0, 100.0, 80.0, 82.0, 79.0, 81.0, 80.0,
        ];
        assert_eq!(steps(&step, 3, 0.01), [5]);
        // Two steps, down then back up.
        let two = [
            100.0, 101.0, 99.0, 100.0, 70.0, 71.0, 69.0, 70.0, 100.0, 99.0, 101.0,
        ];
        assert_eq!(steps(&two, 3, 0.01), [4, 8]);
        // Noise of +-10% around one level: no step.
        let noise = [
            100.0, 110.0, 92.0, 106.0, 95.0, 109.0, 93.0, 104.0, 97.0, 108.0,
        ];
        assert!(
            steps(&noise, 3, 0.01).is_empty(),
            "{:?}",
            steps(&noise, 3, 0.01)
        );
        // A level that stays within the floor: no step, however quiet.
        let quiet = [100.0, 100.0, 100.0, 100.5, 100.5, 100.5];
        assert!(steps(&quiet, 3, 0.01).is_empty());
        assert!(steps(&step[..5], 3, 0.01).is_empty());
    }

    #[test]
    fn the_upper_fence_is_tukeys() {
        // Quartiles of 1..=9 are 3 and 7: the fence is 7 + 1.5 * 4.
        let values: Vec<f64> = (1..=9).rev().map(f64::from).collect();
        assert_eq!(upper_fence(&values), Some(13.0));
        assert_eq!(upper_fence(&[2.0, 4.0]), Some(3.5 + 1.5 * 1.0));
        assert_eq!(upper_fence(&[1.0]), None);
    }

    /// `n` runs around `mean` with a relative standard deviation `noise`.
    fn runs(rng: &mut fastrand::Rng, n: usize, mean: f64, noise: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                // Box-Muller: a normal draw from two uniform ones.
                let (u, v) = (rng.f64().max(1e-12), rng.f64());
                let z = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                mean * (1.0 + noise * z)
            })
            .collect()
    }

    /// How often each verdict comes out over `trials` seeded comparisons.
    fn rates(trials: usize, n: usize, change: f64, noise: f64) -> [f64; 3] {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut counts = [0usize; 3];
        for trial in 0..trials {
            let baseline = runs(&mut rng, n, 1000.0, noise);
            let candidate = runs(&mut rng, n, 1000.0 * (1.0 + change), noise);
            let interval = ratio_of_medians(&baseline, &candidate, 0.95, trial as u64).unwrap();
            counts[Verdict::of(interval, 0.05, true) as usize] += 1;
        }
        counts.map(|c| c as f64 / trials as f64)
    }

    #[test]
    fn a_and_a_reports_no_change_at_this_machines_noise() {
        // Runs of one cell moved by about 10% here: noise of 10% (one
        // standard deviation) is that or worse. Measured: no change in 97.75%
        // of trials with 3 runs, 100% with 5.
        for n in [3, 5] {
            let [regressed, no_change, improved] = rates(400, n, 0.0, 0.10);
            eprintln!(
                "A/A, {n} runs, 10% noise: no change {no_change}, regressed {regressed}, improved {improved}"
            );
            assert!(no_change >= 0.95, "{n} runs: no change in only {no_change}");
        }
    }

    #[test]
    fn a_true_fifteen_percent_drop_is_found() {
        // Measured: 65% with 3 runs, 72% with 5 (and never "improved").
        for (n, least) in [(3, 0.5), (5, 0.6)] {
            let [regressed, no_change, improved] = rates(400, n, -0.15, 0.05);
            eprintln!(
                "15% drop, {n} runs, 5% noise: regressed {regressed}, no change {no_change}, improved {improved}"
            );
            assert!(regressed >= least, "{n} runs: found in only {regressed}");
            assert_eq!(improved, 0.0);
        }
    }

    #[test]
    fn the_rule_needs_the_whole_interval_beyond_the_threshold() {
        let at = |low, high| Interval {
            ratio: (low + high) / 2.0,
            low,
            high,
        };
        assert_eq!(Verdict::of(at(0.80, 0.94), 0.05, true), Verdict::Regressed);
        assert_eq!(Verdict::of(at(0.80, 0.96), 0.05, true), Verdict::NoChange);
        assert_eq!(Verdict::of(at(1.06, 1.20), 0.05, true), Verdict::Improved);
        // For round-trip times up is worse.
        assert_eq!(Verdict::of(at(1.06, 1.20), 0.05, false), Verdict::Regressed);
        assert_eq!(Verdict::of(at(0.80, 0.94), 0.05, false), Verdict::Improved);
    }

    #[test]
    fn the_median_interval_is_the_order_statistics_of_its_coverage() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        // n = 10: x(2) and x(9) cover 97.9%; x(3), x(8) only 89%.
        let (low, high, coverage) = median_interval(&v, 0.95).unwrap();
        assert_eq!((low, high), (2.0, 9.0));
        assert!((coverage - (1.0 - 2.0 * 11.0 / 1024.0)).abs() < 1e-12);
        // n = 6: the range is the narrowest with 95%, at 96.9%.
        let (low, high, coverage) = median_interval(&[5.0, 1.0, 4.0, 2.0, 6.0, 3.0], 0.95).unwrap();
        assert_eq!((low, high), (1.0, 6.0));
        assert!((coverage - 0.96875).abs() < 1e-12);
        // n = 3 cannot reach 95%: the range, and what it covers.
        let (low, high, coverage) = median_interval(&[3.0, 1.0, 2.0], 0.95).unwrap();
        assert_eq!((low, high, coverage), (1.0, 3.0, 0.75));
        assert!(median_interval(&[], 0.95).is_none());
    }

    #[test]
    fn two_clusters_are_modes_and_a_spread_is_not() {
        assert_eq!(modes(&[554.0, 568.0, 936.0, 941.0]), Some([561.0, 938.5]));
        assert_eq!(
            modes(&[560.0, 940.0, 565.0, 950.0, 570.0]),
            Some([565.0, 945.0])
        );
        // One run apart is an outlier, not a mode.
        assert_eq!(modes(&[554.0, 568.0, 560.0, 936.0]), None);
        // Evenly spread: no gap stands out.
        assert_eq!(modes(&[500.0, 600.0, 700.0, 800.0, 900.0]), None);
        // Close clusters: a gap under 15% of the median.
        assert_eq!(modes(&[1000.0, 1001.0, 1100.0, 1101.0]), None);
        assert_eq!(modes(&[1.0, 2.0, 3.0]), None);
    }

    #[test]
    fn pairing_cancels_what_drifts_between_rounds() {
        // Both sides fall to half in the same rounds; the candidate is 5% slower throughout.
        let drift = [1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5];
        let baseline: Vec<f64> = drift.iter().map(|d| 1000.0 * d).collect();
        let candidate: Vec<f64> = drift.iter().map(|d| 950.0 * d).collect();
        let paired = paired_ratio(&baseline, &candidate, 0.95, 1).unwrap();
        assert!(
            (paired.ratio - 0.95).abs() < 1e-12 && (paired.high - 0.95).abs() < 1e-12,
            "{paired:?}"
        );
        assert_eq!(Verdict::of(paired, 0.02, true), Verdict::Regressed);
        // Unpaired, the drift hides it.
        let unpaired = ratio_of_medians(&baseline, &candidate, 0.95, 1).unwrap();
        assert_eq!(
            Verdict::of(unpaired, 0.02, true),
            Verdict::NoChange,
            "{unpaired:?}"
        );
    }

    #[test]
    fn a_resample_s_median_is_that_of_the_same_draws_sorted() {
        let mut rng = fastrand::Rng::with_seed(3);
        for n in 1..20 {
            // Few distinct values, so that ties are drawn too.
            let sample: Vec<f64> = (0..n).map(|_| f64::from(rng.u32(..5))).collect();
            let sorted = Sorted::new(&sample);
            let mut counted = Resample::new(n as u64);
            let mut by_hand = fastrand::Rng::with_seed(n as u64);
            for _ in 0..100 {
                let mut drawn: Vec<f64> = (0..n).map(|_| sample[by_hand.usize(..n)]).collect();
                assert_eq!(
                    counted.median(&sorted),
                    middle(&mut drawn).unwrap(),
                    "{sample:?}"
                );
            }
        }
    }

    #[test]
    fn the_interval_brackets_the_ratio_and_repeats() {
        let b = [100.0, 110.0, 90.0];
        let c = [80.0, 85.0, 75.0];
        let i = ratio_of_medians(&b, &c, 0.95, 1).unwrap();
        assert!(i.low <= i.ratio && i.ratio <= i.high, "{i:?}");
        assert_eq!(i.ratio, 0.8);
        assert_eq!(Some(i), ratio_of_medians(&b, &c, 0.95, 1));
        assert!(ratio_of_medians(&[], &c, 0.95, 1).is_none());
    }
}
