//! `compare site`: the history as a static site, for `file://` or any
//! static host. An index of the runs by machine with their latest tables
//! and what moved; a page per implementation with a trend chart per cell
//! and its steps; a page per run beside its report; a comparison
//! (`compare check`'s table) of every two runs on one machine that share
//! a cell, and of consecutive releases inside a run. Every page's links
//! are checked once it is written.

mod ahead;
mod book;
mod comparison;
mod content;
mod implementation;
mod index;
mod kept;
pub mod links;
mod page;
mod run;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{Context, Result, bail};

use crate::check::Past;
use ahead::Ahead;
use content::{Comparison, Run, Site, Tally, implementation_page};
use history::{Entry, History, Location};
use kept::{Kept, key};
use model::results::Results;
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
    let (location, history, entries) = opened(options)?;
    say(&format!("{} run(s) in {location}", entries.len()));
    let out = &options.out;
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let book = options.book.is_some();
    let made_by = format!("{} book={book}", kept::this_compare()?);
    let kept = Kept::take(out, &made_by)?;
    let slugs = slugs(&entries);
    let unkept: Vec<i64> = entries
        .iter()
        .zip(&slugs)
        .filter(|(entry, slug)| kept.run(slug, &entry.digest, out).is_none())
        .map(|(entry, _)| entry.id)
        .collect();
    let (mut site, next) = std::thread::scope(|scope| -> Result<_> {
        let mut builder = Builder {
            history: &history,
            ahead: Ahead::start(scope, &location, unkept),
            past: Past::new(&history),
            out,
            kept: &kept,
            next: Kept {
                made_by,
                ..Kept::default()
            },
            site: Site {
                runs: Vec::new(),
                series: Vec::new(),
                comparisons: Vec::new(),
                book,
            },
            latest: HashMap::new(),
            chains: HashMap::new(),
            tally: Counted::default(),
        };
        for (entry, slug) in entries.iter().zip(slugs) {
            builder.add(entry, slug)?;
            let done = builder.site.runs.len();
            if done.is_multiple_of(100) || done == entries.len() {
                say(&builder.tally.progress(done, entries.len()));
            }
        }
        Ok((builder.site, builder.next))
    })?;
    site.series = history.series()?;
    let implementations = site.implementations();
    let (pages, charts) = pages(&site, &implementations, &location)?;
    for (path, text) in &pages {
        write(out, path, text)?;
    }
    let removed = remove_stale(out, &site, &implementations)?;
    let book = out.join("book");
    if book.is_dir() {
        fs::remove_dir_all(&book).with_context(|| format!("removing {}", book.display()))?;
    }
    if let Some(from) = &options.book {
        book::copy(from, &book)?;
    }
    let broken = links::broken(out)?;
    if !broken.is_empty() {
        bail!(
            "the site has {} broken link(s), the first: {}",
            broken.len(),
            broken[0]
        );
    }
    next.write(out)?;
    let reports = site.runs.len();
    say(&format!(
        "{} page(s) written now, {} run(s) with their reports and {} comparison(s) in all, \
         {charts} trend chart(s), {removed} page(s) of runs no longer there removed; every \
         link checked",
        pages.len(),
        reports,
        site.comparisons.len()
    ));
    Ok(())
}

/// The history `options` name, and the runs it holds; refused where
/// there is none, or no book where one is asked.
fn opened(options: &Options) -> Result<(Location, History, Vec<Entry>)> {
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
    Ok((location, history, entries))
}

/// Every page made now, by its path in the site, and the trend charts
/// drawn in them.
fn pages(
    site: &Site,
    implementations: &BTreeMap<String, Vec<&history::Series>>,
    location: &Location,
) -> Result<(Vec<(String, String)>, usize)> {
    let mut pages: Vec<(String, String)> = Vec::new();
    for i in 0..site.runs.len() {
        pages.push((site.runs[i].page(), run::page(site, i)?));
    }
    let mut charts = 0;
    for (name, series) in implementations {
        let (text, drawn) = implementation::page(site, name, series)?;
        charts += drawn;
        pages.push((implementation_page(name), text));
    }
    pages.push(("index.html".into(), index::page(site)?));
    pages.push((
        "compare.html".into(),
        comparison::chooser(site, &location.to_string()),
    ));
    Ok((pages, charts))
}

/// What a build reused and made, counted for its progress.
#[derive(Default)]
struct Counted {
    reports: usize,
    judged: usize,
    reused: usize,
}

