//! An async runtime as the [`Runtime`] a binary runs: each protocol and
//! shape from what the runtime declares, or unavailable with the reason
//! where it lacks what one needs.

use std::io;
use std::marker::PhantomData;
use std::sync::Arc;

use super::interface::{AsyncRuntime, Io, Task};
use super::{client, serve};
use crate::client::Client;
use crate::knobs::Knob;
use crate::runtime::{Runtime, Topology};
use crate::server::{DatagramServer, Server, Shape};
use crate::unavailable::Unavailable;

/// The runtime `R`, as a binary runs it: `pingpong::cli::main::<Async<R>>()`.
pub struct Async<R>(PhantomData<R>);

impl<R: AsyncRuntime> Runtime for Async<R> {
    const TOPOLOGY: Topology = R::TOPOLOGY;
    const KNOBS: &'static [Knob] = R::KNOBS;

    fn lacks(shape: Shape, threads: usize) -> Option<io::Error> {
        let (short, why) = match shape {
            Shape::Blocking => ("no blocking pool", R::NO_BLOCKING_POOL?),
            Shape::Shared if R::THREAD_BOUND_WAKERS && threads > 1 => (
                "no lock across threads",
                "its wakers may only be woken on their own thread, and a lock that threads \
                 share is released on another",
            ),
            _ => return None,
        };
        Some(Unavailable::no_service(shape, short, why))
    }

    fn serve(server: Server) -> io::Result<()> {
        serve::tcp::<R>(server)
    }

    fn serve_web(server: Server) -> io::Result<()> {
        match R::Io::NO_FUTURES_IO {
            Some(why) => Err(Unavailable::no_web(server.protocol, why)),
            None => serve::web::<R>(server),
        }
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        serve::udp::<R>(server)
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        client::run::<R>(client, false, Task::connection)
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        client::run::<R>(client, true, Task::datagrams)
    }
}
