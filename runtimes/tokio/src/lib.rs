//! tokio's IO types behind the pingpong traits, shared by both tokio models.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct Tcp(TcpStream);

impl pingpong::Stream for Tcp {
    async fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self(stream))
    }

    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // read_buf fills the Vec's spare capacity: no zeroing, no allocation.
        let read = self.0.read_buf(&mut buf).await;
        (read, buf)
    }

    async fn write_all(&mut self, buf: Vec<u8>) -> (io::Result<()>, Vec<u8>) {
        (self.0.write_all(&buf).await, buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        self.0.shutdown().await
    }
}

pub struct Listen(TcpListener);

impl Listen {
    /// Takes over a listener bound by `pingpong`; needs a runtime context.
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<Self> {
        TcpListener::from_std(listener).map(Self)
    }
}

impl pingpong::Listener for Listen {
    type Stream = Tcp;

    async fn accept(&mut self) -> io::Result<Tcp> {
        let (stream, _) = self.0.accept().await?;
        stream.set_nodelay(true)?;
        Ok(Tcp(stream))
    }
}
