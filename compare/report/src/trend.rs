//! A series of releases side by side (a range, `tokio@1.45.0..1.54.1`, or
//! releases named one by one, `tokio@1.50.0,tokio@1.52.2`): at each load,
//! the figures release by release, and the steps between consecutive
//! releases that `compare check`'s rule confirms (the releases ran
//! interleaved in one run, so paired; each pair of releases its own
//! check), listed worst first.

use std::collections::BTreeSet;

use super::grid::{Entry, Grid, figure};
use super::open_loop::runs_median;
use model::implementation::{Spec, Versions};
use model::matrix::{Load, Workload};
use model::results::{Cell, Results, Status, registry};
use model::stats::Verdict;
use model::verdicts::findings::change;
use model::verdicts::{Judgement, Rule, badness, judge, within};

/// A step between two consecutive releases of a range.
#[derive(Debug, Clone)]
pub struct Step {
    pub before: String,
    pub after: String,
    pub judgement: Judgement,
}

/// Every step of every range that `compare check` confirms, worst first,
/// and how many figures its intervals flagged that it did not confirm.
pub struct Steps {
    pub confirmed: Vec<Step>,
    pub unconfirmed: usize,
}

/// The workloads and loads the releases `names` ran at, in order.
pub fn loads(results: &Results, names: &[String]) -> BTreeSet<(Workload, Load)> {
    results
        .cells
        .iter()
        .filter(|c| names.contains(&c.implementation))
        .map(|c| (c.workload(), c.load()))
        .collect()
}

/// The cell of release `name` in a workload at a load.
pub fn cell<'a>(
    results: &'a Results,
    name: &str,
    workload: Workload,
    load: Load,
) -> Option<&'a Cell> {
    results
        .cells
        .iter()
        .find(|c| c.implementation == name && (c.workload(), c.load()) == (workload, load))
}

/// Every step of every range that `compare check` confirms.
pub fn steps(results: &Results) -> Steps {
    let (mut steps, mut unconfirmed) = (Vec::new(), 0);
    for range in &results.release_series() {
        let names = range.names();
        for pair in names.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            // A release with no figure (it did not build) has nothing to judge.
            let Ok(sides) = within("", results, before, after) else {
                continue;
            };
            let Ok(comparison) = judge(&sides, Rule::default_for(true)) else {
                continue;
            };
            for judgement in comparison.judgements {
                match judgement.counts() {
                    Verdict::NoChange if judgement.verdict != Verdict::NoChange => unconfirmed += 1,
                    Verdict::NoChange => {}
                    _ => steps.push(Step {
                        before: before.clone(),
                        after: after.clone(),
                        judgement,
                    }),
                }
            }
        }
    }
    steps.sort_by(|a, b| badness(&b.judgement).total_cmp(&badness(&a.judgement)));
    Steps {
        confirmed: steps,
        unconfirmed,
    }
}

/// For each range and load, a table of its releases; then the steps.
pub fn tables(results: &Results) -> Vec<Grid> {
    let mut grids = Vec::new();
    let steps = steps(results);
    let series = results.release_series();
    for range in &series {
        let names = range.names();
        for (workload, load) in loads(results, &names) {
            let cell = |name: &str| cell(results, name, workload, load);
            grids.push(Grid {
                title: format!(
                    "Releases of {}, {}, {}: MiB/s, p99 round trip, \
                     server CPU per block, and the step from the release before where \
                     compare check confirms it",
                    range.krate,
                    load.label(),
                    workload.label(),
                ),
                header: ["release", "MiB/s", "p99 us", "server us/block", "step"]
                    .map(String::from)
                    .into(),
                rows: names
                    .iter()
                    .enumerate()
                    .map(|(i, name)| {
                        let step = match i {
                            0 => String::new(),
                            _ => step_text(&steps.confirmed, &names[i - 1], name, workload, load),
                        };
                        row(name, cell(name), step)
                    })
                    .collect(),
            });
        }
    }
    if !series.is_empty() {
        grids.push(Grid {
            title: format!(
                "Steps between consecutive releases that compare check confirms, worst first \
                 (paired: the releases ran interleaved; each pair of releases a check, its \
                 figures judged together); {} more figure(s) flagged by their own intervals \
                 alone, unconfirmed, are left out",
                steps.unconfirmed
            ),
            header: [
                "cell",
                "figure",
                "from",
                "to",
                "change [95% interval]",
                "verdict",
            ]
            .map(String::from)
            .into(),
            rows: steps
                .confirmed
                .iter()
                .map(|s| {
                    let f = &s.judgement;
                    [
                        f.cell.clone(),
                        f.metric.label.into(),
                        s.before.clone(),
                        s.after.clone(),
                        change(f),
                        f.verdict.word().into(),
                    ]
                    .into_iter()
                    .map(Entry::plain)
                    .collect()
                })
                .collect(),
        });
    }
    grids
}

fn row(name: &str, cell: Option<&Cell>, step: String) -> Vec<Entry> {
    let version = match Spec::parse(name).map(|s| s.versions) {
        Ok(Versions::Exact(v)) => v.to_string(),
        _ => name.to_string(),
    };
    let Some(cell) = cell else {
        return [version, "-".into(), "-".into(), "-".into(), step]
            .map(Entry::plain)
            .into();
    };
    if cell.status != Status::Ok {
        let why = cell.unavailable.clone().unwrap_or_else(|| "failed".into());
        return [version, why, "-".into(), "-".into(), step]
            .map(Entry::plain)
            .into();
    }
    let p99 = runs_median(&cell.runs, |r| Some(r.rtt.as_ref()?.p99_us));
    let cpu = cell
        .summary(registry::figure("server_cpu_us_per_block"))
        .map(|s| s.median);
    [
        version,
        figure(cell, None),
        p99.map_or("-".into(), |v| format!("{v:.0}")),
        cpu.map_or("-".into(), |v| format!("{v:.1}")),
        step,
    ]
    .map(Entry::plain)
    .into()
}

/// The steps from `before` to `after` in one workload at one load, as one line.
fn step_text(steps: &[Step], before: &str, after: &str, workload: Workload, load: Load) -> String {
    let found: Vec<String> = steps
        .iter()
        .filter(|s| s.before == before && s.after == after)
        .filter(|s| {
            let k = &s.judgement.key;
            (k.workload, k.load) == (workload, load)
        })
        .map(|s| {
            format!(
                "{} {} {}",
                s.judgement.metric.label,
                change(&s.judgement),
                s.judgement.word()
            )
        })
        .collect();
    found.join("; ")
}
