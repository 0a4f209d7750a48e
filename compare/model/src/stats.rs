//! The statistics of the suite: medians, and for `compare check` a bootstrap
//! confidence interval for the ratio of two medians and the verdict the
//! Criterion rule draws from it (a change counts only when the whole
//! interval lies beyond the threshold).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The ratio candidate / baseline of the medians, and its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
}

/// Bootstraps the ratio of medians: each resample draws every side's runs
/// with replacement; the interval is the central `confidence` of the
/// resampled ratios. The resampled medians' law is computed, not drawn:
/// the interval that ever more resamples approach, with no resampling
/// error, and none of their time (10,000 resamples of each of the 880
/// figures of a comparison took 0.7 s of a core).
pub fn ratio_of_medians(baseline: &[f64], candidate: &[f64], confidence: f64) -> Option<Interval> {
    let ratio = median(candidate)? / median(baseline)?;
    let (b, c) = (resampled_median(baseline), resampled_median(candidate));
    let tail = (1.0 - confidence) / 2.0;
    Some(Interval {
        ratio,
        low: passed(ratios(&c, &b, true), tail),
        high: passed(ratios(&c, &b, false), tail),
    })
}

/// Pairs the runs of the two sides in order (a run of each per round, the
/// rounds interleaved), and bootstraps the median of the pairs' ratios: what
/// drifts between rounds hits both runs of a pair alike and cancels.
pub fn paired_ratio(baseline: &[f64], candidate: &[f64], confidence: f64) -> Option<Interval> {
    let ratios: Vec<f64> = baseline.iter().zip(candidate).map(|(b, c)| c / b).collect();
    let ratio = median(&ratios)?;
    let law = resampled_median(&ratios);
    let tail = (1.0 - confidence) / 2.0;
    Some(Interval {
        ratio,
        low: passed(law.iter().copied(), tail),
        high: passed(law.iter().rev().copied(), tail),
    })
}

/// The change from one sample to another in logarithms, as Yuen's
/// trimmed form of Student's t test sees it: its estimate, its standard
/// error and the degrees of freedom of that error. In logarithms a change
/// is a ratio, and the rounds' ratios of a paired run are near normal
/// there: 22,752 checks of a figure between two neutral releases of the
/// committed tokio sweep (six rounds, nothing trimmed) fell beyond t's 0.1%
/// and 0.01% points as often as t says (0.05% and 0.018%). A long run's
/// ratios have heavy tails on a shared VM (a round in a hundred off by half
/// or more), so a tenth of each end is trimmed from ten rounds on: the
/// estimate is the trimmed mean and its error comes from the winsorized
/// variance (Yuen 1974); under ten rounds this is Student's t exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogChange {
    pub estimate: f64,
    pub error: f64,
    pub freedom: f64,
}

impl LogChange {
    /// Paired: the rounds' log ratios, each round a run of each side;
    /// none with fewer than two rounds.
    pub fn paired(baseline: &[f64], candidate: &[f64]) -> Option<Self> {
        let ratios: Vec<f64> = baseline
            .iter()
            .zip(candidate)
            .map(|(b, c)| (c / b).ln())
            .collect();
        let one = Trimmed::of(&ratios)?;
        Some(Self {
            estimate: one.mean,
            error: one.squared_error.sqrt(),
            freedom: one.freedom,
        })
    }

    /// Unpaired (Welch's form): the difference of the sides' mean
    /// logarithms, each side's variance its own; none with fewer than two
    /// runs a side.
    pub fn unpaired(baseline: &[f64], candidate: &[f64]) -> Option<Self> {
        let logs = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<f64>>();
        let (b, c) = (
            Trimmed::of(&logs(baseline))?,
            Trimmed::of(&logs(candidate))?,
        );
        let squared_error = b.squared_error + c.squared_error;
        let parts = b.squared_error.powi(2) / b.freedom + c.squared_error.powi(2) / c.freedom;
        Some(Self {
            estimate: c.mean - b.mean,
            error: squared_error.sqrt(),
            // Both variances none: no error, and the freedom does not matter.
            freedom: if parts > 0.0 {
                squared_error.powi(2) / parts
            } else {
                1.0
            },
        })
    }

