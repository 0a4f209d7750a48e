//! Open loop at a fixed rate (wrk2's model), free of any IO: each connection
//! sends a block at fixed times, whether or not the earlier ones came back,
//! and each block's round trip runs from the time it was due, so that a
//! server that stalls is charged for every block it kept waiting
//! (coordinated omission). An event loop (the mio client's) does the IO.
//!
//! The stream is the closed loop's: the client writes the pattern block
//! after block and verifies what comes back; it echoes nothing. Blocks may
//! be in flight several at a time (the echo keeps their order).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub use super::open_loop_record::Record;
use super::open_loop_record::record;
use super::session::{Session, SessionError};
use super::state::{Client, Phase};
use crate::work::splitmix64;

/// The most bytes one connection keeps in flight: past it a connection
/// waits for blocks to come back, and its send lag grows. It bounds what a
/// server that cannot keep up leaves to drain after the window.
pub const MAX_IN_FLIGHT_BYTES: usize = 4 << 20;

/// When a connection's blocks are due: every `interval` from its phase on.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    first: Instant,
    interval: Duration,
}

impl Schedule {
    /// Connection `index` of the client, starting at `origin`: each of the
    /// connections sends `rate / connections` blocks a second, at a phase
    /// of its own (a hash of its index) so that they do not fire together.
    pub fn new(rate: u64, connections: usize, index: usize, origin: Instant) -> Self {
        let interval = Duration::from_secs_f64(connections as f64 / rate as f64);
        let fraction = splitmix64(index as u64) as f64 / u64::MAX as f64;
        Self {
            first: origin + interval.mul_f64(fraction),
            interval,
        }
    }

    /// When block `k` is due.
    pub fn due(&self, k: u64) -> Instant {
        self.first + self.interval.mul_f64(k as f64)
    }

    /// How many blocks are due before `t`.
    pub fn due_before(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.first) {
            Some(d) if !d.is_zero() => {
                (d.as_secs_f64() / self.interval.as_secs_f64()).ceil() as u64
            }
            _ => 0,
        }
    }
}

/// One connection of the open loop: what to write when, and what came back.
pub struct Paced<'a> {
    pub session: Session<'a>,
    client: &'a Client,
    schedule: Option<Schedule>,
    /// The next block to send, and how much of it is written.
    next: u64,
    written: usize,
    /// The blocks sent and not yet back: their number and when each went out.
    in_flight: VecDeque<(u64, Instant)>,
    max_in_flight: usize,
    /// Bytes that came back.
    received: u64,
    stopped: bool,
}

impl<'a> Paced<'a> {
    pub fn new(client: &'a Client) -> Self {
        Self {
            session: Session::new(client),
            client,
            schedule: None,
            next: 0,
            written: 0,
            in_flight: VecDeque::new(),
            max_in_flight: (MAX_IN_FLIGHT_BYTES / client.config.block).max(1),
            received: 0,
            stopped: false,
        }
    }

    /// Connection `index` starts its schedule at `origin`.
    pub fn start(&mut self, index: usize, origin: Instant) {
        let config = &self.client.config;
        let rate = config.rate.expect("an open-loop client has a rate");
        self.schedule = Some(Schedule::new(rate, config.connections, index, origin));
        self.session.first_block();
    }

    /// Whether the schedule has started.
    pub fn started(&self) -> bool {
        self.schedule.is_some()
    }

    /// When the next block is due, if the connection waits for a time (not
    /// for the socket, nor for blocks to come back).
    pub fn due(&self) -> Option<Instant> {
        let schedule = self.schedule?;
        let waits = !self.stopped && self.written == 0 && self.in_flight.len() < self.max_in_flight;
        waits.then(|| schedule.due(self.next))
    }

