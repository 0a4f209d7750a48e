//! CPU time by call stack, sampled by perf on the kernel's software CPU
//! clock (this VM has no hardware counters): for a side callgrind cannot
//! run (the io_uring runtimes), and for the kernel's share of a side's
//! time, which callgrind does not see. Samples are a count by chance: a
//! figure of `k` samples is known to about ±2√k.
//!
//! No system call is traced beside the samples: on the 2-core VM each
//! traced call cost about 0.9 µs of perf's own (`perf_swevent_event`,
//! `perf_tp_event`), the largest function of an epoll runtime's profile
//! and nothing of an io_uring one's.
//!
//! Traced instead of sampled ([`Recording::Wakes`]): every wake-up a
//! side's threads issue (the scheduler's `sched_waking`, in the waker's
//! context) and every sleep they take (`sched_switch` away from a thread
//! that waits), each with its call stack, counted by the code path that
//! caused it. Counts, not CPU time: what perf costs does not change them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use inferno::collapse::Collapse;
use inferno::collapse::perf::{Folder, Options};

use super::callgrind::{crate_of, frame_name};

/// The CPU clock's sampling period: 5,000 samples per second of CPU.
pub const PERIOD_NS: u64 = 200_000;
/// The event that samples it, as perf is asked for it and names its samples.
const CPU_CLOCK: &str = "cpu-clock/period=200000/";
/// Bytes of each sampled thread's stack copied for unwinding: deeper
/// stacks are cut at their outer end. More loses samples here (a 16 KiB
/// copy at twice the rate lost chunks of them on the 2-core VM).
const STACK_COPY: u32 = 8192;
/// The ring buffer perf reads samples from, in pages per CPU.
const BUFFER_PAGES: u32 = 2048;

/// perf, found on this machine.
#[derive(Clone)]
pub struct Perf {
    perf: PathBuf,
    /// As `perf --version` says it: "perf version 6.1.187".
    pub version: String,
    pub recording: Recording,
    /// Tracing wake-ups: the uprobes at the entry of glibc's system call
    /// wrappers, whose stacks unwind where a stack taken inside the call
    /// stops at the wrapper.
    probes: Vec<String>,
}

/// What a wrapper's probe is named, before the wrapper's name.
const PROBE: &str = "entry_";

/// glibc's wrappers of the calls that wake another thread or sleep.
const WRAPPERS: [&str; 14] = [
    "__send",
    "write",
    "syscall",
    "epoll_wait",
    "epoll_pwait",
    "recv",
    "read",
    "sendto",
    "sendmsg",
    "writev",
    "poll",
    "clock_nanosleep",
    "close",
    "accept4",
];

/// The C library this program runs with, as its maps name it.
fn libc_path() -> Result<PathBuf, String> {
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| format!("reading /proc/self/maps: {e}"))?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libc.so"))
        .map(PathBuf::from)
        .ok_or_else(|| "no libc.so in this process's maps".to_string())
}

/// What perf records of a side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recording {
    /// CPU time, sampled on the CPU clock.
    CpuClock,
    /// Wake-ups issued and sleeps taken, every one traced.
    Wakes,
}

/// The wake-ups a thread issues: in the waker's context, whichever thread
/// it wakes (one of its own process's, or the peer's whose socket it
/// wrote to).
const WAKING: &str = "sched:sched_waking";
/// A thread switched away from,
const SWITCH: &str = "sched:sched_switch";
/// only where it waits (interruptibly or not), not where it is preempted.
const SLEEPS: &str = "prev_state == 1 || prev_state == 2";
/// Kernel frames of an interrupt's entry: a wake-up raised there is the
/// interrupt's (a timer, a device), not the code it happened to interrupt.
const INTERRUPTS: [&str; 3] = ["asm_sysvec_", "asm_common_interrupt", "irq_exit"];
/// A path is named by its innermost frames of the program's own code, at
/// most these many.
const PATH_FRAMES: usize = 4;

/// What one traced run of one side did, by the path in the program's own
/// code that caused it (innermost first, `a ← b ← c`): wake-ups issued,
/// and sleeps taken.
#[derive(Debug, Default, PartialEq)]
pub struct Traced {
    pub wakes: Sampled,
    pub sleeps: Sampled,
    /// The same by whole stack, outermost frame first, kernel frames and
    /// those of the standard library and C at the inner end left out: for
    /// the flame graph.
    pub wake_stacks: Sampled,
}

