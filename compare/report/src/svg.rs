//! The report's charts, as SVG (plotters): MiB/s by connections and by
//! threads as grouped bars (the muduo article's figures), and p99 round-trip
//! time by connections on a log scale. Bars and points are medians, whiskers
//! min and max; every chart says so. Each implementation keeps its colour in
//! every chart and every report.

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::cost::median_run;
use super::document::{Chart, Document, Export};
use super::grid::{Section, View, bound, muduo_sections};
use super::open_loop::{Latency, Sweep, thousands};
use super::trend;
use model::adapters::{ADAPTERS, Adapter};
use model::implementation::base_name;
use model::matrix::Load;
use model::results::registry;
use model::results::{AcceptQueue, Cell, Status, Summary};

/// The charts, one file each.
pub struct Charts;

impl Export for Charts {
    fn files(&self, document: &Document) -> Result<Vec<(String, String)>> {
        Ok(document
            .charts
            .iter()
            .map(|c| (c.file.clone(), c.svg.clone()))
            .collect())
    }
}

/// A chart, where the names in its legend fit (longer ones widen it).
const SIZE: (u32, u32) = (960, 440);
/// Width of the plot; the legend takes the rest.
const PLOT_WIDTH: u32 = 790;

/// Tableau 10 and two darker colours, one per adapter in `compare list` order.
pub(super) const PALETTE: [RGBColor; 12] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0x79, 0x70, 0x6e),
    RGBColor(0x6a, 0x3d, 0x9a),
    RGBColor(0x2c, 0x5f, 0x2d),
];

// A new adapter needs a colour of its own: add one to the palette.
const _: () = assert!(
    PALETTE.len() >= ADAPTERS.len(),
    "the chart palette has fewer colours than there are adapters"
);

/// External implementations, in the order a run names them: apart from
/// the palette, and light enough for the black whiskers.
const EXTERNAL: [RGBColor; 3] = [
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x8c, 0x6d, 0x31),
];

/// The implementation's colour; where a run has several versions or
/// configurations of one implementation (tokio@1.47.0, tokio{event_interval=1},
/// tokio), each after the first is darker.
fn color_of(view: &View, implementation: &str) -> RGBColor {
    let ours = |name: &str| {
        ADAPTERS
            .iter()
            .position(|a: &Adapter| a.name == base_name(name))
    };
    let RGBColor(r, g, b) = match ours(implementation) {
        Some(i) => PALETTE[i],
        None => {
            let implementations = view.implementations();
            let externals = implementations.iter().filter(|name| ours(name).is_none());
            let i = externals.take_while(|name| *name != implementation).count();
            EXTERNAL[i % EXTERNAL.len()]
        }
    };
    let shade = view
        .implementations()
        .iter()
        .filter(|other| base_name(other) == base_name(implementation))
        .position(|other| other == implementation)
        .unwrap_or(0);
    // Darker twice, then lighter, then alternating: eight tell apart.
    let toward = |c: u8| match SHADES[shade % SHADES.len()] {
        Shade::Dark(f) => (c as f64 * f) as u8,
        Shade::Light(f) => (c as f64 + (255.0 - c as f64) * f) as u8,
    };
    RGBColor(toward(r), toward(g), toward(b))
}

/// A colour made darker (its share kept) or lighter (the share of white
/// mixed in).
#[derive(Clone, Copy)]
enum Shade {
    Dark(f64),
    Light(f64),
}

const SHADES: [Shade; 8] = [
    Shade::Dark(1.0),
    Shade::Dark(0.7),
    Shade::Dark(0.4),
    Shade::Light(0.35),
    Shade::Light(0.6),
    Shade::Dark(0.55),
    Shade::Light(0.8),
    Shade::Dark(0.25),
];

/// Every chart of a run: throughput for each muduo table of each workload,
/// p99 round-trip time for each table by connections where round-trip
/// times were recorded, and throughput over the window for each load whose
/// windows were recorded slice by slice.
pub fn render(views: &[View]) -> Result<Vec<Chart>> {
    let mut charts = Vec::new();
    if let Some(view) = views.first() {
        for sweep in Sweep::all(view.results) {
            let subject = sweep.title("latency against offered load");
            charts.push(Chart {
                file: format!("latency-by-rate-{}.svg", sweep.slug()),
                caption: format!("{subject}; a line ends where the rate was not sustained"),
                svg: latency_by_rate(view, &sweep, &subject)?,
            });
        }
    }
    if let Some(view) = views.first() {
        for (file, caption, svg) in by_release(view)? {
            charts.push(Chart { file, caption, svg });
        }
    }
    // An open-loop workload's throughput is its rate: its chart is the one above.
    for view in views.iter().filter(|v| v.workload.rate.is_none()) {
        charts.extend(of_workload(view)?);
    }
    Ok(charts)
}

