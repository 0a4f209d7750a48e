//! `compare check`: did the candidate get slower than the baseline? Loads
//! the two sides, judges them ([`model::verdicts`]), and prints the comparison in
//! one of the formats, each in its own file.

mod bmf;
mod github;
mod markdown;
mod table;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{Result, bail};

use crate::explain::{self, Explained};
use history::{History, Timeline};
use model::named::Named;
use model::results::{Cell, Results};
use model::verdicts::{self, Comparison, Medians, Render, Rule, Sides, Thresholds};

/// How `compare check` prints its comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A table for the terminal.
    Table,
    Markdown,
    /// Bencher Metric Format: the candidate's figures.
    Bmf,
    /// github-action-benchmark's customBiggerIsBetter: the candidate's throughput.
    GithubActionBenchmark,
}

impl Named for Format {
    const ALL: &[Format] = &[
        Format::Table,
        Format::Markdown,
        Format::Bmf,
        Format::GithubActionBenchmark,
    ];
    const NAMES: &[&str] = &["table", "markdown", "bmf", "github-action-benchmark"];
}

impl Format {
    fn renderer(self) -> &'static dyn Render {
        match self {
            Self::Table => &table::Table,
            Self::Markdown => &markdown::Markdown,
            Self::Bmf => &bmf::Bmf,
            Self::GithubActionBenchmark => &github::GithubActionBenchmark,
        }
    }
}

/// What `compare check` compares, and how it says so.
pub struct Options {
    /// One results file (with `pair`) or two: baseline, candidate.
    pub results: Vec<PathBuf>,
    /// The baseline and candidate implementations inside one results file.
    pub pair: Option<(String, String)>,
    /// The smallest change that counts, as a fraction (0.05), by kind of
    /// figure; the timed one absent: the default for the comparison's design.
    pub threshold: Option<f64>,
    /// The same for cost figures; absent: the default for the design.
    pub cost_threshold: Option<f64>,
    pub counted_threshold: f64,
    pub confidence: f64,
    pub format: Format,
    /// Between two runs: the history whose past runs teach each cell's
    /// timed threshold, where it holds enough of them.
    pub history: Option<PathBuf>,
    /// Explain every flagged cell not explained yet, so
    /// ([`crate::explain`]).
    pub explain: Option<explain::Settings>,
}

/// Whether anything regressed.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Clean,
    Regressed,
}

pub fn check(options: Options) -> Result<Outcome> {
    let loaded: Vec<(String, Results)> = options
        .results
        .iter()
        .map(|p| {
            let file = model::results::file::named(p);
            Ok((file.display().to_string(), Results::load(&file)?))
        })
        .collect::<Result<_>>()?;
    let sides = match (&loaded[..], &options.pair) {
        ([(name, run)], Some((baseline, candidate))) => {
            verdicts::within(name, run, baseline, candidate)?
        }
        ([(bn, b), (cn, c)], None) => {
            let history = options.history.as_deref().map(History::open).transpose()?;
            let past = history.as_ref().map(Past::new);
            let sides = between_runs((bn, b), (cn, c), past.as_ref())?;
            // Two machines are said first, on stderr too: the JSON formats
            // have no line for it.
            if let Some(differ) = sides.machines() {
                eprintln!("warning: the two runs ran on different machines ({differ})");
            }
            for warning in verdicts::differences(b, c) {
                eprintln!("warning: {warning}");
            }
            sides
        }
        _ => bail!("give one results file with --baseline and --candidate, or two without"),
    };
    let defaults = verdicts::default_thresholds(options.pair.is_some());
    let rule = Rule {
        thresholds: Thresholds {
            timed: options.threshold.unwrap_or(defaults.timed),
            cost: options.cost_threshold.unwrap_or(defaults.cost),
            counted: options.counted_threshold,
        },
        confidence: options.confidence,
        looks: 1,
    };
    let mut comparison = verdicts::judge(&sides, rule)?;
    let files: Vec<PathBuf> = loaded.iter().map(|(name, _)| name.into()).collect();
    let files = [files[0].as_path(), files[files.len() - 1].as_path()];
    comparison.explanations = explanations(
        &comparison,
        files,
        options.pair.as_ref(),
        options.explain.as_ref(),
    )?;
    print!("{}", options.format.renderer().render(&comparison)?);
    Ok(if comparison.regressed() {
        Outcome::Regressed
    } else {
        Outcome::Clean
    })
}

