//! The IO a runtime's TCP connection offers the shared loops.

use std::io;

/// An established TCP connection with TCP_NODELAY set, in the owned-buffer
/// style that completion-based runtimes (io_uring) need; readiness-based
/// runtimes lend the buffer to their read and give it back.
///
/// Buffers have a capacity of one window of blocks and are never
/// reallocated. Futures need not be `Send`: a runtime that spawns across
/// threads proves that at its own (concrete) call site.
#[allow(async_fn_in_trait)]
pub trait Stream {
    /// Reads up to `buf.capacity()` bytes; on success `buf[..n]` holds them
    /// (how long `buf` is otherwise is the implementation's business).
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>);

    /// Writes all of `buf[..len]`.
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>);

    /// Half-closes: the peer reads end of stream (with TLS, after a
    /// close_notify alert).
    async fn shutdown_write(&mut self) -> io::Result<()>;

    /// Says goodbye before the connection is dropped: TLS sends its
    /// close_notify alert, so that the peer reads a clean end of stream;
    /// plain TCP has nothing to say.
    async fn close(&mut self) {}
}
