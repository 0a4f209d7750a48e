//! The answer in the terminal, as `compare run` prints it last: the muduo
//! tables (and what TLS and the shapes cost beside them), how the
//! connections arrived where that was in question, and
//! what their marks mean. Every other figure is in the report.

use std::fmt::Write;

use comfy_table::{CellAlignment, Table, presets::UTF8_FULL_CONDENSED};

use super::grid::{Grid, View};
use super::sections::notes;
use super::{arrivals, open_loop, shapes, tls, trend};
use model::results::Results;

pub fn render(results: &Results) -> String {
    let mut out = String::new();
    let mut arrived = false;
    for grid in open_loop::summary(results)
        .into_iter()
        .chain(trend::tables(results))
        .chain(tls::summary(results))
        .chain(shapes::tables(results))
    {
        let _ = writeln!(out, "\n{}\n{}", grid.title, table(&grid));
    }
    for view in View::all(results) {
        let arrivals = arrivals::tables(&view);
        arrived |= !arrivals.is_empty();
        // In the open loop the throughput is the rate asked for, or the
        // latency tables say it was not sustained.
        let throughput = match view.workload.rate {
            Some(_) => Vec::new(),
            None => view.throughput(),
        };
        for grid in throughput.into_iter().chain(arrivals) {
            let _ = writeln!(out, "\n{}\n{}", grid.title, table(&grid));
        }
    }
    out.push('\n');
    for note in notes(results, false) {
        let _ = writeln!(out, "{note}");
    }
    if arrived {
        let _ = writeln!(out, "{}", arrivals::legend(results));
    }
    out
}

/// A table in the style every `compare` table shares.
pub fn new_table() -> Table {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table
}

fn table(grid: &Grid) -> Table {
    let mut table = new_table();
    table.set_header(&grid.header);
    for row in &grid.rows {
        table.add_row(row.iter().enumerate().map(|(i, entry)| {
            let cell = comfy_table::Cell::new(&entry.text);
            if i == 0 {
                cell
            } else {
                cell.set_alignment(CellAlignment::Right)
            }
        }));
    }
    table
}
