//! `compare check --format table`: the comparison for the terminal.

use anyhow::Result;

use model::verdicts::findings;
use model::verdicts::{Comparison, Render};
use report::terminal;

pub struct Table;

impl Render for Table {
    fn render(&self, comparison: &Comparison) -> Result<String> {
        let mut t = terminal::new_table();
        t.set_header(comparison.header());
        for row in comparison.rows() {
            t.add_row(row);
        }
        let across = comparison
            .across_machines()
            .map_or(String::new(), |line| format!("{line}\n"));
        Ok(format!(
            "{across}{}{t}\n{}{}",
            comparison.preamble(),
            epilogue(comparison),
            comparison.why(false)
        ))
    }
}

/// After the table: the findings, the tally, and what could not be compared.
fn epilogue(comparison: &Comparison) -> String {
    let mut out = String::new();
    let found = findings::lines(comparison);
    if !found.is_empty() {
        out.push_str(&format!("\n{}\n", findings::HEADING));
        for line in found {
            out.push_str(&format!("- {line}\n"));
        }
    }
    out.push_str(&format!("\n{}\n", comparison.tally()));
    out.push_str(&comparison.notes());
    out
}