    /// The chance of an estimate this far beyond `threshold` (0.03: 3%) in
    /// one direction, up (the ratio past 1 + threshold) or down (under
    /// 1 - threshold), were the true change exactly at it: the one-sided p
    /// value of "changed by more than the threshold". A change measured
    /// without error is beyond it or not.
    pub fn beyond(&self, threshold: f64, up: bool) -> f64 {
        let distance = match up {
            true => self.estimate - threshold.ln_1p(),
            // A threshold learned from a wild history can be 100% or more:
            // no positive figure falls that far.
            false if threshold >= 1.0 => return 1.0,
            false => (-threshold).ln_1p() - self.estimate,
        };
        if self.error == 0.0 || !self.error.is_finite() {
            return if distance > 0.0 { 0.0 } else { 1.0 };
        }
        let t = StudentsT::new(0.0, 1.0, self.freedom).expect("a positive freedom");
        t.sf(distance / self.error)
    }
}

/// One sample's trimmed mean, the squared standard error of it and that
/// error's degrees of freedom.
struct Trimmed {
    mean: f64,
    squared_error: f64,
    freedom: f64,
}

impl Trimmed {
    /// The share of each end trimmed, as many values as it takes whole.
    const TRIM: f64 = 0.1;

    /// None of fewer than two values.
    fn of(values: &[f64]) -> Option<Self> {
        let n = values.len();
        if n < 2 {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let cut = (Self::TRIM * n as f64).floor() as usize;
        let kept = &sorted[cut..n - cut];
        let h = kept.len() as f64;
        let mean = kept.iter().sum::<f64>() / h;
        // Winsorized: each trimmed value counts as the nearest one kept.
        let (low, high) = (kept[0], kept[kept.len() - 1]);
        let winsorized: Vec<f64> = sorted.iter().map(|v| v.clamp(low, high)).collect();
        let centre = winsorized.iter().sum::<f64>() / n as f64;
        let squares: f64 = winsorized.iter().map(|v| (v - centre).powi(2)).sum();
        Some(Self {
            mean,
            squared_error: squares / (h * (h - 1.0)),
            freedom: h - 1.0,
        })
    }
}

/// Holm's rule over a family of tests: which of the p values `p` hold
/// with at most `alpha` chance that any true null among them is rejected.
/// The smallest is held against alpha / m, the next against alpha / (m -
/// 1), and so on until one is not; that one and every larger fails.
pub fn holm(p: &[f64], alpha: f64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut held = vec![false; p.len()];
    for (rank, &i) in order.iter().enumerate() {
        if p[i] > alpha / (p.len() - rank) as f64 {
            break;
        }
        held[i] = true;
    }
    held
}

/// Where a walk through a law's atoms (value, probability) from one end
/// passes `tail` of its mass: a bound of its central interval, the value
/// that sorted resamples hold at that fraction from their end.
fn passed(atoms: impl Iterator<Item = (f64, f64)>, tail: f64) -> f64 {
    let mut sum = 0.0;
    let mut last = None;
    for (value, p) in atoms {
        (sum, last) = (sum + p, Some(value));
        if sum > tail {
            break;
        }
    }
    last.expect("a law has atoms")
}

/// The ratios c / b of the atoms of two laws sorted by value, each with
/// its probability, from the least up or from the greatest down: their
/// product walked only as far as it is taken, a heap holding each c's
/// next ratio (at twelve runs a side, sorting all 6,084 was most of a
/// verdict's time). Every value is positive (a rate, a time or a floored
/// count), so each c's ratios fall as b grows.
fn ratios<'a>(
    c: &'a [(f64, f64)],
    b: &'a [(f64, f64)],
    up: bool,
) -> impl Iterator<Item = (f64, f64)> + 'a {
    let last = b.len() - 1;
    let step = move |i: usize, j: usize| {
        let ratio = c[i].0 / b[j].0;
        Step {
            order: Total(if up { -ratio } else { ratio }),
            i,
            j,
        }
    };
    let start = if up { last } else { 0 };
    let mut heap: BinaryHeap<Step> = (0..c.len()).map(|i| step(i, start)).collect();
    std::iter::from_fn(move || {
        let Step { i, j, .. } = heap.pop()?;
        let further = match up {
            true => j.checked_sub(1),
            false => (j < last).then_some(j + 1),
        };
        if let Some(further) = further {
            heap.push(step(i, further));
        }
        Some((c[i].0 / b[j].0, c[i].1 * b[j].1))
    })
}

