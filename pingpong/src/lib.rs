//! The muduo stream pingpong, written once.
//!
//! Every runtime binary (`pingpong-<name>`) is a few lines of glue around this
//! crate: it implements [`Runtime`] (and, for async runtimes, [`Stream`], so
//! that the shared session loops in [`session`] drive its IO), then hands
//! control to [`cli::main`].

pub mod affinity;
pub mod cli;
pub mod client;
pub mod conn;
pub mod deny;
pub mod fault;
#[cfg(feature = "futures-io")]
pub mod futures_io;
pub mod gate;
pub mod latency;
pub mod limits;
pub mod protocol;
pub mod report;
pub mod server;
pub mod session;
pub mod unavailable;
pub mod work;

pub use client::Client;
pub use conn::{ListenerModel, Runtime, Stream, on_threads};
pub use server::Server;
pub use unavailable::Unavailable;
