//! The state every connection of one client process shares: what it was
//! asked to do, where the run is, and what the connections counted.

use std::fmt::Display;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::task::Waker;
use std::time::{Duration, Instant};

use super::open_loop_record::Record;
use crate::gate::Gate;
use crate::latency::{Histogram, Recorders, histogram};
use crate::protocol::{Protocol, pattern};

/// Where the run is, as every connection sees it after each read.
///
/// Connections read the window's slices and its end off the clock
/// themselves: a driver thread that wakes late (10,000 busy threads can
/// keep it waiting for seconds) then neither stretches a slice nor the
/// window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Connecting and warming up: bytes are verified but not counted.
    Running,
    /// Inside the measurement window, in this slice of it: bytes are
    /// counted, slice by slice, so that the window is a time series.
    Measuring(usize),
    /// The window is over: connections half-close and drain.
    Stopping,
}

/// The most slices a window is cut into, and the shortest a slice may be.
pub const SLICES: usize = 20;
pub const MIN_SLICE: Duration = Duration::from_millis(10);

/// When a connection starts its pingpong.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Once every connection is up (a start gate): the server accepts all
    /// of them before it serves any.
    #[default]
    Gated,
    /// As soon as it is connected, as independent clients do: the server
    /// accepts while it serves.
    Immediate,
    /// Every connect issued in one burst per client thread, nothing else
    /// done between them, each connection starting as soon as it is up, as
    /// muduo's client connects: a connect storm, which the server accepts
    /// while it serves. Made by pingpong-mio's client, for every server.
    Storm,
}

/// What the client was asked to do.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub protocol: Protocol,
    pub connect: SocketAddr,
    pub threads: usize,
    pub connections: usize,
    pub block: usize,
    pub warmup: Duration,
    pub seconds: Duration,
    /// Record every block's round-trip time.
    pub latency: bool,
    /// Blocks in flight per connection (pipelining); 1 in muduo's pingpong.
    pub window: usize,
    /// Instead of a timed window: blocks each connection round-trips, all
    /// counted, after which it stops (a fixed amount of work, for counting
    /// instructions).
    pub blocks: Option<u64>,
    pub arrival: Arrival,
    /// Blocks each connection round-trips before it closes and another
    /// opens in its place (short-lived connections), if any.
    pub churn: Option<u64>,
    /// Open loop: blocks a second in all, sent on a schedule whatever
    /// comes back ([`super::open_loop`]); none for the closed loop.
    pub rate: Option<u64>,
    /// With TLS: what every connection's handshake uses.
    pub tls: Option<Arc<crate::tls::Connector>>,
    /// The runtime's builder settings.
    pub knobs: crate::knobs::Settings,
    /// Once connected, wait for a line on stdin before starting: the start
    /// signal of an orchestrator that aligns clients on several hosts.
    pub start_signal: bool,
}

/// The state every connection of one client process shares.
pub struct Client {
    pub config: ClientConfig,
    pub(crate) pattern: Box<[u8]>,
    /// What each connection sends first: `window` blocks (over HTTP and
    /// WebSocket, `window` requests).
    pub(crate) first: Box<[u8]>,
    /// Bytes of one request in `first`.
    request: usize,
    /// What a WebSocket connection sends before its blocks.
    pub(crate) upgrade: Box<[u8]>,
    /// What [`Self::opened`] counts from.
    epoch: Instant,
    /// Nanoseconds from `epoch` to the window's opening, plus one; 0 while
    /// it is not open.
    opened: AtomicU64,
    stopped: AtomicBool,
    connected: AtomicUsize,
    /// Sessions whose first block came back.
    round_tripped: AtomicUsize,
    start: Gate,
    bytes: AtomicU64,
    /// Connections that came up inside the window.
    opened_in_window: AtomicU64,
    verified: AtomicUsize,
    /// UDP: datagrams sent, and counted lost, inside the window.
    sent: AtomicU64,
    lost: AtomicU64,
    failed: AtomicBool,
    /// The runtime's `client` returned (or panicked).
    returned: AtomicBool,
    first_error: Mutex<Option<String>>,
    recorders: Option<Recorders>,
    /// What the open loop's threads measured, as each one ended (absent in
    /// the closed loop).
    paced: Option<Mutex<Record>>,
    /// Absent, as `recorders`, when the client records no times: encoding
    /// a histogram costs instructions that depend on the values in it.
    arrivals: Option<Mutex<Arrivals>>,
    shares: Mutex<Shares>,
    /// Signalled, under `shares`' lock, when a connection comes up, ends or
    /// fails: the driver waits on it instead of polling, so that a count of
    /// its instructions does not grow with the time it waits.
    changed: Condvar,
}

