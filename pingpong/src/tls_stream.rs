//! TLS over any [`Stream`]: rustls's connection driven by the stream's own
//! reads and writes, records in buffers of its own. For runtimes with no
//! TLS crate on rustls (kimojio's is OpenSSL's): whatever their IO is
//! (completion-based with owned buffers, too), the protocol's one TLS runs
//! on it. Split ([`Split`]), its two sides share the rustls connection,
//! each holding it only between its awaits.

use std::io::{self, Read, Write};
use std::mem;
use std::ops::{Deref, DerefMut, Range};
use std::sync::{Arc, Mutex};

use rustls::{ClientConnection, ConnectionCommon, ServerConfig, ServerConnection, SideData};

use crate::stream::{Reads, Split, Stream, Writes};
use crate::tls::{Connector, handshake_failed};

/// A rustls connection held by `C` over stream `S`: the whole of a
/// connection, or one side of it once split.
///
/// Records rustls wants to send after a read (alerts, key updates) go with
/// the next write, so that reading never needs the writing side.
pub struct TlsStream<S, C> {
    inner: S,
    conn: C,
    incoming: Incoming,
    outgoing: Vec<u8>,
}

/// The client's side.
pub type Client<S> = TlsStream<S, ClientConnection>;
/// The server's side.
pub type Server<S> = TlsStream<S, ServerConnection>;

/// Records read at a time: four full ones.
const INCOMING: usize = 4 * (16 << 10);

/// What holds a rustls connection: the stream itself, or its two sides
/// together once split ([`Shared`]).
pub trait Holds {
    type Side: SideData;

    fn with<R>(&mut self, f: impl FnOnce(&mut ConnectionCommon<Self::Side>) -> R) -> R;
}

impl<C, D: SideData> Holds for C
where
    C: DerefMut + Deref<Target = ConnectionCommon<D>>,
{
    type Side = D;

    fn with<R>(&mut self, f: impl FnOnce(&mut ConnectionCommon<D>) -> R) -> R {
        f(self)
    }
}

/// A rustls connection shared by the two sides of a split stream.
pub struct Shared<C>(Arc<Mutex<C>>);

impl<C: Holds> Holds for Shared<C> {
    type Side = C::Side;

    fn with<R>(&mut self, f: impl FnOnce(&mut ConnectionCommon<C::Side>) -> R) -> R {
        // Held for no await: a panic while holding it ends both sides.
        self.0.lock().expect("a TLS side panicked").with(f)
    }
}

/// Records read from the stream (full length, never cleared), and the
/// range of them rustls has not taken yet.
struct Incoming {
    records: Vec<u8>,
    unread: Range<usize>,
}

impl Incoming {
    fn new(capacity: usize) -> Self {
        Self {
            records: Vec::with_capacity(capacity),
            unread: 0..0,
        }
    }
}

impl<S: Stream> Client<S> {
    /// Connects inside TLS over `inner`, a connected stream.
    pub async fn connect(inner: S, tls: &Connector) -> io::Result<Self> {
        let conn = ClientConnection::new(tls.config.clone(), Connector::server_name())
            .map_err(io::Error::other)?;
        Self::handshake(inner, conn).await.map_err(handshake_failed)
    }
}

impl<S: Stream> Server<S> {
    /// Accepts inside TLS over `inner`, an accepted stream.
    pub async fn accept(inner: S, tls: Arc<ServerConfig>) -> io::Result<Self> {
        let conn = ServerConnection::new(tls).map_err(io::Error::other)?;
        Self::handshake(inner, conn).await
    }
}

impl<S: Stream, C: Holds> TlsStream<S, C> {
    async fn handshake(inner: S, conn: C) -> io::Result<Self> {
        let mut tls = Self {
            inner,
            conn,
            incoming: Incoming::new(INCOMING),
            outgoing: Vec::new(),
        };
        while tls.conn.with(|c| c.is_handshaking()) {
            tls.send().await?;
            let wants_read = tls.conn.with(|c| c.is_handshaking() && c.wants_read());
            if wants_read && !tls.receive().await? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        tls.send().await?;
        Ok(tls)
    }
}

impl<S: Reads, C: Holds> TlsStream<S, C> {
    /// Hands rustls records: those read and not yet taken, else those the
    /// stream has; false at end of stream.
    async fn receive(&mut self) -> io::Result<bool> {
        let incoming = &mut self.incoming;
        if incoming.unread.is_empty() {
            let (read, records) = self.inner.read(mem::take(&mut incoming.records)).await;
            incoming.records = records;
            let n = read?;
            if n == 0 {
                return Ok(false);
            }
            incoming.unread = 0..n;
        }
        self.conn.with(|conn| {
            // Until there is plaintext to read: rustls holds little of it (16 KiB).
            while !incoming.unread.is_empty() {
                let taken = conn.read_tls(&mut &incoming.records[incoming.unread.clone()])?;
                // None taken: a close_notify came first, and the rest means nothing.
                incoming.unread.start = if taken == 0 {
                    incoming.unread.end
                } else {
                    incoming.unread.start + taken
                };
                let state = conn
                    .process_new_packets()
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                if state.plaintext_bytes_to_read() > 0 || state.peer_has_closed() {
                    break;
                }
            }
            Ok(true)
        })
    }
}

impl<S: Writes, C: Holds> TlsStream<S, C> {
    /// Writes every record rustls holds.
    async fn send(&mut self) -> io::Result<()> {
        loop {
            let mut records = mem::take(&mut self.outgoing);
            records.clear();
            let wants = self.conn.with(|conn| {
                conn.wants_write()
                    .then(|| conn.write_tls(&mut records))
                    .transpose()
            })?;
            if wants.is_none() {
                self.outgoing = records;
                return Ok(());
            }
            let len = records.len();
            let (written, records) = self.inner.write_all(records, len).await;
            self.outgoing = records;
            written?;
        }
    }

