//! Server shapes (`--shape`): what a connection's task does with each block
//! it reads before writing it back. The bytes on the wire are the same in
//! every shape; what differs is which tasks touch a block, and so how much
//! of the runtime's scheduler (spawning, waking across tasks and threads,
//! stealing) each block goes through.
//!
//! The hand-offs go through one runtime-independent channel
//! (async-channel) on every runtime, so that what differs between runtimes
//! is how they schedule and wake, not whose channel is faster.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_channel::{Receiver, Sender};

use super::bytes::before_echo;
use super::tally;

/// What a connection does with each block.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// The task that reads a block writes it back (muduo's pingpong).
    #[default]
    Echo,
    /// The connection's read side and write side in two tasks, the read
    /// side handing each block to the write side through a bounded channel
    /// (a proxy's, or a framed protocol's, connection).
    Split,
    /// A new task for every block read (a request handler), which sends
    /// the block back to the connection's task through a one-shot channel.
    Spawn,
    /// Every connection's blocks go through one queue to a pool of worker
    /// tasks ([`WORKERS_PER_THREAD`] per executor thread), each worker
    /// sending a block back to its connection's task.
    Pool,
}

impl Shape {
    /// Whether blocks leave the connection's task.
    pub fn hands_off(self) -> bool {
        self != Self::Echo
    }

    /// Whether blocks go to a task beside the connection's (a handler or
    /// a worker), through the runtime's spawn ([`crate::server::Echo::spawning`]).
    pub(crate) fn spawns(self) -> bool {
        matches!(self, Self::Spawn | Self::Pool)
    }

    /// The name `--shape` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Echo => "echo",
            Self::Split => "split",
            Self::Spawn => "spawn",
            Self::Pool => "pool",
        }
    }
}

/// The crate of every hand-off's channel, by the name a Cargo.lock gives it.
pub const CHANNEL: &str = "async-channel";

/// Worker tasks the pool shape runs per executor thread: a few, so that a
/// worker that waits does not hold up the thread's other blocks.
pub const WORKERS_PER_THREAD: usize = 4;

/// A task the shapes spawn beside a connection's: it holds blocks and
/// channels only, never the connection, so it is `Send` on every runtime.
pub type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// How the runtime runs a [`Task`]: its own spawn, called from inside the
/// runtime (a task of its executor).
pub type Spawn = Arc<dyn Fn(Task) + Send + Sync>;

/// A block on its way through the pool: its bytes (`data[..len]`), where
/// they start in the stream, and where the worker sends them back.
pub(crate) struct Job {
    data: Vec<u8>,
    len: usize,
    offset: u64,
    block: usize,
    back: Sender<Vec<u8>>,
}

/// What the shapes that hand blocks off need of the runtime: its spawn
/// for a handler per block, or the queue the pool's workers take blocks from.
#[derive(Clone)]
pub(crate) enum Handoff {
    Handlers(Spawn),
    Pool(Sender<Job>),
}

impl Handoff {
    /// Starts what `shape` needs on the executor that `spawn` spawns on,
    /// which runs on `threads` threads: the pool's workers, in the pool shape.
    pub(crate) fn start(shape: Shape, threads: usize, spawn: Spawn) -> Self {
        if shape != Shape::Pool {
            return Self::Handlers(spawn);
        }
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
    pub(crate) fn connection(&self) -> Connection<'_> {
        let returns = matches!(self, Self::Pool(_)).then(|| async_channel::bounded(1));
        Connection {
            handoff: self,
            returns,
        }
    }
}

/// A channel blocks come back on.
type Back = (Sender<Vec<u8>>, Receiver<Vec<u8>>);

/// How one connection hands its blocks off.
pub(crate) struct Connection<'a> {
    handoff: &'a Handoff,
    /// Where the pool's workers send this connection's blocks back.
    returns: Option<Back>,
}

impl Connection<'_> {
    /// Hands `data[..len]` (stream offset `offset`) to another task, which
    /// does the block's work and sends the bytes back; waits for them.
    /// None if the other side has gone (the runtime is shutting down).
    pub(crate) async fn round_trip(
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
        match self.handoff {
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
        let spawn = move |task: Task| {
            count.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || block_on(task));
        };
        let handoff = Handoff::start(shape, threads, Arc::new(spawn));
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
