//! A one-shot gate that any runtime can wait on: the client's connections
//! wait at it until every one of them is up, so that connecting is timed
//! alone and early connections do not steal CPU from the late ones.

use std::future::poll_fn;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Poll, Waker};

#[derive(Default)]
pub struct Gate {
    open: AtomicBool,
    waiting: Mutex<Vec<Waker>>,
}

impl Gate {
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// Opens the gate and wakes everyone waiting.
    pub fn open(&self) {
        let waiting = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            self.open.store(true, Ordering::Release);
            std::mem::take(&mut *waiting)
        };
        waiting.into_iter().for_each(Waker::wake);
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
        .await
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
        let early = Arc::new(Flag(AtomicBool::new(false)));
        gate.notify(&Waker::from(early.clone()));
        assert!(!early.0.load(Ordering::SeqCst));
        gate.open();
        assert!(early.0.load(Ordering::SeqCst));
        let late = Arc::new(Flag(AtomicBool::new(false)));
        gate.notify(&Waker::from(late.clone()));
        assert!(late.0.load(Ordering::SeqCst));
    }
}
