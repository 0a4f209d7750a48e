//! The real [`Measure`](crate::repetition::Measure): what a pair of
//! processes measures, a server and a client, each started where its
//! [`Place`] says, each stage within a deadline: the timed window (the
//! client's result line, both processes sampled at its edges), each side's
//! instructions counted under callgrind, or its stacks counted or sampled.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use pingpong::client::Arrival;
use pingpong::protocol::Protocol;
use pingpong::wire::Line;

use crate::accept_queue::Sampler;
use crate::callgrind::{self, Callgrind};
use crate::child::{Child, Counting};
use crate::counters::Counters;
use crate::perf::Perf;
use crate::place::external;
use crate::place::here::Here;
use crate::place::mode::{Mode, Profiler, Span};
use crate::place::ssh::Hosts;
use crate::place::{Given, Place};
use crate::remote::{ServerAt, Ssh};
use crate::repetition::{ClientMeasurement, Job, Measure, Measurement, RepetitionError, Side};
use crate::tcp_stats;
use model::program::Program;
use model::results::{Counted, TcpStats};

/// Runs each repetition's processes, the server where `server_at` says; with
/// `counted`, also counts each side's instructions for that many blocks.
pub struct ProcessPair {
    server_at: ServerAt,
    /// `--client-host`: where the clients run, if not here.
    client_hosts: Vec<Ssh>,
    counted: Option<(u64, Result<Callgrind, String>)>,
    /// Held while repetitions are counted, so that each process's counters
    /// open quickly; dropped before a timed one, since while it is held
    /// every system call on the machine takes the kernel's slow path.
    warm: Option<Counters>,
}

/// Why an io_uring runtime is not counted under callgrind: seen here with
/// valgrind 3.19, a thread waiting in io_uring_enter keeps valgrind's lock
/// (one thread runs at a time), so the process's other threads never run.
const UNDER_VALGRIND: &str = "io_uring under valgrind: a thread waiting in io_uring_enter holds \
     valgrind's one-thread-at-a-time lock and the others never run";

/// Why the kernel does not count a run counted by call stack: callgrind
/// counts its system calls, function by function.
const STACKS: &str = "callgrind counts the system calls, by function";

/// Why the kernel does not count a sampled run: perf counts its system
/// calls, by name.
const SAMPLED: &str = "perf counts the system calls, by name";

/// Why a timed window's processes are not counted.
const TIMED: &str = "a timed window is not counted: counting slows every system call";

impl ProcessPair {
    pub fn new(server_at: ServerAt, client_hosts: Vec<Ssh>, counted: Option<u64>) -> Self {
        Self {
            server_at,
            client_hosts,
            counted: counted.map(|blocks| (blocks, Callgrind::find())),
            warm: None,
        }
    }

    /// Holds the tracepoints on while counting, and off otherwise.
    fn counting(&mut self, on: bool) {
        match on {
            true if self.warm.is_none() => self.warm = Counters::warm().ok(),
            true => {}
            false => self.warm = None,
        }
    }
}

/// A profiled pair's file, and the blocks its client round-tripped.
pub struct Profile {
    pub file: PathBuf,
    pub blocks: f64,
}

impl Measure for ProcessPair {
    fn measure(&mut self, job: &Job) -> Result<Measurement, RepetitionError> {
        if let Some(unavailable) = unsupported(job, &self.server_at, !self.client_hosts.is_empty())
        {
            return Err(unavailable);
        }
        self.counting(job.counting);
        let mut measured = self.pair(job, Mode::Timed)?;
        measured.counted = match self.counted.clone() {
            None => None,
            Some((_, Err(why))) => Some(Err(why)),
            Some((blocks, Ok(callgrind))) => {
                self.counting(true);
                let counted = self.count(job, blocks, &callgrind);
                self.counting(job.counting);
                Some(counted)
            }
        };
        Ok(measured)
    }
}

