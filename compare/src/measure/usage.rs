//! What a process spent over the measurement window: CPU time, user and
//! system apart, context switches, and its peak resident memory, read from
//! /proc at the window's edges.

use std::time::Instant;

use anyhow::{Context, Result};
use procfs::process::Process;

use crate::results::Usage;

/// A process's counters at one moment.
#[derive(Debug, Clone)]
pub struct Sample {
    at: Instant,
    /// CPU time of all its threads, in clock ticks.
    user_ticks: u64,
    system_ticks: u64,
    /// Summed over its live threads.
    voluntary_switches: u64,
    involuntary_switches: u64,
    peak_rss_kib: u64,
}

impl Sample {
    pub fn take(pid: u32) -> Result<Self> {
        let at = Instant::now();
        let process = Process::new(pid as i32).with_context(|| format!("process {pid}"))?;
        let stat = process
            .stat()
            .with_context(|| format!("reading /proc/{pid}/stat"))?;
        let status = process
            .status()
            .with_context(|| format!("reading /proc/{pid}/status"))?;
        // /proc/PID/status counts the switches of one thread: sum the live ones.
        let (voluntary_switches, involuntary_switches) = process
            .tasks()
            .into_iter()
            .flatten()
            .filter_map(|task| task.ok()?.status().ok())
            .fold((0, 0), |(v, i), s| {
                (
                    v + s.voluntary_ctxt_switches.unwrap_or(0),
                    i + s.nonvoluntary_ctxt_switches.unwrap_or(0),
                )
            });
        Ok(Self {
            at,
            user_ticks: stat.utime,
            system_ticks: stat.stime,
            voluntary_switches,
            involuntary_switches,
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
        Usage {
            cpu_percent: user + system,
            user_percent: user,
            system_percent: system,
            peak_rss_kib: later.peak_rss_kib,
            voluntary_switches_per_s: rate(self.voluntary_switches, later.voluntary_switches),
            involuntary_switches_per_s: rate(self.involuntary_switches, later.involuntary_switches),
        }
    }
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

    #[test]
    fn a_spinning_process_uses_about_one_core() {
        let spin = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let u = usage_of(spin);
        // Other tests share these cores: well above idle, never above one core.
        assert!(u.cpu_percent > 40.0 && u.cpu_percent < 115.0, "{u:?}");
        assert!(u.user_percent > u.system_percent, "{u:?}");
        assert!(u.peak_rss_kib > 0, "{u:?}");
    }

    #[test]
    fn an_idle_process_uses_about_nothing() {
        let idle = Command::new("sleep").arg("5").spawn().unwrap();
        let u = usage_of(idle);
        assert!(u.cpu_percent < 5.0, "{u:?}");
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
}
