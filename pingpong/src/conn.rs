//! What a runtime implements so that the shared protocol runs on it.

use std::io;
use std::sync::Arc;
use std::thread;

use crate::{Client, Server};

/// How a runtime's server threads take connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenerModel {
    /// One listener; the runtime spreads its connections over its threads
    /// ("1 context / N threads").
    Shared,
    /// One SO_REUSEPORT listener per thread, each served by that thread alone
    /// ("N contexts / N threads").
    PerThread,
}

/// A runtime: how it serves and how it runs a client, on `threads` threads.
///
/// Async runtimes implement both by spawning the loops of [`crate::session`]
/// on their executors; event-loop baselines drive [`crate::protocol::Session`]
/// themselves.
pub trait Runtime {
    const LISTENERS: ListenerModel;

    /// Serves the server's listeners until the process exits.
    fn serve(server: Server) -> io::Result<()>;

    /// Opens the client's connections over its threads and runs every session
    /// to its end.
    fn client(client: &Arc<Client>) -> io::Result<()>;
}

/// An established TCP connection with TCP_NODELAY set, in the owned-buffer
/// style that completion-based runtimes (io_uring) need; readiness-based
/// runtimes lend the buffer to their read and give it back.
///
/// Buffers have a capacity of one block and are never reallocated. Futures
/// need not be `Send`: a runtime that spawns across threads proves that at
/// its own (concrete) call site.
#[allow(async_fn_in_trait)]
pub trait Stream {
    /// Reads up to `buf.capacity()` bytes; on success `buf[..n]` holds them
    /// (how long `buf` is otherwise is the implementation's business).
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>);

    /// Writes all of `buf[..len]`.
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>);

    /// Half-closes: the peer reads end of stream.
    async fn shutdown_write(&mut self) -> io::Result<()>;
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
