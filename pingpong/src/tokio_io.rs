//! A tokio-IO stream as a futures-io one, for the HTTP and WebSocket
//! servers ([`crate::server::Web`]): what tokio's connections, and
//! monoio's through its poll-io, are handed over as.
//!
//! Written here, not taken from tokio-util's compat: its releases require
//! a recent tokio, and the suite builds its glue against older tokio
//! releases too. The traits this needs are tokio 1.0's.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// A tokio-IO stream that implements the futures-io traits.
pub struct TokioIo<T>(pub T);

impl<T: tokio::io::AsyncRead + Unpin> futures_lite::AsyncRead for TokioIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let mut buf = tokio::io::ReadBuf::new(buf);
        ready!(Pin::new(&mut self.0).poll_read(cx, &mut buf))?;
        Poll::Ready(Ok(buf.filled().len()))
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> futures_lite::AsyncWrite for TokioIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    /// Half-closes (with TLS, after close_notify), as futures-io's close does.
    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