/// What one sampled run of one side spent: nanoseconds of CPU at the tip
/// of each call stack (outermost frame first, kernel frames marked `_[k]`).
pub type Sampled = BTreeMap<String, u64>;

impl Perf {
    /// perf on the PATH, or why there is none.
    pub fn find() -> Result<Self, String> {
        let perf = which::which("perf").map_err(|_| {
            "perf is not installed (Debian: apt-get install linux-perf)".to_string()
        })?;
        let out = Command::new(&perf)
            .arg("--version")
            .output()
            .map_err(|e| format!("running perf --version: {e}"))?;
        if !out.status.success() {
            // Debian's wrapper, where no perf matches the running kernel.
            let why = String::from_utf8_lossy(&out.stderr);
            return Err(format!("perf does not run here: {}", why.trim()));
        }
        Ok(Self {
            version: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            perf,
            recording: Recording::CpuClock,
            probes: Vec::new(),
        })
    }

    /// The same perf, tracing wake-ups and sleeps rather than sampling.
    pub fn tracing_wakes(&self) -> Result<Self, String> {
        let libc = libc_path()?;
        for wrapper in WRAPPERS {
            // One already there (an earlier run's, or a run's beside this),
            // or a wrapper this libc lacks, fails here: what is defined is
            // read back below.
            // Named apart from the function: perf's event parser takes
            // `probe_libc:write` for something else.
            Command::new(&self.perf)
                .args(["probe", "-q", "-x"])
                .arg(&libc)
                .args(["-a", &format!("{PROBE}{wrapper}={wrapper}")])
                .output()
                .map_err(|e| format!("running perf probe: {e}"))?;
        }
        let listed = Command::new(&self.perf)
            .args(["probe", "-l"])
            .output()
            .map_err(|e| format!("running perf probe -l: {e}"))?;
        let listed = String::from_utf8_lossy(&listed.stdout);
        let probes: Vec<String> = WRAPPERS
            .iter()
            .map(|w| format!("probe_libc:{PROBE}{w}"))
            .filter(|event| listed.split_whitespace().any(|word| word == event))
            .collect();
        Ok(Self {
            recording: Recording::Wakes,
            probes,
            ..self.clone()
        })
    }

    /// The program and arguments that run `program args` under perf,
    /// sampled into `out`: the CPU clock with call stacks (unwound from a
    /// copy of the stack by DWARF, since release builds keep no frame
    /// pointers).
    pub fn wrap(&self, program: &Path, args: &[String], out: &Path) -> (PathBuf, Vec<String>) {
        let mut wrapped = vec![
            "record".to_string(),
            "--quiet".into(),
            format!("--mmap-pages={BUFFER_PAGES}"),
        ];
        match self.recording {
            Recording::CpuClock => wrapped.push(format!("--event={CPU_CLOCK}")),
            Recording::Wakes => wrapped.extend([
                format!("--event={WAKING}"),
                format!("--event={SWITCH}"),
                format!("--filter={SLEEPS}"),
            ]),
        }
        wrapped.extend(self.probes.iter().map(|p| format!("--event={p}")));
        wrapped.extend([
            format!("--call-graph=dwarf,{STACK_COPY}"),
            // Files are found by their paths here, not by build ids: no
            // pass over the samples when the program ends to find them.
            "--no-buildid".into(),
            "--no-buildid-cache".into(),
            format!("--output={}", out.display()),
            "--".into(),
            program.to_string_lossy().into_owned(),
        ]);
        wrapped.extend_from_slice(args);
        (self.perf.clone(), wrapped)
    }

    /// What perf sampled into `out`, read by `perf script`.
    pub fn sampled(&self, out: &Path) -> Result<Sampled, String> {
        cpu_stacks(&fold(&self.script(out)?[..], CPU_CLOCK)?)
    }

    /// What perf traced into `out`.
    pub fn traced(&self, out: &Path) -> Result<Traced, String> {
        let script = self.script(out)?;
        let (wakes, sleeps) = attributed(&String::from_utf8_lossy(&script));
        let by = |stacks: &Sampled, key: fn(&[String]) -> String| {
            let mut counted = Sampled::new();
            for (stack, n) in stacks {
                let frames: Vec<String> = stack.split(';').map(String::from).collect();
                *counted.entry(key(&frames)).or_default() += n;
            }
            counted
        };
        Ok(Traced {
            wakes: by(&wakes, path),
            sleeps: by(&sleeps, path),
            wake_stacks: by(&wakes, |frames| own(frames).join(";")),
        })
    }

