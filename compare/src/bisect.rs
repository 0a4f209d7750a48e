//! `compare bisect`: the first release of a crate whose figure differs from
//! a good release's, by binary search over the releases between a good and
//! a bad one; or with `--git`, the first commit, over a repository's
//! first-parent commits between two revisions. Each step is a run of the candidate paired with the good
//! release (interleaved, in a folder of its own, through the run module in
//! this process) and `compare check`'s verdict on it, by its rule and on
//! the same figures: a flag it does not confirm gets more rounds, up to a
//! cap, the rule's false alarms shared among those looks. A last run puts
//! the release found beside the one before it, to say whether the verdicts
//! held or were not monotonic.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use semver::Version;

use crate::{explain, run};
use measure::{binaries, releases};
use model::implementation::Implementation;
use model::results::{Cell, Config, Results, Status};
use model::shell::shell_words;
use model::stats::Verdict;
use model::verdicts::{Metric, Rule, Thresholds, judge, within};
use model::{defaults, revision};

/// What `compare bisect` was asked.
pub struct Options {
    /// One of our implementations (its crate's releases are searched).
    pub name: String,
    pub good: String,
    pub bad: String,
    /// A git repository whose commits are searched instead of releases.
    pub git: Option<String>,
    /// The figures judged, as `compare check` judges them together: a step
    /// differs where any figure of any of its cells does.
    pub metrics: Vec<Metric>,
    /// Every step's run as `compare run` validated it (its matrix,
    /// repetitions, window and cost runs), its implementations aside.
    pub step: Config,
    /// The options that make that run, as a person reproduces it.
    pub step_options: Vec<String>,
    /// The cargo profile the releases are built with.
    pub profile: String,
    /// The smallest change that counts, as a fraction, whatever the
    /// figure's kind; none: the paired threshold of each figure's kind.
    pub threshold: Option<f64>,
    pub out: PathBuf,
    /// Explain the last run's pair ([`crate::explain`]) so, and name the
    /// functions that moved most.
    pub explain: Option<explain::Settings>,
}

/// How the search ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// The first release (or commit) that differs, and whether the last run
    /// confirmed it.
    First { version: String, monotonic: bool },
    /// GOOD and BAD did not differ at this load: nothing to search.
    NoDifference,
}

pub fn bisect(options: &Options) -> Result<Found> {
    let Implementation::Ours { adapter, knobs, .. } = Implementation::parse(&options.name, &[])?
    else {
        bail!("{}: only our implementations have releases", options.name);
    };
    let mut search = Search {
        versions: versions(options, adapter.krate)?,
        options,
        adapter,
        knobs: knobs.to_string(),
        steps: 0,
    };
    search.introduce();
    let good = search.versions[0].clone();
    ensure!(
        search.builds(&good),
        "GOOD {} does not build: nothing to compare with",
        options.good
    );
    let bad = search
        .versions
        .last()
        .expect("GOOD and BAD at least")
        .clone();
    ensure!(search.builds(&bad), "BAD {} does not build", options.bad);
    let (_, first) = search.measure(&[&bad])?;
    let direction = overall(&first[0]);
    report_step(options, &search.label(&bad), &first[0]);
    if direction == Verdict::NoChange {
        println!(
            "{} does not differ from {} at these loads: nothing to bisect",
            options.bad, options.good
        );
        return Ok(Found::NoDifference);
    }
    let (lo, mut monotonic) = search.narrow(direction)?;
    let (dir, cells) = search.confirm(lo, direction, &mut monotonic)?;
    let (before, first_bad) = (&search.versions[lo], &search.versions[lo + 1]);
    search.announce(first_bad, monotonic);
    // Which cells flip there, as the last run judged the one found.
    if let Some(found) = cells.last().filter(|c| c.len() > 1) {
        println!("at {}: {}", search.label(first_bad), each_cell(found));
    }
    let specs = [search.spec(before), search.spec(first_bad)];
    let names = specs
        .clone()
        .map(|s| Implementation::parse(&s, &[]).map_or(s, |i| i.name()));
    println!(
        "reproduce: {} && compare check DIR --baseline {} --candidate {}",
        run_command(options, &specs, Path::new("DIR")),
        shell_words([names[0].as_str()].into_iter()),
        shell_words([names[1].as_str()].into_iter()),
    );
    println!("the last run: {}", dir.display());
    if let Some(settings) = &options.explain {
        search.explain(&dir, names, first_bad, settings)?;
    }
    Ok(Found::First {
        version: first_bad.clone(),
        monotonic,
    })
}

