//! The server side: what a runtime is handed to serve, the echo and
//! accept loops of async runtimes, and the shapes that hand blocks to
//! other tasks.

mod bytes;
mod datagram;
mod setup;
mod shape;
mod split;
mod tally;
mod tasks;
#[cfg(feature = "web")]
mod web;

pub use bytes::before_echo;
pub use datagram::{
    DatagramServer, answer, before_answer, bind_datagrams, connected_datagrams, datagram_buffer,
};
pub use setup::{Echo, Ready, Server, bind};
pub(crate) use setup::{Event, backlog_in_force};
pub use shape::{CHANNEL, Shape, Task, WORKERS_PER_THREAD};
pub use split::Writer;
pub(crate) use tally::served;
pub use tasks::{accept_loop, echo, serve};
#[cfg(feature = "web")]
pub use web::Web;
