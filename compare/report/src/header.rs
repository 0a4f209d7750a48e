//! What every human-readable report opens with: the machine, the versions,
//! the date, and the command that reproduces the run.

use model::results::{Host, Remote, Results};
use model::shell::shell_words;

/// A machine in one line, as far as it was recorded.
fn describe(host: &Host) -> String {
    let cpus = host.cpus.len();
    [
        host.cpu_model.clone(),
        host.logical_cpus.map(|n| match cpus {
            0 => format!("{n} logical CPUs"),
            used => format!("{n} logical CPUs, {used} used"),
        }),
        host.physical_cores.map(|n| format!("{n} cores")),
        host.memory_kib
            .map(|k| format!("{:.0} GiB", k as f64 / (1 << 20) as f64)),
        host.kernel.as_ref().map(|k| format!("Linux {k}")),
        host.io_uring
            .map(|ok| format!("io_uring {}", if ok { "available" } else { "unavailable" })),
        host.somaxconn.map(|s| format!("somaxconn {s}")),
        host.nofile_hard.map(|n| format!("open files {n}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

/// Where the servers ran, when not beside the clients.
fn servers(results: &Results) -> Option<String> {
    Some(match results.config.remote.as_ref()? {
        Remote::Given { address } => format!(
            "already running at {address}, started by hand (its threads, block, window and work as started)"
        ),
        Remote::Ssh { url, .. } => {
            let host = results.server_host.clone().unwrap_or_default();
            format!(
                "started over ssh at {url}, on {}: {}",
                host.name.as_deref().unwrap_or("a host not named"),
                describe(&host)
            )
        }
    })
}

/// What every human-readable report opens with: the machine, the versions,
/// the date, and the command that reproduces the run.
pub struct Header {
    pub title: String,
    pub lines: Vec<(String, String)>,
    pub reproduce: String,
}

impl Header {
    pub fn of(results: &Results) -> Self {
        let host = &results.host;
        let suite = &results.suite;
        let config = &results.config;
        let unknown = || "not recorded".to_string();
        let cpus = host.cpus.len();
        let machine = describe(host);
        let versions = {
            let mut seen = Vec::new();
            for c in &results.cells {
                let v = format!("{} {}", c.implementation, c.version);
                if !seen.contains(&v) {
                    seen.push(v);
                }
            }
            seen.join(", ")
        };
        let mut lines = vec![
            (
                "Date".into(),
                format!(
                    "{} to {}",
                    config.started,
                    config
                        .ended
                        .clone()
                        .unwrap_or_else(|| "(did not end)".into())
                ),
            ),
            (
                "Machine".into(),
                if machine.is_empty() {
                    unknown()
                } else {
                    machine
                },
            ),
            (
                "Suite".into(),
                format!(
                    "compare {}, commit {}, {}, profile {}",
                    suite.version,
                    suite.commit.clone().unwrap_or_else(unknown),
                    suite.rustc.clone().unwrap_or_else(unknown),
                    suite.profile.clone().unwrap_or_else(unknown),
                ),
            ),
            ("Implementations".into(), versions),
            (
                "Workload".into(),
                format!(
                    "{}{}; {} s window after {} s warm-up, {} interleaved repetition(s) per cell, pinning {}",
                    config
                        .workloads()
                        .iter()
                        .map(|w| w.label())
                        .collect::<Vec<_>>()
                        .join("; "),
                    match config.work {
                        0 => String::new(),
                        n => format!("; server work {n} units per block"),
                    },
                    config.seconds,
                    config.warmup,
                    config.repeat,
                    config.pin()
                ),
            ),
            ("Command".into(), config.command.clone()),
        ];
        if let Some(servers) = servers(results) {
            lines.insert(2, ("Servers".into(), servers));
        }
        if !config.client_hosts.is_empty() {
            let clients = format!(
                "started over ssh on {} hosts, the connections split among them, their \
                 throughput summed and round trips merged: {}",
                config.client_hosts.len(),
                config.client_hosts.join(", ")
            );
            lines.insert(3, ("Clients".into(), clients));
        }
        Self {
            title: format!(
                "pingpong: {} implementation(s) on {cpus} CPUs",
                config.implementations.len()
            ),
            lines,
            reproduce: reproduce(&config.command),
        }
    }
}

/// The recorded command as a user runs it from a checkout: cargo in place of
/// the binary's path, without the options naming this machine's folders,
/// quoted for a shell.
fn reproduce(command: &str) -> String {
    let words = shlex::split(command)
        .unwrap_or_else(|| command.split_whitespace().map(Into::into).collect());
    let mut words = words.iter().map(String::as_str).skip(1);
    let mut kept = Vec::new();
    while let Some(word) = words.next() {
        match word {
            "--out" | "--bin-dir" | "--resume" => {
                words.next();
            }
            w if w.starts_with("--out=") || w.starts_with("--bin-dir=") => {}
            w => kept.push(w),
        }
    }
    format!(
        "cargo run --release -p compare -- {}",
        shell_words(kept.into_iter())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reproducing_command_drops_local_folders() {
        assert_eq!(
            reproduce("/tmp/b/compare run --bin-dir /tmp/b --seconds 0.4 --out /x/run --quiet"),
            "cargo run --release -p compare -- run --seconds 0.4 --quiet"
        );
        // A configuration's braces and commas stay one word for the shell.
        assert_eq!(
            reproduce("c run --runtimes 'tokio,tokio{a=1,b=2}'"),
            "cargo run --release -p compare -- run --runtimes 'tokio,tokio{a=1,b=2}'"
        );
    }
}
