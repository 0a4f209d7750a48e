//! Runs one repetition of a cell: a server process and a client process,
//! pinned, each within a deadline; the client's result line is the outcome.

use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use nix::sched::sched_setaffinity;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use pingpong::client::ClientConfig;
use pingpong::wire::{ClientResult, Failure, Line, Window};

use crate::external::{self, External};
use crate::placement::{Placement, cpu_list, cpu_set};
use crate::remote::Ssh;
use crate::usage::{Sample, Usage};

/// How long a server may take to print its ready line.
const READY_DEADLINE: Duration = Duration::from_secs(10);
/// How long a process may take to exit once its work is done.
const EXIT_DEADLINE: Duration = Duration::from_secs(5);
/// Slack on every deadline derived from the options: a loaded machine is slow.
const MARGIN: Duration = Duration::from_secs(5);

/// The process groups of the children alive now, for [`kill_all`].
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Kills every child process group still alive (on Ctrl-C or SIGTERM):
/// the repetitions in flight fail at once, and nothing outlives the run.
pub fn kill_all() {
    for &group in LIVE.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
}
/// How much of a failed process's stderr an error quotes.
const STDERR_TAIL: usize = 2000;

/// A program one side runs: a `pingpong-<name>` binary, or an external one.
#[derive(Clone, Copy)]
pub enum Program<'a> {
    Ours(&'a Path),
    External(&'a External),
}

/// Where the server runs.
pub enum Site {
    /// Here, started and stopped by each repetition.
    Local,
    /// On another host, started and stopped over ssh by each repetition.
    Ssh(Ssh),
    /// Already running at this address, started by hand.
    Given(SocketAddr),
}

/// What one repetition runs.
pub struct Spec<'a> {
    pub server: Program<'a>,
    pub client: Program<'a>,
    pub site: &'a Site,
    pub threads: usize,
    pub connections: usize,
    pub block: usize,
    pub window: usize,
    pub work: u64,
    pub warmup: Duration,
    pub seconds: Duration,
    pub latency: bool,
    pub placement: &'a Placement,
}

/// What one repetition measured.
pub struct Measurement {
    pub client: ClientMeasurement,
    /// What each process spent over the window (absent if a sample failed,
    /// or the process is not on this host).
    pub server_usage: Option<Usage>,
    pub client_usage: Option<Usage>,
    /// The CPUs the server found in its own affinity.
    pub server_cpus: Vec<usize>,
}

pub enum ClientMeasurement {
    /// Our client's result: the window and everything measured in it.
    Ours(ClientResult),
    /// What an external client printed: bytes read over its whole run
    /// (connecting included), and how long it was told to run.
    External {
        bytes: u64,
        seconds: f64,
        cpus: Vec<usize>,
    },
}

/// A server that accepts connections.
struct Server {
    /// Absent for a server started by hand; ssh, for one on another host.
    process: Option<Process>,
    /// The server's process id, where it runs on this host and can be sampled.
    pid: Option<u32>,
    addr: SocketAddr,
    cpus: Vec<usize>,
}

/// Runs the pair and returns the client's measurement.
pub fn run_once(spec: &Spec) -> Result<Measurement> {
    if let Some(unavailable) = spec.unsupported() {
        return Err(unavailable.into());
    }
    let mut server = start_server(spec)?;
    let measured = match spec.client {
        Program::Ours(client) => our_client(spec, client, &mut server),
        Program::External(client) => external_client(spec, client, &mut server),
    };
    let measured = match (measured, &mut server.process) {
        (Err(e), Some(process)) => return Err(process.blamed_for(e)),
        (measured, _) => measured?,
    };
    if let Some(mut process) = server.process {
        if let Some(status) = process.child.try_wait()? {
            let stderr = process.stderr_tail();
            bail!("server exited during the run ({status}){stderr}");
        }
        match spec.server {
            Program::Ours(_) => process.stop()?,
            Program::External(_) => process.terminate()?,
        }
    }
    Ok(measured)
}

