//! The report as markdown: what ran where, how to reproduce it, the charts,
//! the muduo tables with the best of each row in bold, the same relative to
//! a reference implementation, one detailed table per load, and the notes.

use std::fmt::Write;

use super::Header;
use super::grid::{Grid, View, notes, report_sections};
use crate::results::Results;

/// `charts`: the SVG files to show, by file name and caption.
pub fn render(
    results: &Results,
    views: &[View],
    reference: &str,
    charts: &[(String, String)],
) -> String {
    let header = Header::of(results);
    let mut out = format!("# {}\n\n", header.title);
    for (name, value) in &header.lines {
        let _ = writeln!(out, "- {name}: {value}");
    }
    let _ = writeln!(out, "\nTo reproduce:\n\n```sh\n{}\n```", header.reproduce);
    for (file, caption) in charts {
        let _ = writeln!(out, "\n![{caption}]({file})");
    }
    for (heading, grids) in report_sections(views, reference) {
        section(&mut out, &heading, &grids);
    }
    out.push_str("\n## Notes\n\n");
    for note in notes(results) {
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
