//! The report as markdown: what ran where, how to reproduce it, the charts,
//! the muduo tables with the best of each row in bold, the same relative to
//! a reference implementation, one detailed table per load, and the notes.

use std::fmt::Write;

use anyhow::Result;

use super::document::{Document, Export};
use super::grid::Grid;
use super::header::Header;
use super::sections::notes;

pub struct Markdown;

impl Export for Markdown {
    fn files(&self, document: &Document) -> Result<Vec<(String, String)>> {
        Ok(vec![("report.md".into(), render(document))])
    }
}

fn render(document: &Document) -> String {
    let results = document.results;
    let header = Header::of(results);
    let mut out = format!("# {}\n\n", header.title);
    for (name, value) in &header.lines {
        let _ = writeln!(out, "- {name}: {value}");
    }
    let _ = writeln!(out, "\nTo reproduce:\n\n```sh\n{}\n```", header.reproduce);
    // Only charts written beside the report can be shown.
    for chart in document.charts.iter().filter(|_| document.charts_written) {
        let _ = writeln!(out, "\n![{}]({})", chart.caption, chart.file);
    }
    for (heading, grids) in document.sections() {
        section(&mut out, heading, grids);
    }
    out.push_str("\n## Notes\n\n");
    for note in notes(results, true) {
        let _ = writeln!(out, "- {}", escape(&note));
    }
    out
}

fn section(out: &mut String, heading: &str, grids: &[Grid]) {
    let _ = writeln!(out, "\n## {heading}");
    for grid in grids {
        let _ = writeln!(out, "\n{}\n", escape(&grid.title));
        let _ = writeln!(out, "{}", table(grid));
    }
}

fn table(grid: &Grid) -> String {
    let line = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let mut lines = vec![
        line(grid.header.iter().map(|h| escape(h)).collect()),
        line(
            (0..grid.header.len())
                .map(|i| if i == 0 { "---" } else { "---:" }.to_string())
                .collect(),
        ),
    ];
    lines.extend(grid.rows.iter().map(|row| {
        line(
            row.iter()
                .map(|e| {
                    let text = escape(&e.text);
                    if e.strong {
                        format!("**{text}**")
                    } else {
                        text
                    }
                })
                .collect(),
        )
    }));
    lines.join("\n")
}

/// Text that markdown would read as markup: table pipes and emphasis marks.
fn escape(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('*', "\\*")
        .replace('~', "\\~")
}
