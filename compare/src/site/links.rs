//! The site's links checked: every `href` and `src` of every page outside
//! the book (which mdbook and the book's own test check) leads to a file
//! of the site, and every `#anchor` to an `id` on its page.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use regex::Regex;

/// The broken links, as "page: link". Each page is read once and only its
/// links and ids kept: a history of 1,000 runs makes 600 MB of reports.
pub fn broken(site: &Path) -> Result<Vec<String>> {
    let link = Regex::new(r#"(?:href|src)="([^"]*)""#)?;
    let id = Regex::new(r#"id="([^"]*)""#)?;
    let mut links: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    let mut ids: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for page in pages(site)? {
        let text =
            fs::read_to_string(&page).with_context(|| format!("reading {}", page.display()))?;
        let found: Vec<String> = link
            .captures_iter(&text)
            .map(|c| c[1].to_string())
            .filter(|t| {
                !["http:", "https:", "mailto:"]
                    .iter()
                    .any(|s| t.starts_with(s))
            })
            .collect();
        ids.insert(
            page.clone(),
            id.captures_iter(&text).map(|c| c[1].to_string()).collect(),
        );
        links.insert(page, found);
    }
    // Anchors into the book: its pages are not the site's own, and are
    // read when a link names one.
    let mut book: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    for (page, targets) in &links {
        for target in targets {
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let file = match file {
                "" => page.clone(),
                file => page.parent().unwrap_or(site).join(file),
            };
            let ok = match (file.is_file(), anchor) {
                (false, _) => false,
                (true, "") => true,
                (true, anchor) => {
                    let known = match ids.get(&file) {
                        Some(known) => known,
                        None => book.entry(file.clone()).or_insert_with(|| {
                            fs::read_to_string(&file)
                                .map(|t| id.captures_iter(&t).map(|c| c[1].to_string()).collect())
                                .unwrap_or_default()
                        }),
                    };
                    known.contains(anchor)
                }
            };
            if !ok {
                let page = page.strip_prefix(site).unwrap_or(page);
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    Ok(broken)
}

/// The site's pages, the book's left out.
fn pages(site: &Path) -> Result<Vec<PathBuf>> {
    let mut pages = Vec::new();
    let mut stack = vec![site.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() && path != site.join("book") {
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
        let site = dir.path();
        fs::create_dir_all(site.join("runs")).unwrap();
        fs::create_dir_all(site.join("book")).unwrap();
        fs::write(
            site.join("index.html"),
            r##"<a href="runs/a.html#here">a</a> <a href="runs/a.html#gone">b</a>
<a href="runs/none.html">c</a> <a href="#top">d</a> <a href="https://example.org/">e</a>
<a href="book/index.html">f</a> <p id="top"></p>"##,
        )
        .unwrap();
        fs::write(
            site.join("runs/a.html"),
            r#"<p id="here"></p><a href="../index.html">i</a>"#,
        )
        .unwrap();
        // The book's own links are the book's to check.
        fs::write(
            site.join("book/index.html"),
            r#"<a href="nowhere.html">x</a>"#,
        )
        .unwrap();
        assert_eq!(
            broken(site).unwrap(),
            ["index.html: runs/a.html#gone", "index.html: runs/none.html"]
        );
    }
}
