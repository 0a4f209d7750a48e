//! External implementations: the shipped muduo and asio configs, pointed
//! at a stand-in program with the same command lines and output, join the
//! table; our client against their server and theirs against ours cross-check
//! the measurement.

use std::path::{Path, PathBuf};

use model::matrix::Tls;
use model::results::{Results, Status};

use crate::common::{assert_cell_consistent, cell, compare, folder, out_dir, run_ok};

const CONFIGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/external");
const STANDIN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/standin/pingpong.py"
);

/// A folder where the stand-in answers to muduo's and asio's program names,
/// with the shipped configs pointed at it; returns `--external` arguments.
fn standins(test: &str) -> Vec<String> {
    let dir = out_dir(&format!("{test}-standin"));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["pingpong_server", "pingpong_client", "server", "client"] {
        std::os::unix::fs::symlink(STANDIN, dir.join(name)).unwrap();
    }
    [
        ("muduo", "/opt/muduo/build/release-cpp11/bin/"),
        ("asio", "/opt/asio/asio/src/tests/performance/"),
    ]
    .iter()
    .map(|(name, built)| {
        let shipped = Path::new(CONFIGS).join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&shipped).unwrap();
        assert!(text.contains(built), "{name}.toml runs {built}");
        let config: PathBuf = dir.join(format!("{name}.toml"));
        std::fs::write(&config, text.replace(built, &format!("{}/", dir.display()))).unwrap();
        format!("{name}={}", config.display())
    })
    .collect()
}

fn run_with(test: &str, externals: &[String], args: &[&str]) -> Results {
    let mut all: Vec<&str> = externals
        .iter()
        .flat_map(|e| ["--external", e.as_str()])
        .collect();
    all.extend(args);
    all.extend([
        "--seconds",
        "1",
        "--warmup",
        "0.05",
        "--repeat",
        "1",
        "--no-cost",
    ]);
    run_ok(test, &all)
}

#[test]
fn external_programs_are_columns_beside_ours() {
    let externals = standins("external-columns");
    let results = run_with(
        "external-columns",
        &externals,
        &["--runtimes", "muduo,asio,mio", "--connections", "1,4"],
    );
    for name in ["muduo", "asio"] {
        let recorded = results
            .config
            .externals
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("{name} not recorded"));
        assert!(recorded.client.command.contains("{connections}"));
        for side in ["server", "client"] {
            let hash = results.suite.binaries.get(&format!("{name} {side}"));
            assert_eq!(hash.map(String::len), Some(64), "{name} {side}: {hash:?}");
        }
        for connections in [1, 4] {
            let c = cell(&results, name, connections);
            assert_eq!(c.status, Status::Ok, "{name}: {:?}", c.error);
            assert_eq!(c.client, name);
            assert!(c.model.starts_with("external: "));
            assert_eq!(c.version, recorded.version);
            let run = &c.runs[0];
            // The program's own figure: bytes over the whole second it was given.
            assert_eq!(run.seconds, 1.0);
            let bytes = run.bytes as f64;
            assert!(bytes > 0.0, "{name}");
            let mib = run.mib_per_s;
            assert!((mib - bytes / 1048576.0).abs() < 1e-6 * mib, "{name}");
            // What it does not report is absent, not zero.
            assert!(
                run.rtt.is_none() && run.fairness.is_none(),
                "{name}: {run:?}"
            );
            assert!(
                run.connect_seconds.is_none() && run.client_usage.is_none(),
                "{name}"
            );
            assert!(run.server_usage.unwrap().cpu_percent > 0.0);
        }
    }
    for connections in [1, 4] {
        assert_cell_consistent(cell(&results, "mio", connections), 1.0);
    }
    let report = std::fs::read_to_string(folder("external-columns").join("report.md")).unwrap();
    for expected in [
        "| muduo‡ |",
        "muduo (external, version",
        "‡ measured by an external",
    ] {
        assert!(report.contains(expected), "{expected}:\n{report}");
    }
}

/// `server`'s server against `client`'s client, with `more` options.
fn pair(test: &str, server: &str, client: &str, more: &[&str]) -> Results {
    let mut args = vec!["--runtimes", server, "--client", client];
    args.extend(more);
    run_with(test, &standins(test), &args)
}

#[test]
fn our_client_against_their_server_and_theirs_against_ours() {
    let ours = pair("external-ours", "muduo", "mio", &["--connections", "3"]);
    // Our client verifies every byte the external server echoes.
    assert_cell_consistent(cell(&ours, "muduo", 3), 1.0);
    let theirs = pair("external-theirs", "mio", "asio", &["--connections", "3"]);
    let c = cell(&theirs, "mio", 3);
    assert_eq!((c.status, c.client.as_str()), (Status::Ok, "asio"));
    assert!(c.runs[0].bytes > 0);
}

#[test]
fn workloads_an_external_cannot_run_are_unavailable_with_the_reason() {
    let statuses = |results: &Results| -> Vec<(usize, Status)> {
        results.cells.iter().map(|c| (c.window, c.status)).collect()
    };
    let windows = ["--connections", "1", "--window", "1,2"];
    // Our client pipelines to any echo server.
    let ours = pair("external-window-ours", "muduo", "mio", &windows);
    assert_eq!(statuses(&ours), [(1, Status::Ok), (2, Status::Ok)]);
    let theirs = pair("external-window-theirs", "mio", "muduo", &windows);
    assert_eq!(
        statuses(&theirs),
        [(1, Status::Ok), (2, Status::Unavailable)]
    );
    let error = theirs.cells[1].error.as_deref().unwrap();
    assert!(error.contains("{window}"), "{error}");
    // They speak plain TCP only: unavailable inside TLS, on either side.
    let tls = ["--connections", "1", "--tls", "--no-handshakes"];
    for (server, client) in [("muduo", "mio"), ("mio", "muduo")] {
        let results = pair(&format!("external-tls-{server}"), server, client, &tls);
        let tls_statuses: Vec<_> = results.cells.iter().map(|c| (c.tls, c.status)).collect();
        assert_eq!(
            tls_statuses,
            [(None, Status::Ok), (Some(Tls::Full), Status::Unavailable)]
        );
        let error = results.cells[1].error.as_deref().unwrap();
        assert!(
            error.contains("muduo cannot run this workload: it speaks plain TCP only, no TLS"),
            "{error}"
        );
    }
}

#[test]
fn a_bad_external_config_is_refused_with_its_reason() {
    let dir = out_dir("external-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let shipped = std::fs::read_to_string(Path::new(CONFIGS).join("muduo.toml")).unwrap();
    let cases = [
        (
            "unknown placeholder {thread}",
            shipped.replace("{threads}", "{thread}"),
        ),
        (
            "has no group",
            shipped.replace("'([0-9.eE+-]+) MiB", "'[0-9.]+ MiB"),
        ),
        (
            "missing field `client`",
            shipped[..shipped.find("[client]").unwrap()].to_string(),
        ),
    ];
    for (expected, text) in cases {
        let file = dir.join("bad.toml");
        std::fs::write(&file, text).unwrap();
        let arg = format!("bad={}", file.display());
        let output = compare(&["run", "--external", &arg, "--runtimes", "bad"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
    let muduo = Path::new(CONFIGS).join("muduo.toml");
    for (args, expected) in [
        (vec![format!("tokio={}", muduo.display())], "one of ours"),
        (
            vec![format!("a={}", muduo.display()); 2],
            "--external names a twice",
        ),
    ] {
        let mut all = vec!["run"];
        all.extend(args.iter().flat_map(|a| ["--external", a.as_str()]));
        let output = compare(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
}
