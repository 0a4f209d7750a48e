//! What the open loop's threads measure ([`super::open_loop`]): one record
//! per thread, added up at the end, below the client's shared state.

use std::time::Duration;

use crate::latency::{Histogram, histogram};

/// What one thread's connections measured; threads' records add up.
#[derive(Debug, Clone)]
pub struct Record {
    /// From when each block was due until it came back, in nanoseconds.
    pub corrected: Histogram,
    /// From when each block went out until it came back.
    pub uncorrected: Histogram,
    /// From when each block was due until it went out.
    pub lag: Histogram,
    /// How late the generator got to the earliest due time of each turn of
    /// its loop.
    pub timer: Histogram,
    /// Blocks due inside the window, and of those, the ones that came back.
    pub due: u64,
    pub returned: u64,
    /// The send lag summed, and its count, per slice of the window (by
    /// when the block was due), for its trend.
    pub lag_slices: Vec<(f64, u64)>,
    /// Time inside the window the generator found nothing to do.
    pub idle: Duration,
}

impl Record {
    pub fn new(slices: usize) -> Self {
        Self {
            corrected: histogram(),
            uncorrected: histogram(),
            lag: histogram(),
            timer: histogram(),
            due: 0,
            returned: 0,
            lag_slices: vec![(0.0, 0); slices],
            idle: Duration::ZERO,
        }
    }

    /// Adds another thread's record.
    pub fn add(&mut self, other: &Record) {
        for (mine, theirs) in [
            (&mut self.corrected, &other.corrected),
            (&mut self.uncorrected, &other.uncorrected),
            (&mut self.lag, &other.lag),
            (&mut self.timer, &other.timer),
        ] {
            mine.add(theirs).expect("histograms of equal bounds add");
        }
        self.due += other.due;
        self.idle += other.idle;
        self.returned += other.returned;
        for (mine, theirs) in self.lag_slices.iter_mut().zip(&other.lag_slices) {
            mine.0 += theirs.0;
            mine.1 += theirs.1;
        }
    }

    /// The generator got to a due time `late`.
    pub fn woke(&mut self, late: Duration) {
        record(&mut self.timer, late);
    }

    /// A turn of the generator's loop inside the window found nothing to do.
    pub fn idled(&mut self, took: Duration) {
        self.idle += took;
    }

    /// The mean send lag of each slice of the window, in seconds (absent
    /// where no block was due).
    pub fn lag_series(&self) -> Vec<Option<f64>> {
        self.lag_slices
            .iter()
            .map(|&(sum, n)| (n > 0).then(|| sum / n as f64 / 1e9))
            .collect()
    }
}

pub(crate) fn record(h: &mut Histogram, took: Duration) {
    h.saturating_record((took.as_nanos() as u64).max(1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_add_up() {
        let mut a = Record::new(2);
        let mut b = Record::new(2);
        a.woke(Duration::from_micros(5));
        b.woke(Duration::from_micros(7));
        (a.due, b.due, b.returned) = (3, 4, 4);
        b.lag_slices[1] = (2e6, 2);
        a.add(&b);
        assert_eq!((a.timer.len(), a.due, a.returned), (2, 7, 4));
        assert_eq!(a.lag_series(), [None, Some(0.001)]);
    }
}
