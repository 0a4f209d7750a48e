//! The server side: what a runtime is handed to serve, the echo and
//! accept loops, and the shapes that hand blocks to other tasks.

mod bytes;
mod datagram;
mod setup;
mod shape;
mod step;
pub(crate) mod tally;
mod tasks;
#[cfg(feature = "executors")]
mod web;

pub use bytes::before_echo;
pub use datagram::{
    DatagramServer, answer, before_answer, bind_datagrams, connected_datagrams, datagram_buffer,
};
pub use setup::{Echo, Ready, Server, bind};
pub(crate) use setup::{Event, backlog_in_force};
pub use shape::{CHANNEL, READ_TIMEOUT, Shape, WORKERS_PER_THREAD};
pub use step::{Inline, Step};
pub(crate) use tally::served;
pub use tasks::{accept_loop, echo};
#[cfg(feature = "executors")]
pub use web::Web;