impl Counted {
    fn progress(&self, done: usize, all: usize) -> String {
        format!(
            "{done} of {all} run(s): {} report(s) made, {} comparison(s) judged, {} kept \
             from the last build",
            self.reports, self.judged, self.reused
        )
    }
}

/// The site as it is built, a run at a time, oldest first.
struct Builder<'h> {
    history: &'h History,
    /// The runs to read, read ahead.
    ahead: Ahead,
    /// The thresholds' past, every run read remembered in it.
    past: Past<'h>,
    out: &'h Path,
    kept: &'h Kept,
    next: Kept,
    site: Site,
    /// The latest run read of each machine, by its index: the next run's
    /// baseline, as a rule.
    latest: HashMap<String, (usize, Rc<Results>)>,
    /// Each machine's runs so far, as one key: what a comparison's
    /// learned thresholds are drawn from.
    chains: HashMap<String, String>,
    tally: Counted,
}

impl Builder<'_> {
    /// The run of `entry`: its report (made, or kept from the last build),
    /// its comparison with the run before it and those of its releases.
    fn add(&mut self, entry: &Entry, slug: String) -> Result<()> {
        let index = self.site.runs.len();
        let mut results = None;
        let run = match self.kept.run(&slug, &entry.digest, self.out) {
            Some(kept) => {
                self.tally.reused += 1;
                Run {
                    id: entry.id,
                    source: entry.source.clone(),
                    ..kept.clone()
                }
            }
            None => {
                let read = self.read(entry.id)?;
                report(self.out, &slug, &read, self.site.book)?;
                self.tally.reports += 1;
                results = Some(read.clone());
                Run::of(entry, slug, &read)
            }
        };
        self.next.runs.insert(run.slug.clone(), run.clone());
        self.site.runs.push(run);
        let chain = self.chains.get(&entry.machine).cloned().unwrap_or_default();
        if let Some(b) = comparison::baseline_of(&self.site.runs, index) {
            self.between(b, index, &chain, &mut results)?;
        }
        for pair in self.site.runs[index].releases.clone() {
            self.releases(index, pair, &mut results)?;
        }
        if let Some(results) = results {
            self.latest.insert(entry.machine.clone(), (index, results));
        }
        self.chains
            .insert(entry.machine.clone(), key(&[&chain, &entry.digest]));
        Ok(())
    }

    /// A run read, its cells remembered as the thresholds' past.
    fn read(&mut self, id: i64) -> Result<Rc<Results>> {
        let (results, cells) = match self.ahead.take(id) {
            Some(read) => read?,
            None => (self.history.load(id)?, self.history.cells_of(id)?),
        };
        for (cell_id, cell) in cells.into_iter().zip(&results.cells) {
            self.past.remember(cell_id, cell);
        }
        Ok(Rc::new(results))
    }

    /// The `index`th run's results: read already, or now.
    fn results(&mut self, index: usize, read: &mut Option<Rc<Results>>) -> Result<Rc<Results>> {
        if let Some(results) = read {
            return Ok(results.clone());
        }
        let run = &self.site.runs[index];
        if let Some((at, results)) = self.latest.get(&run.machine)
            && *at == index
        {
            return Ok(results.clone());
        }
        let results = self.read(run.id)?;
        *read = Some(results.clone());
        Ok(results)
    }

    /// The `c`th run against the `b`th, judged from the runs before it
    /// (`chain`), or kept.
    fn between(
        &mut self,
        b: usize,
        c: usize,
        chain: &str,
        read: &mut Option<Rc<Results>>,
    ) -> Result<()> {
        let (baseline, candidate) = (&self.site.runs[b], &self.site.runs[c]);
        let name = format!("{}--{}", baseline.slug, candidate.slug);
        let made = comparison::explanations_made(&comparison::explanations_folder(candidate, None));
        let key = key(&["between", &baseline.digest, &candidate.digest, chain, &made]);
        let tally = match self.kept.comparison(&name, &key, self.out) {
            Some(tally) => {
                self.tally.reused += 1;
                tally
            }
            None => {
                let candidate_results = self.results(c, read)?;
                let baseline_results = self.results(b, &mut None)?;
                let (baseline, candidate) = (&self.site.runs[b], &self.site.runs[c]);
                let judged = comparison::between(
                    (baseline, &baseline_results),
                    (candidate, &candidate_results),
                    &self.past,
                )?;
                self.tally.judged += 1;
                judged
                    .map(|(judged, warnings)| self.page(&name, (b, c), None, &judged, &warnings))
                    .transpose()?
            }
        };
        self.keep(name, key, (b, c), None, tally);
        Ok(())
    }

    /// Two consecutive releases inside the `c`th run, judged, or kept.
    fn releases(
        &mut self,
        c: usize,
        (before, after): (String, String),
        read: &mut Option<Rc<Results>>,
    ) -> Result<()> {
        let run = &self.site.runs[c];
        let name = format!("{}--{}--{}", run.slug, slug(&before), slug(&after));
        let folder = comparison::explanations_folder(run, Some((&before, &after)));
        let made = comparison::explanations_made(&folder);
        let key = key(&["releases", &run.digest, &before, &after, &made]);
        let pair = Some((before.clone(), after.clone()));
        let tally = match self.kept.comparison(&name, &key, self.out) {
            Some(tally) => {
                self.tally.reused += 1;
                tally
            }
            None => {
                let results = self.results(c, read)?;
                self.tally.judged += 1;
                comparison::releases(&self.site.runs[c], &results, (&before, &after))
                    .map(|judged| self.page(&name, (c, c), pair.clone(), &judged, &[]))
                    .transpose()?
            }
        };
        self.keep(name, key, (c, c), pair, tally);
        Ok(())
    }

    /// Writes a comparison's page; its verdicts counted.
    fn page(
        &self,
        name: &str,
        (baseline, candidate): (usize, usize),
        releases: Option<(String, String)>,
        judged: &model::verdicts::Comparison,
        warnings: &[String],
    ) -> Result<Tally> {
        let c = Comparison {
            name: name.into(),
            baseline,
            candidate,
            releases,
            tally: Tally::of(judged),
        };
        write(
            self.out,
            &c.page(),
            &comparison::page(&self.site, &c, judged, warnings),
        )?;
        Ok(c.tally)
    }

    /// A comparison, for the next build and the pages that link to it.
    fn keep(
        &mut self,
        name: String,
        key: String,
        (baseline, candidate): (usize, usize),
        releases: Option<(String, String)>,
        tally: Option<Tally>,
    ) {
        self.next.comparisons.insert(name.clone(), (key, tally));
        if let Some(tally) = tally {
            self.site.comparisons.push(Comparison {
                name,
                baseline,
                candidate,
                releases,
                tally,
            });
        }
    }
}

