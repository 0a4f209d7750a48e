//! What our binaries are told and what they tell back, wherever they run:
//! their arguments, the server's ready line, the client's result checked
//! against the load asked.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use anyhow::{Result, anyhow};
use pingpong::cli::{Cli, ClientArgs, Command, ServerArgs, Sizes};
use pingpong::client::ClientConfig;
use pingpong::wire::{ClientResult, Line};

use super::Server;
use crate::child::Child;
use crate::repetition::{Job, RepetitionError, Side};
use model::matrix::Tls;
use model::program::Program;

/// The sizes both of our binaries take, with the threads of `side`.
pub(super) fn sizes(job: &Job, side: Side) -> Sizes {
    Sizes {
        protocol: job.workload.protocol,
        threads: threads(job, side) as u32,
        block: job.workload.block as u32,
        window: job.workload.window as u32,
    }
}

/// A configuration's settings, if `program` has any, for `--knobs`.
pub(super) fn knobs(program: &Program) -> String {
    match program {
        Program::Binary { knobs, .. } => knobs.to_arg(),
        _ => String::new(),
    }
}

/// The threads `side` runs: the client's may differ (`--client-threads`).
pub(super) fn threads(job: &Job, side: Side) -> usize {
    match side {
        Side::Server => job.load.threads,
        Side::Client => job.load.client_threads(),
    }
}

/// The arguments of our server bound to `bind`.
pub(super) fn server_args(job: &Job, bind: SocketAddr) -> Vec<String> {
    let server = ServerArgs {
        bind,
        sizes: sizes(job, Side::Server),
        work: job.work,
        shape: job.workload.shape,
        until_killed: false,
        tls: job.workload.tls.is_some(),
        tls_resumption: job.workload.tls == Some(Tls::Resumption),
    };
    Cli {
        command: Command::Server(server),
        knobs: knobs(job.server),
    }
    .to_args()
}

/// The server as its ready line says, at `host` when it runs on another one.
pub(super) fn ready(
    mut process: Child,
    deadline: Instant,
    host: Option<IpAddr>,
) -> Result<Server, RepetitionError> {
    let ready = match process.next_line(deadline, "server start", Line::parse)? {
        Line::Ready(ready) => ready,
        Line::Error(f) => return Err(RepetitionError::of_failure(Side::Server, f)),
        other => {
            return Err(anyhow!("server printed {other:?} instead of its ready line").into());
        }
    };
    let (addr, pid) = match host {
        Some(ip) => (SocketAddr::new(ip, ready.addr.port()), None),
        None => (ready.addr, Some(process.id())),
    };
    Ok(Server {
        process: Some(process),
        pid,
        addr,
        cpus: ready.cpus,
        certificate: ready.tls_certificate,
    })
}

/// The client's settings, for the deadlines it keeps itself.
pub(super) fn client_config(job: &Job, connect: SocketAddr) -> ClientConfig {
    ClientConfig {
        protocol: job.workload.protocol,
        connect,
        threads: job.load.client_threads(),
        connections: job.load.connections,
        block: job.workload.block,
        window: job.workload.window,
        warmup: job.warmup,
        seconds: job.seconds,
        latency: job.latency,
        blocks: None,
        arrival: job.arrival,
        churn: job.workload.churn,
        rate: job.rate,
        tls: None,
        knobs: Default::default(),
        start_signal: false,
    }
}

/// Our client's arguments for `config`, against `server`.
pub(super) fn client_args(job: &Job, config: &ClientConfig, server: &Server) -> Result<ClientArgs> {
    let tls_trust = match job.workload.tls {
        None => None,
        Some(_) => Some(server.certificate.clone().ok_or_else(|| {
            anyhow!("the server's ready line carries no certificate for the client to trust")
        })?),
    };
    Ok(ClientArgs {
        connect: server.addr,
        sizes: sizes(job, Side::Client),
        connections: job.load.connections as u32,
        warmup: config.warmup.as_secs_f64(),
        seconds: config.seconds.as_secs_f64(),
        blocks: config.blocks,
        no_latency: !config.latency,
        arrival: config.arrival,
        churn: config.churn,
        rate: config.rate,
        tls_trust,
        tls_resumption: job.workload.tls == Some(Tls::Resumption),
        // Lingering, it is still alive (not a zombie) when sampled at the window's end.
        linger: true,
        start_signal: false,
    })
}

/// Refuses a client's result that is not of the load asked, or cannot be
/// a measurement.
pub(super) fn check_result(job: &Job, result: &ClientResult) -> Result<(), RepetitionError> {
    let asked = (
        job.load.client_threads(),
        job.load.connections,
        job.workload.block,
    );
    if (result.threads, result.connections, result.block) != asked {
        return Err(anyhow!(
            "client ran {} threads, {} connections, block {} instead of what it was asked",
            result.threads,
            result.connections,
            result.block
        )
        .into());
    }
    if let Some(why) = result.impossible() {
        return Err(anyhow!("client's result cannot be a measurement: {why}").into());
    }
    if let Some(wrong) = tls_mismatch(job, result.tls.as_deref()) {
        return Err(anyhow!("client {wrong}").into());
    }
    Ok(())
}

/// How the client's TLS differs from what the workload asked, if it does:
/// another version, suite, group or provider than this compare's.
pub(super) fn tls_mismatch(job: &Job, got: Option<&pingpong::wire::Tls>) -> Option<String> {
    use pingpong::tls::{GROUP, PROVIDER, SUITE, VERSION};
    match (job.workload.tls, got) {
        (None, None) => None,
        (None, Some(_)) => Some("ran TLS where plain TCP was asked".into()),
        (Some(_), None) => Some("ran plain TCP where TLS was asked".into()),
        (Some(tls), Some(got)) => {
            let negotiated =
                [&got.version, &got.suite, &got.group, &got.provider].map(|s| s.as_str());
            let expected = [VERSION, SUITE, GROUP, PROVIDER];
            if negotiated != expected {
                Some(format!("used {negotiated:?} instead of {expected:?}"))
            } else if got.resumption != (tls == Tls::Resumption) {
                Some(format!(
                    "had resumption {} where {} was asked",
                    got.resumption,
                    tls.label()
                ))
            } else {
                None
            }
        }
    }
}