fn of_workload(view: &View) -> Result<Vec<Chart>> {
    let mut charts = Vec::new();
    for section in muduo_sections(&view.loads) {
        let (subject, row_name, loads) = section.rows();
        let workload = if view.several {
            view.workload.slug()
        } else {
            String::new()
        };
        let stem = format!("{row_name}-{}{workload}", subject.replace(' ', "-"));
        let slug = |what: &str| format!("{what}-by-{stem}.svg");
        let subject = if view.several {
            format!("{subject}, {}", view.workload.label())
        } else {
            subject
        };
        charts.push(Chart {
            file: slug("mib"),
            caption: format!("MiB/s by {row_name}, {subject}"),
            svg: throughput(view, &subject, &section)?,
        });
        // This workload's own cells: a log axis over no value never ends (plotters).
        let has_rtt = loads
            .iter()
            .flat_map(|&l| view.cells_at(l))
            .any(|c| rtt_p99(c).is_some());
        if row_name == "connections" && has_rtt {
            charts.push(Chart {
                file: slug("rtt-p99"),
                caption: format!("p99 round-trip time by connections, {subject}"),
                svg: round_trips(view, &subject, &section)?,
            });
        }
    }
    let workload = if view.several {
        view.workload.slug()
    } else {
        String::new()
    };
    for &load in &view.loads {
        let sliced = view
            .cells_at(load)
            .any(|c| c.runs.iter().any(|r| r.series.is_some()));
        if !sliced {
            continue;
        }
        let subject = view.titled(load.label());
        charts.push(Chart {
            file: format!("window-{}{workload}.svg", load.slug()),
            caption: format!("MiB/s over the window, {subject}"),
            svg: over_the_window(view, &subject, load)?,
        });
    }
    for &load in &view.loads {
        let queued = view
            .cells_at(load)
            .any(|c| c.runs.iter().any(|r| r.accept_queue.is_some()));
        if !queued {
            continue;
        }
        let subject = view.titled(load.label());
        charts.push(Chart {
            file: format!("accept-queue-{}{workload}.svg", load.slug()),
            caption: format!("Connections waiting in the accept queue, {subject}"),
            svg: accept_queue(view, &subject, load)?,
        });
    }
    Ok(charts)
}

/// Each implementation's run with the longest accept queue, sample by
/// sample from the client's start, under the backlog that drops SYNs.
fn accept_queue(view: &View, subject: &str, load: Load) -> Result<String> {
    let lines: Vec<(&String, &AcceptQueue)> = view
        .implementations()
        .iter()
        .filter_map(|r| {
            let cell = view.cell(load, r).filter(|c| c.status == Status::Ok)?;
            let worst = cell
                .runs
                .iter()
                .filter_map(|run| run.accept_queue.as_ref())
                .max_by_key(|q| q.peak())?;
            Some((r, worst))
        })
        .collect();
    let points = |q: &AcceptQueue| -> Vec<(f64, f64)> {
        // Each line falls to zero after its last sample: the queue was empty.
        let end = q.depths.len() as f64 * q.interval_ms;
        (q.depths.iter().enumerate())
            .map(|(i, &d)| (i as f64 * q.interval_ms, f64::from(d)))
            .chain([(end, 0.0)])
            .collect()
    };
    let right = lines
        .iter()
        .map(|(_, q)| q.held_seconds() * 1e3)
        .fold(10.0, f64::max)
        * 1.05;
    let backlog = lines.iter().map(|(_, q)| q.backlog).max().unwrap_or(0);
    let top = lines
        .iter()
        .map(|(_, q)| q.peak())
        .chain([backlog])
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.1;
    let caption = format!("Accept queue, {subject}");
    let marks = [
        "lines: each cell's run with the longest queue",
        "grey: the backlog, past which SYNs are dropped",
    ];
    chart(view, marks, |plot| {
        let mut chart = linear(
            plot,
            &caption,
            (right, top),
            ["ms from the client's start", "connections waiting"],
        )?;
        chart
            .draw_series(LineSeries::new(
                [(0.0, f64::from(backlog)), (right, f64::from(backlog))],
                RGBColor(160, 160, 160).stroke_width(1),
            ))
            .map_err(draw)?;
        for (implementation, queue) in &lines {
            chart
                .draw_series(LineSeries::new(
                    points(queue),
                    color_of(view, implementation).stroke_width(2),
                ))
                .map_err(draw)?;
        }
        Ok(())
    })
}

