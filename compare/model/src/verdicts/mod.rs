//! The comparison behind `compare check`: cells matched one to one (two
//! results files, or two versions inside one run); throughput, p99
//! round-trip time, the cost figures and, where both sides were counted,
//! instructions and system calls per block, each judged by the ratio of
//! the two sides with a bootstrap confidence interval, flagged only when
//! the whole interval lies beyond its threshold. Inside one run the timed
//! and cost figures are paired round by round. A flag is confirmed only
//! when it also holds with every other figure of the check judged
//! together ([`Rule`]), and only a confirmed regression fails a check.
//! Every output format renders a [`Comparison`].

pub mod findings;

use std::collections::BTreeMap;
use std::rc::Rc;

use anyhow::{Result, bail};

use crate::defaults;
use crate::results::key::CellKey;
use crate::results::registry::{Figure, Judged};
use crate::results::{Cell, Results, Status};
use crate::stats::{self, Interval, LogChange, Verdict};

/// One output format of `compare check`.
pub trait Render {
    fn render(&self, comparison: &Comparison) -> Result<String>;
}

/// The smallest change that counts, as a fraction (0.05), by kind of figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Throughput and round-trip times.
    pub timed: f64,
    /// What a block cost a side: CPU, context switches, system calls.
    pub cost: f64,
    /// Instructions and system calls per block, counted under callgrind.
    pub counted: f64,
}

impl Thresholds {
    /// The default threshold of `figure`'s kind.
    pub fn of(&self, figure: Metric) -> f64 {
        match figure.judged {
            Some(Judged::Counted) => self.counted,
            Some(Judged::Cost) => self.cost,
            Some(Judged::Timed) | None => self.timed,
        }
    }
}

/// The smallest changes that count by default: between two runs, or
/// between two sides of one run, which ran interleaved (paired).
pub fn default_thresholds(paired: bool) -> Thresholds {
    Thresholds {
        timed: match paired {
            true => defaults::PAIRED_THRESHOLD_PERCENT,
            false => defaults::THRESHOLD_PERCENT,
        } / 100.0,
        cost: match paired {
            true => defaults::PAIRED_COST_THRESHOLD_PERCENT,
            false => defaults::COST_THRESHOLD_PERCENT,
        } / 100.0,
        counted: defaults::COUNTED_THRESHOLD_PERCENT / 100.0,
    }
}

/// The rule every comparison judges by, in `compare check`, bisect, a
/// report's release steps and the site alike. Each figure is flagged when
/// its interval lies beyond its threshold; a flag is confirmed when, with
/// every figure of the comparison judged together, Holm's rule holds its
/// change beyond the threshold (a t test of the change in logarithms,
/// trimmed from ten rounds on, one-sided, both directions of every figure in the family): a candidate
/// no different from its baseline then has any change confirmed in at
/// most 1 - `confidence` of comparisons, however many figures they judge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    pub thresholds: Thresholds,
    /// Of each figure's interval, and of the comparison as a whole.
    pub confidence: f64,
    /// How many times the procedure judges one pair as it adds rounds
    /// (bisect's inconclusive steps): the false alarms it allows are
    /// shared among them.
    pub looks: usize,
}

impl Rule {
    /// The defaults, between two runs or paired inside one, judged once.
    pub fn default_for(paired: bool) -> Self {
        Self {
            thresholds: default_thresholds(paired),
            confidence: defaults::CONFIDENCE,
            looks: 1,
        }
    }

    /// The chance each look may take that a candidate no different from
    /// its baseline has a change confirmed.
    pub fn alpha(&self) -> f64 {
        (1.0 - self.confidence) / self.looks as f64
    }
}

/// Everything judged, and everything that could not be.
pub struct Comparison {
    pub baseline_name: String,
    pub candidate_name: String,
    pub rule: Rule,
    /// Whether the timed figures were paired round by round (one run).
    pub paired: bool,
    /// Every figure judged, worst first.
    pub judgements: Vec<Judgement>,
    /// Cells on one side only, or without a figure.
    pub unmatched: Vec<String>,
    /// The explanations of flagged cells, where there are any.
    pub explanations: Vec<Explanation>,
    /// How the two runs' machines differ, where they do.
    pub machines: Option<String>,
}

/// A flagged cell's explanation (`compare explain`): where its page lies
/// and what it names.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// What the cell measures, as its key says it without an
    /// implementation; between two runs, the implementation's name first.
    pub cell: String,
    pub page: std::path::PathBuf,
    pub summary: String,
}

