//! The server process: binds, starts the runtime, prints the ready line
//! once every listener is served, and serves until told to stop (stdin
//! closed, or SIGTERM).

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Duration;

use crate::fault::{self, Fault};
use crate::knobs::Settings;
use crate::protocol::Protocol;
use crate::runtime::{Runtime, Topology};
use crate::server::{
    DatagramServer, Echo, Event, Ready, Server, Shape, backlog_in_force, bind, bind_datagrams,
    served,
};
use crate::tls::{Acceptor, TlsError};
use crate::unavailable::Unavailable;
use crate::wire::{Line, Ready as ReadyLine};
use crate::{affinity, limits, work};

/// How long the runtime may take to start serving its listeners.
const START_DEADLINE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub protocol: Protocol,
    pub bind: SocketAddr,
    pub threads: usize,
    pub block: usize,
    /// Blocks a client keeps in flight per connection.
    pub window: usize,
    /// Units of CPU work per block echoed (see [`crate::work`]), done by
    /// whichever task the shape hands the block to.
    pub work: u64,
    /// What a connection does with each block it reads.
    pub shape: Shape,
    /// Serve until killed, whatever stdin does: a server started by hand
    /// in the background, where stdin may be /dev/null.
    pub until_killed: bool,
    /// Serve inside TLS, with session resumption (`Some(true)`) or without.
    pub tls: Option<bool>,
    /// The runtime's builder settings.
    pub knobs: Settings,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{0}")]
    Limits(#[from] limits::LimitError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("{0}")]
    Tls(#[from] TlsError),
    #[error("server runtime failed: {0}")]
    Runtime(io::Error),
    #[error("server runtime panicked")]
    Panicked,
    #[error("server runtime stopped serving")]
    Stopped,
    #[error("the runtime served {served} of {listeners} listeners after {START_DEADLINE:?}")]
    StartTimeout { served: usize, listeners: usize },
}

impl ServerError {
    /// Why the runtime cannot start here, if that is the error.
    pub fn unavailable(&self) -> Option<&'static str> {
        match self {
            Self::Runtime(e) => Unavailable::of(e).map(|u| u.short),
            _ => None,
        }
    }
}

/// Binds, starts the runtime, prints the ready line once every listener is
/// served, and serves until stdin closes (or, `until_killed`, until killed);
/// then prints what its connections did.
pub fn run<R: Runtime>(config: ServerConfig) -> Result<(), ServerError> {
    if let (true, Some(why)) = (config.shape != Shape::Echo, R::NO_TASKS) {
        return Err(ServerError::Runtime(Unavailable::no_tasks(
            config.shape,
            why,
        )));
    }
    if let Some(lack) = R::lacks(config.shape, config.threads) {
        return Err(ServerError::Runtime(lack));
    }
    limits::raise_nofile(0)?;
    let slow = match fault::get() {
        Some(Fault::Slow(units)) => units,
        _ => 0,
    };
    work::set(config.work + slow);
    let (events, rx) = mpsc::channel();
    let (protocol, until_killed) = (config.protocol, config.until_killed);
    let Bound {
        serve,
        addr,
        count,
        tls,
    } = bound::<R>(config, Ready(events.clone()))?;
    let ended = events.clone();
    thread::Builder::new()
        .name("server-runtime".into())
        .spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(serve));
            let _ = ended.send(Event::Ended(outcome));
        })
        .map_err(ServerError::Runtime)?;

    wait_until_listening(&rx, count)?;
    let addr = match fault::get() {
        Some(Fault::HangBeforeReady) => loop {
            thread::park();
        },
        Some(Fault::Refuse) => nobody_listens()?,
        Some(Fault::CrashAfter(after)) => {
            fault::abort_after(after);
            addr
        }
        _ => addr,
    };
    Line::Ready(ReadyLine {
        addr,
        listeners: count,
        backlog: match protocol {
            Protocol::Udp => 0,
            _ => backlog_in_force(),
        },
        cpus: affinity::cpus(),
        tls_certificate: tls.as_ref().map(Acceptor::certificate_base64),
    })
    .print();

    if !until_killed {
        thread::Builder::new()
            .name("stdin".into())
            .spawn(move || {
                // Anything but end of input is ignored: closing stdin is the stop signal.
                let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
                let _ = events.send(Event::StdinClosed);
            })
            .map_err(ServerError::Runtime)?;
    }
    loop {
        match rx.recv() {
            Ok(Event::StdinClosed) | Err(_) => {
                Line::Served(served()).print();
                return Ok(());
            }
            Ok(Event::Listening) => {}
            Ok(Event::Ended(outcome)) => return Err(ended_error(outcome)),
        }
    }
}

