//! Our binaries on other hosts, over ssh: the server on the `--remote`
//! host, the clients on the `--client-host` hosts. Nothing of them is
//! sampled or counted from here.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};

use super::mode::Mode;
use super::ours::{client_args, client_config, knobs, ready, server_args, tls_mismatch};
use super::{Place, Server};
use crate::child::{Child, Counting};
use crate::client_hosts;
use crate::remote;
use crate::repetition::{ClientMeasurement, Job, Measurement, RepetitionError};

/// One of our binaries on the hosts: the server on the first, the clients
/// on every one.
pub struct Hosts<'a> {
    pub hosts: &'a [remote::Ssh],
    pub bin: &'a Path,
}

impl Place for Hosts<'_> {
    fn server(&self, job: &Job, mode: Mode, _: Counting) -> Result<Server, RepetitionError> {
        let ssh = self.hosts.first().context("no host to run the server on")?;
        let deadline = Instant::now() + mode.ready_deadline();
        let args = ssh_server_args(ssh, self.bin, job)?;
        let counting = Counting::Off("the server runs on another host");
        let cpus = &job.placement.server_cpus;
        let process = Child::spawn("server", Path::new(&ssh.program), &args, cpus, counting)?;
        ready(process, deadline, Some(ssh.ip))
    }

    fn client(
        &self,
        job: &Job,
        server: &mut Server,
        _: Mode,
        _: Counting,
    ) -> Result<Measurement, RepetitionError> {
        hosted_clients(job, self.bin, self.hosts, server)
    }
}

/// The arguments of ssh that start `bin`'s server on the other host, bound
/// to the host's address; it stops when its stdin, which ssh forwards, closes.
fn ssh_server_args(ssh: &remote::Ssh, bin: &Path, job: &Job) -> Result<Vec<String>> {
    let name = bin.file_name().context("a binary has no file name")?;
    let remote_bin = ssh.bin_dir.join(name).to_string_lossy().into_owned();
    let mut remote = vec![remote_bin];
    remote.extend(server_args(job, SocketAddr::new(ssh.ip, 0)));
    Ok(ssh.args(&remote))
}

/// Our client on the `--client-host` hosts: what they measured, merged,
/// and each host's part. Nothing is sampled or counted from here.
fn hosted_clients(
    job: &Job,
    bin: &Path,
    hosts: &[remote::Ssh],
    server: &Server,
) -> Result<Measurement, RepetitionError> {
    let config = client_config(job, server.addr);
    let args = client_args(job, &config, server)?;
    let (result, parts) = client_hosts::run(hosts, bin, &args, &knobs(job.client), &config)?;
    if let Some(why) = result.impossible() {
        return Err(anyhow!("client's result cannot be a measurement: {why}").into());
    }
    if let Some(wrong) = tls_mismatch(job, result.tls.as_deref()) {
        return Err(anyhow!("client {wrong}").into());
    }
    Ok(Measurement {
        client: ClientMeasurement::Ours(Box::new(result)),
        server_usage: None,
        client_usage: None,
        server_cpus: server.cpus.clone(),
        server_cost: None,
        client_cost: None,
        cost_absent: Some("the clients run on other hosts".into()),
        counted: None,
        tcp: None,
        accept_queue: None,
        served: None,
        client_hosts: Some(parts),
    })
}
