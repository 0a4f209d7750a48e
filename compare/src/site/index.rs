//! The site's index: what moved, each machine's runs over time with the
//! latest one's tables, and the implementations.

use anyhow::Result;

use super::content::{Site, describe, implementation_page};
use super::implementation::{anchor, step_line};
use super::page::Page;
use history::{Series, Step, judged};
use report::html::escape;

pub fn page(site: &Site) -> Result<String> {
    let mut page = Page::new("pingpong: the history of runs", "", site.book);
    let machines = site.machines();
    let implementations = site.implementations();
    page.push(&format!(
        "<p>{} run(s) on {} machine(s), of {} implementation(s). Figures are compared only \
         on one machine: a machine is its host name, CPU model, CPUs and kernel.</p>\n",
        site.runs.len(),
        machines.len(),
        implementations.len()
    ));
    moved(site, &mut page);
    // Each run's comparison with the run before it, by the run.
    let against: std::collections::HashMap<&str, &super::content::Comparison> = site
        .comparisons
        .iter()
        .filter(|c| c.releases.is_none())
        .map(|c| (site.runs[c.candidate].slug.as_str(), c))
        .collect();
    // The machine that ran last first.
    let mut machines: Vec<_> = machines.into_iter().collect();
    machines.sort_by_key(|(_, runs)| std::cmp::Reverse(runs.last().map(|r| r.started.clone())));
    for (machine, runs) in &machines {
        let Some(latest) = runs.last() else { continue };
        page.push(&format!(
            "<h2>Machine {}</h2>\n<p>{}. The latest run: {}.</p>\n",
            escape(machine),
            escape(&describe(&latest.host)),
            page.link(&latest.page(), &latest.title())
        ));
        if !latest.headline.is_empty() {
            page.push(&format!("<h2>Its latest tables</h2>\n{}", latest.headline));
        }
        page.push(
            "<h3>Its runs, newest first</h3>\n<table>\n<tr><th>run</th><th>command</th>\
             <th>cells</th><th>against the run before</th></tr>\n",
        );
        for run in runs.iter().rev() {
            let before = against.get(run.slug.as_str());
            page.push(&format!(
                "<tr><td>{}</td><td class=\"text\"><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
                page.link(&run.page(), &super::page::when(&run.started)),
                escape(&run.command),
                run.cells,
                before
                    .map(|c| page.link(&c.page(), &c.tally()))
                    .unwrap_or_else(|| "-".into())
            ));
        }
        page.push("</table>\n");
    }
    page.push("<h2>Implementations</h2>\n<ul>\n");
    for (name, series) in &implementations {
        page.push(&format!(
            "<li>{}: {} cell series</li>\n",
            page.link(&implementation_page(name), name),
            series.len()
        ));
    }
    page.push("</ul>\n");
    Ok(page.end())
}

/// Every step of every series, the largest first.
fn moved(site: &Site, page: &mut Page) {
    let mut steps: Vec<(&Series, Step)> = site
        .series
        .iter()
        .flat_map(|s| s.steps.iter().map(move |step| (s, step.clone())))
        .collect();
    steps.sort_by(|a, b| b.1.change().abs().total_cmp(&a.1.change().abs()));
    let looked = site.series.iter().filter(|s| judged(s)).count();
    let unconfirmed: usize = site.series.iter().map(|s| s.unconfirmed).sum();
    page.push(&format!(
        "<h2>What moved</h2>\n<p>{} step(s) in the {looked} series of 6 or more runs, confirmed \
         by compare check's rule with every series judged together; {unconfirmed} more \
         proposed, unconfirmed.</p>\n",
        steps.len()
    ));
    if steps.is_empty() {
        return;
    }
    page.push("<ul>\n");
    for (series, step) in steps {
        let cell = page.link(
            &format!(
                "{}#{}",
                implementation_page(&series.cell.implementation),
                anchor(series)
            ),
            &series.cell.label(),
        );
        let line = step_line(site, page, series, &step);
        page.push(&format!("<li>{cell}: {line}</li>\n"));
    }
    page.push("</ul>\n");
}
