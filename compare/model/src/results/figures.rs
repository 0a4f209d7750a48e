//! The figures that follow from a cell's runs: median, min and max of
//! each, the interval of the median and the precision it reaches, modes,
//! what a block cost each side; and the percentiles of a round-trip
//! histogram. Computed again whenever a file is read, so that a file
//! written before a figure existed gets it wherever its runs have the data.

use anyhow::{Context, Result};

use super::registry::{self, Figure, Source};
use super::{Cell, Figures, Interval, Results, Rtt, Run, Series, Status, Summary};
use pingpong::client::open_loop::GENERATOR_BUSY;

use crate::defaults;
use crate::stats;

/// A side is saturated at this share of its capacity or more ...
pub const SATURATED: f64 = 0.9;
/// ... and has room at this share or less.
pub const ROOM: f64 = 0.8;

impl Run {
    /// Whether the client, not the server, set this run's pace: the
    /// open-loop generator busy past the share it can be trusted at, or in
    /// a closed loop the CPU the client wanted at [`SATURATED`] of its
    /// capacity or more while the server's stayed at [`ROOM`] of its own or
    /// less. What a side wanted counts what it waited for too: a client
    /// that shares its CPU with another process runs half the time and is
    /// as saturated as one that runs all of it. A
    /// side's capacity is its threads or its CPUs, whichever is fewer;
    /// `None` threads: one per connection, so its CPUs.
    pub fn is_client_bound(
        &self,
        server_threads: Option<usize>,
        client_threads: Option<usize>,
    ) -> bool {
        if let Some(open) = &self.open_loop {
            return open.generator_busy > GENERATOR_BUSY;
        }
        let (Some(server), Some(client)) = (self.server_usage, self.client_usage) else {
            return false;
        };
        let (Some(server_capacity), Some(client_capacity)) = (
            capacity(server_threads, &self.server_cpus),
            capacity(client_threads, &self.client_cpus),
        ) else {
            return false;
        };
        client.wanted_percent() / 100.0 >= SATURATED * client_capacity
            && server.wanted_percent() / 100.0 <= ROOM * server_capacity
    }
}

/// How many cores' worth a side can use: its threads or its CPUs, whichever
/// is fewer; none where neither is known.
fn capacity(threads: Option<usize>, cpus: &[usize]) -> Option<f64> {
    let cpus = (!cpus.is_empty()).then_some(cpus.len());
    let n = match (threads, cpus) {
        (Some(t), Some(c)) => t.min(c),
        (t, c) => t.or(c)?,
    };
    Some(n as f64)
}

impl Series {
    /// MiB/s of each slice.
    pub fn mib_per_s(&self) -> Vec<f64> {
        self.bytes
            .iter()
            .zip(&self.seconds)
            .map(|(&b, &s)| b as f64 / s / (1 << 20) as f64)
            .collect()
    }

    /// (max - min) / median of the slices' MiB/s: 0 for a steady window.
    pub fn spread(&self) -> Option<f64> {
        let rates = self.mib_per_s();
        let median = stats::median(&rates).filter(|m| *m > 0.0)?;
        let (min, max) = rates.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
        Some((max - min) / median)
    }
}

impl Run {
    /// Blocks that came back inside the window.
    pub fn blocks(&self, block: usize) -> f64 {
        self.bytes as f64 / block as f64
    }
}

impl Rtt {
    pub fn from_histogram(encoded: String) -> Result<Self> {
        let h = pingpong::latency::decode(&encoded).context("the client's RTT histogram")?;
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Ok(Self {
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            p50_us: us(0.5),
            p90_us: us(0.9),
            p95_us: us(0.95),
            p99_us: us(0.99),
            p999_us: us(0.999),
            max_us: h.max() as f64 / 1000.0,
            histogram: Some(encoded),
        })
    }
}

impl Summary {
    /// `None` for no values.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Self> {
        let v: Vec<f64> = values.into_iter().collect();
        Some(Self {
            median: stats::median(&v)?,
            min: v.iter().copied().reduce(f64::min)?,
            max: v.iter().copied().reduce(f64::max)?,
        })
    }
}

impl Cell {
    /// Why the cell did not sustain its open-loop rate, if any run did not:
    /// how many did not, and the first one's reason.
    pub fn not_sustained(&self) -> Option<String> {
        let short: Vec<&str> = self
            .runs
            .iter()
            .filter_map(|r| r.open_loop.as_ref()?.not_sustained.as_deref())
            .collect();
        let first = short.first()?;
        Some(format!(
            "{} of {} runs: {first}",
            short.len(),
            self.runs.len()
        ))
    }

    /// Adds a cost run; `noisy_percent` is the run's threshold.
    pub fn push_cost_run(&mut self, run: Run, noisy_percent: f64) {
        self.cost_runs.push(run);
        self.summarize(noisy_percent);
    }

