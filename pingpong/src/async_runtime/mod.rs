//! One interface over every async runtime: what a runtime's glue declares
//! it provides, and over that, written once here, how each of its servers
//! and clients runs in every protocol and shape. [`Async`] makes the
//! [`crate::Runtime`] a binary runs.
//!
//! Whether a task must be `Send` is each runtime's business. pingpong's
//! tasks are values of one type, [`Task`], which a runtime's spawn runs
//! (`task.run()`) where every type is concrete, so that a work-stealing
//! runtime's compiler proves there that the task may move between
//! threads, as it would for the runtime's own users' code.

mod accepted;
mod bridge;
mod client;
mod handoff;
mod interface;
mod relay;
mod select;
mod serve;
mod services;
mod shapes;
mod sockets;
mod split;
mod task;

pub use bridge::Async;
pub use interface::{AsyncRuntime, Executor, Io, Joined, Task};
pub use services::{AsyncLock, Counters, Lock, Never};
pub use sockets::{OverSockets, Sockets};
