//! `compare site`: the history as a static site, for `file://` or any
//! static host. An index of the runs by machine with their latest tables
//! and what moved; a page per implementation with a trend chart per cell
//! and its steps; a page per run beside its report; a comparison
//! (`compare check`'s table) of every two runs on one machine that share
//! a cell, and of consecutive releases inside a run. Every page's links
//! are checked once it is written.

mod comparison;
mod implementation;
mod index;
pub mod links;
mod model;
mod page;
mod run;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::defaults;
use crate::history::{History, Location};
use model::{Run, Site, implementation_page};
use page::{nav, slug};

/// What `compare site` builds, from what.
pub struct Options {
    pub history: PathBuf,
    pub out: PathBuf,
    /// The rendered book to copy in and link from every page; none: a
    /// site without it.
    pub book: Option<PathBuf>,
}

/// Builds the site of `options.history` in `options.out`; `say` hears
/// each stage.
pub fn build(options: &Options, say: impl Fn(&str)) -> Result<()> {
    if let Some(book) = options
        .book
        .as_ref()
        .filter(|b| !b.join("index.html").is_file())
    {
        bail!(
            "{} holds no rendered book: run `mdbook build docs`, or give --book none",
            book.display()
        );
    }
    let location = Location::from(&options.history);
    if let Location::File(path) = &location
        && !path.is_file()
    {
        bail!(
            "no history at {location}: `compare run` appends to it, or `compare history import \
             DIR` brings in results folders"
        );
    }
    let history = History::open(&location)?;
    let entries = history.entries()?;
    if entries.is_empty() {
        bail!("the history {location} holds no run: import some with `compare history import DIR`");
    }
    let mut runs: Vec<Run> = Vec::new();
    for entry in &entries {
        let results = history.load(entry.id)?;
        let mut name = slug(&entry.started.replace(':', "-"));
        name.truncate("2026-12-01T14-46-00".len());
        let taken = runs.iter().filter(|r| r.slug.starts_with(&name)).count();
        if taken > 0 {
            name = format!("{name}-{}", taken + 1);
        }
        runs.push(Run {
            id: entry.id,
            slug: name,
            machine: entry.machine.clone(),
            source: entry.source.clone(),
            results,
        });
    }
    say(&format!("{} run(s) read from {location}", runs.len()));
    let series = history.series()?;
    let out = &options.out;
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    // A page of a run no longer in the history must not outlive it; what
    // else the folder holds is not the site's to remove.
    for folder in ["runs", "comparisons", "implementations", "book"] {
        let folder = out.join(folder);
        if folder.is_dir() {
            fs::remove_dir_all(&folder)
                .with_context(|| format!("removing {}", folder.display()))?;
        }
    }
    let comparisons = comparison::all(&runs, &history, defaults::SITE_COMPARISON_SPAN)?;
    say(&format!("{} comparison(s) judged", comparisons.len()));
    let site = Site {
        runs,
        series,
        comparisons,
        book: options.book.is_some(),
    };
    let mut pages: Vec<(String, String)> = Vec::new();
    for (i, run) in site.runs.iter().enumerate() {
        let reference = crate::report::reference(&run.results, None)?;
        // The report as `compare report` renders it, with the site's links
        // at its top (its style is its own: the links carry theirs).
        let top = format!("<body>\n{}", nav("../../", site.book));
        for (name, text) in
            crate::report::render(&run.results, &[crate::report::Format::Html], &reference)?
        {
            let linked = text.replacen("<body>\n", &top, 1);
            pages.push((format!("runs/{}/{name}", run.slug), linked));
        }
        pages.push((run.page(), run::page(&site, i)?));
    }
    say(&format!(
        "{} run page(s) and report(s) written",
        site.runs.len()
    ));
    for c in &site.comparisons {
        pages.extend(comparison::pages(&site, c));
    }
    let mut charts = 0;
    let implementations = site.implementations();
    for (name, series) in &implementations {
        let (text, drawn) = implementation::page(&site, name, series)?;
        charts += drawn;
        pages.push((implementation_page(name), text));
    }
    pages.push(("index.html".into(), index::page(&site)?));
    pages.push(("compare.html".into(), comparison::chooser(&site)));
    for (path, text) in &pages {
        let path = out.join(path);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(book) = &options.book {
        copy_book(book, &out.join("book"))?;
    }
    let broken = links::broken(out)?;
    if !broken.is_empty() {
        bail!(
            "the site has {} broken link(s), the first: {}",
            broken.len(),
            broken[0]
        );
    }
    say(&format!(
        "{} page(s), {} trend chart(s); every link checked",
        pages.len(),
        charts
    ));
    Ok(())
}

/// Copies the rendered book into the site.
fn copy_book(book: &Path, into: &Path) -> Result<()> {
    let mut stack = vec![book.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let from = entry?.path();
            let to = into.join(from.strip_prefix(book)?);
            if from.is_dir() {
                stack.push(from);
                continue;
            }
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::copy(&from, &to)
                .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        }
    }
    Ok(())
}
