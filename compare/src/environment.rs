//! What a run records about where it ran: the machine, the toolchain, the
//! suite's own commit, and a hash of every binary that ran.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::binaries;
use crate::results::{Host, Suite};

/// The suite: version, toolchain, and the SHA-256 of each binary; when
/// `built` (from the source tree, just now), the tree's git commit too.
/// Prebuilt binaries (`--bin-dir`) came from who knows which tree: their
/// hashes identify them.
pub fn suite(bins: &HashMap<String, PathBuf>, built: bool) -> Result<Suite> {
    let root = binaries::source_tree().filter(|_| built);
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .current_dir(root.as_ref()?)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "HEAD"]);
    let dirty = head
        .as_ref()
        .and_then(|_| git(&["status", "--porcelain", "--untracked-files=no"]))
        .map(|s| !s.is_empty());
    let binaries = bins
        .iter()
        .map(|(name, path)| Ok((name.clone(), sha256(path)?)))
        .collect::<Result<_>>()?;
    Ok(Suite {
        version: env!("CARGO_PKG_VERSION").into(),
        commit: head.map(|h| match dirty {
            Some(true) => format!("{h}-dirty"),
            _ => h,
        }),
        dirty,
        rustc: Some(rustc(built)),
        profile: Some(
            if built {
                "release"
            } else {
                "prebuilt (--bin-dir)"
            }
            .into(),
        ),
        binaries,
    })
}

fn sha256(path: &Path) -> Result<String> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// The compiler that cargo just built the binaries with; for prebuilt ones,
/// the one that built this program (and, presumably, them).
fn rustc(built: bool) -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let current = || {
        let out = Command::new(rustc).arg("--version").output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    built
        .then(current)
        .flatten()
        .unwrap_or_else(|| format!("rustc {}", crate::implementations::RUSTC_VERSION))
}

/// The machine as this run sees it.
pub fn host(cpus: Vec<usize>) -> Host {
    let read = |path: &str| fs::read_to_string(path).ok();
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let field = |line: &str, key: &str| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    };
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| field(l, "model name"))
        .or_else(|| std::env::consts::ARCH.to_string().into());
    let logical_cpus = cpuinfo
        .lines()
        .filter(|l| field(l, "processor").is_some())
        .count();
    // A core is a (package, core) pair; hyperthreads share one.
    let mut cores = BTreeSet::new();
    let mut package = String::new();
    for line in cpuinfo.lines() {
        if let Some(p) = field(line, "physical id") {
            package = p;
        } else if let Some(core) = field(line, "core id") {
            cores.insert((package.clone(), core));
        }
    }
    let memory_kib = read("/proc/meminfo").and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    });
    let nofile = pingpong::limits::nofile().ok();
    let io_uring = pingpong::Unavailable::probe_io_uring();
    Host {
        name: nix::unistd::gethostname()
            .ok()
            .map(|h| h.to_string_lossy().into_owned()),
        cpus,
        cpu_model,
        logical_cpus: Some(logical_cpus),
        physical_cores: (!cores.is_empty()).then_some(cores.len()),
        memory_kib,
        kernel: read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
        somaxconn: read("/proc/sys/net/core/somaxconn").and_then(|s| s.trim().parse().ok()),
        io_uring: Some(io_uring.is_ok()),
        io_uring_error: io_uring.err().map(|e| e.to_string()),
        nofile_soft: nofile.map(|n| n.0),
        nofile_hard: nofile.map(|n| n.1),
    }
}
