//! The server side: what a runtime is handed to serve, and the echo and
//! accept loops of async runtimes.

mod setup;
mod tasks;

pub use setup::{Echo, Ready, Server, bind};
pub(crate) use setup::{Event, backlog_in_force};
pub use tasks::{accept_loop, before_echo, echo, serve};
