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

use super::call_sites::CallSites;
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
/// The kernel's functions that dispatch every system call: the frame
/// after them is the call's own.
const SYSCALL_DISPATCH: [&str; 2] = ["do_syscall_64", "x64_sys_call"];
/// The kernel's entries of a system call, before its name: the one the
/// architecture's table calls, or, inlined into it, the call's own.
const SYSCALL_ENTRIES: [&str; 2] = ["__x64_sys_", "__do_sys_"];
/// What else comes before a system call's name in its own kernel function,
/// where its entry is inlined into the dispatch (6.9 on): the function the
/// entry wraps (`do_writev`, `ksys_write`).
const SYSCALL_WRAPPED: [&str; 4] = ["__se_sys_", "__sys_", "ksys_", "do_"];
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
        })
    }

    /// The same perf, tracing wake-ups and sleeps rather than sampling.
    pub fn tracing_wakes(&self) -> Self {
        Self {
            recording: Recording::Wakes,
            ..self.clone()
        }
    }

    /// The program and arguments that run `program args` under perf,
    /// recorded into `out`: the CPU clock with call stacks unwound from a
    /// copy of the stack by DWARF (release builds keep no frame pointers);
    /// or every wake-up and sleep, with the stack the kernel walks by
    /// frame pointers (the program must keep them: a stack taken inside a
    /// system call, unwound by DWARF, stops at C's wrapper here, and a
    /// copy of the stack at every event costs the program more than it
    /// does at a load whose threads park).
    pub fn wrap(&self, program: &Path, args: &[String], out: &Path) -> (PathBuf, Vec<String>) {
        let mut wrapped = vec![
            "record".to_string(),
            "--quiet".into(),
            format!("--mmap-pages={BUFFER_PAGES}"),
        ];
        match self.recording {
            Recording::CpuClock => wrapped.extend([
                format!("--event={CPU_CLOCK}"),
                format!("--call-graph=dwarf,{STACK_COPY}"),
            ]),
            Recording::Wakes => wrapped.extend([
                format!("--event={WAKING}"),
                format!("--event={SWITCH}"),
                format!("--filter={SLEEPS}"),
                "--call-graph=fp".into(),
            ]),
        }
        wrapped.extend([
            // Files are found by their paths here, not by build ids: no
            // pass over the samples when the program ends to find them.
            "--no-buildid".into(),
            "--no-buildid-cache".into(),
            // No thread watching for BPF programs loaded meanwhile (none
            // of ours are): it polls with a 1 s timeout, which perf waits
            // out when the program ends, a second of every record.
            "--no-bpf-event".into(),
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
        let mut sites = CallSites::default();
        let (wakes, sleeps) = attributed(&String::from_utf8_lossy(&script), &mut sites);
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

/// One event of `perf script`'s text: its name, and its frames, innermost
/// first.
struct Sample<'a> {
    event: &'a str,
    frames: Vec<Frame<'a>>,
}

/// A frame: its name (a kernel one's marked `_[k]`), its object and its
/// address there.
struct Frame<'a> {
    name: String,
    object: &'a str,
    address: u64,
}

const KERNEL: &str = "[kernel.kallsyms]";

fn sample(text: &str) -> Option<Sample<'_>> {
    let mut lines = text.lines();
    let event = lines
        .next()?
        .split_whitespace()
        .find(|w| w.ends_with(':') && w[..w.len() - 1].contains(':'))?;
    let frames = lines
        .filter_map(|l| {
            let (address, rest) = l.trim().split_once(' ')?;
            let (symbol, object) = rest.rsplit_once(" (")?;
            let object = object.strip_suffix(')')?;
            let name = symbol.rsplit_once("+0x").map_or(symbol, |(n, _)| n);
            let name = match object {
                KERNEL => format!("{}_[k]", frame_name(name)),
                _ => frame_name(name),
            };
            let address = u64::from_str_radix(address, 16).ok()?;
            Some(Frame {
                name,
                object,
                address,
            })
        })
        .collect();
    Some(Sample {
        event: &event[..event.len() - 1],
        frames,
    })
}