/// One figure of one matched cell, judged.
#[derive(Debug, Clone)]
pub struct Judgement {
    /// The cell, as "tokio, 1 thread, 1000 connections".
    pub cell: String,
    /// The candidate's implementation, load and workload.
    pub key: Key,
    pub metric: Metric,
    pub baseline: f64,
    pub candidate: f64,
    pub baseline_range: (f64, f64),
    pub candidate_range: (f64, f64),
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    /// The smallest change that counted, as a fraction, and how many past
    /// runs taught it (none: the default for the kind of figure).
    pub threshold: f64,
    pub learned_from: Option<usize>,
    /// Whether the interval lies beyond the threshold, and which way: the
    /// figure's flag, confirmed or not.
    pub verdict: Verdict,
    /// The change in logarithms that the family-wise test judges.
    pub change: LogChange,
    /// The one-sided p value of a change beyond the threshold in the
    /// direction flagged (1 where nothing is).
    pub p: f64,
    /// Whether the flag holds with every figure of the comparison judged
    /// together ([`Rule`]).
    pub confirmed: bool,
    /// Either side's cell was client-bound: the change may be the client's.
    pub client_bound: bool,
}

impl Judgement {
    /// The verdict that counts: the flag where it is confirmed, else no change.
    pub fn counts(&self) -> Verdict {
        match self.confirmed {
            true => self.verdict,
            false => Verdict::NoChange,
        }
    }

    /// How tables say it: a confirmed regression stands out, and a flag
    /// that is not confirmed says so.
    pub fn word(&self) -> &'static str {
        match (self.verdict, self.confirmed) {
            (Verdict::NoChange, _) => Verdict::NoChange.word(),
            (v, true) => v.word(),
            (Verdict::Regressed, false) => "regressed, unconfirmed",
            (Verdict::Improved, false) => "improved, unconfirmed",
        }
    }

    /// Its benchmark's name in the exports: implementation and load.
    pub fn bench_name(&self, comparison: &Comparison) -> String {
        let implementation = if self.key.implementation.is_empty() {
            &comparison.candidate_name
        } else {
            &self.key.implementation
        };
        let w = &self.key.workload;
        let window = match w.window {
            1 => String::new(),
            w => format!(" {w}w"),
        };
        let client = match self.key.load.client_threads {
            Some(n) => format!("/{n}"),
            None => String::new(),
        };
        format!(
            "{implementation} {}t{client} {}c {}B{window}{}",
            self.key.load.threads,
            self.key.load.connections,
            w.block,
            w.beyond_block_and_window()
        )
    }

    /// Whether its figure goes up when it gets worse.
    fn worse_is_up(&self) -> bool {
        !self.metric.bigger_is_better()
    }
}

/// A cell's noise threshold for one figure, learned from its past runs on
/// the candidate's machine: the upper interquartile fence of the changes
/// between consecutive runs' medians, floored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Learned {
    pub runs: usize,
    pub threshold: f64,
}

impl Learned {
    /// From a cell's past medians, oldest first; none with too few runs.
    pub fn from_medians(medians: &[f64]) -> Option<Self> {
        if medians.len() < defaults::HISTORY_FEWEST_RUNS {
            return None;
        }
        let changes: Vec<f64> = medians
            .windows(2)
            .map(|w| (w[1] / w[0] - 1.0).abs())
            .collect();
        let fence = stats::upper_fence(&changes)?;
        Some(Self {
            runs: medians.len(),
            threshold: fence.max(defaults::HISTORY_FLOOR_PERCENT / 100.0),
        })
    }
}

/// A judged figure of the registry.
pub type Metric = &'static Figure;

/// The fewest runs a side must have for `figure` to be judged.
fn fewest_runs(figure: Metric) -> usize {
    match figure.judged {
        Some(Judged::Counted) => defaults::FEWEST_COUNTED_RUNS,
        // Cost runs are as many as `--cost-runs` asks: an interval of
        // their median needs as many as a timed figure's.
        _ => defaults::FEWEST_TIMED_RUNS,
    }
}

/// What is added to both sides of `figure` before they are divided: the
/// cost floor for a cost, nothing for any other.
fn floor(figure: Metric) -> f64 {
    match figure.judged {
        Some(Judged::Cost) => defaults::COST_FLOOR,
        _ => 0.0,
    }
}

/// What identifies a cell across the two sides.
pub type Key = CellKey;

/// The two sides, each a set of cells by key.
pub struct Sides<'a> {
    baseline: BTreeMap<Key, &'a Cell>,
    candidate: BTreeMap<Key, &'a Cell>,
    baseline_name: String,
    candidate_name: String,
    /// Both sides ran in one run, their repetitions interleaved.
    paired: bool,
    /// Thresholds learned from the candidate cells' past runs.
    learned: BTreeMap<(Key, Metric), Learned>,
    /// The figures judged, where not every figure the verdicts judge:
    /// the family whose false alarms the rule bounds is these.
    only: Option<Vec<Metric>>,
    /// How the two runs' machines differ, where they do.
    machines: Option<String>,
}

