//! A child process as a repetition needs one: in its own process group,
//! pinned to CPUs, its stdout read line by line, every wait bounded by a
//! deadline, and killed with its whole group when dropped (or, on Ctrl-C,
//! with every other group of ours at once: [`crate::groups`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::iter;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{self, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use nix::sched::{CpuSet, sched_setaffinity};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use wait_timeout::ChildExt;

use crate::counters::{Counters, Edge};
use crate::groups::Group;
use model::results::Cost;

/// How long a process may take to exit once its work is done.
pub const EXIT_DEADLINE: Duration = Duration::from_secs(5);

/// How long an exited process's last lines may take to come through.
const LAST_LINES: Duration = Duration::from_secs(1);

/// How much of a failed process's stderr an error quotes.
const STDERR_TAIL: usize = 2000;

/// A child process in its own process group, killed with its group when dropped.
pub struct Child {
    /// What it is to the run ("server", "client"), for messages.
    role: &'static str,
    child: process::Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Option<JoinHandle<String>>,
    /// The kernel's counts of it and its threads, or why there are none.
    counters: Result<Counted, String>,
    /// Its group, killed with the others on a stop until it is dropped
    /// (after the child is, killed and reaped).
    _group: Group,
}

/// Counters that the process inherited from the thread that spawned it,
/// which lives, idle, as long as they are read.
struct Counted {
    counters: Counters,
    _keeper: mpsc::Sender<()>,
}

/// Whether a process's system calls and switches are counted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    On,
    /// Not counted, and why: what runs here is not the process measured (ssh).
    Off(&'static str),
}

impl Child {
    /// Starts `program` with `args`, confined to `cpus` (none: not pinned),
    /// its system calls counted or not.
    pub fn spawn(
        role: &'static str,
        program: &Path,
        args: &[String],
        cpus: &[usize],
        counting: Counting,
    ) -> Result<Self> {
        let mut cmd = Command::new(program);
        cmd.args(args);
        Self::spawn_command(role, cmd, cpus, counting)
    }