/// Each run's name in the site: its start to the minute, and a number
/// after the first of runs that share it.
fn slugs(entries: &[Entry]) -> Vec<String> {
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    entries
        .iter()
        .map(|entry| {
            let mut name = slug(&entry.started.replace(':', "-"));
            name.truncate("2026-12-01T14-46-00".len());
            let count = taken.entry(name.clone()).or_default();
            *count += 1;
            match count {
                1 => name,
                n => format!("{name}-{n}"),
            }
        })
        .collect()
}

/// A run's report, as `compare report` renders it, with the site's links
/// at its top (its style is its own: the links carry theirs).
fn report(out: &Path, slug: &str, results: &Results, book: bool) -> Result<()> {
    let reference = report::reference(results, None)?;
    let top = format!("<body>\n{}", nav("../../", book));
    for (name, text) in report::render(results, &[report::Format::Html], &reference)? {
        let linked = text.replacen("<body>\n", &top, 1);
        write(out, &format!("runs/{slug}/{name}"), &linked)?;
    }
    Ok(())
}

/// Writes a page at `path` from the site's top.
fn write(out: &Path, path: &str, text: &str) -> Result<()> {
    let path = out.join(path);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

/// Removes the pages of runs, comparisons and implementations the site no
/// longer has (what else the folder holds is not the site's to remove);
/// how many.
fn remove_stale(
    out: &Path,
    site: &Site,
    implementations: &BTreeMap<String, Vec<&history::Series>>,
) -> Result<usize> {
    let runs: BTreeSet<String> = site.runs.iter().map(|r| r.slug.clone()).collect();
    let comparisons: BTreeSet<String> = site
        .comparisons
        .iter()
        .map(|c| format!("{}.html", c.name))
        .collect();
    let implementations: BTreeSet<String> = implementations
        .keys()
        .map(|name| {
            implementation_page(name)
                .trim_start_matches("implementations/")
                .to_string()
        })
        .collect();
    let mut removed = 0;
    for (folder, kept) in [
        ("runs", &runs),
        ("comparisons", &comparisons),
        ("implementations", &implementations),
    ] {
        let Ok(entries) = fs::read_dir(out.join(folder)) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if kept.contains(name) {
                continue;
            }
            match path.is_dir() {
                true => fs::remove_dir_all(&path),
                false => fs::remove_file(&path),
            }
            .with_context(|| format!("removing {}", path.display()))?;
            removed += 1;
        }
    }
    Ok(removed)
}
