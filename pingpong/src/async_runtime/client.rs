//! The client on an async runtime, written once: a task for each of its
//! connections (or UDP sockets), on one shared executor or spread over
//! one per thread as muduo's client spreads them.

use std::io;
use std::sync::Arc;

use super::interface::{AsyncRuntime, Executor, Joined, Task};
use crate::client::Client;
use crate::runtime::{Topology, on_threads};

/// Starts `count` tasks with `spawn` (which returns each one's handle) and
/// waits for all; the first that failed is the outcome.
pub(super) async fn all_connections<H>(count: usize, spawn: impl FnMut() -> H) -> io::Result<()>
where
    H: Future<Output: Joined>,
{
    let tasks: Vec<H> = std::iter::repeat_with(spawn).take(count).collect();
    for task in tasks {
        task.await.into_result()?;
    }
    Ok(())
}

/// Runs every one of the client's connections to its end, each a task
/// that `task` makes; `timer` when they need the runtime's timer.
pub(super) fn run<R: AsyncRuntime>(
    client: &Arc<Client>,
    timer: bool,
    task: fn(Arc<Client>) -> Task<R>,
) -> io::Result<()> {
    let executor = |threads, thread| Executor {
        threads,
        thread,
        knobs: client.config.knobs.clone(),
        timer,
        blocking_pool: false,
    };
    let threads = client.config.threads;
    match R::TOPOLOGY {
        Topology::Shared => {
            let count = client.config.connections;
            let client = client.clone();
            R::block_on(&executor(threads, 0), |handle| async move {
                connections(&handle, &client, count, task).await
            })
        }
        Topology::PerThread => on_threads("client", (0..threads).collect(), |thread| {
            let count = client.connections_of(thread);
            let client = client.clone();
            R::block_on(&executor(1, thread), |handle| async move {
                connections(&handle, &client, count, task).await
            })
        }),
    }
}

/// Spawns `count` connections and waits for them all (and for the start's
/// relay, where the runtime needs one).
async fn connections<R: AsyncRuntime>(
    handle: &R::Handle,
    client: &Arc<Client>,
    count: usize,
    task: fn(Arc<Client>) -> Task<R>,
) -> io::Result<()> {
    let relay = R::THREAD_BOUND_WAKERS.then(|| R::spawn(handle, Task::relay(client.clone())));
    all_connections(count, || R::spawn(handle, task(client.clone()))).await?;
    match relay {
        Some(relay) => relay.await.into_result(),
        None => Ok(()),
    }
}
