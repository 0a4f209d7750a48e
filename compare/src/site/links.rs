//! Links checked in rendered HTML: every `href` and `src` of every page
//! under a folder (the site with its copy of the book, or the book where
//! mdBook rendered it) leads to a file there, and every `#anchor` to an
//! `id` on its page. A link out of the folder leads nowhere, but where the
//! book is rendered in its repository: there it may name any of the
//! repository's files or folders (a report, a source file).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};
use regex::Regex;

/// The broken links of the site, as "page: link".
pub fn broken(site: &Path) -> Result<Vec<String>> {
    check(site, None)
}

/// The broken links of `book`, rendered inside `repository`.
pub fn broken_in_repository(book: &Path, repository: &Path) -> Result<Vec<String>> {
    check(book, Some(repository))
}

/// Each page is read once and only its links and ids kept: a history of
/// 1,000 runs makes 600 MB of reports.
fn check(root: &Path, repository: Option<&Path>) -> Result<Vec<String>> {
    let root = &lexical(&std::path::absolute(root)?);
    let repository = repository.map(std::path::absolute).transpose()?;
    let repository = repository.as_deref().map(lexical);
    let link = Regex::new(r#"(?:href|src)="([^"]*)""#)?;
    let id = Regex::new(r#"id="([^"]*)""#)?;
    // mdBook's 404 page sets `<base href="/">` for a book served at a
    // host's root; read from a folder, its links are the folder's.
    let base = Regex::new(r#"<base [^>]*>"#)?;
    let mut links: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    let mut ids: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for page in pages(root)? {
        let text =
            fs::read_to_string(&page).with_context(|| format!("reading {}", page.display()))?;
        let text = base.replace_all(&text, "");
        let found: Vec<String> = link
            .captures_iter(&text)
            .map(|c| c[1].to_string())
            .filter(|t| is_relative(t))
            .collect();
        ids.insert(
            page.clone(),
            id.captures_iter(&text).map(|c| c[1].to_string()).collect(),
        );
        links.insert(page, found);
    }
    let mut broken = Vec::new();
    for (page, targets) in &links {
        for target in targets {
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let file = match file {
                "" => page.clone(),
                file => lexical(&page.parent().unwrap_or(root).join(file)),
            };
            let ok = if !file.starts_with(root) {
                repository
                    .as_ref()
                    .is_some_and(|r| file.starts_with(r) && file.exists())
            } else {
                file.is_file()
                    && (anchor.is_empty() || ids.get(&file).is_some_and(|ids| ids.contains(anchor)))
            };
            if !ok {
                let page = page.strip_prefix(root).unwrap_or(page);
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    Ok(broken)
}

/// A link to a place on this site rather than on the web.
pub fn is_relative(target: &str) -> bool {
    !["http:", "https:", "mailto:", "data:"]
        .iter()
        .any(|s| target.starts_with(s))
}

/// `path` with its `.` and `..` taken out, as a browser reads a link.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            part => out.push(part),
        }
    }
    out
}

/// The HTML pages under `root`.
fn pages(root: &Path) -> Result<Vec<PathBuf>> {
    let mut pages = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_page_or_anchor_is_broken_and_the_rest_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site");
        fs::create_dir_all(site.join("runs")).unwrap();
        fs::create_dir_all(site.join("book")).unwrap();
        fs::write(
            site.join("index.html"),
            r##"<a href="runs/a.html#here">a</a> <a href="runs/a.html#gone">b</a>
<a href="runs/none.html">c</a> <a href="#top">d</a> <a href="https://example.org/">e</a>
<a href="book/index.html#intro">f</a> <p id="top"></p>"##,
        )
        .unwrap();
        fs::write(
            site.join("runs/a.html"),
            r#"<p id="here"></p><a href="../index.html">i</a>"#,
        )
        .unwrap();
        fs::write(dir.path().join("notes.md"), "outside the site").unwrap();
        fs::write(
            site.join("book/index.html"),
            r#"<h1 id="intro"></h1><a href="nowhere.html">x</a> <a href="../../notes.md">y</a>"#,
        )
        .unwrap();
        assert_eq!(
            broken(&site).unwrap(),
            [
                "book/index.html: nowhere.html",
                "book/index.html: ../../notes.md",
                "index.html: runs/a.html#gone",
                "index.html: runs/none.html"
            ]
        );
        // The book rendered in its repository may lead into it, to a file
        // or a folder that is there.
        fs::write(
            site.join("book/index.html"),
            r#"<a href="../../notes.md">y</a> <a href="../../site/">z</a> <a href="../../gone/">w</a>"#,
        )
        .unwrap();
        assert_eq!(
            broken_in_repository(&site.join("book"), dir.path()).unwrap(),
            ["index.html: ../../gone/"]
        );
    }
}
