//! The per-block part of the shapes that send a block through one of the
//! runtime's services: the hand-offs' spawn, the blocking pool, the shared
//! lock ([`Handler`]); and the timer around each read ([`Timed`]).

use std::io;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_lite::future;

use super::handoff::Connection;
use super::interface::{AsyncRuntime, Serving};
use super::services::Lock;
use crate::server::{READ_TIMEOUT, Shape, Step, before_echo, tally};
use crate::stream::{Reads, Writes};

/// What a block goes through in a shape that calls the runtime's services.
pub(super) enum Handler<R: AsyncRuntime> {
    /// To a handler task or a pool worker and back (spawn, pool).
    Handoff(Connection),
    /// To the runtime's blocking pool and back (blocking).
    Unblock,
    /// Counted under the server's one lock, then echoed (shared).
    Locked {
        lock: Arc<R::Mutex>,
        connection: u64,
    },
}

/// Numbers the shared shape's connections, server-wide.
static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

impl<R: AsyncRuntime> Handler<R> {
    /// One connection's handler in the server's shape.
    pub(super) fn of(serving: &Serving<R>) -> Self {
        match serving.echo.shape {
            Shape::Blocking => Self::Unblock,
            Shape::Shared => Self::Locked {
                lock: serving.lock.clone(),
                connection: CONNECTIONS.fetch_add(1, Ordering::Relaxed),
            },
            shape => match &serving.handoff {
                Some(handoff) => Self::Handoff(handoff.connection()),
                None => panic!("the {} shape has no handler", shape.name()),
            },
        }
    }
}

impl<R: AsyncRuntime> Step for Handler<R> {
    async fn step(
        &self,
        mut data: Vec<u8>,
        len: usize,
        offset: u64,
        block: usize,
    ) -> Option<Vec<u8>> {
        match self {
            Self::Handoff(connection) => connection.step(data, len, offset, block).await,
            Self::Unblock => {
                tally::unblocked();
                let work = move || {
                    before_echo(&mut data[..len], offset, block);
                    data
                };
                R::unblock(work).await.ok()
            }
            Self::Locked { lock, connection } => {
                lock.count(*connection).await;
                tally::locked();
                before_echo(&mut data[..len], offset, block);
                Some(data)
            }
        }
    }
}

/// A connection whose every read waits on a timer too ([`READ_TIMEOUT`]):
/// the timer is armed as the read starts and dropped (cancelled) when the
/// read comes first; when the timer does, the read fails, and the echo
/// ends the connection.
pub(super) struct Timed<R, S> {
    stream: S,
    runtime: PhantomData<fn() -> R>,
}

impl<R, S> Timed<R, S> {
    pub(super) fn new(stream: S) -> Self {
        Self {
            stream,
            runtime: PhantomData,
        }
    }
}

impl<R: AsyncRuntime, S: Reads> Reads for Timed<R, S> {
    async fn read(&mut self, buf: Vec<u8>) -> (io::Result<usize>, Vec<u8>) {
        tally::timer();
        let read = async { Some(self.stream.read(buf).await) };
        let timer = async {
            R::sleep(READ_TIMEOUT).await;
            None
        };
        match future::or(read, timer).await {
            Some(read) => read,
            None => {
                tally::timed_out();
                let timed_out =
                    io::Error::new(io::ErrorKind::TimedOut, "no bytes within the read timeout");
                (Err(timed_out), Vec::new())
            }
        }
    }
}

impl<R: AsyncRuntime, S: Writes> Writes for Timed<R, S> {
    async fn write_all(&mut self, buf: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        self.stream.write_all(buf, len).await
    }

    async fn shutdown_write(&mut self) -> io::Result<()> {
        self.stream.shutdown_write().await
    }

    async fn close(&mut self) {
        self.stream.close().await
    }
}
