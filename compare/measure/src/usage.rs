//! What a process spent over the measurement window: CPU time, in
//! nanoseconds from the process's CPU clock and user and system apart in
//! clock ticks; the CPU it wanted beyond that (time its threads waited in
//! a run queue, and the hypervisor's steal on its CPUs); context switches;
//! and its peak resident memory, read from /proc at the window's edges.

use std::io::Read;
use std::time::Instant;

use anyhow::{Context, Result};
use procfs::process::Process;

use model::results::Usage;

/// A process's counters at one moment.
#[derive(Debug, Clone)]
pub struct Sample {
    at: Instant,
    /// CPU time of all its threads, ended ones too, in nanoseconds.
    cpu_ns: Option<u64>,
    /// The same in clock ticks, user and system apart.
    user_ticks: u64,
    system_ticks: u64,
    /// Summed over its live threads.
    voluntary_switches: u64,
    involuntary_switches: u64,
    /// Time its live threads were ready to run and waited for a CPU, in
    /// nanoseconds, summed.
    waited_ns: u64,
    /// What the hypervisor took from the CPUs it may run on: a busy
    /// process's time lost to another machine, which its CPU clock leaves
    /// out. None where /proc/stat or its affinity cannot be read.
    stolen: Option<Stolen>,
    peak_rss_kib: u64,
}

impl Sample {
    pub fn take(pid: u32) -> Result<Self> {
        let mut sample = Self::times(pid)?;
        sample.add(threads(pid));
        Ok(sample)
    }

    /// Samples each of `pids` that is running: every process's CPU time
    /// and memory now, then, on a thread of its own, its threads'
    /// switches and waits. With a thread per connection those are 40,000
    /// files, which take longer to read than a window lasts: read in line,
    /// they delayed the window's closing sample and stretched its CPU
    /// figures.
    pub fn start<const N: usize>(pids: [Option<u32>; N]) -> Sampling<N> {
        let times = pids.map(|pid| Self::times(pid?).ok());
        let threads = std::thread::spawn(move || pids.map(|pid| pid.map(threads)));
        Sampling { times, threads }
    }

    fn add(&mut self, threads: Threads) {
        self.voluntary_switches = threads.voluntary;
        self.involuntary_switches = threads.involuntary;
        self.waited_ns = threads.waited_ns;
    }

    /// A sample without its threads' switches and waits.
    fn times(pid: u32) -> Result<Self> {
        let at = Instant::now();
        let process = Process::new(pid as i32).with_context(|| format!("process {pid}"))?;
        let stat = process
            .stat()
            .with_context(|| format!("reading /proc/{pid}/stat"))?;
        let status = process
            .status()
            .with_context(|| format!("reading /proc/{pid}/status"))?;
        Ok(Self {
            cpu_ns: cpu_ns(pid),
            at,
            user_ticks: stat.utime,
            system_ticks: stat.stime,
            voluntary_switches: 0,
            involuntary_switches: 0,
            waited_ns: 0,
            stolen: stolen(pid),
            // Gone once the process has exited: a zombie's figures are not a sample.
            peak_rss_kib: status.vmhwm.with_context(|| {
                format!("/proc/{pid}/status has no VmHWM: the process has exited")
            })?,
        })
    }

    /// What the process spent from `self` until `later`.
    pub fn until(&self, later: &Sample) -> Usage {
        let seconds = (later.at - self.at).as_secs_f64().max(1e-9);
        let per_tick = 100.0 / procfs::ticks_per_second() as f64 / seconds;
        let user = later.user_ticks.saturating_sub(self.user_ticks) as f64 * per_tick;
        let system = later.system_ticks.saturating_sub(self.system_ticks) as f64 * per_tick;
        // Threads that exited in between take their switches with them.
        let rate = |a: u64, b: u64| b.saturating_sub(a) as f64 / seconds;
        let cpu_ns = later
            .cpu_ns
            .zip(self.cpu_ns)
            .map(|(b, a)| b.saturating_sub(a));
        let waited_ns = later.waited_ns.saturating_sub(self.waited_ns) as f64;
        let stolen_ns = |ran_ns: f64| {
            let stolen = later.stolen.zip(self.stolen);
            stolen.map_or(0.0, |(b, a)| a.share_until(&b, ran_ns + waited_ns, seconds))
        };
        Usage {
            cpu_percent: user + system,
            user_percent: user,
            system_percent: system,
            peak_rss_kib: later.peak_rss_kib,
            voluntary_switches_per_s: rate(self.voluntary_switches, later.voluntary_switches),
            involuntary_switches_per_s: rate(self.involuntary_switches, later.involuntary_switches),
            demand_percent: cpu_ns.map(|ns| {
                let ns = ns as f64;
                (ns + waited_ns + stolen_ns(ns)) / seconds / 1e7
            }),
            cpu_ns,
        }
    }
}

