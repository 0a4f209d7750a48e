//! A non-blocking connection with one block-sized buffer: what was read last
//! and how much of it is still to be written back.

use std::io;

use crate::socket::Socket;

pub struct Pipe {
    pub socket: Socket,
    /// Empty until the connection first reads or writes: allocating (and
    /// faulting in) 10,000 buffers where they are accepted would slow the
    /// accepting, and a storm of connections would overflow the queue.
    buf: Box<[u8]>,
    size: usize,
    start: usize,
    end: usize,
    /// Bytes echoed so far.
    echoed: u64,
}

impl Pipe {
    pub fn new(socket: Socket, block: usize) -> Self {
        Self {
            socket,
            buf: Box::default(),
            size: block,
            start: 0,
            end: 0,
            echoed: 0,
        }
    }

    /// Queues `data` to be written (the client's first block).
    pub fn queue(&mut self, data: &[u8]) {
        self.buffer()[..data.len()].copy_from_slice(data);
        self.start = 0;
        self.end = data.len();
    }

    /// Writes what is pending (and what TLS still holds); `false` while the
    /// socket cannot take the rest.
    pub fn flush(&mut self) -> io::Result<bool> {
        while self.start < self.end {
            match self.socket.write(&self.buf[self.start..self.end]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.start += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        match self.socket.flush() {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads into the (flushed) buffer: `None` when nothing is there yet,
    /// else the bytes and whether they drained the socket. Per epoll(7), a
    /// short read of a stream socket means its buffer is empty, so the next
    /// edge comes without another read returning EAGAIN (tokio does the
    /// same). Not when the peer has closed its side (`read_closed`, from the
    /// event): its end of stream may have come with the last bytes, in the
    /// same edge, and only another read sees it. Nor with TLS.
    pub fn read(&mut self, read_closed: bool) -> io::Result<Option<(&[u8], bool)>> {
        self.buffer();
        loop {
            match self.socket.read(&mut self.buf) {
                Ok(n) => {
                    let drained =
                        n < self.buf.len() && !read_closed && self.socket.short_read_drains();
                    return Ok(Some((&self.buf[..n], drained)));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Nothing read or written yet.
    pub fn fresh(&self) -> bool {
        self.buf.is_empty()
    }

    /// The buffer, allocated on first use.
    fn buffer(&mut self) -> &mut [u8] {
        if self.buf.is_empty() {
            self.buf = vec![0; self.size].into_boxed_slice();
        }
        &mut self.buf
    }

    /// Queues the first `n` bytes of the buffer (the bytes just read) to be
    /// written back; returns them, and the stream offset they start at.
    pub fn echo(&mut self, n: usize) -> (&mut [u8], u64) {
        let at = self.echoed;
        self.echoed += n as u64;
        self.start = 0;
        self.end = n;
        (&mut self.buf[..n], at)
    }
}
