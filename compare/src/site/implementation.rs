//! An implementation's page: every version and configuration it ran, and
//! on each machine a trend chart per cell with two or more runs, with the
//! steps found in it and what changed across each.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use super::content::Site;
use super::page::{Page, slug, when};
use history::{Series, Step};
use model::implementation::base_name;
use model::stats;
use report::html::escape;
use report::over_runs;

/// The page of `name` and its series; with the number of charts drawn.
pub fn page(site: &Site, name: &str, series: &[&Series]) -> Result<(String, usize)> {
    let mut page = Page::new(name, "../", site.book);
    page.push(
        "<p>Each chart is one cell on one machine, run after run: the median MiB/s of each \
         run's repetitions, with their min and max. In a series of 6 or more runs, the steps \
         found (binary segmentation proposes them where the levels either side differ by more \
         than the series' own noise, at least 1%; compare check's rule confirms them, with every \
         series of the history judged together) are marked where they begin, with the level \
         between them: a step is \"near\" that run, an estimate.</p>\n",
    );
    variants(site, name, &mut page);
    let mut charts = 0;
    let mut machines: BTreeMap<&str, Vec<&Series>> = BTreeMap::new();
    for s in series {
        machines.entry(&s.machine).or_default().push(s);
    }
    if machines.is_empty() {
        page.push("<p>No run of it has a figure.</p>\n");
    }
    for (machine, series) in machines {
        page.push(&format!("<h2>Machine {}</h2>\n", escape(machine)));
        let (drawn, single): (Vec<&Series>, Vec<&Series>) =
            series.into_iter().partition(|s| s.points.len() > 1);
        for s in drawn {
            chart(site, s, &mut page)?;
            charts += 1;
        }
        if !single.is_empty() {
            page.push(
                "<h3>Cells with one run</h3>\n<table>\n<tr><th>cell</th><th>MiB/s</th>\
                 <th>run</th></tr>\n",
            );
            for s in single {
                let point = &s.points[0];
                let run = site
                    .run(point.run)
                    .map(|r| page.link(&r.page(), &when(&point.started)))
                    .unwrap_or_default();
                page.push(&format!(
                    "<tr><td>{}</td><td>{:.0}{}</td><td>{run}</td></tr>\n",
                    escape(&s.cell.label()),
                    point.mib_per_s.median,
                    bound(point.client_bound)
                ));
            }
            page.push("</table>\n");
        }
    }
    Ok((page.end(), charts))
}

/// The versions and configurations of `name` the runs hold.
fn variants(site: &Site, name: &str, page: &mut Page) {
    // Each variant's resolved versions and runs (by index, oldest first).
    let mut found: BTreeMap<&str, (BTreeSet<&str>, BTreeSet<usize>)> = BTreeMap::new();
    for (i, run) in site.runs.iter().enumerate() {
        for (variant, versions) in run.versions.iter().filter(|(v, _)| base_name(v) == name) {
            let entry = found.entry(variant).or_default();
            entry.0.extend(versions.iter().map(String::as_str));
            entry.1.insert(i);
        }
    }
    page.push(
        "<h2>Versions and configurations</h2>\n<table>\n<tr><th>as named</th><th>resolved \
         version</th><th>runs</th><th>first</th><th>last</th></tr>\n",
    );
    for (variant, (versions, runs)) in found {
        let link = |i: Option<&usize>| {
            i.map(|&i| page.link(&site.runs[i].page(), &site.runs[i].title()))
                .unwrap_or_default()
        };
        let versions: Vec<&str> = versions.into_iter().collect();
        page.push(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(variant),
            escape(&versions.join(", ")),
            runs.len(),
            link(runs.first()),
            link(runs.last())
        ));
    }
    page.push("</table>\n");
}

/// A series' chart, and its steps beneath.
fn chart(site: &Site, series: &Series, page: &mut Page) -> Result<()> {
    let label = series.cell.label();
    let steps = &series.steps;
    let at: Vec<usize> = steps.iter().map(|s| s.at).collect();
    // The level of each stretch between steps: the first step's before,
    // then each step's after; with no step, the series' median.
    let levels: Vec<f64> = match steps.first() {
        Some(first) => std::iter::once(first.before)
            .chain(steps.iter().map(|s| s.after))
            .collect(),
        None => {
            let values: Vec<f64> = series.points.iter().map(|p| p.mib_per_s.median).collect();
            stats::median(&values).into_iter().collect()
        }
    };
    let runs: Vec<over_runs::Run> = series
        .points
        .iter()
        .map(|p| over_runs::Run {
            label: format!("{}{}", day_and_time(&p.started), bound(p.client_bound)),
            mib_per_s: p.mib_per_s,
        })
        .collect();
    let svg = over_runs::chart(&label, &runs, &at, &levels)?;
    let judged = match history::judged(series) {
        true => format!(
            "{} step(s) found, {} more proposed but not confirmed",
            steps.len(),
            series.unconfirmed
        ),
        false => "too few runs to look for steps".into(),
    };
    let bound_note = match series.points.iter().any(|p| p.client_bound) {
        true => "; ^ after a run's time: client-bound, a lower bound for the server",
        false => "",
    };
    page.push(&format!(
        "<figure id=\"{}\">\n{}\n<figcaption>{}: {} runs; {judged}. Points: each run's median, \
         whiskers its min and max; grey: the level between steps (the median of its runs); red \
         dashes: where a step begins{bound_note}</figcaption></figure>\n",
        anchor(series),
        svg.trim(),
        escape(&label),
        series.points.len()
    ));
    if steps.is_empty() {
        return Ok(());
    }
    page.push("<ul>\n");
    for step in steps {
        let line = step_line(site, page, series, step);
        page.push(&format!("<li>{line}</li>\n"));
    }
    page.push("</ul>\n");
    Ok(())
}

/// A series' anchor on its implementation's page.
pub fn anchor(series: &Series) -> String {
    slug(&format!("{}-{}", series.machine, series.cell.label()))
}

/// "12-01 14:46": a run on a chart's axis.
fn day_and_time(started: &str) -> String {
    let full = when(started);
    full.get(5..16).unwrap_or(&full).to_string()
}

/// A step as a page says it: which way and how far, near which run (a
/// link), the levels either side, and what changed across it.
pub fn step_line(site: &Site, page: &Page, series: &Series, step: &Step) -> String {
    let near = site
        .run(series.points[step.at].run)
        .map(|r| page.link(&r.page(), &r.title()))
        .unwrap_or_default();
    let direction = if step.after < step.before {
        "down"
    } else {
        "up"
    };
    format!(
        "<span class=\"{direction}\">{direction} {:.0}%</span> near the run of {near} \
         ({:.0} to {:.0} MiB/s): {}",
        step.change().abs() * 100.0,
        step.before,
        step.after,
        escape(&step.cause)
    )
}

/// The mark of a client-bound run, as the tables make it.
fn bound(client_bound: bool) -> &'static str {
    if client_bound { "^" } else { "" }
}
