//! `compare check`: did the candidate get slower than the baseline? Cells
//! are matched one to one (two results files, or two versions inside one
//! run); throughput and p99 round-trip time are each judged by the ratio of
//! medians with a bootstrap confidence interval, and reported regressed or
//! improved only when the whole interval lies beyond the threshold.

use std::collections::BTreeMap;
use std::fmt::Write;

use anyhow::{Result, bail};
use clap::ValueEnum;
use serde::Serialize;

use crate::cli::CheckArgs;
use crate::report::{self, terminal};
use crate::results::{Cell, Results, Status};
use crate::stats::{self, Interval, Verdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for the terminal.
    Table,
    Markdown,
    /// Bencher Metric Format: the candidate's figures.
    Bmf,
    /// github-action-benchmark's customBiggerIsBetter: the candidate's throughput.
    GithubActionBenchmark,
}

/// Whether anything regressed.
pub enum Outcome {
    Clean,
    Regressed,
}

/// One figure of one matched cell, judged.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The cell, as "tokio, 1 thread, 1000 connections".
    pub cell: String,
    /// The candidate's implementation, threads, connections and block (for exports).
    #[serde(skip)]
    pub key: Key,
    pub metric: Metric,
    pub baseline: f64,
    pub candidate: f64,
    pub baseline_range: (f64, f64),
    pub candidate_range: (f64, f64),
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Throughput,
    RttP99,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Self::Throughput => "MiB/s",
            Self::RttP99 => "p99 RTT us",
        }
    }

    fn bigger_is_better(self) -> bool {
        self == Self::Throughput
    }

    /// The runs' values of this figure.
    fn values(self, cell: &Cell) -> Vec<f64> {
        cell.runs
            .iter()
            .filter_map(|r| match self {
                Self::Throughput => Some(r.mib_per_s),
                Self::RttP99 => Some(r.rtt.as_ref()?.p99_us),
            })
            .collect()
    }
}

/// What identifies a cell across the two sides.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub runtime: String,
    pub client: String,
    pub threads: usize,
    pub connections: usize,
    pub block: usize,
    pub window: usize,
}

impl Key {
    fn label(&self) -> String {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let client = if self.client.is_empty() || self.client == self.runtime {
            String::new()
        } else {
            format!(" (client {})", self.client)
        };
        let window = match self.window {
            1 => String::new(),
            w => format!(", window {w}"),
        };
        format!(
            "{}{client}, {} thread{}, {} connection{}, {} B{window}",
            self.runtime,
            self.threads,
            plural(self.threads),
            self.connections,
            plural(self.connections),
            self.block
        )
    }
}

/// The two sides, each a set of cells by key.
struct Sides<'a> {
    baseline: BTreeMap<Key, &'a Cell>,
    candidate: BTreeMap<Key, &'a Cell>,
    baseline_name: String,
    candidate_name: String,
}

pub fn check(args: CheckArgs) -> Result<Outcome> {
    let threshold = args.threshold / 100.0;
    let loaded: Vec<(String, Results)> = args
        .results
        .iter()
        .map(|p| {
            let file = report::results_file(p);
            Ok((file.display().to_string(), Results::load(&file)?))
        })
        .collect::<Result<_>>()?;
    let sides = match (&loaded[..], &args.baseline, &args.candidate) {
        ([(name, run)], Some(b), Some(c)) => within(name, run, b, c)?,
        ([_], _, _) => bail!(
            "one results file needs --baseline NAME and --candidate NAME (two implementations of its run)"
        ),
        ([(bn, b), (cn, c)], None, None) => {
            for warning in differences(b, c) {
                eprintln!("warning: {warning}");
            }
            between(bn, b, cn, c)
        }
        ([_, _], _, _) => bail!(
            "--baseline and --candidate name implementations inside one results file; give one file with them, or two files without them"
        ),
        _ => bail!("give one or two results files"),
    };
    let (findings, unmatched) = judge(&sides, threshold, args.confidence)?;
    let text = match args.format {
        Format::Table | Format::Markdown => {
            table(&sides, &findings, &unmatched, args.format, &args, threshold)
        }
        Format::Bmf => serde_json::to_string_pretty(&bmf(&findings, &sides))? + "\n",
        Format::GithubActionBenchmark => {
            serde_json::to_string_pretty(&github_action_benchmark(&findings, &sides))? + "\n"
        }
    };
    print!("{text}");
    Ok(
        if findings.iter().any(|f| f.verdict == Verdict::Regressed) {
            Outcome::Regressed
        } else {
            Outcome::Clean
        },
    )
}