/// The explanations of `comparison`'s flagged cells that lie in `compare
/// explain`'s default folders beside the candidate's results (`files`:
/// baseline's, candidate's); with `settings`, those missing are made
/// first. Inside one run the `pair` explains; between two runs each
/// flagged implementation is explained against itself in the baseline's
/// run.
fn explanations(
    comparison: &Comparison,
    files: [&Path; 2],
    pair: Option<&(String, String)>,
    settings: Option<&explain::Settings>,
) -> Result<Vec<verdicts::Explanation>> {
    let asked: Vec<(String, String, Vec<String>)> = match pair {
        Some((baseline, candidate)) => {
            vec![(baseline.clone(), candidate.clone(), comparison.flagged())]
        }
        None => comparison
            .flagged_by_implementation()
            .into_iter()
            .map(|(name, cells)| (name.clone(), name, cells))
            .collect(),
    };
    let mut found = Vec::new();
    for (baseline, candidate, flagged) in asked {
        let out = explain::default_out(files, &baseline, &candidate);
        let missing: Vec<String> = flagged
            .iter()
            .filter(|cell| !explain::folder(&out, cell).join(explain::FILE).exists())
            .cloned()
            .collect();
        if let (Some(settings), false) = (settings, missing.is_empty()) {
            let between = files[0] != files[1];
            let options = explain::Options {
                results: files[0].to_path_buf(),
                candidate_results: between.then(|| files[1].to_path_buf()),
                baseline: baseline.clone(),
                candidate: candidate.clone(),
                cells: missing,
                out: out.clone(),
                settings: settings.clone(),
            };
            // The verdicts stand without it: a cell that cannot be
            // explained here is said, and the check goes on.
            if let Err(why) = explain::explain(&options, |line| eprintln!("{line}")) {
                eprintln!("warning: {baseline} -> {candidate} not explained: {why:#}");
            }
        }
        for cell in flagged {
            let folder = explain::folder(&out, &cell);
            if folder.join(explain::FILE).exists() {
                let explained = Explained::load(&folder)?;
                found.push(verdicts::Explanation {
                    cell: match pair {
                        Some(_) => cell,
                        None => format!("{candidate}, {cell}"),
                    },
                    page: folder.join(explain::PAGE),
                    summary: explained.summary(),
                });
            }
        }
    }
    Ok(found)
}

/// Two runs' sides, matched by implementation and load; where `past`
/// holds enough past runs of a candidate cell on the candidate's machine,
/// the cell's timed threshold is learned from them.
pub fn between_runs<'a>(
    (bn, b): (&str, &'a Results),
    (cn, c): (&str, &'a Results),
    past: Option<&Past>,
) -> Result<Sides<'a>> {
    let mut sides = verdicts::between(bn, b, cn, c);
    if let Some(past) = past {
        let machine = history::fingerprint(&c.host);
        sides.learn(|cell| past.medians(&machine, cell, &c.config.started))?;
    }
    Ok(sides)
}

/// What a history's past runs teach the thresholds: each past cell read
/// once, its medians kept, however many comparisons learn from it (the
/// site read every past cell again for each comparison once: 100 nightly
/// runs took over ten minutes).
pub struct Past<'h> {
    history: &'h History,
    /// Each machine's timeline, read once.
    timelines: RefCell<HashMap<String, Rc<Timeline>>>,
    read: RefCell<HashMap<i64, Rc<Medians>>>,
}

impl<'h> Past<'h> {
    pub fn new(history: &'h History) -> Self {
        Self {
            history,
            timelines: RefCell::new(HashMap::new()),
            read: RefCell::new(HashMap::new()),
        }
    }

    /// Takes `cell` as the past cell `id`, read already (the site reads
    /// every run for its pages): its medians are not read again.
    pub fn remember(&self, id: i64, cell: &Cell) {
        self.read
            .borrow_mut()
            .entry(id)
            .or_insert_with(|| Rc::new(verdicts::medians(cell)));
    }

    /// The medians of `cell`'s past on `machine` before `before`, oldest first.
    fn medians(&self, machine: &str, cell: &Cell, before: &str) -> Result<Vec<Rc<Medians>>> {
        let read = self.timelines.borrow().get(machine).cloned();
        let timeline = match read {
            Some(timeline) => timeline,
            None => {
                let timeline = Rc::new(self.history.timeline(machine)?);
                self.timelines
                    .borrow_mut()
                    .insert(machine.into(), timeline.clone());
                timeline
            }
        };
        let ids = timeline.past(cell, before)?;
        ids.into_iter()
            .map(|id| {
                if let Some(medians) = self.read.borrow().get(&id) {
                    return Ok(medians.clone());
                }
                let medians = Rc::new(verdicts::medians(&self.history.cell_of(id)?));
                self.read.borrow_mut().insert(id, medians.clone());
                Ok(medians)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_parse_to_their_formats() {
        for (name, format) in Format::NAMES.iter().zip(Format::ALL) {
            assert_eq!(Format::from_name(name).as_ref(), Ok(format));
        }
        assert!(Format::from_name("csv").is_err());
    }
}
