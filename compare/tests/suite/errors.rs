//! Bad input gets one clear sentence and exit code 2, before anything runs.

use std::process::Command;

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
fn zero_connections_are_refused() {
    let output = compare(&["run", "--connections", "0"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--connections"));
}

#[test]
fn too_few_file_descriptors_say_what_to_change() {
    // The hard limit is lowered for compare alone, which must refuse before
    // any cell (no run starts, so no turn is taken: see common::compare).
    let out = common::out_dir("nofile");
    let output = Command::new("sh")
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
