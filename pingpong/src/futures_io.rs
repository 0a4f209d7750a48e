//! [`Stream`] for every runtime whose sockets implement the `futures-io`
//! traits (async-std, smol, glommio).

use std::io;
use std::os::fd::AsRawFd;

use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::stream::Stream;

/// A `futures-io` TCP socket as a [`Stream`].
pub struct Compat<T>(pub T);

impl<T: AsyncRead + AsyncWrite + AsRawFd + Unpin> Stream for Compat<T> {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // These traits read into initialized memory: zero the buffer once,
        // then keep it at full length.
        if buf.len() < buf.capacity() {
            buf.resize(buf.capacity(), 0);
        }
        let read = self.0.read(&mut buf).await;
        (read, buf)
    }

    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        (self.0.write_all(&buf[..len]).await, buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        // The system call itself: `close()` does not half-close everywhere
        // (async-std's only flushes).
        // SAFETY: shutdown(2) on a descriptor the socket owns for its lifetime.
        match unsafe { libc::shutdown(self.0.as_raw_fd(), libc::SHUT_WR) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }
}
