//! `compare report`: a results file rendered for people (markdown, HTML,
//! SVG charts) and for tools (CSV, a JSON summary). Renderers read only the
//! results file, and render it the same way every time: the same file gives
//! the same bytes.

mod charts;
mod csv;
pub mod grid;
mod html;
mod markdown;
pub mod terminal;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::ValueEnum;

use crate::results::{Host, Remote, Results};
use grid::View;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Markdown,
    Csv,
    Json,
    Svg,
    Html,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Markdown,
        Format::Csv,
        Format::Json,
        Format::Svg,
        Format::Html,
    ];
}

/// The file a results path names: the file itself or `results.json` in a folder.
pub fn results_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    }
}

/// The reference of the relative tables: `asked`, else mio, else the first implementation.
pub fn reference(results: &Results, asked: Option<&str>) -> Result<String> {
    let runtimes = &results.config.runtimes;
    match asked {
        Some(name) if runtimes.iter().any(|r| r == name) => Ok(name.to_string()),
        Some(name) => bail!(
            "--reference {name} is not in this run; it has {}",
            runtimes.join(", ")
        ),
        None => Ok(runtimes
            .iter()
            .find(|r| *r == "mio")
            .or(runtimes.first())
            .cloned()
            .unwrap_or_default()),
    }
}

/// Writes `formats` of `results` into `out`; returns the files written.
pub fn write(
    results: &Results,
    formats: &[Format],
    out: &Path,
    reference: &str,
) -> Result<Vec<PathBuf>> {
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let views = View::all(results);
    let charts = if formats
        .iter()
        .any(|f| matches!(f, Format::Svg | Format::Html))
    {
        charts::render(&views)?
    } else {
        Vec::new()
    };
    let mut files: Vec<(String, String)> = Vec::new();
    for format in formats {
        match format {
            Format::Markdown => {
                let shown: Vec<(String, String)> = if formats.contains(&Format::Svg) {
                    charts
                        .iter()
                        .map(|c| (c.file.clone(), c.caption.clone()))
                        .collect()
                } else {
                    Vec::new()
                };
                files.push((
                    "report.md".into(),
                    markdown::render(results, &views, reference, &shown),
                ));
            }
            Format::Csv => files.push(("results.csv".into(), csv::render(results)?)),
            Format::Json => files.push(("summary.json".into(), summary(results)?)),
            Format::Svg => files.extend(charts.iter().map(|c| (c.file.clone(), c.svg.clone()))),
            Format::Html => files.push((
                "report.html".into(),
                html::render(results, &views, reference, &charts),
            )),
        }
    }
    files
        .into_iter()
        .map(|(name, text)| {
            let path = out.join(name);
            fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            Ok(path)
        })
        .collect()
}

/// Every cell's summaries without the runs: for dashboards and scripts.
fn summary(results: &Results) -> Result<String> {
    let cells: Vec<_> = results
        .cells
        .iter()
        .map(|c| {
            serde_json::json!({
                "runtime": c.runtime,
                "version": c.version,
                "client": c.client,
                "threads": c.threads,
                "connections": c.connections,
                "block": c.block,
                "window": c.window,
                "work": c.work,
                "status": c.status,
                "oversubscribed": c.placement.oversubscribed,
                "noisy": c.noisy,
                "runs": c.runs.len(),
                "mib_per_s": c.mib_per_s,
                "figures": c.figures,
                "error": c.error,
            })
        })
        .collect();
    let mut summary = serde_json::json!({
        "schema": results.schema,
        "suite": results.suite,
        "host": results.host,
        "config": results.config,
        "cells": cells,
    });
    if let Some(host) = &results.server_host {
        summary["server_host"] = serde_json::to_value(host)?;
    }
    Ok(serde_json::to_string_pretty(&summary)? + "\n")
}

