//! Clients on several hosts (`--client-host`): a server namespace and two
//! client namespaces, each with its sshd, joined through a hub namespace
//! where compare runs; the second client's link to the server delayed.
//! The run starts the server on one host and a client on each of the
//! others, sums their throughput and merges their round trips: the merged
//! counts must be the hosts' together, and each host's figures must show
//! its own link. A client host that fails fails its cell, named, and the
//! other cells stand.
//!
//! Needs root (namespaces, sshd), so it is ignored unless asked for:
//! `scripts/test.sh` runs it where it runs as root.

use std::time::Duration;

use model::results::{Cell, Status};

use crate::common::{assert_hosted_cell_consistent, folder};
use crate::netns::{DelayLine, Keys, Namespace, Sshd, compare_in, compare_run};

/// Added to each direction of the second client's link.
const DELAY: Duration = Duration::from_millis(5);

/// The hub and the three hosts: host k at 10.202.k.2, the hub at
/// 10.202.k.1 on its link to it; the delayed path over 10.202.9.0/24.
struct Hosts {
    hub: Namespace,
    server: Namespace,
    near: Namespace,
    far: Namespace,
}

const SERVER: &str = "10.202.1.2";
const NEAR: &str = "10.202.2.2";
const FAR: &str = "10.202.3.2";
const TUN_HUB: &str = "10.202.9.1";
const TUN_FAR: &str = "10.202.9.2";

impl Hosts {
    fn new() -> Result<Self, String> {
        let hosts = Self {
            hub: Namespace::new("h")?,
            server: Namespace::new("s")?,
            near: Namespace::new("n")?,
            far: Namespace::new("f")?,
        };
        for (k, host) in [(1, &hosts.server), (2, &hosts.near), (3, &hosts.far)] {
            let hub = format!("10.202.{k}.1");
            let own = format!("10.202.{k}.2");
            hosts
                .hub
                .link(&format!("hub{k}"), &hub, host, "eth0", &own)?;
            host.run(&["ip", "route", "add", "default", "via", &hub])?;
        }
        hosts.hub.run(&["sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
        Ok(hosts)
    }

    /// The far client's way to the server: over the delay line, not its
    /// veth (which its sshd keeps).
    fn delay(&self) -> Result<DelayLine, String> {
        let line = DelayLine::new(&self.hub, TUN_HUB, &self.far, TUN_FAR, DELAY)?;
        let [_, far_end] = DelayLine::devices();
        let server_net = "10.202.1.0/24";
        self.far.run(&[
            "ip", "route", "add", server_net, "via", TUN_HUB, "dev", &far_end,
        ])?;
        Ok(line)
    }
}

#[test]
#[ignore = "needs root, for network namespaces and sshd: scripts/test.sh runs it as root"]
fn clients_on_two_hosts_sum_and_merge_and_a_failing_host_fails_its_cell() {
    let hosts = Hosts::new().unwrap_or_else(|why| panic!("cannot create the namespaces: {why}"));
    let _line = hosts
        .delay()
        .unwrap_or_else(|why| panic!("the delay line: {why}"));
    let keys = Keys::new("client-hosts-sshd").unwrap_or_else(|why| panic!("ssh keys: {why}"));
    let start = |ns: &Namespace, at: &str, extra: &str| {
        Sshd::start(&keys, ns, at, &hosts.hub, extra)
            .unwrap_or_else(|why| panic!("cannot start sshd at {at}: {why}"))
    };
    let _sshds = [
        start(&hosts.server, SERVER, ""),
        start(&hosts.near, NEAR, ""),
        // tokio's client aborts on the far host alone.
        start(
            &hosts.far,
            FAR,
            "SetEnv PINGPONG_FAULT=pingpong-tokio:client-abort-after=300\n",
        ),
    ];
    let ssh = format!("ssh -F {}", keys.client_config.display());
    let env = [("COMPARE_SSH_COMMAND", ssh.as_str())];
    let [server, near, far] = [SERVER, NEAR, FAR].map(|at| format!("ssh://root@{at}"));
    let mut args = vec![
        "--remote",
        &server,
        "--client-host",
        &near,
        "--client-host",
        &far,
    ];
    args.extend(["--threads", "1", "--connections", "4"]);

    let results = compare_in(
        Some(&hosts.hub),
        "client-hosts",
        &[&args[..], &["--runtimes", "mio"]].concat(),
        &env,
    );
    assert_eq!(results.config.client_hosts, [near.clone(), far.clone()]);
    let cell = &results.cells[0];
    assert_split_and_merged(cell, &near, &far);
    let report = std::fs::read_to_string(folder("client-hosts").join("report.md")).unwrap();
    assert!(
        report.contains("started over ssh on 2 hosts") && report.contains(&far),
        "{report}"
    );

    let test = "client-hosts-failing";
    let mut failing = args.clone();
    failing.extend(["--runtimes", "tokio,mio"]);
    let (output, out) = compare_run(Some(&hosts.hub), test, &failing, &env);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let results = model::results::Results::load(&out.join("results.json")).unwrap();
    let (tokio, mio) = (&results.cells[0], &results.cells[1]);
    assert_eq!(tokio.status, Status::Failed);
    let error = tokio.error.as_deref().unwrap_or_default();
    assert!(error.contains(&format!("client host {far}")), "{error}");
    assert_split_and_merged(mio, &near, &far);
}

/// `cell` ran 2 connections on each host; its figures are theirs summed
/// and merged, and each host's round trips are its link's.
fn assert_split_and_merged(cell: &Cell, near: &str, far: &str) {
    assert_hosted_cell_consistent(cell, 0.5);
    let run = &cell.runs[0];
    assert_eq!(run.verified_connections, Some(4));
    let hosts = run.client_hosts.as_ref().expect("each client host's part");
    let names: Vec<&str> = hosts.parts.iter().map(|p| p.host.as_str()).collect();
    assert_eq!(names, [near, far]);
    assert!(hosts.parts.iter().all(|p| p.connections == 2));
    assert_eq!(run.bytes, hosts.parts.iter().map(|p| p.bytes).sum::<u64>());
    let summed: f64 = hosts.parts.iter().map(|p| p.mib_per_s).sum();
    assert!(
        (run.mib_per_s - summed).abs() < 1e-6 * summed,
        "{} {summed}",
        run.mib_per_s
    );
    let rtt = run.rtt.as_ref().expect("merged round trips");
    let part = |i: usize| hosts.parts[i].rtt.as_ref().expect("a host's round trips");
    assert_eq!(
        rtt.count,
        part(0).count + part(1).count,
        "merged, not averaged"
    );
    let delay_us = DELAY.as_micros() as f64;
    assert!(part(0).p50_us < delay_us, "near p50 {} us", part(0).p50_us);
    assert!(
        part(1).p50_us >= 2.0 * delay_us,
        "far p50 {} us",
        part(1).p50_us
    );
    assert!(rtt.max_us >= part(1).max_us * 0.99, "{rtt:?}");
    // The near host moves far more round trips, so the median is its.
    assert!(rtt.p50_us < delay_us, "merged p50 {} us", rtt.p50_us);
    assert!(
        hosts.skew_seconds >= 0.0 && hosts.skew_seconds < 0.25,
        "{hosts:?}"
    );
    for p in &hosts.parts {
        let [opened, closed] = p.window;
        assert!(
            opened >= 0.1 && (closed - opened - 0.5).abs() < 0.05,
            "{p:?}"
        );
    }
    assert!(run.server_usage.is_none() && run.client_usage.is_none());
}
