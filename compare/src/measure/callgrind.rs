//! User-space instructions, counted by valgrind's callgrind: nearly the same
//! count every time for the same work, whatever else the machine does,
//! where wall-clock figures move by tens of percent. It counts the
//! process's own code (the runtime, the protocol, libc), not the kernel's.

use std::path::{Path, PathBuf};
use std::process::Command;

/// valgrind, found on this machine.
#[derive(Clone)]
pub struct Callgrind {
    valgrind: PathBuf,
    /// As `valgrind --version` says it: "valgrind-3.19.0".
    pub version: String,
}

impl Callgrind {
    /// valgrind on the PATH, or why there is none.
    pub fn find() -> Result<Self, String> {
        let valgrind = which::which("valgrind").map_err(|_| {
            "valgrind is not installed (Debian: apt-get install valgrind)".to_string()
        })?;
        let out = Command::new(&valgrind)
            .arg("--version")
            .output()
            .map_err(|e| format!("running valgrind --version: {e}"))?;
        Ok(Self {
            version: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            valgrind,
        })
    }

    /// The program and arguments that run `program args` under callgrind,
    /// its counts written to `out` when it exits.
    pub fn wrap(&self, program: &Path, args: &[String], out: &Path) -> (PathBuf, Vec<String>) {
        let mut wrapped = vec![
            "--tool=callgrind".to_string(),
            format!("--callgrind-out-file={}", out.display()),
            program.to_string_lossy().into_owned(),
        ];
        wrapped.extend_from_slice(args);
        (self.valgrind.clone(), wrapped)
    }
}

/// The instructions (Ir) a callgrind output file counts in all.
pub fn total(out: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(out)
        .map_err(|e| format!("callgrind wrote no {}: {e}", out.display()))?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("{} has no totals line", out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs valgrind: scripts/test.sh installs it, as root, and runs this"]
    fn a_program_run_twice_counts_the_same_and_more_work_counts_more() {
        let callgrind = Callgrind::find().unwrap_or_else(|why| panic!("{why}"));
        assert!(
            callgrind.version.starts_with("valgrind-"),
            "{}",
            callgrind.version
        );
        let dir = tempfile::tempdir().unwrap();
        let count = |n: &str, name: &str| {
            let out = dir.path().join(name);
            let args = [
                "-c".into(),
                format!("i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"),
            ];
            let (program, args) = callgrind.wrap(Path::new("/bin/sh"), &args, &out);
            let status = Command::new(program).args(args).output().unwrap().status;
            assert!(status.success());
            total(&out).unwrap()
        };
        let (a, b, more) = (count("1000", "a"), count("1000", "b"), count("2000", "c"));
        assert!(a.abs_diff(b) * 1000 < a, "{a} and {b} for the same work");
        assert!(more > a + (a / 10), "{more} for twice the loop of {a}");
    }

    #[test]
    fn a_file_without_totals_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x");
        std::fs::write(&out, "events: Ir\nsummary: 1234\n").unwrap();
        assert_eq!(total(&out), Ok(1234));
        std::fs::write(&out, "events: Ir\n").unwrap();
        assert!(total(&out).is_err());
        assert!(total(&dir.path().join("missing")).is_err());
    }
}
