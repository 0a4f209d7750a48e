//! Server shapes (`--shape`): what a connection's task does with each block
//! it reads before writing it back. The bytes on the wire are the same in
//! every shape; what differs is which tasks touch a block, and so how much
//! of the runtime's scheduler (spawning, waking across tasks and threads,
//! stealing) each block goes through.
//!
//! The hand-offs go through one runtime-independent channel
//! (async-channel) on every runtime, so that what differs between runtimes
//! is how they schedule and wake, not whose channel is faster. How each
//! shape runs is written once over the async runtimes' interface
//! ([`crate::async_runtime`]); the baselines serve the echo alone.

use std::time::Duration;

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
    /// The echo with a timeout around every read ([`READ_TIMEOUT`]), as a
    /// server guards against idle peers: a timer armed and cancelled per
    /// block, which a healthy run never fires.
    Timeout,
    /// Each block handed to the runtime's pool of blocking threads, which
    /// does its work there and hands it back (a file, a database driver, a
    /// CPU-bound step).
    Blocking,
    /// Each executor thread's connections driven by one future, no task per
    /// connection, as small servers and proxies are written; on a shared
    /// runtime, one of them is the future its `block_on` drives.
    Select,
    /// Each block counted in one map of every connection's, behind an async
    /// mutex (a session table): the server's threads contend for it.
    Shared,
}

impl Shape {
    /// Whether blocks go to another task through the hand-offs' channel ([`CHANNEL`]).
    pub fn hands_off(self) -> bool {
        matches!(self, Self::Split | Self::Spawn | Self::Pool)
    }

    /// What the shape calls on each block, in words.
    pub fn calls(self) -> &'static str {
        match self {
            Self::Echo => "does the block's work where it was read",
            Self::Split | Self::Spawn | Self::Pool => "hands each block to another task",
            Self::Timeout => "arms the runtime's timer around each read",
            Self::Blocking => "hands each block to the runtime's blocking pool",
            Self::Select => "drives a thread's connections in one future on the runtime",
            Self::Shared => "takes the runtime's async mutex for each block",
        }
    }

    /// The name `--shape` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Echo => "echo",
            Self::Split => "split",
            Self::Spawn => "spawn",
            Self::Pool => "pool",
            Self::Timeout => "timeout",
            Self::Blocking => "blocking",
            Self::Select => "select",
            Self::Shared => "shared",
        }
    }
}

/// How long the timeout shape waits for a read.
pub const READ_TIMEOUT: Duration = Duration::from_secs(1);

/// The crate of every hand-off's channel, by the name a Cargo.lock gives it.
pub const CHANNEL: &str = "async-channel";

/// Worker tasks the pool shape runs per executor thread: a few, so that a
/// worker that waits does not hold up the thread's other blocks.
pub const WORKERS_PER_THREAD: usize = 4;
