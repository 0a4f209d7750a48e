//! What a process and every thread it starts do, as the kernel counts it:
//! system calls by kind (tracepoints). The counters are opened on the
//! thread that spawns the process, and inherited by it and by each thread
//! it starts later; reading them gives the total of all. (Context switches
//! and CPU time come from /proc and the CPU clock in every repetition.)

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use perf_event::events::Tracepoint;
use perf_event::{Builder, Counter};

use model::results::Cost;

/// The tracepoints of each kind of system call.
const READS: &[&str] = &["read", "readv", "recvfrom", "recvmsg", "recvmmsg"];
const WRITES: &[&str] = &["write", "writev", "sendto", "sendmsg", "sendmmsg"];
const WAITS: &[&str] = &[
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "io_uring_enter",
];
const FUTEX: &[&str] = &["futex", "futex_waitv"];

/// Where the kernel lists its tracepoints: tracefs, or its old place in debugfs.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Which end of a span of counting a reading is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    Opens,
    Closes,
}

/// Counters of one process tree.
pub struct Counters {
    syscalls: Counter,
    reads: Vec<Counter>,
    writes: Vec<Counter>,
    waits: Vec<Counter>,
    futex: Vec<Counter>,
}

impl Counters {
    /// Counters of the calling thread, counting from now, which every task
    /// it starts from now on inherits. The error says why there are none.
    pub fn inherited() -> Result<Self, String> {
        Self::open(true)
    }

    /// Counters of the calling thread alone, to hold and never read: while
    /// some are open the kernel keeps the tracepoints switched on, and
    /// opening counters for each process costs a millisecond, not most of a
    /// second of patching kernel code on every CPU (measured here: 790 ms).
    pub fn warm() -> Result<Self, String> {
        Self::open(false)
    }

    fn open(inherit: bool) -> Result<Self, String> {
        let events = tracefs()?;
        let tracepoint = |name: &str| -> Result<Counter, String> {
            let id_file = events.join(name).join("id");
            let id = std::fs::read_to_string(&id_file)
                .map_err(|e| format!("reading {}: {e}", id_file.display()))?;
            let id = id
                .trim()
                .parse()
                .map_err(|e| format!("{}: {e}", id_file.display()))?;
            build(&mut Builder::new(Tracepoint::with_id(id)), inherit)
                .map_err(|e| denied(&format!("the {name} tracepoint"), e))
        };
        let syscalls = |names: &[&str]| -> Result<Vec<Counter>, String> {
            names
                .iter()
                .filter(|n| events.join(format!("syscalls/sys_enter_{n}")).is_dir())
                .map(|n| tracepoint(&format!("syscalls/sys_enter_{n}")))
                .collect()
        };
        Ok(Self {
            syscalls: tracepoint("raw_syscalls/sys_enter")?,
            reads: syscalls(READS)?,
            writes: syscalls(WRITES)?,
            waits: syscalls(WAITS)?,
            futex: syscalls(FUTEX)?,
        })
    }

    /// The counts so far, at `edge` of a span. They are read one after
    /// another while the process runs, the total first where a span opens
    /// and last where it closes: over the span, the total then holds every
    /// call of every kind.
    pub fn read(&mut self, edge: Edge) -> io::Result<Cost> {
        fn sum(counters: &mut [Counter]) -> io::Result<u64> {
            counters.iter_mut().map(Counter::read).sum()
        }
        let opening = match edge {
            Edge::Opens => Some(self.syscalls.read()?),
            Edge::Closes => None,
        };
        let (reads, writes) = (sum(&mut self.reads)?, sum(&mut self.writes)?);
        let (waits, futex) = (sum(&mut self.waits)?, sum(&mut self.futex)?);
        Ok(Cost {
            syscalls: match opening {
                Some(total) => total,
                None => self.syscalls.read()?,
            },
            reads,
            writes,
            waits,
            futex,
        })
    }
}