impl Spec<'_> {
    /// The shape options both of our binaries take.
    fn shape(&self) -> [String; 6] {
        [
            "--threads".into(),
            self.threads.to_string(),
            "--block".into(),
            self.block.to_string(),
            "--window".into(),
            self.window.to_string(),
        ]
    }

    fn values<'h>(&self, host: &'h str, port: u16) -> external::Values<'h> {
        external::Values {
            host,
            port,
            threads: self.threads,
            block: self.block,
            connections: self.connections,
            seconds: self.seconds.as_secs_f64(),
            window: self.window,
            work: self.work,
        }
    }

    /// Why an external program cannot run this workload, if it cannot; a
    /// server started by hand is what it is.
    fn unsupported(&self) -> Option<Unavailable> {
        let server = match (self.server, self.site) {
            (Program::External(e), Site::Local) => e.server_unsupported(self.work).map(|w| (e, w)),
            _ => None,
        };
        let client = match self.client {
            Program::External(e) => e
                .client_unsupported(self.window, self.seconds.as_secs_f64())
                .map(|w| (e, w)),
            Program::Ours(_) => None,
        };
        let (side, (e, short)) = server
            .map(|found| ("server", found))
            .or(client.map(|found| ("client", found)))?;
        Some(Unavailable {
            side,
            message: format!("{} cannot run this workload: {short}", e.name),
            short,
        })
    }
}

fn start_server(spec: &Spec) -> Result<Server> {
    let cpus = &spec.placement.server_cpus;
    let deadline = Instant::now() + READY_DEADLINE;
    match (spec.site, spec.server) {
        (Site::Given(addr), _) => Ok(Server {
            process: None,
            pid: None,
            addr: *addr,
            cpus: Vec::new(),
        }),
        (Site::Local, Program::Ours(bin)) => {
            let process = Process::spawn("server", bin, cpus, |cmd| {
                cmd.args(["server", "--bind", "127.0.0.1:0"])
                    .args(spec.shape())
                    .args(["--work", &spec.work.to_string()]);
            })?;
            ready(process, deadline, None)
        }
        (Site::Ssh(ssh), Program::Ours(bin)) => {
            let remote = ssh_server_args(ssh, bin, spec)?;
            let process = Process::spawn("server", Path::new(&ssh.program), cpus, |cmd| {
                cmd.args(&remote);
            })?;
            ready(process, deadline, Some(ssh.ip))
        }
        (Site::Local, Program::External(e)) => {
            let port = free_port()?;
            let command = e.server_command(&spec.values("127.0.0.1", port))?;
            let mut process = Process::spawn("server", Path::new(&command[0]), cpus, |cmd| {
                cmd.args(&command[1..]);
            })?;
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            process.wait_listening(addr, deadline)?;
            let pid = process.child.id();
            Ok(Server {
                process: Some(process),
                pid: Some(pid),
                cpus: affinity_of(pid),
                addr,
            })
        }
        (Site::Ssh(_), Program::External(e)) => bail!(
            "{} is external: start its server on the other host by hand and use --server",
            e.name
        ),
    }
}

/// The server as its ready line says, at `host` when it runs on another one.
fn ready(mut process: Process, deadline: Instant, host: Option<IpAddr>) -> Result<Server> {
    let ready = match process.next_line(deadline, "server start")? {
        Line::Ready(ready) => ready,
        Line::Error(f) => return Err(failure("server", f)),
        other => bail!("server printed {other:?} instead of its ready line"),
    };
    let (addr, pid) = match host {
        Some(ip) => (SocketAddr::new(ip, ready.addr.port()), None),
        None => (ready.addr, Some(process.child.id())),
    };
    Ok(Server {
        process: Some(process),
        pid,
        addr,
        cpus: ready.cpus,
    })
}

