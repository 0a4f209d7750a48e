//! A page of the site: the report's style, a content security policy that
//! forbids fetching anything, the same links at the top of every page
//! (the index, the chooser of comparisons, the book), and a small script
//! that says once loaded what the page holds and whether anything failed,
//! in `#self-check`, for the browser test.

use std::fmt::Write;

use report::html::{escape, head};

/// Counts what the page holds when loaded, and every error and policy
/// violation from the start.
const SELF_CHECK: &str = "let errors=0;\
addEventListener('error',()=>errors++,true);\
addEventListener('securitypolicyviolation',()=>errors++);\
addEventListener('load',()=>{\
const charts=[...document.querySelectorAll('figure svg')];\
const drawn=charts.filter(s=>s.getBBox().width>0&&s.querySelector('rect,path,polyline,circle')).length;\
document.getElementById('self-check').textContent=\
`tables=${document.querySelectorAll('table').length} charts=${charts.length} drawn=${drawn} \
fetched=${performance.getEntriesByType('resource').length} errors=${errors}`;});";

/// More style for the site's own marks: verdicts, steps, the navigation.
const SITE_STYLE: &str = "nav a{margin-right:1.2em}td.text{text-align:left;white-space:normal;word-break:break-word}.regressed{color:#b00020;font-weight:bold}.improved{color:#1b7a2f}.unconfirmed{color:#8a6d00}\
.down{color:#b00020}.up{color:#1b7a2f}small{color:#555}details{margin:.5em 0 1em}";

/// A page being written; [`Page::end`] closes it.
pub struct Page {
    html: String,
    /// The way from this page back to the site's top ("", "../").
    pub root: &'static str,
}

impl Page {
    /// A page titled `title`, `root` away from the site's top; `book`:
    /// whether the site holds the book.
    pub fn new(title: &str, root: &'static str, book: bool) -> Self {
        Self::with_script(title, root, book, "")
    }

    /// [`Page::new`] with a script of its own.
    pub fn with_script(title: &str, root: &'static str, book: bool, script: &str) -> Self {
        let mut html = head(title, SITE_STYLE, &format!("{SELF_CHECK}{script}"));
        html.push_str(&nav(root, book));
        let _ = writeln!(html, "<h1>{}</h1>", escape(title));
        Self { html, root }
    }

    pub fn push(&mut self, text: &str) {
        self.html.push_str(text);
    }

    /// A link to `path` (from the site's top) showing `text`.
    pub fn link(&self, path: &str, text: &str) -> String {
        format!("<a href=\"{}{path}\">{}</a>", self.root, escape(text))
    }

    pub fn end(mut self) -> String {
        self.html
            .push_str("<pre id=\"self-check\"></pre>\n</body></html>\n");
        self.html
    }
}

/// The links at the top of every page, `root` away from the site's top.
pub fn nav(root: &str, book: bool) -> String {
    let book = match book {
        true => format!("<a href=\"{root}book/index.html\">The book</a>"),
        false => "<small>(built without the book)</small>".into(),
    };
    format!(
        "<nav style=\"border-bottom:1px solid #ccc;padding:.4em 0;margin-bottom:1em\">\
         <a href=\"{root}index.html\">Index</a> \
         <a href=\"{root}compare.html\">Compare two runs</a> {book}</nav>\n"
    )
}

/// A name as a file name or an anchor: letters, digits, dots and dashes.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' => out.push(c),
            _ if !out.ends_with('-') => out.push('-'),
            _ => {}
        }
    }
    out.trim_matches('-').to_string()
}

/// A run's start as a reader wants it: "2026-12-01 14:46:09 UTC".
pub fn when(started: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(started) {
        Ok(t) => t
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%d %H:%M:%S UTC")
            .to_string(),
        Err(_) => started.to_string(),
    }
}