impl Sides<'_> {
    /// How the two runs' machines differ, where they do.
    pub fn machines(&self) -> Option<&str> {
        self.machines.as_deref()
    }

    /// These sides, judged by `figures` alone.
    pub fn only(self, figures: &[Metric]) -> Self {
        Self {
            only: Some(figures.to_vec()),
            ..self
        }
    }

    /// Whether `figure` is judged.
    fn judges(&self, figure: Metric) -> bool {
        self.only.as_ref().is_none_or(|only| only.contains(&figure))
    }

    /// How many cells of the candidate have a baseline to be judged against.
    pub fn matched(&self) -> usize {
        let both = |key: &&Key| self.baseline.contains_key(*key);
        self.candidate.keys().filter(both).count()
    }

    /// Learns each candidate cell's thresholds of its timed and cost
    /// figures from its past cells (oldest first), where they are enough.
    pub fn learn(&mut self, mut past: impl FnMut(&Cell) -> Result<Vec<Rc<Medians>>>) -> Result<()> {
        for (key, cell) in &self.candidate {
            let before = past(cell)?;
            for (at, metric) in learnable().enumerate() {
                let medians: Vec<f64> = before.iter().filter_map(|m| m[at]).collect();
                if let Some(learned) = Learned::from_medians(&medians) {
                    self.learned.insert((key.clone(), metric), learned);
                }
            }
        }
        Ok(())
    }
}

/// A past cell's medians of the figures a timed threshold is learned
/// from, each as its verdict takes it: a cost's with its floor, so that
/// a count of none in one past run is no infinite change. One per
/// [`learnable`] figure, in its order (learning reads tens of thousands).
pub type Medians = Vec<Option<f64>>;

/// The figures whose thresholds are learned from the past.
fn learnable() -> impl Iterator<Item = Metric> {
    Figure::judged().filter(|f| !f.counted())
}

/// `cell`'s [`Medians`].
pub fn medians(cell: &Cell) -> Medians {
    learnable()
        .map(|metric| Some(stats::median(&cell.values(metric))? + floor(metric)))
        .collect()
}

fn cell_key(cell: &Cell, with_implementation: bool) -> Key {
    match with_implementation {
        true => cell.key(),
        false => cell.key().unnamed(),
    }
}

/// Two implementations of one run, matched by load.
pub fn within<'a>(
    file: &str,
    run: &'a Results,
    baseline: &str,
    candidate: &str,
) -> Result<Sides<'a>> {
    for name in [baseline, candidate] {
        if !run.config.implementations.iter().any(|r| r == name) {
            bail!(
                "{file} has no implementation {name}; it has {}",
                run.config.implementations.join(", ")
            );
        }
    }
    let side = |name: &str| {
        run.cells
            .iter()
            .filter(|c| c.implementation == name)
            .map(|c| (cell_key(c, false), c))
            .collect()
    };
    Ok(Sides {
        baseline: side(baseline),
        candidate: side(candidate),
        baseline_name: baseline.into(),
        candidate_name: candidate.into(),
        paired: true,
        learned: BTreeMap::new(),
        only: None,
        machines: None,
    })
}

/// Two runs, matched by implementation and load.
pub fn between<'a>(bn: &str, b: &'a Results, cn: &str, c: &'a Results) -> Sides<'a> {
    let side = |r: &'a Results| r.cells.iter().map(|c| (cell_key(c, true), c)).collect();
    Sides {
        baseline: side(b),
        candidate: side(c),
        baseline_name: bn.into(),
        candidate_name: cn.into(),
        paired: false,
        learned: BTreeMap::new(),
        only: None,
        machines: b.host.differs_from(&c.host),
    }
}

/// What differs between two runs' settings (their machines are the
/// comparison's first line: [`Comparison::across_machines`]).
pub fn differences(b: &Results, c: &Results) -> Vec<String> {
    let mut out = Vec::new();
    let mut differ = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("the runs differ in {what}: {x} vs {y}"));
        }
    };
    let (kb, kc) = (&b.config, &c.config);
    differ("window (s)", kb.seconds.to_string(), kc.seconds.to_string());
    differ("warm-up (s)", kb.warmup.to_string(), kc.warmup.to_string());
    differ("repetitions", kb.repeat.to_string(), kc.repeat.to_string());
    differ("pinning", format!("{:?}", kb.pin), format!("{:?}", kc.pin));
    differ(
        "latency recording",
        format!("{:?}", kb.latency),
        format!("{:?}", kc.latency),
    );
    differ(
        "server work per block",
        kb.work.to_string(),
        kc.work.to_string(),
    );
    out
}

