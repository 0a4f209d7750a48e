//! The client's start, relayed to runtimes whose wakers may only be woken
//! on their own thread ([`AsyncRuntime::THREAD_BOUND_WAKERS`]): the start
//! gate opens, and wakes its waiters, on the client driver's thread.
//!
//! Until the start, such a runtime's connection is polled with a [`Mark`],
//! a waker any thread may wake; a relay task on the connection's thread
//! hands each mark on to the runtime's own waker. From the start on (all
//! of the measured pingpong), connections are polled with the runtime's.

use std::cell::RefCell;
use std::mem;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use super::interface::AsyncRuntime;
use crate::client::Client;

/// How often the relay looks at the marks.
const EVERY: Duration = Duration::from_micros(100);

/// A waker any thread may wake: it only marks its task.
struct Mark(AtomicBool);

impl Wake for Mark {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

thread_local! {
    /// This thread's tasks waiting on a mark, with their runtime's wakers.
    static MARKED: RefCell<Vec<(Arc<Mark>, Waker)>> = const { RefCell::new(Vec::new()) };
}

/// `connection` (or a UDP socket) of `client`, polled as above where
/// runtime `R` needs it; as it is elsewhere.
pub(super) async fn until_started<R: AsyncRuntime, F: Future>(
    client: &Arc<Client>,
    connection: F,
) -> F::Output {
    match R::THREAD_BOUND_WAKERS {
        true => {
            UntilStarted {
                connection: Box::pin(connection),
                client: client.clone(),
            }
            .await
        }
        false => connection.await,
    }
}

struct UntilStarted<F> {
    connection: Pin<Box<F>>,
    client: Arc<Client>,
}

impl<F: Future> Future for UntilStarted<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if self.client.started() {
            return self.connection.as_mut().poll(cx);
        }
        let mark = Arc::new(Mark(AtomicBool::new(false)));
        let waker = Waker::from(mark.clone());
        let polled = self
            .connection
            .as_mut()
            .poll(&mut Context::from_waker(&waker));
        if polled.is_pending() {
            MARKED.with_borrow_mut(|marked| marked.push((mark, cx.waker().clone())));
        }
        polled
    }
}

/// Wakes this thread's marked tasks, every [`EVERY`], until the client
/// has started and none waits on a mark.
pub(super) async fn relay<R: AsyncRuntime>(client: Arc<Client>) {
    loop {
        let started = client.started();
        let woken: Vec<Waker> = MARKED.with_borrow_mut(|marked| {
            let (woken, waiting) = mem::take(marked)
                .into_iter()
                .partition(|(mark, _)| started || mark.0.load(Ordering::Acquire));
            *marked = waiting;
            woken.into_iter().map(|(_, waker)| waker).collect()
        });
        woken.into_iter().for_each(Waker::wake);
        if started && MARKED.with_borrow(Vec::is_empty) {
            return;
        }
        R::sleep(EVERY).await;
    }
}
