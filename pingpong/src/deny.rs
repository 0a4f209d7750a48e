//! `PINGPONG_DENY_IO_URING=1`: this process is denied io_uring by a seccomp
//! filter, exactly as Docker's default profile denies it, so that the
//! "unavailable" path of io_uring runtimes can be exercised on any machine.

use std::collections::BTreeMap;
use std::io;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};

pub const ENV: &str = "PINGPONG_DENY_IO_URING";

const IO_URING_SYSCALLS: [i64; 3] = [
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// Installs the filter when the environment asks for it.
pub fn apply_from_env() -> io::Result<()> {
    if std::env::var_os(ENV).is_none_or(|v| v.is_empty() || v == "0") {
        return Ok(());
    }
    // An empty rule list matches the system call whatever its arguments.
    let rules: BTreeMap<_, _> = IO_URING_SYSCALLS.iter().map(|&nr| (nr, vec![])).collect();
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(io::Error::other)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(io::Error::other)?;
    let program: BpfProgram = filter.try_into().map_err(io::Error::other)?;
    seccompiler::apply_filter(&program).map_err(io::Error::other)
}
