//! `compare explain` on causes known beforehand: work added in a function
//! of its own on one side (the `costly` faults), and a system call added
//! the same way (the `syscall` fault), each named first and on its side,
//! counted by callgrind and sampled by perf, and a wake-up of an idle
//! thread a block (`wake-every=1`) traced by perf in the open loop; and
//! cells explained against themselves (io_uring's over HTTP/1.1 inside
//! TLS, its wake-ups traced too), where nothing is named;
//! and a check between two runs that explains what it flags, each side
//! with the binary its run kept. The check of the run links the
//! explanation of the cell it flags.

use std::path::Path;

use compare::explain::moved::{Function, Kind};
use compare::explain::{self, Explained, default_out};

use crate::common::{assert_ok, compare_with, folder, load, out_dir};

/// The fault on the release's binary that the run and the check see: so
/// much work (about 200 µs of server CPU a block, four times a block's
/// own) that the check flags it while other tests share the cores. (With
/// a thirtieth of it, the interval of MiB/s spanned -57% to +43% beside
/// them.)
const COSTLY: &str = "pingpong-mio-1.2.4/pingpong-mio:costly=100000";

/// mio and a release of it made costly (and `others`), one connection,
/// short rounds: what explain runs again, and what check flags.
fn run(out: &Path, others: &str) {
    let runtimes = format!("mio,mio@1.2.4{others}");
    let mut args = vec!["run", "--runtimes", &runtimes, "--connections", "1"];
    args.extend(["--threads", "1", "--seconds", "0.1", "--warmup", "0"]);
    args.extend(["--repeat", "6", "--no-cost", "--quiet", "--history", "none"]);
    args.extend(["--out", out.to_str().unwrap()]);
    assert_ok(&compare_with(&args, &[("PINGPONG_FAULT", COSTLY)]), &args);
}

/// The explanation of `pair` (baseline, candidate) from `repeat` runs of
/// each, with `more` arguments, and `fault` on the release's binary (where
/// `more` asks for wake-ups, its build with frame pointers, which they are
/// traced on), in explain's own folder (`to` none) or `to`.
fn explain(
    out: &Path,
    [baseline, candidate]: [&str; 2],
    repeat: &str,
    more: &[&str],
    fault: Option<&str>,
    to: Option<&Path>,
) -> Explained {
    let slug = |name: &str| name.replace(['@', '.'], "-");
    let default = out
        .join("explain")
        .join(format!("{}-vs-{}", slug(baseline), slug(candidate)));
    let to = to.unwrap_or(&default);
    let mut args = vec!["explain", out.to_str().unwrap(), "--baseline", baseline];
    args.extend([
        "--candidate",
        candidate,
        "--repeat",
        repeat,
        "--blocks",
        "10",
    ]);
    args.extend(more);
    if to != default {
        args.extend(["--out", to.to_str().unwrap()]);
    }
    let binary = match more.contains(&"--wakes") {
        true => "pingpong-mio-frame-pointers",
        false => "pingpong-mio",
    };
    let spec = fault.map(|f| format!("pingpong-mio-1.2.4/{binary}:{f}"));
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
    run(&out, "");
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
        let pair = ["mio", "mio@1.2.4"];
        let explained = explain(&out, pair, "2", &["--side", side], Some(fault), to);
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
    // The same build against itself, both sides: every move is variation,
    // told so from as many runs as explain makes unless asked: with two
    // runs a side, a function whose figure varies at random (a client's
    // futex calls, with the timing) is told in 7 pairs of 100, with three
    // in 6 of 1,000 (drawn from normal noise).
    let a_a = Some(out.join("a-a"));
    let same = explain(&out, ["mio", "mio"], "3", &[], None, a_a.as_deref());
    assert_eq!(same.sides.len(), 2);
    assert!(same.told().is_empty(), "{:?}", same.told());
    assert!(
        same.sides
            .iter()
            .all(|s| s.absent.is_none() && !s.functions.is_empty())
    );
}