/// Each wake-up and each sleep of `script`, counted by its stack
/// (outermost first), with the frame the walk skipped put back where
/// `sites` finds it: the one between the innermost user frame, in another
/// object (C's wrapper), and the walk's next.
fn attributed(script: &str, sites: &mut CallSites) -> (Sampled, Sampled) {
    let (mut wakes, mut sleeps) = (Sampled::new(), Sampled::new());
    for text in script.split("\n\n") {
        let Some(s) = sample(text) else { continue };
        let counted = match s.event {
            WAKING => &mut wakes,
            SWITCH => &mut sleeps,
            _ => continue,
        };
        let mut names: Vec<&str> = s.frames.iter().map(|f| f.name.as_str()).collect();
        let skipped = s
            .frames
            .iter()
            .position(|f| f.object != KERNEL)
            .and_then(|i| {
                let (wrapper, next) = (&s.frames[i], s.frames.get(i + 1)?);
                let callee = match wrapper.object == next.object {
                    true => None,
                    false => sites.callee(Path::new(next.object), next.address),
                }?;
                (callee != next.name).then_some((i + 1, callee))
            });
        if let Some((at, callee)) = &skipped {
            names.insert(*at, callee);
        }
        names.reverse();
        *counted.entry(names.join(";")).or_default() += 1;
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
/// the foreign ones between them left out, after the system call it was
/// made in: `futex: tokio::..::wake_by_val ← event_listener::..::notify`;
/// where it has none, its [`own`].
fn path(frames: &[String]) -> String {
    let call = syscall(frames).map_or(String::new(), |name| format!("{name}: "));
    let own = own(frames);
    let mine: Vec<&str> = own
        .iter()
        .rev()
        .filter(|f| !foreign(f))
        .take(PATH_FRAMES)
        .map(String::as_str)
        .collect();
    match (mine.is_empty(), own.as_slice()) {
        (_, [only]) if only == "[interrupt]" => only.clone(),
        (true, _) => call + own.last().map_or("", String::as_str),
        (false, _) => call + &mine.join(" ← "),
    }
}

/// The system call a stack (outermost frame first) was made in: the kernel
/// function its dispatch called, or, where the walk starts inside it (a
/// sleep's stack may), the first that names one.
fn syscall(frames: &[String]) -> Option<&str> {
    let kernel: Vec<&str> = frames
        .iter()
        .filter_map(|f| f.strip_suffix("_[k]"))
        .collect();
    let entry = |f: &&str| SYSCALL_ENTRIES.iter().any(|p| f.starts_with(p));
    let own = (kernel.iter().copied())
        .skip_while(|f| !SYSCALL_DISPATCH.contains(f))
        .find(|f| !SYSCALL_DISPATCH.contains(f))
        .or_else(|| kernel.iter().copied().find(entry))?;
    let prefixes = SYSCALL_ENTRIES.iter().chain(&SYSCALL_WRAPPED);
    Some(
        prefixes
            .clone()
            .find_map(|p| own.strip_prefix(p))
            .unwrap_or(own),
    )
}

/// The crate of a [`path`]'s innermost own frame, past the call it names.
pub fn crate_of_path(path: &str) -> Option<&str> {
    crate_of(path.split_once(": ").map_or(path, |(_, frames)| frames))
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

    /// `perf script`'s text for a wake-up issued through C's `syscall`
    /// (the frame-pointer walk starts at its caller's caller), a sleep in
    /// `epoll_wait` whose stack has no frame of the program's own code, a
    /// wake-up by `writev` (its entry inlined into the dispatch, as kernel
    /// 6.18 builds it), and one an interrupt raised, as perf 6.1 prints
    /// them.
    const TRACED: &str = "\
server-0 4242 [000] 100.000100: sched:sched_waking: comm=idle pid=4243 prio=120 target_cpu=001
\tffffffff813b53c6 try_to_wake_up+0x3b6 ([kernel.kallsyms])
\tffffffff8144bfed __x64_sys_futex+0x12d ([kernel.kallsyms])
\tffffffff8223c951 do_syscall_64+0x71 ([kernel.kallsyms])
\t          101829 syscall+0x19 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          24a200 std::thread::Thread::unpark::h0123456789abcdef+0x20 (/b/pingpong-mio)
\t          24a300 pingpong::fault::injected_wake::h0123456789abcdef+0x20 (/b/pingpong-mio)
\t          24a350 std::sys::backtrace::__rust_begin_short_backtrace::h0123456789abcdef+0x20 (/b/pingpong-mio)
\t          24a400 pingpong::server::serve::h0123456789abcdef+0x20 (/b/pingpong-mio)

server-0 4242 [000] 100.000200: sched:sched_switch: prev_comm=server-0 prev_pid=4242 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
\tffffffff82248208 __schedule+0x628 ([kernel.kallsyms])
\tffffffff81759d8c __x64_sys_epoll_wait+0x1c ([kernel.kallsyms])
\t          108f36 epoll_wait+0x56 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          24a350 std::sys::backtrace::__rust_begin_short_backtrace::h0123456789abcdef+0x20 (/b/pingpong-mio)

server-0 4242 [000] 100.000250: sched:sched_waking: comm=client-0 pid=5151 prio=120 target_cpu=001
\tffffffff813b53c6 try_to_wake_up+0x3b6 ([kernel.kallsyms])
\tffffffff82064420 tcp_sendmsg_locked+0x7f0 ([kernel.kallsyms])
\tffffffff816db305 do_writev+0xf5 ([kernel.kallsyms])
\tffffffff8223c951 do_syscall_64+0x71 ([kernel.kallsyms])
\t           fde9d __GI___writev+0x4d (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          24a400 pingpong::server::serve::h0123456789abcdef+0x20 (/b/pingpong-mio)

server-0 4242 [000] 100.000300: sched:sched_waking: comm=rcu_preempt pid=15 prio=120 target_cpu=000
\tffffffff813b53c6 try_to_wake_up+0x3b6 ([kernel.kallsyms])
\tffffffff81000e06 asm_sysvec_apic_timer_interrupt+0x16 ([kernel.kallsyms])
\t          24a400 pingpong::server::serve::h0123456789abcdef+0x20 (/b/pingpong-mio)

";

    #[test]
    fn a_wake_up_is_counted_where_the_program_s_own_code_issued_it() {
        let (wakes, sleeps) = attributed(TRACED, &mut CallSites::default());
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
        // Named by the call and the program's own frames, the standard
        // library's between them left out.
        assert_eq!(
            by(&wakes),
            expected(&[
                ("[interrupt]", 1),
                (
                    "futex: pingpong::fault::injected_wake ← pingpong::server::serve",
                    1
                ),
                ("writev: pingpong::server::serve", 1),
            ])
        );
        // No frame of the program's own: the call and C's wrapper name it.
        assert_eq!(by(&sleeps), expected(&[("epoll_wait: epoll_wait", 1)]));
        let named = "futex: pingpong::fault::injected_wake ← pingpong::server::serve";
        assert_eq!(crate_of_path(named), Some("pingpong"));
        assert_eq!(crate_of_path("epoll_wait: epoll_wait"), None);
        // The whole stack, outermost first, the kernel's frames inner.
        assert!(
            wakes.contains_key(
                "pingpong::server::serve;std::sys::backtrace::__rust_begin_short_backtrace;\
                 pingpong::fault::injected_wake;std::thread::Thread::unpark;syscall;\
                 do_syscall_64_[k];__x64_sys_futex_[k];try_to_wake_up_[k]"
            ),
            "{wakes:?}"
        );
        assert_eq!(sleeps.values().sum::<u64>(), 1);
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