/// A counter of the calling thread (and, `inherit`ing, its descendants), on
/// any CPU, in kernel mode too (where system calls and switches happen),
/// counting now.
fn build(builder: &mut Builder, inherit: bool) -> io::Result<Counter> {
    builder
        .observe_self()
        .any_cpu()
        .inherit(inherit)
        .include_kernel()
        .enabled(true)
        .build()
}

/// Set once this process has mounted tracefs itself.
static MOUNTED: AtomicBool = AtomicBool::new(false);

/// Whether this process mounted tracefs (as root, where nothing had), so
/// that a run can say so.
pub fn mounted_tracefs() -> bool {
    MOUNTED.load(Ordering::Relaxed)
}

/// The folder of the kernel's tracepoint events. A fresh machine may have
/// the folder but nothing mounted on it: as root, it is mounted here.
fn tracefs() -> Result<PathBuf, String> {
    let find = || {
        TRACEFS
            .iter()
            .map(|dir| Path::new(dir).join("events"))
            .find(|events| events.join("raw_syscalls").is_dir())
    };
    if let Some(events) = find() {
        return Ok(events);
    }
    let advice = "mount it, as root: mount -t tracefs nodev /sys/kernel/tracing";
    if !nix::unistd::geteuid().is_root() {
        return Err(format!(
            "no tracefs with system-call tracepoints (at {}): {advice}",
            TRACEFS[0]
        ));
    }
    nix::mount::mount(
        Some("nodev"),
        TRACEFS[0],
        Some("tracefs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .map_err(|e| format!("mounting tracefs at {}: {e}; {advice}", TRACEFS[0]))?;
    MOUNTED.store(true, Ordering::Relaxed);
    find().ok_or_else(|| format!("tracefs at {} has no system-call tracepoints", TRACEFS[0]))
}

/// Why the kernel refused a counter, with what to change when it is a permission.
fn denied(what: &str, e: io::Error) -> String {
    let advice = match e.kind() {
        io::ErrorKind::PermissionDenied => {
            "; counting another process's system calls needs root (or CAP_PERFMON), or \
             kernel.perf_event_paranoid at -1"
        }
        _ => "",
    };
    format!("the kernel refused {what}: {e}{advice}")
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    /// Counts what `script` does in a shell started under the counters.
    fn counted(script: &str) -> Cost {
        let mut counters = Counters::inherited().unwrap_or_else(|why| panic!("{why}"));
        let before = counters.read(Edge::Opens).unwrap();
        Command::new("sh").args(["-c", script]).status().unwrap();
        counters.read(Edge::Closes).unwrap().since(&before)
    }

    #[test]
    #[ignore = "needs root, for the kernel's counters: scripts/test.sh runs it as root"]
    fn a_child_and_its_children_are_counted_by_kind() {
        // 200 reads and 200 writes of one byte each, in a grandchild (dd).
        let cost = counted("dd if=/dev/zero of=/dev/null bs=1 count=200 2>/dev/null");
        assert!(cost.reads >= 200 && cost.writes >= 200, "{cost:?}");
        assert!(cost.reads < 300 && cost.writes < 300, "{cost:?}");
        assert!(cost.syscalls > cost.reads + cost.writes, "{cost:?}");
    }

    #[test]
    #[ignore = "needs root, for the kernel's counters: scripts/test.sh runs it as root"]
    fn reading_from_another_thread_is_not_counted() {
        // As a process pair does: counters of a thread that then waits, read from here.
        let (sent, received) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let keeper = std::thread::spawn(move || {
            let _ = sent.send(Counters::inherited());
            let _ = released.recv();
        });
        let mut counters = received
            .recv()
            .unwrap()
            .unwrap_or_else(|why| panic!("{why}"));
        let a = counters.read(Edge::Opens).unwrap();
        let b = counters.read(Edge::Closes).unwrap();
        assert_eq!(a, b);
        drop(release);
        keeper.join().unwrap();
    }
}