#[test]
#[ignore = "needs perf, as root: scripts/test.sh installs it, as root, and runs this"]
fn sampled_an_injected_cost_is_named_first_and_an_io_uring_a_a_pair_names_nothing() {
    let out = out_dir("explain-sampled");
    run(&out, "");
    let to = out.join("costly");
    let more = ["--side", "server", "--sampled", "--sample-seconds", "0.3"];
    let pair = ["mio", "mio@1.2.4"];
    let explained = explain(&out, pair, "2", &more, Some("costly=3000"), Some(&to));
    let server = &explained.sides[0];
    assert!(server.sampled.is_some(), "{server:?}");
    let told = explained.told();
    let Some((side, first)) = told.first() else {
        panic!("nothing named; {explained:?}");
    };
    let function = "pingpong::fault::injected_work";
    assert_eq!(
        (*side, first.name.as_str(), first.kind),
        ("server", function, Kind::Cpu)
    );
    assert!(first.own_moved() > 0.0, "{first:?}");
    // Wake-ups traced, in the open loop: one of an idle thread a block,
    // issued from a function of its own, is the server's path told first,
    // by about one a block; the sampled side is explained at the rate too.
    let open = out.join("open");
    let mut args = vec!["run", "--runtimes", "mio,mio@1.2.4", "--connections", "1"];
    args.extend(["--rates", "2000", "--seconds", "0.1", "--warmup", "0"]);
    args.extend(["--repeat", "2", "--no-cost", "--quiet", "--history", "none"]);
    args.extend(["--out", open.to_str().unwrap()]);
    assert_ok(&compare_with(&args, &[]), &args);
    let to = out.join("woken");
    let more = ["--side", "server", "--wakes", "--sample-seconds", "0.3"];
    let explained = explain(&open, pair, "2", &more, Some("wake-every=1"), Some(&to));
    assert!(
        explained.cell.contains("open loop at 2000 blocks/s"),
        "{explained:?}"
    );
    let server = &explained.sides[0];
    let sampled = server.sampled.as_ref().expect("an open loop is sampled");
    assert_eq!(sampled.seconds, Some(0.3), "{sampled:?}");
    let woken = server.woken.as_ref().expect("traced");
    assert_eq!((woken.absent.as_deref(), woken.seconds), (None, Some(0.3)));
    let first = woken.wakes.first().unwrap_or_else(|| panic!("{woken:?}"));
    assert!(
        first.told
            && first
                .name
                .starts_with("futex: pingpong::fault::injected_wake"),
        "{woken:?}"
    );
    assert!((0.5..1.5).contains(&first.own_moved()), "{first:?}");
    // valgrind cannot run io_uring: monoio is sampled without being asked,
    // and against itself nothing moves past the runs' variation and the
    // samples' precision, nor do its wake-ups (io_uring_enter's): over
    // HTTP/1.1 inside TLS, rustls's work among its functions. (UDP and the
    // other protocols, explained the same way, cost a minute more here:
    // the wake-ups report shows them.)
    let web = out.join("web");
    let mut args = vec!["run", "--runtimes", "monoio", "--protocol", "http"];
    args.extend(["--tls", "--no-handshakes", "--connections", "1"]);
    args.extend(["--threads", "1", "--seconds", "0.1", "--warmup", "0"]);
    args.extend(["--repeat", "2", "--no-cost", "--quiet", "--history", "none"]);
    args.extend(["--out", web.to_str().unwrap()]);
    assert_ok(&compare_with(&args, &[]), &args);
    let https = "1 thread, 1 connection, 16384 B, over HTTP/1.1, TLS";
    let to = out.join("a-a");
    let mut args = vec!["explain", web.to_str().unwrap(), "--baseline", "monoio"];
    args.extend(["--candidate", "monoio", "--cell", https]);
    args.extend(["--side", "server", "--repeat", "2", "--blocks", "10"]);
    args.extend([
        "--sample-seconds",
        "0.3",
        "--wakes",
        "--out",
        to.to_str().unwrap(),
    ]);
    assert_ok(&compare_with(&args, &[]), &args);
    let same = Explained::load(&explain::folder(&to, https)).unwrap();
    let server = &same.sides[0];
    assert!(
        server.absent.is_none() && server.sampled.is_some(),
        "{server:?}"
    );
    let of = |krate: &str| {
        let krate = krate.to_string();
        move |f: &Function| f.kind == Kind::Cpu && f.krate.as_deref() == Some(krate.as_str())
    };
    assert!(server.functions.iter().any(of("monoio")), "{server:?}");
    assert!(server.functions.iter().any(of("rustls")), "{server:?}");
    assert!(
        server.syscalls.is_empty() && server.totals.is_none(),
        "{server:?}"
    );
    let woken = server.woken.as_ref().expect("traced");
    let waits = |f: &Function| f.name.starts_with("io_uring_enter: ");
    assert!(woken.sleeps.iter().any(waits), "{woken:?}");
    assert!(same.told().is_empty(), "{:?}", same.told());
}