/// How the connections arrived, one entry per connection, in nanoseconds.
#[derive(Debug, Clone)]
pub struct Arrivals {
    /// From starting to connect until connected (the kernel's handshake,
    /// SYN retransmissions included).
    pub connect: Histogram,
    /// The connection's first round trip: with immediate arrival it also
    /// waits for the server to accept the connection.
    pub first_rtt: Histogram,
}

/// How one connection arrived, where it got that far.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Arrived {
    pub(crate) connect: Option<Duration>,
    pub(crate) first_rtt: Option<Duration>,
}

impl Default for Arrivals {
    fn default() -> Self {
        Self {
            connect: histogram(),
            first_rtt: histogram(),
        }
    }
}

/// How the window's bytes were shared among the connections, and over time.
#[derive(Debug, Default, Clone)]
pub(crate) struct Shares {
    sum: f64,
    sum_of_squares: f64,
    pub(crate) connections: usize,
    pub(crate) starved: usize,
    /// Bytes in each slice of the window.
    pub(crate) series: Vec<u64>,
}

impl Shares {
    /// Jain's fairness index: 1 when every connection moved as many bytes,
    /// k/n when k connections moved everything evenly and the rest nothing.
    pub(crate) fn fairness(&self) -> Option<f64> {
        (self.sum_of_squares > 0.0)
            .then(|| self.sum * self.sum / (self.connections as f64 * self.sum_of_squares))
    }
}

impl Client {
    pub fn new(config: ClientConfig) -> Self {
        let pattern = pattern(config.block);
        let request = crate::web::request(config.protocol, &pattern);
        Self {
            first: request.repeat(config.window).into_boxed_slice(),
            request: request.len(),
            upgrade: match config.protocol {
                Protocol::WebSocket => crate::web::upgrade().into_boxed_slice(),
                _ => Box::default(),
            },
            pattern,
            epoch: Instant::now(),
            opened: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            connected: AtomicUsize::new(0),
            round_tripped: AtomicUsize::new(0),
            start: Gate::default(),
            bytes: AtomicU64::new(0),
            opened_in_window: AtomicU64::new(0),
            verified: AtomicUsize::new(0),
            sent: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            returned: AtomicBool::new(false),
            first_error: Mutex::new(None),
            // The open loop times its blocks from when they were due, not
            // as the closed loop's clock does.
            recorders: (config.latency && config.rate.is_none()).then(Recorders::default),
            paced: config
                .rate
                .map(|_| Mutex::new(Record::new(config.slices()))),
            arrivals: config.latency.then(Mutex::default),
            shares: Mutex::default(),
            changed: Condvar::new(),
            config,
        }
    }

    /// What `n` requests are on the wire ([`super::Next::Send`]): a window
    /// at most.
    pub fn requests(&self, n: usize) -> &[u8] {
        &self.first[..n * self.request]
    }

    /// The most a connection writes at once: its first window of
    /// requests, or a WebSocket upgrade.
    pub fn largest_write(&self) -> usize {
        self.first.len().max(self.upgrade.len())
    }

    pub fn phase(&self) -> Phase {
        if self.stopped.load(Ordering::Relaxed) {
            return Phase::Stopping;
        }
        match self.opened.load(Ordering::Relaxed) {
            0 => Phase::Running,
            opened => {
                let open = Duration::from_nanos(opened - 1);
                self.config
                    .phase_at(self.epoch.elapsed().saturating_sub(open))
            }
        }
    }

    /// Where sessions record round-trip times, unless switched off.
    pub fn recorders(&self) -> Option<&Recorders> {
        self.recorders.as_ref()
    }

    /// Opens the measurement window now (the driver does; benchmarks too):
    /// it closes by itself after the configured seconds. When it opened.
    pub fn open_window(&self) -> Instant {
        let now = Instant::now();
        let since = (now - self.epoch).as_nanos() as u64;
        self.opened.store(since + 1, Ordering::Relaxed);
        now
    }

    /// When the window opened and when it closes, once it has opened.
    pub fn window(&self) -> Option<(Instant, Instant)> {
        match self.opened.load(Ordering::Relaxed) {
            0 => None,
            opened => {
                let open = self.epoch + Duration::from_nanos(opened - 1);
                Some((open, open + self.config.seconds))
            }
        }
    }

