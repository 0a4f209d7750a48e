//! Servers on another host: one already running (`--server HOST:PORT`), or
//! one started there over ssh for every repetition (`--remote ssh://HOST`);
//! and clients on other hosts, started over ssh (`--client-host`).

use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use url::{Host as UrlHost, Url};

use model::results::{Host, Remote};
use model::shell::shell_words;

/// The environment variable that replaces `ssh` (with options), as
/// GIT_SSH_COMMAND does for git: `ssh -F ./ssh_config`, say.
pub const SSH_COMMAND: &str = "COMPARE_SSH_COMMAND";

/// Where the server of every repetition runs.
pub enum ServerAt {
    /// Here, started and stopped by each repetition.
    Local,
    /// On another host, started and stopped over ssh by each repetition.
    Ssh(Ssh),
    /// Already running at this address, started by hand.
    Given(SocketAddr),
}

/// A host reached over ssh, where the same binaries lie in `bin_dir`.
pub struct Ssh {
    /// As given: `ssh://[USER@]HOST[:PORT]`.
    pub url: String,
    /// The ssh program and its options (`COMPARE_SSH_COMMAND`, else `ssh`).
    pub program: String,
    pub options: Vec<String>,
    /// `[USER@]HOST`, and the port when given.
    pub destination: String,
    pub port: Option<u16>,
    /// The host's address, as resolved here: the server binds it, the client connects to it.
    pub ip: IpAddr,
    /// Where the `pingpong-<name>` binaries lie on that host.
    pub bin_dir: PathBuf,
}

/// The record of `--server` or `--remote` and `--remote-bin-dir`.
pub fn record(
    server: Option<&str>,
    remote: Option<&str>,
    bin_dir: Option<&Path>,
) -> Option<Remote> {
    match (server, remote) {
        (Some(address), _) => Some(Remote::Given {
            address: address.into(),
        }),
        (None, Some(url)) => Some(Remote::Ssh {
            url: url.into(),
            bin_dir: bin_dir.map(|d| d.to_string_lossy().into_owned()),
        }),
        (None, None) => None,
    }
}

/// Where the servers of a run go, checked: a given server must accept a
/// connection now; an ssh host must answer, and is described. Without
/// --remote-bin-dir, the binaries lie in `local_bins` there as here.
pub fn server_at(remote: Option<&Remote>, local_bins: &Path) -> Result<(ServerAt, Option<Host>)> {
    match remote {
        None => Ok((ServerAt::Local, None)),
        Some(Remote::Given { address }) => {
            let addr = resolve(address)?;
            TcpStream::connect_timeout(&addr, Duration::from_secs(5)).with_context(|| {
                format!(
                    "--server {address}: nothing accepts connections at {addr}; start the \
                     server there first (pingpong-<name> server --bind ADDR --threads N --block B)"
                )
            })?;
            Ok((ServerAt::Given(addr), None))
        }
        Some(Remote::Ssh { url, bin_dir }) => {
            let bin_dir = bin_dir
                .as_ref()
                .map_or(local_bins.to_path_buf(), PathBuf::from);
            let ssh = Ssh::parse("--remote", url, bin_dir)?;
            let host = ssh.describe()?;
            Ok((ServerAt::Ssh(ssh), Some(host)))
        }
    }
}

/// The hosts of `--client-host`, each checked to answer over ssh; their
/// binaries lie where the `--remote` host's do (`--remote-bin-dir`), else
/// in `local_bins` as here.
pub fn client_hosts(
    urls: &[String],
    remote: Option<&Remote>,
    local_bins: &Path,
) -> Result<Vec<Ssh>> {
    let bin_dir = match remote {
        Some(Remote::Ssh {
            bin_dir: Some(dir), ..
        }) => PathBuf::from(dir),
        _ => local_bins.to_path_buf(),
    };
    urls.iter()
        .map(|url| {
            let ssh = Ssh::parse("--client-host", url, bin_dir.clone())?;
            ssh.describe()?;
            Ok(ssh)
        })
        .collect()
}

fn resolve(address: &str) -> Result<SocketAddr> {
    address
        .to_socket_addrs()
        .with_context(|| format!("--server {address}: expected HOST:PORT"))?
        .next()
        .with_context(|| format!("--server {address}: the host has no address"))
}

