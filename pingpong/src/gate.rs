//! A one-shot gate that any runtime can wait on: the client's connections
//! wait at it until every one of them is up, so that connecting is timed
//! alone and early connections do not steal CPU from the late ones.

use std::future::poll_fn;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Poll, Waker};

/// How many more of those waiting each one woken from [`Gate::wait`] wakes.
const FAN: usize = 2;

#[derive(Default)]
pub struct Gate {
    open: AtomicBool,
    waiting: Mutex<Vec<Waker>>,
}

impl Gate {
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// Opens the gate and wakes everyone waiting. Those it woke that wait
    /// in [`Self::wait`] each wake [`FAN`] more as they pass: with a
    /// thread per connection, the opener alone shares its CPU with every
    /// thread already past the gate (10,000 of them at nice 19 outweigh it
    /// 150 to 1), and it took 8 s to wake them all one by one.
    pub fn open(&self) {
        {
            let _waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            self.open.store(true, Ordering::Release);
        }
        while self.wake(1) {}
    }

    /// Wakes up to `n` of those still waiting; whether there were any.
    fn wake(&self, n: usize) -> bool {
        let woken = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            let keep = waiting.len().saturating_sub(n);
            waiting.split_off(keep)
        };
        let any = !woken.is_empty();
        woken.into_iter().for_each(Waker::wake);
        any
    }

    /// Wakes `waker` once the gate is open (at once if it already is).
    pub fn notify(&self, waker: &Waker) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_open() {
            drop(waiting);
            waker.wake_by_ref();
        } else {
            waiting.push(waker.clone());
        }
    }

    /// Waits until the gate is open.
    pub async fn wait(&self) {
        poll_fn(|cx| {
            if self.is_open() {
                return Poll::Ready(());
            }
            self.notify(cx.waker());
            // Woken by `open`; a spurious poll simply registers again.
            if self.is_open() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        self.wake(FAN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;

    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn wakes_those_waiting_and_those_who_come_late() {
        let gate = Gate::default();
        let early: Vec<_> = (0..5)
            .map(|_| Arc::new(Flag(AtomicBool::new(false))))
            .collect();
        for flag in &early {
            gate.notify(&Waker::from(flag.clone()));
        }
        assert!(early.iter().all(|f| !f.0.load(Ordering::SeqCst)));
        gate.open();
        assert!(early.iter().all(|f| f.0.load(Ordering::SeqCst)));
        let late = Arc::new(Flag(AtomicBool::new(false)));
        gate.notify(&Waker::from(late.clone()));
        assert!(late.0.load(Ordering::SeqCst));
    }
}