    /// Sends close_notify, and every record still held.
    async fn close_notify(&mut self) -> io::Result<()> {
        self.conn.with(|conn| conn.send_close_notify());
        self.send().await
    }
}

impl<S: Reads, C: Holds> Reads for TlsStream<S, C> {
    async fn read(&mut self, mut buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        if buf.len() < buf.capacity() {
            buf.resize(buf.capacity(), 0);
        }
        loop {
            match self.conn.with(|conn| conn.reader().read(&mut buf)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // Plaintext, or 0 after close_notify.
                read => return (read, buf),
            }
            match self.receive().await {
                Ok(true) => {}
                // End of stream without close_notify: the reader says so next.
                Ok(false) => return (self.conn.with(|conn| conn.reader().read(&mut buf)), buf),
                Err(e) => return (Err(e), buf),
            }
        }
    }
}

impl<S: Writes, C: Holds> Writes for TlsStream<S, C> {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let mut done = 0;
        while done < len {
            // rustls takes as much as its buffer limit allows, then wants its records sent.
            let taken = match self.conn.with(|conn| conn.writer().write(&buf[done..len])) {
                Ok(0) => Err(io::ErrorKind::WriteZero.into()),
                taken => taken,
            };
            let sent = match taken {
                Ok(n) => {
                    done += n;
                    self.send().await
                }
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                return (Err(e), buf);
            }
        }
        (Ok(()), buf)
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        self.close_notify().await?;
        self.inner.shutdown_write().await
    }

    async fn close(&mut self) {
        // The peer has gone if it fails.
        let _ = self.close_notify().await;
    }
}

impl<S: Split, C: Holds + 'static> Split for TlsStream<S, C> {
    type Read = TlsStream<S::Read, Shared<C>>;
    type Write = TlsStream<S::Write, Shared<C>>;

    fn split(self) -> (Self::Read, Self::Write) {
        let (read, write) = self.inner.split();
        let conn = Arc::new(Mutex::new(self.conn));
        let read = TlsStream {
            inner: read,
            conn: Shared(conn.clone()),
            incoming: self.incoming,
            outgoing: Vec::new(),
        };
        let write = TlsStream {
            inner: write,
            conn: Shared(conn),
            incoming: Incoming::new(0),
            outgoing: self.outgoing,
        };
        (read, write)
    }
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};
    use std::thread::{self, Thread};

    use super::*;
    use crate::blocking::{self, Blocking};
    use crate::tls::Acceptor;

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        blocking::block_on::<Thread, F>(future)
    }

    /// Four blocks in flight each way, more than rustls holds as plaintext
    /// at once, then the client's close_notify: every byte comes back in
    /// order, and the server reads a clean end of stream.
    #[test]
    fn records_cross_a_real_socket_both_ways_and_end_cleanly() {
        let acceptor = Acceptor::new(false).unwrap();
        let connector = Connector::new(&acceptor.certificate_base64(), false).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let config = acceptor.config.clone();
        let server = thread::spawn(move || {
            let tcp = Blocking::new(listener.accept().unwrap().0);
            block_on(async {
                let mut tls = Server::accept(tcp, config).await.unwrap();
                let mut echoed = 0;
                let mut buf = Vec::with_capacity(16 << 10);
                loop {
                    let (read, back) = tls.read(buf).await;
                    let n = read.unwrap();
                    if n == 0 {
                        return echoed;
                    }
                    let (written, back) = tls.write_all(back, n).await;
                    written.unwrap();
                    echoed += n;
                    buf = back;
                }
            })
        });
        let sent: Vec<u8> = (0..4 * 16384u32).map(|i| (i % 251) as u8).collect();
        let tcp = Blocking::new(TcpStream::connect(addr).unwrap());
        let received = block_on(async {
            let mut tls = Client::connect(tcp, &connector).await.unwrap();
            let (written, _) = tls.write_all(sent.clone(), sent.len()).await;
            written.unwrap();
            let mut received = Vec::new();
            while received.len() < sent.len() {
                let (read, buf) = tls.read(Vec::with_capacity(16 << 10)).await;
                let n = read.unwrap();
                assert!(n > 0, "the server ended early");
                received.extend_from_slice(&buf[..n]);
            }
            tls.shutdown_write().await.unwrap();
            received
        });
        assert_eq!(received, sent);
        assert_eq!(server.join().unwrap(), sent.len());
    }
}