/// Each implementation's median run, slice by slice: where the throughput
/// of a window moved.
fn over_the_window(view: &View, subject: &str, load: Load) -> Result<String> {
    // Each cell's median run as (ms into the window at the slice's middle, MiB/s).
    let lines: Vec<(&String, Vec<(f64, f64)>)> = view
        .implementations()
        .iter()
        .filter_map(|r| {
            let cell = view.cell(load, r).filter(|c| c.status == Status::Ok)?;
            let series = median_run(cell)?.series.as_ref()?;
            let mut start = 0.0;
            let points = series
                .seconds
                .iter()
                .zip(series.mib_per_s())
                .map(|(seconds, mib)| {
                    let middle = (start + seconds / 2.0) * 1e3;
                    start += seconds;
                    (middle, mib)
                })
                .collect();
            Some((r, points))
        })
        .collect();
    let points = || lines.iter().flat_map(|(_, p)| p.iter());
    let right = points().map(|p| p.0).fold(1.0, f64::max) * 1.03;
    let top = points().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let caption = format!("MiB/s over the window, {subject}");
    let marks = ["lines: each cell's median run", "points: its slices"];
    chart(view, marks, |plot| {
        let mut chart = linear(
            plot,
            &caption,
            (right, top),
            ["ms into the window", "MiB/s"],
        )?;
        for (implementation, points) in &lines {
            let color = color_of(view, implementation);
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(draw)?;
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 2, color.filled())))
                .map_err(draw)?;
        }
        Ok(())
    })
}

fn mib(cell: &Cell) -> Option<Summary> {
    (cell.status == Status::Ok).then_some(cell.mib_per_s?)
}

fn rtt_p99(cell: &Cell) -> Option<Summary> {
    cell.summary(registry::figure("rtt_p99_us"))
}

/// The x axis: one group per load, labelled with its thread or connection count.
fn labels(view: &View, section: &Section) -> Vec<String> {
    section
        .loads
        .iter()
        .map(|l| {
            let n = section.row_label(*l);
            let oversubscribed = view
                .implementations()
                .iter()
                .filter_map(|r| view.cell(*l, r))
                .any(|c| c.placement.oversubscribed);
            format!("{n}{}", if oversubscribed { "*" } else { "" })
        })
        .collect()
}

fn throughput(view: &View, subject: &str, section: &Section) -> Result<String> {
    let implementations = view.implementations();
    let labels = labels(view, section);
    let (_, row_name, loads) = section.rows();
    let loads = &loads;
    let top = loads
        .iter()
        .flat_map(|l| {
            implementations
                .iter()
                .filter_map(move |r| mib(view.cell(*l, r)?))
        })
        .map(|s| s.max)
        .fold(1.0, f64::max)
        * 1.08;
    let groups = loads.len() as f64;
    let width = 0.84 / implementations.len() as f64;
    let caption = format!("MiB/s by {row_name}, {subject}");
    let marks = ["bars: median of the runs", "whiskers: min and max"];
    chart(view, marks, |plot| {
        let mut chart = frame(plot, &caption)
            .build_cartesian_2d(-0.5..groups - 0.5, 0.0..top)
            .map_err(draw)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(loads.len())
            .x_label_formatter(&|x| group_label(&labels, *x))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .x_desc(row_name)
            .y_desc("MiB/s")
            .draw()
            .map_err(draw)?;
        for (i, implementation) in implementations.iter().enumerate() {
            let color = color_of(view, implementation);
            let bars = placed(view, loads, implementation, i, 0.84, mib);
            chart
                .draw_series(bars.iter().map(|(x, s)| {
                    Rectangle::new(
                        [(x - width * 0.45, 0.0), (x + width * 0.45, s.median)],
                        color.filled(),
                    )
                }))
                .map_err(draw)?;
            chart
                .draw_series(bars.iter().map(|(x, s)| {
                    ErrorBar::new_vertical(*x, s.min, s.median, s.max, BLACK.stroke_width(1), 3)
                }))
                .map_err(draw)?;
            let bound = placed(view, loads, implementation, i, 0.84, |c| {
                mib(c).filter(|_| !bound(c).is_empty())
            });
            chart
                .draw_series(bound.iter().map(|(x, s)| {
                    Text::new(
                        "^",
                        (*x - width * 0.2, s.max * 1.04),
                        ("sans-serif", 14).into_font(),
                    )
                }))
                .map_err(draw)?;
        }
        Ok(())
    })
}

