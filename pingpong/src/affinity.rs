//! The CPUs a process may run on, as the kernel holds its affinity mask: the
//! one way the suite reads affinity, for a process itself (what a caller's
//! pinning applied) and for another process (compare, of its children).

use std::io;

/// The CPUs in the affinity mask of process `pid` (0: the calling thread), in order.
pub fn of(pid: u32) -> io::Result<Vec<usize>> {
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and the kernel writes at
    // most size_of::<cpu_set_t>() bytes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(pid, size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect())
    }
}

/// The CPUs this process may run on; none if the kernel will not say.
pub fn cpus() -> Vec<usize> {
    of(0).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_reads_its_own_mask_and_anothers_the_same_way() {
        let own = of(0).unwrap();
        assert!(!own.is_empty());
        assert_eq!(of(std::process::id()).unwrap(), own);
        assert!(of(u32::MAX >> 1).is_err(), "no such process");
    }
}
