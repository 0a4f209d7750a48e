//! What the pages are made of: each run of the history in brief (what its
//! pages and the others' say of it, kept from one build to the next), its
//! series, and the comparisons judged, with the names of their pages.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::page::when;
use history::{Entry, Series};
use model::implementation::base_name;
use model::results::{Host, Results, Status};
use report::html::tables;

/// A run of the history, in brief: its results are read once, for its own
/// pages and its comparisons, and let go.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// Its id in the history.
    pub id: i64,
    pub slug: String,
    pub machine: String,
    pub source: String,
    /// Its results' digest: what its pages were made from.
    pub digest: String,
    pub started: String,
    pub command: String,
    pub host: Host,
    /// "0.1.0 at commit abc123".
    pub suite: String,
    pub cells: usize,
    /// Its cells with a figure.
    pub ok: usize,
    /// The implementations as the run names them.
    pub implementations: Vec<String>,
    /// The versions each implementation resolved to.
    pub versions: BTreeMap<String, BTreeSet<String>>,
    /// The labels of its cells that have a figure.
    pub measured: BTreeSet<String>,
    /// Its closed-loop throughput tables, in HTML; empty where it has none.
    pub headline: String,
    /// Its consecutive releases (a release range or releases named one
    /// by one), each pair compared inside the run.
    pub releases: Vec<(String, String)>,
}

impl Run {
    /// The run of `entry`, named `slug`, in brief.
    pub fn of(entry: &Entry, slug: String, results: &Results) -> Self {
        let mut versions: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for cell in &results.cells {
            versions
                .entry(cell.implementation.clone())
                .or_default()
                .insert(cell.version.clone());
        }
        let mut headline = String::new();
        tables(&mut headline, &report::headline(results));
        let releases = results
            .release_series()
            .iter()
            .flat_map(|range| {
                range
                    .names()
                    .windows(2)
                    .map(|pair| (pair[0].clone(), pair[1].clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        Self {
            id: entry.id,
            slug,
            machine: entry.machine.clone(),
            source: entry.source.clone(),
            digest: entry.digest.clone(),
            started: results.config.started.clone(),
            command: results.config.command.clone(),
            host: results.host.clone(),
            suite: format!(
                "{} at commit {}",
                results.suite.version,
                results.suite.commit.as_deref().unwrap_or("unknown")
            ),
            cells: results.cells.len(),
            ok: results
                .cells
                .iter()
                .filter(|c| c.status == Status::Ok)
                .count(),
            implementations: results.config.implementations.clone(),
            versions,
            measured: results
                .cells
                .iter()
                .filter(|c| c.status == Status::Ok)
                .map(|c| c.label())
                .collect(),
            headline,
            releases,
        }
    }

    /// Its page, from the site's top.
    pub fn page(&self) -> String {
        format!("runs/{}/index.html", self.slug)
    }

    pub fn title(&self) -> String {
        format!("{} on machine {}", when(&self.started), self.machine)
    }
}

/// Everything the pages are made of.
pub struct Site {
    /// Oldest first.
    pub runs: Vec<Run>,
    pub series: Vec<Series>,
    pub comparisons: Vec<Comparison>,
    pub book: bool,
}

impl Site {
    /// The runs of each machine, oldest first.
    pub fn machines(&self) -> BTreeMap<&str, Vec<&Run>> {
        let mut machines: BTreeMap<&str, Vec<&Run>> = BTreeMap::new();
        for run in &self.runs {
            machines.entry(&run.machine).or_default().push(run);
        }
        machines
    }

    /// The implementations by name without version or configuration
    /// (`tokio` for `tokio@1.47.0` and `tokio{event_interval=1}`), each
    /// with its series; one that never had a figure too, with none.
    pub fn implementations(&self) -> BTreeMap<String, Vec<&Series>> {
        let mut all: BTreeMap<String, Vec<&Series>> = BTreeMap::new();
        for run in &self.runs {
            for name in &run.implementations {
                all.entry(base_name(name).to_string()).or_default();
            }
        }
        for series in &self.series {
            all.entry(base_name(&series.cell.implementation).to_string())
                .or_default()
                .push(series);
        }
        all
    }

    /// The run of a history id.
    pub fn run(&self, id: i64) -> Option<&Run> {
        self.runs.iter().find(|r| r.id == id)
    }
}

/// A machine as a reader knows it: "vm (AMD EPYC, 2 CPUs, kernel 6.18)".
pub fn describe(host: &Host) -> String {
    format!(
        "{} ({}, {} CPUs, kernel {})",
        host.name.as_deref().unwrap_or("unnamed"),
        host.cpu_model.as_deref().unwrap_or("unknown CPU"),
        host.logical_cpus.map_or("?".into(), |n| n.to_string()),
        host.kernel.as_deref().unwrap_or("unknown")
    )
}

/// An implementation's page, from the site's top.
pub fn implementation_page(name: &str) -> String {
    format!(
        "implementations/{}.html",
        super::page::slug(base_name(name))
    )
}

/// Two sides judged, as the pages that link to it say it.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Its page's name, without the folder.
    pub name: String,
    /// The runs, by their index among the site's runs; the same one twice
    /// for two releases inside one run.
    pub baseline: usize,
    pub candidate: usize,
    /// Inside one run: the releases before and after.
    pub releases: Option<(String, String)>,
    pub tally: Tally,
}

impl Comparison {
    /// Its page, from the site's top.
    pub fn page(&self) -> String {
        format!("comparisons/{}.html", self.name)
    }

    /// "3 regressed, 1 improved of 40 figure(s), 2 unconfirmed".
    pub fn tally(&self) -> String {
        let Tally {
            regressed,
            improved,
            figures,
            unconfirmed,
        } = self.tally;
        format!(
            "{regressed} regressed, {improved} improved of {figures} figure(s), confirmed; \
             {unconfirmed} unconfirmed"
        )
    }
}

/// A comparison's verdicts, counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Confirmed.
    pub regressed: usize,
    pub improved: usize,
    pub figures: usize,
    /// Flagged by their own intervals, not confirmed.
    pub unconfirmed: usize,
}

impl Tally {
    pub fn of(judged: &model::verdicts::Comparison) -> Self {
        use model::stats::Verdict;
        let all = &judged.judgements;
        let count = |v: Verdict| all.iter().filter(|j| j.counts() == v).count();
        Self {
            regressed: count(Verdict::Regressed),
            improved: count(Verdict::Improved),
            figures: all.len(),
            unconfirmed: all
                .iter()
                .filter(|j| j.verdict != Verdict::NoChange && !j.confirmed)
                .count(),
        }
    }
}
