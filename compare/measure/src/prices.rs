//! What each kind of event costs on this machine, in nanoseconds of CPU:
//! an instruction, a system call's entry and return, a hand-off between
//! two threads through a futex (a wake and the wait it ends) across CPUs,
//! and the same on one CPU, where each hand-off is a context switch. An
//! explanation multiplies the moves it tells by these, so that it ranks
//! them by what they cost rather than by their kind.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sched::{CpuSet, sched_setaffinity};
use nix::time::{ClockId, clock_gettime};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// The prices, each the least of [`BATCHES`] batches' (the VM's other
/// tenants only ever add to a batch).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    /// A dependent integer add, one a cycle: what a simple instruction
    /// costs at best.
    pub instruction_ns: f64,
    /// `getppid`, a system call that does nothing: entering and leaving
    /// the kernel.
    pub syscall_ns: f64,
    /// One thread waking another that waits on a futex, on another CPU:
    /// the waker's call, the sleeper's wake-up and its wait's return, both
    /// threads' CPU.
    pub handoff_ns: f64,
    /// The same with both threads on one CPU, where every hand-off is a
    /// voluntary context switch.
    pub switch_ns: f64,
}

/// Batches of each measurement.
const BATCHES: usize = 5;
/// System calls a batch.
const CALLS: u32 = 100_000;
/// Hand-offs a batch.
const HANDOFFS: u32 = 5_000;
/// Adds of the instruction chain a batch, in loops of [`CHAIN`].
const LOOPS: u64 = 1_000_000;
const CHAIN: u64 = 32;

impl Prices {
    /// Measured now, on `cpus` (two or more for the hand-off across CPUs;
    /// with one, it is left the switch's price).
    pub fn measure(cpus: &[usize]) -> Result<Self, String> {
        let least = |f: &dyn Fn() -> Result<f64, String>| -> Result<f64, String> {
            let mut best = f64::INFINITY;
            for _ in 0..BATCHES {
                best = best.min(f()?);
            }
            Ok(best)
        };
        let first = *cpus.first().ok_or("no CPU to measure prices on")?;
        let other = cpus.get(1).copied();
        let switch_ns = least(&|| handoff(first, first))?;
        Ok(Self {
            instruction_ns: least(&|| Ok(instruction()))?,
            syscall_ns: least(&|| Ok(syscall()))?,
            handoff_ns: match other {
                Some(other) => least(&|| handoff(first, other))?,
                None => switch_ns,
            },
            switch_ns,
        })
    }

    /// "instruction 0.31 ns, system call 95 ns, ...": as the pages say them.
    pub fn said(&self) -> String {
        format!(
            "an instruction {:.2} ns (a dependent add), a system call {:.0} ns (getppid), \
             a futex hand-off to another CPU {:.0} ns (the wake and the wait it ends, both \
             threads' CPU), a voluntary context switch {:.0} ns (the same hand-off on one CPU)",
            self.instruction_ns, self.syscall_ns, self.handoff_ns, self.switch_ns
        )
    }
}

/// Nanoseconds per add of a chain of dependent adds.
fn instruction() -> f64 {
    let start = Instant::now();
    let mut x: u64 = std::hint::black_box(1);
    for _ in 0..LOOPS {
        x = chain(x);
    }
    std::hint::black_box(x);
    start.elapsed().as_nanos() as f64 / (LOOPS * CHAIN) as f64
}

/// [`CHAIN`] dependent adds, which the compiler may not fold: each goes
/// through `black_box`'s barrier only at the ends, so the adds are kept by
/// inline assembly where there is some.
#[inline(always)]
fn chain(x: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut x = x;
        // SAFETY: adds to a register, nothing else.
        unsafe {
            std::arch::asm!(
                "add {0}, 1", "add {0}, 1", "add {0}, 1", "add {0}, 1",
                "add {0}, 1", "add {0}, 1", "add {0}, 1", "add {0}, 1",
                "add {0}, 1", "add {0}, 1", "add {0}, 1", "add {0}, 1",
                "add {0}, 1", "add {0}, 1", "add {0}, 1", "add {0}, 1",
                "add {0}, 1", "add {0}, 1", "add {0}, 1", "add {0}, 1",
                "add {0}, 1", "add {0}, 1", "add {0}, 1", "add {0}, 1",
                "add {0}, 1", "add {0}, 1", "add {0}, 1", "add {0}, 1",
                "add {0}, 1", "add {0}, 1", "add {0}, 1", "add {0}, 1",
                inout(reg) x,
                options(pure, nomem, nostack),
            );
        }
        x
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0..CHAIN).fold(x, |x, _| std::hint::black_box(x + 1))
    }
}

/// Nanoseconds per `getppid`.
fn syscall() -> f64 {
    let start = Instant::now();
    for _ in 0..CALLS {
        // glibc does not cache getppid: each is a call into the kernel.
        std::hint::black_box(nix::unistd::getppid());
    }
    start.elapsed().as_nanos() as f64 / CALLS as f64
}

/// The process's CPU time, both threads'.
fn cpu_now() -> Result<Duration, String> {
    let t = clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID)
        .map_err(|e| format!("reading the process's CPU time: {e}"))?;
    Ok(Duration::from(t))
}

fn pin(cpu: usize) -> Result<(), String> {
    let mut set = CpuSet::new();
    set.set(cpu).map_err(|e| format!("CPU {cpu}: {e}"))?;
    sched_setaffinity(Pid::from_raw(0), &set).map_err(|e| format!("pinning to CPU {cpu}: {e}"))
}

/// CPU nanoseconds per hand-off of two threads, the caller's on `mine` and
/// a partner on `theirs`, taking turns through park and unpark (a futex on
/// Linux): each turn wakes the other and waits to be woken.
fn handoff(mine: usize, theirs: usize) -> Result<f64, String> {
    pin(mine)?;
    let turn = Arc::new(AtomicBool::new(false));
    let me = std::thread::current();
    let partner = {
        let turn = Arc::clone(&turn);
        std::thread::spawn(move || -> Result<(), String> {
            // Its turns are taken even unpinned, so that the caller's end.
            let pinned = pin(theirs);
            for _ in 0..HANDOFFS {
                while !turn.load(Ordering::Acquire) {
                    std::thread::park();
                }
                turn.store(false, Ordering::Release);
                me.unpark();
            }
            pinned
        })
    };
    let result = (|| {
        let start = cpu_now()?;
        for _ in 0..HANDOFFS {
            turn.store(true, Ordering::Release);
            partner.thread().unpark();
            while turn.load(Ordering::Acquire) {
                std::thread::park();
            }
        }
        Ok((cpu_now()? - start).as_nanos() as f64 / (2 * HANDOFFS) as f64)
    })();
    partner
        .join()
        .map_err(|_| "the hand-off's partner thread panicked".to_string())??;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_price_is_positive_and_a_hand_off_costs_more_than_a_call() {
        let cpus = model::placement::available_cpus().unwrap();
        let p = Prices::measure(&cpus).unwrap();
        for v in [p.instruction_ns, p.syscall_ns, p.handoff_ns, p.switch_ns] {
            assert!(v.is_finite() && v > 0.0, "{p:?}");
        }
        // A hand-off is two system calls at least, besides the switch.
        assert!(p.switch_ns > p.syscall_ns, "{p:?}");
        assert!(p.syscall_ns > p.instruction_ns, "{p:?}");
        assert!(p.said().contains("getppid"));
    }
}