/// A machine in one line, as far as it was recorded.
fn describe(host: &Host) -> String {
    let cpus = host.cpus.len();
    [
        host.cpu_model.clone(),
        host.logical_cpus.map(|n| match cpus {
            0 => format!("{n} logical CPUs"),
            used => format!("{n} logical CPUs, {used} used"),
        }),
        host.physical_cores.map(|n| format!("{n} cores")),
        host.memory_kib
            .map(|k| format!("{:.0} GiB", k as f64 / (1 << 20) as f64)),
        host.kernel.as_ref().map(|k| format!("Linux {k}")),
        host.io_uring
            .map(|ok| format!("io_uring {}", if ok { "available" } else { "unavailable" })),
        host.somaxconn.map(|s| format!("somaxconn {s}")),
        host.nofile_hard.map(|n| format!("open files {n}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

/// Where the servers ran, when not beside the clients.
fn servers(results: &Results) -> Option<String> {
    Some(match results.config.remote.as_ref()? {
        Remote::Given { address } => format!(
            "already running at {address}, started by hand (its threads, block, window and work as started)"
        ),
        Remote::Ssh { url, .. } => {
            let host = results.server_host.clone().unwrap_or_default();
            format!(
                "started over ssh at {url}, on {}: {}",
                host.name.as_deref().unwrap_or("a host not named"),
                describe(&host)
            )
        }
    })
}

/// What every human-readable report opens with: the machine, the versions,
/// the date, and the command that reproduces the run.
pub struct Header {
    pub title: String,
    pub lines: Vec<(String, String)>,
    pub reproduce: String,
}

impl Header {
    pub fn of(results: &Results) -> Self {
        let host = &results.host;
        let suite = &results.suite;
        let config = &results.config;
        let unknown = || "not recorded".to_string();
        let cpus = host.cpus.len();
        let machine = describe(host);
        let versions = {
            let mut seen = Vec::new();
            for c in &results.cells {
                let v = format!("{} {}", c.runtime, c.version);
                if !seen.contains(&v) {
                    seen.push(v);
                }
            }
            seen.join(", ")
        };
        let mut lines = vec![
            (
                "Date".into(),
                format!(
                    "{} to {}",
                    config.started,
                    config
                        .ended
                        .clone()
                        .unwrap_or_else(|| "(did not end)".into())
                ),
            ),
            (
                "Machine".into(),
                if machine.is_empty() {
                    unknown()
                } else {
                    machine
                },
            ),
            (
                "Suite".into(),
                format!(
                    "compare {}, commit {}, {}, profile {}",
                    suite.version,
                    suite.commit.clone().unwrap_or_else(unknown),
                    suite.rustc.clone().unwrap_or_else(unknown),
                    suite.profile.clone().unwrap_or_else(unknown),
                ),
            ),
            ("Implementations".into(), versions),
            (
                "Workload".into(),
                format!(
                    "{}{}; {} s window after {} s warm-up, {} interleaved repetition(s) per cell, pinning {}",
                    config
                        .workloads()
                        .iter()
                        .map(|w| w.label())
                        .collect::<Vec<_>>()
                        .join("; "),
                    match config.work {
                        0 => String::new(),
                        n => format!("; server work {n} units per block"),
                    },
                    config.seconds,
                    config.warmup,
                    config.repeat,
                    config.pin.as_deref().unwrap_or("auto")
                ),
            ),
            ("Command".into(), config.command.clone()),
        ];
        if let Some(servers) = servers(results) {
            lines.insert(2, ("Servers".into(), servers));
        }
        Self {
            title: format!(
                "pingpong: {} implementation(s) on {cpus} CPUs",
                config.runtimes.len()
            ),
            lines,
            reproduce: reproduce(&config.command),
        }
    }
}

/// The recorded command as a user runs it from a checkout: cargo in place of
/// the binary's path, without the options naming this machine's folders.
fn reproduce(command: &str) -> String {
    let mut words = command.split_whitespace().skip(1).peekable();
    let mut kept = vec!["cargo run --release -p compare --".to_string()];
    while let Some(word) = words.next() {
        match word {
            "--out" | "--bin-dir" | "--resume" => {
                words.next();
            }
            w if w.starts_with("--out=") || w.starts_with("--bin-dir=") => {}
            w => kept.push(w.to_string()),
        }
    }
    kept.join(" ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A real run: 3 implementations, 2 loads, 2 repetitions.
    pub fn fixture() -> Results {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small/results.json");
        Results::load(&path).unwrap()
    }

    #[test]
    fn markdown_layout() {
        let results = fixture();
        let views = View::all(&results);
        let charts = charts::render(&views).unwrap();
        let shown: Vec<_> = charts
            .iter()
            .map(|c| (c.file.clone(), c.caption.clone()))
            .collect();
        insta::assert_snapshot!(markdown::render(&results, &views, "mio", &shown));
    }

    #[test]
    fn terminal_layout() {
        insta::assert_snapshot!(terminal::render(&fixture()));
    }

    #[test]
    fn the_same_results_render_the_same_bytes() {
        let results = fixture();
        let dirs = ["a", "b"]
            .map(|d| std::env::temp_dir().join(format!("report-{}-{d}", std::process::id())));
        let written: Vec<Vec<PathBuf>> = dirs
            .iter()
            .map(|d| write(&results, &Format::ALL, d, "mio").unwrap())
            .collect();
        assert_eq!(written[0].len(), written[1].len());
        for (a, b) in written[0].iter().zip(&written[1]) {
            assert_eq!(
                fs::read(a).unwrap(),
                fs::read(b).unwrap(),
                "{}",
                a.display()
            );
        }
        for d in dirs {
            fs::remove_dir_all(d).unwrap();
        }
    }

    #[test]
    fn the_reproducing_command_drops_local_folders() {
        assert_eq!(
            reproduce("/tmp/b/compare run --bin-dir /tmp/b --seconds 0.4 --out /x/run --quiet"),
            "cargo run --release -p compare -- run --seconds 0.4 --quiet"
        );
    }

    #[test]
    fn an_unknown_reference_names_the_ones_there_are() {
        let e = reference(&fixture(), Some("nope")).unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("mio"), "{e}");
        assert_eq!(reference(&fixture(), None).unwrap(), "mio");
    }
}
