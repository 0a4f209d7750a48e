//! The split shape: a connection's read side and write side in two tasks,
//! joined by a bounded channel, as a proxy or a framed protocol runs them.

use async_channel::{Receiver, Sender};

use crate::fault;
use crate::server::{Echo, before_echo, tally};
use crate::stream::{Reads, Split, Writes};

/// Blocks the read side may hand on before it waits for the write side.
const QUEUE: usize = 4;

/// Buffers in use at most: the queue's, the one being written and the one
/// being read into. The write side gives each back when it has written it.
const BUFFERS: usize = QUEUE + 2;

/// A block on its way to the write side: its bytes, `data[..len]`.
struct Block {
    data: Vec<u8>,
    len: usize,
}

/// The write side of a split connection, spawned as a task of its own.
pub(super) struct Writer<W> {
    side: W,
    blocks: Receiver<Block>,
    spare: Sender<Vec<u8>>,
}

impl<W: Writes> Writer<W> {
    /// Writes every block the read side hands on, in order; says goodbye
    /// once the read side has read end of stream (or failed).
    pub(super) async fn run(mut self) {
        let mut echoed = 0;
        while let Ok(Block { data, len }) = self.blocks.recv().await {
            let (written, data) = self.side.write_all(data, len).await;
            if written.is_err() {
                return;
            }
            echoed += len as u64;
            if fault::ends_connection(echoed) {
                // The read side reads on, and drops what it reads, until the client closes.
                let _ = self.side.shutdown_write().await;
                return;
            }
            // Room for every buffer: it cannot be full; closed, the read side has gone.
            let _ = self.spare.try_send(data);
        }
        self.side.close().await;
    }
}

/// Splits `stream`, hands its write side to `spawn_writer`, and reads on
/// this task: each block read, after its work, goes to the write side.
/// Reads on to the end of stream, also after the write side has gone.
pub(super) async fn split<S: Split>(
    stream: S,
    how: Echo,
    spawn_writer: impl FnOnce(Writer<S::Write>),
) {
    let (mut side, write) = stream.split();
    let (blocks, queue) = async_channel::bounded(QUEUE);
    let (spare, spares) = async_channel::bounded(BUFFERS);
    tally::spawned();
    spawn_writer(Writer {
        side: write,
        blocks: queue,
        spare,
    });
    let mut buf = None;
    let mut read = 0;
    loop {
        let data = buf
            .take()
            .or_else(|| spares.try_recv().ok())
            .unwrap_or_else(|| Vec::with_capacity(how.buffer));
        let (outcome, mut data) = side.read(data).await;
        let len = match outcome {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        before_echo(&mut data[..len], read, how.block);
        read += len as u64;
        tally::handed_off();
        if let Err(refused) = blocks.send(Block { data, len }).await {
            // The write side has hung up: keep the buffer for the next read.
            buf = Some(refused.into_inner().data);
        }
    }
}
