//! Which functions moved between two implementations' counts, by
//! instructions or by system calls, and which of those moves the runs tell
//! from their own variation.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::stacks::{self, Cost, Costs, PerBlock};
use measure::prices::Prices;
use measure::{callgrind, perf};
use model::stats;

/// A few instructions of a loop that turns more or less often with the
/// machine's timing are no change: the least move told, per block,
pub const FLOOR_INSTRUCTIONS: f64 = 20.0;
/// or this part of the side's instructions in all, where more;
pub const FLOOR_SHARE: f64 = 0.005;
/// and nor is a fraction of a system call.
pub const FLOOR_SYSCALLS: f64 = 0.5;
/// Sampled CPU time: the least move told, per block,
pub const FLOOR_CPU_NS: f64 = 50.0;
/// or this part of the side's time in all, where more;
pub const FLOOR_CPU_SHARE: f64 = 0.01;
/// and the move must be this many times its sampling error.
pub const SAMPLING_ERRORS: f64 = 3.0;
/// Traced wake-ups or sleeps: the least move told, per block. A path's
/// move is told where, besides, every run of one side lies beyond every
/// run of the other and the move is more than the runs' variation: whether
/// a worker is parked when a task comes is a state of the whole run, and
/// tokio 1.51.0's futex wake-up of a parked worker went 0.21 to 0.51 a
/// block over six runs (none in any of 1.50.0's six), a range that three
/// times over hid it.
pub const FLOOR_EVENTS: f64 = 0.1;

/// From this many runs a side, a side's variation leaves out its run
/// farthest from their median, and a move must be three times it rather
/// than twice: one sampled run of four that the VM slowed by half (the
/// injected function 3,770 ns a block off a median of 7,541) hid a move
/// of the whole function; trimmed, and past three times, pairs drawn from
/// A/A sets of six runs named nothing in 105, and the injected function in
/// 30 of 30.
pub const TRIMMED_FROM: usize = 4;

/// How many times its runs' variation a move must be, with `runs` a side.
pub fn times(runs: usize) -> f64 {
    if runs >= TRIMMED_FROM { 3.0 } else { 2.0 }
}

/// The told rule's variation, as the pages say it, with `runs` a side.
pub fn variation_said(runs: usize) -> &'static str {
    if runs >= TRIMMED_FROM {
        "three times the widest range of either side's runs (less the run farthest from their median)"
    } else {
        "twice the widest range of either side's runs"
    }
}

/// The range of `values`, less the one farthest from their median where
/// there are [`TRIMMED_FROM`] or more (sorted, always one end or the
/// other).
fn spread(values: &[f64]) -> f64 {
    let mut kept = values.to_vec();
    kept.sort_by(f64::total_cmp);
    if kept.len() >= TRIMMED_FROM {
        let middle = stats::median(&kept).expect("four values or more");
        let (lo, hi) = (kept[0], kept[kept.len() - 1]);
        match middle - lo > hi - middle {
            true => kept.remove(0),
            false => kept.pop().expect("four values or more"),
        };
    }
    match (kept.first(), kept.last()) {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0.0,
    }
}

/// What a function's move is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Instructions,
    Syscalls,
    /// Nanoseconds of CPU, sampled.
    Cpu,
    /// Wake-ups issued, traced.
    Wakes,
    /// Sleeps taken, traced.
    Sleeps,
}

impl Kind {
    pub fn of(self, cost: &Cost) -> f64 {
        match self {
            Self::Instructions => cost.instructions,
            Self::Syscalls => cost.syscalls,
            Self::Cpu => cost.cpu_ns,
            Self::Wakes => cost.wakes,
            Self::Sleeps => cost.sleeps,
        }
    }

    /// The variance that sampling alone gives `cost`'s figure.
    fn variance(self, cost: &Cost) -> f64 {
        match self {
            Self::Cpu => cost.cpu_variance,
            Self::Instructions | Self::Syscalls | Self::Wakes | Self::Sleeps => 0.0,
        }
    }

