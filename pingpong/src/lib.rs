//! The muduo stream pingpong, written once.
//!
//! Every runtime binary (`pingpong-<name>`) is a few lines of glue around this
//! crate: it implements [`Runtime`] (and, for async runtimes, [`Stream`] and
//! [`Listener`] so that the shared session loops in [`session`] drive its IO),
//! then hands control to [`cli::main`].

pub mod cli;
pub mod client;
pub mod conn;
pub mod limits;
pub mod protocol;
pub mod report;
pub mod server;
pub mod session;

pub use client::Client;
pub use conn::{Listener, ListenerModel, Runtime, Stream, on_threads};
pub use server::Server;
