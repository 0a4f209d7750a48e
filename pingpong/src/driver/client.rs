//! The client process: starts the runtime's connections, then times the run
//! from the main thread (connect, warm up, measure, stop) and reports it.

use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::client::open_loop::not_sustained;
use crate::client::{Arrival, Client, ClientConfig, OpenLoopRecord, Shares};
use crate::fault::{self, Fault};
use crate::latency;
use crate::protocol::Protocol;
use crate::runtime::Runtime;
use crate::unavailable::Unavailable;
use crate::wire::{ClientResult, Datagrams, Line, OpenLoop, Window};
use crate::{affinity, limits, work};

/// Why a client run produced no result.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Limits(#[from] limits::LimitError),
    #[error("{0}")]
    Connection(String),
    #[error("client runtime failed: {0}")]
    Runtime(std::io::Error),
    #[error("client runtime panicked")]
    Panicked,
    #[error("only {connected} of {wanted} connections were up after {after:?}")]
    ConnectTimeout {
        connected: usize,
        wanted: usize,
        after: Duration,
    },
    #[error("connections did not finish within {0:?} after the window closed")]
    DrainTimeout(Duration),
    #[error("the connections did not round-trip their blocks within {0:?}")]
    WindowTimeout(Duration),
    #[error("stdin closed before the start signal came")]
    NoStartSignal,
}

impl ClientError {
    /// Why the runtime cannot start here, if that is the error.
    pub fn unavailable(&self) -> Option<&'static str> {
        match self {
            Self::Runtime(e) => Unavailable::of(e).map(|u| u.short),
            _ => None,
        }
    }
}

/// Runs the whole client of runtime `R`: connect, warm up, measure, stop,
/// report.
pub fn run<R: Runtime>(config: ClientConfig) -> Result<ClientResult, ClientError> {
    run_with(config, |client| {
        match (client.config.protocol, client.config.rate) {
            (Protocol::Udp, _) => R::client_udp(client),
            (_, Some(_)) => Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "this client runs the closed loop only; the open loop (--rate) is \
                 pingpong-generator's",
            )),
            _ if client.config.arrival == Arrival::Storm => R::storm(client),
            (_, None) => R::client(client),
        }
    })
}

/// Runs the whole client, its connections run by `connections` on a
/// thread of their own: connect, warm up, measure, stop, report.
pub fn run_with(
    config: ClientConfig,
    connections: impl FnOnce(&Arc<Client>) -> std::io::Result<()> + Send + 'static,
) -> Result<ClientResult, ClientError> {
    limits::raise_nofile(config.connections)?;
    match fault::get() {
        Some(Fault::ClientAbortAfter(after)) => fault::abort_after(after),
        Some(Fault::ClientSlow(units)) => work::set(units),
        _ => {}
    }
    let client = Arc::new(Client::new(config));
    if client.config.arrival != Arrival::Gated {
        // No gate: each connection starts as soon as it is up.
        client.start();
    }
    let start = Instant::now();
    let (done_tx, done_rx) = mpsc::channel();
    {
        let client = client.clone();
        thread::Builder::new()
            .name("client-runtime".into())
            .spawn(move || {
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| connections(&client)));
                // The driver may have given up waiting: nobody to tell then.
                let _ = done_tx.send(outcome);
                client.runtime_returned();
            })
            .expect("spawning the client runtime thread");
    }
    // Once the sessions are over the result stands; the runtime's threads
    // end with the process.
    drive(&client, start, &done_rx)
}

type Outcome = std::thread::Result<std::io::Result<()>>;

/// Times the run from the main thread; `start` is when the runtime was started.
fn drive(
    client: &Client,
    start: Instant,
    done: &mpsc::Receiver<Outcome>,
) -> Result<ClientResult, ClientError> {
    let config = &client.config;
    let wanted = config.connections;

    let connected = |_: &Shares| client.connected_count() >= wanted;
    wait_for(
        client,
        done,
        start + config.connect_deadline(),
        connected,
        || {
            Some(ClientError::ConnectTimeout {
                connected: client.connected_count(),
                wanted,
                after: config.connect_deadline(),
            })
        },
    )?;
    let connect_seconds = start.elapsed().as_secs_f64();
    let signal = match config.start_signal {
        true => Some(await_start()?),
        false => None,
    };

    let (window_start, window_end) = window(client, done)?;
    Line::Window(Window::Closed).print();
    let seconds = (window_end - window_start).as_secs_f64();

    // Every session over, not every thread gone: 10,000 exiting threads can
    // take longer to tear down than the whole run. The open loop's few
    // threads hand over what they measured as they return.
    let ended = |shares: &Shares| {
        shares.connections >= wanted && (config.rate.is_none() || client.runtime_ended())
    };
    wait_for(
        client,
        done,
        Instant::now() + config.drain_deadline(),
        ended,
        || Some(ClientError::DrainTimeout(config.drain_deadline())),
    )?;
    let shares = client.shares();
    let arrivals = client.arrivals();
    let paced = client.open_loop();
    let rtt = match &paced {
        Some(record) => Some(latency::encode(&record.corrected)),
        None => client.recorders().map(|r| latency::encode(&r.merged())),
    };
    let open_loop = paced.map(|record| open_loop(client, record, seconds));
    let slice_seconds = match config.blocks {
        None => vec![config.slice_length().as_secs_f64(); config.slices()],
        Some(_) => vec![seconds],
    };
    Ok(ClientResult {
        threads: config.threads,
        connections: wanted,
        block: config.block,
        bytes: client.bytes(),
        seconds,
        connect_seconds,
        verified_connections: client.verified_connections(),
        fairness: shares.fairness(),
        starved_connections: shares.starved,
        rtt_histogram: rtt,
        connect_histogram: arrivals.as_ref().map(|a| latency::encode(&a.connect)),
        first_rtt_histogram: arrivals.as_ref().map(|a| latency::encode(&a.first_rtt)),
        opened_connections: config.churn.map(|_| client.opened_in_window()),
        open_loop,
        tls: config.tls.as_ref().map(|t| Box::new(t.record())),
        datagrams: (config.protocol == Protocol::Udp).then(|| {
            let (sent, lost) = client.datagram_counts();
            Datagrams { sent, lost }
        }),
        cpus: affinity::cpus(),
        series: shares.series,
        slice_seconds,
        window_edges: signal.map(|at| {
            [window_start, window_end].map(|edge| edge.saturating_duration_since(at).as_secs_f64())
        }),
    })
}