/// Judges every matched cell by `rule`; lists the cells that could not be
/// compared.
pub fn judge(sides: &Sides, rule: Rule) -> Result<Comparison> {
    let mut unmatched = Vec::new();
    // Every figure to judge, in order.
    let mut tasks: Vec<Task> = Vec::new();
    for (key, b) in &sides.baseline {
        let Some(c) = sides.candidate.get(key) else {
            unmatched.push(format!("{}: only in the baseline", label(key, b)));
            continue;
        };
        if b.status != Status::Ok || c.status != Status::Ok {
            unmatched.push(format!(
                "{}: no figure (baseline {:?}, candidate {:?})",
                label(key, c),
                b.status,
                c.status
            ));
            continue;
        }
        tasks.extend(cell_tasks(sides, key, [b, c], &mut unmatched));
    }
    let mut judgements: Vec<Judgement> = tasks.iter().map(|t| t.judged(sides, &rule)).collect();
    confirm(&mut judgements, rule.alpha());
    for (key, c) in &sides.candidate {
        if !sides.baseline.contains_key(key) {
            unmatched.push(format!("{}: only in the candidate", label(key, c)));
        }
    }
    if judgements.is_empty() {
        bail!(
            "no cell of {} matches one of {} with figures on both sides{}",
            sides.baseline_name,
            sides.candidate_name,
            if unmatched.is_empty() {
                String::new()
            } else {
                format!(":\n  {}", unmatched.join("\n  "))
            }
        );
    }
    // Worst first: the change in the bad direction, largest first.
    judgements.sort_by(|a, b| badness(b).total_cmp(&badness(a)));
    Ok(Comparison {
        baseline_name: sides.baseline_name.clone(),
        candidate_name: sides.candidate_name.clone(),
        rule,
        paired: sides.paired,
        judgements,
        unmatched,
        explanations: Vec::new(),
        machines: sides.machines.clone(),
    })
}

/// The figures of a matched pair of cells to judge; those that cannot be
/// judged are said in `unmatched`, with why.
fn cell_tasks<'a>(
    sides: &Sides,
    key: &'a Key,
    [b, c]: [&'a Cell; 2],
    unmatched: &mut Vec<String>,
) -> Vec<Task<'a>> {
    let mut tasks = Vec::new();
    // The figures too few runs give, by how few and how many they need.
    let mut short: BTreeMap<(usize, usize), Vec<&str>> = BTreeMap::new();
    // Where the open loop fell behind its schedule, the round trips
    // (timed from when each block was due) grow with the lag: the timed
    // figures measure the backlog, not the server. The costs still hold.
    let behind = b.not_sustained().or(c.not_sustained());
    let mut unsustained: Vec<&str> = Vec::new();
    for metric in Figure::judged().filter(|&m| sides.judges(m)) {
        if behind.is_some() && metric.judged == Some(Judged::Timed) {
            unsustained.push(metric.label);
            continue;
        }
        let (mut bv, mut cv) = (b.values(metric), c.values(metric));
        let (fewest, needed) = (bv.len().min(cv.len()), fewest_runs(metric));
        if (1..needed).contains(&fewest) {
            short
                .entry((fewest, needed))
                .or_default()
                .push(metric.label);
            continue;
        }
        // Neither side without a value: a ratio of medians needs both.
        if bv.is_empty() || cv.is_empty() {
            continue;
        }
        // A count that is none on one side (futex calls of a runtime
        // that never parks) still has a ratio.
        for v in bv.iter_mut().chain(cv.iter_mut()) {
            *v += floor(metric);
        }
        tasks.push(Task {
            key,
            b,
            c,
            metric,
            bv,
            cv,
        });
    }
    if let Some(why) = behind.filter(|_| !unsustained.is_empty()) {
        unmatched.push(format!(
            "{}, {}: the open loop's rate was not sustained on a side ({why})",
            label(key, c),
            unsustained.join(", "),
        ));
    }
    for ((fewest, needed), figures) in short {
        unmatched.push(format!(
            "{}, {}: {fewest} run(s) on a side, too few for an interval (at least {needed})",
            label(key, c),
            figures.join(", "),
        ));
    }
    tasks
}

