//! The site's links checked: every `href` and `src` of every page outside
//! the book (which mdbook and the book's own test check) leads to a file
//! of the site, and every `#anchor` to an `id` on its page.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use regex::Regex;

/// The broken links, as "page: link".
pub fn broken(site: &Path) -> Result<Vec<String>> {
    let pages = pages(site)?;
    let texts: BTreeMap<&PathBuf, String> = pages
        .iter()
        .map(|p| {
            Ok((
                p,
                fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
            ))
        })
        .collect::<Result<_>>()?;
    let link = Regex::new(r#"(?:href|src)="([^"]*)""#)?;
    let mut broken = Vec::new();
    for (page, text) in &texts {
        for found in link.captures_iter(text) {
            let target = &found[1];
            if ["http:", "https:", "mailto:"]
                .iter()
                .any(|s| target.starts_with(s))
            {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let file = match file {
                "" => (*page).clone(),
                file => page.parent().unwrap_or(site).join(file),
            };
            let ok = match (file.is_file(), anchor) {
                (false, _) => false,
                (true, "") => true,
                (true, anchor) => {
                    let id = format!("id=\"{anchor}\"");
                    match texts.get(&file) {
                        Some(text) => text.contains(&id),
                        None => fs::read_to_string(&file).is_ok_and(|t| t.contains(&id)),
                    }
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