fn cell_key(cell: &Cell, with_runtime: bool) -> Key {
    Key {
        runtime: if with_runtime {
            cell.runtime.clone()
        } else {
            String::new()
        },
        client: if with_runtime {
            cell.client.clone()
        } else {
            String::new()
        },
        threads: cell.threads,
        connections: cell.connections,
        block: cell.block,
        window: cell.window,
    }
}

/// Two implementations of one run, matched by load.
fn within<'a>(file: &str, run: &'a Results, baseline: &str, candidate: &str) -> Result<Sides<'a>> {
    for name in [baseline, candidate] {
        if !run.config.runtimes.iter().any(|r| r == name) {
            bail!(
                "{file} has no implementation {name}; it has {}",
                run.config.runtimes.join(", ")
            );
        }
    }
    let side = |name: &str| {
        run.cells
            .iter()
            .filter(|c| c.runtime == name)
            .map(|c| (cell_key(c, false), c))
            .collect()
    };
    Ok(Sides {
        baseline: side(baseline),
        candidate: side(candidate),
        baseline_name: baseline.into(),
        candidate_name: candidate.into(),
    })
}

/// Two runs, matched by implementation and load.
fn between<'a>(bn: &str, b: &'a Results, cn: &str, c: &'a Results) -> Sides<'a> {
    let side = |r: &'a Results| r.cells.iter().map(|c| (cell_key(c, true), c)).collect();
    Sides {
        baseline: side(b),
        candidate: side(c),
        baseline_name: bn.into(),
        candidate_name: cn.into(),
    }
}

/// What differs between two runs' machines and settings.
fn differences(b: &Results, c: &Results) -> Vec<String> {
    let mut out = Vec::new();
    let mut differ = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("the runs differ in {what}: {x} vs {y}"));
        }
    };
    let (hb, hc) = (&b.host, &c.host);
    differ("host", format!("{:?}", hb.name), format!("{:?}", hc.name));
    differ(
        "CPU model",
        format!("{:?}", hb.cpu_model),
        format!("{:?}", hc.cpu_model),
    );
    differ("CPUs", format!("{:?}", hb.cpus), format!("{:?}", hc.cpus));
    differ(
        "kernel",
        format!("{:?}", hb.kernel),
        format!("{:?}", hc.kernel),
    );
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

/// Judges every matched cell; lists the cells that could not be compared.
fn judge(sides: &Sides, threshold: f64, confidence: f64) -> Result<(Vec<Finding>, Vec<String>)> {
    let mut findings = Vec::new();
    let mut unmatched = Vec::new();
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
        for metric in [Metric::Throughput, Metric::RttP99] {
            let (bv, cv) = (metric.values(b), metric.values(c));
            let seed = findings.len() as u64;
            let Some(Interval { ratio, low, high }) =
                stats::ratio_of_medians(&bv, &cv, confidence, seed)
            else {
                continue;
            };
            let range = |v: &[f64]| {
                let min = v.iter().copied().fold(f64::INFINITY, f64::min);
                (min, v.iter().copied().fold(min, f64::max))
            };
            let median = |v: &[f64]| {
                crate::results::Summary::of(v.iter().copied()).map_or(0.0, |s| s.median)
            };
            findings.push(Finding {
                cell: label(key, c),
                key: cell_key(c, true),
                metric,
                baseline: median(&bv),
                candidate: median(&cv),
                baseline_range: range(&bv),
                candidate_range: range(&cv),
                ratio,
                low,
                high,
                verdict: Verdict::of(
                    Interval { ratio, low, high },
                    threshold,
                    metric.bigger_is_better(),
                ),
            });
        }
    }
    for (key, c) in &sides.candidate {
        if !sides.baseline.contains_key(key) {
            unmatched.push(format!("{}: only in the candidate", label(key, c)));
        }
    }
    if findings.is_empty() {
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
    findings.sort_by(|a, b| badness(b).total_cmp(&badness(a)));
    Ok((findings, unmatched))
}

/// A cell's label: its key, with the implementation taken from the cell.
fn label(key: &Key, cell: &Cell) -> String {
    Key {
        runtime: cell.runtime.clone(),
        client: cell.client.clone(),
        ..key.clone()
    }
    .label()
}

/// How much worse the candidate is: positive for worse, in relative terms.
fn badness(f: &Finding) -> f64 {
    if f.metric.bigger_is_better() {
        1.0 - f.ratio
    } else {
        f.ratio - 1.0
    }
}

