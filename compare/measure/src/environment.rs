//! What a run records about where it ran: the machine, the toolchain, the
//! suite's own commit, and a hash of every binary that ran.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use procfs::{CpuInfo, Current, Meminfo};

use model::adapters::RUSTC_VERSION;
use model::results::{Host, Suite, TlsSettings};
use model::{defaults, revision};

/// The suite: version, toolchain, and the SHA-256 of each program by name;
/// when `built` with cargo profile `profile` (from the source tree, just
/// now), the tree's git commit too. Prebuilt binaries (`--bin-dir`) came
/// from who knows which tree: their hashes identify them.
pub fn suite(programs: &BTreeMap<String, PathBuf>, built: bool, profile: &str) -> Result<Suite> {
    let root = defaults::source_tree().filter(|_| built);
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
    let binaries = programs
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
        profile: Some(if built {
            profile.into()
        } else {
            "prebuilt (--bin-dir)".into()
        }),
        binaries,
        locks: BTreeMap::new(),
        valgrind: None,
        channel: None,
    })
}

pub fn sha256(path: &Path) -> Result<String> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(revision::sha256_hex(&bytes))
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
        .unwrap_or_else(|| format!("rustc {RUSTC_VERSION}"))
}

/// The machine as this run sees it.
pub fn host(cpus: Vec<usize>) -> Host {
    let cpuinfo = CpuInfo::current().ok();
    let cpu_model = cpuinfo
        .as_ref()
        .and_then(|c| c.model_name(0))
        .map(String::from)
        .or_else(|| Some(std::env::consts::ARCH.to_string()));
    // A core is a (package, core) pair; hyperthreads share one.
    let cores: BTreeSet<(Option<&str>, &str)> = cpuinfo
        .iter()
        .flat_map(|c| {
            (0..c.num_cores()).filter_map(move |i| {
                Some((c.get_field(i, "physical id"), c.get_field(i, "core id")?))
            })
        })
        .collect();
    let nofile = pingpong::limits::nofile().ok();
    let io_uring = pingpong::Unavailable::probe_io_uring();
    Host {
        name: nix::unistd::gethostname()
            .ok()
            .map(|h| h.to_string_lossy().into_owned()),
        cpus,
        cpu_model,
        logical_cpus: cpuinfo.as_ref().map(CpuInfo::num_cores),
        physical_cores: (!cores.is_empty()).then_some(cores.len()),
        memory_kib: Meminfo::current().ok().map(|m| m.mem_total / 1024),
        kernel: nix::sys::utsname::uname()
            .ok()
            .map(|u| u.release().to_string_lossy().into_owned()),
        somaxconn: pingpong::limits::somaxconn(),
        io_uring: Some(io_uring.is_ok()),
        io_uring_error: io_uring.err().map(|e| e.to_string()),
        nofile_soft: nofile.map(|n| n.0),
        nofile_hard: nofile.map(|n| n.1),
    }
}

/// The TLS this compare's implementations use (they share pingpong's).
pub fn tls_settings(handshakes: bool, handshake_connections: Vec<usize>) -> TlsSettings {
    use pingpong::tls;
    TlsSettings {
        version: tls::VERSION.into(),
        suite: tls::SUITE.into(),
        group: tls::GROUP.into(),
        provider: tls::PROVIDER.into(),
        certificate: tls::CERTIFICATE.into(),
        kernel_tls: kernel_tls(),
        handshakes,
        handshake_connections,
    }
}

/// Whether this kernel offers TLS offload (the `tls` upper-layer protocol).
fn kernel_tls() -> String {
    const ULP: &str = "/proc/sys/net/ipv4/tcp_available_ulp";
    match std::fs::read_to_string(ULP) {
        Ok(ulp) if ulp.split_whitespace().any(|u| u == "tls") => {
            "offered by this kernel, not used: rustls encrypts in user space".into()
        }
        Ok(ulp) => format!(
            "unavailable: this kernel offers none ({ULP} lists {:?}, no tls)",
            ulp.trim()
        ),
        Err(e) => format!("unavailable: {ULP}: {e}"),
    }
}