fn our_client(spec: &Spec, bin: &Path, server: &mut Server) -> Result<Measurement> {
    let addr = server.addr;
    let config = ClientConfig {
        connect: addr,
        threads: spec.threads,
        connections: spec.connections,
        block: spec.block,
        window: spec.window,
        warmup: spec.warmup,
        seconds: spec.seconds,
        latency: spec.latency,
    };
    let mut client = Process::spawn("client", bin, &spec.placement.client_cpus, |cmd| {
        // Lingering, it is still alive (not a zombie) when sampled at the window's end.
        cmd.args(["client", "--linger", "--connect", &addr.to_string()])
            .args(spec.shape())
            .args(["--connections", &spec.connections.to_string()])
            .args(["--warmup", &spec.warmup.as_secs_f64().to_string()])
            .args(["--seconds", &spec.seconds.as_secs_f64().to_string()]);
        if !spec.latency {
            cmd.arg("--no-latency");
        }
    })?;
    // Both processes are sampled at the window's edges, as the client
    // announces them; each stage has its own deadline.
    let pids = [server.pid, Some(client.child.id())];
    let sample = || pids.map(|pid| Sample::take(pid?).ok());
    let (mut opened, mut closed) = (None, None);
    let mut stage = "connecting and warm-up";
    let mut deadline = Instant::now() + config.connect_deadline() + spec.warmup + MARGIN;
    let result = loop {
        match client.next_line(deadline, stage)? {
            Line::Window(Window::Open) => {
                opened = Some(sample());
                stage = "measurement window";
                deadline = Instant::now() + spec.seconds + MARGIN;
            }
            Line::Window(Window::Closed) => {
                closed = Some(sample());
                stage = "shutdown";
                deadline = Instant::now() + config.drain_deadline() + MARGIN;
            }
            Line::Result(result) => break result,
            Line::Error(f) => return Err(failure("client", f)),
            other => bail!("client printed {other:?} instead of its result"),
        }
    };
    let usage = |side: usize| match (&opened, &closed) {
        (Some(a), Some(b)) => Some(a[side].as_ref()?.until(b[side].as_ref()?)),
        _ => None,
    };
    drop(client.stdin.take());
    let status = client.wait(EXIT_DEADLINE)?;
    ensure!(
        status.success(),
        "exit: client exited with {status} after its result"
    );
    ensure!(
        (result.threads, result.connections, result.block)
            == (spec.threads, spec.connections, spec.block),
        "client ran {} threads, {} connections, block {} instead of what it was asked",
        result.threads,
        result.connections,
        result.block
    );
    Ok(Measurement {
        server_usage: usage(0),
        client_usage: usage(1),
        server_cpus: server.cpus.clone(),
        client: ClientMeasurement::Ours(result),
    })
}

/// An external client runs for its time and prints its throughput; the
/// server is sampled over the client's whole run.
fn external_client(spec: &Spec, e: &External, server: &mut Server) -> Result<Measurement> {
    let host = server.addr.ip().to_string();
    let values = spec.values(&host, server.addr.port());
    let command = e.client_command(&values)?;
    let server_pid = server.pid;
    let opened = server_pid.and_then(|pid| Sample::take(pid).ok());
    let mut client = Process::spawn(
        "client",
        Path::new(&command[0]),
        &spec.placement.client_cpus,
        |cmd| {
            cmd.args(&command[1..]);
        },
    )?;
    let cpus = affinity_of(client.child.id());
    let config = ClientConfig {
        connect: server.addr,
        threads: spec.threads,
        connections: spec.connections,
        block: spec.block,
        window: spec.window,
        warmup: Duration::ZERO,
        seconds: spec.seconds,
        latency: false,
    };
    let (status, stdout, stderr) = client.finish(Instant::now() + config.deadline() + MARGIN)?;
    let closed = server_pid.and_then(|pid| Sample::take(pid).ok());
    ensure!(
        status.success(),
        "client: {} exited with {status}; it printed: {}",
        command[0],
        external::tail(&format!("{stdout}{stderr}"))
    );
    Ok(Measurement {
        client: ClientMeasurement::External {
            bytes: e.bytes_read(&stdout, &stderr, values.seconds)?,
            seconds: values.seconds,
            cpus,
        },
        server_usage: opened.zip(closed).map(|(a, b)| a.until(&b)),
        client_usage: None,
        server_cpus: server.cpus.clone(),
    })
}

/// A port free on loopback now, for an external server to listen on.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// The CPUs a process may run on, as the kernel reports its affinity.
fn affinity_of(pid: u32) -> Vec<usize> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            let list = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
            cpu_list(list.trim()).ok()
        })
        .unwrap_or_default()
}

/// The arguments of ssh that start `bin`'s server on the other host, bound
/// to the host's address; it stops when its stdin, which ssh forwards, closes.
fn ssh_server_args(ssh: &Ssh, bin: &Path, spec: &Spec) -> Result<Vec<String>> {
    let name = bin.file_name().context("a binary has no file name")?;
    let remote_bin = ssh.bin_dir.join(name).to_string_lossy().into_owned();
    let bind = SocketAddr::new(ssh.ip, 0).to_string();
    let mut remote = vec![remote_bin, "server".into(), "--bind".into(), bind];
    remote.extend(spec.shape());
    remote.extend(["--work".into(), spec.work.to_string()]);
    Ok(ssh.args(&remote))
}

/// The implementation cannot start on this machine: the cell gets no figure
/// but a reason, and is not a failure of the implementation.
#[derive(Debug, thiserror::Error)]
#[error("{side}: {message}")]
pub struct Unavailable {
    pub side: &'static str,
    /// A few words for a table cell.
    pub short: String,
    pub message: String,
}

fn failure(side: &'static str, f: Failure) -> anyhow::Error {
    match f.unavailable {
        Some(short) => Unavailable {
            side,
            short,
            message: f.message,
        }
        .into(),
        None => anyhow!("{side}: {}", f.message),
    }
}

