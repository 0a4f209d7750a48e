//! [`Stream`] for every runtime whose sockets implement the `futures-io`
//! traits (async-std, smol, glommio), plain and inside TLS (futures-rustls).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;

use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use futures_rustls::{TlsAcceptor, TlsConnector, TlsStream};

use crate::stream::Stream;
use crate::tls::{Connector, handshake_failed};

/// A `futures-io` TCP socket as a [`Stream`].
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

/// TLS over a `futures-io` TCP socket as a [`Stream`].
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

/// Connects with `connect`, then completes the TLS handshake: the connect
/// function of a TLS client, for [`crate::client::connection`].
pub async fn connect_tls<T, F>(
    tls: Arc<Connector>,
    addr: SocketAddr,
    connect: impl FnOnce(SocketAddr) -> F,
) -> io::Result<Tls<T>>
where
    T: AsyncRead + AsyncWrite + Unpin,
    F: Future<Output = io::Result<Compat<T>>>,
{
    Tls::connect(&tls, connect(addr).await?).await
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
fn shutdown(socket: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: shutdown(2) on a descriptor the socket owns for its lifetime.
    match unsafe { libc::shutdown(socket.as_raw_fd(), libc::SHUT_WR) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

impl<T: AsyncRead + AsyncWrite + AsRawFd + Unpin> Stream for Compat<T> {
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        read_into(&mut self.0, buf).await
    }

    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        (self.0.write_all(&buf[..len]).await, buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        shutdown(&self.0)
    }
}

impl<T: AsyncRead + AsyncWrite + AsRawFd + Unpin> Tls<T> {
    /// Sends close_notify, and every record still held.
    async fn close_notify(&mut self) -> io::Result<()> {
        self.0.get_mut().1.send_close_notify();
        self.0.flush().await
    }
}

impl<T: AsyncRead + AsyncWrite + AsRawFd + Unpin> Stream for Tls<T> {
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        read_into(&mut self.0, buf).await
    }

    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        // rustls may hold records the socket could not take yet: flush sends them.
        let written = match self.0.write_all(&buf[..len]).await {
            Ok(()) => self.0.flush().await,
            Err(e) => Err(e),
        };
        (written, buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        self.close_notify().await?;
        shutdown(self.0.get_ref().0)
    }

    async fn close(&mut self) {
        // The peer has gone if it fails.
        let _ = self.close_notify().await;
    }
}
