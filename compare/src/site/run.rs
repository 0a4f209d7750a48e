//! A run's page: what ran, where and how, its throughput tables, its
//! report, and its comparisons with the machine's other runs.

use anyhow::Result;

use super::content::{Comparison, Site, describe, implementation_page};
use super::page::Page;
use report::html::escape;

/// The page of the `index`th run.
pub fn page(site: &Site, index: usize) -> Result<String> {
    let run = &site.runs[index];
    let mut page = Page::new(&format!("The run of {}", run.title()), "../../", site.book);
    let mut lines = vec![
        ("command", format!("<code>{}</code>", escape(&run.command))),
        ("imported from", escape(&run.source)),
        ("the suite", escape(&run.suite)),
        (
            "the machine",
            escape(&format!(
                "{}, fingerprint {}",
                describe(&run.host),
                run.machine
            )),
        ),
        (
            "cells",
            format!("{} with a figure, {} without", run.ok, run.cells - run.ok),
        ),
    ];
    let implementations: Vec<String> = run
        .implementations
        .iter()
        .map(|name| {
            let resolved: Vec<&str> = run
                .versions
                .get(name)
                .map(|v| v.iter().map(String::as_str).collect())
                .unwrap_or_default();
            format!(
                "{} {}",
                page.link(&implementation_page(name), name),
                escape(&resolved.join(", "))
            )
        })
        .collect();
    lines.push(("implementations", implementations.join("; ")));
    page.push("<ul>\n");
    for (name, value) in lines {
        page.push(&format!("<li>{name}: {value}</li>\n"));
    }
    page.push(
        "</ul>\n<p><a href=\"report.html\">The run's report</a>: every table and chart of it.</p>\n",
    );
    match run.headline.is_empty() {
        true => page.push("<p>No closed-loop throughput: see the report.</p>\n"),
        false => page.push(&format!("<h2>Throughput</h2>\n{}", run.headline)),
    }
    let with = |pick: &dyn Fn(&Comparison) -> bool| -> Vec<String> {
        site.comparisons
            .iter()
            .filter(|c| pick(c))
            .map(|c| {
                let other = match c.baseline == index {
                    true => &site.runs[c.candidate],
                    false => &site.runs[c.baseline],
                };
                let what = match &c.releases {
                    Some((before, after)) => format!("{before} against {after}"),
                    None => other.title(),
                };
                format!(
                    "<li>{}: {}</li>\n",
                    page.link(&c.page(), &what),
                    escape(&c.tally())
                )
            })
            .collect()
    };
    let lists = [
        (
            "Against the run before it on this machine",
            with(&|c| c.releases.is_none() && c.candidate == index),
        ),
        (
            "Against later runs of this machine",
            with(&|c| c.releases.is_none() && c.baseline == index),
        ),
        (
            "Consecutive releases inside this run",
            with(&|c| c.releases.is_some() && c.candidate == index),
        ),
    ];
    for (heading, items) in lists {
        if items.is_empty() {
            continue;
        }
        page.push(&format!("<h2>{heading}</h2>\n<ul>\n"));
        for item in items {
            page.push(&item);
        }
        page.push("</ul>\n");
    }
    Ok(page.end())
}