    /// `perf script`'s text of `out`.
    fn script(&self, out: &Path) -> Result<Vec<u8>, String> {
        let done = Command::new(&self.perf)
            .args(["script", "--no-inline", "--input"])
            .arg(out)
            .output()
            .map_err(|e| format!("running perf script: {e}"))?;
        if !done.status.success() {
            let why = String::from_utf8_lossy(&done.stderr);
            return Err(format!("perf script {}: {}", out.display(), why.trim()));
        }
        Ok(done.stdout)
    }
}

/// One sample of `perf script`'s text: its thread, its event, and its
/// frames, innermost first, each its name (kernel ones marked `_[k]`),
/// object and address.
struct Sample<'a> {
    tid: &'a str,
    event: &'a str,
    frames: Vec<(String, &'a str, u64)>,
}

fn sample(text: &str) -> Option<Sample<'_>> {
    let mut lines = text.lines();
    let head = lines.next()?;
    let words: Vec<&str> = head.split_whitespace().collect();
    let at = words.iter().position(|w| {
        let id = w.rsplit('/').next().unwrap_or(w);
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
    })?;
    let tid = words[at].rsplit('/').next()?;
    let event = words[at..]
        .iter()
        .find(|w| w.ends_with(':') && w[..w.len() - 1].contains(':'))?;
    let frames = lines
        .filter_map(|l| {
            let (addr, rest) = l.trim().split_once(' ')?;
            let (symbol, object) = rest.rsplit_once(" (")?;
            let object = object.trim_end_matches(')');
            let name = symbol.rsplit_once("+0x").map_or(symbol, |(n, _)| n);
            let name = match object {
                "[kernel.kallsyms]" => format!("{}_[k]", frame_name(name)),
                _ => frame_name(name),
            };
            Some((name, object, u64::from_str_radix(addr, 16).ok()?))
        })
        .collect();
    Some(Sample {
        tid,
        event: &event[..event.len() - 1],
        frames,
    })
}

/// How far into a wrapper a call inside it may be from its entry.
const WRAPPER_BYTES: u64 = 4096;

/// Each wake-up and each sleep of `script`, counted by its stack
/// (outermost first): the stack at the entry of the wrapper its thread
/// is in, where that thread last entered one and the event's innermost
/// user frame lies in it; else the event's own.
fn attributed(script: &str) -> (Sampled, Sampled) {
    let mut entered: BTreeMap<&str, Vec<(String, &str, u64)>> = BTreeMap::new();
    let (mut wakes, mut sleeps) = (Sampled::new(), Sampled::new());
    for text in script.split("\n\n") {
        let Some(s) = sample(text) else { continue };
        if s.event.starts_with("probe_libc:") {
            entered.insert(s.tid, s.frames);
            continue;
        }
        let counted = match s.event {
            WAKING => &mut wakes,
            SWITCH => &mut sleeps,
            _ => continue,
        };
        let user = s.frames.iter().find(|(n, ..)| !n.ends_with("_[k]"));
        let inside = |entry: &&Vec<(String, &str, u64)>| {
            let (Some((_, object, at)), Some((_, start_object, start))) = (user, entry.first())
            else {
                return false;
            };
            object == start_object && at >= start && at - start < WRAPPER_BYTES
        };
        let interrupt = s
            .frames
            .iter()
            .any(|(n, ..)| INTERRUPTS.iter().any(|i| n.starts_with(i)));
        let frames = match entered.get(s.tid).filter(inside) {
            Some(entry) if !interrupt => {
                // The kernel's part of the event, then the wrapper's callers.
                let kernel = s.frames.iter().take_while(|(n, ..)| n.ends_with("_[k]"));
                kernel
                    .chain(entry)
                    .map(|(n, ..)| n.clone())
                    .collect::<Vec<_>>()
            }
            _ => s.frames.iter().map(|(n, ..)| n.clone()).collect(),
        };
        let stack: Vec<String> = frames.into_iter().rev().collect();
        *counted.entry(stack.join(";")).or_default() += 1;
    }
    (wakes, sleeps)
}

/// Whether a frame is none of the program's own code: the kernel's, C's,
/// the standard library's.
fn foreign(frame: &str) -> bool {
    frame.ends_with("_[k]") || matches!(crate_of(frame), None | Some("std" | "core" | "alloc"))
}