/// A ratio of [`ratios`]' heap, first out the greatest `order`.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Step {
    order: Total,
    /// Its atoms of c and of b.
    i: usize,
    j: usize,
}

/// Atoms of a resampled median's law, less likely than this, are left out:
/// from a few dozen runs on they are most of the atoms, and their mass is
/// far too small to move a bound.
const NEGLIGIBLE: f64 = 1e-12;

/// The law of the median of `sample` drawn again with replacement, as many
/// values as it has: each value that median can take, with its probability.
/// With `n` values sorted, x(0) to x(n-1), and the draws counted by the
/// place of the value drawn, the `r`th smallest draw is at most x(k) when
/// at least `r` draws fall at places up to `k`, a binomial count. For odd
/// `n` the median is the middle draw; for even `n`, the mean of the middle
/// two, x(i) and x(j) with i < j just when exactly `n/2` draws fall at
/// places up to `i`, none between, and at least one at `j`: a multinomial
/// that factors into the two halves. At most n(n+1)/2 atoms, by value.
fn resampled_median(sample: &[f64]) -> Vec<(f64, f64)> {
    let mut x = sample.to_vec();
    x.sort_by(f64::total_cmp);
    let n = x.len();
    let draws = Binomial::new(n);
    // P(the `r`th smallest draw is x(k)).
    let rth_is = |r: usize, k: usize| draws.at_least(r, k + 1) - draws.at_least(r, k);
    let mut atoms = Vec::new();
    if n % 2 == 1 {
        atoms.extend((0..n).map(|k| (x[k], rth_is(n / 2 + 1, k))));
    } else {
        let m = n / 2;
        // ln P(`m` draws all fall at places up to `to`, not all below it):
        // a pair's two factors, in logarithms, where powers would underflow.
        let ln_up_to = |to: usize| {
            let (at, below) = ((to + 1) as f64, to as f64);
            m as f64 * (at / n as f64).ln() + (-(below / at).powi(m as i32)).ln_1p()
        };
        let ln_pairs = draws.ln_choose(m);
        for i in 0..n {
            let mut alone = rth_is(m, i);
            for j in i + 1..n {
                let p = (ln_pairs + ln_up_to(i) + ln_up_to(n - 1 - j)).exp();
                alone -= p;
                atoms.push(((x[i] + x[j]) / 2.0, p));
            }
            atoms.push((x[i], alone.max(0.0)));
        }
    }
    atoms.retain(|&(_, p)| p > NEGLIGIBLE);
    atoms.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    atoms
}

/// The law of a count of `n` draws, each at one of `n` places alike.
struct Binomial {
    n: usize,
    /// `ln_factorial[k]`: ln k!.
    ln_factorial: Vec<f64>,
}

impl Binomial {
    fn new(n: usize) -> Self {
        let mut ln_factorial = vec![0.0; n + 1];
        for k in 1..=n {
            ln_factorial[k] = ln_factorial[k - 1] + (k as f64).ln();
        }
        Self { n, ln_factorial }
    }

    /// ln of the ways to choose `k` of the draws.
    fn ln_choose(&self, k: usize) -> f64 {
        let n = self.n;
        self.ln_factorial[n] - self.ln_factorial[k] - self.ln_factorial[n - k]
    }