    /// The values of `figure` in the repetitions that give it, in order.
    pub fn values(&self, figure: &Figure) -> Vec<f64> {
        let runs = match figure.source {
            Source::Runs => &self.runs,
            Source::CostRuns => &self.cost_runs,
        };
        runs.iter()
            .filter_map(|r| figure.of(r, self.block))
            .collect()
    }

    /// The summary of `figure` over the cell's repetitions, where it has one.
    pub fn summary(&self, figure: &Figure) -> Option<Summary> {
        self.figures.as_ref()?.get(figure.key).copied()
    }

    /// Adds a successful repetition; `noisy_percent` is the run's threshold.
    pub fn push(&mut self, run: Run, noisy_percent: f64) {
        self.runs.push(run);
        self.summarize(noisy_percent);
    }

    /// Computes the cell's summaries from its runs.
    pub(super) fn summarize(&mut self, noisy_percent: f64) {
        if self.status != Status::Ok {
            return;
        }
        let (server, client) = match self.threads_matter {
            true => (Some(self.threads), Some(self.load().client_threads())),
            false => (None, None),
        };
        for run in &mut self.runs {
            run.client_bound = run.is_client_bound(server, client);
        }
        let bound = self.runs.iter().filter(|r| r.client_bound).count();
        self.client_bound = bound > 0 && bound * 2 >= self.runs.len();
        let mib: Vec<f64> = self.runs.iter().map(|r| r.mib_per_s).collect();
        self.mib_per_s = Summary::of(mib.iter().copied());
        self.noisy = self
            .mib_per_s
            .is_some_and(|s| s.max > s.min * (1.0 + noisy_percent / 100.0));
        self.interval =
            stats::median_interval(&mib, defaults::CONFIDENCE).map(|(low, high, confidence)| {
                Interval {
                    low,
                    high,
                    confidence,
                }
            });
        self.modes = stats::modes(&mib);
        let figures: Figures = registry::figures()
            .filter_map(|f| Some((f.key.to_string(), Summary::of(self.values(f))?)))
            .collect();
        self.figures = Some(figures);
    }

    /// How precisely the runs pin the median down: the half-width of its
    /// 95% interval in percent of the median; none until there are runs
    /// enough for 95% (six).
    pub fn precision(&self) -> Option<f64> {
        let (median, interval) = (self.mib_per_s?.median, self.interval?);
        (interval.confidence >= defaults::CONFIDENCE && median > 0.0)
            .then(|| (median - interval.low).max(interval.high - median) / median * 100.0)
    }

    /// Whether the cell needs more runs for `target` percent of precision.
    pub fn short_of(&self, target: f64) -> bool {
        self.status == Status::Ok && self.precision().is_none_or(|p| p > target)
    }

    /// Marks the cell unavailable: the implementation cannot start here.
    pub fn set_unavailable(&mut self, short: String, error: String) {
        self.status = Status::Unavailable;
        self.unavailable = Some(short);
        self.error = Some(error);
        self.mib_per_s = None;
        self.figures = None;
        self.interval = None;
        self.modes = None;
    }

    /// Marks the cell failed: one failed repetition means no figure for the cell.
    pub fn fail(&mut self, error: String) {
        if self.status == Status::Ok {
            self.status = Status::Failed;
            self.error = Some(error);
            self.mib_per_s = None;
            self.figures = None;
            self.interval = None;
            self.modes = None;
        }
    }
}

/// How precisely a run pinned its cells' medians down: the half-widths of
/// the cells' 95% intervals, in percent of their medians.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached {
    /// Cells with a figure, and those of them with a 95% interval.
    pub cells: usize,
    pub with_interval: usize,
    /// The half-width half the cells reached or bettered, and the one a
    /// tenth of them were still wider than.
    pub median: f64,
    pub worst_tenth: f64,
    /// Cells short of the run's target, where it had one.
    pub short: Option<(usize, f64)>,
}

impl Results {
    /// Computes every cell's summaries from its runs again.
    pub fn summarize(&mut self) {
        let noisy = self.config.noisy_percent();
        for cell in &mut self.cells {
            cell.summarize(noisy);
        }
    }

    /// The precision the run reached; none where no cell has an interval.
    pub fn reached(&self) -> Option<Reached> {
        let ok: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| c.status == Status::Ok)
            .collect();
        let mut widths: Vec<f64> = ok.iter().filter_map(|c| c.precision()).collect();
        widths.sort_by(f64::total_cmp);
        let at = |q: f64| widths[((widths.len() - 1) as f64 * q).round() as usize];
        let short = self.config.precision_percent.map(|target| {
            let short = ok.iter().filter(|c| c.short_of(target)).count();
            (short, target)
        });
        (!widths.is_empty()).then(|| Reached {
            cells: ok.len(),
            with_interval: widths.len(),
            median: at(0.5),
            worst_tenth: at(0.9),
            short,
        })
    }
}