/// The measurement window, from when it opened to when it closed. Its
/// edges are announced so that the caller can sample the CPU time of both
/// processes over the window alone.
fn window(
    client: &Client,
    done: &mpsc::Receiver<Outcome>,
) -> Result<(Instant, Instant), ClientError> {
    let config = &client.config;
    let wanted = config.connections;
    // The window's edges are announced so that the caller can sample the
    // CPU time of both processes over the window alone.
    match config.blocks {
        None => {
            client.start();
            thread::sleep(config.warmup);
            if config.rate.is_none() {
                // And until every connection has had a block back: at
                // thousands of connections (more so inside TLS) the first
                // round ends for all of them at once, after the warm-up.
                // Not forever: a connection starved longer than that is
                // the window's to show (starved connections).
                let all = |_: &Shares| client.round_tripped_count() >= wanted;
                let deadline = Instant::now() + config.first_round_deadline();
                wait_for(client, done, deadline, all, || None)?;
            }
            let window_start = client.open_window();
            Line::Window(Window::Open).print();
            // The connections close the window themselves on time; this
            // wake-up, however late, only tells the caller.
            let window_end = window_start + config.seconds;
            thread::sleep(window_end.saturating_duration_since(Instant::now()));
            client.stop();
            Ok((window_start, window_end))
        }
        Some(_) => {
            // Every block counts: the window is all the connections' work.
            let window_start = client.open_window();
            Line::Window(Window::Open).print();
            client.start();
            let ended = |shares: &Shares| shares.connections >= wanted;
            let late = || Some(ClientError::WindowTimeout(config.window_deadline()));
            wait_for(
                client,
                done,
                window_start + config.window_deadline(),
                ended,
                late,
            )?;
            client.stop();
            Ok((window_start, Instant::now()))
        }
    }
}

/// What the open loop measured over a window of `seconds`.
fn open_loop(client: &Client, record: OpenLoopRecord, seconds: f64) -> Box<OpenLoop> {
    let config = &client.config;
    let rate = config.rate.expect("an open-loop client has a rate");
    let achieved = client.bytes() as f64 / config.block as f64 / seconds;
    let lag_series = record.lag_series();
    let busy = 1.0 - record.idle.as_secs_f64() / (seconds * config.threads as f64);
    Box::new(OpenLoop {
        rate,
        achieved,
        due: record.due,
        returned: record.returned,
        uncorrected_histogram: latency::encode(&record.uncorrected),
        lag_histogram: latency::encode(&record.lag),
        timer_histogram: latency::encode(&record.timer),
        generator_busy: busy,
        not_sustained: not_sustained(rate, achieved, &lag_series, busy),
        lag_series,
    })
}

/// Says the connections are up and waits for the start signal, a line on
/// stdin; when it came.
fn await_start() -> Result<Instant, ClientError> {
    Line::Connected.print();
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(n) if n > 0 => Ok(Instant::now()),
        _ => Err(ClientError::NoStartSignal),
    }
}

/// Waits until `reached` holds. A failed connection, a runtime that ended
/// first, or the deadline (the error `late` makes, if any) ends the wait instead.
fn wait_for(
    client: &Client,
    done: &mpsc::Receiver<Outcome>,
    deadline: Instant,
    reached: impl Fn(&Shares) -> bool,
    late: impl FnOnce() -> Option<ClientError>,
) -> Result<(), ClientError> {
    loop {
        if let Some(e) = client.error() {
            return Err(ClientError::Connection(e));
        }
        if reached(&client.shares()) {
            return Ok(());
        }
        if let Ok(outcome) = done.try_recv() {
            return match (outcome, client.error()) {
                (_, Some(e)) => Err(ClientError::Connection(e)),
                (Ok(Ok(())), None) if reached(&client.shares()) => Ok(()),
                (outcome, None) => Err(runtime_ended_early(outcome)),
            };
        }
        let now = Instant::now();
        if now > deadline {
            return late().map_or(Ok(()), Err);
        }
        // Woken by any connection's coming up, ending or failing, and by
        // the runtime's end.
        client.wait_until(deadline - now, |shares| {
            reached(shares) || client.runtime_ended()
        });
    }
}

fn runtime_ended_early(outcome: Outcome) -> ClientError {
    match outcome {
        Ok(Ok(())) => ClientError::Runtime(std::io::Error::other(
            "the client runtime returned before the run ended",
        )),
        Ok(Err(e)) => ClientError::Runtime(e),
        Err(_) => ClientError::Panicked,
    }
}
