//! A cell's MiB/s run after run on one machine, for the history's pages:
//! each run's median with its min and max, the level between steps, and
//! each step where it begins.

use anyhow::Result;
use plotters::prelude::*;

use super::svg::{PALETTE, draw, frame};
use model::results::Summary;

/// A chart's size: smaller than a report's, as a page holds many.
const SIZE: (u32, u32) = (760, 300);

/// One run of the series: its label on the x axis, and its MiB/s.
pub struct Run {
    pub label: String,
    pub mib_per_s: Summary,
}

/// The chart of `runs` (oldest first) with `steps` (the index of the run
/// each begins with); `levels` are the medians between steps, in order.
pub fn chart(caption: &str, runs: &[Run], steps: &[usize], levels: &[f64]) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw)?;
        let top = runs.iter().map(|r| r.mib_per_s.max).fold(1.0, f64::max) * 1.1;
        let right = runs.len() as f64 - 0.5;
        let mut chart = frame(&root, caption)
            .build_cartesian_2d(-0.5..right, 0.0..top)
            .map_err(draw)?;
        let label = |x: &f64| {
            let i = x.round();
            match (x - i).abs() < 1e-6 && i >= 0.0 {
                true => runs.get(i as usize).map(|r| r.label.clone()),
                false => None,
            }
            .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(runs.len().min(8))
            .x_label_formatter(&label)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .x_desc("runs, oldest first (whiskers: min and max of the repetitions)")
            .y_desc("MiB/s")
            .draw()
            .map_err(draw)?;
        let color = PALETTE[0];
        let medians = || {
            runs.iter()
                .enumerate()
                .map(|(i, r)| (i as f64, r.mib_per_s))
        };
        chart
            .draw_series(LineSeries::new(
                medians().map(|(x, s)| (x, s.median)),
                color.stroke_width(1),
            ))
            .map_err(draw)?;
        chart
            .draw_series(medians().map(|(x, s)| {
                ErrorBar::new_vertical(x, s.min, s.median, s.max, BLACK.stroke_width(1), 3)
            }))
            .map_err(draw)?;
        chart
            .draw_series(medians().map(|(x, s)| Circle::new((x, s.median), 3, color.filled())))
            .map_err(draw)?;
        let mut edges = vec![0];
        edges.extend(steps);
        edges.push(runs.len());
        let level = RGBColor(0x55, 0x55, 0x55);
        for (span, &median) in edges.windows(2).zip(levels) {
            let (from, to) = (span[0] as f64 - 0.4, span[1] as f64 - 0.6);
            chart
                .draw_series(LineSeries::new(
                    [(from, median), (to, median)],
                    level.stroke_width(2),
                ))
                .map_err(draw)?;
        }
        let mark = RGBColor(0xd6, 0x27, 0x28);
        for &at in steps {
            let x = at as f64 - 0.5;
            chart
                .draw_series(DashedLineSeries::new(
                    [(x, 0.0), (x, top)],
                    6,
                    4,
                    mark.stroke_width(2),
                ))
                .map_err(draw)?;
        }
        root.present().map_err(draw)?;
    }
    Ok(svg)
}
