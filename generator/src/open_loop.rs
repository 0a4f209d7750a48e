//! One open-loop client thread: its connections send blocks on their
//! schedules ([`pingpong::client::open_loop`]) and verify what comes back.
//! A timerfd wakes the loop shortly before the next due time, with the
//! kernel's high-resolution timers (epoll's own timeout counts whole
//! milliseconds), and the loop spins the rest of the way: a vCPU woken from
//! idle here takes 25 us or more. How late the loop gets to each due time
//! is recorded as the generator's timing error.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use pingpong::Client;
use pingpong::client::open_loop::{Paced, Record};
use pingpong::client::{Phase, SessionError};

use pingpong_mio::client::{FAILURE_CHECK, START, Wakeup, finish_connect, open};
use pingpong_mio::pipe::Pipe;

/// The token of the timer.
const TIMER: Token = Token(usize::MAX - 1);

/// How long before a due time the loop stops sleeping and spins.
const SPIN: Duration = Duration::from_micros(50);

struct Conn<'a> {
    pipe: Pipe,
    paced: Paced<'a>,
    /// The connection's index in the client: its schedule's phase.
    index: usize,
    connected: bool,
    half_closed: bool,
    /// The due time the heap holds for this connection, if any.
    queued: Option<Instant>,
}

/// Runs connections `thread`, `thread + threads`, ... of the client.
pub fn event_loop(client: &Client, thread: usize) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(1024);
    let mut generator = Generator::new(client, thread, &poll)?;
    let _wakeup = Wakeup::on_start(client, poll.registry())?;
    // A thread's timers may fire up to its timer slack late (50 us by
    // default), so that the kernel can batch wake-ups: none for the generator.
    nix::sys::prctl::set_timerslack(1)?;
    let mut alarm = Alarm::new(&poll)?;
    let mut outcome = Ok(());
    while generator.live > 0 && !client.has_failed() {
        let turn = Instant::now();
        let timeout = alarm.timeout(generator.next(), turn)?;
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            outcome = Err(e);
            break;
        }
        let now = Instant::now();
        alarm.passed(now);
        generator.touched.clear();
        for event in &events {
            match event.token() {
                TIMER => alarm.rang(),
                START => generator.touch_all(),
                Token(token) => generator.on_event(token, event.is_read_closed()),
            }
        }
        generator.stop_if_stopping();
        generator.take_due(now);
        generator.idled(turn, now - turn);
        generator.send_touched();
    }
    client.paced(&generator.record);
    outcome
}

/// One thread's connections, their schedules, and what they measured.
struct Generator<'a> {
    client: &'a Client,
    conns: Vec<Option<Conn<'a>>>,
    /// The due times queued, earliest first, each with its connection.
    due: BinaryHeap<Reverse<(Instant, usize)>>,
    record: Record,
    stopped: bool,
    live: usize,
    /// The connections a turn of the loop has work for: kept between
    /// turns, so that a turn allocates nothing.
    touched: Vec<usize>,
}

impl<'a> Generator<'a> {
    /// Connections `thread`, `thread + threads`, ... opened, registered
    /// with `poll`.
    fn new(client: &'a Client, thread: usize, poll: &Poll) -> io::Result<Self> {
        let threads = client.config.threads;
        let mut conns = Vec::new();
        for (token, index) in (thread..client.config.connections)
            .step_by(threads)
            .enumerate()
        {
            conns.push(Some(Conn {
                pipe: open(client, poll.registry(), Token(token))?,
                paced: Paced::new(client),
                index,
                connected: false,
                half_closed: false,
                queued: None,
            }));
        }
        Ok(Self {
            client,
            live: conns.len(),
            conns,
            due: BinaryHeap::new(),
            record: Record::new(client.config.slices()),
            stopped: false,
            touched: Vec::new(),
        })
    }

    /// The earliest due time, or the window's end while it runs.
    fn next(&self) -> Option<Instant> {
        let close = (self.client.window())
            .map(|(_, close)| close)
            .filter(|_| !self.stopped);
        let due = self.due.peek().map(|Reverse((t, _))| *t);
        due.into_iter().chain(close).min()
    }

    fn touch_all(&mut self) {
        self.touched.extend(0..self.conns.len());
    }

    /// A connection's socket has news.
    fn on_event(&mut self, token: usize, read_closed: bool) {
        if let Some(conn) = &mut self.conns[token] {
            let result = conn.on_event(self.client, read_closed, &mut self.record);
            settle(&mut self.conns[token], result, self.client, &mut self.live);
            self.touched.push(token);
        }
    }

    /// Once the client stops, every connection stops its schedule.
    fn stop_if_stopping(&mut self) {
        if self.stopped || self.client.phase() != Phase::Stopping {
            return;
        }
        self.stopped = true;
        self.touch_all();
        for conn in self.conns.iter_mut().flatten() {
            conn.paced.stop(&mut self.record);
        }
    }

    /// The connections due by `now`, touched; how late the first was woken.
    fn take_due(&mut self, now: Instant) {
        let mut first = true;
        while let Some(&Reverse((at, token))) = self.due.peek() {
            if at > now {
                break;
            }
            self.due.pop();
            if std::mem::take(&mut first) && matches!(self.client.phase(), Phase::Measuring(_)) {
                self.record.woke(now - at);
            }
            if let Some(conn) = &mut self.conns[token]
                && conn.queued == Some(at)
            {
                conn.queued = None;
                self.touched.push(token);
            }
        }
    }

