//! `compare check --format table`: the comparison for the terminal.

use anyhow::Result;

use super::verdicts::{Comparison, Render};
use crate::report::terminal;

pub struct Table;

impl Render for Table {
    fn render(&self, comparison: &Comparison) -> Result<String> {
        let mut t = terminal::new_table();
        t.set_header(comparison.header());
        for row in comparison.rows() {
            t.add_row(row);
        }
        Ok(format!(
            "{}{t}\n{}{}",
            comparison.preamble(),
            comparison.epilogue(),
            comparison.why(false)
        ))
    }
}