fn round_trips(view: &View, subject: &str, section: &Section) -> Result<String> {
    let implementations = view.implementations();
    let labels = labels(view, section);
    let loads = &section.loads;
    let summaries = || {
        loads.iter().flat_map(|l| {
            implementations
                .iter()
                .filter_map(move |r| rtt_p99(view.cell(*l, r)?))
        })
    };
    let low = summaries()
        .map(|s| s.min)
        .fold(f64::INFINITY, f64::min)
        .max(1.0)
        / 1.5;
    let high = summaries().map(|s| s.max).fold(low * 2.0, f64::max) * 1.5;
    let caption = format!("p99 round-trip time by connections, {subject}");
    let marks = ["points: median of the runs", "whiskers: min and max"];
    chart(view, marks, |plot| {
        let mut chart = frame(plot, &caption)
            .build_cartesian_2d(-0.5..loads.len() as f64 - 0.5, (low..high).log_scale())
            .map_err(draw)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(loads.len())
            .x_label_formatter(&|x| group_label(&labels, *x))
            .y_label_formatter(&|us| duration(*us))
            .x_desc("connections")
            .y_desc("p99 round trip (log scale)")
            .draw()
            .map_err(draw)?;
        for (i, implementation) in implementations.iter().enumerate() {
            let color = color_of(view, implementation);
            // A small offset per implementation keeps equal points apart.
            let points = placed(view, loads, implementation, i, 0.6, rtt_p99);
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|(x, s)| (*x, s.median)),
                    color.stroke_width(2),
                ))
                .map_err(draw)?;
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|(x, s)| Circle::new((*x, s.median), 3, color.filled())),
                )
                .map_err(draw)?;
            chart
                .draw_series(points.iter().map(|(x, s)| {
                    ErrorBar::new_vertical(*x, s.min, s.median, s.max, color.stroke_width(1), 4)
                }))
                .map_err(draw)?;
        }
        Ok(())
    })
}

/// p50, p99 and p99.9 round trips (from when each block was due) against
/// the rate offered, each implementation in its colour, on a log scale;
/// a line ends where its implementation no longer sustained the rate.
fn latency_by_rate(view: &View, sweep: &Sweep, subject: &str) -> Result<String> {
    let results = view.results;
    // Each implementation's (rate, [p50, p99, p99.9]) while sustained.
    type Line<'a> = (&'a String, Vec<(f64, [f64; 3])>);
    let lines: Vec<Line> = view
        .implementations()
        .iter()
        .map(|i| {
            let points = sweep
                .rates
                .iter()
                .map_while(|&rate| match Latency::of(sweep.cell(results, i, rate)) {
                    Latency::Sustained { p50, p99, p999 } => Some((rate as f64, [p50, p99, p999])),
                    _ => None,
                })
                .collect();
            (i, points)
        })
        .collect();
    let values = || {
        lines
            .iter()
            .flat_map(|(_, p)| p.iter().flat_map(|(_, q)| *q))
    };
    // No implementation sustained even the lowest rate: an empty chart
    // of a decade, not one of an infinite range (whose ticks never end).
    let low = match values().next() {
        Some(_) => values().fold(f64::INFINITY, f64::min).max(1.0) / 1.5,
        None => 100.0,
    };
    let high = values().fold(low * 10.0, f64::max) * 1.5;
    let right = sweep.rates.last().copied().unwrap_or(1) as f64 * 1.05;
    let marks = ["p99 filled, p99.9 hollow", "p50: thin lines, below"];
    chart(view, marks, |plot| {
        let mut chart = frame(plot, subject)
            .build_cartesian_2d(0.0..right, (low..high).log_scale())
            .map_err(draw)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|r| thousands(*r))
            .y_label_formatter(&|us| duration(*us))
            .x_desc("blocks/s offered")
            .y_desc("round trip from when due (log scale)")
            .draw()
            .map_err(draw)?;
        for (implementation, points) in &lines {
            let color = color_of(view, implementation);
            for (q, width) in [(0, 1), (1, 2), (2, 1)] {
                chart
                    .draw_series(LineSeries::new(
                        points.iter().map(|(r, v)| (*r, v[q])),
                        color.stroke_width(width),
                    ))
                    .map_err(draw)?;
            }
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|(r, v)| Circle::new((*r, v[1]), 3, color.filled())),
                )
                .map_err(draw)?;
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|(r, v)| Circle::new((*r, v[2]), 3, color.stroke_width(1))),
                )
                .map_err(draw)?;
        }
        Ok(())
    })
}

