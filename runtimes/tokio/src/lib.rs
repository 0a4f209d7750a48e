//! tokio's stream behind the pingpong trait, shared by both tokio models.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct Tcp(TcpStream);

impl Tcp {
    pub async fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self(stream))
    }

    pub async fn accept(listener: &TcpListener) -> io::Result<Self> {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        Ok(Self(stream))
    }
}

impl pingpong::Stream for Tcp {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        // read_buf fills the Vec's spare capacity: no zeroing, no allocation.
        buf.clear();
        let read = self.0.read_buf(&mut buf).await;
        (read, buf)
    }

    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        (self.0.write_all(&buf[..len]).await, buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        self.0.shutdown().await
    }
}
