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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use inferno::collapse::Collapse;
use inferno::collapse::perf::{Folder, Options};

use super::callgrind::frame_name;

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
            format!("--event={CPU_CLOCK}"),
            format!("--call-graph=dwarf,{STACK_COPY}"),
            // Files are found by their paths here, not by build ids: no
            // pass over the samples when the program ends to find them.
            "--no-buildid".into(),
            "--no-buildid-cache".into(),
            format!("--output={}", out.display()),
            "--".into(),
            program.to_string_lossy().into_owned(),
        ];
        wrapped.extend_from_slice(args);
        (self.perf.clone(), wrapped)
    }

    /// What perf sampled into `out`, read by `perf script`.
    pub fn sampled(&self, out: &Path) -> Result<Sampled, String> {
        let done = Command::new(&self.perf)
            .args(["script", "--no-inline", "--input"])
            .arg(out)
            .output()
            .map_err(|e| format!("running perf script: {e}"))?;
        if !done.status.success() {
            let why = String::from_utf8_lossy(&done.stderr);
            return Err(format!("perf script {}: {}", out.display(), why.trim()));
        }
        cpu_stacks(&fold(&done.stdout[..])?)
    }
}

/// The CPU clock's samples of `perf script`'s output, folded by inferno,
/// each stack's count its nanoseconds.
fn fold(script: impl std::io::BufRead) -> Result<String, String> {
    let mut options = Options::default();
    options.event_filter = Some(CPU_CLOCK.into());
    options.annotate_kernel = true;
    options.nthreads = 1;
    let mut folded = Vec::new();
    Folder::from(options)
        .collapse(script, &mut folded)
        .map_err(|e| format!("folding perf's stacks: {e}"))?;
    String::from_utf8(folded).map_err(|_| "perf's stacks are not UTF-8".to_string())
}

/// Folded lines (`comm;main;serve 400000`) as stacks without their thread's
/// name at the root, so that a runtime's threads add up, and each frame
/// named as callgrind's are.
fn cpu_stacks(folded: &str) -> Result<Sampled, String> {
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
    if stacks.is_empty() {
        return Err("perf sampled no CPU time".into());
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

    #[test]
    fn samples_fold_by_stack_into_nanoseconds_without_their_thread_s_name() {
        assert_eq!(CPU_CLOCK, format!("cpu-clock/period={PERIOD_NS}/"));
        let folded = fold(SCRIPT.as_bytes()).unwrap();
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