/// Confirms the flags that hold with every figure judged together: each
/// figure is tested both ways, up and down beyond its threshold, and
/// Holm's rule over all those tests at `alpha` confirms the flag of the
/// direction it holds. One family for the whole comparison: every cell,
/// every figure, both sides.
fn confirm(judgements: &mut [Judgement], alpha: f64) {
    let p: Vec<f64> = judgements
        .iter()
        .flat_map(|j| [true, false].map(|up| j.change.beyond(j.threshold, up)))
        .collect();
    let held = stats::holm(&p, alpha);
    for (i, j) in judgements.iter_mut().enumerate() {
        let up = match j.verdict {
            Verdict::NoChange => continue,
            Verdict::Regressed => j.worse_is_up(),
            Verdict::Improved => !j.worse_is_up(),
        };
        let at = 2 * i + usize::from(!up);
        (j.p, j.confirmed) = (p[at], held[at]);
    }
}

/// A figure of a matched cell to judge: both sides' values, floored.
struct Task<'a> {
    key: &'a Key,
    b: &'a Cell,
    c: &'a Cell,
    metric: Metric,
    bv: Vec<f64>,
    cv: Vec<f64>,
}

impl Task<'_> {
    /// The figure judged by `rule`, before the flags are confirmed
    /// together.
    fn judged(&self, sides: &Sides, rule: &Rule) -> Judgement {
        let Task {
            key,
            b,
            c,
            metric,
            bv,
            cv,
        } = self;
        let metric = *metric;
        let paired = sides.paired && !metric.counted();
        let Interval { ratio, low, high } = match paired {
            true => stats::paired_ratio(bv, cv, rule.confidence),
            false => stats::ratio_of_medians(bv, cv, rule.confidence),
        }
        .expect("both sides have values");
        let change = match paired {
            true => LogChange::paired(bv, cv),
            false => LogChange::unpaired(bv, cv),
        }
        .expect("both sides have runs enough");
        let learned = sides.learned.get(&((*key).clone(), metric));
        let threshold = match (metric.counted(), learned) {
            (false, Some(learned)) => learned.threshold,
            _ => rule.thresholds.of(metric),
        };
        let floor = floor(metric);
        let range = |v: &[f64]| {
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            (min - floor, v.iter().copied().fold(min, f64::max) - floor)
        };
        let median = |v: &[f64]| stats::median(v).unwrap_or(0.0) - floor;
        Judgement {
            cell: label(key, c),
            key: cell_key(c, true),
            metric,
            baseline: median(bv),
            candidate: median(cv),
            baseline_range: range(bv),
            candidate_range: range(cv),
            ratio,
            low,
            high,
            threshold,
            learned_from: learned.map(|l| l.runs),
            verdict: Verdict::of(
                Interval { ratio, low, high },
                threshold,
                metric.bigger_is_better(),
            ),
            change,
            p: 1.0,
            confirmed: false,
            client_bound: b.client_bound || c.client_bound,
        }
    }
}

/// A cell's label: its key, with the implementation taken from the cell.
fn label(key: &Key, cell: &Cell) -> String {
    key.named_as(cell).label()
}

/// A figure to three significant digits, without a fraction past 100:
/// "1234", "12.3", "0.178".
pub fn significant(v: f64) -> String {
    let digits = match v.abs() {
        a if a >= 100.0 || a == 0.0 => 0,
        a => (2 - a.log10().floor() as i32).clamp(0, 6) as usize,
    };
    format!("{v:.digits$}")
}

/// How much worse the candidate is: positive for worse, in relative terms.
pub fn badness(f: &Judgement) -> f64 {
    if f.metric.bigger_is_better() {
        1.0 - f.ratio
    } else {
        f.ratio - 1.0
    }
}

impl Comparison {
    /// The line every format says first where the two runs ran on two
    /// machines; none on one.
    pub fn across_machines(&self) -> Option<String> {
        self.machines.as_ref().map(|differ| {
            format!(
                "ACROSS MACHINES: the two runs ran on different machines ({differ}); a figure \
                 that moved may have moved with the machine, not with the code"
            )
        })
    }

    /// What was compared and by which rule, before the table.
    pub fn preamble(&self) -> String {
        let timed = match self.paired {
            true => "the median of the rounds' ratios (the two sides ran interleaved)",
            false => "the ratio of medians",
        };
        let thresholds = self.rule.thresholds;
        format!(
            "baseline: {}\ncandidate: {}\ntimed figures: {timed}, threshold {}%; cost \
             figures (CPU, context switches and system calls per block, of the server (srv) \
             and the client (cli)): the same, threshold {}%; counted figures (instructions, \
             system calls per block under callgrind): the ratio of medians, threshold {}%; \
             each with a bootstrap interval; a figure is flagged only when the whole interval \
             is beyond the threshold (for RTT and every cost, up is worse){}.\n{}\n\n",
            self.baseline_name,
            self.candidate_name,
            thresholds.timed * 100.0,
            thresholds.cost * 100.0,
            thresholds.counted * 100.0,
            match self.judgements.iter().any(|f| f.learned_from.is_some()) {
                true => format!(
                    "; where the history holds {} or more past runs of a cell on the \
                     candidate's machine, its threshold is the upper interquartile fence \
                     of the changes between them (its latest {}), at least {}%",
                    defaults::HISTORY_FEWEST_RUNS,
                    defaults::HISTORY_LEARNING_RUNS,
                    defaults::HISTORY_FLOOR_PERCENT
                ),
                false => String::new(),
            },
            self.false_alarms()
        )
    }

