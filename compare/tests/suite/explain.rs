//! `compare explain` on causes known beforehand: work added in a function
//! of its own on one side (the `costly` faults), and a system call added
//! the same way (the `syscall` fault), each named first and on its side;
//! and a cell explained against itself, where nothing is named. The check
//! of the run links the explanation of the cell it flags.

use std::path::Path;

use compare::explain::Explained;
use compare::explain::moved::Kind;

use crate::common::{assert_ok, compare_with, out_dir};

/// The fault on the release's binary that the run and the check see.
const COSTLY: &str = "pingpong-mio-1.2.4/pingpong-mio:costly=3000";

/// mio and a release of it made costly, one connection, short rounds:
/// what explain runs again, and what check flags.
fn run(out: &Path) {
    let mut args = vec!["run", "--runtimes", "mio,mio@1.2.4", "--connections", "1"];
    args.extend(["--threads", "1", "--seconds", "0.1", "--warmup", "0"]);
    args.extend(["--repeat", "6", "--no-cost", "--quiet", "--history", "none"]);
    args.extend(["--out", out.to_str().unwrap()]);
    assert_ok(&compare_with(&args, &[("PINGPONG_FAULT", COSTLY)]), &args);
}

/// The explanation of `candidate` against mio, `side` counted, with
/// `fault` on the release's binary, in explain's own folder (`to` none)
/// or `to`.
fn explain(
    out: &Path,
    candidate: &str,
    side: Option<&str>,
    fault: Option<&str>,
    to: Option<&Path>,
) -> Explained {
    let default = out
        .join("explain")
        .join(format!("mio-vs-{}", candidate.replace(['@', '.'], "-")));
    let to = to.unwrap_or(&default);
    let mut args = vec!["explain", out.to_str().unwrap(), "--baseline", "mio"];
    args.extend(["--candidate", candidate, "--repeat", "2", "--blocks", "10"]);
    if to != default {
        args.extend(["--out", to.to_str().unwrap()]);
    }
    if let Some(side) = side {
        args.extend(["--side", side]);
    }
    let spec = fault.map(|f| format!("pingpong-mio-1.2.4/pingpong-mio:{f}"));
    let env: Vec<(&str, &str)> = spec
        .iter()
        .map(|s| ("PINGPONG_FAULT", s.as_str()))
        .collect();
    let output = compare_with(&args, &env);
    assert_ok(&output, &args);
    let folders: Vec<_> = std::fs::read_dir(to)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let [folder] = &folders[..] else {
        panic!("one cell, one folder: {folders:?}");
    };
    let page = std::fs::read_to_string(folder.join("README.md")).unwrap();
    assert!(page.contains("| function | crate |"), "{page}");
    Explained::load(folder).unwrap()
}

#[test]
#[ignore = "needs valgrind: scripts/test.sh installs it, as root, and runs this"]
fn an_injected_cost_is_named_first_on_its_side_and_an_a_a_pair_names_nothing() {
    let out = out_dir("explain");
    run(&out);
    for (fault, side, function, kind) in [
        (
            "costly=3000",
            "server",
            "pingpong::fault::injected_work",
            Kind::Instructions,
        ),
        (
            "client-costly=3000",
            "client",
            "pingpong::fault::injected_work",
            Kind::Instructions,
        ),
        (
            "syscall",
            "server",
            "pingpong::fault::injected_syscall",
            Kind::Syscalls,
        ),
    ] {
        // The costly server's in explain's own folder, where check finds it.
        let to = out.join(format!("explained-{fault}"));
        let to = (fault != "costly=3000").then_some(to.as_path());
        let explained = explain(&out, "mio@1.2.4", Some(side), Some(fault), to);
        let told = explained.told();
        let Some((named_side, first)) = told.first() else {
            panic!("{fault}: nothing named; {explained:?}");
        };
        assert_eq!(
            (*named_side, first.name.as_str(), first.kind),
            (side, function, kind)
        );
        assert!(first.own_moved() > 0.0, "{fault}: {first:?}");
    }
    // The pull request's comment links the flagged cell's explanation.
    let mut args = vec!["check", out.to_str().unwrap(), "--baseline", "mio"];
    args.extend(["--candidate", "mio@1.2.4", "--format", "markdown"]);
    let output = compare_with(&args, &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let link = "](".to_string() + out.join("explain/mio-vs-mio-1-2-4/").to_str().unwrap();
    let line = stdout
        .lines()
        .find(|l| l.contains(&link))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.starts_with("- [1 thread, 1 connection, 16384 B]")
            && line.contains("README.md): pingpong::fault::injected_work (server, +"),
        "{line}"
    );
    // The same build against itself, both sides: every move is variation.
    let same = explain(&out, "mio", None, None, Some(&out.join("a-a")));
    assert_eq!(same.sides.len(), 2);
    assert!(same.told().is_empty(), "{:?}", same.told());
    assert!(
        same.sides
            .iter()
            .all(|s| s.absent.is_none() && !s.functions.is_empty())
    );
}
