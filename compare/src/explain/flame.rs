//! The differential flame graph of one side: the candidate's stacks, each
//! coloured by how its instructions (or, sampled, its CPU time) moved from
//! the baseline's (red: more, blue: less), drawn by inferno.

use anyhow::{Context, Result};
use inferno::{differential, flamegraph};

use super::moved::Kind;
use super::stacks::{Cost, PerBlock};

/// Folded stacks count whole samples: a stack's figure per block is drawn
/// per this many blocks.
pub const BLOCKS_PER_COUNT: f64 = 100.0;

/// The attribute by which inferno's drawing starts its script.
const ONLOAD: &str = " onload=\"init(evt)\"";

/// The SVG of `baseline` against `candidate` (each the mean of its runs),
/// by `kind` (instructions, or CPU time).
pub fn svg(title: &str, kind: Kind, baseline: &PerBlock, candidate: &PerBlock) -> Result<Vec<u8>> {
    let (before, after) = (folded(baseline, kind), folded(candidate, kind));
    let mut diff = Vec::new();
    differential::from_readers(
        differential::Options::default(),
        before.as_bytes(),
        after.as_bytes(),
        &mut diff,
    )
    .context("folding the two sides' stacks")?;
    let mut options = flamegraph::Options::default();
    options.title = title.into();
    let (what, unit) = match kind {
        Kind::Cpu => ("CPU time, sampled", "ns of CPU"),
        Kind::Instructions | Kind::Syscalls => ("instructions", "instructions"),
        Kind::Wakes => ("wake-ups issued, traced", "wake-ups"),
        Kind::Sleeps => ("sleeps taken, traced", "sleeps"),
    };
    options.subtitle = Some(format!(
        "width: the candidate's {what}; red: more than the baseline's, blue: less"
    ));
    options.count_name = format!("{unit} per {BLOCKS_PER_COUNT} blocks");
    // Pages that show it (a pull request's, the site's) run no script:
    // its frames' titles say their figures.
    options.no_javascript = true;
    let mut svg = Vec::new();
    flamegraph::from_reader(&mut options, &diff[..], &mut svg)
        .context("drawing the flame graph")?;
    // Without its script, nothing defines what the drawing's onload calls.
    let svg = String::from_utf8(svg).context("inferno drew no UTF-8")?;
    Ok(svg.replacen(ONLOAD, "", 1).into_bytes())
}

/// The mean of runs' stacks.
pub fn mean(runs: &[PerBlock]) -> PerBlock {
    let mut mean = PerBlock::new();
    let n = runs.len() as f64;
    for run in runs {
        for (stack, cost) in run {
            *mean.entry(stack.clone()).or_default() += Cost {
                instructions: cost.instructions / n,
                syscalls: cost.syscalls / n,
                cpu_ns: cost.cpu_ns / n,
                cpu_variance: cost.cpu_variance / (n * n),
                wakes: cost.wakes / n,
                sleeps: cost.sleeps / n,
            };
        }
    }
    mean
}

/// Stacks as inferno folds them, their counts per [`BLOCKS_PER_COUNT`]
/// blocks; a stack that cost nothing (or less, by the runs' variation) left out.
fn folded(stacks: &PerBlock, kind: Kind) -> String {
    stacks
        .iter()
        .map(|(stack, cost)| (stack, (kind.of(cost) * BLOCKS_PER_COUNT).round()))
        .filter(|(_, n)| *n >= 1.0)
        .map(|(stack, n)| format!("{stack} {n}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_graph_draws_every_stack_and_marks_what_grew() {
        let side = |pairs: &[(&str, f64)]| -> PerBlock {
            pairs
                .iter()
                .map(|&(s, instructions)| {
                    let cost = Cost {
                        instructions,
                        ..Cost::default()
                    };
                    (s.to_string(), cost)
                })
                .collect()
        };
        let baseline = side(&[("main;serve;echo", 100.0), ("main;serve", 10.0)]);
        let candidate = side(&[
            ("main;serve;echo", 100.0),
            ("main;serve", 10.0),
            ("main;serve;burn", 60.0),
        ]);
        let svg =
            String::from_utf8(svg("server", Kind::Instructions, &baseline, &candidate).unwrap())
                .unwrap();
        assert!(svg.starts_with("<?xml") && svg.contains("</svg>"));
        assert!(!svg.contains("init("), "no call of the script it lacks");
        for frame in ["echo", "burn", "serve"] {
            assert!(svg.contains(frame), "{frame}");
        }
        // burn is new: drawn in the red of growth, and said to have grown.
        assert!(
            svg.contains("burn (6,000 instructions per 100 blocks"),
            "{svg}"
        );
        let mean = mean(&[baseline.clone(), candidate.clone()]);
        assert_eq!(mean["main;serve;burn"].instructions, 30.0);
    }
}
