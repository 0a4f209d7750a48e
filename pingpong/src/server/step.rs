//! What a connection does with each block it reads before it writes the
//! block back: the block's work on the task that read it, or a trip
//! through another task or thread and back.

use super::bytes::before_echo;

/// One block's way from its read to its write.
#[allow(async_fn_in_trait)]
pub trait Step {
    /// `data[..len]` (stream offset `offset`) after its work, to be
    /// written back; None when the connection must end (what the block
    /// went to has gone).
    async fn step(&self, data: Vec<u8>, len: usize, offset: u64, block: usize) -> Option<Vec<u8>>;
}

/// The block's work done where it was read: muduo's echo.
pub struct Inline;

/// Done when the step is called: the echo awaits a future that is ready,
/// and nothing of it is left to poll.
impl Step for Inline {
    fn step(
        &self,
        mut data: Vec<u8>,
        len: usize,
        offset: u64,
        block: usize,
    ) -> impl Future<Output = Option<Vec<u8>>> {
        before_echo(&mut data[..len], offset, block);
        std::future::ready(Some(data))
    }
}
