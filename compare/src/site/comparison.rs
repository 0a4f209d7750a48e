//! The comparison pages: `compare check`'s judgement of two runs on one
//! machine (each cell's threshold learned from the history where it holds
//! enough past runs), or of two consecutive releases inside one run
//! (paired); and the page that chooses any two runs of a machine.

use std::path::Path;

use anyhow::Result;

use super::model::{Comparison, Run, Site};
use super::page::{Page, slug};
use crate::check::verdicts::{self, default_thresholds, judge, within};
use crate::check::{Past, between_runs};
use crate::defaults;
use crate::explain::{self, Explained};
use crate::history::History;
use crate::report::html::escape;

/// Every two runs of one machine, at most `span` of its runs apart, that share a measured cell with runs enough for an
/// interval (the older the baseline); and every two consecutive releases
/// inside a run.
pub fn all(runs: &[Run], history: &History, span: usize) -> Result<Vec<Comparison>> {
    let measured: Vec<_> = runs.iter().map(Run::measured).collect();
    // Each run's place among its machine's runs.
    let place: Vec<usize> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            runs[..i]
                .iter()
                .filter(|r| r.machine == run.machine)
                .count()
        })
        .collect();
    let past = Past::new(history);
    let mut all = Vec::new();
    for (c, candidate) in runs.iter().enumerate() {
        for (b, baseline) in runs[..c].iter().enumerate() {
            if baseline.machine != candidate.machine
                || place[c] - place[b] > span
                || measured[b].is_disjoint(&measured[c])
            {
                continue;
            }
            let sides = between_runs(
                (&baseline.title(), &baseline.results),
                (&candidate.title(), &candidate.results),
                Some(&past),
            )?;
            // Cells in common, but none with runs enough for an interval.
            let Ok(judged) = judge(&sides, default_thresholds(false), defaults::CONFIDENCE) else {
                continue;
            };
            all.push(Comparison {
                name: format!("{}--{}", baseline.slug, candidate.slug),
                baseline: b,
                candidate: c,
                releases: None,
                warnings: verdicts::differences(&baseline.results, &candidate.results),
                judged,
            });
        }
        for range in &candidate.results.release_series() {
            for pair in range.names().windows(2) {
                let (before, after) = (&pair[0], &pair[1]);
                // A release that did not build is not in the run.
                let Ok(sides) = within(&candidate.title(), &candidate.results, before, after)
                else {
                    continue;
                };
                let Ok(judged) = judge(&sides, default_thresholds(true), defaults::CONFIDENCE)
                else {
                    continue;
                };
                all.push(Comparison {
                    name: format!("{}--{}--{}", candidate.slug, slug(before), slug(after)),
                    baseline: c,
                    candidate: c,
                    releases: Some((before.clone(), after.clone())),
                    warnings: Vec::new(),
                    judged,
                });
            }
        }
    }
    Ok(all)
}

/// A comparison's page, by its path in the site.
pub fn pages(site: &Site, c: &Comparison) -> Vec<(String, String)> {
    let explained = explained(site, c);
    let mut why = String::new();
    for (e, graphs) in &explained {
        why += &format!(
            "<h2>Why {} moved</h2>\n<p>compare explain: {}.</p>\n",
            escape(&e.cell),
            escape(&e.summary())
        );
        let told = e.told();
        if !told.is_empty() {
            why += "<table>\n<tr><th>side</th><th>function</th><th>per block</th>\
                    <th>baseline</th><th>candidate</th><th>moved</th></tr>\n";
            for (side, f) in told {
                why += &format!(
                    "<tr><td>{side}</td><td><code>{}</code></td><td>{}, own</td>\
                     <td>{:.2}</td><td>{:.2}</td><td>{:+.2}</td></tr>\n",
                    escape(&f.name),
                    f.kind.unit(),
                    f.baseline[0],
                    f.candidate[0],
                    f.own_moved()
                );
            }
            why += "</table>\n";
        }
        for (side, svg) in graphs {
            // Inline, as every chart of the site: its pages fetch nothing.
            let drawing = svg.find("<svg").map_or("", |at| &svg[at..]);
            let sampled = e
                .sides
                .iter()
                .any(|s| s.side == *side && s.sampled.is_some());
            let what = match sampled {
                true => "CPU time, sampled,",
                false => "instructions",
            };
            why += &format!(
                "<p>{side}, the candidate's {what} per block (red: more than the \
                 baseline's, blue: less):</p>\n<div class=\"flame\">{drawing}</div>\n"
            );
        }
    }
    vec![(c.page(), page(site, c, &why))]
}