    /// What to write now: the rest of a block begun, or a block due by `now`.
    pub fn to_write(&self, now: Instant) -> Option<&'a [u8]> {
        let pattern: &'a [u8] = &self.client.pattern;
        if self.written > 0 {
            return Some(&pattern[self.written..]);
        }
        (self.due()? <= now).then_some(pattern)
    }

    /// `n` bytes of what [`Self::to_write`] gave went out at `now`.
    pub fn wrote(&mut self, n: usize, now: Instant, record: &mut Record) {
        if n == 0 {
            return;
        }
        if self.written == 0 {
            let due = self.schedule.expect("started").due(self.next);
            self.in_flight.push_back((self.next, now));
            if let Some(slice) = self.slice_of(due) {
                let lag = now.saturating_duration_since(due);
                let sums = &mut record.lag_slices[slice];
                sums.0 += lag.as_nanos() as f64;
                sums.1 += 1;
                self::record(&mut record.lag, lag);
            }
        }
        self.written += n;
        if self.written == self.client.pattern.len() {
            self.written = 0;
            self.next += 1;
        }
    }

    /// Takes bytes just read; blocks that came back whole are timed.
    pub fn on_data(
        &mut self,
        data: &[u8],
        now: Instant,
        record: &mut Record,
    ) -> Result<(), SessionError> {
        self.session.on_data(data)?;
        let block = self.client.pattern.len() as u64;
        let before = self.received / block;
        self.received += data.len() as u64;
        for _ in before..self.received / block {
            let Some((k, sent)) = self.in_flight.pop_front() else {
                break;
            };
            let due = self.schedule.expect("started").due(k);
            if self.slice_of(due).is_some() {
                self::record(&mut record.corrected, now.saturating_duration_since(due));
                self::record(&mut record.uncorrected, now.saturating_duration_since(sent));
                record.returned += 1;
            }
        }
        Ok(())
    }

    /// The window is over: no block is sent after the one begun. Counts the
    /// blocks that were due inside the window. Whether the connection may
    /// half-close now (else once [`Self::to_write`]'s rest is written).
    pub fn stop(&mut self, record: &mut Record) -> bool {
        if !self.stopped {
            self.stopped = true;
            self.session.stop_sending();
            if let (Some(schedule), Some((open, close))) = (self.schedule, self.client.window()) {
                record.due += schedule.due_before(close) - schedule.due_before(open);
            }
        }
        self.written == 0
    }

    /// Whether the window has stopped this connection.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The slice of the window a block due at `due` counts in, if inside it.
    fn slice_of(&self, due: Instant) -> Option<usize> {
        let (open, _) = self.client.window()?;
        match self
            .client
            .config
            .phase_at(due.checked_duration_since(open)?)
        {
            Phase::Measuring(slice) => Some(slice),
            _ => None,
        }
    }
}

/// The least share of the rate a run must achieve to sustain it.
pub const SUSTAINED_SHARE: f64 = 0.99;
/// The busiest the generator may be: past it, its own delays in sending
/// and reading may set the pace rather than the server's.
pub const GENERATOR_BUSY: f64 = 0.95;
/// How much the send lag may grow through the window (from its first
/// quarter to its last) before the run is said not to keep up.
pub const LAG_GROWTH: Duration = Duration::from_millis(1);

