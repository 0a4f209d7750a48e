//! The CPUs a process may run on, as the process itself sees them: what a
//! caller's pinning actually applied.

/// The CPUs in the calling process's affinity mask, in order.
pub fn cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and the kernel writes at
    // most size_of::<cpu_set_t>() bytes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}