impl ProcessPair {
    /// Each side's user-space instructions per block: the difference between
    /// counts of `blocks` and of twice as many blocks per connection (so
    /// that starting and stopping cancel out), over as many blocks; and each
    /// side's system calls per block, counted while the other ran under callgrind.
    fn count(&self, job: &Job, blocks: u64, callgrind: &Callgrind) -> Result<Counted, String> {
        let (
            Program::Binary {
                adapter: server, ..
            },
            Program::Binary {
                adapter: client, ..
            },
        ) = (job.server, job.client)
        else {
            return Err("an external program is not counted".into());
        };
        if let Some(adapter) = [server, client].into_iter().find(|a| a.io_uring) {
            return Err(format!("{}: {UNDER_VALGRIND}", adapter.name));
        }
        if !matches!(self.server_at, ServerAt::Local) {
            return Err("the server runs elsewhere: not counted".into());
        }
        let dir = tempfile::tempdir().map_err(|e| format!("a folder for callgrind: {e}"))?;
        let all = (blocks * job.load.connections as u64) as f64;
        let mut instructions = [0.0; 2];
        let mut syscalls = [None; 2];
        for (i, under) in [Side::Server, Side::Client].into_iter().enumerate() {
            let mut totals = [0u64; 2];
            for (k, n) in [blocks, 2 * blocks].into_iter().enumerate() {
                let out = dir.path().join(format!("{under}-{n}"));
                let mode = Mode::Counted {
                    span: Span::Blocks(n),
                    under,
                    profiler: Profiler::Callgrind {
                        callgrind,
                        stacks: false,
                    },
                    out: &out,
                };
                let measured = self
                    .pair(job, mode)
                    .map_err(|e| format!("with the {under} under callgrind: {e}"))?;
                totals[k] = callgrind::total(&out)?;
                let other = [measured.server_cost, measured.client_cost][1 - i];
                if let (1, Some(cost), ClientMeasurement::Ours(result)) =
                    (k, other, &measured.client)
                {
                    let done = result.bytes as f64 / job.workload.block as f64;
                    syscalls[1 - i] = Some(cost.syscalls as f64 / done);
                }
            }
            instructions[i] = totals[1].saturating_sub(totals[0]) as f64 / all;
        }
        Ok(Counted {
            blocks,
            server_instructions: instructions[0],
            client_instructions: instructions[1],
            server_syscalls: syscalls[0],
            client_syscalls: syscalls[1],
        })
    }

    /// `job`'s `under` side under callgrind, counted by call stack, with
    /// `blocks` per connection and then twice as many: the two counts.
    pub fn counted_stacks(
        &self,
        job: &Job,
        blocks: u64,
        under: Side,
        dir: &Path,
    ) -> Result<[Profile; 2], String> {
        if let Program::Binary { adapter, .. } = side_program(job, under)?
            && adapter.io_uring
        {
            return Err(format!("{}: {UNDER_VALGRIND}", adapter.name));
        }
        let callgrind = Callgrind::find()?;
        let profiler = Profiler::Callgrind {
            callgrind: &callgrind,
            stacks: true,
        };
        self.profiled(job, Span::Blocks(blocks), under, profiler, dir)
    }

    /// `job`'s `under` side sampled by perf over `span` and then twice as
    /// much: the two samples, written into `dir`.
    pub fn sampled_stacks(
        &self,
        job: &Job,
        span: Span,
        under: Side,
        perf: &Perf,
        dir: &Path,
    ) -> Result<[Profile; 2], String> {
        side_program(job, under)?;
        self.profiled(job, span, under, Profiler::Perf(perf), dir)
    }

    fn profiled(
        &self,
        job: &Job,
        span: Span,
        under: Side,
        profiler: Profiler,
        dir: &Path,
    ) -> Result<[Profile; 2], String> {
        let (name, extension) = match profiler {
            Profiler::Callgrind { .. } => ("callgrind", "callgrind"),
            Profiler::Perf(_) => ("perf", "perf.data"),
        };
        let run = |(k, span): (usize, Span)| {
            let file = dir.join(format!("{under}-{k}.{extension}"));
            let mode = Mode::Counted {
                span,
                under,
                profiler,
                out: &file,
            };
            let measured = self
                .pair(job, mode)
                .map_err(|e| format!("with the {under} under {name}: {e}"))?;
            let ClientMeasurement::Ours(result) = &measured.client else {
                return Err(format!(
                    "with the {under} under {name}: no client of ours counted its blocks"
                ));
            };
            let blocks = result.bytes as f64 / job.workload.block.max(1) as f64;
            Ok::<_, String>(Profile { file, blocks })
        };
        Ok([run((1, span))?, run((2, span.doubled()))?])
    }

