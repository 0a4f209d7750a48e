//! The layout the README promises: no import circles in any crate of the
//! workspace, the layers inside compare's crates in their ranks, and every
//! runtime crate's binaries named in compare's list of adapters (so that a
//! new runtime cannot be forgotten by the suite), committed reports light
//! enough for every clone to carry, each naming the machine its results
//! ran on, and the README and the book in step with the code: their links
//! resolve and every `compare` command they show parses.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use regex::Regex;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A module, as the path from its crate's root (`["client", "session"]`).
type Module = Vec<String>;

/// Every module of the crate whose sources are in `src`, with its file.
/// Binaries under `src/bin` are crates of their own, each one file.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut found = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().unwrap() != "bin" {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            // Beside a lib.rs, main.rs is a binary crate that uses the library by name.
            if path.file_name().unwrap() == "main.rs" && dir.join("lib.rs").is_file() {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Module = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            found.insert(module, path);
        }
    }
    found
}

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// Every path a file names, as its segments, read from its tokens (Rust's
/// own lexer, so comments and strings name nothing): each leaf of its `use`
/// trees and every `a::b::c` of its code, macro calls' included. Items
/// compiled for tests only (`#[cfg(test)]`) are left out: a unit test's
/// `super::*` is its module itself, no import of another.
fn paths(stream: TokenStream, found: &mut Vec<Vec<String>>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Punct(p) if p.as_char() == '#' && is_cfg_test(tokens.get(i + 1)) => {
                // The attribute, then its item up to its body or its `;`.
                i += 2;
                while i < tokens.len() && !ends_item(&tokens[i]) {
                    i += 1;
                }
            }
            TokenTree::Ident(word) if word == "use" => {
                let end = (i..tokens.len())
                    .find(|&j| matches!(&tokens[j], TokenTree::Punct(p) if p.as_char() == ';'))
                    .unwrap_or(tokens.len());
                // `use ::name`: a crate of the dependencies, never a module.
                if !matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':') {
                    use_tree(&[], &tokens[i + 1..end], found);
                }
                i = end;
            }
            TokenTree::Ident(_) => {
                let leading = i >= 2 && is_colons(&tokens[i - 2..i]);
                let mut path = vec![tokens[i].to_string()];
                while i + 3 <= tokens.len() && is_colons(&tokens[i + 1..i + 3]) {
                    match tokens.get(i + 3) {
                        Some(TokenTree::Ident(next)) => path.push(next.to_string()),
                        _ => break,
                    }
                    i += 3;
                }
                if path.len() > 1 && !leading {
                    found.push(path);
                }
            }
            TokenTree::Group(group) => paths(group.stream(), found),
            _ => {}
        }
        i += 1;
    }
}

/// `::` as two tokens.
fn is_colons(tokens: &[TokenTree]) -> bool {
    tokens.len() == 2
        && tokens
            .iter()
            .all(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ':'))
}

fn is_cfg_test(token: Option<&TokenTree>) -> bool {
    matches!(token, Some(TokenTree::Group(g))
        if g.delimiter() == Delimiter::Bracket
            && g.stream().to_string().replace(' ', "") == "cfg(test)")
}

fn ends_item(token: &TokenTree) -> bool {
    match token {
        TokenTree::Group(g) => g.delimiter() == Delimiter::Brace,
        TokenTree::Punct(p) => p.as_char() == ';',
        _ => false,
    }
}

/// The leaves of a `use` tree (`a::{b, c::{self, D}}`), each as its path.
fn use_tree(prefix: &[String], tokens: &[TokenTree], found: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    for token in tokens {
        match token {
            TokenTree::Ident(word) if word == "as" => break,
            TokenTree::Ident(word) if word == "self" && !path.is_empty() => {}
            TokenTree::Ident(word) => path.push(word.to_string()),
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                for branch in
                    inner.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                {
                    use_tree(&path, branch, found);
                }
                return;
            }
            _ => {}
        }
    }
    if !path.is_empty() {
        found.push(path);
    }
}

