//! The IO a runtime's TCP connection offers the shared loops: its reading
//! side and its writing side, which a [`Split`] stream gives to two tasks.

use std::io;

/// The reading side of an established TCP connection (TCP_NODELAY set), in
/// the owned-buffer style that completion-based runtimes (io_uring) need;
/// readiness-based runtimes lend the buffer to their read and give it back.
///
/// Buffers have a capacity of one window of blocks and are never
/// reallocated. Futures need not be `Send`: a runtime that spawns across
/// threads proves that at its own (concrete) call site.
#[allow(async_fn_in_trait)]
pub trait Reads {
    /// Reads up to `buf.capacity()` bytes; on success `buf[..n]` holds them
    /// (how long `buf` is otherwise is the implementation's business).
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>);
}

/// The writing side of an established TCP connection, as [`Reads`] is its
/// reading side.
#[allow(async_fn_in_trait)]
pub trait Writes {
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

/// A connection: both sides in one value, driven by one task.
pub trait Stream: Reads + Writes {}

impl<T: Reads + Writes> Stream for T {}

/// A connection that comes apart into its two sides, which then run at
/// once in two tasks (the split shape): a write never waits for a read
/// that is pending on the other side.
pub trait Split: Stream {
    type Read: Reads + 'static;
    type Write: Writes + 'static;

    fn split(self) -> (Self::Read, Self::Write);
}

/// One of two kinds of connection, as one type: a server's plain and TLS
/// connections, so that the tasks of both are one future type.
pub enum Either<P, T> {
    Plain(P),
    Tls(T),
}

impl<P: Reads, T: Reads> Reads for Either<P, T> {
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        match self {
            Self::Plain(s) => s.read(buf).await,
            Self::Tls(s) => s.read(buf).await,
        }
    }
}

impl<P: Writes, T: Writes> Writes for Either<P, T> {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        match self {
            Self::Plain(s) => s.write_all(buf, len).await,
            Self::Tls(s) => s.write_all(buf, len).await,
        }
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(s) => s.shutdown_write().await,
            Self::Tls(s) => s.shutdown_write().await,
        }
    }

    async fn close(&mut self) {
        match self {
            Self::Plain(s) => s.close().await,
            Self::Tls(s) => s.close().await,
        }
    }
}

impl<P: Split, T: Split> Split for Either<P, T> {
    type Read = Either<P::Read, T::Read>;
    type Write = Either<P::Write, T::Write>;

    fn split(self) -> (Self::Read, Self::Write) {
        match self {
            Self::Plain(s) => {
                let (r, w) = s.split();
                (Either::Plain(r), Either::Plain(w))
            }
            Self::Tls(s) => {
                let (r, w) = s.split();
                (Either::Tls(r), Either::Tls(w))
            }
        }
    }
}
