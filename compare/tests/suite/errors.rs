//! Bad input gets one clear sentence and exit code 2, before anything runs.

use crate::common::{self, compare};

#[test]
fn unknown_implementation_names_the_known_ones() {
    let output = compare(&["run", "--runtimes", "tokyo"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unknown implementation \"tokyo\" (did you mean tokio?)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("known: tokio, tokio-local, mio, async-std"),
        "{stderr}"
    );
}

#[test]
fn every_bad_option_gets_its_reason_in_two_lines_at_most() {
    for (args, expected) in [
        (
            &["--connections", "0"][..],
            "'0' for '--connections <CONNECTIONS>': 0 is not in 1..",
        ),
        (&["--connections", "-5"], "-5 is not in 1.."),
        (&["--threads", "0"], "0 is not in 1..=1024"),
        (&["--seconds", "0"], "0 is not a positive number of seconds"),
        (
            &["--seconds", "-1"],
            "-1 is not a positive number of seconds",
        ),
        (
            &["--warmup", "nan"],
            "nan is not a non-negative number of seconds",
        ),
        (&["--block", "0"], "0 is not in 1..=67108864"),
        (
            &["--protocol", "udp", "--block", "65508"],
            "--protocol udp: --block 65508 does not fit in one UDP datagram",
        ),
        (
            &["--protocol", "udp", "--tls"],
            "--tls has nothing to run over UDP",
        ),
        (
            &["--protocol", "http,websocket", "--rates", "1000"],
            "--rates has nothing to run over HTTP/1.1 and WebSocket",
        ),
        (
            &["--runtimes", "generator"],
            "generator is the open loop's client for every server (--rates), an instrument",
        ),
        (
            &["--client", "generator"],
            "generator is the open loop's client for every server (--rates), an instrument",
        ),
        (&["--block", "67108865"], "67108865 is not in 1..=67108864"),
        (&["--repeat", "0"], "0 is not in 1..=1000"),
        (
            &["--precision", "0"],
            "0 is not a positive percentage (or off)",
        ),
        (
            &["--precision", "5", "--repeat", "4", "--max-repeat", "3"],
            "--max-repeat 3 is below --repeat 4",
        ),
        (&["--repeat", "3", "--budget", "2"], "which is off here"),
        (
            &["--budget", "-1"],
            "-1 is not a positive number of minutes",
        ),
        (
            &["--pin", "x"],
            "is not auto, none, SERVER_CPUS/CLIENT_CPUS (e.g. 0-3/4-7) or auto/CLIENT_CPUS",
        ),
        (&["--pin", "4096/0"], "--pin names CPU 4096"),
        (&["--runtimes", "tokio@1.47"], "the version must be exact"),
        (
            &["--runtimes", "std-threads@1.0.0"],
            "no crate version to pin",
        ),
        (&["--runtimes", "mio,mio"], "names mio twice"),
        (&["--bogus"], "unexpected argument '--bogus'"),
        (&["--resume", "x", "--repeat", "2"], "cannot be used with"),
        (
            &["--shapes", "steal"],
            "invalid value 'steal' for '--shapes",
        ),
        (
            &[
                "--runtimes",
                "tokio",
                "--server",
                "127.0.0.1:9",
                "--shapes",
                "pool",
            ],
            "leave --shapes out",
        ),
    ] {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        let output = compare(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        let said: Vec<_> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        // clap adds its usage and help lines; the reason is the first line.
        assert!(
            said[0].contains(expected) || said.len() <= 2,
            "{args:?}: {stderr}"
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("backtrace"),
            "{stderr}"
        );
    }
}

#[test]
fn too_few_file_descriptors_say_what_to_change() {
    // The hard limit is lowered for compare alone, which must refuse before
    // any cell.
    let out = common::out_dir("nofile");
    let output = std::process::Command::new("sh")
        .env(model::defaults::PROFILE_ENV, common::PROFILE)
        .arg("-c")
        .arg(format!(
            "ulimit -n 500 && exec '{}' run --runtimes mio --connections 1000 --out '{}'",
            env!("CARGO_BIN_EXE_compare"),
            out.display()
        ))
        .output()
        .expect("sh");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "1000 connections need 1064 open files per process, but the hard limit is 500"
        ),
        "{stderr}"
    );
    assert!(!out.join("results.json").exists(), "nothing ran");
}

#[test]
fn a_given_server_that_is_not_there_is_named_and_leaves_no_folder() {
    let out = common::out_dir("no-server");
    let output = compare(&[
        "run",
        "--server",
        "127.0.0.1:1",
        "--runtimes",
        "mio",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--server 127.0.0.1:1: nothing accepts connections"),
        "{stderr}"
    );
    assert!(!out.exists(), "a refused run made {}", out.display());
}

#[test]
fn bisect_by_counted_figures_asks_for_the_blocks_to_count() {
    let output = compare(&[
        "bisect",
        "mio",
        "1.2.2",
        "1.2.4",
        "--metric",
        "server_instructions_per_block",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("give --counted BLOCKS"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