    /// [`Child::spawn`] of a command made by the caller (its environment
    /// set, say).
    pub fn spawn_command(
        role: &'static str,
        mut cmd: Command,
        cpus: &[usize],
        counting: Counting,
    ) -> Result<Self> {
        let program = Path::new(cmd.get_program()).to_path_buf();
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if !cpus.is_empty() {
            let set = cpu_set(cpus)?;
            // SAFETY: sched_setaffinity is a plain system call, safe between fork and exec.
            unsafe {
                cmd.pre_exec(move || Ok(sched_setaffinity(Pid::from_raw(0), &set)?));
            }
        }
        let (child, counters) = match counting {
            Counting::On => spawn_counted(cmd),
            Counting::Off(why) => (cmd.spawn(), Err(why.to_string())),
        };
        let mut child = child.with_context(|| format!("starting {}", program.display()))?;
        let group = Group::led_by(&child);
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
            counters,
            _group: group,
        })
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// What the kernel has counted of the process and its threads so far,
    /// at `edge` of a span, or why it cannot say.
    pub fn counts(&mut self, edge: Edge) -> Result<Cost, String> {
        match &mut self.counters {
            Ok(counted) => counted
                .counters
                .read(edge)
                .map_err(|e| format!("reading the counters: {e}")),
            Err(why) => Err(why.clone()),
        }
    }

    /// The next line on stdout that `parse` accepts, before `deadline`;
    /// other lines are skipped. `stage` names the wait in errors.
    pub fn next_line<T>(
        &mut self,
        deadline: Instant,
        stage: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T> {
        let limit = deadline.saturating_duration_since(Instant::now());
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(text) => {
                    if let Some(line) = parse(&text) {
                        return Ok(line);
                    }
                }
                Err(RecvTimeoutError::Timeout) => bail!(
                    "{stage}: the {} passed its deadline of {:.1} s; killed",
                    self.role,
                    limit.as_secs_f64()
                ),
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.wait(EXIT_DEADLINE)?;
                    let stderr = self.stderr_tail();
                    bail!("{stage}: the {} exited ({status}){stderr}", self.role);
                }
            }
        }
    }

    /// Everything the process prints on stdout and stderr until it exits,
    /// before `deadline`.
    pub fn output(&mut self, deadline: Instant) -> Result<(ExitStatus, String, String)> {
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

    /// How the process ended, if it has.
    pub fn exited(&mut self) -> Result<Option<ExitStatus>> {
        Ok(self.child.try_wait()?)
    }

    /// Waits for the process to exit by itself, at most `limit`.
    pub fn wait(&mut self, limit: Duration) -> Result<ExitStatus> {
        self.child
            .wait_timeout(limit)?
            .ok_or_else(|| anyhow!("{} did not exit within {limit:?}; killed", self.role))
    }

    /// Writes `text` and a newline to its stdin.
    pub fn send_line(&mut self, text: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().context("its stdin is closed")?;
        writeln!(stdin, "{text}")?;
        stdin.flush()?;
        Ok(())
    }

    /// Closes its stdin: our binaries' signal to stop, or to exit.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Stops one of our servers (it serves until its stdin closes), checks
    /// that it exited cleanly, and returns what it printed on stdout since
    /// the last line read.
    pub fn stop(&mut self) -> Result<Vec<String>> {
        self.close_stdin();
        let status = self.wait(EXIT_DEADLINE)?;
        let stderr = self.stderr_tail();
        ensure!(
            status.success(),
            "{} exited with {status} when stopped{stderr}",
            self.role
        );
        // Until the pipe's end, or a helper it left behind holds it open.
        Ok(iter::from_fn(|| self.lines.recv_timeout(LAST_LINES).ok()).collect())
    }

    /// Stops a program that serves until killed: SIGTERM to its group.
    pub fn terminate(&mut self) -> Result<()> {
        let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM);
        self.wait(EXIT_DEADLINE).map(drop)
    }

    /// All the process wrote on stderr, once it has exited (empty the second time).
    fn stderr_text(&mut self) -> String {
        self.stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }

    /// The end of what the process wrote on stderr, once it has exited, as
    /// "; stderr: ..." to append to a message (empty when it wrote nothing).
    pub fn stderr_tail(&mut self) -> String {
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

impl Drop for Child {
    fn drop(&mut self) {
        let group = self.child.id() as i32;
        // The whole group, whether or not its leader is still there: a
        // runtime may have left helper processes behind.
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Spawns `cmd` from a thread of its own that first opens counters which
/// the child, and every thread it starts, inherits; the thread then waits
/// until the counters are dropped, so that they keep following the child.
fn spawn_counted(mut cmd: Command) -> (std::io::Result<process::Child>, Result<Counted, String>) {
    let (sent, spawned) = mpsc::channel();
    let (keeper, released) = mpsc::channel::<()>();
    let started = thread::Builder::new()
        .name("counted-spawn".into())
        .spawn(move || {
            let counters = Counters::inherited();
            let _ = sent.send((cmd.spawn(), counters));
            // Nothing this thread does from here on is counted: it waits.
            let _ = released.recv();
        });
    if let Err(e) = started {
        return (Err(e), Err("no thread to count from".into()));
    }
    match spawned.recv() {
        Ok((child, counters)) => (
            child,
            counters.map(|counters| Counted {
                counters,
                _keeper: keeper,
            }),
        ),
        Err(_) => (
            Err(std::io::Error::other("the spawning thread died")),
            Err("the spawning thread died".into()),
        ),
    }
}

fn cpu_set(cpus: &[usize]) -> Result<CpuSet> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu).with_context(|| format!("CPU {cpu}"))?;
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, cpus: &[usize]) -> Child {
        let args = ["-c".to_string(), script.to_string()];
        Child::spawn("server", Path::new("/bin/sh"), &args, cpus, Counting::On).unwrap()
    }

    fn alive(pid: u32) -> bool {
        // A zombie is dead: it waits only to be reaped.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s.rsplit_once(')').unwrap().1.trim_start().starts_with('Z'))
    }

    #[test]
    fn lines_are_read_in_order_and_the_unwanted_skipped() {
        let mut p = sh("echo noise; echo 1; echo 2; sleep 5", &[]);
        let deadline = Instant::now() + Duration::from_secs(5);
        let number = |l: &str| l.parse::<u32>().ok();
        assert_eq!(p.next_line(deadline, "start", number).unwrap(), 1);
        assert_eq!(p.next_line(deadline, "start", number).unwrap(), 2);
    }

    #[test]
    fn a_silent_process_passes_its_deadline_and_its_group_dies_with_it() {
        // The shell's child is in its group: it must die too.
        let mut p = sh("sleep 30 & echo $!; wait", &[]);
        let deadline = Instant::now() + Duration::from_secs(5);
        let child: u32 = p.next_line(deadline, "start", |l| l.parse().ok()).unwrap();
        let started = Instant::now();
        let e = p
            .next_line(
                Instant::now() + Duration::from_millis(200),
                "server start",
                |_| Some(()),
            )
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(
            e.to_string(),
            "server start: the server passed its deadline of 0.2 s; killed"
        );
        let leader = p.id();
        drop(p);
        // SIGKILL takes effect when the killed process next runs: give it a moment.
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            !alive(leader) && !alive(child)
        });
        assert!(gone, "the group outlived its process");
    }

    #[test]
    fn a_process_that_exits_is_named_with_its_status_and_stderr() {
        let mut p = sh("echo 'it broke' >&2; exit 3", &[]);
        let e = p
            .next_line(Instant::now() + Duration::from_secs(5), "window", |_| {
                Some(())
            })
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "window: the server exited (exit status: 3); stderr: it broke"
        );
    }

    #[test]
    fn waiting_is_bounded() {
        let mut p = sh("sleep 30", &[]);
        let e = p.wait(Duration::from_millis(100)).unwrap_err();
        assert!(e.to_string().contains("did not exit within 100ms"), "{e}");
        let mut p = sh("exit 0", &[]);
        assert!(p.wait(Duration::from_secs(5)).unwrap().success());
    }

    #[test]
    #[ignore = "needs root, for the kernel's counters: scripts/test.sh runs it as root"]
    fn a_process_and_its_threads_are_counted_from_spawn_on() {
        let mut p = sh(
            "read line; dd if=/dev/zero of=/dev/null bs=1 count=500 2>/dev/null; sleep 5",
            &[],
        );
        let before = p.counts(Edge::Opens).unwrap_or_else(|why| panic!("{why}"));
        p.close_stdin();
        // The reads and writes of dd, a grandchild started after the spawn.
        let done = (0..200).find_map(|_| {
            std::thread::sleep(Duration::from_millis(10));
            let now = p.counts(Edge::Closes).unwrap();
            (now.writes - before.writes >= 500).then_some(now)
        });
        let after = done.expect("dd's writes counted");
        assert!(after.reads - before.reads >= 500, "{before:?} {after:?}");
    }

    #[test]
    fn a_process_not_counted_says_why() {
        let args = ["-c".to_string(), "exit 0".to_string()];
        let why = "a server on another host";
        let mut p = Child::spawn(
            "server",
            Path::new("/bin/sh"),
            &args,
            &[],
            Counting::Off(why),
        );
        assert_eq!(p.as_mut().unwrap().counts(Edge::Opens), Err(why.into()));
    }

    #[test]
    fn a_pinned_process_runs_where_it_was_put() {
        let cpus = pingpong::affinity::cpus();
        let last = *cpus.last().unwrap();
        let p = sh("sleep 5", &[last]);
        assert_eq!(pingpong::affinity::of(p.id()).unwrap(), vec![last]);
    }
}