    /// One pair of processes: the server where `server_at` says, the client
    /// here; what the client measured, and what both spent.
    fn pair(&self, job: &Job, mode: Mode) -> Result<Measurement, RepetitionError> {
        let counting = match (job.counting, mode) {
            (
                _,
                Mode::Counted {
                    profiler: Profiler::Callgrind { stacks: true, .. },
                    ..
                },
            ) => Counting::Off(STACKS),
            (
                _,
                Mode::Counted {
                    profiler: Profiler::Perf(_),
                    ..
                },
            ) => Counting::Off(SAMPLED),
            (true, _) | (_, Mode::Counted { .. }) => Counting::On,
            (false, Mode::Timed) => Counting::Off(TIMED),
        };
        let mut server = self.server_place(job)?.server(job, mode, counting)?;
        // The counters of this host's kernel say nothing of a server or
        // clients on another.
        let tcp_before = match (&self.server_at, &self.client_hosts[..]) {
            (ServerAt::Local | ServerAt::Given(_), []) => tcp_stats::read().ok(),
            _ => None,
        };
        // Where sock_diag cannot be read, the tables show no queue: it
        // measures the run, it is not the run.
        let sampler = (accept_queue_sampled(job) && tcp_before.is_some())
            .then(|| Sampler::start(server.addr).ok())
            .flatten();
        let measured = self
            .client_place(job)
            .and_then(|place| place.client(job, &mut server, mode, counting));
        let tcp = tcp_before.and_then(|before| Some(tcp_stats::read().ok()?.since(&before)));
        let accept_queue = sampler.and_then(|s| s.finish().ok());
        let mut measured = match (measured, &mut server.process) {
            (Err(e), Some(process)) => return Err(troubled(blamed(process, e), tcp)),
            (measured, _) => measured.map_err(|e| troubled(e, tcp))?,
        };
        measured.tcp = tcp;
        measured.accept_queue = accept_queue;
        if let Some(mut process) = server.process {
            if let Some(status) = process.exited()? {
                let stderr = process.stderr_tail();
                return Err(anyhow!("server exited during the run ({status}){stderr}").into());
            }
            match job.server {
                Program::Binary { .. } => {
                    let last = process.stop()?;
                    measured.served = last.iter().find_map(|text| match Line::parse(text) {
                        Some(Line::Served(served)) => Some(served.into()),
                        _ => None,
                    });
                }
                Program::External(_) | Program::Unbuilt { .. } => process.terminate()?,
            }
        }
        Ok(measured)
    }
}

impl ProcessPair {
    /// Where `job`'s server runs: where `--remote` or `--server` put it,
    /// here otherwise.
    fn server_place<'a>(&'a self, job: &Job<'a>) -> Result<Box<dyn Place + 'a>, RepetitionError> {
        Ok(match (&self.server_at, job.server) {
            (ServerAt::Given(addr), _) => Box::new(Given(*addr)),
            (ServerAt::Local, Program::Binary { path, .. }) => Box::new(Here(path)),
            (ServerAt::Ssh(ssh), Program::Binary { path, .. }) => Box::new(Hosts {
                hosts: std::slice::from_ref(ssh),
                bin: path,
            }),
            (ServerAt::Local, Program::External(e)) => Box::new(external::Program(e)),
            (_, Program::Unbuilt { reason, .. }) => return Err(anyhow!("{reason}").into()),
            (ServerAt::Ssh(_), Program::External(e)) => {
                return Err(anyhow!(
                    "{} is external: start its server on the other host by hand and use --server",
                    e.name
                )
                .into());
            }
        })
    }

    /// Where `job`'s client runs: on the `--client-host` hosts, or here.
    fn client_place<'a>(&'a self, job: &Job<'a>) -> Result<Box<dyn Place + 'a>, RepetitionError> {
        Ok(match job.client {
            Program::Binary { path, .. } if !self.client_hosts.is_empty() => Box::new(Hosts {
                hosts: &self.client_hosts,
                bin: path,
            }),
            Program::Binary { path, .. } => Box::new(Here(path)),
            Program::External(e) => Box::new(external::Program(e)),
            Program::Unbuilt { reason, .. } => return Err(anyhow!("{reason}").into()),
        })
    }
}

/// The program of `job`'s `side`, where it is one of ours: an external
/// program's symbols and stacks are not the suite's to profile.
fn side_program<'j>(job: &Job<'j>, side: Side) -> Result<&'j Program, String> {
    match [job.server, job.client][usize::from(side == Side::Client)] {
        program @ Program::Binary { .. } => Ok(program),
        _ => Err("an external program is not counted".into()),
    }
}