fn table(
    sides: &Sides,
    findings: &[Finding],
    unmatched: &[String],
    format: Format,
    args: &CheckArgs,
    threshold: f64,
) -> String {
    let header = [
        "cell",
        "figure",
        "baseline",
        "candidate",
        "change",
        &format!("{:.0}% interval", args.confidence * 100.0),
        "verdict",
    ];
    let percent = |r: f64| format!("{:+.1}%", (r - 1.0) * 100.0);
    let rows: Vec<[String; 7]> = findings
        .iter()
        .map(|f| {
            [
                f.cell.clone(),
                f.metric.name().into(),
                format!("{:.0}", f.baseline),
                format!("{:.0}", f.candidate),
                percent(f.ratio),
                format!("[{}, {}]", percent(f.low), percent(f.high)),
                match f.verdict {
                    Verdict::Regressed => "REGRESSED".into(),
                    Verdict::NoChange => "no change".into(),
                    Verdict::Improved => "improved".into(),
                },
            ]
        })
        .collect();
    let mut out = format!(
        "baseline: {}\ncandidate: {}\nthreshold {}%, ratio of medians with a bootstrap interval; \
         a change counts only when the whole interval is beyond the threshold (for RTT, up is worse)\n\n",
        sides.baseline_name,
        sides.candidate_name,
        threshold * 100.0
    );
    if format == Format::Markdown {
        let line = |cells: &[String]| format!("| {} |", cells.join(" | "));
        let _ = writeln!(out, "{}", line(&header.map(String::from)));
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---|");
        for row in &rows {
            let _ = writeln!(out, "{}", line(row));
        }
    } else {
        let mut t = terminal::new_table();
        t.set_header(header);
        for row in &rows {
            t.add_row(row);
        }
        let _ = writeln!(out, "{t}");
    }
    let regressed = findings
        .iter()
        .filter(|f| f.verdict == Verdict::Regressed)
        .count();
    let _ = writeln!(
        out,
        "\n{} figure(s) compared: {regressed} regressed, {} improved",
        findings.len(),
        findings
            .iter()
            .filter(|f| f.verdict == Verdict::Improved)
            .count()
    );
    if !unmatched.is_empty() {
        let _ = writeln!(out, "\nNot compared:");
        for u in unmatched {
            let _ = writeln!(out, "- {u}");
        }
    }
    out
}

/// A benchmark's name in the exports: implementation and load.
fn bench_name(f: &Finding, sides: &Sides) -> String {
    let runtime = if f.key.runtime.is_empty() {
        &sides.candidate_name
    } else {
        &f.key.runtime
    };
    let window = match f.key.window {
        1 => String::new(),
        w => format!(" {w}w"),
    };
    format!(
        "{runtime} {}t {}c {}B{window}",
        f.key.threads, f.key.connections, f.key.block
    )
}

/// Bencher Metric Format: per benchmark, the candidate's throughput and
/// latency with their run ranges.
fn bmf(findings: &[Finding], sides: &Sides) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for f in findings {
        let measure = match f.metric {
            Metric::Throughput => "throughput",
            Metric::RttP99 => "latency",
        };
        let entry = out
            .entry(bench_name(f, sides))
            .or_insert_with(|| serde_json::json!({}));
        entry[measure] = serde_json::json!({
            "value": f.candidate,
            "lower_value": f.candidate_range.0,
            "upper_value": f.candidate_range.1,
        });
    }
    serde_json::Value::Object(out)
}

/// github-action-benchmark's customBiggerIsBetter: the candidate's MiB/s.
fn github_action_benchmark(findings: &[Finding], sides: &Sides) -> serde_json::Value {
    findings
        .iter()
        .filter(|f| f.metric == Metric::Throughput)
        .map(|f| {
            serde_json::json!({
                "name": bench_name(f, sides),
                "unit": "MiB/s",
                "value": f.candidate,
                "range": format!("±{:.1}", (f.candidate_range.1 - f.candidate_range.0) / 2.0),
                "extra": format!(
                    "median of {}; baseline {:.1}; change {:+.1}% [{:+.1}%, {:+.1}%]: {:?}",
                    sides.candidate_name,
                    f.baseline,
                    (f.ratio - 1.0) * 100.0,
                    (f.low - 1.0) * 100.0,
                    (f.high - 1.0) * 100.0,
                    f.verdict
                ),
            })
        })
        .collect()
}
