//! The comparison pages: `compare check`'s judgement of a run against the
//! latest earlier run of its machine that shares a cell with it (each
//! cell's threshold learned from the history where it holds enough past
//! runs), or of two consecutive releases inside one run (paired); and the
//! page that chooses two runs of a machine, or says the command that
//! compares any two.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::content::{Comparison, Run, Site};
use super::page::Page;
use crate::check::{Past, between_runs};
use crate::explain::{self, Explained};
use model::results::Results;
use model::verdicts::findings;
use model::verdicts::{self, Rule, judge, within};
use report::html::escape;

/// The run the `candidate`th is compared with: the latest earlier run of
/// its machine with a measured cell in common. One a run, so that the
/// pages grow with the runs, and each night's run is read against the
/// night before.
pub fn baseline_of(runs: &[Run], candidate: usize) -> Option<usize> {
    let c = &runs[candidate];
    runs[..candidate]
        .iter()
        .rposition(|b| b.machine == c.machine && !b.measured.is_disjoint(&c.measured))
}

/// Two runs judged, each cell's threshold learned from `past` where it
/// holds enough; none where no cell in common has runs enough for an
/// interval. With the warnings of how their machines and settings differ.
pub fn between(
    (b, baseline): (&Run, &Results),
    (c, candidate): (&Run, &Results),
    past: &Past,
) -> Result<Option<(verdicts::Comparison, Vec<String>)>> {
    let sides = between_runs((&b.title(), baseline), (&c.title(), candidate), Some(past))?;
    Ok(judge(&sides, Rule::default_for(false))
        .ok()
        .map(|judged| (judged, verdicts::differences(baseline, candidate))))
}

/// Two consecutive releases inside a run, judged paired; none where one
/// did not build, or no cell has runs enough.
pub fn releases(
    c: &Run,
    results: &Results,
    (before, after): (&str, &str),
) -> Option<verdicts::Comparison> {
    let sides = within(&c.title(), results, before, after).ok()?;
    judge(&sides, Rule::default_for(true)).ok()
}

/// Where the explanations of a comparison whose candidate is `c` lie: of
/// two releases inside it, their folder; of a run before it, every
/// explanation beside it (the flagged implementations' among them).
pub fn explanations_folder(c: &Run, releases: Option<(&str, &str)>) -> PathBuf {
    let source = Path::new(&c.source);
    match releases {
        Some((before, after)) => explain::default_out([source, source], before, after),
        None => source.parent().unwrap_or(Path::new(".")).join("explain"),
    }
}

/// What a comparison shows besides its verdicts: the files of its
/// explanations under `folder`, by name, size and time, for the key of
/// its page.
pub fn explanations_made(folder: &Path) -> String {
    let mut found = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.metadata() {
                Ok(m) if m.is_dir() => folders.push(path),
                Ok(m) => found.push(format!(
                    "{} {} {:?}",
                    path.display(),
                    m.len(),
                    m.modified().ok()
                )),
                Err(_) => {}
            }
        }
    }
    found.sort();
    found.join("\n")
}

