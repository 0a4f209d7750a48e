//! Runs one repetition of a cell: a server process and a client process,
//! pinned, each within a deadline; the client's result line is the outcome.

use std::io::{BufRead, BufReader, Read};
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
use pingpong::report::{ClientResult, Failure, Line, Window};

use crate::placement::{Placement, cpu_set};
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

/// What one repetition runs.
pub struct Spec<'a> {
    pub server: &'a Path,
    pub client: &'a Path,
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
    pub result: ClientResult,
    /// What each process spent over the window (absent if a sample failed).
    pub server_usage: Option<Usage>,
    pub client_usage: Option<Usage>,
    /// The CPUs the server found in its own affinity.
    pub server_cpus: Vec<usize>,
}

/// Runs the pair and returns the client's measurement.
pub fn run_once(spec: &Spec) -> Result<Measurement> {
    let shape = [
        "--threads".to_string(),
        spec.threads.to_string(),
        "--block".to_string(),
        spec.block.to_string(),
    ];
    let mut server = Process::spawn("server", spec.server, &spec.placement.server_cpus, |cmd| {
        cmd.args(["server", "--bind", "127.0.0.1:0"])
            .args(&shape)
            .args(["--work", &spec.work.to_string()]);
    })?;
    let ready = match server.next_line(Instant::now() + READY_DEADLINE, "server start")? {
        Line::Ready(ready) => ready,
        Line::Error(f) => return Err(failure("server", f)),
        other => bail!("server printed {other:?} instead of its ready line"),
    };

    let addr = ready.addr;
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
    let mut client = Process::spawn("client", spec.client, &spec.placement.client_cpus, |cmd| {
        cmd.args(["client", "--connect", &addr.to_string()])
            .args(&shape)
            .args(["--connections", &spec.connections.to_string()])
            .args(["--warmup", &spec.warmup.as_secs_f64().to_string()])
            .args(["--seconds", &spec.seconds.as_secs_f64().to_string()])
            .args(["--window", &spec.window.to_string()]);
        if !spec.latency {
            cmd.arg("--no-latency");
        }
    })?;
    // Both processes are sampled at the window's edges, as the client
    // announces them; each stage has its own deadline.
    let pids = [server.child.id(), client.child.id()];
    let sample = || pids.map(|pid| Sample::take(pid).ok());
    let (mut opened, mut closed) = (None, None);
    let mut stage = "connecting and warm-up";
    let mut deadline = Instant::now() + config.connect_deadline() + spec.warmup + MARGIN;
    let result = loop {
        let line = client
            .next_line(deadline, stage)
            .map_err(|e| server.blamed_for(e))?;
        match line {
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
            Line::Error(f) => return Err(server.blamed_for(failure("client", f))),
            other => bail!("client printed {other:?} instead of its result"),
        }
    };
    let usage = |side: usize| match (&opened, &closed) {
        (Some(a), Some(b)) => Some(a[side].as_ref()?.until(b[side].as_ref()?)),
        _ => None,
    };
    let (server_usage, client_usage) = (usage(0), usage(1));
    let status = client.wait(EXIT_DEADLINE)?;
    ensure!(
        status.success(),
        "exit: client exited with {status} after its result"
    );
    if let Some(status) = server.child.try_wait()? {
        let stderr = server.stderr_tail();
        bail!("server exited during the run ({status}){stderr}");
    }
    server.stop()?;

    ensure!(
        (result.threads, result.connections, result.block)
            == (spec.threads, spec.connections, spec.block),
        "client ran {} threads, {} connections, block {} instead of what it was asked",
        result.threads,
        result.connections,
        result.block
    );
    Ok(Measurement {
        result,
        server_usage,
        client_usage,
        server_cpus: ready.cpus,
    })
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
        let set = cpu_set(cpus)?;
        let mut cmd = Command::new(bin);
        args(&mut cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // SAFETY: sched_setaffinity is a plain system call, safe between fork and exec.
        unsafe {
            cmd.pre_exec(move || Ok(sched_setaffinity(Pid::from_raw(0), &set)?));
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

    /// The end of what the process wrote on stderr, once it has exited.
    fn stderr_tail(&mut self) -> String {
        let text = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
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
