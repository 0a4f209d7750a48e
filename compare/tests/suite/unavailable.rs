//! A runtime that cannot start is recorded as unavailable, with the reason,
//! and the run goes on. io_uring is denied the way Docker's default seccomp
//! profile denies it (PINGPONG_DENY_IO_URING).

use model::adapters::ADAPTERS;
use model::results::Status;

use crate::common::{compare_with, load, out_dir};

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
            "--no-cost",
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
    let results = load(&out);
    assert_eq!(results.cells.len(), ADAPTERS.len());
    for (cell, adapter) in results.cells.iter().zip(ADAPTERS) {
        let name = &cell.implementation;
        assert_eq!(name, adapter.name);
        if adapter.io_uring {
            assert_eq!(cell.status, Status::Unavailable, "{name}: {cell:?}");
            assert_eq!(
                cell.unavailable.as_deref(),
                Some("io_uring forbidden"),
                "{name}"
            );
            let error = cell.error.as_deref().unwrap();
            assert!(
                error.contains("Operation not permitted") && error.contains("seccomp"),
                "{name}: {error}"
            );
            assert!(cell.mib_per_s.is_none() && cell.runs.is_empty(), "{name}");
        } else {
            // monoio-epoll among them: the same crate, no io_uring, no fallback needed.
            assert_eq!(cell.status, Status::Ok, "{name}: {:?}", cell.error);
        }
    }
    assert!(
        stdout.contains("unavailable: io_uring forbidden"),
        "the table says why: {stdout}"
    );
}
