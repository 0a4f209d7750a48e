//! Two hosts: network namespaces joined by a veth pair, the client in one,
//! the server in the other; a server started by hand (`--server`), one
//! started over ssh (`--remote`), and a link with added delay, where the
//! round trip must rise by twice the delay and the throughput fall to what
//! the delay allows (block / round trip per connection).
//!
//! Needs root (namespaces, sshd), so it is ignored unless asked for:
//! `scripts/test.sh` runs it where it runs as root, and there it fails, with
//! the reason, where it cannot make them.
//! The delay is `tc netem` where the kernel has it; where it has not
//! (CONFIG_NET_SCH_NETEM unset, as on the machine this suite was written
//! on), a delay line in this test forwards the link's packets between two
//! tun devices after the same delay.

use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use compare::results::{Cell, Remote, Results};
use serde_json::Value;

use crate::common::{
    self, assert_ok, assert_remote_cell_consistent, bin_dir, compare_with, folder, load, out_dir,
};

/// Added to each direction of the delayed link.
const DELAY: Duration = Duration::from_millis(5);
const BLOCK: f64 = 16384.0;

#[test]
#[ignore = "needs root, for network namespaces and sshd: scripts/test.sh runs it as root"]
fn two_hosts_with_and_without_delay() {
    let net = Net::new().unwrap_or_else(|why| panic!("cannot create network namespaces: {why}"));
    // The binaries, built before a server is started by hand.
    compare_in(
        None,
        "two-hosts-build",
        &["--runtimes", "mio", "--connections", "1"],
        &[],
    );

    let near = by_hand(&net, net.veth_b, "two-hosts-near");
    eprintln!("two_hosts: veth, no delay: {}", figures(&near));

    let (far, how) = match net.netem(DELAY) {
        Ok(()) => (by_hand(&net, net.veth_b, "two-hosts-far"), "tc netem"),
        Err(why) => {
            eprintln!(
                "two_hosts: tc netem unavailable ({why}); a delay line over tun devices instead"
            );
            let _line = DelayLine::new(&net, DELAY).expect("the delay line");
            (by_hand(&net, TUN_B, "two-hosts-far"), "a delay line")
        }
    };
    eprintln!(
        "two_hosts: {} ms each way by {how}: {}",
        DELAY.as_millis(),
        figures(&far)
    );
    for (near, far) in near.cells.iter().zip(&far.cells) {
        assert_delay_shows(near, far);
    }

    let sshd = Sshd::start(&net).unwrap_or_else(|why| panic!("cannot start sshd: {why}"));
    over_ssh(&net, &sshd);
}

/// The round trip rose by at least twice the delay; the throughput is
/// what `connections` blocks per round trip allow, and below the near one.
fn assert_delay_shows(near: &Cell, far: &Cell) {
    assert_remote_cell_consistent(far, 0.5);
    let connections = far.connections as f64;
    let run = &far.runs[0];
    let rtt = run.rtt.as_ref().unwrap();
    let (p50, mean) = (rtt.p50_us, rtt.mean_us);
    assert!(p50 >= 2.0 * DELAY.as_micros() as f64, "p50 {p50} us");
    let mib = run.mib_per_s;
    let bound = connections * BLOCK / (2.0 * DELAY.as_secs_f64()) / 1048576.0;
    // One block per connection may straddle the window's end.
    let slack = 1.0 + 2.0 * DELAY.as_secs_f64() / 0.5;
    assert!(mib <= bound * slack, "{mib} MiB/s above the bound {bound}");
    let little = connections * BLOCK / (mean / 1e6) / 1048576.0;
    assert!(
        (mib / little - 1.0).abs() < 0.2,
        "{mib} MiB/s, but {connections} blocks per {mean} us round trip give {little}"
    );
    assert!(mib < near.mib_per_s.unwrap().median);
}

/// `pingpong-mio server --until-killed` in namespace b at `ip`, started by
/// hand in the background, and `compare run --server` from namespace a.
fn by_hand(net: &Net, ip: &str, test: &str) -> Results {
    let bin = bin_dir().join("pingpong-mio");
    let mut server = Command::new("ip")
        .args(["netns", "exec", &net.b, bin.to_str().unwrap()])
        .args(["server", "--bind", &format!("{ip}:0"), "--threads", "1"])
        .arg("--until-killed")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the server in namespace b");
    let ready = ready_line(server.stdout.take().unwrap());
    let port = ready["ready"]["addr"]
        .as_str()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let address = format!("{ip}:{port}");
    let results = compare_in(
        Some(&net.a),
        test,
        &[
            "--server",
            &address,
            "--runtimes",
            "mio",
            "--connections",
            "1,10",
        ],
        &[],
    );
    // Still serving after every run, until killed (ip netns exec execs it: same pid).
    assert!(
        server.try_wait().unwrap().is_none(),
        "the server stopped on its own"
    );
    // SAFETY: a signal to our own child, not yet waited for.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    server.wait().unwrap();
    assert_eq!(results.config.remote, Some(Remote::Given { address }));
    results
}

