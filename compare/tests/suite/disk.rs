//! A run whose results folder fills up, or turns read-only, mid-run: it
//! stops with a message that says so and how to go on, its results file
//! keeps the runs saved before, and `--resume` finishes it once the folder
//! takes writes again. The folder is a small tmpfs of the test's own.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{self, assert_ok, compare, load};

/// What befalls the folder once two runs are saved.
#[derive(Debug, Clone, Copy)]
enum Trouble {
    ReadOnly,
    Full,
}

fn mount(args: &[&str]) {
    let status = Command::new("mount").args(args).status().unwrap();
    assert!(status.success(), "mount {args:?}");
}

/// Fills the folder until the kernel says it is full, to its last page.
fn fill(dir: &Path) {
    let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
    for size in [64 << 10, 4 << 10, 1] {
        let chunk = vec![0u8; size];
        let full = (0..100_000).any(|_| filler.write_all(&chunk).is_err());
        assert!(full, "{} never filled up", dir.display());
    }
}

#[test]
#[ignore = "needs root, to mount a tmpfs: scripts/test.sh runs it as root"]
fn a_folder_that_fills_up_or_turns_read_only_stops_the_run_and_resume_finishes_it() {
    for trouble in [Trouble::ReadOnly, Trouble::Full] {
        let mnt = common::folder(&format!("disk-{trouble:?}"));
        // A tmpfs a failed run of this test left mounted goes first.
        let _ = Command::new("umount").arg(&mnt).status();
        let mnt = common::out_dir(&format!("disk-{trouble:?}"));
        std::fs::create_dir_all(&mnt).unwrap();
        mount(&[
            "-t",
            "tmpfs",
            "-o",
            "size=16m",
            "tmpfs",
            mnt.to_str().unwrap(),
        ]);
        let out = mnt.join("run");
        let path = out.join("results.json");
        let mut child = common::start_resumable_run(&out, Stdio::piped());
        common::wait_until_saved(&mut child, &path, 2);
        match trouble {
            Trouble::ReadOnly => mount(&["-o", "remount,ro", mnt.to_str().unwrap()]),
            Trouble::Full => fill(&mnt),
        }
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(!status.success(), "{trouble:?}: {stderr}");
        let cause = match trouble {
            Trouble::ReadOnly => "Read-only file system",
            Trouble::Full => "No space left on device",
        };
        let resume = format!("compare run --resume {}", out.display());
        assert!(
            stderr.contains(cause) && stderr.contains(&resume),
            "{stderr}"
        );
        let kept = load(&out).runs();
        assert!((2..8).contains(&kept), "{trouble:?}: {kept} runs kept");

        match trouble {
            Trouble::ReadOnly => mount(&["-o", "remount,rw", mnt.to_str().unwrap()]),
            Trouble::Full => std::fs::remove_file(mnt.join("filler")).unwrap(),
        }
        let args = ["run", "--resume", out.to_str().unwrap(), "--quiet"];
        assert_ok(&compare(&args), &args);
        let results = load(&out);
        assert_eq!(results.cells.len(), 4, "{trouble:?}");
        assert!(
            results.cells.iter().all(|c| c.runs.len() == 2),
            "{trouble:?}"
        );
        let status = Command::new("umount").arg(&mnt).status().unwrap();
        assert!(status.success(), "umount {}", mnt.display());
    }
}
