//! The select shape: each executor thread's connections driven by one
//! future (a `FuturesUnordered` of them beside the source of new ones),
//! with no task per connection.
//!
//! A per-thread runtime's thread accepts into its own future. A shared
//! executor's accept loop runs in the future its `block_on` drives, which
//! keeps every `threads`-th connection and deals the others round-robin
//! to a future spawned for each other thread ([`Share`]).

use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;

use async_channel::Sender;
use futures_lite::{Stream, StreamExt, future, stream};
use futures_util::stream::FuturesUnordered;

use super::accepted;
use super::interface::{Accepted, AsyncRuntime, Io, Listener, Serving, Share, Task, Tcp};

use crate::server::{Ready, tally};

/// Drives every connection of `threads` shares: this future's own, and
/// those it deals to the others.
pub(super) async fn serve<R: AsyncRuntime>(
    listener: Listener<R>,
    serving: Arc<Serving<R>>,
    ready: Ready,
    threads: usize,
) -> io::Result<()> {
    let others: Vec<Sender<Tcp<R>>> = (1..threads)
        .map(|_| {
            let (dealt, connections) = async_channel::unbounded();
            let share = Share {
                connections,
                serving: serving.clone(),
            };
            R::detach(R::spawn(&serving.handle, Task::select(share)));
            dealt
        })
        .collect();
    ready.listening();
    let accepted = stream::unfold(listener, |listener| async {
        let accepted = R::Io::accept(&listener).await;
        Some((accepted, listener))
    });
    let mut turn = 0;
    let kept = accepted.filter_map(|accepted| match accepted {
        // The peer gave up before it was accepted: not the listener's fault.
        Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => None,
        Err(e) => Some(Err(e)),
        Ok(stream) => {
            turn = (turn + 1) % threads;
            match turn.checked_sub(1).map(|other| &others[other]) {
                None => Some(Ok(stream)),
                // A share ends only with the server.
                Some(share) => share
                    .try_send(stream)
                    .err()
                    .map(|_| Err(io::Error::other("a share of the select shape has ended"))),
            }
        }
    });
    drive(kept, &serving).await
}

/// One of the other shares: the connections dealt to it.
pub(super) async fn share<R: AsyncRuntime>(share: Share<R>) -> io::Result<()> {
    drive(share.connections.map(Ok), &share.serving).await
}

/// Serves each connection `source` yields, all in this one future, until
/// the source fails, or ends and every connection has.
async fn drive<R: AsyncRuntime>(
    source: impl Stream<Item = io::Result<Tcp<R>>>,
    serving: &Arc<Serving<R>>,
) -> io::Result<()> {
    tally::selecting();
    let mut source = pin!(source);
    let mut ended = false;
    let mut connections = FuturesUnordered::new();
    future::poll_fn(|cx| {
        // New connections first, as an accept loop takes them.
        while !ended {
            match source.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(stream))) => connections.push(accepted::serve(Accepted {
                    stream,
                    serving: serving.clone(),
                })),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                Poll::Ready(None) => ended = true,
                Poll::Pending => break,
            }
        }
        // FuturesUnordered yields (waking this future again) after a
        // round of its futures, so that no connection starves the source.
        loop {
            match connections.poll_next(cx) {
                Poll::Ready(Some(())) => {}
                Poll::Ready(None) if ended => return Poll::Ready(Ok(())),
                Poll::Ready(None) | Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await
}
