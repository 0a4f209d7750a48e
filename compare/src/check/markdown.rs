//! `compare check --format markdown`: the comparison for a pull request comment.

use anyhow::Result;

use model::verdicts::findings;
use model::verdicts::{Comparison, Render};

pub struct Markdown;

impl Render for Markdown {
    fn render(&self, comparison: &Comparison) -> Result<String> {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let verdict = match comparison.regressed() {
            true => "**A regression, confirmed.**",
            false => "No confirmed regression.",
        };
        let mut out = comparison
            .across_machines()
            .map_or(String::new(), |line| format!("**{line}**\n\n"));
        out.push_str(&format!("{verdict} {}\n\n", comparison.tally()));
        let found = findings::lines(comparison);
        if !found.is_empty() {
            out.push_str(&format!("{}\n\n", findings::HEADING));
            for finding in found {
                out.push_str(&format!("- {finding}\n"));
            }
            out.push('\n');
        }
        out.push_str(&comparison.preamble());
        out.push_str("<details><summary>Every figure</summary>\n\n");
        out.push_str(&line(&comparison.header()));
        out.push_str("|---|---|---:|---:|---:|---:|---:|---|\n");
        for row in comparison.rows() {
            out.push_str(&line(&row));
        }
        out.push_str("\n</details>\n");
        out.push_str(&comparison.notes());
        out.push_str(&comparison.why(true));
        Ok(out)
    }
}