/// Samples of several processes whose threads are being read.
pub struct Sampling<const N: usize> {
    times: [Option<Sample>; N],
    threads: std::thread::JoinHandle<[Option<Threads>; N]>,
}

impl<const N: usize> Sampling<N> {
    /// The samples, once their threads are read.
    pub fn finish(self) -> [Option<Sample>; N] {
        let threads = self.threads.join().unwrap_or([None; N]);
        let mut times = self.times;
        for (sample, threads) in times.iter_mut().zip(threads) {
            match (sample.as_mut(), threads) {
                (Some(sample), Some(threads)) => sample.add(threads),
                _ => *sample = None,
            }
        }
        times
    }
}

/// The CPU time of `pid` and all its threads so far, in nanoseconds: the
/// process's CPU clock, which the kernel keeps exactly, where /proc's
/// ticks move in steps of 10 ms; none where the kernel refuses it.
fn cpu_ns(pid: u32) -> Option<u64> {
    let clock = nix::time::clock_getcpuclockid(nix::unistd::Pid::from_raw(pid as i32)).ok()?;
    let t = nix::time::clock_gettime(clock).ok()?;
    Some(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

/// The steal, in ticks, of the CPUs `pid` may run on, from /proc/stat.
fn stolen(pid: u32) -> Option<Stolen> {
    use procfs::CurrentSI;
    let cpus = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(pid as i32)).ok()?;
    let stats = procfs::KernelStats::current().ok()?;
    let allowed: Vec<_> = (stats.cpu_time.iter().enumerate())
        .filter(|(cpu, _)| cpus.is_set(*cpu).unwrap_or(false))
        .collect();
    Some(Stolen {
        ticks: allowed.iter().filter_map(|(_, time)| time.steal).sum(),
        cpus: allowed.len() as u32,
    })
}

/// The hypervisor's steal, summed over the CPUs a process may run on.
#[derive(Debug, Clone, Copy)]
struct Stolen {
    ticks: u64,
    cpus: u32,
}

impl Stolen {
    /// The part of the steal from `self` until `later` that a process which
    /// ran and waited `busy_ns` over `seconds` lost: the steal weighed by
    /// the share of its CPUs' remaining time it wanted. An idle process
    /// loses none of it; one thread spinning on one of two CPUs, half.
    fn share_until(&self, later: &Stolen, busy_ns: f64, seconds: f64) -> f64 {
        let per_tick = 1e9 / procfs::ticks_per_second() as f64;
        let stolen_ns = later.ticks.saturating_sub(self.ticks) as f64 * per_tick;
        let left_ns = (later.cpus.max(1) as f64 * seconds * 1e9 - stolen_ns).max(1.0);
        stolen_ns * (busy_ns / left_ns).min(1.0)
    }
}

/// What a process's live threads have done so far, summed over them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Threads {
    voluntary: u64,
    involuntary: u64,
    waited_ns: u64,
}