/// Whether a repetition samples its server's accept queue: where
/// connections arrive while it serves, over TCP. Sampling wakes a thread of
/// ours every few milliseconds, which a run that measures nothing of the
/// accepting need not pay.
fn accept_queue_sampled(job: &Job) -> bool {
    let arrival = match job.client {
        Program::External(e) => e.client.arrival.unwrap_or_default(),
        _ => job.arrival,
    };
    let arriving = arrival != Arrival::Gated || job.workload.churn.is_some();
    arriving && job.workload.protocol != Protocol::Udp
}

/// `error` of the client, led by the server's exit if it exited first: a
/// crashed server is the cause, the client's complaint its effect.
fn blamed(server: &mut Child, error: RepetitionError) -> RepetitionError {
    match server.exited() {
        Ok(Some(status)) => {
            let stderr = server.stderr_tail();
            anyhow!("the server exited during the run ({status}){stderr}; the client: {error}")
                .into()
        }
        _ => error,
    }
}

/// A failure, with the kernel's count of connection troubles over the
/// repetition where there were any: a full accept queue is often the cause.
fn troubled(error: RepetitionError, tcp: Option<TcpStats>) -> RepetitionError {
    match (error, tcp.and_then(|t| t.troubles())) {
        (RepetitionError::Failed(e), Some(troubles)) => anyhow!("{e:#}; {troubles}").into(),
        (error, _) => error,
    }
}

/// Why an external program cannot run this workload (or, with `hosted`
/// clients, run its client on other hosts), if it cannot; a server started
/// by hand is what it is.
fn unsupported(job: &Job, server_at: &ServerAt, hosted: bool) -> Option<RepetitionError> {
    let unbuilt = [(Side::Server, job.server), (Side::Client, job.client)]
        .into_iter()
        .find_map(|(side, program)| match program {
            Program::Unbuilt { reason, .. } => Some((side, reason)),
            _ => None,
        });
    if let Some((side, reason)) = unbuilt {
        return Some(RepetitionError::Unavailable {
            side,
            short: "does not build against this release".into(),
            message: reason.clone(),
        });
    }
    // External programs speak the protocol over plain TCP only.
    let plain_only = match (job.workload.protocol, job.workload.tls) {
        (Protocol::Tcp, None) => None,
        (Protocol::Tcp, Some(_)) => Some("it speaks plain TCP only, no TLS".to_string()),
        (other, _) => Some(format!("it speaks TCP pingpong only, no {}", other.label())),
    };
    let server = match (job.server, server_at) {
        (Program::External(e), ServerAt::Local) => e
            .server_unsupported(job.work, job.workload.shape)
            .or_else(|| plain_only.clone())
            .map(|w| (e, w)),
        _ => None,
    };
    let client = match job.client {
        Program::External(e) if hosted => Some((
            e,
            "its client runs on this host only, not on --client-host hosts".into(),
        )),
        Program::External(e) => e
            .client_unsupported(
                job.workload.window,
                job.seconds.as_secs_f64(),
                job.workload.churn,
            )
            .or_else(|| plain_only.clone())
            .map(|w| (e, w)),
        Program::Binary { .. } | Program::Unbuilt { .. } => None,
    };
    let (side, (e, short)) = server
        .map(|found| (Side::Server, found))
        .or(client.map(|found| (Side::Client, found)))?;
    Some(RepetitionError::Unavailable {
        side,
        message: format!("{} cannot run this workload: {short}", e.name),
        short,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_connection_troubles_the_kernel_counted() {
        let overflowed = TcpStats {
            listen_overflows: 12,
            listen_drops: 12,
            syn_retransmits: 20,
            ..TcpStats::default()
        };
        let failed = || RepetitionError::Failed(anyhow!("the client passed its deadline"));
        let named = troubled(failed(), Some(overflowed)).to_string();
        assert_eq!(
            named,
            "the client passed its deadline; the kernel counted 12 listen-queue overflows, \
             12 listen drops and 20 SYN retransmissions over the run"
        );
        let quiet = troubled(failed(), Some(TcpStats::default())).to_string();
        assert_eq!(quiet, "the client passed its deadline");
        let unavailable = RepetitionError::Unavailable {
            side: Side::Server,
            short: "no io_uring".into(),
            message: "io_uring is off".into(),
        };
        assert!(matches!(
            troubled(unavailable, Some(overflowed)),
            RepetitionError::Unavailable { .. }
        ));
    }
}
