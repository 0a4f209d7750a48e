//! A runtime that cannot start is recorded as unavailable, with the reason,
//! and the run goes on. io_uring is denied the way Docker's default seccomp
//! profile denies it (PINGPONG_DENY_IO_URING).

use crate::common::{cells, compare_with, out_dir};
use crate::{IMPLEMENTATIONS, IO_URING};

#[test]
fn denied_io_uring_makes_those_runtimes_unavailable_and_the_rest_run() {
    let out = out_dir("unavailable");
    let output = compare_with(
        &[
            "run",
            "--connections",
            "1",
            "--threads",
            "1",
            "--seconds",
            "0.2",
            "--warmup",
            "0",
            "--repeat",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
        &[("PINGPONG_DENY_IO_URING", "1")],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "unavailable is not a failure: {output:?}"
    );
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let cells = cells(&results);
    assert_eq!(cells.len(), IMPLEMENTATIONS.len());
    for cell in cells {
        let name = cell["runtime"].as_str().unwrap();
        if IO_URING.contains(&name) {
            assert_eq!(cell["status"], "unavailable", "{name}: {cell}");
            assert_eq!(cell["unavailable"], "io_uring forbidden", "{name}");
            let error = cell["error"].as_str().unwrap();
            assert!(
                error.contains("Operation not permitted") && error.contains("seccomp"),
                "{name}: {error}"
            );
            assert!(
                cell["mib_per_s"].is_null() && cell["runs"].as_array().unwrap().is_empty(),
                "{name}"
            );
        } else {
            // monoio-epoll among them: the same crate, no io_uring, no fallback needed.
            assert_eq!(cell["status"], "ok", "{name}: {}", cell["error"]);
        }
    }
    assert!(
        stdout.contains("unavailable: io_uring forbidden"),
        "the table says why: {stdout}"
    );
}
