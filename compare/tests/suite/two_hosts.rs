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
use std::process::{ChildStdout, Command, Stdio};
use std::time::Duration;

use model::results::{Cell, Remote, Results};
use serde_json::Value;

use crate::common::{assert_remote_cell_consistent, bin_dir, folder};
use crate::netns::{DelayLine, Keys, Namespace, Sshd, compare_in};

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
            let _line =
                DelayLine::new(&net.a, TUN_A, &net.b, TUN_B, DELAY).expect("the delay line");
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

    let keys = Keys::new("two-hosts-sshd").unwrap_or_else(|why| panic!("ssh keys: {why}"));
    let sshd = Sshd::start(&keys, &net.b, net.veth_b, &net.a, "")
        .unwrap_or_else(|why| panic!("cannot start sshd: {why}"));
    over_ssh(&net, &keys, &sshd);
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
        .args(["netns", "exec", &net.b.name, bin.to_str().unwrap()])
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
fn over_ssh(net: &Net, keys: &Keys, sshd: &Sshd) {
    let url = format!("ssh://root@{}", net.veth_b);
    let ssh = format!("ssh -F {}", keys.client_config.display());
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
        .args(["netns", "pids", &net.b.name])
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

fn ready_line(stdout: ChildStdout) -> Value {
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

/// Two namespaces, a and b, joined by a veth pair; removed when dropped.
struct Net {
    a: Namespace,
    b: Namespace,
    veth_b: &'static str,
}

const VETH_A: &str = "10.201.0.1";
const TUN_A: &str = "10.201.1.1";
const TUN_B: &str = "10.201.1.2";

impl Net {
    fn new() -> Result<Self, String> {
        let (a, b) = (Namespace::new("a")?, Namespace::new("b")?);
        let veth_b = "10.201.0.2";
        a.link("pp0", VETH_A, &b, "pp1", veth_b)?;
        Ok(Self { a, b, veth_b })
    }

    /// `delay` on both ends of the veth link.
    fn netem(&self, delay: Duration) -> Result<(), String> {
        let delay = format!("{}ms", delay.as_millis());
        for (ns, dev) in [(&self.a, "pp0"), (&self.b, "pp1")] {
            ns.run(&[
                "tc", "qdisc", "add", "dev", dev, "root", "netem", "delay", &delay,
            ])?;
        }
        Ok(())
    }
}
