//! The muduo stream pingpong, written once.
//!
//! Every runtime binary (`pingpong-<name>`) is glue around this crate: an
//! async runtime declares what it provides
//! ([`async_runtime::AsyncRuntime`]: executors, spawn, its TCP, TLS and UDP
//! types as [`Stream`] and [`Datagrams`], a timer, a blocking pool, a
//! mutex), and every protocol and shape is written once over that; a
//! baseline without an executor implements [`Runtime`] itself. Either
//! hands control to [`cli::main`].
//!
//! The layers, each depending only on those before it: [`protocol`] (bytes),
//! [`stream`] and [`wire`] (contracts), [`client`] and [`server`] (each
//! side's state and loops), [`runtime`] (what a binary runs),
//! `async_runtime` (an async runtime's declaration, and everything over
//! it), [`driver`] (the two processes, generic over a runtime), [`cli`].
//! Beside them, for the glue: [`knobs`] (each runtime's builder settings),
//! [`tls`] and [`tls_stream`] (the one TLS, over any stream), [`blocking`]
//! (sockets whose IO blocks its caller), `futures_io`, and `tokio_io`
//! (tokio's IO as futures-io, for the HTTP and WebSocket servers). Over
//! UDP, `datagram` is the wire; over HTTP and WebSocket, `web` is.

pub mod affinity;
#[cfg(feature = "executors")]
pub mod async_runtime;
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
#[cfg(feature = "executors")]
pub mod tokio_io;
pub mod unavailable;
pub mod web;
pub mod wire;
pub mod work;

pub use client::Client;
pub use datagram::Datagrams;
pub use runtime::{Runtime, Topology, on_threads};
pub use server::Server;
pub use stream::{Reads, Split, Stream, Writes};
pub use unavailable::Unavailable;