/// The context switches and run-queue waits of `pid`'s live threads,
/// summed: /proc/PID/status and /proc/PID/schedstat count one thread's.
/// Each thread's status is scanned for its two lines and nothing else
/// parsed: with a thread per connection that is 20,000 files at each of a
/// window's edges, and parsed whole (procfs makes a map of each file's 57
/// fields) they took compare 6 s, which also stretched the span its CPU
/// figures cover.
fn threads(pid: u32) -> Threads {
    let mut sum = Threads::default();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return sum;
    };
    let mut text = String::new();
    for task in tasks.flatten() {
        text.clear();
        let status = std::fs::File::open(task.path().join("status"));
        // A thread that ended in between has no switches left to count.
        if status
            .and_then(|mut f| f.read_to_string(&mut text))
            .is_err()
        {
            continue;
        }
        for line in text.lines() {
            let count = |name: &str| {
                let value = line.strip_prefix(name)?.strip_prefix(':')?;
                value.trim().parse::<u64>().ok()
            };
            if let Some(n) = count("voluntary_ctxt_switches") {
                sum.voluntary += n;
            } else if let Some(n) = count("nonvoluntary_ctxt_switches") {
                sum.involuntary += n;
            }
        }
        // "ran waited timeslices", in nanoseconds: the second is the wait.
        text.clear();
        let schedstat = std::fs::File::open(task.path().join("schedstat"));
        if schedstat
            .and_then(|mut f| f.read_to_string(&mut text))
            .is_ok()
        {
            let waited = text.split_whitespace().nth(1).and_then(|n| n.parse().ok());
            sum.waited_ns += waited.unwrap_or(0);
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use std::process::{Child, Command};
    use std::time::Duration;

    use super::*;

    /// Samples `child` over half a second, then kills it.
    fn usage_of(mut child: Child) -> Usage {
        // Let it start (exec, the shell's set-up) before the window.
        std::thread::sleep(Duration::from_millis(100));
        let before = Sample::take(child.id()).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let after = Sample::take(child.id()).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        before.until(&after)
    }

    /// A shell that spins until killed.
    fn spinner() -> Child {
        Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_spinning_process_uses_about_one_core() {
        let u = usage_of(spinner());
        // Other tests share these cores: well above idle, never above one core.
        assert!(u.cpu_percent > 40.0 && u.cpu_percent < 115.0, "{u:?}");
        assert!(u.user_percent > u.system_percent, "{u:?}");
        assert!(u.peak_rss_kib > 0, "{u:?}");
        // Over half a second, in nanoseconds: no multiple of a tick (10 ms).
        let ns = u.cpu_ns.expect("the CPU clock of a child");
        assert!(ns > 150_000_000 && ns < 600_000_000, "{u:?}");
        assert!(!ns.is_multiple_of(1_000_000), "{u:?}");
        // What it wanted is at least what it ran, over the window's own
        // span, a little longer than the half second slept.
        assert!(u.demand_percent.unwrap() >= ns as f64 / 5.5e6, "{u:?}");
    }

    #[test]
    fn a_process_sharing_its_cpu_with_another_wants_the_whole_core() {
        use nix::sched::{CpuSet, sched_setaffinity};
        use nix::unistd::Pid;
        let (one, mut other) = (spinner(), spinner());
        let mut cpu0 = CpuSet::new();
        cpu0.set(0).unwrap();
        for child in [&one, &other] {
            sched_setaffinity(Pid::from_raw(child.id() as i32), &cpu0).unwrap();
        }
        let u = usage_of(one);
        other.kill().unwrap();
        other.wait().unwrap();
        // Each ran about half the time and waited for the CPU the rest.
        let ran = u.cpu_ns.unwrap() as f64 / 5e6;
        let wanted = u.demand_percent.unwrap();
        assert!(ran < 75.0, "ran {ran:.0}% of a core: {u:?}");
        assert!(wanted > 85.0, "wanted {wanted:.0}% of a core: {u:?}");
    }

    #[test]
    fn a_process_loses_the_part_of_the_steal_it_wanted_the_cpus_for() {
        let tick = 1e9 / procfs::ticks_per_second() as f64;
        let (one, two) = (Stolen { ticks: 0, cpus: 1 }, Stolen { ticks: 0, cpus: 2 });
        let later = |from: Stolen| Stolen { ticks: 10, ..from };
        // Over one second, ten ticks stolen from the process's CPUs.
        let stolen = 10.0 * tick;
        assert_eq!(one.share_until(&later(one), 0.0, 1.0), 0.0, "idle");
        let spinning = 1e9 - stolen;
        let lost = one.share_until(&later(one), spinning, 1.0);
        assert!((lost - stolen).abs() < 1.0, "pinned and busy: {lost}");
        let lost = two.share_until(&later(two), 1e9 - stolen / 2.0, 1.0);
        assert!(
            (lost - stolen / 2.0).abs() < 1.0,
            "busy on one of two: {lost}"
        );
    }

    #[test]
    fn an_idle_process_uses_about_nothing() {
        let idle = Command::new("sleep").arg("5").spawn().unwrap();
        let u = usage_of(idle);
        assert!(u.cpu_percent < 5.0, "{u:?}");
        assert!(u.demand_percent.unwrap() < 5.0, "{u:?}");
        assert!(u.voluntary_switches_per_s < 10.0, "{u:?}");
        assert!(u.peak_rss_kib > 0, "{u:?}");
    }

    #[test]
    fn a_process_that_keeps_waiting_switches_voluntarily() {
        let waiter = Command::new("sh")
            .args(["-c", "for i in $(seq 100); do sleep 0.01; done"])
            .spawn()
            .unwrap();
        let u = usage_of(waiter);
        // The shell waits for each `sleep`: about 90 switches a second.
        assert!(u.voluntary_switches_per_s > 20.0, "{u:?}");
    }

    #[test]
    fn every_live_thread_s_switches_are_counted() {
        use std::sync::{Arc, Barrier};
        let before = threads(std::process::id());
        let (slept, done) = (Arc::new(Barrier::new(5)), Arc::new(Barrier::new(5)));
        let sleepers: Vec<_> = (0..4)
            .map(|_| {
                let (slept, done) = (slept.clone(), done.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    slept.wait();
                    done.wait();
                })
            })
            .collect();
        slept.wait();
        let after = threads(std::process::id());
        done.wait();
        sleepers.into_iter().for_each(|t| t.join().unwrap());
        // Each of the four slept 20 times: a switch each, at least.
        assert!(
            after.voluntary >= before.voluntary + 80,
            "{before:?} then {after:?}"
        );
    }
}