    /// P(at least `r` of the draws fall at the first `places` places).
    fn at_least(&self, r: usize, places: usize) -> f64 {
        let n = self.n;
        if places == 0 || places == n {
            return f64::from(u8::from(r == 0 || places == n));
        }
        let (hit, miss) = (
            (places as f64 / n as f64).ln(),
            (1.0 - places as f64 / n as f64).ln(),
        );
        (r..=n)
            .map(|a| (self.ln_choose(a) + a as f64 * hit + (n - a) as f64 * miss).exp())
            .sum()
    }
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
    let (before, after) = (misfits(v.iter()), misfits(v.iter().rev()));
    let cost = |at: usize| before[at] + after[v.len() - at];
    let at =
        (fewest..=v.len().checked_sub(fewest)?).min_by(|&a, &b| cost(a).total_cmp(&cost(b)))?;
    let size = change(median(&v[..at])?, median(&v[at..])?);
    (size > noise(&v[..at], &v[at..], floor)).then_some(at)
}

/// The noise of a stretch split in two: the upper fence of the changes
/// between consecutive values on either side, never under `floor`.
fn noise(before: &[f64], after: &[f64], floor: f64) -> f64 {
    let change = |a: f64, b: f64| (b / a - 1.0).abs();
    let within: Vec<f64> = [before, after]
        .iter()
        .flat_map(|side| side.windows(2).map(|w| change(w[0], w[1])))
        .collect();
    upper_fence(&within).unwrap_or(0.0).max(floor)
}

/// The misfit of every start of `values`: at `k`, the sum of the first
/// `k` values' absolute deviations from their median, all of them in one
/// pass, two heaps holding the lower and the upper half (sorting each
/// side of each split again made a site's 1,000-run series take seconds).
/// Any point between the two middle values fits as well as their mean.
fn misfits<'a>(values: impl Iterator<Item = &'a f64>) -> Vec<f64> {
    let mut lower: BinaryHeap<Total> = BinaryHeap::new();
    let mut upper: BinaryHeap<Reverse<Total>> = BinaryHeap::new();
    let (mut lower_sum, mut upper_sum) = (0.0, 0.0);
    let mut found = vec![0.0];
    for &x in values {
        if lower.peek().is_none_or(|top| x <= top.0) {
            lower_sum += x;
            lower.push(Total(x));
        } else {
            upper_sum += x;
            upper.push(Reverse(Total(x)));
        }
        // The lower half keeps as many as the upper, or one more.
        if lower.len() > upper.len() + 1 {
            let Total(moved) = lower.pop().expect("the lower half is the larger");
            (lower_sum, upper_sum) = (lower_sum - moved, upper_sum + moved);
            upper.push(Reverse(Total(moved)));
        } else if upper.len() > lower.len() {
            let Reverse(Total(moved)) = upper.pop().expect("the upper half is the larger");
            (lower_sum, upper_sum) = (lower_sum + moved, upper_sum - moved);
            lower.push(Total(moved));
        }
        let level = lower.peek().expect("a value went in").0;
        found.push(level * lower.len() as f64 - lower_sum + upper_sum - level * upper.len() as f64);
    }
    found
}

/// An `f64` in its total order, for a heap.
#[derive(Debug, Clone, Copy)]
struct Total(f64);

