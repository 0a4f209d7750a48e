//! The muduo stream pingpong, written once.
//!
//! Every runtime binary (`pingpong-<name>`) is a few lines of glue around this
//! crate: it implements [`Runtime`] (and, for async runtimes, [`Stream`], so
//! that the shared loops of [`client`] and [`server`] drive its IO), then
//! hands control to [`cli::main`].
//!
//! The layers, each depending only on those before it: [`protocol`] (bytes),
//! [`stream`] and [`wire`] (contracts), [`client`] and [`server`] (each
//! side's state and loops), [`runtime`] (what a runtime implements),
//! [`driver`] (the two processes, generic over a runtime), [`cli`].
//! Beside them, for the glue: [`knobs`] (each runtime's builder settings),
//! [`tls`] and [`tls_stream`] (the one TLS, over any stream), [`blocking`]
//! (sockets whose IO blocks its caller), `futures_io`, and `tokio_io`
//! (tokio's IO as futures-io, for the HTTP and WebSocket servers). Over
//! UDP, `datagram` is the wire; over HTTP and WebSocket, `web` is.

pub mod affinity;
pub mod blocking;
pub mod cli;
pub mod client;
pub mod datagram;
pub mod deny;
pub mod driver;
pub mod fault;
pub mod futures_io;
pub mod gate;
pub mod knobs;
pub mod latency;
pub mod limits;
pub mod protocol;
pub mod runtime;
pub mod server;
pub mod stream;
pub mod tls;
pub mod tls_stream;
#[cfg(feature = "web")]
pub mod tokio_io;
pub mod unavailable;
pub mod web;
pub mod wire;
pub mod work;

pub use client::Client;
pub use datagram::Datagrams;
pub use runtime::{ListenerModel, Runtime, on_threads};
pub use server::Server;
pub use stream::{Reads, Split, Stream, Writes};
pub use unavailable::Unavailable;