    /// The least move a function must make to be told, per block, given
    /// the baseline side's cost in all.
    pub fn floor(self, total: f64) -> f64 {
        match self {
            Self::Instructions => (FLOOR_SHARE * total).max(FLOOR_INSTRUCTIONS),
            Self::Syscalls => FLOOR_SYSCALLS,
            Self::Cpu => (FLOOR_CPU_SHARE * total).max(FLOOR_CPU_NS),
            Self::Wakes | Self::Sleeps => FLOOR_EVENTS,
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Self::Instructions => "instr",
            Self::Syscalls => "syscalls",
            Self::Cpu => "ns CPU",
            Self::Wakes => "wake-ups",
            Self::Sleeps => "sleeps",
        }
    }

    /// The decimals its figures are shown with.
    pub fn decimals(self) -> usize {
        match self {
            Self::Syscalls | Self::Wakes | Self::Sleeps => 2,
            Self::Instructions | Self::Cpu => 0,
        }
    }
}

/// One function on one side, both implementations' runs, in one kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Function {
    pub name: String,
    /// Its crate, for a Rust function.
    pub krate: Option<String>,
    pub kind: Kind,
    /// Medians over the runs, per block: its own, and with its callees.
    pub baseline: [f64; 2],
    pub candidate: [f64; 2],
    /// The runs' own variation of its own figure: the widest range of one
    /// implementation's runs (of [`TRIMMED_FROM`] or more, less the run
    /// farthest from their median).
    pub variation: f64,
    /// Sampled: its move's sampling error, one standard deviation, of one
    /// run of each implementation (the medians' is smaller); none where
    /// counted.
    #[serde(default)]
    pub error: f64,
    /// Its own figure in each run: baseline's, candidate's.
    #[serde(default, skip_serializing_if = "no_runs")]
    pub runs: [Vec<f64>; 2],
    /// Whether its own figure moved by more than [`times`] the runs'
    /// variation (traced: every run of one side past every run of the
    /// other, and by more than the variation), by the kind's floor at
    /// least, and sampled, by [`SAMPLING_ERRORS`] times its sampling error.
    pub told: bool,
}

impl Function {
    /// The move of its own figure per block.
    pub fn own_moved(&self) -> f64 {
        self.candidate[0] - self.baseline[0]
    }

    /// The move with its callees.
    pub fn inclusive_moved(&self) -> f64 {
        self.candidate[1] - self.baseline[1]
    }

    /// What its own move costs per block, in nanoseconds at `prices`.
    pub fn ns_moved(&self, prices: &Prices) -> f64 {
        let price = match self.kind {
            Kind::Instructions => prices.instruction_ns,
            Kind::Syscalls => prices.syscall_ns,
            Kind::Cpu => 1.0,
            Kind::Wakes => prices.handoff_ns,
            Kind::Sleeps => prices.switch_ns,
        };
        self.own_moved() * price
    }
}

/// The functions of one side in `kind`, the told moves first, largest
/// first, then the others by the size of their move, then of their own
/// figure; and the side's
/// medians in all (baseline, candidate).
pub fn compare(
    baseline: &[PerBlock],
    candidate: &[PerBlock],
    kind: Kind,
) -> (Vec<Function>, [f64; 2]) {
    let by_run = |runs: &[PerBlock]| -> Vec<BTreeMap<String, Costs>> {
        runs.iter().map(stacks::functions).collect()
    };
    let (b, c) = (by_run(baseline), by_run(candidate));
    let total = |runs: &[PerBlock]| {
        median(
            runs.iter()
                .map(|r| r.values().map(|c| kind.of(c)).sum())
                .collect(),
        )
    };
    let totals = [total(baseline), total(candidate)];
    let floor = kind.floor(totals[0]);
    let names: BTreeSet<&String> = b.iter().chain(&c).flat_map(|f| f.keys()).collect();
    let mut functions: Vec<Function> = names
        .into_iter()
        .map(|name| {
            let values = |runs: &[BTreeMap<String, Costs>], inclusive: bool| -> Vec<f64> {
                runs.iter()
                    .map(|r| {
                        r.get(name).map_or(0.0, |c| match inclusive {
                            false => kind.of(&c.own),
                            true => kind.of(&c.inclusive),
                        })
                    })
                    .collect()
            };
            let side = |runs| [median(values(runs, false)), median(values(runs, true))];
            let variation = spread(&values(&b, false)).max(spread(&values(&c, false)));
            let variance = |runs: &[BTreeMap<String, Costs>]| {
                median(
                    runs.iter()
                        .map(|r| r.get(name).map_or(0.0, |c| kind.variance(&c.own)))
                        .collect(),
                )
            };
            let error = (variance(&b) + variance(&c)).sqrt();
            let (baseline, candidate) = (side(&b), side(&c));
            let runs = [values(&b, false), values(&c, false)];
            let apart = apart(&runs[0], &runs[1]);
            let moved = (candidate[0] - baseline[0]).abs();
            Function {
                name: name.clone(),
                krate: match kind {
                    Kind::Wakes | Kind::Sleeps => perf::crate_of_path(name),
                    _ => callgrind::crate_of(name),
                }
                .map(str::to_string),
                kind,
                baseline,
                candidate,
                variation,
                error,
                runs,
                told: b.len() > 1
                    && c.len() > 1
                    && moved >= floor
                    && match kind {
                        Kind::Wakes | Kind::Sleeps => apart && moved > variation,
                        _ => {
                            moved > times(b.len().min(c.len())) * variation
                                && moved > SAMPLING_ERRORS * error
                        }
                    },
            }
        })
        .collect();
    // A function with no figure of this kind in any run is not of it.
    functions.retain(|f| f.baseline != [0.0; 2] || f.candidate != [0.0; 2] || f.variation != 0.0);
    functions.sort_by(|x, y| {
        y.told
            .cmp(&x.told)
            .then(y.own_moved().abs().total_cmp(&x.own_moved().abs()))
            .then(y.candidate[0].total_cmp(&x.candidate[0]))
            .then(x.name.cmp(&y.name))
    });
    (functions, totals)
}

