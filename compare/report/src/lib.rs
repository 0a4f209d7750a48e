//! `compare report`: a results file rendered for people (markdown, HTML,
//! SVG charts) and for tools (CSV, a JSON summary), one format per file,
//! each behind [`document::Export`]. Renderers read only the results file,
//! and render it the same way every time: the same file gives the same bytes.

mod arrivals;
mod cost;
mod csv;
mod document;
pub mod grid;
mod header;
pub mod html;
mod json;
mod markdown;
mod open_loop;
pub mod over_runs;
mod sections;
mod shapes;
mod svg;
pub mod terminal;
mod tls;
mod trend;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use document::{Document, Export};
use grid::View;
use model::defaults;
use model::named::Named;
use model::results::Results;
pub use sections::headline;

/// A format `compare report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Csv,
    Json,
    Svg,
    Html,
}

impl Named for Format {
    const ALL: &[Format] = &[
        Format::Markdown,
        Format::Csv,
        Format::Json,
        Format::Svg,
        Format::Html,
    ];
    const NAMES: &[&str] = &["markdown", "csv", "json", "svg", "html"];
}

impl Format {
    fn exporter(self) -> &'static dyn Export {
        match self {
            Self::Markdown => &markdown::Markdown,
            Self::Csv => &csv::Csv,
            Self::Json => &json::Summary,
            Self::Svg => &svg::Charts,
            Self::Html => &html::Html,
        }
    }
}

/// What `compare report` renders, and where.
pub struct Options {
    /// The results file.
    pub results: PathBuf,
    pub formats: Vec<Format>,
    pub out: PathBuf,
    /// The implementation relative tables divide by.
    pub reference: Option<String>,
}

/// Renders a results file; returns the files written.
pub fn report(options: &Options) -> Result<Vec<PathBuf>> {
    let results = Results::load(&options.results)?;
    let reference = reference(&results, options.reference.as_deref())?;
    write(&results, &options.formats, &options.out, &reference)
}