impl Ssh {
    /// Parses `ssh://[USER@]HOST[:PORT]`, given to `option`.
    fn parse(option: &str, url: &str, bin_dir: PathBuf) -> Result<Self> {
        let expected = || format!("{option} {url:?}: expected ssh://[USER@]HOST[:PORT]");
        let parsed = Url::parse(url).with_context(expected)?;
        ensure!(parsed.scheme() == "ssh", expected());
        // ssh takes an IPv6 address without the URL's brackets.
        let host = match parsed.host() {
            Some(UrlHost::Domain(name)) => name.to_string(),
            Some(UrlHost::Ipv4(ip)) => ip.to_string(),
            Some(UrlHost::Ipv6(ip)) => ip.to_string(),
            None => bail!("{option} {url:?} names no host"),
        };
        ensure!(!host.is_empty(), "{option} {url:?} names no host");
        let ip = (host.as_str(), 0)
            .to_socket_addrs()
            .with_context(|| format!("{option} {url:?}: cannot resolve {host}"))?
            .next()
            .with_context(|| format!("{option} {url:?}: {host} has no address"))?
            .ip();
        let destination = match parsed.username() {
            "" => host,
            user => format!("{user}@{host}"),
        };
        let port = parsed.port();
        let command = std::env::var(SSH_COMMAND).unwrap_or_else(|_| "ssh".into());
        let mut words = shlex::split(&command)
            .filter(|w| !w.is_empty())
            .with_context(|| format!("{SSH_COMMAND} {command:?} is not a command line"))?;
        let program = words.remove(0);
        Ok(Self {
            url: url.into(),
            program,
            options: words,
            destination,
            port,
            ip,
            bin_dir,
        })
    }

    /// ssh's arguments that run `words` there, quoted for the remote shell.
    pub fn args(&self, words: &[String]) -> Vec<String> {
        let mut args = self.options.clone();
        args.extend(["-o".into(), "BatchMode=yes".into()]);
        if let Some(port) = self.port {
            args.extend(["-p".into(), port.to_string()]);
        }
        args.extend([self.destination.clone(), "--".into()]);
        args.push(shell_words(words.iter().map(String::as_str)));
        args
    }

    /// The other host, as it describes itself; fails when ssh cannot reach it.
    fn describe(&self) -> Result<Host> {
        let script = "uname -n; uname -r; nproc; \
                      sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1; \
                      sed -n 's/^MemTotal: *\\([0-9]*\\) kB/\\1/p' /proc/meminfo";
        let out = Command::new(&self.program)
            .args(self.args(&["sh".into(), "-c".into(), script.into()]))
            .output()
            .with_context(|| format!("starting {}", self.program))?;
        if !out.status.success() {
            bail!(
                "{}: {} {} failed ({}): {}",
                self.url,
                self.program,
                self.destination,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let line = |i: usize| {
            lines
                .get(i)
                .filter(|l| !l.is_empty())
                .map(|l| l.to_string())
        };
        Ok(Host {
            name: line(0),
            kernel: line(1),
            logical_cpus: line(2).and_then(|n| n.parse().ok()),
            cpu_model: line(3),
            memory_kib: line(4).and_then(|n| n.parse().ok()),
            ..Host::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_urls_give_destination_and_port() {
        let ssh = Ssh::parse("--remote", "ssh://bench@127.0.0.1:2222", "/opt/bin".into()).unwrap();
        assert_eq!(
            (ssh.destination.as_str(), ssh.port, ssh.ip.to_string()),
            ("bench@127.0.0.1", Some(2222), "127.0.0.1".into())
        );
        let ssh = Ssh::parse("--remote", "ssh://[::1]", "/opt/bin".into()).unwrap();
        assert_eq!((ssh.port, ssh.ip.to_string()), (None, "::1".into()));
        let args = ssh.args(&["/opt/my bin/x".into(), "server".into()]);
        assert_eq!(args[args.len() - 1], "'/opt/my bin/x' server");
        for bad in ["http://host", "ssh://", "ssh://host:port"] {
            assert!(
                Ssh::parse("--client-host", bad, "/".into()).is_err(),
                "{bad}"
            );
        }
    }
}