/// Why a run did not sustain `rate` blocks a second, if it did not: it
/// achieved less than [`SUSTAINED_SHARE`] of it (blocks back inside the
/// window per second), or its send lag (`lag_series`, seconds per slice)
/// grew by more than [`LAG_GROWTH`] from the window's first quarter to its
/// last, compared as medians of the slices' means so that one stall does
/// not decide; or the generator was busy more than [`GENERATOR_BUSY`] of
/// the window (`busy`, a share).
pub fn not_sustained(
    rate: u64,
    achieved: f64,
    lag_series: &[Option<f64>],
    busy: f64,
) -> Option<String> {
    if achieved < SUSTAINED_SHARE * rate as f64 {
        return Some(format!(
            "{achieved:.0} of {rate} blocks/s came back ({:.1}%)",
            achieved / rate as f64 * 100.0
        ));
    }
    if busy > GENERATOR_BUSY {
        return Some(format!(
            "the generator was busy {:.0}% of the window: it, not the server, may have set the pace",
            busy * 100.0
        ));
    }
    let quarter = (lag_series.len() / 4).max(1);
    let median = |slices: &[Option<f64>]| {
        let mut lags: Vec<f64> = slices.iter().flatten().copied().collect();
        lags.sort_by(f64::total_cmp);
        (!lags.is_empty()).then(|| lags[lags.len() / 2])
    };
    let first = median(&lag_series[..quarter.min(lag_series.len())])?;
    let last = median(&lag_series[lag_series.len().saturating_sub(quarter)..])?;
    (last - first > LAG_GROWTH.as_secs_f64()).then(|| {
        format!(
            "the send lag grew from {:.2} ms to {:.2} ms through the window",
            first * 1e3,
            last * 1e3
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::state::ClientConfig;
    use crate::latency::Histogram;

    fn client(rate: u64, connections: usize, seconds: u64) -> Client {
        Client::new(ClientConfig {
            protocol: Default::default(),
            connect: "127.0.0.1:1".parse().unwrap(),
            threads: 1,
            connections,
            block: 100,
            warmup: Duration::ZERO,
            seconds: Duration::from_secs(seconds),
            latency: true,
            window: 1,
            blocks: None,
            arrival: Default::default(),
            churn: None,
            rate: Some(rate),
            tls: None,
            knobs: Default::default(),
            start_signal: false,
        })
    }

    #[test]
    fn connections_share_the_rate_at_phases_of_their_own() {
        let origin = Instant::now();
        let schedules: Vec<_> = (0..4).map(|i| Schedule::new(1000, 4, i, origin)).collect();
        for s in &schedules {
            // 250 blocks a second each: every 4 ms, from a phase inside the first.
            assert_eq!(s.due(1) - s.due(0), Duration::from_millis(4));
            assert!(s.due(0) >= origin && s.due(0) < origin + Duration::from_millis(4));
            assert_eq!(s.due_before(s.due(0)), 0);
            assert_eq!(s.due_before(s.due(0) + Duration::from_nanos(1)), 1);
            assert_eq!(s.due_before(s.due(10)), 10);
        }
        let mut phases: Vec<_> = schedules.iter().map(|s| s.due(0)).collect();
        phases.dedup();
        assert_eq!(phases.len(), 4);
    }

    #[test]
    fn a_block_is_timed_from_when_it_was_due_and_from_when_it_went_out() {
        let client = client(1000, 1, 3600);
        let open = client.open_window();
        let mut record = Record::new(client.config.slices());
        let mut paced = Paced::new(&client);
        paced.start(0, open);
        let due = paced.due().unwrap();
        assert!(paced.to_write(due - Duration::from_nanos(1)).is_none());
        // Sent 2 ms late, in two writes; back 1 ms after.
        let sent = due + Duration::from_millis(2);
        assert_eq!(paced.to_write(sent).unwrap().len(), 100);
        paced.wrote(60, sent, &mut record);
        assert_eq!(paced.to_write(sent).unwrap().len(), 40);
        assert!(paced.due().is_none(), "waits for the socket, not the clock");
        paced.wrote(40, sent, &mut record);
        // The next is due 1 ms after the first.
        assert_eq!(paced.due().unwrap() - due, Duration::from_millis(1));
        let back = sent + Duration::from_millis(1);
        let data = crate::protocol::pattern(100);
        paced.on_data(&data[..50], back, &mut record).unwrap();
        assert_eq!(record.returned, 0);
        paced.on_data(&data[50..], back, &mut record).unwrap();
        assert_eq!(record.returned, 1);
        let ms = |h: &Histogram| h.max() as f64 / 1e6;
        assert!((ms(&record.corrected) - 3.0).abs() < 0.01);
        assert!((ms(&record.uncorrected) - 1.0).abs() < 0.01);
        assert!((ms(&record.lag) - 2.0).abs() < 0.01);
    }

    #[test]
    fn blocks_due_go_out_together_when_late_and_come_back_in_order() {
        let client = client(1000, 1, 3600);
        let open = client.open_window();
        let mut record = Record::new(client.config.slices());
        let mut paced = Paced::new(&client);
        paced.start(0, open);
        let late = paced.due().unwrap() + Duration::from_micros(3500);
        // Four blocks were due by then: each goes out at once.
        let mut sent = 0;
        while let Some(bytes) = paced.to_write(late) {
            paced.wrote(bytes.len(), late, &mut record);
            sent += 1;
        }
        assert_eq!(sent, 4);
        let stream: Vec<u8> = crate::protocol::pattern(100).repeat(4);
        paced.on_data(&stream, late, &mut record).unwrap();
        assert_eq!(record.returned, 4);
        // Their lags: 3.5, 2.5, 1.5 and 0.5 ms; each round trip its lag.
        assert!((record.lag.mean() / 1e6 - 2.0).abs() < 0.01);
        assert_eq!(record.corrected.mean(), record.lag.mean());
    }

    #[test]
    fn a_connection_stops_at_the_windows_end_with_the_blocks_due_in_it_counted() {
        let client = client(1000, 1, 1);
        let open = client.open_window();
        let mut record = Record::new(client.config.slices());
        let mut paced = Paced::new(&client);
        paced.start(0, open);
        let first = paced.due().unwrap();
        paced.wrote(50, first, &mut record);
        // Half a block out: it goes out whole before the half-close.
        assert!(!paced.stop(&mut record));
        assert_eq!(paced.to_write(first).unwrap().len(), 50);
        paced.wrote(50, first, &mut record);
        assert!(paced.stop(&mut record));
        assert!(paced.to_write(first + Duration::from_secs(9)).is_none());
        // A 1 s window at 1,000 blocks a second: 1,000 due, counted once.
        assert_eq!(record.due, 1000);
    }

    #[test]
    fn a_run_short_of_the_rate_or_falling_behind_does_not_sustain_it() {
        let steady = vec![Some(20e-6); 20];
        assert_eq!(not_sustained(1000, 995.0, &steady, 0.5), None);
        let short = not_sustained(1000, 900.0, &steady, 0.5).unwrap();
        assert!(short.contains("900 of 1000 blocks/s"), "{short}");
        // Lag that grows by 2 ms through the window.
        let growing: Vec<_> = (0..20).map(|i| Some(i as f64 * 1e-4)).collect();
        let behind = not_sustained(1000, 1000.0, &growing, 0.5).unwrap();
        assert!(behind.contains("grew from 0.20 ms to 1.70 ms"), "{behind}");
        // One stalled slice does not decide.
        let mut stall = steady.clone();
        stall[19] = Some(0.05);
        assert_eq!(not_sustained(1000, 1000.0, &stall, 0.5), None);
        // A generator with no time to spare measures itself.
        let busy = not_sustained(1000, 1000.0, &steady, 0.97).unwrap();
        assert!(busy.contains("busy 97%"), "{busy}");
    }
}
