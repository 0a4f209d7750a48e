//! The results file (schema 1): what a run measured, as data. Later readers
//! (tables, reports, regression checks) read only this.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::matrix::Load;
use crate::placement::Placement;

pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub schema: u32,
    pub suite: Suite,
    pub host: Host,
    pub config: Config,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Suite {
    pub version: String,
    /// The git commit of the source tree, with "-dirty" for uncommitted changes.
    pub commit: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Host {
    /// CPUs this run could use.
    pub cpus: Vec<usize>,
    pub kernel: Option<String>,
    /// net.core.somaxconn: the cap on every listener's accept backlog.
    pub somaxconn: Option<u32>,
}

/// The options of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    pub runtimes: Vec<String>,
    /// The client implementation every cell used, when one was fixed.
    pub client: Option<String>,
    pub loads: Vec<Load>,
    pub block: usize,
    pub seconds: f64,
    pub warmup: f64,
    pub repeat: usize,
    /// The command line, to reproduce the run.
    pub command: String,
    pub started: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Failed,
    Unavailable,
}

/// One implementation at one load: its repetitions and their summary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// The server implementation.
    pub runtime: String,
    pub version: String,
    pub model: String,
    /// False where `threads` has no effect (one thread per connection).
    pub threads_matter: bool,
    /// The client implementation: the same as `runtime` unless fixed.
    pub client: String,
    pub client_version: String,
    pub threads: usize,
    pub connections: usize,
    pub block: usize,
    pub placement: Placement,
    pub status: Status,
    pub error: Option<String>,
    /// For an unavailable cell: a few words of why (`error` has the whole reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    pub runs: Vec<Run>,
    /// Median, min and max over the runs; absent unless the cell is ok.
    pub mib_per_s: Option<Summary>,
}

/// One repetition of a cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// Position of this run in the whole run's sequence (repetitions are interleaved).
    pub order: usize,
    pub mib_per_s: f64,
    pub messages_per_s: f64,
    pub bytes: u64,
    pub seconds: f64,
    pub connect_seconds: f64,
    /// Connections that ended cleanly after at least one whole block came back verified.
    pub verified_connections: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Summary {
    /// `None` for no values.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Self> {
        let mut v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let mid = v.len() / 2;
        let median = if v.len() % 2 == 1 {
            v[mid]
        } else {
            (v[mid - 1] + v[mid]) / 2.0
        };
        Some(Self {
            median,
            min: v[0],
            max: v[v.len() - 1],
        })
    }
}

impl Cell {
    pub fn load(&self) -> Load {
        Load {
            threads: self.threads,
            connections: self.connections,
        }
    }

    /// Adds a successful repetition.
    pub fn push(&mut self, run: Run) {
        self.runs.push(run);
        if self.status == Status::Ok {
            self.mib_per_s = Summary::of(self.runs.iter().map(|r| r.mib_per_s));
        }
    }

    /// Marks the cell unavailable: the implementation cannot start here.
    pub fn set_unavailable(&mut self, short: String, error: String) {
        self.status = Status::Unavailable;
        self.unavailable = Some(short);
        self.error = Some(error);
        self.mib_per_s = None;
    }

    /// Marks the cell failed: one failed repetition means no figure for the cell.
    pub fn fail(&mut self, error: String) {
        if self.status == Status::Ok {
            self.status = Status::Failed;
            self.error = Some(error);
            self.mib_per_s = None;
        }
    }
}

impl Results {
    /// Writes the file so that it is complete at every moment: a new file
    /// renamed over the old one.
    pub fn save(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("json.tmp");
        let write = || -> std::io::Result<()> {
            let mut file = fs::File::create(&tmp)?;
            serde_json::to_writer_pretty(&mut file, self)?;
            file.write_all(b"\n")?;
            file.sync_all()?;
            fs::rename(&tmp, path)
        };
        write().with_context(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_is_median_min_max() {
        let s = Summary::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Summary::of([4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert!(Summary::of([]).is_none());
    }
}