/// A child process in its own process group, killed with its group when dropped.
struct Process {
    role: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Option<JoinHandle<String>>,
}

impl Process {
    fn spawn(
        role: &'static str,
        bin: &Path,
        cpus: &[usize],
        args: impl FnOnce(&mut Command),
    ) -> Result<Self> {
        let mut cmd = Command::new(bin);
        args(&mut cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // No CPUs: not pinned (ssh, for a server on another host).
        if !cpus.is_empty() {
            let set = cpu_set(cpus)?;
            // SAFETY: sched_setaffinity is a plain system call, safe between fork and exec.
            unsafe {
                cmd.pre_exec(move || Ok(sched_setaffinity(Pid::from_raw(0), &set)?));
            }
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(child.id() as i32);
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = thread::spawn(move || {
            let mut text = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut text);
            text
        });
        Ok(Self {
            role,
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: Some(stderr),
        })
    }

    /// The next JSON line on stdout, in `stage`; other output is skipped.
    fn next_line(&mut self, deadline: Instant, stage: &str) -> Result<Line> {
        let limit = deadline.saturating_duration_since(Instant::now());
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(text) => {
                    if let Ok(line) = serde_json::from_str(&text) {
                        return Ok(line);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    bail!(
                        "{stage}: the {} passed its deadline of {:.1} s; killed",
                        self.role,
                        limit.as_secs_f64()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.wait(EXIT_DEADLINE)?;
                    let stderr = self.stderr_tail();
                    bail!("{stage}: the {} exited ({status}){stderr}", self.role);
                }
            }
        }
    }

    /// `error` of the client, led by this server's exit if it exited first:
    /// a crashed server is the cause, the client's complaint its effect.
    fn blamed_for(&mut self, error: anyhow::Error) -> anyhow::Error {
        match self.child.try_wait() {
            Ok(Some(status)) => {
                let stderr = self.stderr_tail();
                anyhow!(
                    "the server exited during the run ({status}){stderr}; the client: {error:#}"
                )
            }
            _ => error,
        }
    }

    /// Waits for the process to exit by itself.
    fn wait(&mut self, limit: Duration) -> Result<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                return Err(anyhow!(
                    "{} did not exit within {limit:?}; killed",
                    self.role
                ));
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until `addr` accepts a connection: an external server has no
    /// ready line.
    fn wait_listening(&mut self, addr: SocketAddr, deadline: Instant) -> Result<()> {
        loop {
            if let Some(status) = self.child.try_wait()? {
                let stderr = self.stderr_tail();
                bail!("server start: the server exited ({status}){stderr}");
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "server start: nothing listened on {addr} within {:.1} s; killed",
                    READY_DEADLINE.as_secs_f64()
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything the process prints until it exits, within `deadline`.
    fn finish(&mut self, deadline: Instant) -> Result<(ExitStatus, String, String)> {
        let mut stdout = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    stdout.push_str(&line);
                    stdout.push('\n');
                }
                Err(RecvTimeoutError::Timeout) => {
                    bail!("the {} passed its deadline; killed", self.role)
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        let status = self.wait(EXIT_DEADLINE)?;
        Ok((status, stdout, self.stderr_text()))
    }

    /// Stops a program that serves until killed: SIGTERM to its group.
    fn terminate(&mut self) -> Result<()> {
        let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM);
        self.wait(EXIT_DEADLINE).map(drop)
    }

    /// Closes the server's stdin, its signal to stop, and waits for it.
    fn stop(&mut self) -> Result<()> {
        drop(self.stdin.take());
        let status = self.wait(EXIT_DEADLINE)?;
        let stderr = self.stderr_tail();
        ensure!(
            status.success(),
            "{} exited with {status} when stopped{stderr}",
            self.role
        );
        Ok(())
    }

    /// All the process wrote on stderr, once it has exited (empty the second time).
    fn stderr_text(&mut self) -> String {
        self.stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }

    /// The end of what the process wrote on stderr, once it has exited.
    fn stderr_tail(&mut self) -> String {
        let text = self.stderr_text();
        let text = text.trim();
        if text.is_empty() {
            return String::new();
        }
        let start = text.len().saturating_sub(STDERR_TAIL);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        format!("; stderr: {}", &text[start..])
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let group = self.child.id() as i32;
        // The whole group, whether or not its leader is still there: a
        // runtime may have left helper processes behind.
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        let _ = self.child.wait();
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&g| g != group);
    }
}
