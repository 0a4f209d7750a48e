//! `compare bisect`: the first release of a crate whose figure differs from
//! a good release's, by binary search over the releases between a good and
//! a bad one. Each step is a `compare run` of the candidate paired with the
//! good release (interleaved, in a folder of its own) and `compare check`'s
//! verdict on it; a last run puts the release found beside the one before
//! it, to say whether the verdicts held or were not monotonic.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use semver::Version;

use crate::check::verdicts::{Metric, Thresholds, judge, within};
use crate::implementation::Implementation;
use crate::releases;
use crate::results::Results;
use crate::stats::Verdict;
use crate::{defaults, report};

/// What `compare bisect` was asked.
pub struct Options {
    /// One of our implementations (its crate's releases are searched).
    pub name: String,
    pub good: String,
    pub bad: String,
    pub threads: usize,
    pub connections: usize,
    pub metric: Metric,
    pub repeat: usize,
    /// Options every step's `compare run` gets as well (--seconds, ...).
    pub run_args: Vec<String>,
    /// The smallest change that counts, as a fraction.
    pub threshold: f64,
    pub out: PathBuf,
}

/// How the search ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// The first release that differs, and whether the last run confirmed it.
    Release { version: String, monotonic: bool },
    /// GOOD and BAD did not differ at this load: nothing to search.
    NoDifference,
}

pub fn bisect(options: &Options) -> Result<Found> {
    let Implementation::Ours { adapter, knobs, .. } = Implementation::parse(&options.name, &[])?
    else {
        bail!("{}: only our implementations have releases", options.name);
    };
    let (good, bad) = (
        Version::parse(&options.good)?,
        Version::parse(&options.bad)?,
    );
    ensure!(good < bad, "GOOD {good} must be older than BAD {bad}");
    let found = releases::between(adapter.krate, &good, &bad, false)?;
    let versions = found.versions;
    ensure!(
        versions.first() == Some(&options.good) && versions.last() == Some(&options.bad),
        "{} {} and {} must both be releases cargo's index lists (not yanked)",
        adapter.krate,
        options.good,
        options.bad
    );
    println!(
        "bisecting {} releases of {} from {} (good) to {} (bad), {} at {} thread(s), {} connections",
        versions.len(),
        adapter.krate,
        options.good,
        options.bad,
        options.metric.name(),
        options.threads,
        options.connections
    );
    // A configuration keeps its knobs in every release: tokio@1.2.3{event_interval=1}.
    let name = |v: &str| format!("{}@{v}{knobs}", adapter.name);
    let mut step = 0;
    let mut measure = |candidates: &[&str]| -> Result<(PathBuf, Vec<Verdict>)> {
        step += 1;
        let dir = options.out.join(format!("step-{step}"));
        let mut runtimes = vec![name(&options.good)];
        runtimes.extend(candidates.iter().map(|v| name(v)));
        run(options, &runtimes, &dir)?;
        let results = Results::load(&report::results_file(&dir))?;
        let verdicts = candidates
            .iter()
            .map(|v| verdict(options, &results, &runtimes[0], &name(v)))
            .collect::<Result<_>>()?;
        Ok((dir, verdicts))
    };

    let (_, first) = measure(&[&options.bad])?;
    let direction = first[0];
    report_step(options, &options.bad, direction);
    if direction == Verdict::NoChange {
        println!(
            "{} does not differ from {} at this load: nothing to bisect",
            options.bad, options.good
        );
        return Ok(Found::NoDifference);
    }
    // versions[lo] is like GOOD, versions[hi] like BAD.
    let (mut lo, mut hi) = (0, versions.len() - 1);
    let mut monotonic = true;
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        let (_, verdict) = measure(&[&versions[mid]])?;
        report_step(options, &versions[mid], verdict[0]);
        match verdict[0] {
            v if v == direction => hi = mid,
            Verdict::NoChange => lo = mid,
            _ => {
                println!(
                    "  {} changed the other way: the verdicts are not monotonic",
                    versions[mid]
                );
                monotonic = false;
                lo = mid;
            }
        }
    }
    let (before, first_bad) = (&versions[lo], &versions[hi]);
    // The release found beside the one before it, in one more run.
    let mut last: Vec<&str> = Vec::new();
    if lo > 0 {
        last.push(before);
    }
    last.push(first_bad);
    let (dir, confirm) = measure(&last)?;
    let expected: Vec<Verdict> = match lo {
        0 => vec![direction],
        _ => vec![Verdict::NoChange, direction],
    };
    if confirm != expected {
        monotonic = false;
        println!(
            "the last run did not confirm it: against {} it judged {}; the verdicts are not \
             monotonic (noise, or a change that came and went), so no single release is to blame",
            options.good,
            last.iter()
                .zip(&confirm)
                .map(|(v, verdict)| format!("{v} {}", verdict.word()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let link =
        releases::link(adapter.krate, first_bad).map_or(String::new(), |url| format!(" ({url})"));
    println!(
        "first release that differs from {}: {} {first_bad}{link}{}",
        options.good,
        adapter.krate,
        if monotonic { "" } else { ", not confirmed" }
    );
    println!(
        "reproduce: compare run --runtimes {} --connections {} --threads {} --repeat {} \
         --no-cost{} --out DIR && compare check DIR --baseline {} --candidate {}",
        [name(before), name(first_bad)].join(","),
        options.connections,
        options.threads,
        options.repeat,
        options
            .run_args
            .iter()
            .map(|a| format!(" {a}"))
            .collect::<String>(),
        name(before),
        name(first_bad),
    );
    println!("the last run: {}", dir.display());
    Ok(Found::Release {
        version: first_bad.clone(),
        monotonic,
    })
}

fn report_step(options: &Options, version: &str, verdict: Verdict) {
    println!("  {version} against {}: {}", options.good, verdict.word());
}

/// `compare run` of `runtimes` at the load, into `dir`.
fn run(options: &Options, runtimes: &[String], dir: &Path) -> Result<()> {
    let compare = std::env::current_exe().context("locating the compare executable")?;
    let mut command = Command::new(compare);
    command.args([
        "run",
        "--quiet",
        "--no-cost",
        "--runtimes",
        &runtimes.join(","),
        "--connections",
        &options.connections.to_string(),
        "--threads",
        &options.threads.to_string(),
        "--repeat",
        &options.repeat.to_string(),
        "--out",
    ]);
    command.arg(dir).args(&options.run_args);
    let status = command.status().context("running compare run")?;
    // 1: a cell failed; its verdict below says it has no figure.
    ensure!(
        matches!(status.code(), Some(0 | 1)),
        "compare run for {} ended with {status}",
        runtimes.join(", ")
    );
    Ok(())
}

/// `compare check`'s verdict on `metric` of `candidate` against `baseline`.
fn verdict(
    options: &Options,
    results: &Results,
    baseline: &str,
    candidate: &str,
) -> Result<Verdict> {
    let sides = within("", results, baseline, candidate)?;
    let thresholds = Thresholds {
        timed: options.threshold,
        counted: defaults::COUNTED_THRESHOLD_PERCENT / 100.0,
    };
    let comparison = judge(&sides, thresholds, defaults::CONFIDENCE)
        .with_context(|| format!("judging {candidate} against {baseline}"))?;
    comparison
        .findings
        .iter()
        .find(|f| f.metric == options.metric)
        .map(|f| f.verdict)
        .with_context(|| format!("no {} of {candidate} to judge", options.metric.name()))
}
