//! What every echo does to the bytes, whichever task does it, and counts: written once
//! for every runtime (the mio baseline calls it from its own loop).

use super::tally;
use crate::{fault, work};

/// What a server does to `data` (stream offset `offset`) before echoing it:
/// the work per block asked for, and the fault under test, if any. Every
/// echo loop calls it, the shared one and hand-written ones.
pub fn before_echo(data: &mut [u8], offset: u64, block: usize) {
    tally::read();
    work::on_echo(offset, data.len(), block);
    fault::on_echo(offset, data.len(), block);
    fault::corrupt(data, offset);
}
