//! A non-blocking connection's bytes: plain TCP, or TLS with rustls's
//! connection state machine driven from the event loop (records read from
//! and written to the socket here, as the loop's readiness allows).

use std::io::{self, Read, Write};
use std::net::Shutdown;

use mio::net::TcpStream;
use rustls::Connection;

pub enum Socket {
    Plain(TcpStream),
    Tls(Box<Tls>),
}

pub struct Tls {
    tcp: TcpStream,
    conn: Connection,
    /// Half-close once every record is out (close_notify the last).
    closing: bool,
}

fn would_block() -> io::Error {
    io::ErrorKind::WouldBlock.into()
}

impl Socket {
    pub fn tls(tcp: TcpStream, conn: impl Into<Connection>) -> Self {
        Self::Tls(Box::new(Tls {
            tcp,
            conn: conn.into(),
            closing: false,
        }))
    }

    pub fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(tcp) => tcp,
            Self::Tls(tls) => &tls.tcp,
        }
    }

    /// Plaintext read; `WouldBlock` when nothing is there yet.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Plain(tcp) => tcp.read(buf),
            Self::Tls(tls) => tls.read(buf),
        }
    }

    /// Plaintext write; `WouldBlock` when the socket takes nothing more.
    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(tcp) => tcp.write(data),
            Self::Tls(tls) => tls.write(data),
        }
    }

    /// Sends what the connection still holds; `WouldBlock` while the socket
    /// cannot take it. Nothing on plain TCP, which holds nothing.
    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(_) => Ok(()),
            Self::Tls(tls) => tls.flush(),
        }
    }

    /// Whether a read shorter than asked means the socket is empty (see
    /// `Pipe::read`): not with TLS, whose records the socket may still hold.
    pub fn short_read_drains(&self) -> bool {
        matches!(self, Self::Plain(_))
    }

    /// Makes what progress the TLS handshake can; whether it is complete.
    pub fn handshake(&mut self) -> io::Result<bool> {
        match self {
            Self::Plain(_) => Ok(true),
            Self::Tls(tls) => tls.handshake(),
        }
    }

    /// Half-closes: with TLS after close_notify, once the records are out.
    pub fn shutdown_write(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(tcp) => tcp.shutdown(Shutdown::Write),
            Self::Tls(tls) => {
                tls.conn.send_close_notify();
                tls.closing = true;
                match tls.flush() {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                    done => done,
                }
            }
        }
    }

    /// Says goodbye before the socket is dropped: TLS's close_notify, as far
    /// as the socket takes it.
    pub fn close(&mut self) {
        if let Self::Tls(tls) = self {
            tls.conn.send_close_notify();
            let _ = tls.send_records();
        }
    }
}

impl Tls {
    /// Writes the records the connection holds; `false` while the socket
    /// cannot take them all.
    fn send_records(&mut self) -> io::Result<bool> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.tcp) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Reads records off the socket and processes them (answering what the
    /// handshake needs); `false` at the socket's end of stream.
    fn receive_records(&mut self) -> io::Result<bool> {
        let read = loop {
            match self.conn.read_tls(&mut self.tcp) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                read => break read?,
            }
        };
        if let Err(e) = self.conn.process_new_packets() {
            // rustls queued an alert for the peer: send it if the socket takes it.
            let _ = self.send_records();
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        self.send_records()?;
        Ok(read > 0)
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            // Plaintext already decrypted first; then the socket. At its
            // end, the reader says whether the peer closed cleanly.
            match self.conn.reader().read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                read => return read,
            }
            self.receive_records()?;
        }
    }

    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        loop {
            let n = self.conn.writer().write(data)?;
            let sent = self.send_records()?;
            match (n, sent) {
                // Room again: the connection takes the data now.
                (0, true) if !self.conn.is_handshaking() => {}
                (0, _) => return Err(would_block()),
                (n, _) => return Ok(n),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.send_records()? {
            return Err(would_block());
        }
        if self.closing {
            self.closing = false;
            self.tcp.shutdown(Shutdown::Write)?;
        }
        Ok(())
    }

    fn handshake(&mut self) -> io::Result<bool> {
        while self.conn.is_handshaking() {
            if !self.send_records()? {
                return Ok(false);
            }
            match self.receive_records() {
                Ok(true) => {}
                Ok(false) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the peer closed the connection during the handshake",
                    ));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        // The client's last flight may still be held: the pipe's flush sends it.
        self.send_records()?;
        Ok(true)
    }
}