/// MiB/s release by release, for each range of releases and load: the
/// median of the runs with min and max, a release that did not build left
/// without a mark.
fn by_release(view: &View) -> Result<Vec<(String, String, String)>> {
    let results = view.results;
    let mut charts = Vec::new();
    for range in &results.release_series() {
        let names = range.names();
        for (workload, load) in trend::loads(results, &names) {
            let points: Vec<(f64, Summary)> = names
                .iter()
                .enumerate()
                .filter_map(|(i, name)| {
                    let cell = trend::cell(results, name, workload, load)?;
                    // Its 95% interval where the runs give one, else min and max.
                    let s = mib(cell)?;
                    let (min, max) = cell.interval.map_or((s.min, s.max), |i| (i.low, i.high));
                    Some((i as f64, Summary { min, max, ..s }))
                })
                .collect();
            // Every release's mark, but only so many labels as fit.
            let every = range.versions.len().div_ceil(12);
            let labels: Vec<String> = range
                .versions
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    if i % every == 0 {
                        v.clone()
                    } else {
                        String::new()
                    }
                })
                .collect();
            let top = points.iter().map(|(_, s)| s.max).fold(1.0, f64::max) * 1.1;
            let caption = format!(
                "MiB/s by release of {}, {}, {}",
                range.krate,
                load.label(),
                workload.label()
            );
            let marks = ["points: median of the runs", "whiskers: its interval"];
            let svg = chart_of(view, std::slice::from_ref(&range.spec), marks, |plot| {
                let mut chart = frame(plot, &caption)
                    .build_cartesian_2d(-0.5..labels.len() as f64 - 0.5, 0.0..top)
                    .map_err(draw)?;
                chart
                    .configure_mesh()
                    .disable_x_mesh()
                    .x_labels(labels.len())
                    .x_label_formatter(&|x| group_label(&labels, *x))
                    .y_label_formatter(&|v| format!("{v:.0}"))
                    .x_desc("release")
                    .y_desc("MiB/s")
                    .draw()
                    .map_err(draw)?;
                let color = color_of(view, &names[0]);
                chart
                    .draw_series(LineSeries::new(
                        points.iter().map(|(x, s)| (*x, s.median)),
                        color.stroke_width(2),
                    ))
                    .map_err(draw)?;
                chart
                    .draw_series(points.iter().map(|(x, s)| {
                        ErrorBar::new_vertical(*x, s.min, s.median, s.max, BLACK.stroke_width(1), 4)
                    }))
                    .map_err(draw)?;
                chart
                    .draw_series(
                        points
                            .iter()
                            .map(|(x, s)| Circle::new((*x, s.median), 3, color.filled())),
                    )
                    .map_err(draw)?;
                Ok(())
            })?;
            // The run's other workloads, where it has several, in the name too.
            let workload_part = match view.several {
                true => workload.slug(),
                false => format!("-{}B", workload.block),
            };
            let file = format!(
                "releases-{}-{}{workload_part}.svg",
                range.krate,
                load.slug()
            );
            charts.push((file, caption, svg));
        }
    }
    Ok(charts)
}