/// The explanations (`compare explain`) of the cells a comparison of two
/// releases inside a run flags, where they lie beside the run's results,
/// each with its sides' flame graphs.
fn explained(site: &Site, c: &Comparison) -> Vec<(Explained, Vec<(String, String)>)> {
    let Some((before, after)) = &c.releases else {
        return Vec::new();
    };
    let source = Path::new(&site.runs[c.candidate].source);
    let out = explain::default_out(source, before, after);
    c.judged
        .flagged()
        .iter()
        .filter_map(|cell| {
            let folder = explain::folder(&out, cell);
            let explained = Explained::load(&folder).ok()?;
            let graphs = ["server", "client"]
                .into_iter()
                .filter_map(|side| {
                    let svg = std::fs::read_to_string(folder.join(format!("{side}.svg"))).ok()?;
                    Some((side.to_string(), svg))
                })
                .collect();
            Some((explained, graphs))
        })
        .collect()
}

/// A comparison's page: what was compared, by which rule, the table, and
/// `why` (its explanations).
fn page(site: &Site, c: &Comparison, why: &str) -> String {
    let (b, r) = (&site.runs[c.baseline], &site.runs[c.candidate]);
    let title = match &c.releases {
        Some((before, after)) => format!("{before} against {after}, in the run of {}", r.title()),
        None => format!("{} against {}", b.title(), r.title()),
    };
    let mut page = Page::new(&title, "../", site.book);
    let sides = format!(
        "<p>Baseline: {}; candidate: {}. {}.</p>\n",
        page.link(&b.page(), &b.title()),
        page.link(&r.page(), &r.title()),
        escape(&c.tally())
    );
    page.push(&sides);
    if !c.warnings.is_empty() {
        page.push("<ul>\n");
        for warning in &c.warnings {
            page.push(&format!("<li>warning: {}</li>\n", escape(warning)));
        }
        page.push("</ul>\n");
    }
    let judged = &c.judged;
    let preamble: Vec<String> = judged.preamble().lines().skip(2).map(escape).collect();
    page.push(&format!("<p>{}</p>\n<table>\n<tr>", preamble.join(" ")));
    for h in judged.header() {
        page.push(&format!("<th>{}</th>", escape(&h)));
    }
    page.push("</tr>\n");
    for row in judged.rows() {
        page.push("<tr>");
        let verdict = row[7].clone();
        for (i, entry) in row.iter().enumerate() {
            let class = match (i, verdict.as_str()) {
                (7, "regressed") => " class=\"regressed\"",
                (7, "improved") => " class=\"improved\"",
                _ => "",
            };
            page.push(&format!("<td{class}>{}</td>", escape(entry)));
        }
        page.push("</tr>\n");
    }
    page.push("</table>\n");
    if !judged.unmatched.is_empty() {
        page.push(&format!(
            "<details><summary>{} cell(s) not compared</summary>\n<ul>\n",
            judged.unmatched.len()
        ));
        for u in &judged.unmatched {
            page.push(&format!("<li>{}</li>\n", escape(u)));
        }
        page.push("</ul></details>\n");
    }
    page.push(why);
    page.end()
}

