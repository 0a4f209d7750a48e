//! What the pages are made of: the history's runs, its series, and the
//! comparisons judged, with the names of their pages.

use std::collections::{BTreeMap, BTreeSet};

use super::page::{slug, when};
use crate::check::verdicts;
use crate::history::Series;
use crate::implementation::base_name;
use crate::results::{Host, Results, Status};
use crate::stats::Verdict;

/// A run of the history, with its page's name.
pub struct Run {
    /// Its id in the history.
    pub id: i64,
    pub slug: String,
    pub machine: String,
    pub source: String,
    pub results: Results,
}

impl Run {
    /// Its page, from the site's top.
    pub fn page(&self) -> String {
        format!("runs/{}/index.html", self.slug)
    }

    pub fn title(&self) -> String {
        format!(
            "{} on machine {}",
            when(&self.results.config.started),
            self.machine
        )
    }

    /// The labels of its cells that have a figure.
    pub fn measured(&self) -> BTreeSet<String> {
        self.results
            .cells
            .iter()
            .filter(|c| c.status == Status::Ok)
            .map(|c| c.label())
            .collect()
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
            for name in &run.results.config.implementations {
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
    format!("implementations/{}.html", slug(base_name(name)))
}

/// Two sides judged.
pub struct Comparison {
    /// Its page's name, without the folder.
    pub name: String,
    /// The runs, by their index among the site's runs; the same one twice
    /// for two releases inside one run.
    pub baseline: usize,
    pub candidate: usize,
    /// Inside one run: the releases before and after.
    pub releases: Option<(String, String)>,
    /// How the runs' machines and settings differ.
    pub warnings: Vec<String>,
    pub judged: verdicts::Comparison,
}

impl Comparison {
    /// Its page, from the site's top.
    pub fn page(&self) -> String {
        format!("comparisons/{}.html", self.name)
    }

    /// "3 regressed, 1 improved of 40".
    pub fn tally(&self) -> String {
        let count = |v: Verdict| {
            self.judged
                .findings
                .iter()
                .filter(|f| f.verdict == v)
                .count()
        };
        format!(
            "{} regressed, {} improved of {} figure(s)",
            count(Verdict::Regressed),
            count(Verdict::Improved),
            self.judged.findings.len()
        )
    }
}