/// `compare run --remote ssh://HOST`: every server started over ssh.
fn over_ssh(net: &Net, sshd: &Sshd) {
    let url = format!("ssh://root@{}", net.veth_b);
    let ssh = format!("ssh -F {}", sshd.client_config.display());
    let results = compare_in(
        Some(&net.a),
        "two-hosts-ssh",
        &[
            "--remote",
            &url,
            "--runtimes",
            "mio,tokio",
            "--connections",
            "1,10",
            // UDP too: its sockets bound and connected across the veth pair.
            "--protocol",
            "tcp,udp",
        ],
        &[("COMPARE_SSH_COMMAND", &ssh)],
    );
    assert!(
        matches!(&results.config.remote, Some(Remote::Ssh { url: u, .. }) if *u == url),
        "{:?}",
        results.config.remote
    );
    let host = results.server_host.as_ref().expect("the server's host");
    assert!(host.logical_cpus.unwrap() >= 1, "{host:?}");
    assert!(host.name.is_some(), "{host:?}");
    assert_eq!(results.cells.len(), 8);
    for cell in &results.cells {
        assert_remote_cell_consistent(cell, 0.5);
        let run = &cell.runs[0];
        assert_eq!(
            run.datagrams.is_some(),
            cell.protocol == pingpong::protocol::Protocol::Udp
        );
        // Its own affinity, as its ready line said; its usage is not measured from here.
        assert!(!run.server_cpus.is_empty());
        assert!(run.server_usage.is_none());
        assert!(run.client_usage.unwrap().cpu_percent > 0.0);
    }
    eprintln!("two_hosts: over ssh: {}", figures(&results));
    let report = std::fs::read_to_string(folder("two-hosts-ssh").join("report.md")).unwrap();
    assert!(
        report.contains(&format!("- Servers: started over ssh at {url}, on ")),
        "{report}"
    );
    // Nothing left running in namespace b but sshd.
    let left = Command::new("ip")
        .args(["netns", "pids", &net.b])
        .output()
        .unwrap();
    let pids: Vec<String> = String::from_utf8_lossy(&left.stdout)
        .split_whitespace()
        .filter(|pid| *pid != sshd.child.id().to_string())
        .map(|pid| std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .filter(|cmd| cmd.contains("pingpong-"))
        .collect();
    assert!(pids.is_empty(), "left running: {pids:?}");
}

/// Each cell's MiB/s and p50, for the log.
fn figures(results: &Results) -> String {
    results
        .cells
        .iter()
        .map(|c| {
            format!(
                "{} {} conn {:.1} MiB/s p50 {:.0} us",
                c.implementation,
                c.connections,
                c.mib_per_s.map_or(f64::NAN, |s| s.median),
                c.runs
                    .first()
                    .and_then(|r| r.rtt.as_ref())
                    .map_or(f64::NAN, |r| r.p50_us)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `compare run ARGS` in namespace `ns` (or here), 0.5 s windows.
fn compare_in(ns: Option<&str>, test: &str, args: &[&str], env: &[(&str, &str)]) -> Results {
    let out = out_dir(test);
    let compare = env!("CARGO_BIN_EXE_compare");
    let mut all: Vec<&str> = match ns {
        Some(ns) => vec!["netns", "exec", ns, compare],
        None => vec![compare],
    };
    all.extend(["run", "--out", out.to_str().unwrap(), "--quiet"]);
    all.extend(args);
    all.extend(["--seconds", "0.5", "--warmup", "0.1", "--repeat", "1"]);
    let output = if ns.is_some() {
        Command::new("ip")
            .args(&all)
            .env(compare::defaults::PROFILE_ENV, common::PROFILE)
            .envs(env.iter().copied())
            .output()
            .unwrap()
    } else {
        compare_with(&all[1..], env)
    };
    assert_ok(&output, &all);
    load(&out)
}

fn ready_line(stdout: ChildStdout) -> Value {
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Two namespaces, a and b, joined by a veth pair; removed when dropped.
struct Net {
    a: String,
    b: String,
    veth_b: &'static str,
}

const VETH_A: &str = "10.201.0.1";
const TUN_A: &str = "10.201.1.1";
const TUN_B: &str = "10.201.1.2";

impl Net {
    fn new() -> Result<Self, String> {
        let id = std::process::id();
        let (a, b) = (format!("pp{id}a"), format!("pp{id}b"));
        ip(&["netns", "add", &a])?;
        let net = Self {
            a,
            b,
            veth_b: "10.201.0.2",
        };
        ip(&["netns", "add", &net.b])?;
        ip(&[
            "link", "add", "pp0", "netns", &net.a, "type", "veth", "peer", "name", "pp1", "netns",
            &net.b,
        ])?;
        for (ns, dev, addr) in [(&net.a, "pp0", VETH_A), (&net.b, "pp1", net.veth_b)] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(net)
    }

    /// `delay` on both ends of the veth link.
    fn netem(&self, delay: Duration) -> Result<(), String> {
        for (ns, dev) in [(&self.a, "pp0"), (&self.b, "pp1")] {
            let out = Command::new("ip")
                .args([
                    "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "netem",
                ])
                .args(["delay", &format!("{}ms", delay.as_millis())])
                .output()
                .map_err(|e| format!("tc: {e}"))?;
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
            }
        }
        Ok(())
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.a]);
        let _ = ip(&["netns", "del", &self.b]);
    }
}

/// A second link between the namespaces, tun devices whose packets this
/// process forwards after `delay`: netem's job, in user space.
struct DelayLine {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl DelayLine {
    fn new(net: &Net, delay: Duration) -> Result<Self, String> {
        let a = Arc::new(tun("pptun0")?);
        let b = Arc::new(tun("pptun1")?);
        for (ns, dev, addr) in [(&net.a, "pptun0", TUN_A), (&net.b, "pptun1", TUN_B)] {
            ip(&["link", "set", dev, "netns", ns])?;
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for (from, to) in [(a.clone(), b.clone()), (b, a)] {
            let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
            let stop_reading = stop.clone();
            threads.push(thread::spawn(move || {
                forward_reads(&from, &tx, delay, &stop_reading)
            }));
            threads.push(thread::spawn(move || {
                for (due, packet) in rx {
                    thread::sleep(due.saturating_duration_since(Instant::now()));
                    // SAFETY: writes one whole packet from a live buffer to an open tun fd.
                    unsafe { libc::write(to.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
                }
            }));
        }
        Ok(Self { stop, threads })
    }
}

/// Reads packets until stopped, each sent on with the time it is due.
fn forward_reads(
    from: &OwnedFd,
    tx: &mpsc::Sender<(Instant, Vec<u8>)>,
    delay: Duration,
    stop: &AtomicBool,
) {
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let mut poll = libc::pollfd {
            fd: from.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, alive for the call.
        if unsafe { libc::poll(&mut poll, 1, 100) } <= 0 {
            continue;
        }
        // SAFETY: reads into a buffer of the length given.
        let n = unsafe { libc::read(from.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0
            && tx
                .send((Instant::now() + delay, buf[..n as usize].to_vec()))
                .is_err()
        {
            return;
        }
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A tun device (IP packets, no header), open in this process.
fn tun(name: &str) -> Result<OwnedFd, String> {
    // SAFETY: opens a device file; the fd is owned at once.
    let fd = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR) };
    if fd < 0 {
        return Err(format!("/dev/net/tun: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: fd was just opened and is owned by no one else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut ifr = [0u8; 40];
    ifr[..name.len()].copy_from_slice(name.as_bytes());
    let flags = (libc::IFF_TUN | libc::IFF_NO_PI) as u16;
    ifr[16..18].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: TUNSETIFF reads and writes a struct ifreq, which the 40 bytes hold.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, ifr.as_mut_ptr()) } < 0 {
        return Err(format!(
            "TUNSETIFF {name}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(fd)
}

/// sshd in namespace b, with keys of its own; stopped when dropped.
struct Sshd {
    child: Child,
    client_config: PathBuf,
}

impl Sshd {
    fn start(net: &Net) -> Result<Self, String> {
        let sshd = Path::new("/usr/sbin/sshd");
        if !sshd.is_file() {
            return Err(
                "no /usr/sbin/sshd (Debian's openssh-server; scripts/test.sh installs it)".into(),
            );
        }
        let dir = out_dir("two-hosts-sshd");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        std::fs::create_dir_all("/run/sshd").map_err(|e| format!("/run/sshd: {e}"))?;
        for key in ["host_key", "client_key"] {
            let out = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(key))
                .output()
                .map_err(|e| format!("ssh-keygen: {e}"))?;
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).into());
            }
        }
        std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys"))
            .map_err(|e| e.to_string())?;
        let d = dir.display();
        let server_config = dir.join("sshd_config");
        std::fs::write(
            &server_config,
            format!(
                "ListenAddress {}\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n",
                net.veth_b
            ),
        )
        .map_err(|e| e.to_string())?;
        let client_config = dir.join("ssh_config");
        std::fs::write(
            &client_config,
            format!(
                "Host *\n  IdentityFile {d}/client_key\n  StrictHostKeyChecking no\n  \
                 UserKnownHostsFile /dev/null\n  LogLevel ERROR\n  ConnectTimeout 5\n"
            ),
        )
        .map_err(|e| e.to_string())?;
        let child = Command::new("ip")
            .args(["netns", "exec", &net.b])
            .arg(sshd)
            .args(["-D", "-e", "-f"])
            .arg(&server_config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting sshd: {e}"))?;
        let sshd = Self {
            child,
            client_config,
        };
        // Up when a login works, within 10 s.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ok = Command::new("ip")
                .args(["netns", "exec", &net.a, "ssh", "-F"])
                .arg(&sshd.client_config)
                .args([&format!("root@{}", net.veth_b), "true"])
                .output()
                .map_err(|e| format!("ssh: {e}"))?;
            if ok.status.success() {
                return Ok(sshd);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "sshd did not let us in: {}",
                    String::from_utf8_lossy(&ok.stderr).trim()
                ));
            }
            thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