/// A stack's frames (outermost first) up to the program's own code: an
/// interrupt's, where it was raised in one; else those left once the
/// foreign frames are taken off its inner end, or, where none is left,
/// the innermost outside the kernel (the C wrapper the call went through,
/// its callers inlined into the standard library's).
fn own(frames: &[String]) -> Vec<String> {
    if frames
        .iter()
        .any(|f| INTERRUPTS.iter().any(|i| f.starts_with(i)))
    {
        return vec!["[interrupt]".into()];
    }
    let kept = frames.len() - frames.iter().rev().take_while(|f| foreign(f)).count();
    match kept {
        0 => frames
            .iter()
            .rev()
            .find(|f| !f.ends_with("_[k]"))
            .or(frames.first())
            .cloned()
            .into_iter()
            .collect(),
        n => frames[..n].to_vec(),
    }
}

/// A stack's innermost frames of the program's own code, innermost first,
/// the foreign ones between them left out: `tokio::..::unpark ←
/// tokio::..::notify_parked_local ← ...`; where it has none, its [`own`].
fn path(frames: &[String]) -> String {
    let own = own(frames);
    let mine: Vec<&str> = own
        .iter()
        .rev()
        .filter(|f| !foreign(f))
        .take(PATH_FRAMES)
        .map(String::as_str)
        .collect();
    match mine.is_empty() {
        true => own.last().cloned().unwrap_or_default(),
        false => mine.join(" ← "),
    }
}

/// `perf script`'s samples of `event`, folded by inferno.
fn fold(script: impl std::io::BufRead, event: &str) -> Result<String, String> {
    let mut options = Options::default();
    options.event_filter = Some(event.into());
    options.annotate_kernel = true;
    options.nthreads = 1;
    let mut folded = Vec::new();
    Folder::from(options)
        .collapse(script, &mut folded)
        .map_err(|e| format!("folding perf's stacks: {e}"))?;
    String::from_utf8(folded).map_err(|_| "perf's stacks are not UTF-8".to_string())
}

/// The CPU clock's folded samples as stacks, each its nanoseconds.
fn cpu_stacks(folded: &str) -> Result<Sampled, String> {
    let stacks = stacks(folded)?;
    if stacks.is_empty() {
        return Err("perf sampled no CPU time".into());
    }
    Ok(stacks)
}

