//! The load of a team's own service: every connection sends a request,
//! reads its answer whole, checks it and times it, and sends the next
//! (closed loop), over HTTP/1.1 ([`http1`]), HTTP/2 ([`http2`]) or a raw
//! TCP exchange ([`exchange`]). Each thread runs a single-threaded tokio runtime over
//! its share of the connections. Answers are counted inside the window
//! only (after the warm-up); a bad one is counted by kind, with the first
//! of each kind kept for the message.
//!
//! compare writes the [`Plan`] (from the service's file) and reads the
//! [`Outcome`] this prints as one JSON line.

pub mod exchange;
pub mod http1;
pub mod http2;
mod tally;

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use tally::{Failures, Outcome, Tally};

/// What each connection sends, and what a good answer is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub protocol: Protocol,
    /// Over HTTP, sent in proportion to their weights.
    #[serde(default)]
    pub requests: Vec<Request>,
    /// Over TCP.
    #[serde(default)]
    pub exchange: Option<Exchange>,
    pub expect: Expect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Http1,
    /// Over cleartext, with prior knowledge.
    Http2,
    Tcp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub body: Vec<u8>,
    pub weight: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    pub send: Vec<u8>,
    /// The answer is this many bytes; or it ends with `read_until`.
    pub read_bytes: Option<usize>,
    pub read_until: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expect {
    /// Over HTTP.
    pub status: u16,
    pub body_contains: Option<String>,
}

/// How much load, against what, for how long.
#[derive(Debug, Clone)]
pub struct Config {
    pub connect: SocketAddr,
    pub connections: usize,
    pub threads: usize,
    pub warmup: Duration,
    pub seconds: Duration,
    /// The open loop: requests a second over all connections, each on a
    /// schedule; none: the closed loop.
    pub rate: Option<f64>,
}

/// The window every thread counts in, from one start, and in the open
/// loop a connection's schedule.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub opens: Instant,
    pub closes: Instant,
    pub pace: Option<Pace>,
}

/// A connection's schedule in the open loop: a request due every `every`
/// from `first`, whatever came back. Each answer is timed from when its
/// request was due, so that a service that falls behind shows it in every
/// answer it holds up (no coordinated omission).
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub first: Instant,
    pub every: Duration,
}

impl Pace {
    /// Connection number `connection`'s share of `config.rate`, its first
    /// request offset so that the connections' schedules interleave.
    fn of(config: &Config, start: Instant, connection: usize) -> Option<Self> {
        let connections = config.connections as f64;
        let every = Duration::from_secs_f64(connections / config.rate?);
        Some(Self {
            first: start + every.mul_f64(connection as f64 / connections),
            every,
        })
    }

    /// When request number `k` is due.
    pub fn due(&self, k: u64) -> Instant {
        self.first + self.every.mul_f64(k as f64)
    }
}

impl Window {
    pub fn after(start: Instant, config: &Config) -> Self {
        let opens = start + config.warmup;
        Self {
            opens,
            closes: opens + config.seconds,
            pace: None,
        }
    }

    pub fn holds(&self, at: Instant) -> bool {
        (self.opens..self.closes).contains(&at)
    }
}

/// How long past the window's close a connection may wait for the answer
/// in flight before it is dropped unanswered.
pub const GRACE: Duration = Duration::from_secs(2);

/// Loads the service at `config.connect` as `plan` says: every thread's
/// tally, merged.
pub fn run(plan: &Plan, config: &Config) -> std::io::Result<Outcome> {
    let plan = Arc::new(plan.clone());
    let started = Instant::now();
    let window = Window::after(started, config);
    let threads: Vec<usize> = (0..config.threads.max(1)).collect();
    let tallies = std::sync::Mutex::new(Vec::new());
    pingpong::on_threads("load", threads, |thread| {
        let mine: Vec<usize> = (thread..config.connections)
            .step_by(config.threads.max(1))
            .collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // Connections stay on their thread: no task needs to be Send.
        let local = tokio::task::LocalSet::new();
        let tally = local.block_on(&runtime, load_thread(&plan, config, started, mine));
        tallies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tally);
        Ok(())
    })?;
    let tallies = tallies.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(Tally::merged(tallies).outcome(config, window, started))
}

/// What one connection works with.
pub struct Connection {
    pub plan: Arc<Plan>,
    pub addr: SocketAddr,
    /// When it counts, and in the open loop its schedule.
    pub window: Window,
    /// Its number among all the load's connections.
    pub number: usize,
    /// Its thread's tally, which every connection of the thread shares: a
    /// histogram is 260 KiB, and one a connection at 10,000 connections
    /// would hold 2.6 GB.
    pub tally: Rc<RefCell<Tally>>,
}

/// The connections numbered `connections` of one thread, each on a task of
/// its own, to the window's close (and the answer in flight then, within
/// [`GRACE`]).
async fn load_thread(
    plan: &Arc<Plan>,
    config: &Config,
    started: Instant,
    connections: Vec<usize>,
) -> Tally {
    let window = Window::after(started, config);
    let tally = Rc::new(RefCell::new(Tally::default()));
    let mut tasks = tokio::task::JoinSet::new();
    for number in connections {
        let connection = Connection {
            plan: plan.clone(),
            addr: config.connect,
            window: Window {
                pace: Pace::of(config, started, number),
                ..window
            },
            number,
            tally: tally.clone(),
        };
        tasks.spawn_local(async move { connection_loop(&connection).await });
    }
    let deadline = tokio::time::Instant::from_std(window.closes + GRACE);
    while let Ok(Some(done)) = tokio::time::timeout_at(deadline, tasks.join_next()).await {
        if let Err(e) = done {
            let mut tally = tally.borrow_mut();
            tally.failed(&window, "task", &e.to_string(), Instant::now());
        }
    }
    let mut tally = tally.take();
    tally.unanswered += tasks.len() as u64;
    tally
}

/// One connection: connects, then asks and checks until the window closes.
async fn connection_loop(connection: &Connection) {
    match connection.plan.protocol {
        Protocol::Http1 => http1::connection(connection).await,
        Protocol::Http2 => http2::connection(connection).await,
        Protocol::Tcp => exchange::connection(connection).await,
    }
}