/// The reference of the relative tables: `asked`, else mio, else the first implementation.
pub fn reference(results: &Results, asked: Option<&str>) -> Result<String> {
    let implementations = &results.config.implementations;
    match asked {
        Some(name) if implementations.iter().any(|r| r == name) => Ok(name.to_string()),
        Some(name) => bail!(
            "--reference {name} is not in this run; it has {}",
            implementations.join(", ")
        ),
        None => Ok(implementations
            .iter()
            .find(|r| *r == defaults::REFERENCE)
            .or(implementations.first())
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
    let mut written = Vec::new();
    for (name, text) in render(results, formats, reference)? {
        let path = out.join(name);
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// `formats` of `results`, each file as its name and its text.
pub fn render(
    results: &Results,
    formats: &[Format],
    reference: &str,
) -> Result<Vec<(String, String)>> {
    let views = View::all(results);
    let drawn = formats
        .iter()
        .any(|f| matches!(f, Format::Svg | Format::Html));
    let charts = if drawn {
        svg::render(&views)?
    } else {
        Vec::new()
    };
    let document = Document::new(
        results,
        views,
        reference.into(),
        charts,
        formats.contains(&Format::Svg),
    );
    let mut files = Vec::new();
    for format in formats {
        files.extend(format.exporter().files(&document)?);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use model::fixtures::small as fixture;
    use model::matrix::Tls;
    use model::results::key::CellKey;
    use model::results::{Cell, Status};
    use model::verdicts::between;
    use pingpong::protocol::Protocol;
    use pingpong::server::Shape;

    use super::*;

    fn rendered(format: Format) -> String {
        let results = fixture();
        let dir = tempfile::tempdir().unwrap();
        let files = write(&results, &[format, Format::Svg], dir.path(), "mio").unwrap();
        std::fs::read_to_string(&files[0]).unwrap()
    }

    #[test]
    fn markdown_layout() {
        insta::assert_snapshot!(rendered(Format::Markdown));
    }

    #[test]
    fn terminal_layout() {
        insta::assert_snapshot!(terminal::render(&fixture()));
    }

    #[test]
    fn the_same_results_render_the_same_bytes() {
        let results = fixture();
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let written: Vec<Vec<PathBuf>> = dirs
            .iter()
            .map(|d| write(&results, Format::ALL, d.path(), "mio").unwrap())
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
    }

    #[test]
    fn an_unknown_reference_names_the_ones_there_are() {
        let e = reference(&fixture(), Some("nope")).unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("mio"), "{e}");
        assert_eq!(reference(&fixture(), None).unwrap(), "mio");
    }

    #[test]
    fn format_names_parse_to_their_formats() {
        for (name, format) in Format::NAMES.iter().zip(Format::ALL) {
            assert_eq!(Format::from_name(name).as_ref(), Ok(format));
        }
        assert!(Format::from_name("pdf").is_err());
    }

    /// A run whose cells differ from each other in one dimension or more,
    /// every dimension among them: the implementation (a release, a
    /// configuration), protocol, TLS, shape, rate (blocks a second, or a
    /// share of capacity that made as many), churn, block, window, threads,
    /// client threads and connections.
    fn every_dimension() -> Results {
        let mut results = fixture();
        let mut model = results.cells[0].clone();
        model.status = Status::Ok;
        // Six runs: enough for `compare check` to judge each cell.
        model.runs = vec![model.runs[0].clone(); 6];
        model.cost_runs.clear();
        let mut cells = Vec::new();
        for implementation in ["tokio", "tokio@1.47.0", "tokio{event_interval=1}"] {
            for (protocol, tls) in [
                (Protocol::Tcp, None),
                (Protocol::Tcp, Some(Tls::Full)),
                (Protocol::Tcp, Some(Tls::Resumption)),
                (Protocol::Udp, None),
                (Protocol::Http, None),
            ] {
                for shape in [Shape::Echo, Shape::Spawn] {
                    for (rate, share, churn) in [
                        (None, None, None),
                        (Some(5000), None, None),
                        (Some(5000), Some(10), None),
                        (None, None, Some(10)),
                    ] {
                        for (block, window) in [(16384, 1), (1024, 1), (16384, 4)] {
                            for (threads, client_threads, connections) in [
                                (1, None, 10),
                                (2, None, 10),
                                (1, Some(2), 10),
                                (1, None, 100),
                            ] {
                                let mut cell = model.clone();
                                cell.implementation = implementation.into();
                                cell.client = implementation.into();
                                (cell.protocol, cell.tls, cell.shape) = (protocol, tls, shape);
                                (cell.rate, cell.rate_share) = (rate, share);
                                cell.churn = churn;
                                (cell.block, cell.window) = (block, window);
                                (cell.threads, cell.client_threads) = (threads, client_threads);
                                cell.connections = connections;
                                cells.push(cell);
                            }
                        }
                    }
                }
            }
        }
        results.cells = cells;
        results.summarize();
        results
    }

    #[test]
    fn no_two_cells_share_a_key_in_any_output() {
        let results = every_dimension();
        let n = results.cells.len();
        assert_eq!(n, 3 * 5 * 2 * 4 * 3 * 4);
        let keys: BTreeSet<CellKey> = results.cells.iter().map(Cell::key).collect();
        assert_eq!(keys.len(), n, "the keys");
        let labels: BTreeSet<String> = results.cells.iter().map(Cell::label).collect();
        assert_eq!(labels.len(), n, "the labels");
        let files = render(&results, &[Format::Csv, Format::Json], "tokio").unwrap();
        let file = |name: &str| &files.iter().find(|(n, _)| n == name).unwrap().1;
        // The CSV: a row per run, its cell told apart by the key's columns alone.
        let mut csv = ::csv::Reader::from_reader(file("results.csv").as_bytes());
        let header = csv.headers().unwrap().clone();
        let names: Vec<&str> = CellKey::of(&results.cells[0])
            .fields()
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let at: Vec<usize> = (names.iter())
            .map(|name| header.iter().position(|h| h == *name).unwrap())
            .collect();
        let rows: BTreeSet<Vec<String>> = csv
            .records()
            .map(|r| {
                let r = r.unwrap();
                at.iter().map(|&i| r[i].to_string()).collect()
            })
            .collect();
        assert_eq!(rows.len(), n, "results.csv");
        // summary.json, read as other programs would, untyped.
        let summary: serde_json::Value = serde_json::from_str(file("summary.json")).unwrap();
        let cells: BTreeSet<String> = summary["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let fields: Vec<String> = names.iter().map(|name| c[*name].to_string()).collect();
                fields.join("|")
            })
            .collect();
        assert_eq!(cells.len(), n, "summary.json");
        // compare check matches cell by cell, never two as one.
        let sides = between("a", &results, "b", &results);
        assert_eq!(sides.matched(), n, "compare check");
    }
}
