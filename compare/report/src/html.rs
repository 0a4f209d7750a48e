//! The report as one self-contained HTML page: inline CSS and SVG, no
//! network (its content security policy forbids any), and a small script
//! that checks, once loaded, that every chart was drawn and nothing was
//! fetched, and writes what it found into `#self-check` for tests.

use std::fmt::Write;

use anyhow::Result;

use super::document::{Document, Export};
use super::grid::Grid;
use super::header::Header;
use super::sections::notes;

pub struct Html;

impl Export for Html {
    fn files(&self, document: &Document) -> Result<Vec<(String, String)>> {
        Ok(vec![("report.html".into(), render(document))])
    }
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;\
padding:0 1em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:14px}\
table{display:block;overflow-x:auto;max-width:100%}th,td{border:1px solid #ccc;padding:3px 8px}td{text-align:right;white-space:nowrap}\
td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}\
figure{margin:1em 0}figure svg{max-width:100%;height:auto}\
figcaption{font-size:13px;color:#555}pre{background:#f6f6f6;padding:.6em;overflow:auto}\
#self-check{display:none}";

const SELF_CHECK: &str = "addEventListener('load',()=>{\
const charts=[...document.querySelectorAll('figure svg')];\
const drawn=charts.filter(s=>s.getBBox().width>0&&s.querySelector('rect,path,polyline,circle')).length;\
document.getElementById('self-check').textContent=\
`tables=${document.querySelectorAll('table').length} charts=${charts.length} drawn=${drawn} \
fetched=${performance.getEntriesByType('resource').length}`;});";

/// A page's start, to its body: the style with `more_style`, a content
/// security policy that lets nothing be fetched, and `script` inline.
pub fn head(title: &str, more_style: &str, script: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width\">\n\
         <title>{}</title>\n<style>{STYLE}{more_style}</style>\n<script>{script}</script>\n\
         </head><body>\n",
        escape(title)
    )
}

fn render(document: &Document) -> String {
    let results = document.results;
    let header = Header::of(results);
    let mut out = head(&header.title, "", SELF_CHECK);
    let _ = write!(out, "<h1>{}</h1>\n<ul>\n", escape(&header.title));
    for (name, value) in &header.lines {
        let _ = writeln!(out, "<li>{}: {}</li>", escape(name), escape(value));
    }
    let _ = writeln!(
        out,
        "</ul>\n<p>To reproduce:</p>\n<pre>{}</pre>",
        escape(&header.reproduce)
    );
    for chart in &document.charts {
        let _ = writeln!(
            out,
            "<figure>\n{}\n<figcaption>{}</figcaption></figure>",
            chart.svg.trim(),
            escape(&chart.caption)
        );
    }
    for (heading, grids) in document.sections() {
        section(&mut out, heading, grids);
    }
    out.push_str("<h2>Notes</h2>\n<ul>\n");
    for note in notes(results, true) {
        let _ = writeln!(out, "<li>{}</li>", escape(&note));
    }
    out.push_str("</ul>\n<pre id=\"self-check\"></pre>\n</body></html>\n");
    out
}

pub fn section(out: &mut String, heading: &str, grids: &[Grid]) {
    let _ = writeln!(out, "<h2>{}</h2>", escape(heading));
    tables(out, grids);
}

/// Each grid as a table under its title.
pub fn tables(out: &mut String, grids: &[Grid]) {
    for grid in grids {
        let _ = writeln!(out, "<h3>{}</h3>\n<table>\n<tr>", escape(&grid.title));
        for h in &grid.header {
            let _ = write!(out, "<th>{}</th>", escape(h));
        }
        out.push_str("</tr>\n");
        for row in &grid.rows {
            out.push_str("<tr>");
            for e in row {
                let text = escape(&e.text);
                if e.strong {
                    let _ = write!(out, "<td><strong>{text}</strong></td>");
                } else {
                    let _ = write!(out, "<td>{text}</td>");
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
