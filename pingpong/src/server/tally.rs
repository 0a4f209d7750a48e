//! What a server's connections did with their blocks over its life: reads,
//! hand-offs to other tasks, tasks spawned for them. Printed when the server
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

/// A read's bytes went to another task.
pub(crate) fn handed_off() {
    bump(|t| &t.handoffs);
}

/// The shape spawned a task: a handler, a worker, a connection's writer.
pub(crate) fn spawned() {
    bump(|t| &t.spawned);
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
    }
}
