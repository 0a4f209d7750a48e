//! [`Stream`] for every runtime whose sockets implement the `futures-io`
//! traits (async-std, smol, glommio), plain and inside TLS (futures-rustls),
//! and split in two ([`Half`]).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;

use futures_lite::io::{ReadHalf, WriteHalf};
use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use futures_rustls::{TlsAcceptor, TlsConnector, TlsStream};

use crate::stream::{Reads, Split, Writes};
use crate::tls::{Connector, handshake_failed};

/// A `futures-io` TCP socket as a [`crate::Stream`].
pub struct Compat<T>(pub T);

impl<T: AsRawFd> Compat<T> {
    /// A socket with TCP_NODELAY set, as every connection of the suite has
    /// it: what a futures-io runtime's accept and connect return.
    pub fn nodelay(socket: T) -> io::Result<Self> {
        // SAFETY: the descriptor is the socket's, alive while it is borrowed.
        let fd = unsafe { BorrowedFd::borrow_raw(socket.as_raw_fd()) };
        socket2::SockRef::from(&fd).set_tcp_nodelay(true)?;
        Ok(Self(socket))
    }
}

/// TLS over a `futures-io` TCP socket as a [`crate::Stream`].
pub struct Tls<T>(TlsStream<T>);

impl<T: AsyncRead + AsyncWrite + Unpin> Tls<T> {
    /// Completes the client's handshake on a connected socket.
    pub async fn connect(tls: &Connector, tcp: Compat<T>) -> io::Result<Self> {
        let stream = TlsConnector::from(tls.config.clone())
            .connect(Connector::server_name(), tcp.0)
            .await
            .map_err(handshake_failed)?;
        Ok(Self(stream.into()))
    }

    /// Completes the server's handshake on an accepted socket.
    pub async fn accept(tls: Arc<rustls::ServerConfig>, tcp: Compat<T>) -> io::Result<Self> {
        let stream = TlsAcceptor::from(tls).accept(tcp.0).await?;
        Ok(Self(stream.into()))
    }
}

/// Reads into initialized memory, as these traits do: the buffer is zeroed
/// once, then kept at full length.
async fn read_into(
    io: &mut (impl AsyncRead + Unpin),
    mut buf: Vec<u8>,
) -> (io::Result<usize>, Vec<u8>) {
    if buf.len() < buf.capacity() {
        buf.resize(buf.capacity(), 0);
    }
    let read = io.read(&mut buf).await;
    (read, buf)
}

/// Half-closes with the system call itself: `close()` does not half-close
/// everywhere (async-std's only flushes).
fn shutdown(fd: RawFd) -> io::Result<()> {
    // SAFETY: shutdown(2) on a descriptor its socket owns while the caller holds it.
    match unsafe { libc::shutdown(fd, libc::SHUT_WR) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Writes all of `buf[..len]`, then flushes: TLS may hold records the
/// socket could not take yet (a no-op on a TCP socket).
async fn write_flushed(
    io: &mut (impl AsyncWrite + Unpin),
    buf: Vec<u8>,
    len: usize,
) -> (io::Result<()>, Vec<u8>) {
    let written = match io.write_all(&buf[..len]).await {
        Ok(()) => io.flush().await,
        Err(e) => Err(e),
    };
    (written, buf)
}

impl<T: AsyncRead + Unpin> Reads for Compat<T> {
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        read_into(&mut self.0, buf).await
    }
}

impl<T: AsyncWrite + AsRawFd + Unpin> Writes for Compat<T> {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        (self.0.write_all(&buf[..len]).await, buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        shutdown(self.0.as_raw_fd())
    }
}

impl<T: AsyncRead + AsyncWrite + AsRawFd + Unpin> Split for Compat<T>
where
    T: 'static,
{
    type Read = ReadSide<T>;
    type Write = WriteSide<T>;

    fn split(self) -> (Self::Read, Self::Write) {
        let fd = self.0.as_raw_fd();
        halves(self.0, false, Some(fd))
    }
}

impl<T: AsyncRead + AsyncWrite + AsRawFd + Unpin> Tls<T> {
    /// Sends close_notify, and every record still held.
    async fn close_notify(&mut self) -> io::Result<()> {
        self.0.get_mut().1.send_close_notify();
        self.0.flush().await
    }
}

impl<T: AsyncRead + AsyncWrite + AsRawFd + Unpin> Reads for Tls<T> {
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        read_into(&mut self.0, buf).await
    }
}

impl<T: AsyncRead + AsyncWrite + AsRawFd + Unpin> Writes for Tls<T> {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        write_flushed(&mut self.0, buf, len).await
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        self.close_notify().await?;
        shutdown(self.0.get_ref().0.as_raw_fd())
    }

    async fn close(&mut self) {
        // The peer has gone if it fails.
        let _ = self.close_notify().await;
    }
}

impl<T: AsyncRead + AsyncWrite + AsRawFd + Unpin + 'static> Split for Tls<T> {
    type Read = ReadSide<TlsStream<T>>;
    type Write = WriteSide<TlsStream<T>>;

    fn split(self) -> (Self::Read, Self::Write) {
        let fd = self.0.get_ref().0.as_raw_fd();
        halves(self.0, true, Some(fd))
    }
}

/// The reading side of a `futures-io` stream split in two.
pub type ReadSide<T> = Half<ReadHalf<T>>;
/// Its writing side.
pub type WriteSide<T> = Half<WriteHalf<T>>;

/// One side of a `futures-io` stream split in two (futures-lite's halves,
/// which lock the stream only inside each poll): plain, or TLS, which
/// closes with close_notify.
pub struct Half<H> {
    io: H,
    tls: bool,
    /// The socket's, to half-close it where closing the stream does not
    /// (async-std's only flushes); the stream, shared by both halves,
    /// keeps it open.
    fd: Option<RawFd>,
}

/// `stream` (over the socket `fd`) in two halves. A stream whose closing
/// half-closes its socket needs no descriptor.
pub fn halves<T: AsyncRead + AsyncWrite + Unpin>(
    stream: T,
    tls: bool,
    fd: Option<RawFd>,
) -> (ReadSide<T>, WriteSide<T>) {
    let (read, write) = futures_lite::io::split(stream);
    (Half { io: read, tls, fd }, Half { io: write, tls, fd })
}

impl<T: AsyncRead + Unpin> Reads for ReadSide<T> {
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        read_into(&mut self.io, buf).await
    }
}

impl<T: AsyncWrite + Unpin> Writes for WriteSide<T> {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        write_flushed(&mut self.io, buf, len).await
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        // Closing sends close_notify with TLS, then closes the socket's writing.
        self.io.close().await?;
        self.fd.map_or(Ok(()), shutdown)
    }

    async fn close(&mut self) {
        if self.tls {
            // close_notify; the peer has gone if it fails.
            let _ = self.io.close().await;
        }
    }
}
