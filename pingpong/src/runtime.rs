//! What a runtime binary runs: how it serves and how it runs a client.
//! An async runtime gets it from its declaration
//! ([`crate::async_runtime::AsyncRuntime`]); the baselines without an
//! executor (an event loop, threads, coroutines) implement it themselves.

use std::io;
use std::sync::Arc;
use std::thread;

use crate::client::Client;
use crate::knobs::Knob;
use crate::server::{DatagramServer, Server};
use crate::unavailable::Unavailable;

/// How a runtime spreads its work over its threads, and so how its
/// server's threads take connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// One executor (or loop) over every thread, one listener: the runtime
    /// spreads its connections over its threads ("1 context / N threads").
    Shared,
    /// One executor per thread, each with its own SO_REUSEPORT listener,
    /// served by that thread alone ("N contexts / N threads").
    PerThread,
}

/// A runtime: how it serves and how it runs a client, on `threads` threads.
///
/// Async runtimes have it from [`crate::async_runtime::Async`]; event-loop
/// baselines drive [`crate::client::Session`] and
/// [`crate::server::before_echo`] themselves, and blocking ones the shared
/// loops through [`crate::blocking`].
pub trait Runtime {
    const TOPOLOGY: Topology;

    /// The builder settings a run may turn ([`crate::knobs`]); the binary
    /// refuses any other.
    const KNOBS: &'static [Knob] = &[];

    /// Why the server has no tasks, if it has none: a blocking baseline or
    /// an event loop has no tasks to spawn and no runtime services, so it
    /// serves the echo shape alone ([`crate::server::Shape`]).
    const NO_TASKS: Option<&'static str> = None;

    /// Why the server cannot serve `shape` at `threads` threads, if it
    /// cannot for want of a service its runtime lacks.
    fn lacks(_shape: crate::server::Shape, _threads: usize) -> Option<io::Error> {
        None
    }

    /// Serves the server's listeners until the process exits.
    fn serve(server: Server) -> io::Result<()>;

    /// Opens the client's connections over its threads and runs every session
    /// to its end.
    fn client(client: &Arc<Client>) -> io::Result<()>;

    /// Serves UDP: answers every datagram on each socket
    /// ([`crate::server::answer`]) until the process exits.
    fn serve_udp(_server: DatagramServer) -> io::Result<()> {
        Err(Unavailable::no_udp())
    }

    /// Why the server cannot serve HTTP or WebSocket, if it cannot: the
    /// one hyper and tungstenite servers need futures-io streams on an
    /// executor ([`crate::server::Web`]).
    const NO_WEB: &'static str = "its glue hands no connection over as a futures-io stream";

    /// Serves HTTP/1.1 or WebSocket (`server.protocol` says which): each
    /// accepted connection to [`crate::server::Web::serve`], until the
    /// process exits.
    fn serve_web(server: Server) -> io::Result<()> {
        Err(Unavailable::no_web(server.protocol, Self::NO_WEB))
    }

    /// Runs the client's UDP sockets
    /// ([`crate::client::datagram_connection`]), each to its end.
    fn client_udp(_client: &Arc<Client>) -> io::Result<()> {
        Err(Unavailable::no_udp())
    }

    /// Runs the client's connections in a connect storm
    /// ([`crate::client::Arrival::Storm`]): one client makes it for every
    /// server, so that only the server differs: the mio baseline's.
    fn storm(_client: &Arc<Client>) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this client connects one connection at a time; the storm (--arrival storm) is \
             pingpong-mio's",
        ))
    }
}

/// Runs `work` for each item on its own named OS thread and waits for all of
/// them; the first error (or a panic) is the result.
pub fn on_threads<T: Send>(
    name: &str,
    items: Vec<T>,
    work: impl Fn(T) -> io::Result<()> + Sync,
) -> io::Result<()> {
    thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn_scoped(scope, move || work(item))
            })
            .collect::<io::Result<_>>()?;
        // Join every thread before looking at any outcome.
        let outcomes: Vec<_> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other(format!("a {name} thread panicked"))))
            })
            .collect();
        outcomes.into_iter().collect()
    })
}
