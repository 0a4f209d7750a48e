//! A series of releases side by side (a range, `tokio@1.45.0..1.54.1`, or
//! releases named one by one, `tokio@1.50.0,tokio@1.52.2`): at each load,
//! the figures release by release, and the steps between consecutive
//! releases that clear the noise by `compare check`'s rule (the releases
//! ran interleaved in one run, so paired), listed worst first.

use std::collections::BTreeSet;

use super::grid::{Entry, Grid, figure};
use super::open_loop::runs_median;
use crate::check::verdicts::{Finding, badness, default_thresholds, judge, within};
use crate::defaults;
use crate::implementation::{Spec, Versions};
use crate::matrix::{Load, Workload};
use crate::results::{Cell, Results, Status, registry};
use crate::stats::Verdict;

/// A step between two consecutive releases of a range.
#[derive(Debug, Clone)]
pub struct Step {
    pub before: String,
    pub after: String,
    pub finding: Finding,
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

/// Every step of every range that clears the noise, worst first.
pub fn steps(results: &Results) -> Vec<Step> {
    let thresholds = default_thresholds(true);
    let mut steps = Vec::new();
    for range in &results.release_series() {
        let names = range.names();
        for pair in names.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            // A release with no figure (it did not build) has nothing to judge.
            let Ok(sides) = within("", results, before, after) else {
                continue;
            };
            let Ok(comparison) = judge(&sides, thresholds, defaults::CONFIDENCE) else {
                continue;
            };
            steps.extend(
                comparison
                    .findings
                    .into_iter()
                    .filter(|f| f.verdict != Verdict::NoChange)
                    .map(|finding| Step {
                        before: before.clone(),
                        after: after.clone(),
                        finding,
                    }),
            );
        }
    }
    steps.sort_by(|a, b| badness(&b.finding).total_cmp(&badness(&a.finding)));
    steps
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
                     server CPU per block, and the step from the release before where it clears \
                     the noise",
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
                            _ => step_text(&steps, &names[i - 1], name, workload, load),
                        };
                        row(name, cell(name), step)
                    })
                    .collect(),
            });
        }
    }
    if !series.is_empty() {
        grids.push(Grid {
            title: "Steps between consecutive releases that clear the noise, worst first \
                    (compare check's rule, paired: the releases ran interleaved)"
                .into(),
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
                .iter()
                .map(|s| {
                    let f = &s.finding;
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
            let k = &s.finding.key;
            (k.workload, k.load) == (workload, load)
        })
        .map(|s| {
            format!(
                "{} {} {}",
                s.finding.metric.label,
                change(&s.finding),
                s.finding.verdict.word()
            )
        })
        .collect();
    found.join("; ")
}

/// "-7.2% [-9.1%, -5.0%]": the change and its interval.
fn change(f: &Finding) -> String {
    let pct = |r: f64| format!("{:+.1}%", (r - 1.0) * 100.0);
    format!("{} [{}, {}]", pct(f.ratio), pct(f.low), pct(f.high))
}
