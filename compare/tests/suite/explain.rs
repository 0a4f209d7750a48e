//! `compare explain` on causes known beforehand: work added in a function
//! of its own on one side (the `costly` faults), and a system call added
//! the same way (the `syscall` fault), each named first and on its side;
//! and a cell explained against itself, where nothing is named.

use std::path::Path;

use compare::explain::Explained;
use compare::explain::moved::Kind;

use crate::common::{assert_ok, compare_with, out_dir};

/// mio and a release of it, one connection, one short round: what explain
/// runs again.
fn run(out: &Path) {
    let mut args = vec!["run", "--runtimes", "mio,mio@1.2.4", "--connections", "1"];
    args.extend(["--threads", "1", "--seconds", "0.1", "--warmup", "0"]);
    args.extend(["--repeat", "1", "--no-cost", "--quiet", "--history", "none"]);
    args.extend(["--out", out.to_str().unwrap()]);
    assert_ok(&compare_with(&args, &[]), &args);
}

/// The explanation of `candidate` against mio, `side` counted, with
/// `fault` on the release's binary.
fn explain(out: &Path, candidate: &str, side: Option<&str>, fault: Option<&str>) -> Explained {
    let to = out.join(format!("explained-{candidate}-{}", fault.unwrap_or("none")));
    let mut args = vec!["explain", out.to_str().unwrap(), "--baseline", "mio"];
    args.extend(["--candidate", candidate, "--repeat", "2", "--blocks", "10"]);
    args.extend(["--out", to.to_str().unwrap()]);
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
    let folders: Vec<_> = std::fs::read_dir(&to)
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
        let explained = explain(&out, "mio@1.2.4", Some(side), Some(fault));
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
    // The same build against itself, both sides: every move is variation.
    let same = explain(&out, "mio", None, None);
    assert_eq!(same.sides.len(), 2);
    assert!(same.told().is_empty(), "{:?}", same.told());
    assert!(
        same.sides
            .iter()
            .all(|s| s.absent.is_none() && !s.functions.is_empty())
    );
}
