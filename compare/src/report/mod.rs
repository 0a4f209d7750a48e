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

use crate::defaults;
use crate::named::Named;
use crate::results::Results;
use document::{Document, Export};
use grid::View;
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
pub(crate) mod tests {
    use super::*;

    /// A real run: 3 implementations, 2 loads, 2 repetitions.
    pub fn fixture() -> Results {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small/results.json");
        Results::load(&path).unwrap()
    }

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
}