    /// An open-loop thread is done: what it measured joins the client's.
    pub fn paced(&self, record: &Record) {
        if let Some(paced) = &self.paced {
            paced.lock().unwrap_or_else(|e| e.into_inner()).add(record);
        }
    }

    /// What the open loop measured, in the open loop.
    pub fn open_loop(&self) -> Option<Record> {
        let paced = self.paced.as_ref()?;
        Some(paced.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Ends the window, if time has not already: connections stop.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// How many of the connections thread `thread` owns: connection `i` goes
    /// to thread `i % threads`, round-robin as in muduo's client.
    pub fn connections_of(&self, thread: usize) -> usize {
        let ClientConfig {
            threads,
            connections,
            ..
        } = self.config;
        connections / threads + usize::from(thread < connections % threads)
    }

    /// A connection is established, with TCP_NODELAY set; it sends nothing
    /// until the run starts (unless arrival is immediate). Only the last one
    /// wakes the driver: with immediate arrival, thousands of busy
    /// connection threads taking its lock one by one each hold up the rest.
    pub(crate) fn connected(&self) {
        if self.connected.fetch_add(1, Ordering::Relaxed) + 1 == self.config.connections {
            self.signal();
        }
    }

    /// A session's first block came back; only the last one wakes the driver.
    pub(crate) fn round_tripped(&self) {
        if self.round_tripped.fetch_add(1, Ordering::Relaxed) + 1 == self.config.connections {
            self.signal();
        }
    }

    /// How many sessions have had a block back.
    pub fn round_tripped_count(&self) -> usize {
        self.round_tripped.load(Ordering::Relaxed)
    }

    /// How the connections that ended had arrived, unless times are not
    /// recorded.
    pub fn arrivals(&self) -> Option<Arrivals> {
        let arrivals = self.arrivals.as_ref()?;
        Some(arrivals.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// How many connections are up.
    pub fn connected_count(&self) -> usize {
        self.connected.load(Ordering::Relaxed)
    }

    /// Every connection is up: traffic starts (the driver opens the gate).
    pub(crate) fn start(&self) {
        self.start.open();
    }

    /// Whether every connection is up and traffic may start.
    pub fn started(&self) -> bool {
        self.start.is_open()
    }

    /// Waits until every connection is up.
    pub async fn wait_for_start(&self) {
        self.start.wait().await
    }

    /// Wakes `waker` when every connection is up (for event loops).
    pub fn notify_on_start(&self, waker: &Waker) {
        self.start.notify(waker)
    }

    /// Bytes counted inside the window so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn verified_connections(&self) -> usize {
        self.verified.load(Ordering::Relaxed)
    }

    /// A connection ended cleanly after at least one whole block came back verified.
    pub(crate) fn verified(&self) {
        self.verified.fetch_add(1, Ordering::Relaxed);
    }

    /// A UDP socket is through: the datagrams it sent and lost inside the
    /// window join the totals.
    pub(crate) fn datagrams(&self, sent: u64, lost: u64) {
        self.sent.fetch_add(sent, Ordering::Relaxed);
        self.lost.fetch_add(lost, Ordering::Relaxed);
    }

    /// UDP: datagrams sent, and counted lost, inside the window so far.
    pub fn datagram_counts(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.lost.load(Ordering::Relaxed),
        )
    }

    /// How some of a session's connections arrived.
    pub(crate) fn arrived(&self, arrived: &[Arrived]) {
        let Some(arrivals) = &self.arrivals else {
            return;
        };
        let mut arrivals = arrivals.lock().unwrap_or_else(|e| e.into_inner());
        for arrived in arrived {
            if let Some(took) = arrived.connect {
                record(&mut arrivals.connect, took);
            }
            if let Some(took) = arrived.first_rtt {
                record(&mut arrivals.first_rtt, took);
            }
        }
    }

    /// Connections that came up inside the window (with churn, each one
    /// that replaced a closed one).
    pub fn opened_in_window(&self) -> u64 {
        self.opened_in_window.load(Ordering::Relaxed)
    }

    /// A session is over (its failure, if any, already recorded): its
    /// window bytes, slice by slice, and the connections it opened inside
    /// the window join the totals.
    pub(crate) fn session_ended(&self, slices: &[u64], opened: u64) {
        self.opened_in_window.fetch_add(opened, Ordering::Relaxed);
        let bytes: u64 = slices.iter().sum();
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        let mut shares = self.shares.lock().unwrap_or_else(|e| e.into_inner());
        let x = bytes as f64;
        shares.sum += x;
        shares.sum_of_squares += x * x;
        shares.connections += 1;
        shares.starved += usize::from(bytes == 0);
        if shares.series.len() < slices.len() {
            shares.series.resize(slices.len(), 0);
        }
        for (total, bytes) in shares.series.iter_mut().zip(slices) {
            *total += bytes;
        }
        self.changed.notify_all();
    }

    /// The runtime's `client` returned: the driver stops waiting for it.
    pub(crate) fn runtime_returned(&self) {
        self.returned.store(true, Ordering::Relaxed);
        self.signal();
    }

    pub(crate) fn runtime_ended(&self) -> bool {
        self.returned.load(Ordering::Relaxed)
    }

    /// Wakes the driver: something it may be waiting for has happened.
    fn signal(&self) {
        let _shares = self.shares.lock().unwrap_or_else(|e| e.into_inner());
        self.changed.notify_all();
    }

    /// Waits until `reached` holds, a connection failed, or `timeout`
    /// passed, whichever is first; without polling.
    pub(crate) fn wait_until(&self, timeout: Duration, reached: impl Fn(&Shares) -> bool) {
        let shares = self.shares.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self.changed.wait_timeout_while(shares, timeout, |shares| {
            !reached(shares) && !self.has_failed()
        });
    }

    pub(crate) fn shares(&self) -> Shares {
        self.shares
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Records a failed connection; the first failure becomes the run's error.
    pub fn fail(&self, error: impl Display) {
        let mut first = self.first_error.lock().unwrap_or_else(|e| e.into_inner());
        first.get_or_insert_with(|| error.to_string());
        self.failed.store(true, Ordering::Relaxed);
        drop(first);
        self.signal();
    }

    /// Whether any connection failed: event loops may stop early.
    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// The first failure recorded, if any.
    pub(crate) fn error(&self) -> Option<String> {
        self.first_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Records `took` in nanoseconds; a histogram's range ends at an hour.
fn record(h: &mut Histogram, took: Duration) {
    h.saturating_record((took.as_nanos() as u64).max(1));
}

impl ClientConfig {
    /// How many slices the window is cut into: up to [`SLICES`], none
    /// shorter than [`MIN_SLICE`].
    pub fn slices(&self) -> usize {
        if self.blocks.is_some() {
            // A window of blocks has no planned length to cut.
            return 1;
        }
        let fit = self.seconds.as_nanos() / MIN_SLICE.as_nanos();
        (fit as usize).clamp(1, SLICES)
    }

    /// The phase `since_open` after the window opened: the slice it falls
    /// in, or stopping once the window's seconds are over. A window of
    /// blocks lasts until it is stopped.
    pub fn phase_at(&self, since_open: Duration) -> Phase {
        if self.blocks.is_some() {
            return Phase::Measuring(0);
        }
        if since_open >= self.seconds {
            return Phase::Stopping;
        }
        let slice = since_open.as_nanos() * self.slices() as u128 / self.seconds.as_nanos();
        Phase::Measuring(slice as usize)
    }

    /// How long each slice of a timed window lasts.
    pub fn slice_length(&self) -> Duration {
        self.seconds / self.slices() as u32
    }

    /// Bytes in flight per connection: `window` blocks.
    pub fn in_flight(&self) -> usize {
        self.block * self.window
    }

    /// How long connecting may take: generous, since a full accept queue makes
    /// the kernel retry SYNs after a second or more; with immediate arrival,
    /// when a busy server fills its queue, long enough for five retries
    /// (after 1, 3, 7, 15 and 31 s).
    pub fn connect_deadline(&self) -> Duration {
        match self.arrival {
            Arrival::Gated => self.per_connection_deadline(),
            Arrival::Immediate | Arrival::Storm => {
                self.per_connection_deadline() + Duration::from_secs(31)
            }
        }
    }

    /// How long, after the warm-up, the window waits for every connection's
    /// first block to come back; then it opens whatever has.
    pub fn first_round_deadline(&self) -> Duration {
        self.per_connection_deadline()
    }

    /// How long connections may take to see the window close and drain:
    /// with one thread per connection, 10,000 runnable threads on 2 cores
    /// wait seconds for their turn.
    pub fn drain_deadline(&self) -> Duration {
        self.per_connection_deadline()
    }

    fn per_connection_deadline(&self) -> Duration {
        Duration::from_secs(10) + Duration::from_millis(self.connections as u64 * 2)
    }

    /// How long the window may last: as asked, or, for a number of blocks,
    /// generously (each side may run under an instruction counter, tens of
    /// times slower than itself).
    pub fn window_deadline(&self) -> Duration {
        match self.blocks {
            Some(blocks) => {
                Duration::from_secs(10) + Duration::from_millis(blocks * self.connections as u64)
            }
            None => self.seconds,
        }
    }

    /// The longest a healthy client process can run: connecting, warm-up,
    /// window and draining.
    pub fn deadline(&self) -> Duration {
        self.connect_deadline()
            + self.warmup
            + self.first_round_deadline()
            + self.window_deadline()
            + self.drain_deadline()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(threads: usize, connections: usize) -> Client {
        Client::new(ClientConfig {
            protocol: Default::default(),
            connect: "127.0.0.1:1".parse().unwrap(),
            threads,
            connections,
            block: 16,
            warmup: Duration::ZERO,
            seconds: Duration::ZERO,
            latency: false,
            window: 1,
            blocks: None,
            arrival: Default::default(),
            churn: None,
            rate: None,
            tls: None,
            knobs: Default::default(),
            start_signal: false,
        })
    }

    #[test]
    fn fairness_is_one_when_even_and_k_over_n_when_k_do_everything() {
        let c = client(1, 4);
        for bytes in [100, 100, 100, 100] {
            c.session_ended(&[bytes], 0);
        }
        assert_eq!(c.shares().fairness(), Some(1.0));
        assert_eq!(c.shares().starved, 0);
        let c = client(1, 4);
        for bytes in [0, 300, 0, 0] {
            c.session_ended(&[bytes], 0);
        }
        assert_eq!(c.shares().fairness(), Some(0.25));
        assert_eq!(c.shares().starved, 3);
        assert_eq!(client(1, 1).shares().fairness(), None);
    }

    #[test]
    fn the_series_adds_every_sessions_slices() {
        let c = client(1, 2);
        c.session_ended(&[1, 2, 3], 0);
        c.session_ended(&[10, 0, 30], 0);
        assert_eq!(c.shares().series, [11, 2, 33]);
        assert_eq!(c.bytes(), 46);
    }

    #[test]
    fn a_window_is_cut_into_slices_of_ten_milliseconds_or_more() {
        let with = |ms| {
            let mut c = client(1, 1).config;
            c.seconds = Duration::from_millis(ms);
            c.slices()
        };
        assert_eq!(
            [
                with(1),
                with(10),
                with(55),
                with(200),
                with(1000),
                with(3000)
            ],
            [1, 1, 5, 20, 20, 20]
        );
    }

    #[test]
    fn the_clock_gives_the_slice_and_the_end_of_the_window() {
        let c = ClientConfig {
            seconds: Duration::from_millis(200),
            ..client(1, 1).config
        };
        let at = |ms| c.phase_at(Duration::from_millis(ms));
        assert_eq!(
            [at(0), at(9), at(10), at(199), at(200), at(5000)],
            [
                Phase::Measuring(0),
                Phase::Measuring(0),
                Phase::Measuring(1),
                Phase::Measuring(19),
                Phase::Stopping,
                Phase::Stopping
            ]
        );
        let counted = ClientConfig {
            blocks: Some(3),
            ..c.clone()
        };
        assert_eq!(
            counted.phase_at(Duration::from_secs(5)),
            Phase::Measuring(0)
        );
    }

    #[test]
    fn a_client_runs_until_its_window_opens_and_stops_when_told() {
        let mut config = client(1, 1).config;
        config.seconds = Duration::from_secs(3600);
        let c = Client::new(config);
        assert_eq!(c.phase(), Phase::Running);
        c.open_window();
        assert_eq!(c.phase(), Phase::Measuring(0));
        c.stop();
        assert_eq!(c.phase(), Phase::Stopping);
    }

    #[test]
    fn connections_are_spread_round_robin() {
        for (threads, connections) in [(1, 1), (2, 1), (3, 10), (4, 10000), (4, 3)] {
            let c = client(threads, connections);
            let shares: Vec<_> = (0..threads).map(|t| c.connections_of(t)).collect();
            assert_eq!(shares.iter().sum::<usize>(), connections);
            assert!(shares.iter().max().unwrap() - shares.iter().min().unwrap() <= 1);
        }
    }
}