/// Navigates to the comparison of the two runs chosen, where there is one;
/// `compare.html?b=RUN&c=RUN` chooses them, a link that can be shared.
const CHOOSE: &str = "addEventListener('DOMContentLoaded',()=>{\
for(const f of document.querySelectorAll('form.choose')){\
f.addEventListener('submit',e=>{e.preventDefault();\
const [b,c]=[f.elements.b,f.elements.c].map(s=>s.selectedIndex).sort((x,y)=>x-y);\
const name=f.elements.b.options[b].value+'--'+f.elements.b.options[c].value;\
if(JSON.parse(f.dataset.pairs).includes(name)){location.href='comparisons/'+name+'.html';}\
else{f.querySelector('output').textContent=b==c?'choose two runs':\
'not built: these two runs have no cell that can be compared, or lie more than '+f.dataset.span+\
' runs apart (compare check compares any two results files)';}});\
const asked=new URLSearchParams(location.search);\
const runs=[...f.elements.b.options].map(o=>o.value);\
if(runs.includes(asked.get('b'))&&runs.includes(asked.get('c'))){\
f.elements.b.value=asked.get('b');f.elements.c.value=asked.get('c');f.requestSubmit();}}});";

/// The page that chooses two runs of a machine; every comparison listed
/// too, for a reader without scripts.
pub fn chooser(site: &Site) -> String {
    let mut page = Page::with_script("Compare two runs", "", site.book, CHOOSE);
    page.push(&format!(
        "<p>Choose two runs of one machine, at most {} of its runs apart: the older is the \
             baseline. Their page is <code>compare check</code>'s table, each cell's threshold \
             learned from its past runs where the history holds enough of them.</p>\n",
        defaults::SITE_COMPARISON_SPAN
    ));
    for (machine, runs) in site.machines() {
        let pairs: Vec<&Comparison> = site
            .comparisons
            .iter()
            .filter(|c| c.releases.is_none() && site.runs[c.candidate].machine == machine)
            .collect();
        page.push(&format!("<h2>Machine {}</h2>\n", escape(machine)));
        if pairs.is_empty() {
            page.push("<p>No two runs of it have a cell that can be compared.</p>\n");
            continue;
        }
        let names: Vec<String> = pairs.iter().map(|c| format!("\"{}\"", c.name)).collect();
        page.push(&format!(
            "<form class=\"choose\" data-span=\"{}\" data-pairs='[{}]'>",
            defaults::SITE_COMPARISON_SPAN,
            names.join(",")
        ));
        for (field, picked) in [("b", runs.len().saturating_sub(2)), ("c", runs.len() - 1)] {
            page.push(&format!("<select name=\"{field}\">"));
            for (i, run) in runs.iter().enumerate() {
                let selected = if i == picked { " selected" } else { "" };
                page.push(&format!(
                    "<option value=\"{}\"{selected}>{}</option>",
                    run.slug,
                    escape(&run.title())
                ));
            }
            page.push("</select> ");
        }
        page.push("<button>Compare</button> <output></output></form>\n");
        page.push(&format!(
            "<details><summary>Every comparison of this machine ({})</summary>\n<table>\n\
             <tr><th>baseline</th><th>candidate</th><th>verdicts</th></tr>\n",
            pairs.len()
        ));
        for c in pairs {
            page.push(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                escape(&site.runs[c.baseline].title()),
                escape(&site.runs[c.candidate].title()),
                page.link(&c.page(), &c.tally())
            ));
        }
        page.push("</table></details>\n");
    }
    page.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_compared_on_their_machine_within_the_span_only() {
        let dir = tempfile::tempdir().unwrap();
        let history = History::open(&dir.path().join("h.sqlite")).unwrap();
        // Its cells' two repetitions, three times: runs enough for an interval.
        let mut fixture = crate::report::tests::fixture();
        for cell in &mut fixture.cells {
            cell.runs = [cell.runs.clone(), cell.runs.clone(), cell.runs.clone()].concat();
        }
        let run = |i: usize, machine: &str| {
            let mut results = fixture.clone();
            results.config.started = format!("2026-01-0{}T00:00:00+00:00", i + 1);
            Run {
                id: i as i64,
                slug: format!("r{i}"),
                machine: machine.into(),
                source: String::new(),
                results,
            }
        };
        // Five runs of one machine and one of another between them.
        let mut runs: Vec<Run> = (0..5).map(|i| run(i, "a")).collect();
        runs.insert(2, run(9, "b"));
        let names: Vec<String> = all(&runs, &history, 2)
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(
            names,
            [
                "r0--r1", "r0--r2", "r1--r2", "r1--r3", "r2--r3", "r2--r4", "r3--r4"
            ]
        );
    }
}
