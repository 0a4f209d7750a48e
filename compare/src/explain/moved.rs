//! Which functions moved between two implementations' counts, by
//! instructions or by system calls, and which of those moves the runs tell
//! from their own variation.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::stacks::{self, Cost, Costs, PerBlock};
use crate::stats;

/// A few instructions of a loop that turns more or less often with the
/// machine's timing are no change: the least move told, per block,
pub const FLOOR_INSTRUCTIONS: f64 = 20.0;
/// or this part of the side's instructions in all, where more;
pub const FLOOR_SHARE: f64 = 0.005;
/// and nor is a fraction of a system call.
pub const FLOOR_SYSCALLS: f64 = 0.5;

/// What a function's move is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Instructions,
    Syscalls,
}

impl Kind {
    fn of(self, cost: &Cost) -> f64 {
        match self {
            Self::Instructions => cost.instructions,
            Self::Syscalls => cost.syscalls,
        }
    }

    /// The least move a function must make to be told, per block, given
    /// the baseline side's cost in all.
    pub fn floor(self, total: f64) -> f64 {
        match self {
            Self::Instructions => (FLOOR_SHARE * total).max(FLOOR_INSTRUCTIONS),
            Self::Syscalls => FLOOR_SYSCALLS,
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Self::Instructions => "instr",
            Self::Syscalls => "syscalls",
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
    /// implementation's runs.
    pub variation: f64,
    /// Whether its own figure moved by more than twice the runs' variation,
    /// and by the kind's floor at least.
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
            let range = |runs| {
                let own = values(runs, false);
                let (lo, hi) = own
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
                hi - lo
            };
            let variation = range(&b).max(range(&c));
            let (baseline, candidate) = (side(&b), side(&c));
            let moved = (candidate[0] - baseline[0]).abs();
            Function {
                name: name.clone(),
                krate: stacks::crate_of(name).map(str::to_string),
                kind,
                baseline,
                candidate,
                variation,
                told: b.len() > 1 && c.len() > 1 && moved > 2.0 * variation && moved >= floor,
            }
        })
        .collect();
    functions.sort_by(|x, y| {
        y.told
            .cmp(&x.told)
            .then(y.own_moved().abs().total_cmp(&x.own_moved().abs()))
            .then(y.candidate[0].total_cmp(&x.candidate[0]))
            .then(x.name.cmp(&y.name))
    });
    (functions, totals)
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
                        };
                        (s.to_string(), cost)
                    })
                    .collect()
            })
            .collect()
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
}