/// Where the `i`th implementation puts its mark in each load's group, and
/// the figure (`of` its cell) there: each group is `spread` wide, centred on
/// the load's index, and split evenly among the implementations.
fn placed(
    view: &View,
    loads: &[Load],
    implementation: &str,
    i: usize,
    spread: f64,
    of: fn(&Cell) -> Option<Summary>,
) -> Vec<(f64, Summary)> {
    let step = spread / view.implementations().len() as f64;
    loads
        .iter()
        .enumerate()
        .filter_map(|(g, load)| {
            let s = of(view.cell(*load, implementation)?)?;
            Some((g as f64 - spread / 2.0 + (i as f64 + 0.5) * step, s))
        })
        .collect()
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// An SVG chart: `plot` draws the plot on the left; the legend, with
/// `marks` saying what bars or points and whiskers are, goes on the right.
fn chart(view: &View, marks: [&str; 2], plot: impl FnOnce(&Area) -> Result<()>) -> Result<String> {
    chart_of(view, view.implementations(), marks, plot)
}

/// [`chart`] with a legend of `named` implementations only.
fn chart_of(
    view: &View,
    named: &[String],
    marks: [&str; 2],
    plot: impl FnOnce(&Area) -> Result<()>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let size = (PLOT_WIDTH + legend_width(named), SIZE.1);
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw)?;
        let (left, right) = root.split_horizontally(PLOT_WIDTH);
        plot(&left)?;
        legend(&right, view, named, marks)?;
        root.present().map_err(draw)?;
    }
    Ok(svg)
}

/// The plot's caption, margins and label areas, the same in every chart.
/// A chart of whole numbers on both axes from zero to `right` and `top`,
/// its axes named by `desc`.
fn linear<'a, 'b>(
    plot: &'a Area<'b>,
    caption: &str,
    (right, top): (f64, f64),
    [x_desc, y_desc]: [&str; 2],
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>> {
    let mut chart = frame(plot, caption)
        .build_cartesian_2d(0.0..right, 0.0..top)
        .map_err(draw)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(draw)?;
    Ok(chart)
}

pub(super) fn frame<'a, 'b>(
    area: &'a Area<'b>,
    caption: &str,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(caption, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(48)
        .y_label_area_size(64);
    builder
}

/// The label of the group centred at `x`; nothing between groups.
fn group_label(labels: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    labels.get(i as usize).cloned().unwrap_or_default()
}

fn duration(us: f64) -> String {
    match us {
        us if us >= 1e6 => format!("{:.0} s", us / 1e6),
        us if us >= 1e3 => format!("{:.0} ms", us / 1e3),
        us => format!("{us:.0} us"),
    }
}

/// The legend's width: the chart's own, or wider for names longer than it
/// holds (a configuration's knobs), at about 8 pixels a character.
fn legend_width(named: &[String]) -> u32 {
    let longest = named.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    (SIZE.0 - PLOT_WIDTH).max(40 + 8 * longest as u32)
}

/// The implementations in their colours, what the marks mean, and the runs behind them.
fn legend(area: &Area, view: &View, named: &[String], marks: [&str; 2]) -> Result<()> {
    let text = ("sans-serif", 14).into_font();
    let small = ("sans-serif", 12).into_font();
    let mut y = 40;
    for implementation in named {
        let color = color_of(view, implementation);
        area.draw(&Rectangle::new([(8, y - 6), (22, y + 6)], color.filled()))
            .map_err(draw)?;
        area.draw(&Text::new(
            implementation.as_str(),
            (30, y - 8),
            text.clone(),
        ))
        .map_err(draw)?;
        y += 22;
    }
    y += 10;
    let runs = format!("{} run(s) per cell", view.results.config.repeat);
    let mut notes = vec![marks[0].to_string(), marks[1].to_string(), runs];
    if view
        .results
        .cells
        .iter()
        .any(|c| c.placement.oversubscribed)
    {
        notes.push("* oversubscribed".into());
    }
    if view.results.cells.iter().any(|c| !bound(c).is_empty()) {
        notes.push("^ client-bound: a lower bound".into());
    }
    if view.results.cells.iter().any(|c| c.status != Status::Ok) {
        notes.push("missing: no figure".into());
    }
    for note in notes {
        area.draw(&Text::new(note, (8, y), small.clone()))
            .map_err(draw)?;
        y += 18;
    }
    Ok(())
}

pub(super) fn draw<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing a chart: {e:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_loop_that_sustained_no_rate_still_draws_its_chart() {
        let (mut results, _) = super::super::open_loop::tests::swept(None);
        for run in results.cells.iter_mut().flat_map(|c| c.runs.iter_mut()) {
            let open = run.open_loop.as_mut().unwrap();
            open.not_sustained = Some("100 of 1000 blocks/s came back".into());
        }
        let charts = render(&View::all(&results)).unwrap();
        let latency = charts
            .iter()
            .find(|c| c.file.starts_with("latency-by-rate"));
        assert!(latency.unwrap().svg.contains("</svg>"));
    }
}