/// The modules `module` refers to: by `crate::`, `super::`, `self::` or a
/// child's name, in `use` items and in paths in the code.
fn references(module: &Module, source: &str, all: &BTreeMap<Module, PathBuf>) -> BTreeSet<Module> {
    let tokens: TokenStream = source.parse().unwrap_or_else(|e| panic!("{module:?}: {e}"));
    let mut named = Vec::new();
    paths(tokens, &mut named);
    let mut found = BTreeSet::new();
    for path in named {
        let mut segments: Vec<&str> = path.iter().map(String::as_str).collect();
        let mut at: Module = match segments[0] {
            "crate" => Vec::new(),
            "super" => {
                // The parent of a file module is its folder's module; of a
                // folder module (mod.rs), the folder above.
                let mut parent = module.clone();
                parent.pop();
                parent
            }
            "self" => module.clone(),
            child => {
                let mut candidate = module.clone();
                candidate.push(child.to_string());
                if !all.contains_key(&candidate) {
                    continue;
                }
                segments.insert(0, "self");
                module.clone()
            }
        };
        segments.remove(0);
        while segments.first() == Some(&"super") {
            at.pop();
            segments.remove(0);
        }
        // The longest module the path names; items after it are not modules.
        let mut target = at.clone();
        for segment in segments {
            let mut next = target.clone();
            next.push(segment.to_string());
            if !all.contains_key(&next) {
                break;
            }
            target = next;
        }
        if &target != module {
            found.insert(target);
        }
    }
    found
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        found: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.graph[v] {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

/// The import graph of the crate in `src`: every module and what it uses.
fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let all = modules(src);
    all.iter()
        .map(|(module, file)| {
            let source = fs::read_to_string(file).unwrap();
            let used = references(module, &source, &all);
            (module.clone(), used)
        })
        .collect()
}

/// Every crate's `src` folder in the workspace.
fn crates() -> Vec<PathBuf> {
    let root = workspace();
    let mut dirs = vec![
        root.join("pingpong/src"),
        root.join("compare/src"),
        root.join("compare/model/src"),
        root.join("compare/measure/src"),
        root.join("compare/history/src"),
        root.join("compare/report/src"),
        root.join("generator/src"),
    ];
    let mut runtimes: Vec<PathBuf> = fs::read_dir(root.join("runtimes"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .collect();
    runtimes.sort();
    dirs.extend(runtimes);
    dirs
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut report = Vec::new();
    for src in crates() {
        let graph = graph(&src);
        let edges: usize = graph.values().map(BTreeSet::len).sum();
        eprintln!(
            "{}: {} modules, {edges} imports between them",
            src.display(),
            graph.len()
        );
        for circle in circles(&graph) {
            let names: Vec<String> = circle
                .iter()
                .map(|m| match m.is_empty() {
                    true => "(root)".to_string(),
                    false => m.join("::"),
                })
                .collect();
            report.push(format!("{}: {}", src.display(), names.join(" <-> ")));
        }
    }
    assert!(
        report.is_empty(),
        "modules that import each other, directly or around a circle (make the \
         dependency point one way; inside a crate, use an item by its module, not \
         through a re-export):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_checker_finds_circles_through_use_trees_and_re_exports() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    fs::create_dir_all(src.join("a")).unwrap();
    fs::write(src.join("lib.rs"), "mod a;\nmod b;\npub use a::Thing;\n").unwrap();
    fs::write(src.join("a/mod.rs"), "mod inner;\npub use inner::Thing;\n").unwrap();
    fs::write(
        src.join("a/inner.rs"),
        "use crate::{b::{self, Other}, c};\npub struct Thing;\n",
    )
    .unwrap();
    fs::write(
        src.join("b.rs"),
        "// crate::a is named only here\nfn f() { crate::Thing; }\n",
    )
    .unwrap();
    let graph = graph(src);
    // `b` and `b::Other` are module b; `c`, an item of the root.
    assert_eq!(
        graph[&vec!["a".to_string(), "inner".to_string()]],
        BTreeSet::from([vec![], vec!["b".to_string()]])
    );
    let found = circles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].len(),
        4,
        "root -> a -> a::inner -> b -> root: {found:?}"
    );
}

/// The binaries a runtime crate builds: `[[bin]]` entries, `src/main.rs`
/// (named after the package) and `src/bin/*.rs`.
fn binaries_of(krate: &Path) -> (String, BTreeSet<String>) {
    let manifest: toml::Table = fs::read_to_string(krate.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let package = manifest["package"]["name"].as_str().unwrap().to_string();
    let mut binaries: BTreeSet<String> = manifest
        .get("bin")
        .and_then(|b| b.as_array())
        .into_iter()
        .flatten()
        .map(|b| b["name"].as_str().unwrap().to_string())
        .collect();
    if krate.join("src/main.rs").is_file() {
        binaries.insert(package.clone());
    }
    if let Ok(dir) = fs::read_dir(krate.join("src/bin")) {
        for entry in dir {
            let path = entry.unwrap().path();
            binaries.insert(path.file_stem().unwrap().to_string_lossy().into_owned());
        }
    }
    (package, binaries)
}

#[test]
fn every_runtime_binary_is_an_adapter_and_every_adapter_a_binary() {
    let mut built = BTreeSet::new();
    for entry in fs::read_dir(workspace().join("runtimes")).unwrap() {
        let (package, binaries) = binaries_of(&entry.unwrap().path());
        for binary in binaries {
            let adapter = model::adapters::ADAPTERS
                .iter()
                .find(|a| a.binary() == binary);
            let adapter = adapter.unwrap_or_else(|| {
                panic!(
                    "{package} builds {binary}, which compare/model/src/adapters.rs does not list: \
                     add it to ADAPTERS (README: Adding a runtime)"
                )
            });
            assert_eq!(adapter.package, package, "{binary}");
            built.insert(binary);
        }
    }
    for adapter in model::adapters::ADAPTERS {
        assert!(
            built.contains(&adapter.binary()),
            "{} is listed, but no runtime crate builds {}",
            adapter.name,
            adapter.binary()
        );
    }
}

/// The features of every third-party crate as cargo resolves them for
/// `selection` (`-p NAME`, `--workspace`) over the dependency kinds
/// `edges`: one line a crate and set of features (a crate built for the
/// host and for the target may have two).
fn features(selection: &[&str], edges: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .current_dir(workspace())
        .arg("tree")
        .args(selection)
        .args([
            "-e",
            edges,
            "--prefix",
            "none",
            "--no-dedupe",
            "-f",
            "{p}|{f}",
        ])
        .output()
        .expect("running cargo tree");
    assert!(
        output.status.success(),
        "cargo tree {selection:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let root = fs::canonicalize(workspace()).unwrap();
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        // The workspace's own crates are built once whatever their selection.
        .filter(|line| !line.contains(&format!("({}", root.display())))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_build_of_the_workspace_shares_each_crates_features() {
    // What a selection builds with features the whole workspace's tests do
    // not use is a second build of that crate: compare alone (`cargo run -p
    // compare`), the runtime binaries it builds, `cargo build --workspace`
    // and the tests must all agree, or a fresh clone builds crates twice.
    let all = features(&["--workspace"], "normal,build,dev");
    let mut selections: Vec<Vec<String>> = vec![vec!["--workspace".into()]];
    let mut packages = ["pingpong", "compare", "pingpong-generator"]
        .map(String::from)
        .to_vec();
    for entry in fs::read_dir(workspace().join("runtimes")).unwrap() {
        packages.push(binaries_of(&entry.unwrap().path()).0);
    }
    selections.extend(packages.into_iter().map(|p| vec!["-p".into(), p]));
    let mut differing = Vec::new();
    for selection in &selections {
        let selection: Vec<&str> = selection.iter().map(String::as_str).collect();
        for edges in ["normal,build", "normal,build,dev"] {
            for line in features(&selection, edges).difference(&all) {
                differing.push(format!("{} ({edges}): {line}", selection.join(" ")));
            }
        }
    }
    assert!(
        differing.is_empty(),
        "crates built with other features than the workspace's tests build them with; \
         run `cargo hakari generate` (cargo install cargo-hakari):\n{}",
        differing.join("\n")
    );
}

/// Every file below `dirs`, at any depth, that `keep` keeps, sorted.
fn files_under(dirs: &[PathBuf], keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = dirs.to_vec();
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if keep(&path) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Every markdown file a reader is sent to: the README, the book and the
/// reports' own pages.
fn documents() -> Vec<PathBuf> {
    let root = workspace();
    let mut found = vec![root.join("README.md")];
    found.extend(files_under(
        &[root.join("docs/src"), root.join("reports")],
        |path| {
            path.extension().is_some_and(|e| e == "md")
                // A rendered report links its charts, which `compare report`
                // writes beside it and a committed report keeps only where
                // a page shows them.
                && path.file_name().is_some_and(|n| n != "report.md")
        },
    ));
    found.sort();
    found
}

#[test]
fn every_link_of_the_readme_the_book_and_the_reports_resolves() {
    // mdBook checks the chapters of SUMMARY.md; this checks every relative
    // link and image of every page, inside the book or out of it.
    let link = Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let code = Regex::new(r"(?s)```.*?```|`[^`\n]*`").unwrap();
    let mut broken = Vec::new();
    let mut linked = Vec::new();
    let documents = documents();
    for document in &documents {
        let text = fs::read_to_string(document).unwrap();
        let text = code.replace_all(&text, "");
        for target in link.captures_iter(&text).map(|c| c[1].to_string()) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let path = target.split('#').next().unwrap();
            if path.is_empty() {
                continue;
            }
            let resolved = document.parent().unwrap().join(path);
            let shown = document.strip_prefix(workspace()).unwrap_or(document);
            if resolved.exists() {
                linked.push((resolved, format!("{}: {target}", shown.display())));
            } else {
                broken.push(format!("{}: {target}", shown.display()));
            }
        }
    }
    // A file git ignores is here but not in a clone.
    let ignored = ignored_by_git(linked.iter().map(|(path, _)| path.as_path()));
    for (path, shown) in &linked {
        if ignored.contains(path) {
            broken.push(format!("{shown} (ignored by git, so not in a clone)"));
        }
    }
    assert!(documents.len() > 20, "{} documents", documents.len());
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_link_and_picture_of_the_rendered_book_resolves() {
    // Rendered beside docs/src, where a link out of the book climbs to the
    // repository as it does from docs/book; the site's copy of the book is
    // checked by the site's own build (`compare site`).
    let docs = workspace().join("docs");
    let rendered = tempfile::Builder::new()
        .prefix(".rendered-")
        .tempdir_in(&docs)
        .unwrap();
    let output = Command::new("mdbook")
        .arg("build")
        .arg(&docs)
        .arg("--dest-dir")
        .arg(rendered.path())
        .output()
        .expect("mdbook, which scripts/test.sh installs");
    assert!(output.status.success(), "{output:?}");
    let broken = compare::site::links::broken_in_repository(rendered.path(), &workspace()).unwrap();
    assert!(
        rendered.path().join("print.html").is_file(),
        "mdbook rendered no print.html"
    );
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
}

/// Which of these paths git ignores, asked in one `git check-ignore`.
fn ignored_by_git<'a>(paths: impl Iterator<Item = &'a Path>) -> Vec<PathBuf> {
    let mut child = Command::new("git")
        .args(["check-ignore", "--stdin", "-z"])
        .current_dir(workspace())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git runs");
    let mut input = Vec::new();
    for path in paths {
        input.extend_from_slice(path.as_os_str().as_encoded_bytes());
        input.push(0);
    }
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let output = child.wait_with_output().unwrap();
    // 0: some are ignored, 1: none is.
    assert!(
        output.status.code().is_some_and(|c| c <= 1),
        "git check-ignore failed"
    );
    output
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .collect()
}

/// A layer: its name, and its modules by their names.
type Layer = (&'static str, &'static [&'static str]);

/// The layers inside compare's crates, bottom first: a module may use its
/// own layer's and those below, never one above (the circle check orders
/// each layer inside). Between the crates Cargo keeps the order: model
/// below measure, history and report, and those below compare.
const LAYERS: &[(&str, &[Layer])] = &[
    (
        "compare/model/src",
        &[
            (
                "the vocabulary",
                &[
                    "defaults",
                    "named",
                    "shell",
                    "stats",
                    "adapters",
                    "matrix",
                    "preset",
                    "placement",
                    "external",
                    "service",
                    "revision",
                    "implementation",
                    "program",
                ],
            ),
            ("the results, as data", &["results"]),
            (
                "the verdicts, and the tests' fixtures",
                &["verdicts", "fixtures"],
            ),
        ],
    ),
    (
        "compare/measure/src",
        &[
            (
                "the instruments and where servers run",
                &[
                    "accept_queue",
                    "call_sites",
                    "callgrind",
                    "counters",
                    "perf",
                    "prices",
                    "tcp_stats",
                    "usage",
                    "remote",
                ],
            ),
            (
                "the programs and the machine",
                &[
                    "cargo",
                    "versions",
                    "binaries",
                    "releases",
                    "upkeep",
                    "environment",
                    "groups",
                ],
            ),
            (
                "one repetition",
                &[
                    "child",
                    "repetition",
                    "client_hosts",
                    "place",
                    "pair",
                    "service",
                ],
            ),
        ],
    ),
    (
        "compare/src",
        &[
            ("the plan of a run", &["plan", "progress"]),
            ("the readers of results", &["explain", "check"]),
            ("the commands", &["run", "bisect", "list", "site"]),
            ("the command line", &["cli", "options"]),
        ],
    ),
];

#[test]
fn no_layer_of_compares_crates_uses_one_above_it() {
    let mut report = Vec::new();
    for (src, layers) in LAYERS {
        let rank = |module: &Module| -> Option<usize> {
            let top = module.first()?;
            let found = layers
                .iter()
                .position(|(_, names)| names.contains(&top.as_str()));
            Some(found.unwrap_or_else(|| {
                panic!("{src}'s module {top} is in no layer: add it to LAYERS in tests/layout.rs")
            }))
        };
        for (module, used) in graph(&workspace().join(src)) {
            // The crate's root declares every module; it is no layer.
            let Some(own) = rank(&module) else { continue };
            for other in used {
                if let Some(theirs) = rank(&other).filter(|&theirs| theirs > own) {
                    report.push(format!(
                        "{src}: {} ({}) uses {} ({})",
                        module.join("::"),
                        layers[own].0,
                        other.join("::"),
                        layers[theirs].0
                    ));
                }
            }
        }
    }
    assert!(
        report.is_empty(),
        "a layer uses one above it (move the item down, or the user up):\n{}",
        report.join("\n")
    );
}

#[test]
fn every_report_has_its_story_and_a_row_in_the_index() {
    let reports = workspace().join("reports");
    let index = fs::read_to_string(reports.join("README.md")).unwrap();
    let mut missing = Vec::new();
    for entry in fs::read_dir(&reports).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_dir() {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !path.join("README.md").is_file() {
            missing.push(format!("{name}: no README.md"));
        }
        if !index.contains(&format!("]({name}/)")) {
            missing.push(format!("{name}: no row in reports/README.md"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_machine_a_report_names_is_the_one_its_results_record() {
    // A README's machine paragraph ("Machine: ...") quotes a kernel and a
    // CPU: each kernel must be one its own results ran on, and the CPU
    // they ran on must be the one named. A run made elsewhere is another
    // machine, and a figure compared across two is not the code's alone.
    let kernel = Regex::new(r"\b\d+\.\d+\.\d+-[A-Za-z0-9._-]*[A-Za-z0-9]").unwrap();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for entry in fs::read_dir(workspace().join("reports")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(readme) = fs::read_to_string(dir.join("README.md")) else {
            continue;
        };
        let machine: String = readme
            .split("\n\n")
            .filter(|p| {
                p.trim_start()
                    .trim_start_matches("**")
                    .starts_with("Machine")
            })
            .collect();
        let kernels: BTreeSet<&str> = kernel.find_iter(&machine).map(|m| m.as_str()).collect();
        let cpus: Vec<&str> = ["EPYC", "Xeon"]
            .into_iter()
            .filter(|cpu| machine.contains(cpu))
            .collect();
        if kernels.is_empty() && cpus.is_empty() {
            continue;
        }
        let results = |path: &Path| {
            path.file_name()
                .is_some_and(|n| n == "results.json" || n == "results.json.gz")
        };
        let hosts: Vec<model::results::Host> = files_under(std::slice::from_ref(&dir), results)
            .iter()
            .map(|f| model::results::Results::load(f).unwrap().host)
            .collect();
        // A report that keeps no results (a script's output) names its
        // machine with nothing here to hold it against.
        if hosts.is_empty() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        for k in kernels {
            if !hosts.iter().any(|h| h.kernel.as_deref() == Some(k)) {
                wrong.push(format!(
                    "{name}: kernel {k}, which none of its results ran on"
                ));
            }
        }
        // The CPU its results ran on is named (a paragraph may name another
        // one too, to say what it is not).
        let ran_on: BTreeSet<&str> = (hosts.iter())
            .filter_map(|h| h.cpu_model.as_deref())
            .filter_map(|m| ["EPYC", "Xeon"].into_iter().find(|cpu| m.contains(cpu)))
            .collect();
        for cpu in ran_on {
            if !cpus.is_empty() && !cpus.contains(&cpu) {
                wrong.push(format!(
                    "{name}: its results ran on a {cpu} CPU, which its machine paragraph does not name"
                ));
            }
        }
        checked += 1;
    }
    assert!(checked > 0, "no report names its machine");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_committed_reports_stay_light() {
    // Every clone carries them: no file over 5 MB (a bigger results file is
    // kept in parts) and reports/ under 30 MB. Only what git tracks counts:
    // `compare report` renders the rest beside them.
    let root = workspace();
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z", "reports"])
        .current_dir(&root)
        .output()
        .expect("git runs");
    assert!(listed.status.success(), "git ls-files: {listed:?}");
    let mut total = 0;
    let mut heavy = Vec::new();
    for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).into_owned();
        // A file deleted in the work tree but not yet in the index weighs nothing.
        let Ok(meta) = fs::metadata(root.join(&name)) else {
            continue;
        };
        total += meta.len();
        if meta.len() > 5_000_000 {
            heavy.push(format!("{name}: {} bytes", meta.len()));
        }
    }
    assert!(
        total > 1_000_000,
        "reports/ holds {total} bytes: none found?"
    );
    assert!(heavy.is_empty(), "files over 5 MB:\n{}", heavy.join("\n"));
    assert!(
        total < 30_000_000,
        "reports/ weighs {total} bytes, over 30 MB: slim a results file (reports/README.md says how)"
    );
}

/// Every `compare ...` command of the README's and the book's code blocks
/// (or `cargo run --release -p compare -- ...`), its lines joined where they
/// end in `\`, cut at the shell's `#`, `&&`, `|`, `;` and `>`: each as a
/// shell splits it, beside its file and first line.
fn documented_commands() -> Vec<(String, Vec<String>)> {
    let root = workspace();
    let mut commands = Vec::new();
    for path in documents()
        .into_iter()
        .filter(|p| !p.starts_with(root.join("reports")))
    {
        let text = fs::read_to_string(&path).unwrap();
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        let mut fenced = false;
        let (mut joined, mut first) = (String::new(), 0);
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if !fenced {
                continue;
            }
            if joined.is_empty() {
                first = n + 1;
            }
            joined.push_str(line.trim_end().trim_end_matches('\\'));
            joined.push(' ');
            if line.trim_end().ends_with('\\') {
                continue;
            }
            let command = std::mem::take(&mut joined);
            let command = command.trim().trim_start_matches("$ ");
            let command = command
                .strip_prefix("cargo run --release -p compare -- ")
                .map(|rest| format!("compare {rest}"))
                .unwrap_or_else(|| command.to_string());
            if !command.starts_with("compare ") {
                continue;
            }
            let words =
                shlex::split(&command).unwrap_or_else(|| panic!("{name}:{first}: {command}"));
            let words: Vec<String> = words
                .into_iter()
                .take_while(|w| {
                    !w.starts_with('#') && !["&&", "|", ";", ">", "2>&1"].contains(&w.as_str())
                })
                .collect();
            commands.push((format!("{name}:{first}"), words));
        }
    }
    commands
}

#[test]
fn every_compare_command_of_the_readme_and_the_book_parses() {
    let commands = documented_commands();
    assert!(
        commands.len() > 50,
        "{} commands found: the blocks were not read?",
        commands.len()
    );
    let refused: Vec<String> = commands
        .iter()
        .filter_map(|(at, words)| {
            let error = compare::cli::parse_from(words).err()?;
            let error = error.to_string();
            Some(format!(
                "{at}: {}\n  {}",
                words.join(" "),
                error.lines().next().unwrap_or_default()
            ))
        })
        .collect();
    assert!(
        refused.is_empty(),
        "{} of {} refused:\n{}",
        refused.len(),
        commands.len(),
        refused.join("\n")
    );
}
