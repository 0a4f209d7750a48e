//! The rendered book, copied into the site. Rendered in its repository,
//! the book leads out of itself (to a report's folder, a source file) and
//! shows the reports' charts; the site holds no repository, so a link out
//! becomes its text, titled with the repository path it named, and a
//! picture from outside is copied in, under `repository/`.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use regex::{Captures, Regex};

use super::links::{is_relative, lexical};

/// Copies the rendered `book` into `into`.
pub fn copy(book: &Path, into: &Path) -> Result<()> {
    let book = lexical(&std::path::absolute(book)?);
    let attribute = Regex::new(r#"(href|src)="([^"]*)""#)?;
    let mut stack = vec![book.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let from = entry?.path();
            let inside = from.strip_prefix(&book)?;
            let to = into.join(inside);
            if from.is_dir() {
                stack.push(from);
                continue;
            }
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent)?;
            }
            if from.extension().is_some_and(|e| e == "html") {
                let text = fs::read_to_string(&from)
                    .with_context(|| format!("reading {}", from.display()))?;
                let (text, pictures) = kept_inside(&text, &attribute, &book, inside);
                for (picture, at) in pictures {
                    let at = into.join(at);
                    fs::create_dir_all(at.parent().unwrap_or(into))?;
                    fs::copy(&picture, &at).with_context(|| {
                        format!("copying {} to {}", picture.display(), at.display())
                    })?;
                }
                fs::write(&to, text).with_context(|| format!("writing {}", to.display()))?;
            } else {
                fs::copy(&from, &to)
                    .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
            }
        }
    }
    Ok(())
}

/// The page at `page` (inside `book`) with its links out of the book made
/// text and its pictures from outside pointed at their copies; and the
/// pictures to copy, each with its place in the book.
fn kept_inside(
    text: &str,
    attribute: &Regex,
    book: &Path,
    page: &Path,
) -> (String, Vec<(PathBuf, PathBuf)>) {
    let folder = book.join(page.parent().unwrap_or(Path::new("")));
    let up = "../".repeat(page.components().count() - 1);
    let mut pictures = Vec::new();
    let text = attribute.replace_all(text, |c: &Captures| {
        let (kind, target) = (&c[1], &c[2]);
        let file = target.split('#').next().unwrap_or_default();
        let resolved = lexical(&folder.join(file));
        if file.is_empty() || !is_relative(target) || resolved.starts_with(book) {
            return c[0].to_string();
        }
        let shown = beside(book, &resolved);
        if kind == "src" && resolved.is_file() {
            let copy = Path::new("repository").join(&shown);
            let link = format!("{up}{}", copy.display());
            pictures.push((resolved, copy));
            return format!(r#"src="{link}""#);
        }
        format!(r#"title="{} in the suite's repository""#, shown.display())
    });
    (text.into_owned(), pictures)
}

/// `path` from the folder it shares with `book`: where it is in the
/// repository the book was rendered in.
fn beside(book: &Path, path: &Path) -> PathBuf {
    let mut common = book;
    while !path.starts_with(common) {
        common = common.parent().unwrap_or(Path::new("/"));
    }
    path.strip_prefix(common).unwrap_or(path).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_out_of_the_book_becomes_text_and_a_picture_is_copied_in() {
        let dir = tempfile::tempdir().unwrap();
        let (repository, site) = (dir.path().join("repo"), dir.path().join("site"));
        let book = repository.join("docs/book");
        fs::create_dir_all(book.join("findings")).unwrap();
        fs::create_dir_all(repository.join("reports/a")).unwrap();
        fs::write(repository.join("reports/a/chart.svg"), "<svg/>").unwrap();
        fs::write(book.join("index.html"), r#"<p id="top"></p>"#).unwrap();
        fs::write(
            book.join("findings/x.html"),
            r##"<a href="../index.html#top">in</a> <a href="../../../reports/a/">out</a>
<img src="../../../reports/a/chart.svg"> <a href="https://example.org/">web</a>"##,
        )
        .unwrap();
        copy(&book, &site).unwrap();
        assert_eq!(
            fs::read_to_string(site.join("findings/x.html")).unwrap(),
            r##"<a href="../index.html#top">in</a> <a title="reports/a in the suite's repository">out</a>
<img src="../repository/reports/a/chart.svg"> <a href="https://example.org/">web</a>"##
        );
        assert!(site.join("repository/reports/a/chart.svg").is_file());
        assert_eq!(
            super::super::links::broken(&site).unwrap(),
            Vec::<String>::new()
        );
    }
}
