//! The server's listener, drained before each connection thread starts.
//!
//! Accepting takes microseconds and starting a thread tens of them, so in
//! a connect storm a loop that started a thread after each accept let the
//! kernel's accept queue (at most `somaxconn`) overflow: 8,547 dropped a
//! run at 10,000 connections on the 2-core VM, and the queue not empty for
//! 19 s. Accepted connections wait here instead, where there is no limit,
//! in the order they arrived.

use std::collections::VecDeque;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;

pub struct Backlog {
    listener: TcpListener,
    accepted: VecDeque<TcpStream>,
}

impl Backlog {
    /// `listener` must block: the backlog waits on it when it is empty.
    pub fn new(listener: TcpListener) -> Self {
        Self {
            listener,
            accepted: VecDeque::new(),
        }
    }

    /// The longest-waiting connection, once the kernel's queue is empty.
    pub fn next(&mut self) -> io::Result<TcpStream> {
        while self.pending()? {
            match self.listener.accept() {
                Ok((stream, _)) => self.accepted.push_back(stream),
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
                Err(e) => return Err(e),
            }
        }
        match self.accepted.pop_front() {
            Some(stream) => Ok(stream),
            None => Ok(self.listener.accept()?.0),
        }
    }

    /// Whether the kernel holds a connection to accept, without waiting.
    fn pending(&self) -> io::Result<bool> {
        let mut listener = libc::pollfd {
            fd: self.listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) on one valid descriptor that outlives the call.
        match unsafe { libc::poll(&mut listener, 1, 0) } {
            -1 => Err(io::Error::last_os_error()),
            ready => Ok(ready > 0),
        }
    }
}