    /// The rule that confirms a flag, and the false alarms it allows.
    pub fn false_alarms(&self) -> String {
        let looks = match self.rule.looks {
            1 => String::new(),
            n => format!(
                " (this pair judged up to {n} times as rounds were added: a share of it each time)"
            ),
        };
        format!(
            "A flag is confirmed only when it holds with all {} figures judged together (Holm's \
             rule over t tests of each figure's change in logarithms beyond its threshold, \
             both ways, a tenth of each end trimmed from ten rounds on): a candidate no \
             different from its baseline gets a confirmed change in at most {}% of \
             checks{looks}, however many figures they judge. Only a confirmed regression \
             fails the check; how often a check cries wolf here is \
             measured in the book's \"Measured power\".",
            self.judgements.len(),
            self.false_alarm_percent(),
        )
    }

    /// The most checks of two identical builds, in percent, that confirm
    /// a change: 5 by default.
    pub fn false_alarm_percent(&self) -> f64 {
        ((1.0 - self.rule.confidence) * 1e4).round() / 100.0
    }

    /// The table's header.
    pub fn header(&self) -> [String; 8] {
        [
            "cell",
            "figure",
            "baseline",
            "candidate",
            "change",
            &format!("{:.0}% interval", self.rule.confidence * 100.0),
            "threshold",
            "verdict",
        ]
        .map(String::from)
    }

    /// A row per judgement.
    pub fn rows(&self) -> Vec<[String; 8]> {
        let percent = |r: f64| format!("{:+.1}%", (r - 1.0) * 100.0);
        self.judgements
            .iter()
            .map(|f| {
                [
                    format!("{}{}", f.cell, if f.client_bound { "^" } else { "" }),
                    f.metric.label.into(),
                    significant(f.baseline),
                    significant(f.candidate),
                    percent(f.ratio),
                    format!("[{}, {}]", percent(f.low), percent(f.high)),
                    match f.learned_from {
                        Some(runs) => format!("{:.1}% ({runs} past runs)", f.threshold * 100.0),
                        None => format!("{}% (default)", f.threshold * 100.0),
                    },
                    f.word().into(),
                ]
            })
            .collect()
    }

    /// The tally: "144 figure(s) compared: 14 regressed, 0 improved
    /// (confirmed); 3 more flagged alone, unconfirmed".
    pub fn tally(&self) -> String {
        let count = |v: Verdict| self.judgements.iter().filter(|f| f.counts() == v).count();
        let unconfirmed = self
            .judgements
            .iter()
            .filter(|f| f.verdict != Verdict::NoChange && !f.confirmed)
            .count();
        format!(
            "{} figure(s) compared: {} regressed, {} improved (confirmed); {unconfirmed} more \
             flagged by their own intervals alone, unconfirmed",
            self.judgements.len(),
            count(Verdict::Regressed),
            count(Verdict::Improved)
        )
    }

    /// The marks' meaning, and what could not be compared.
    pub fn notes(&self) -> String {
        let mut out = String::new();
        if self.judgements.iter().any(|f| f.client_bound) {
            out.push_str(
                "^ client-bound on a side: the client, not the server, set the pace; a change \
                 there may be the client's\n",
            );
        }
        if !self.unmatched.is_empty() {
            out.push_str("\nNot compared:\n");
            for u in &self.unmatched {
                out.push_str(&format!("- {u}\n"));
            }
        }
        out
    }

    /// What each flagged cell's explanation names, as text or, for a
    /// pull request's comment, with a link to its page.
    pub fn why(&self, links: bool) -> String {
        if self.explanations.is_empty() {
            return String::new();
        }
        let mut out = String::from("\nWhy they moved (compare explain):\n");
        for e in &self.explanations {
            let page = e.page.display();
            out += &match links {
                true => format!("- [{}]({page}): {}\n", e.cell, e.summary),
                false => format!("- {}: {} ({page})\n", e.cell, e.summary),
            };
        }
        out
    }