/// The sockets bound and the runtime ready to serve them.
struct Bound {
    serve: Serve,
    addr: SocketAddr,
    /// Listeners (or datagram sockets) the runtime serves.
    count: usize,
    tls: Option<Acceptor>,
}

/// Binds the sockets `config` asks of `R` and readies its serving.
fn bound<R: Runtime>(config: ServerConfig, ready: Ready) -> Result<Bound, ServerError> {
    let bind_error = |source| ServerError::Bind {
        addr: config.bind,
        source,
    };
    if config.protocol == Protocol::Udp {
        // One socket per thread whatever the runtime's listener model: a
        // datagram socket has no connections to spread.
        let sockets = bind_datagrams(config.bind, config.threads).map_err(bind_error)?;
        let addr = sockets[0].local_addr().map_err(ServerError::Runtime)?;
        let server = DatagramServer {
            sockets,
            threads: config.threads,
            knobs: config.knobs,
            ready,
        };
        return Ok(Bound {
            serve: Box::new(move || R::serve_udp(server)),
            addr,
            count: config.threads,
            tls: None,
        });
    }
    let count = match R::TOPOLOGY {
        Topology::Shared => 1,
        Topology::PerThread => config.threads,
    };
    let listeners = bind(config.bind, count).map_err(bind_error)?;
    let addr = listeners[0].local_addr().map_err(ServerError::Runtime)?;
    let tls = config.tls.map(Acceptor::new).transpose()?;
    let server = Server {
        protocol: config.protocol,
        listeners,
        threads: config.threads,
        echo: Echo {
            block: config.block,
            buffer: config.block * config.window,
            shape: config.shape,
        },
        tls: tls.as_ref().map(|t| t.config.clone()),
        knobs: config.knobs,
        ready,
    };
    let serve: Serve = match config.protocol {
        Protocol::Tcp => Box::new(move || R::serve(server)),
        _ => Box::new(move || R::serve_web(server)),
    };
    Ok(Bound {
        serve,
        addr,
        count,
        tls,
    })
}

/// What the runtime thread runs: the runtime serving its sockets.
type Serve = Box<dyn FnOnce() -> io::Result<()> + Send>;

/// An address on loopback where nothing listens (for the `refuse` fault).
fn nobody_listens() -> Result<SocketAddr, ServerError> {
    let probe = TcpListener::bind("127.0.0.1:0").map_err(ServerError::Runtime)?;
    probe.local_addr().map_err(ServerError::Runtime)
}

fn wait_until_listening(rx: &Receiver<Event>, count: usize) -> Result<(), ServerError> {
    let mut served = 0;
    while served < count {
        match rx.recv_timeout(START_DEADLINE) {
            Ok(Event::Listening) => served += 1,
            Ok(Event::Ended(outcome)) => return Err(ended_error(outcome)),
            Ok(Event::StdinClosed) => unreachable!("stdin is watched only once ready"),
            Err(_) => {
                return Err(ServerError::StartTimeout {
                    served,
                    listeners: count,
                });
            }
        }
    }
    Ok(())
}

fn ended_error(outcome: thread::Result<io::Result<()>>) -> ServerError {
    match outcome {
        Ok(Ok(())) => ServerError::Stopped,
        Ok(Err(e)) => ServerError::Runtime(e),
        Err(_) => ServerError::Panicked,
    }
}
