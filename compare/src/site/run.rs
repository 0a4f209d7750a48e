//! A run's page: what ran, where and how, its throughput tables, its
//! report, and its comparisons with the machine's other runs.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use super::model::{Comparison, Site, describe, implementation_page};
use super::page::Page;
use crate::report::html::{escape, section};
use crate::results::Status;

/// The page of the `index`th run.
pub fn page(site: &Site, index: usize) -> Result<String> {
    let run = &site.runs[index];
    let results = &run.results;
    let mut page = Page::new(&format!("The run of {}", run.title()), "../../", site.book);
    let ok = results
        .cells
        .iter()
        .filter(|c| c.status == Status::Ok)
        .count();
    let mut lines = vec![
        (
            "command",
            format!("<code>{}</code>", escape(&results.config.command)),
        ),
        ("imported from", escape(&run.source)),
        (
            "the suite",
            escape(&format!(
                "{} at commit {}",
                results.suite.version,
                results.suite.commit.as_deref().unwrap_or("unknown")
            )),
        ),
        (
            "the machine",
            escape(&format!(
                "{}, fingerprint {}",
                describe(&results.host),
                run.machine
            )),
        ),
        (
            "cells",
            format!("{ok} with a figure, {} without", results.cells.len() - ok),
        ),
    ];
    let mut versions: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for cell in &results.cells {
        versions
            .entry(&cell.implementation)
            .or_default()
            .insert(&cell.version);
    }
    let implementations: Vec<String> = results
        .config
        .implementations
        .iter()
        .map(|name| {
            let resolved: Vec<&str> = versions
                .get(name.as_str())
                .map(|v| v.iter().copied().collect())
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
    let mut text = String::new();
    let headline = crate::report::headline(results);
    match headline.is_empty() {
        true => text.push_str("<p>No closed-loop throughput: see the report.</p>\n"),
        false => section(&mut text, "Throughput", &headline),
    }
    page.push(&text);
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
            "Against earlier runs of this machine",
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
