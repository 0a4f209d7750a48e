//! `compare check --format markdown`: the comparison for a pull request comment.

use anyhow::Result;

use super::verdicts::{Comparison, Render};

pub struct Markdown;

impl Render for Markdown {
    fn render(&self, comparison: &Comparison) -> Result<String> {
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        let mut out = comparison.preamble();
        out.push_str(&line(&comparison.header()));
        out.push_str("|---|---|---:|---:|---:|---:|---:|---|\n");
        for row in comparison.rows() {
            out.push_str(&line(&row));
        }
        out.push_str(&comparison.epilogue());
        out.push_str(&comparison.why(true));
        Ok(out)
    }
}