    /// Waiting for events was the generator's idle time, and so was a
    /// turn (from `turn`) that found nothing to do.
    fn idled(&mut self, turn: Instant, waited: Duration) {
        if matches!(self.client.phase(), Phase::Measuring(_)) {
            self.record.idled(match self.touched.is_empty() {
                true => turn.elapsed(),
                false => waited,
            });
        }
    }

    /// Each touched connection sends what is due, and queues its next due
    /// time.
    fn send_touched(&mut self) {
        for &token in &self.touched {
            let Some(conn) = &mut self.conns[token] else {
                continue;
            };
            let result = conn.send(self.client, &mut self.record);
            settle(&mut self.conns[token], result, self.client, &mut self.live);
            if let Some(conn) = &mut self.conns[token]
                && let Some(at) = conn.paced.due()
                && conn.queued != Some(at)
            {
                conn.queued = Some(at);
                self.due.push(Reverse((at, token)));
            }
        }
    }
}

/// The timerfd that wakes the loop shortly before a due time.
struct Alarm {
    timer: TimerFd,
    armed: Option<Instant>,
}

impl Alarm {
    fn new(poll: &Poll) -> io::Result<Self> {
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        poll.registry().register(
            &mut SourceFd(&timer.as_fd().as_raw_fd()),
            TIMER,
            Interest::READABLE,
        )?;
        Ok(Self { timer, armed: None })
    }

    /// How long to wait for events with `next` due: none where it is (or
    /// spinning to it), else the failure check's while the timer, set
    /// for [`SPIN`] before it, wakes the loop.
    fn timeout(&mut self, next: Option<Instant>, now: Instant) -> io::Result<Option<Duration>> {
        Ok(
            match next.map(|next| next.checked_sub(SPIN).unwrap_or(next)) {
                Some(wake) if wake <= now => Some(Duration::ZERO),
                Some(wake) => {
                    if self.armed != Some(wake) {
                        let wait = TimeSpec::from_duration(wake - now);
                        (self.timer).set(Expiration::OneShot(wait), TimerSetTimeFlags::empty())?;
                        self.armed = Some(wake);
                    }
                    Some(FAILURE_CHECK)
                }
                None => Some(FAILURE_CHECK),
            },
        )
    }

    /// A time set that has passed is set no more.
    fn passed(&mut self, now: Instant) {
        if self.armed.is_some_and(|at| at <= now) {
            self.armed = None;
        }
    }

    /// Clears its readiness; a timer set again expires anew.
    fn rang(&self) {
        let _ = nix::unistd::read(&self.timer, &mut [0u8; 8]);
    }
}

/// Ends a connection whose session ended or failed.
fn settle(
    slot: &mut Option<Conn>,
    result: Result<bool, SessionError>,
    client: &Client,
    live: &mut usize,
) {
    let ended = match result {
        Ok(going) => !going,
        Err(e) => {
            client.fail(&e);
            true
        }
    };
    if ended && slot.take().is_some() {
        *live -= 1;
    }
}

impl Conn<'_> {
    /// Takes the socket's news: connected, bytes back, end of stream.
    /// `false` once the session has ended.
    fn on_event(
        &mut self,
        client: &Client,
        read_closed: bool,
        record: &mut Record,
    ) -> Result<bool, SessionError> {
        if !self.connected {
            if !finish_connect(self.pipe.socket.tcp()).map_err(SessionError::Connect)? {
                return Ok(true);
            }
            self.connected = true;
            self.paced.session.connected();
        }
        self.send(client, record)?;
        loop {
            let (data, drained) = match self.pipe.read(read_closed) {
                Ok(Some(read)) => read,
                Ok(None) => return Ok(true),
                Err(e) => return Err(self.paced.session.io_error(e)),
            };
            if data.is_empty() {
                // No churn in the open loop: the end of stream ends it.
                return self.paced.session.on_eof().map(|_| false);
            }
            self.paced.on_data(data, Instant::now(), record)?;
            if drained {
                return Ok(true);
            }
        }
    }

    /// Starts the schedule once the client has, then writes what is due;
    /// half-closes once stopped and written.
    fn send(&mut self, client: &Client, record: &mut Record) -> Result<bool, SessionError> {
        if !self.connected || self.half_closed {
            return Ok(true);
        }
        if !self.paced.started() {
            if !client.started() || self.paced.stopped() {
                return self.half_close_if_stopped();
            }
            self.paced.start(self.index, Instant::now());
        }
        loop {
            let now = Instant::now();
            let Some(bytes) = self.paced.to_write(now) else {
                break;
            };
            match self.pipe.socket.write(bytes) {
                Ok(0) => return Err(self.paced.session.io_error(io::ErrorKind::WriteZero.into())),
                Ok(n) => self.paced.wrote(n, now, record),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.paced.session.io_error(e)),
            }
        }
        self.half_close_if_stopped()
    }

    fn half_close_if_stopped(&mut self) -> Result<bool, SessionError> {
        if self.paced.stopped() && self.paced.to_write(Instant::now()).is_none() {
            self.pipe
                .socket
                .shutdown_write()
                .map_err(|e| self.paced.session.io_error(e))?;
            self.half_closed = true;
        }
        Ok(true)
    }
}