#[test]
#[ignore = "needs valgrind: scripts/test.sh installs it, as root, and runs this"]
fn a_check_between_two_runs_explains_each_side_with_the_binary_its_run_kept() {
    let first = out_dir("explain-between");
    run(&first, "");
    let second = folder("explain-between-second");
    copy_run(&first, &second);
    // The candidate's run recorded another build of mio 1.2.4 than
    // today's, and kept it: explain runs the kept one, whose fault (asked
    // of its path in the run's folder) is what it names.
    let recorded = load(&first).suite.binaries["mio@1.2.4"].clone();
    let ran = first.join("binaries").join(&recorded).join("pingpong-mio");
    assert!(
        ran.is_file(),
        "the run keeps what it ran: {}",
        ran.display()
    );
    let hash = "0".repeat(64);
    let kept = second.join("binaries").join(&hash).join("pingpong-mio");
    std::fs::create_dir_all(kept.parent().unwrap()).unwrap();
    std::fs::copy(&ran, &kept).unwrap();
    edit_results(&second, |r| {
        r["suite"]["binaries"]["mio@1.2.4"] = hash.clone().into()
    });
    // The check of the two runs flags mio@1.2.4's cell (its throughput cut
    // to a tenth in the candidate's record: a halving hid in the spread of
    // 0.1 s windows beside other tests) and explains it against itself in
    // the baseline's run: the kept copy's fault is what it names. No
    // history teaches the check a threshold (the tests' folder has one).
    edit_results(&second, |r| {
        let cells = r["cells"].as_array_mut().unwrap();
        for cell in cells.iter_mut().filter(|c| c["runtime"] == "mio@1.2.4") {
            for run in cell["runs"].as_array_mut().unwrap() {
                for figure in ["mib_per_s", "messages_per_s"] {
                    run[figure] = (run[figure].as_f64().unwrap() / 10.0).into();
                }
            }
        }
    });
    let runs = [first.to_str().unwrap(), second.to_str().unwrap()];
    let mut args = vec![
        "check",
        runs[0],
        runs[1],
        "--explain",
        "--format",
        "markdown",
    ];
    args.extend(["--side", "server", "--repeat", "2", "--blocks", "10"]);
    args.extend(["--history", "none"]);
    let fault = format!("{hash}/pingpong-mio:costly=3000");
    let output = compare_with(&args, &[("PINGPONG_FAULT", &fault)]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let cell = "1 thread, 1 connection, 16384 B";
    let files = [first.join("results.json"), second.join("results.json")];
    let out = default_out([&files[0], &files[1]], "mio@1.2.4", "mio@1.2.4");
    let to = explain::folder(&out, cell);
    let explained = Explained::load(&to).unwrap();
    assert!(
        explained.command.contains(second.to_str().unwrap()),
        "{}",
        explained.command
    );
    let told = explained.told();
    let first_told = told.first().map(|(side, f)| (*side, f.name.as_str()));
    assert_eq!(
        first_told,
        Some(("server", "pingpong::fault::injected_work")),
        "{told:?}"
    );
    // The comment links it, under the implementation that moved; mio,
    // which did not, is not explained.
    let link = format!("- [mio@1.2.4, {cell}]({})", to.join("README.md").display());
    assert!(stdout.contains(&link), "{stdout}");
    assert!(!default_out([&files[0], &files[1]], "mio", "mio").exists());
    // A run on another machine is refused, the difference named.
    edit_results(&second, |r| r["host"]["kernel"] = "6.1.0-other".into());
    let args = [
        "explain",
        runs[0],
        runs[1],
        "--baseline",
        "mio",
        "--candidate",
        "mio",
    ];
    let output = compare_with(&args, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("different machines (kernel "),
        "{stderr}"
    );
}

/// A copy of the run in `from` at `to`, as a second run of the same builds.
fn copy_run(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(from.join("results.json"), to.join("results.json")).unwrap();
}

/// The run in `folder` with its results file changed by `edit`.
fn edit_results(folder: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let file = folder.join("results.json");
    let mut results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    edit(&mut results);
    std::fs::write(&file, results.to_string()).unwrap();
}
