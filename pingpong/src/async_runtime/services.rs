//! The services the shapes call beyond IO and spawn, as a runtime offers
//! them: its async mutex ([`Lock`]), and what stands in for a service it
//! does not have ([`Never`]).

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};

/// Blocks counted per connection, as the shared shape keeps them: one map
/// of every connection's, as a session table is.
pub type Counters = HashMap<u64, u64>;

/// An async mutex over the shared shape's [`Counters`]: the runtime's own,
/// or [`AsyncLock`]. Shared by every thread of the server.
#[allow(async_fn_in_trait)]
pub trait Lock: Send + Sync + 'static {
    fn new() -> Self;

    /// Counts a block of connection `connection`, holding the lock.
    async fn count(&self, connection: u64);
}

/// async-lock's mutex: smol's own, and what a runtime without an async
/// mutex that threads share uses.
pub struct AsyncLock(async_lock::Mutex<Counters>);

impl Lock for AsyncLock {
    fn new() -> Self {
        Self(async_lock::Mutex::default())
    }

    async fn count(&self, connection: u64) {
        *self.0.lock().await.entry(connection).or_default() += 1;
    }
}

/// What a runtime has in place of a service it lacks: no value of it
/// exists, so nothing it stands for ever runs.
pub enum Never {}

impl AsyncRead for Never {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match *self {}
    }
}

impl AsyncWrite for Never {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, _: &[u8]) -> Poll<io::Result<usize>> {
        match *self {}
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match *self {}
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        match *self {}
    }
}