impl Ord for Total {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl PartialOrd for Total {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Total {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Total {}

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
    use std::collections::BTreeMap;

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
    fn every_start_s_misfit_is_that_of_its_median() {
        let mut rng = fastrand::Rng::with_seed(9);
        let values: Vec<f64> = (0..40).map(|_| f64::from(rng.u32(..20))).collect();
        let found = misfits(values.iter());
        assert_eq!(found.len(), values.len() + 1);
        for (k, misfit) in found.iter().enumerate() {
            let level = median(&values[..k]).unwrap_or(0.0);
            let by_hand: f64 = values[..k].iter().map(|x| (x - level).abs()).sum();
            assert!((misfit - by_hand).abs() < 1e-9, "{k}: {misfit} {by_hand}");
        }
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
        for _ in 0..trials {
            let baseline = runs(&mut rng, n, 1000.0, noise);
            let candidate = runs(&mut rng, n, 1000.0 * (1.0 + change), noise);
            let interval = ratio_of_medians(&baseline, &candidate, 0.95).unwrap();
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
        let paired = paired_ratio(&baseline, &candidate, 0.95).unwrap();
        assert!(
            (paired.ratio - 0.95).abs() < 1e-12 && (paired.high - 0.95).abs() < 1e-12,
            "{paired:?}"
        );
        assert_eq!(Verdict::of(paired, 0.02, true), Verdict::Regressed);
        // Unpaired, the drift hides it.
        let unpaired = ratio_of_medians(&baseline, &candidate, 0.95).unwrap();
        assert_eq!(
            Verdict::of(unpaired, 0.02, true),
            Verdict::NoChange,
            "{unpaired:?}"
        );
    }

    /// The law of a resample's median, by drawing every one of the n^n
    /// resamples: each value's probability.
    fn every_resample(sample: &[f64]) -> BTreeMap<u64, f64> {
        let n = sample.len();
        let all = n.pow(n as u32);
        let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
        for number in 0..all {
            let mut drawn: Vec<f64> = (0..n)
                .map(|place| sample[number / n.pow(place as u32) % n])
                .collect();
            *counts
                .entry(middle(&mut drawn).unwrap().to_bits())
                .or_default() += 1;
        }
        counts
            .into_iter()
            .map(|(median, count)| (median, count as f64 / all as f64))
            .collect()
    }

    #[test]
    fn the_resampled_median_s_law_is_that_of_every_resample() {
        let mut rng = fastrand::Rng::with_seed(3);
        for n in 1..=7 {
            for _ in 0..3 {
                // Few distinct values, so that ties are drawn too.
                let sample: Vec<f64> = (0..n).map(|_| f64::from(rng.u32(..5))).collect();
                let mut computed: BTreeMap<u64, f64> = BTreeMap::new();
                for (value, p) in resampled_median(&sample) {
                    *computed.entry(value.to_bits()).or_default() += p;
                }
                let drawn = every_resample(&sample);
                assert_eq!(
                    computed.keys().collect::<Vec<_>>(),
                    drawn.keys().collect::<Vec<_>>(),
                    "{sample:?}"
                );
                for (value, p) in &drawn {
                    assert!((computed[value] - p).abs() < 1e-12, "{sample:?}: {value}");
                }
            }
        }
    }

    #[test]
    fn many_runs_keep_a_law_that_sums_to_one() {
        for n in [40, 41, 200] {
            let sample: Vec<f64> = (0..n).map(|v| v as f64).collect();
            let law = resampled_median(&sample);
            let sum: f64 = law.iter().map(|(_, p)| p).sum();
            assert!((sum - 1.0).abs() < 1e-6, "{n} runs: {sum}");
            assert!(law.len() < n * n, "{n} runs: {} atoms", law.len());
        }
    }

    #[test]
    fn a_bound_is_where_a_walk_from_its_end_passes_its_tail() {
        // Resampling [1, 2, 3]: the median is 1 with 7/27 (the draws hold
        // two 1s or three), 3 with 7/27, and 2 with 13/27.
        let law = resampled_median(&[3.0, 1.0, 2.0]);
        assert_eq!(law.len(), 3);
        assert!((law[0].1 - 7.0 / 27.0).abs() < 1e-12, "{law:?}");
        let bounds = |tail| {
            (
                passed(law.iter().copied(), tail),
                passed(law.iter().rev().copied(), tail),
            )
        };
        assert_eq!(bounds(0.025), (1.0, 3.0));
        assert_eq!(bounds(0.2), (1.0, 3.0));
        // Past 1's 7/27 and 3's alike.
        assert_eq!(bounds(0.3), (2.0, 2.0));
    }

    #[test]
    fn the_walk_through_the_ratios_is_every_ratio_sorted() {
        let mut rng = fastrand::Rng::with_seed(5);
        for _ in 0..50 {
            let law = |rng: &mut fastrand::Rng| {
                let n = rng.usize(1..9);
                let sample: Vec<f64> = (0..n).map(|_| f64::from(rng.u32(1..6))).collect();
                resampled_median(&sample)
            };
            let (c, b) = (law(&mut rng), law(&mut rng));
            let mut every: Vec<(f64, f64)> = c
                .iter()
                .flat_map(|&(c, pc)| b.iter().map(move |&(b, pb)| (c / b, pc * pb)))
                .collect();
            every.sort_by(|x, y| x.0.total_cmp(&y.0));
            let up: Vec<f64> = ratios(&c, &b, true).map(|r| r.0).collect();
            let mut down: Vec<f64> = ratios(&c, &b, false).map(|r| r.0).collect();
            down.reverse();
            let values: Vec<f64> = every.iter().map(|r| r.0).collect();
            assert_eq!(up, values);
            assert_eq!(down, values);
            let mass: f64 = ratios(&c, &b, true).map(|r| r.1).sum();
            assert!((mass - 1.0).abs() < 1e-9, "{mass}");
        }
    }

    #[test]
    fn the_interval_brackets_the_ratio() {
        let b = [100.0, 110.0, 90.0];
        let c = [80.0, 85.0, 75.0];
        let i = ratio_of_medians(&b, &c, 0.95).unwrap();
        assert!(i.low <= i.ratio && i.ratio <= i.high, "{i:?}");
        assert_eq!(i.ratio, 0.8);
        // The widest the medians can fall: 75 over 110, 85 over 90.
        assert_eq!((i.low, i.high), (75.0 / 110.0, 85.0 / 90.0));
        assert!(ratio_of_medians(&[], &c, 0.95).is_none());
    }

    #[test]
    fn the_log_change_is_students_t_of_the_logarithms() {
        // Paired: the rounds' log ratios 0.1, 0.2, 0.3.
        let b = [1.0, 2.0, 4.0];
        let c: Vec<f64> = b
            .iter()
            .zip([0.1f64, 0.2, 0.3])
            .map(|(b, l)| b * l.exp())
            .collect();
        let paired = LogChange::paired(&b, &c).unwrap();
        assert!((paired.estimate - 0.2).abs() < 1e-12, "{paired:?}");
        assert!((paired.error - (0.01f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(paired.freedom, 2.0);
        // Beyond a threshold of e^0.1 - 1: t = 0.1 / error = 1.732 at two
        // degrees of freedom, whose upper tail is 1/2 - t / (2 sqrt(t^2 + 2)).
        let t = 0.1 / paired.error;
        let tail = 0.5 - t / (2.0 * (t * t + 2.0).sqrt());
        let p = paired.beyond(0.1f64.exp() - 1.0, true);
        assert!((p - tail).abs() < 1e-9, "{p} against {tail}");
        // The other way, far from it.
        assert!(paired.beyond(0.1, false) > 0.95);

        // Welch: the logs 0 and 0.2 against 1.0 and 1.4.
        let (b, c) = ([0.0f64, 0.2].map(f64::exp), [1.0f64, 1.4].map(f64::exp));
        let welch = LogChange::unpaired(&b, &c).unwrap();
        assert!((welch.estimate - 1.1).abs() < 1e-12, "{welch:?}");
        assert!((welch.error - 0.05f64.sqrt()).abs() < 1e-12);
        assert!((welch.freedom - 0.0025 / 0.0017).abs() < 1e-9);

        // Without error: beyond the threshold or not, nothing between.
        let same = LogChange::unpaired(&[2.0, 2.0, 2.0], &[3.0, 3.0, 3.0]).unwrap();
        assert_eq!((same.beyond(0.4, true), same.beyond(0.6, true)), (0.0, 1.0));
        assert!(LogChange::paired(&[1.0], &[2.0]).is_none());
        // A threshold of 100% or more down: out of reach, not a NaN.
        assert_eq!(welch.beyond(1.5, false), 1.0);
    }

    #[test]
    fn from_ten_rounds_a_tenth_of_each_end_is_trimmed() {
        // One round in ten off by e^1: plain t's mean is 0.1075 +- 0.0993,
        // Yuen's trimmed mean 0.011875 +- 0.005829 at 7 degrees (scipy).
        let logs = [0.01, 0.02, -0.01, 0.03, 0.0, 0.02, 0.01, -0.02, 0.015, 1.0];
        let candidate = logs.map(f64::exp);
        let change = LogChange::paired(&[1.0; 10], &candidate).unwrap();
        assert!((change.estimate - 0.011875).abs() < 1e-12, "{change:?}");
        assert!((change.error - 0.005828654586241518).abs() < 1e-12);
        assert_eq!(change.freedom, 7.0);
        // Unpaired against a side without spread: the same error and freedom.
        let welch = LogChange::unpaired(&[1.0; 10], &candidate).unwrap();
        assert!((welch.error - change.error).abs() < 1e-12, "{welch:?}");
        assert!((welch.freedom - 7.0).abs() < 1e-9);
    }

    #[test]
    fn holm_holds_the_smallest_first_until_one_fails() {
        // 0.005 <= 0.05/4, 0.01 <= 0.05/3, then 0.03 > 0.05/2: it and 0.04 fail.
        let p = [0.01, 0.04, 0.03, 0.005];
        assert_eq!(holm(&p, 0.05), [true, false, false, true]);
        assert_eq!(holm(&[0.2, 0.3], 0.05), [false, false]);
        assert!(holm(&[], 0.05).is_empty());
    }

    /// A check of `figures` figures of six paired rounds each, every
    /// figure's rounds moved by noise of its own size (2% to 40%, as
    /// figures here differ) and the first by `change`: whether any figure
    /// is flagged regressed by its own interval, whether the family-wise
    /// rule confirms any, and whether it confirms the first.
    fn check(rng: &mut fastrand::Rng, figures: usize, change: f64) -> [bool; 3] {
        let (mut flagged, mut p) = (false, Vec::new());
        for figure in 0..figures {
            let noise = 0.02 + 0.38 * (figure % 10) as f64 / 9.0;
            let moved = if figure == 0 { 1.0 + change } else { 1.0 };
            // A figure is positive: a draw far in the tail is floored.
            let positive = |v: Vec<f64>| v.into_iter().map(|x| x.max(1.0)).collect::<Vec<f64>>();
            let b = positive(runs(rng, 6, 100.0, noise));
            let c = positive(runs(rng, 6, 100.0 * moved, noise));
            let interval = paired_ratio(&b, &c, 0.95).unwrap();
            flagged |= Verdict::of(interval, 0.03, false) == Verdict::Regressed;
            let log = LogChange::paired(&b, &c).unwrap();
            p.extend([log.beyond(0.03, true), log.beyond(0.03, false)]);
        }
        let held = holm(&p, 0.05);
        [flagged, held.iter().any(|&h| h), held[0]]
    }

    #[test]
    fn a_check_of_many_figures_cries_wolf_in_at_most_one_in_twenty() {
        let mut rng = fastrand::Rng::with_seed(11);
        let trials = 200;
        let (mut flagged, mut confirmed) = (0, 0);
        for _ in 0..trials {
            let [f, c, _] = check(&mut rng, 100, 0.0);
            (flagged, confirmed) = (flagged + usize::from(f), confirmed + usize::from(c));
        }
        // Each figure's own interval flags a few percent of figures: most
        // checks of a hundred have one (seen: 189 of 200).
        assert!(flagged > trials / 2, "{flagged} of {trials}");
        assert!(confirmed * 20 <= trials, "{confirmed} of {trials}");

        // A figure that moved by half, at 2% noise, is confirmed every time
        // among a hundred.
        let found = (0..trials).filter(|_| check(&mut rng, 100, 0.5)[2]).count();
        assert_eq!(found, trials);
    }
}