/// Folded lines (`comm;main;serve 400000`) as stacks without their thread's
/// name at the root, so that a runtime's threads add up, and each frame
/// named as callgrind's are.
fn stacks(folded: &str) -> Result<Sampled, String> {
    let mut stacks = BTreeMap::new();
    for line in folded.lines() {
        let parsed = line
            .rsplit_once(' ')
            .and_then(|(stack, n)| Some((stack, n.parse::<u64>().ok()?)));
        let Some((stack, ns)) = parsed else {
            return Err(format!("inferno folded a line without a count: {line:?}"));
        };
        let frames: Vec<String> = stack.split(';').skip(1).map(frame_name).collect();
        // A sample whose stack perf could not unwind at all is its thread's.
        let stack = match frames.is_empty() {
            true => "[unknown]".to_string(),
            false => frames.join(";"),
        };
        *stacks.entry(stack).or_default() += ns;
    }
    Ok(stacks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `perf script`'s text for two CPU clock samples of one thread, as
    /// perf 6.1 prints them.
    const SCRIPT: &str = "\
server-0  4242   100.000100:     200000 cpu-clock/period=200000/: 
\tffffffff81001000 copy_user_generic+0x10 ([kernel.kallsyms])
\t    55555555a000 pingpong::fault::injected_work::h0123456789abcdef+0x20 (/b/pingpong-monoio)
\t    55555555b000 main+0x30 (/b/pingpong-monoio)

server-0  4242   100.000300:     200000 cpu-clock/period=200000/: 
\t    55555555a000 pingpong::fault::injected_work::h0123456789abcdef+0x24 (/b/pingpong-monoio)
\t    55555555b000 main+0x30 (/b/pingpong-monoio)

";

    /// `perf script`'s text for a wrapper's entry, the wake-up issued in
    /// it (whose own user stack stops at the wrapper), a sleep whose thread
    /// entered no wrapper that holds it, and a wake-up an interrupt raised,
    /// as perf 6.1 prints them.
    const TRACED: &str = "\
server-0 4242 [000] 100.000050: probe_libc:syscall: (7f0000101810)
\t          101810 syscall+0x0 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          24a100 std::sys::pal::unix::futex::futex_wake::h0123456789abcdef+0x20 (/b/pingpong-mio)
\t          24a200 std::thread::Thread::unpark::h0123456789abcdef+0x20 (/b/pingpong-mio)
\t          24a300 pingpong::fault::injected_wake::h0123456789abcdef+0x20 (/b/pingpong-mio)
\t          24a350 std::sys::backtrace::__rust_begin_short_backtrace::h0123456789abcdef+0x20 (/b/pingpong-mio)
\t          24a400 pingpong::server::serve::h0123456789abcdef+0x20 (/b/pingpong-mio)

server-0 4242 [000] 100.000100: sched:sched_waking: comm=idle pid=4243 prio=120 target_cpu=001
\tffffffff813b53c6 try_to_wake_up+0x3b6 ([kernel.kallsyms])
\tffffffff8223c951 do_syscall_64+0x71 ([kernel.kallsyms])
\t          101829 syscall+0x19 (/usr/lib/x86_64-linux-gnu/libc.so.6)

server-0 4242 [000] 100.000200: sched:sched_switch: prev_comm=server-0 prev_pid=4242 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
\tffffffff82248208 __schedule+0x628 ([kernel.kallsyms])
\t          108f36 epoll_wait+0x56 (/usr/lib/x86_64-linux-gnu/libc.so.6)

server-0 4242 [000] 100.000300: sched:sched_waking: comm=rcu_preempt pid=15 prio=120 target_cpu=000
\tffffffff813b53c6 try_to_wake_up+0x3b6 ([kernel.kallsyms])
\tffffffff81000e06 asm_sysvec_apic_timer_interrupt+0x16 ([kernel.kallsyms])
\t          24a400 pingpong::server::serve::h0123456789abcdef+0x20 (/b/pingpong-mio)

";

    #[test]
    fn a_wake_up_is_counted_where_the_program_s_own_code_issued_it() {
        let (wakes, sleeps) = attributed(TRACED);
        let by = |s: &Sampled| -> BTreeMap<String, u64> {
            let mut out = BTreeMap::new();
            for (stack, n) in s {
                let frames: Vec<String> = stack.split(';').map(String::from).collect();
                *out.entry(path(&frames)).or_default() += n;
            }
            out
        };
        let expected = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
            pairs.iter().map(|&(s, n)| (s.to_string(), n)).collect()
        };
        // The wake-up inside `syscall` takes the stack of its entry; the
        // standard library's frames between the program's are left out.
        assert_eq!(
            by(&wakes),
            expected(&[
                ("[interrupt]", 1),
                (
                    "pingpong::fault::injected_wake ← pingpong::server::serve",
                    1
                ),
            ])
        );
        // No wrapper's entry holds the sleep: its own stack names the wrapper.
        assert_eq!(by(&sleeps), expected(&[("epoll_wait", 1)]));
        // The whole stack, outermost first, the kernel's frames inner.
        assert!(
            wakes.contains_key(
                "pingpong::server::serve;std::sys::backtrace::__rust_begin_short_backtrace;\
                 pingpong::fault::injected_wake;std::thread::Thread::unpark;\
                 std::sys::pal::unix::futex::futex_wake;syscall;do_syscall_64_[k];\
                 try_to_wake_up_[k]"
            ),
            "{wakes:?}"
        );
    }

    #[test]
    fn samples_fold_by_stack_into_nanoseconds_without_their_thread_s_name() {
        assert_eq!(CPU_CLOCK, format!("cpu-clock/period={PERIOD_NS}/"));
        let folded = fold(SCRIPT.as_bytes(), CPU_CLOCK).unwrap();
        let stacks = cpu_stacks(&folded).unwrap();
        let expected: BTreeMap<String, u64> = [
            ("main;pingpong::fault::injected_work", PERIOD_NS),
            (
                "main;pingpong::fault::injected_work;copy_user_generic_[k]",
                PERIOD_NS,
            ),
        ]
        .into_iter()
        .map(|(s, n)| (s.to_string(), n))
        .collect();
        assert_eq!(stacks, expected);
        assert!(cpu_stacks("").unwrap_err().contains("no CPU time"));
        assert!(cpu_stacks("a;b").unwrap_err().contains("without a count"));
    }
}