/// The releases of `krate` from GOOD to BAD, or with --git the commits.
fn versions(options: &Options, krate: &str) -> Result<Vec<String>> {
    if let Some(url) = &options.git {
        let folder = defaults::versions_folder()?;
        return revision::commits(url, &options.good, &options.bad, 1, &folder);
    }
    let (good, bad) = (
        Version::parse(&options.good)?,
        Version::parse(&options.bad)?,
    );
    ensure!(good < bad, "GOOD {good} must be older than BAD {bad}");
    let versions = releases::between(krate, &good, &bad, false)?.versions;
    ensure!(
        versions.first() == Some(&options.good) && versions.last() == Some(&options.bad),
        "{krate} {} and {} must both be releases cargo's index lists (not yanked)",
        options.good,
        options.bad
    );
    Ok(versions)
}

/// A bisection under way: the versions left, and the steps run so far.
struct Search<'a> {
    options: &'a Options,
    adapter: &'static model::adapters::Adapter,
    knobs: String,
    /// From GOOD to BAD, less those that did not build.
    versions: Vec<String>,
    steps: usize,
}

impl Search<'_> {
    /// A version as `--runtimes` names it: a configuration keeps its knobs
    /// in every version (tokio@1.2.3{event_interval=1}).
    fn spec(&self, v: &str) -> String {
        match &self.options.git {
            None => format!("{}@{v}{}", self.adapter.name, self.knobs),
            Some(url) => format!("{}@git:{url}#{v}{}", self.adapter.name, self.knobs),
        }
    }

    /// What the lines call a version: a release, or a commit with its subject.
    fn label(&self, v: &str) -> String {
        match Implementation::parse(&self.spec(v), &[])
            .ok()
            .and_then(|i| i.source().cloned())
        {
            Some(source) => format!("{} {:?}", &source.commit[..10], source.subject),
            None => v.to_string(),
        }
    }

    /// The search's first line: what is searched, and how each step judges.
    fn introduce(&self) {
        let options = self.options;
        let what = match &options.git {
            None => format!("releases of {}", self.adapter.krate),
            Some(url) => format!("first-parent commits of {url}"),
        };
        let metrics: Vec<&str> = options.metrics.iter().map(|m| m.key).collect();
        let metrics = match metrics.len() {
            n if n > 4 => format!("{n} figures, as compare check judges them,"),
            _ => metrics.join(", "),
        };
        println!(
            "bisecting {} {what} from {} (good) to {} (bad), judging {metrics} of {} cells a step ({})",
            self.versions.len(),
            options.good,
            options.bad,
            options.step.workloads().len() * options.step.loads.len(),
            shell_words(options.step_options.iter().map(String::as_str)),
        );
    }

    /// Like `git bisect skip`: a version that does not build is named and
    /// left out, and the search goes on with its neighbours.
    fn builds(&self, v: &str) -> bool {
        let built = Implementation::parse(&self.spec(v), &[])
            .and_then(|i| binaries::locate(&[i], &[], None, &self.options.profile));
        match built {
            Ok(_) => true,
            Err(e) => {
                let why = format!("{e:#}");
                let why = why.lines().next().unwrap_or_default().to_string();
                println!("  skipped {}: does not build ({why})", self.label(v));
                false
            }
        }
    }

    /// A step: `candidates` run beside GOOD in a folder of their own, each
    /// judged against it. An inconclusive verdict gets more rounds, in the
    /// same run, up to the cap.
    fn measure(&mut self, candidates: &[&str]) -> Result<(PathBuf, Vec<Cells>)> {
        let options = self.options;
        self.steps += 1;
        let dir = options.out.join(format!("step-{}", self.steps));
        let mut specs = vec![self.spec(&self.versions[0])];
        specs.extend(candidates.iter().map(|v| self.spec(v)));
        let config = step_config(options, &specs, &dir)?;
        let names = config.implementations.clone();
        let config = Box::new(config);
        let out = dir.clone();
        run(options, run::Start::Fresh { config, out })?;
        for more in 0.. {
            let mut results = Results::load(&model::results::file::named(&dir))?;
            let judged = names[1..]
                .iter()
                .map(|name| judge_step(options, &results, &names[0], name))
                .collect::<Result<Vec<_>>>()?;
            // More rounds could confirm a flag, where nothing is yet.
            let inconclusive = judged.iter().any(|cells| {
                overall(&verdicts(cells)) == Verdict::NoChange
                    && cells.iter().any(|(_, step)| *step == Step::Inconclusive)
            });
            if more == MORE_ROUNDS || !inconclusive {
                return Ok((dir, judged.iter().map(|c| verdicts(c)).collect()));
            }
            println!(
                "  flagged, not confirmed, after {} runs each: {} more",
                results.config.repeat, options.step.repeat
            );
            results.config.repeat += options.step.repeat;
            results.save(&model::results::file::in_folder(&dir))?;
            run(options, run::Start::Resume(dir.clone()))?;
        }
        unreachable!("the rounds end at the cap")
    }

    /// Binary search between GOOD (like itself) and BAD (differing in
    /// `direction`): the last version like GOOD, the next one differing,
    /// and whether every step's verdict agreed with that order.
    fn narrow(&mut self, direction: Verdict) -> Result<(usize, bool)> {
        let (mut lo, mut hi) = (0, self.versions.len() - 1);
        let mut monotonic = true;
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            let version = self.versions[mid].clone();
            if !self.builds(&version) {
                self.versions.remove(mid);
                hi -= 1;
                continue;
            }
            let (_, cells) = self.measure(&[&version])?;
            report_step(self.options, &self.label(&version), &cells[0]);
            match overall(&cells[0]) {
                v if v == direction => hi = mid,
                Verdict::NoChange => lo = mid,
                _ => {
                    println!(
                        "  {} changed the other way: the verdicts are not monotonic",
                        self.label(&version)
                    );
                    monotonic = false;
                    lo = mid;
                }
            }
        }
        Ok((lo, monotonic))
    }

    /// The version found (after `lo`) beside the one before it, in one
    /// more run: `monotonic` no longer where that run disagrees.
    fn confirm(
        &mut self,
        lo: usize,
        direction: Verdict,
        monotonic: &mut bool,
    ) -> Result<(PathBuf, Vec<Cells>)> {
        let versions = self.versions.clone();
        // GOOD itself is every step's baseline already.
        let last: Vec<&str> = versions[lo.max(1)..=lo + 1]
            .iter()
            .map(String::as_str)
            .collect();
        let (dir, cells) = self.measure(&last)?;
        let confirm: Vec<Verdict> = cells.iter().map(|c| overall(c)).collect();
        let expected: Vec<Verdict> = match lo {
            0 => vec![direction],
            _ => vec![Verdict::NoChange, direction],
        };
        if confirm != expected {
            *monotonic = false;
            println!(
                "the last run did not confirm it: against {} it judged {}; the verdicts are not \
                 monotonic (noise, or a change that came and went), so no single version is to blame",
                self.options.good,
                last.iter()
                    .zip(&confirm)
                    .map(|(v, verdict)| format!("{} {}", self.label(v), verdict.word()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        Ok((dir, cells))
    }

    /// The line that names the version found, and where to read about it.
    fn announce(&self, first_bad: &str, monotonic: bool) {
        let (good, krate) = (&self.options.good, self.adapter.krate);
        let unconfirmed = if monotonic { "" } else { ", not confirmed" };
        let Ok(Some(source)) =
            Implementation::parse(&self.spec(first_bad), &[]).map(|i| i.source().cloned())
        else {
            let link =
                releases::link(krate, first_bad).map_or(String::new(), |url| format!(" ({url})"));
            println!(
                "first release that differs from {good}: {krate} {first_bad}{link}{unconfirmed}"
            );
            return;
        };
        let link = source
            .link()
            .map_or(String::new(), |url| format!(" ({url})"));
        println!(
            "first commit that differs from {good}: {} {:?} ({}){link}{unconfirmed}",
            source.commit, source.subject, source.date,
        );
    }

    /// The last run's pair explained, and the functions that moved most named.
    fn explain(
        &self,
        dir: &Path,
        [baseline, candidate]: [String; 2],
        first_bad: &str,
        settings: &explain::Settings,
    ) -> Result<()> {
        let results = model::results::file::named(dir);
        let explain = explain::Options {
            out: explain::default_out([&results, &results], &baseline, &candidate),
            results,
            candidate_results: None,
            baseline,
            candidate,
            cells: Vec::new(),
            settings: settings.clone(),
        };
        let explained = explain::explain(&explain, |line| eprintln!("{line}"))?;
        println!(
            "{} {}: moved most: {} (explained in {})",
            self.adapter.krate,
            self.label(first_bad),
            explain::most_moved(&explained),
            explain.out.display()
        );
        Ok(())
    }
}

/// A candidate's verdict on each judged figure of each cell, the figure
/// and the cell in words.
type Cells = Vec<(String, Verdict)>;

/// The verdicts of a candidate's steps, an unconfirmed flag no change.
fn verdicts(steps: &[(String, Step)]) -> Cells {
    steps
        .iter()
        .map(|(at, s)| (at.clone(), s.verdict()))
        .collect()
}

/// A step's verdict: it differs where any cell does (a regression first).
fn overall(cells: &[(String, Verdict)]) -> Verdict {
    let any = |v: Verdict| cells.iter().any(|(_, w)| *w == v);
    [Verdict::Regressed, Verdict::Improved]
        .into_iter()
        .find(|&v| any(v))
        .unwrap_or(Verdict::NoChange)
}

/// The cells' verdicts, where they are not all the same: "(REGRESSED at
/// 2 threads, 1000 connections, no change at 1 thread, 1000 connections)".
fn which_cells(cells: &[(String, Verdict)]) -> String {
    if cells.iter().all(|(_, v)| *v == cells[0].1) {
        return String::new();
    }
    format!(" ({})", each_cell(cells))
}

/// Every cell's verdict, where it is not no change: all of them where none
/// changed.
fn each_cell(cells: &[(String, Verdict)]) -> String {
    let changed: Vec<&(String, Verdict)> = cells
        .iter()
        .filter(|(_, v)| *v != Verdict::NoChange)
        .collect();
    let shown = match changed.is_empty() || changed.len() == cells.len() {
        true => cells.iter().collect(),
        false => changed,
    };
    let each: Vec<String> = shown
        .iter()
        .map(|(what, v)| format!("{} at {what}", v.word()))
        .collect();
    let rest = cells.len() - shown.len();
    match rest {
        0 => each.join(", "),
        n => format!("{}; no change in the other {n}", each.join(", ")),
    }
}

fn report_step(options: &Options, label: &str, cells: &[(String, Verdict)]) {
    println!(
        "  {label} against {}: {}{}",
        options.good,
        overall(cells).word(),
        which_cells(cells)
    );
}

/// The command line of a step's run of `runtimes` into `dir`.
fn run_command(options: &Options, runtimes: &[String], dir: &Path) -> String {
    let mut words: Vec<String> = ["compare", "run", "--runtimes"].map(String::from).into();
    words.push(runtimes.join(","));
    words.extend(options.step_options.iter().cloned());
    words.extend(["--out".to_string(), dir.to_string_lossy().into_owned()]);
    shell_words(words.iter().map(String::as_str))
}

/// A step's run of `specs` at the load, into `dir`, as its results record it.
fn step_config(options: &Options, specs: &[String], dir: &Path) -> Result<Config> {
    let implementations: Vec<Implementation> = specs
        .iter()
        .map(|s| Implementation::parse(s, &[]))
        .collect::<Result<_>>()?;
    Ok(Config {
        implementations: implementations.iter().map(Implementation::name).collect(),
        sources: implementations
            .iter()
            .filter_map(Implementation::source)
            .cloned()
            .collect(),
        command: run_command(options, specs, dir),
        started: chrono::Utc::now().to_rfc3339(),
        ..options.step.clone()
    })
}

/// A step's run, fresh or resumed with more rounds.
fn run(options: &Options, start: run::Start) -> Result<()> {
    let dir = match &start {
        run::Start::Fresh { out, .. } => out.clone(),
        run::Start::Resume(dir) => dir.clone(),
    };
    let outcome = run::run(run::Options {
        start,
        quiet: true,
        bin_dir: None,
        profile: options.profile.clone(),
        // A step is an experiment of the bisect's, in its folder alone.
        history: None,
    })
    .with_context(|| format!("the run in {}", dir.display()))?;
    // A failed cell is judged below: its verdict says it has no figure.
    ensure!(
        outcome != run::Outcome::Interrupted,
        "interrupted; the steps so far are in {}",
        options.out.display()
    );
    Ok(())
}

/// `candidate`'s cells that failed by passing a deadline, and why.
fn timed_out<'a>(
    results: &'a Results,
    candidate: &'a str,
) -> impl Iterator<Item = (&'a Cell, &'a str)> {
    results
        .cells
        .iter()
        .filter(move |c| c.implementation == candidate && c.status == Status::Failed)
        .filter_map(|c| Some((c, c.error.as_deref()?)))
        .filter(|(_, e)| e.contains("passed its deadline"))
}

/// How many times an inconclusive step adds `repeat` rounds before it
/// takes what it has.
const MORE_ROUNDS: usize = 2;

/// How many times a step may be judged: each look's verdicts allow a
/// share of the rule's false alarms.
const LOOKS: usize = MORE_ROUNDS + 1;

/// What a step's run says of a candidate's figure against GOOD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Settled(Verdict),
    /// Flagged by its interval, not confirmed with the other figures:
    /// more runs could still tell.
    Inconclusive,
}

impl Step {
    /// The verdict; an inconclusive step's, once it has had its rounds, is no change.
    fn verdict(self) -> Verdict {
        match self {
            Self::Settled(v) => v,
            Self::Inconclusive => Verdict::NoChange,
        }
    }

    /// A figure's flag, and whether the rule confirmed it.
    fn of(flag: Verdict, confirmed: bool) -> Self {
        match (flag, confirmed) {
            (Verdict::NoChange, _) => Self::Settled(Verdict::NoChange),
            (v, true) => Self::Settled(v),
            (_, false) => Self::Inconclusive,
        }
    }
}

/// `compare check`'s verdict on the judged figures of `candidate` against
/// `baseline` in each cell: a cell whose run passed its deadline is slow,
/// not an error.
fn judge_step(
    options: &Options,
    results: &Results,
    baseline: &str,
    candidate: &str,
) -> Result<Vec<(String, Step)>> {
    let mut cells: Vec<(String, Step)> = timed_out(results, candidate)
        .map(|(cell, why)| {
            let what = cell.key().what();
            println!("  {candidate} at {what} timed out ({why}): counted as slow");
            (what, Step::Settled(Verdict::Regressed))
        })
        .collect();
    let sides = within("", results, baseline, candidate)?.only(&options.metrics);
    let mut rule = Rule {
        looks: LOOKS,
        ..Rule::default_for(true)
    };
    // --threshold is every judged figure's, whatever its kind.
    if let Some(t) = options.threshold {
        rule.thresholds = Thresholds {
            timed: t,
            cost: t,
            counted: t,
        };
    }
    let comparison =
        judge(&sides, rule).with_context(|| format!("judging {candidate} against {baseline}"))?;
    cells.extend(comparison.judgements.iter().map(|f| {
        let step = Step::of(f.verdict, f.confirmed);
        (format!("{}, {}", f.metric.label, f.key.what()), step)
    }));
    ensure!(
        !cells.is_empty(),
        "no {} of {candidate} to judge",
        options
            .metrics
            .iter()
            .map(|m| m.key)
            .collect::<Vec<_>>()
            .join(" or ")
    );
    cells.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_is_settled_only_where_the_rule_confirms_it() {
        assert_eq!(
            Step::of(Verdict::NoChange, false),
            Step::Settled(Verdict::NoChange)
        );
        assert_eq!(
            Step::of(Verdict::Regressed, true),
            Step::Settled(Verdict::Regressed)
        );
        // Flagged, not confirmed: more rounds could tell.
        assert_eq!(Step::of(Verdict::Regressed, false), Step::Inconclusive);
        assert_eq!(Step::of(Verdict::Improved, false), Step::Inconclusive);
        assert_eq!(Step::Inconclusive.verdict(), Verdict::NoChange);
    }

    #[test]
    fn a_candidate_that_passed_its_deadline_timed_out_and_one_that_crashed_did_not() {
        let mut results = model::fixtures::small();
        let candidate = results.cells[0].implementation.clone();
        let why = |results: &Results| -> Vec<String> {
            timed_out(results, &candidate)
                .map(|(_, why)| why.to_string())
                .collect()
        };
        assert!(why(&results).is_empty());
        let cell = &mut results.cells[0];
        cell.status = Status::Failed;
        cell.error = Some("the server exited during the run: SIGABRT".into());
        assert!(why(&results).is_empty());
        let cell = &mut results.cells[0];
        cell.error = Some("the client passed its deadline; killed".into());
        assert_eq!(why(&results), ["the client passed its deadline; killed"]);
    }

    #[test]
    fn a_step_differs_where_any_cell_does_and_says_which() {
        let at = |what: &str, v| (what.to_string(), v);
        let one = vec![at("1 thread", Verdict::NoChange)];
        assert_eq!(overall(&one), Verdict::NoChange);
        assert_eq!(which_cells(&one), "");
        let two = vec![
            at("1 thread", Verdict::NoChange),
            at("2 threads", Verdict::Regressed),
        ];
        assert_eq!(overall(&two), Verdict::Regressed);
        assert_eq!(
            which_cells(&two),
            " (REGRESSED at 2 threads; no change in the other 1)"
        );
        let both = vec![
            at("1 thread", Verdict::Improved),
            at("2 threads", Verdict::Regressed),
        ];
        assert_eq!(
            which_cells(&both),
            " (improved at 1 thread, REGRESSED at 2 threads)"
        );
    }
}