/// Whether every run of one side is above every run of the other: by
/// chance alone, with six runs a side, in 2 of the 924 ways twelve runs
/// split into two sets of six.
fn apart(a: &[f64], b: &[f64]) -> bool {
    let least = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let most = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    least(a) > most(b) || least(b) > most(a)
}

fn no_runs(runs: &[Vec<f64>; 2]) -> bool {
    runs.iter().all(Vec::is_empty)
}

fn median(values: Vec<f64>) -> f64 {
    stats::median(&values).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(per_run: &[&[(&str, f64, f64)]]) -> Vec<PerBlock> {
        per_run
            .iter()
            .map(|r| {
                r.iter()
                    .map(|&(s, instructions, syscalls)| {
                        let cost = Cost {
                            instructions,
                            syscalls,
                            ..Cost::default()
                        };
                        (s.to_string(), cost)
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn from_four_runs_one_run_far_off_is_left_out_of_the_variation() {
        let burn = |v: &[f64]| -> Vec<PerBlock> {
            let each: Vec<Vec<(&str, f64, f64)>> =
                v.iter().map(|&i| vec![("main;burn", i, 0.0)]).collect();
            runs(&each.iter().map(Vec::as_slice).collect::<Vec<_>>())
        };
        let (baseline, candidate) = (burn(&[0.0; 4]), burn(&[7500.0, 7600.0, 3800.0, 7400.0]));
        let f = &compare(&baseline, &candidate, Kind::Instructions).0[0];
        assert_eq!((f.name.as_str(), f.variation), ("burn", 200.0));
        assert!(f.told, "{f:?}");
        // Three runs keep their whole range, and twice it hides the move.
        let f = &compare(&baseline[..3], &candidate[..3], Kind::Instructions).0[0];
        assert_eq!(f.variation, 3800.0);
        assert!(!f.told, "{f:?}");
        // Trimmed, a move must be three times the variation: 450 past
        // 200 is not told.
        let close = burn(&[7000.0, 7100.0, 7200.0, 9000.0]);
        let near = burn(&[7650.0, 7550.0, 7600.0, 7600.0]);
        let f = &compare(&close, &near, Kind::Instructions).0[0];
        assert_eq!((f.variation, f.own_moved()), (200.0, 450.0));
        assert!(!f.told, "{f:?}");
    }

    #[test]
    fn a_traced_path_is_told_where_every_run_of_one_side_is_past_the_other_s() {
        let path = "futex: tokio::runtime::task::waker::wake_by_val";
        let traced = |v: &[f64]| -> Vec<PerBlock> {
            v.iter()
                .map(|&n| {
                    let cost = Cost {
                        wakes: n,
                        ..Cost::default()
                    };
                    [(path.to_string(), cost)].into_iter().collect()
                })
                .collect()
        };
        // tokio 1.50.0 against 1.51.0, six runs each: a range that three
        // times over would have hidden the move.
        let (none, some) = (
            traced(&[0.0; 6]),
            traced(&[0.21, 0.38, 0.45, 0.34, 0.38, 0.51]),
        );
        let f = &compare(&none, &some, Kind::Wakes).0[0];
        assert!(f.told && f.variation > f.own_moved() / 3.0, "{f:?}");
        assert_eq!(f.runs[1].len(), 6);
        // One run of the candidate among the baseline's: not told.
        let among = traced(&[0.0, 0.38, 0.45, 0.34, 0.38, 0.51]);
        assert!(!compare(&none, &among, Kind::Wakes).0[0].told);
        // Apart, but by less than the floor: not told.
        let (low, high) = (traced(&[0.50; 6]), traced(&[0.55; 6]));
        assert!(!compare(&low, &high, Kind::Wakes).0[0].told);
    }

    #[test]
    fn a_move_past_the_runs_variation_and_the_floor_is_told_and_first() {
        let baseline = runs(&[
            &[("main;loop", 1000.0, 0.0), ("main;loop;poll", 500.0, 1.0)],
            &[("main;loop", 1010.0, 0.0), ("main;loop;poll", 490.0, 1.0)],
            &[("main;loop", 995.0, 0.0), ("main;loop;poll", 505.0, 1.1)],
        ]);
        let candidate = runs(&[
            &[
                ("main;loop", 1003.0, 0.0),
                ("main;loop;poll", 498.0, 1.0),
                ("main;loop;burn", 400.0, 1.0),
            ],
            &[
                ("main;loop", 1008.0, 0.0),
                ("main;loop;poll", 502.0, 1.1),
                ("main;loop;burn", 401.0, 1.0),
            ],
            &[
                ("main;loop", 999.0, 0.0),
                ("main;loop;poll", 495.0, 1.0),
                ("main;loop;burn", 399.0, 1.0),
            ],
        ]);
        for kind in [Kind::Instructions, Kind::Syscalls] {
            let (functions, _) = compare(&baseline, &candidate, kind);
            assert_eq!(functions[0].name, "burn", "{kind:?}");
            assert!(functions[0].told, "{kind:?}");
            // Its callers moved with their callees, not by their own.
            let main = functions.iter().find(|f| f.name == "main").unwrap();
            assert!(!main.told && main.inclusive_moved() > 0.9, "{kind:?}");
            assert!(functions[1..].iter().all(|f| !f.told), "{kind:?}");
            // The same runs on both sides tell nothing; nor does one run a side.
            assert!(
                compare(&baseline, &baseline, kind)
                    .0
                    .iter()
                    .all(|f| !f.told)
            );
            assert!(
                compare(&baseline[..1], &candidate[..1], kind)
                    .0
                    .iter()
                    .all(|f| !f.told)
            );
        }
        let (functions, totals) = compare(&baseline, &candidate, Kind::Instructions);
        assert_eq!(functions[0].own_moved(), 400.0);
        assert_eq!(totals, [1500.0, 1901.0]);
    }

    #[test]
    fn a_sampled_move_within_its_sampling_error_is_not_told() {
        let sampled = |ns: f64, variance: f64| -> Vec<PerBlock> {
            (0..3)
                .map(|i| {
                    let cost = Cost {
                        cpu_ns: ns + i as f64,
                        cpu_variance: variance,
                        ..Cost::default()
                    };
                    [("main;echo".to_string(), cost)].into_iter().collect()
                })
                .collect()
        };
        // 1,000 ns more, past the runs' range and the floor: told where
        // sampling knows it to 100 ns, not where to 1,000.
        for (sd, told) in [(100.0, true), (1000.0, false)] {
            let variance = sd * sd / 2.0;
            let (functions, _) = compare(
                &sampled(10_000.0, variance),
                &sampled(11_000.0, variance),
                Kind::Cpu,
            );
            let echo = &functions[0];
            assert_eq!((echo.name.as_str(), echo.told), ("echo", told), "{echo:?}");
            assert!((echo.error - sd).abs() < 1e-6, "{echo:?}");
        }
    }
}
