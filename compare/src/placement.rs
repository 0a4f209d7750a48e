//! Which CPUs the server and the client run on.

use anyhow::{Context, Result};
use nix::sched::{CpuSet, sched_getaffinity};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// The CPUs each side of a cell was confined to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub server_cpus: Vec<usize>,
    pub client_cpus: Vec<usize>,
    /// A side has more threads than CPUs (or both sides share CPUs).
    pub oversubscribed: bool,
}

/// The CPUs this process may run on.
pub fn available_cpus() -> Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(0)).context("reading the CPU affinity")?;
    Ok((0..CpuSet::count())
        .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
        .collect())
}

/// Disjoint CPU sets for server and client, `threads` each when there are
/// enough CPUs, else half the CPUs each; one CPU is shared by both.
pub fn place(cpus: &[usize], threads: usize) -> Placement {
    if cpus.len() < 2 {
        return Placement {
            server_cpus: cpus.to_vec(),
            client_cpus: cpus.to_vec(),
            oversubscribed: true,
        };
    }
    let per_side = threads.min(cpus.len() / 2);
    Placement {
        server_cpus: cpus[..per_side].to_vec(),
        client_cpus: cpus[per_side..2 * per_side].to_vec(),
        oversubscribed: threads > per_side,
    }
}

pub fn cpu_set(cpus: &[usize]) -> Result<CpuSet> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu).with_context(|| format!("CPU {cpu}"))?;
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cpus_put_one_thread_on_each() {
        let p = place(&[0, 1], 1);
        assert_eq!(
            (p.server_cpus, p.client_cpus, p.oversubscribed),
            (vec![0], vec![1], false)
        );
    }

    #[test]
    fn more_threads_than_cpus_is_oversubscribed_but_disjoint() {
        let p = place(&[0, 1], 4);
        assert_eq!(
            (p.server_cpus, p.client_cpus, p.oversubscribed),
            (vec![0], vec![1], true)
        );
    }

    #[test]
    fn sixteen_cpus_fit_four_threads_a_side() {
        let cpus: Vec<_> = (0..16).collect();
        let p = place(&cpus, 4);
        assert_eq!(
            (p.server_cpus, p.client_cpus, p.oversubscribed),
            (vec![0, 1, 2, 3], vec![4, 5, 6, 7], false)
        );
    }

    #[test]
    fn one_cpu_is_shared() {
        assert!(place(&[3], 1).oversubscribed);
    }
}
