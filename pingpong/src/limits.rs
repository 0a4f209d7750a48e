//! Open-file limits: 10,000 connections need 10,000 descriptors in each process.

use rlimit::Resource;

/// Descriptors a process needs beyond one per connection (stdio, the poller,
/// listeners, the runtime's own eventfds and pipes).
pub const SPARE_DESCRIPTORS: u64 = 64;

#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    #[error(
        "{connections} connections need {needed} open files per process, but the hard limit is {hard}: \
         raise it (ulimit -Hn, or nofile in /etc/security/limits.conf) or use fewer connections"
    )]
    TooLow {
        connections: usize,
        needed: u64,
        hard: u64,
    },
    #[error("cannot raise the open-file limit: {0}")]
    Os(#[from] std::io::Error),
}

/// Checks that the hard open-file limit leaves room for `connections`
/// sockets; returns it.
pub fn check_nofile(connections: usize) -> Result<u64, LimitError> {
    let (_, hard) = nofile()?;
    let needed = connections as u64 + SPARE_DESCRIPTORS;
    if hard < needed {
        return Err(LimitError::TooLow {
            connections,
            needed,
            hard,
        });
    }
    Ok(hard)
}

/// Raises the soft open-file limit to the hard one, after [`check_nofile`].
pub fn raise_nofile(connections: usize) -> Result<u64, LimitError> {
    let hard = check_nofile(connections)?;
    Resource::NOFILE.set(hard, hard)?;
    Ok(hard)
}

/// The soft and hard open-file limits of this process.
pub fn nofile() -> std::io::Result<(u64, u64)> {
    Resource::NOFILE.get()
}

/// net.core.somaxconn: the cap the kernel puts on every listener's accept
/// backlog (a single number, which no /proc crate reads for us).
pub fn somaxconn() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()?
        .trim()
        .parse()
        .ok()
}
