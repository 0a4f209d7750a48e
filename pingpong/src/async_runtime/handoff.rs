//! The shapes that hand blocks to other tasks (spawn, pool): a handler
//! task per block, or a pool of worker tasks fed by one queue, each
//! sending the block back to its connection's task.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_channel::{Receiver, Sender};

use crate::server::{Shape, Step, WORKERS_PER_THREAD, before_echo, tally};

/// A task the hand-offs spawn beside a connection's (a handler, a
/// worker): it holds blocks and channels only, never the connection, so
/// it is `Send` on every runtime.
pub(super) type Helper = Pin<Box<dyn Future<Output = ()> + Send>>;

/// How the runtime runs a [`Helper`]: its own spawn, called from inside
/// the runtime (a task of its executor).
type Spawn = Arc<dyn Fn(Helper) + Send + Sync>;

/// A block on its way through the pool: its bytes (`data[..len]`), where
/// they start in the stream, and where the worker sends them back.
pub(super) struct Job {
    data: Vec<u8>,
    len: usize,
    offset: u64,
    block: usize,
    back: Sender<Vec<u8>>,
}

/// What the shapes that hand blocks off need of the runtime: its spawn
/// for a handler per block, or the queue the pool's workers take blocks from.
#[derive(Clone)]
pub(super) enum Handoff {
    Handlers(Spawn),
    Pool(Sender<Job>),
}

impl Handoff {
    /// What `shape` hands its blocks to on the executor that `spawn` spawns
    /// on, which runs on `threads` threads, if it hands them off: called
    /// inside the runtime, once per executor (once per thread for a
    /// per-thread runtime, so that its hand-offs stay on their thread).
    /// Starts the pool's workers.
    pub(super) fn start(
        shape: Shape,
        threads: usize,
        spawn: impl Fn(Helper) + Send + Sync + 'static,
    ) -> Option<Self> {
        let spawn: Spawn = Arc::new(spawn);
        match shape {
            Shape::Spawn => Some(Self::Handlers(spawn)),
            Shape::Pool => Some(Self::pool(threads, spawn)),
            _ => None,
        }
    }

    fn pool(threads: usize, spawn: Spawn) -> Self {
        // Bounded, as a server's queue is: a block that finds it full waits.
        let (jobs, queue) = async_channel::bounded(WORKERS_PER_THREAD * threads * 16);
        for _ in 0..WORKERS_PER_THREAD * threads {
            tally::spawned();
            spawn(Box::pin(work(queue.clone())));
        }
        Self::Pool(jobs)
    }

    /// One connection's way to hand its blocks off: in the pool, with the
    /// channel its blocks come back on.
    pub(super) fn connection(&self) -> Connection {
        let returns = matches!(self, Self::Pool(_)).then(|| async_channel::bounded(1));
        Connection {
            handoff: self.clone(),
            returns,
        }
    }
}

/// A channel blocks come back on.
type Back = (Sender<Vec<u8>>, Receiver<Vec<u8>>);

/// How one connection hands its blocks off.
pub(super) struct Connection {
    handoff: Handoff,
    /// Where the pool's workers send this connection's blocks back.
    returns: Option<Back>,
}

impl Connection {
    /// Hands `data[..len]` (stream offset `offset`) to another task, which
    /// does the block's work and sends the bytes back; waits for them.
    /// None if the other side has gone (the runtime is shutting down).
    pub(super) async fn round_trip(
        &self,
        data: Vec<u8>,
        len: usize,
        offset: u64,
        block: usize,
    ) -> Option<Vec<u8>> {
        let oneshot;
        let (back, returned) = match &self.returns {
            Some((back, returned)) => (back.clone(), returned),
            // A handler answers on a one-shot channel, as a request's does.
            None => {
                let back;
                (back, oneshot) = async_channel::bounded(1);
                (back, &oneshot)
            }
        };
        let job = Job {
            data,
            len,
            offset,
            block,
            back,
        };
        tally::handed_off();
        match &self.handoff {
            Handoff::Pool(jobs) => jobs.send(job).await.ok()?,
            Handoff::Handlers(spawn) => {
                tally::spawned();
                spawn(Box::pin(handle(job)));
            }
        }
        returned.recv().await.ok()
    }
}

/// A request handler: one block's work, then the block back.
async fn handle(mut job: Job) {
    before_echo(&mut job.data[..job.len], job.offset, job.block);
    // The connection has gone if nobody receives: nothing to do then.
    let _ = job.back.send(job.data).await;
}

/// A pool worker: blocks from the queue until it closes.
async fn work(queue: Receiver<Job>) {
    while let Ok(job) = queue.recv().await {
        handle(job).await;
    }
}

/// The spawn and pool shapes' step: to a handler or a worker and back.
impl Step for Connection {
    async fn step(&self, data: Vec<u8>, len: usize, offset: u64, block: usize) -> Option<Vec<u8>> {
        self.round_trip(data, len, offset, block).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures_lite::future::block_on;

    use super::*;

    /// Runs `shape`'s hand-off of `blocks` blocks on a spawn that runs each
    /// task on a thread of its own: how many tasks it spawned.
    fn spawned_for(shape: Shape, threads: usize, blocks: u64) -> usize {
        let spawned = Arc::new(AtomicUsize::new(0));
        let count = spawned.clone();
        let spawn = move |task: Helper| {
            count.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || block_on(task));
        };
        let handoff = Handoff::start(shape, threads, spawn).expect("a shape that hands off");
        let connection = handoff.connection();
        let block = 64;
        for i in 0..blocks {
            let data = vec![i as u8; block];
            let back = block_on(connection.round_trip(data, block, i * 64, block));
            assert_eq!(
                back,
                Some(vec![i as u8; block]),
                "block {i} came back changed"
            );
        }
        spawned.load(Ordering::SeqCst)
    }

    #[test]
    fn spawn_makes_a_task_for_every_block() {
        assert_eq!(spawned_for(Shape::Spawn, 1, 25), 25);
    }

    #[test]
    fn pool_makes_its_workers_once_and_no_task_per_block() {
        assert_eq!(spawned_for(Shape::Pool, 2, 25), 2 * WORKERS_PER_THREAD);
    }
}