/// A comparison's page: what was compared, by which rule, its table, the
/// `warnings` of how the two runs differ, and the explanations of what it
/// flags where there are any.
pub fn page(
    site: &Site,
    c: &Comparison,
    judged: &verdicts::Comparison,
    warnings: &[String],
) -> String {
    let explained = explained(site, c, judged);
    let mut why = String::new();
    for (e, graphs) in &explained {
        // Two runs' implementation explained against itself: its name says
        // which of the run's cells moved.
        let cell = match e.baseline == e.candidate {
            true => format!("{}, {}", e.candidate, e.cell),
            false => e.cell.clone(),
        };
        why += &format!(
            "<h2>Why {} moved</h2>\n<p>compare explain: {}.</p>\n",
            escape(&cell),
            escape(&e.summary())
        );
        let told = e.told();
        if !told.is_empty() {
            why += "<table>\n<tr><th>side</th><th>function</th><th>per block</th>\
                    <th>baseline</th><th>candidate</th><th>moved</th><th>~ ns per block</th></tr>\n";
            for (side, f) in told {
                let ns = e
                    .prices
                    .as_ref()
                    .map_or("-".into(), |p| format!("{:+.0}", f.ns_moved(p)));
                why += &format!(
                    "<tr><td>{side}</td><td><code>{}</code></td><td>{}, own</td>\
                     <td>{:.2}</td><td>{:.2}</td><td>{:+.2}</td><td>{ns}</td></tr>\n",
                    escape(&f.name),
                    f.kind.unit(),
                    f.baseline[0],
                    f.candidate[0],
                    f.own_moved()
                );
            }
            if let Some(p) = &e.prices {
                why += &format!(
                    "<tr><td colspan=\"7\">ranked by ~ ns per block at the prices measured \
                     here: {}</td></tr>\n",
                    escape(&p.said())
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
    table(site, c, judged, warnings, &why)
}

/// The explanations (`compare explain`) of the cells a comparison flags,
/// where they lie in their default folders beside the candidate's results
/// (of two releases inside a run, theirs; of two runs, each flagged
/// implementation's against itself), each with its sides' flame graphs.
fn explained(
    site: &Site,
    c: &Comparison,
    judged: &verdicts::Comparison,
) -> Vec<(Explained, Vec<(String, String)>)> {
    let source = |run: usize| Path::new(&site.runs[run].source);
    let files = [source(c.baseline), source(c.candidate)];
    let asked: Vec<(PathBuf, Vec<String>)> = match &c.releases {
        Some((before, after)) => {
            vec![(explain::default_out(files, before, after), judged.flagged())]
        }
        None => judged
            .flagged_by_implementation()
            .into_iter()
            .map(|(name, cells)| (explain::default_out(files, &name, &name), cells))
            .collect(),
    };
    asked
        .iter()
        .flat_map(|(out, cells)| cells.iter().map(move |cell| explain::folder(out, cell)))
        .filter_map(|folder| {
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

/// A comparison's page, `why` (its explanations) at its end.
fn table(
    site: &Site,
    c: &Comparison,
    judged: &verdicts::Comparison,
    warnings: &[String],
    why: &str,
) -> String {
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
    if !warnings.is_empty() {
        page.push("<ul>\n");
        for warning in warnings {
            page.push(&format!("<li>warning: {}</li>\n", escape(warning)));
        }
        page.push("</ul>\n");
    }
    let found = findings::lines(judged);
    if !found.is_empty() {
        page.push(&format!("<p>{}</p>\n<ul>\n", escape(findings::HEADING)));
        for finding in found {
            page.push(&format!("<li>{}</li>\n", escape(&finding)));
        }
        page.push("</ul>\n");
    }
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
                (7, "REGRESSED") => " class=\"regressed\"",
                (7, "improved") => " class=\"improved\"",
                (7, "regressed, unconfirmed" | "improved, unconfirmed") => " class=\"unconfirmed\"",
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

/// Navigates to the comparison of the two runs chosen, where the site has
/// it; else says the command that compares them. `compare.html?b=RUN&c=RUN`
/// chooses them, a link that can be shared.
const CHOOSE: &str = "addEventListener('DOMContentLoaded',()=>{\
for(const f of document.querySelectorAll('form.choose')){\
f.addEventListener('submit',e=>{e.preventDefault();\
const [b,c]=[f.elements.b,f.elements.c].map(s=>s.selectedIndex).sort((x,y)=>x-y);\
const o=f.elements.b.options;const name=o[b].value+'--'+o[c].value;\
if(JSON.parse(f.dataset.pairs).includes(name)){location.href='comparisons/'+name+'.html';}\
else{f.querySelector('output').textContent=b==c?'choose two runs':\
'not built: the site compares each run with the latest earlier run of its machine that \
shares a cell with it. These two: compare check '+o[b].dataset.source+' '+o[c].dataset.source+\
' --history '+f.dataset.history;}});\
const asked=new URLSearchParams(location.search);\
const runs=[...f.elements.b.options].map(o=>o.value);\
if(runs.includes(asked.get('b'))&&runs.includes(asked.get('c'))){\
f.elements.b.value=asked.get('b');f.elements.c.value=asked.get('c');f.requestSubmit();}}});";

/// The page that chooses two runs of a machine (its comparisons listed
/// too, for a reader without scripts); `history` as the site's reader
/// gives it to `compare check`.
pub fn chooser(site: &Site, history: &str) -> String {
    let mut page = Page::with_script("Compare two runs", "", site.book, CHOOSE);
    page.push(
        "<p>Choose two runs of one machine: the older is the baseline. Where one is the \
         other's latest earlier run with a cell in common, their page is <code>compare \
         check</code>'s table, each cell's threshold learned from its past runs where the \
         history holds enough of them; for any other two, the command that makes it.</p>\n",
    );
    for (machine, runs) in site.machines() {
        let pairs: Vec<&Comparison> = site
            .comparisons
            .iter()
            .filter(|c| c.releases.is_none() && site.runs[c.candidate].machine == machine)
            .collect();
        page.push(&format!("<h2>Machine {}</h2>\n", escape(machine)));
        if runs.len() < 2 {
            page.push("<p>It has one run.</p>\n");
            continue;
        }
        let names: Vec<String> = pairs.iter().map(|c| format!("\"{}\"", c.name)).collect();
        page.push(&format!(
            "<form class=\"choose\" data-history=\"{}\" data-pairs='[{}]'>",
            escape(&shlex::try_quote(history).unwrap_or_default()),
            names.join(",")
        ));
        for (field, picked) in [("b", runs.len() - 2), ("c", runs.len() - 1)] {
            page.push(&format!("<select name=\"{field}\">"));
            for (i, run) in runs.iter().enumerate() {
                let selected = if i == picked { " selected" } else { "" };
                page.push(&format!(
                    "<option value=\"{}\" data-source=\"{}\"{selected}>{}</option>",
                    run.slug,
                    escape(&shlex::try_quote(&run.source).unwrap_or_default()),
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
    fn a_run_is_compared_with_its_machine_s_latest_earlier_run_sharing_a_cell() {
        let entry = |i: i64, machine: &str| history::Entry {
            id: i,
            machine: machine.into(),
            started: format!("2026-01-0{i}T00:00:00+00:00"),
            command: String::new(),
            cells: 0,
            source: String::new(),
            digest: String::new(),
        };
        let fixture = model::fixtures::small();
        let run = |i: i64, machine: &str, measured: bool| {
            let mut run = Run::of(&entry(i, machine), format!("r{i}"), &fixture);
            if !measured {
                run.measured.clear();
            }
            run
        };
        // Machine a's runs 0, 1, 3 and 5 (3 has no figure), b's 2 and 4.
        let runs = [
            run(0, "a", true),
            run(1, "a", true),
            run(2, "b", true),
            run(3, "a", false),
            run(4, "b", true),
            run(5, "a", true),
        ];
        let baselines: Vec<Option<usize>> =
            (0..runs.len()).map(|c| baseline_of(&runs, c)).collect();
        assert!(!runs[0].measured.is_empty());
        assert_eq!(baselines, [None, Some(0), None, None, Some(2), Some(1)]);
    }
}