    /// The cells with a confirmed regression or improvement by the
    /// candidate's implementation whose cells they are, as their keys say
    /// what they measure, each once.
    pub fn flagged_by_implementation(&self) -> BTreeMap<String, Vec<String>> {
        let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let flagged = self
            .judgements
            .iter()
            .filter(|f| f.counts() != Verdict::NoChange);
        for key in flagged.map(|f| &f.key) {
            let cells = by.entry(key.implementation.clone()).or_default();
            let what = key.what();
            if !cells.contains(&what) {
                cells.push(what);
            }
        }
        by
    }

    /// The cells with a confirmed regression or improvement, as their
    /// keys say what they measure, each once.
    pub fn flagged(&self) -> Vec<String> {
        let mut cells: Vec<String> = self
            .judgements
            .iter()
            .filter(|f| f.counts() != Verdict::NoChange)
            .map(|f| f.key.what())
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        cells.retain(|c| seen.insert(c.clone()));
        cells
    }

    /// Whether any regression is confirmed: what fails a check.
    pub fn regressed(&self) -> bool {
        self.judgements
            .iter()
            .any(|f| f.counts() == Verdict::Regressed)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use pingpong::server::Shape;

    use super::*;
    use crate::fixtures::small as fixture;
    use crate::results::{Run, Status};

    /// The fixture with every ok cell's runs at `mib` MiB/s, six of them.
    fn steady(mib: f64) -> Results {
        let mut run = fixture();
        run.cells.retain(|c| c.status == Status::Ok);
        for cell in &mut run.cells {
            let one = cell.runs[0].clone();
            cell.runs = vec![one; 6];
            for r in &mut cell.runs {
                r.mib_per_s = mib;
            }
        }
        run
    }

    pub(crate) fn throughput(comparison: &Comparison) -> Vec<&Judgement> {
        comparison
            .judgements
            .iter()
            .filter(|f| f.metric.key == "mib_per_s")
            .collect()
    }

    /// The candidate judged against the baseline between two runs, each
    /// cell's past runs at these medians.
    fn judged(baseline: &Results, candidate: &Results, past: &[f64]) -> Comparison {
        let mut sides = between("b", baseline, "c", candidate);
        sides
            .learn(|_| {
                Ok(past
                    .iter()
                    .map(|&m| Rc::new(medians(&steady(m).cells[0])))
                    .collect())
            })
            .unwrap();
        let thresholds = Thresholds {
            timed: 0.05,
            cost: 0.05,
            counted: 0.01,
        };
        let rule = Rule {
            thresholds,
            confidence: 0.95,
            looks: 1,
        };
        judge(&sides, rule).unwrap()
    }

    /// The fixture's mio and tokio at each ok load, six rounds of mio's
    /// first run there, tokio's MiB/s and p99 scaled round by round by
    /// `scale(load, round)`: every other figure the same on both sides.
    fn rounds(scale: impl Fn(usize, usize) -> (f64, f64)) -> Results {
        let mut run = fixture();
        run.cells.retain(|c| c.status == Status::Ok);
        let template: Vec<Run> = (run.cells.iter())
            .filter(|c| c.implementation == "mio")
            .map(|c| c.runs[0].clone())
            .collect();
        for (i, cell) in run.cells.iter_mut().enumerate() {
            let load = i / 2;
            cell.runs = (0..6)
                .map(|round| {
                    let mut r = template[load].clone();
                    if cell.implementation == "tokio" {
                        let (mib, p99) = scale(load, round);
                        r.mib_per_s *= mib;
                        r.rtt.as_mut().unwrap().p99_us *= p99;
                    }
                    r
                })
                .collect();
        }
        run
    }

    /// The second load's MiB/s, round by round: every round below -2%,
    /// one far off.
    const LONE: [f64; 6] = [0.90, 0.95, 0.97, 0.96, 0.94, 0.70];

    /// The first load halved in every round, its p99 doubled; the second
    /// load's MiB/s `LONE`; the rest unchanged.
    pub(crate) fn halved_and_lone() -> Comparison {
        let results = rounds(|load, round| match load {
            0 => ([0.50, 0.52, 0.49, 0.51, 0.50, 0.48][round], 2.0),
            1 => (LONE[round], 1.0),
            _ => (1.0, 1.0),
        });
        let sides = within("", &results, "mio", "tokio").unwrap();
        judge(&sides, Rule::default_for(true)).unwrap()
    }

    #[test]
    fn flagged_cells_are_grouped_by_the_implementation_that_moved() {
        // Inside one run, the pair's cells under the candidate's name.
        let inside = halved_and_lone().flagged_by_implementation();
        assert_eq!(inside.keys().collect::<Vec<_>>(), ["tokio"]);
        assert_eq!(inside["tokio"], halved_and_lone().flagged());
        // Between two runs, tokio halved at its first load and mio alike:
        // tokio's cell alone, under its name.
        let same = rounds(|_, _| (1.0, 1.0));
        let halved = rounds(|load, _| (if load == 0 { 0.5 } else { 1.0 }, 1.0));
        let sides = between("b", &same, "c", &halved);
        let by = judge(&sides, Rule::default_for(false))
            .unwrap()
            .flagged_by_implementation();
        assert_eq!(by.keys().collect::<Vec<_>>(), ["tokio"]);
        assert_eq!(by["tokio"].len(), 1, "{by:?}");
    }

    #[test]
    fn a_flag_alone_is_not_confirmed() {
        // The halved load is confirmed; the lone one, flagged by its
        // interval, is not among the figures judged together.
        let judged = halved_and_lone();
        let mib = throughput(&judged);
        let (halved, alone) = (mib[0], mib[1]);
        assert_eq!(
            (halved.verdict, halved.confirmed),
            (Verdict::Regressed, true)
        );
        assert_eq!(
            (alone.verdict, alone.confirmed),
            (Verdict::Regressed, false)
        );
        assert_eq!(alone.counts(), Verdict::NoChange);
        assert_eq!(alone.word(), "regressed, unconfirmed");
        assert!(alone.p > 0.05 / (2 * judged.judgements.len()) as f64);
        assert!(judged.regressed());
        assert_eq!(judged.flagged(), [halved.key.what()]);

        assert!(
            judged
                .tally()
                .contains("2 regressed, 0 improved (confirmed); 1 more")
        );

        // The lone flag alone: nothing fails the check, and it says so.
        let results = rounds(|load, round| match load {
            1 => (LONE[round], 1.0),
            _ => (1.0, 1.0),
        });
        let sides = within("", &results, "mio", "tokio").unwrap();
        let judged = judge(&sides, Rule::default_for(true)).unwrap();
        assert!(!judged.regressed());
        assert!(judged.flagged().is_empty());
        assert!(judged.preamble().contains("at most 5% of checks"));
    }

    #[test]
    fn a_history_teaches_each_cell_its_threshold_and_the_table_says_so() {
        let (baseline, candidate) = (steady(100.0), steady(96.0));
        // Without a history, -4% is within the default 5%.
        let judged_alone = judged(&baseline, &candidate, &[]);
        for f in throughput(&judged_alone) {
            assert_eq!(
                (f.verdict, f.threshold, f.learned_from),
                (Verdict::NoChange, 0.05, None)
            );
        }
        let row = &judged_alone.rows()[0];
        assert!(row[6].ends_with("(default)"), "{row:?}");

        // A quiet past (changes of 0.5% and less): the floor, 1%, decides.
        let quiet = [100.0, 100.5, 100.2, 100.0, 99.8, 100.1];
        let learned = judged(&baseline, &candidate, &quiet);
        for f in throughput(&learned) {
            assert_eq!(
                (f.verdict, f.threshold, f.learned_from),
                (Verdict::Regressed, 0.01, Some(6))
            );
        }
        let row = learned
            .rows()
            .into_iter()
            .find(|r| r[1] == "MiB/s")
            .unwrap();
        assert_eq!(row[6], "1.0% (6 past runs)");
        assert!(learned.preamble().contains("upper interquartile fence"));

        // A noisy past teaches a wider threshold than the default: an 8%
        // cut is no change there.
        let noisy = [100.0, 110.0, 98.0, 108.0, 96.0, 106.0];
        for f in throughput(&judged(&baseline, &steady(92.0), &noisy)) {
            assert_eq!(f.verdict, Verdict::NoChange);
            assert!(f.threshold > 0.08, "{}", f.threshold);
        }

        // Five past runs are too few: the default decides.
        let few = judged(&baseline, &candidate, &quiet[..5]);
        assert!(throughput(&few).iter().all(|f| f.learned_from.is_none()));
    }

    #[test]
    fn cells_of_one_load_in_two_shapes_are_two_cells_to_judge() {
        let mut results = fixture();
        let alone = within("", &results, "mio", "tokio").unwrap().baseline.len();
        let spawned: Vec<Cell> = results
            .cells
            .iter()
            .cloned()
            .map(|mut c| {
                c.shape = Shape::Spawn;
                c
            })
            .collect();
        results.cells.extend(spawned);
        let sides = within("", &results, "mio", "tokio").unwrap();
        assert_eq!(sides.baseline.len(), 2 * alone);
        let spawn = sides
            .baseline
            .keys()
            .find(|k| k.workload.shape == Shape::Spawn);
        assert!(spawn.unwrap().label().ends_with(", spawn shape"));
    }
}