impl std::fmt::Display for Reached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "precision reached (half-width of each cell's 95% interval of its median MiB/s): \
             +-{:.1}% or better in half of {} cells, wider than +-{:.1}% in one in ten",
            self.median, self.with_interval, self.worst_tenth
        )?;
        if self.with_interval < self.cells {
            write!(
                f,
                "; {} cells have too few runs for an interval",
                self.cells - self.with_interval
            )?;
        }
        match self.short {
            Some((0, target)) => write!(f, "; every cell reached the +-{target}% asked"),
            Some((short, target)) => write!(
                f,
                "; {short} of {} cells short of the +-{target}% asked (the report names them)",
                self.cells
            ),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{OpenLoop, Usage};

    #[test]
    fn summary_is_median_min_max() {
        let s = Summary::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Summary::of([4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert!(Summary::of([]).is_none());
    }

    /// A run of the fixture with the CPU shares given, on `cpus` CPUs each.
    fn run_at(server: f64, client: f64, cpus: usize) -> Run {
        let mut run = crate::fixtures::small().cells[0].runs[0].clone();
        let usage = |u: &mut Option<Usage>, percent| {
            let u = u.as_mut().unwrap();
            (u.cpu_percent, u.demand_percent) = (percent, None);
        };
        usage(&mut run.server_usage, server);
        usage(&mut run.client_usage, client);
        run.server_cpus = (0..cpus).collect();
        run.client_cpus = (cpus..2 * cpus).collect();
        run
    }

    #[test]
    fn a_run_is_client_bound_where_its_client_is_saturated_and_its_server_has_room() {
        let one = (Some(1), Some(1));
        assert!(run_at(40.0, 99.0, 1).is_client_bound(one.0, one.1));
        assert!(
            !run_at(95.0, 99.0, 1).is_client_bound(one.0, one.1),
            "both busy"
        );
        assert!(
            !run_at(40.0, 60.0, 1).is_client_bound(one.0, one.1),
            "neither"
        );
        // Two client threads on two CPUs: one core busy is half its capacity.
        assert!(!run_at(40.0, 99.0, 2).is_client_bound(Some(1), Some(2)));
        assert!(run_at(40.0, 190.0, 2).is_client_bound(Some(1), Some(2)));
        // Four client threads on two CPUs: the CPUs are the capacity.
        assert!(run_at(40.0, 185.0, 2).is_client_bound(Some(1), Some(4)));
        // A thread per connection: the CPUs alone.
        assert!(run_at(150.0, 190.0, 2).is_client_bound(None, None));
        assert!(!run_at(170.0, 190.0, 2).is_client_bound(None, None));
        // A client that shared its CPU ran half the time and waited the rest.
        let mut shared = run_at(40.0, 50.0, 1);
        shared.client_usage.as_mut().unwrap().demand_percent = Some(98.0);
        assert!(shared.is_client_bound(one.0, one.1), "a shared CPU");
        // A server that waited for its CPU has no room, whatever it ran.
        let mut waiting = run_at(40.0, 99.0, 1);
        waiting.server_usage.as_mut().unwrap().demand_percent = Some(95.0);
        assert!(!waiting.is_client_bound(one.0, one.1), "a waiting server");
        let mut unmeasured = run_at(40.0, 99.0, 1);
        unmeasured.client_usage = None;
        assert!(!unmeasured.is_client_bound(one.0, one.1));
    }

    #[test]
    fn an_open_loop_run_is_client_bound_where_its_generator_was_busy() {
        let mut run = run_at(95.0, 10.0, 1);
        let open = |busy| OpenLoop {
            rate: 1000,
            achieved: 1000.0,
            due: 200,
            returned: 200,
            uncorrected: run_at(0.0, 0.0, 1).rtt.unwrap(),
            lag: run_at(0.0, 0.0, 1).rtt.unwrap(),
            timer: run_at(0.0, 0.0, 1).rtt.unwrap(),
            lag_series: Vec::new(),
            generator_busy: busy,
            not_sustained: None,
        };
        run.open_loop = Some(open(0.97));
        assert!(run.is_client_bound(Some(1), Some(1)));
        run.open_loop = Some(open(0.5));
        assert!(!run.is_client_bound(Some(1), Some(1)));
    }

    #[test]
    fn a_cell_is_client_bound_where_half_its_runs_are() {
        let mut cell = crate::fixtures::small().cells[0].clone();
        cell.runs = vec![run_at(40.0, 99.0, 1), run_at(95.0, 99.0, 1)];
        cell.summarize(10.0);
        assert!(cell.client_bound && cell.runs[0].client_bound && !cell.runs[1].client_bound);
        cell.runs.push(run_at(95.0, 99.0, 1));
        cell.summarize(10.0);
        assert!(!cell.client_bound, "one run of three");
    }
}
