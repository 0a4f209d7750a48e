//! The baseline: one raw mio event loop per thread, no async runtime. Each
//! server thread owns a SO_REUSEPORT listener; each client thread owns its
//! share of the connections (over UDP: its own socket, its share of the
//! sockets). Edge-triggered, as mio is.
//!
//! Its sockets and connects are the open loop's generator's too
//! (`generator/`), which is an instrument built on the same event loop.

pub mod client;
pub mod pipe;
mod server;
pub mod socket;
mod udp;

use std::io;
use std::sync::Arc;

use pingpong::server::DatagramServer;
use pingpong::{Client, Server, Topology, on_threads};

pub struct EventLoop;

impl pingpong::Runtime for EventLoop {
    const TOPOLOGY: Topology = Topology::PerThread;
    const NO_WEB: &'static str = "mio is an event loop without an executor, and polls no futures";
    const NO_TASKS: Option<&'static str> =
        Some("mio's server is one event loop per thread, which has no tasks");

    fn serve(server: Server) -> io::Result<()> {
        let (echo, ready, tls) = (&server.echo, &server.ready, server.tls.as_ref());
        on_threads("server", server.listeners, |listener| {
            server::event_loop(listener, echo, tls, ready)
        })
    }

    fn client(client: &Arc<Client>) -> io::Result<()> {
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            client::event_loop(client, client.connections_of(thread))
        })
    }

    fn storm(client: &Arc<Client>) -> io::Result<()> {
        Self::client(client)
    }

    fn serve_udp(server: DatagramServer) -> io::Result<()> {
        let ready = &server.ready;
        on_threads("server", server.sockets, |socket| udp::serve(socket, ready))
    }

    fn client_udp(client: &Arc<Client>) -> io::Result<()> {
        on_threads("client", (0..client.config.threads).collect(), |thread| {
            udp::client(client, client.connections_of(thread))
        })
    }
}
