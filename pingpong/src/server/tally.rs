//! What a server's connections did with their blocks over its life: reads,
//! hand-offs to other tasks, tasks spawned for them, and the runtime
//! services the shapes call (timers, the blocking pool, the lock). Printed when the server
//! stops ([`crate::wire::Served`]), so that a shape's definition can be
//! checked against what it did.
//!
//! Each thread counts on a line of its own, with plain loads and stores
//! (it alone writes it): counting costs a block no shared cache line.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::wire::Served;

#[derive(Default)]
#[repr(align(128))]
struct Tally {
    reads: AtomicU64,
    handoffs: AtomicU64,
    spawned: AtomicU64,
    timers: AtomicU64,
    timeouts: AtomicU64,
    unblocked: AtomicU64,
    locked: AtomicU64,
    selects: AtomicU64,
}

/// Every thread's tally, those of threads that have ended too.
static ALL: Mutex<Vec<Arc<Tally>>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: Arc<Tally> = {
        let mine = Arc::<Tally>::default();
        ALL.lock().expect("a tally was poisoned").push(mine.clone());
        mine
    };
}

/// Never inlined: may moves a coroutine between threads at a switch, and
/// the compiler, which takes a thread-local's address to be constant
/// within a function, could compute it before a read that switches and
/// use it after, on another thread, where the slot may be empty (a
/// SIGSEGV, seen at 2 threads). A call of its own looks it up on the
/// thread that runs it.
#[inline(never)]
fn bump(counter: impl Fn(&Tally) -> &AtomicU64) {
    MINE.with(|mine| {
        let counter = counter(mine);
        counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    });
}

/// A connection read bytes and echoes them (a block, or part of a window).
pub(crate) fn read() {
    bump(|t| &t.reads);
}

// What the shapes count, which only async runtimes serve.

/// A read's bytes went to another task.
#[cfg(feature = "executors")]
pub(crate) fn handed_off() {
    bump(|t| &t.handoffs);
}

/// The shape spawned a task: a handler, a worker, a connection's writer.
#[cfg(feature = "executors")]
pub(crate) fn spawned() {
    bump(|t| &t.spawned);
}

/// A read waits on a timer (armed here, cancelled when the read comes first).
#[cfg(feature = "executors")]
pub(crate) fn timer() {
    bump(|t| &t.timers);
}

/// A read's timer fired first: the connection ends.
#[cfg(feature = "executors")]
pub(crate) fn timed_out() {
    bump(|t| &t.timeouts);
}

/// A block went to the blocking pool.
#[cfg(feature = "executors")]
pub(crate) fn unblocked() {
    bump(|t| &t.unblocked);
}

/// A block took the shared lock.
#[cfg(feature = "executors")]
pub(crate) fn locked() {
    bump(|t| &t.locked);
}

/// A future began to drive a thread's connections (the select shape).
#[cfg(feature = "executors")]
pub(crate) fn selecting() {
    bump(|t| &t.selects);
}

/// The sums over every thread so far.
pub(crate) fn served() -> Served {
    let all = ALL.lock().expect("a tally was poisoned");
    let sum = |counter: fn(&Tally) -> &AtomicU64| {
        all.iter().map(|t| counter(t).load(Ordering::Relaxed)).sum()
    };
    Served {
        reads: sum(|t| &t.reads),
        handoffs: sum(|t| &t.handoffs),
        spawned: sum(|t| &t.spawned),
        timers: sum(|t| &t.timers),
        timeouts: sum(|t| &t.timeouts),
        unblocked: sum(|t| &t.unblocked),
        locked: sum(|t| &t.locked),
        selects: sum(|t| &t.selects),
    }
}
