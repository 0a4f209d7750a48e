//! The shape tables of a `--shapes` run: what each shape's hand-offs or
//! runtime services cost each implementation, as its throughput over its
//! own echo's from the same interleaved run.

use pingpong::server::Shape;

use super::grid::{Grid, View, ratios};
use model::results::Results;

/// What the shape tables' figures mean.
pub const LEGEND: &str = "Shape tables: SHAPE/echo = median MiB/s in the shape over the same \
    implementation's median in the echo shape at the same load, from the same interleaved run, \
    [95% bootstrap interval]: below 1, what the shape's hand-offs or services cost that runtime; \
    where a runtime lacks what the shape needs (tasks, a blocking pool), its cell says so; closed \
    loop only: in the open loop MiB/s is the rate asked for, and what a shape costs there is in \
    the cost tables";

/// The channel the hand-offs went through, for the notes.
pub fn channel(results: &Results) -> Option<String> {
    let channel = results.suite.channel.as_ref()?;
    // Several versions: isolated builds locked others than the tree's.
    let alike = match channel.contains(", ") {
        true => "as each build locked it",
        false => "the same build of it for all",
    };
    Some(format!(
        "Hand-offs (split, spawn, pool shapes): {channel} on every runtime, {alike}"
    ))
}

/// A table per closed-loop workload in a shape other than the echo,
/// beside its echo. (In the open loop the throughput is the rate asked
/// for, the same for every implementation: no ratio of it says anything.)
pub fn tables(results: &Results) -> Vec<Grid> {
    let views = View::all(results);
    views
        .iter()
        .filter(|v| v.workload.shape != Shape::Echo && v.workload.rate.is_none())
        .filter_map(|shaped| {
            let echo = views
                .iter()
                .find(|v| v.workload == shaped.workload.echo())?;
            let title = format!(
                "{shape} / echo ({label}): median MiB/s in the {shape} shape over the same \
                 implementation's echo [95% interval]",
                shape = shaped.workload.shape.name(),
                label = echo.workload.label()
            );
            Some(ratios(echo, shaped, title))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::fixtures::small as fixture;
    use model::results::{Cell, Status};

    #[test]
    fn each_shape_is_read_against_its_own_echo_and_a_runtime_without_tasks_says_why() {
        let mut results = fixture();
        let mut spawned = results.cells.clone();
        for cell in &mut spawned {
            cell.shape = Shape::Spawn;
            for run in &mut cell.runs {
                run.mib_per_s /= 2.0;
            }
            // mio has no tasks: it serves the echo alone.
            if cell.implementation == "mio" {
                cell.status = Status::Unavailable;
                cell.unavailable = Some("no tasks to hand blocks to".into());
                cell.runs.clear();
            }
        }
        // The same in the open loop: no table, its throughput is the rate.
        let paced: Vec<_> = (results.cells.iter().chain(&spawned))
            .map(|cell| Cell {
                rate: Some(1000),
                ..cell.clone()
            })
            .collect();
        results.cells.extend(spawned);
        results.cells.extend(paced);
        let grids = tables(&results);
        assert_eq!(grids.len(), 1);
        let grid = &grids[0];
        assert!(grid.title.starts_with("spawn / echo"), "{}", grid.title);
        assert_eq!(grid.header, ["load", "mio", "tokio", "monoio"]);
        for row in &grid.rows {
            let texts: Vec<&str> = row.iter().map(|e| e.text.as_str()).collect();
            assert_eq!(texts[1], "no tasks to hand blocks to", "{}", texts[0]);
            // Each run at half its echo's: the ratio, with the runs' own spread around it.
            assert!(
                texts[2].starts_with("0.50x ["),
                "{}: {}",
                texts[0],
                texts[2]
            );
            // monoio could not start in the fixture's run: its status, in either shape.
            assert_eq!(texts[3], "io_uring forbidden", "{}", texts[0]);
        }
    }
}
