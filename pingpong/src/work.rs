//! `--work N`: deterministic CPU work the server does for every block it
//! echoes, the same in every implementation, to show how a runtime shares
//! the CPU between IO and computation (and, under the `client-slow` fault,
//! the client for every block it gets back). A unit is one round of splitmix64.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// Units per block; set once when the server starts.
static UNITS: AtomicU64 = AtomicU64::new(0);

pub fn set(units: u64) {
    UNITS.store(units, Ordering::Relaxed);
}

/// After echoing `n` bytes that start at stream offset `offset`: the work
/// of every block boundary they crossed.
pub fn on_echo(offset: u64, n: usize, block: usize) {
    let units = UNITS.load(Ordering::Relaxed);
    if units == 0 {
        return;
    }
    let block = block as u64;
    for _ in 0..(offset + n as u64) / block - offset / block {
        black_box(burn(units));
    }
}

/// `units` rounds of splitmix64 from a fixed seed.
pub fn burn(units: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..black_box(units) {
        x = splitmix64(x);
    }
    x
}

/// One round of splitmix64: a well-mixed 64-bit value from any other.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_is_the_same_every_time() {
        assert_eq!(burn(1000), burn(1000));
        assert_ne!(burn(1000), burn(1001));
        assert_eq!(burn(0), 0x9e37_79b9_7f4a_7c15);
    }
}
