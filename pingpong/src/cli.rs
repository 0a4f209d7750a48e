//! The command line every `pingpong-<name>` binary shares.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::client::Client;
use crate::client::{Arrival, ClientConfig};
use crate::datagram;
use crate::driver::server::ServerConfig;
use crate::driver::{client, server};
use crate::knobs::{Knob, Settings};
use crate::protocol::{MAX_IN_FLIGHT, Protocol};
use crate::runtime::Runtime;
use crate::server::Shape;
use crate::tls::{Connector, TlsError};
use crate::wire::{Failure, Line};
use crate::{deny, fault};

#[derive(Debug, PartialEq, Parser)]
#[command(about = "One side of the muduo-style TCP pingpong; prints JSON lines on stdout")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// The runtime's builder settings, NAME=VALUE,... (`compare list` shows
    /// each runtime's).
    #[arg(long, global = true, default_value = "")]
    pub knobs: String,
}

#[derive(Debug, PartialEq, Subcommand)]
pub enum Command {
    /// Echo every byte back; print a ready line, serve until stdin closes.
    Server(ServerArgs),
    /// Open connections, pingpong for a window, print the measurement.
    Client(ClientArgs),
}

#[derive(Debug, Clone, PartialEq, Args)]
pub struct ServerArgs {
    /// Address to listen on; port 0 picks a free one, reported in the ready line.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub bind: SocketAddr,
    #[command(flatten)]
    pub sizes: Sizes,
    /// Units of deterministic CPU work per block echoed, done by whichever
    /// task the shape hands the block to.
    #[arg(long, default_value_t = 0)]
    pub work: u64,
    /// What a connection does with each block it reads: writes it back
    /// (echo), hands it to the connection's writing task (split), spawns a
    /// task that does (spawn), queues it for a pool of worker tasks (pool),
    /// waits on a timer around each read (timeout), hands it to the
    /// blocking pool (blocking), is driven with the thread's other
    /// connections in one future (select), or counts it under a shared
    /// async mutex (shared).
    #[arg(long, value_enum, default_value_t = Shape::Echo)]
    pub shape: Shape,
    /// Serve until killed (SIGTERM), not until stdin closes: for a server
    /// started by hand in the background for `compare run --server`.
    #[arg(long)]
    pub until_killed: bool,
    /// Serve inside TLS 1.3, with a self-signed certificate made at start;
    /// the ready line carries it for the client's --tls-trust.
    #[arg(long)]
    pub tls: bool,
    /// With --tls: issue a session ticket with every handshake, so that
    /// clients can resume (off: no tickets, no sessions kept).
    #[arg(long, requires = "tls")]
    pub tls_resumption: bool,
}

#[derive(Debug, Clone, PartialEq, Args)]
pub struct ClientArgs {
    /// The server's address, as its ready line reported it.
    #[arg(long)]
    pub connect: SocketAddr,
    #[command(flatten)]
    pub sizes: Sizes,
    /// Connections, spread round-robin over the threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub connections: u32,
    /// Seconds of pingpong after connecting and before the window.
    #[arg(long, default_value_t = 0.25, value_parser = seconds(false))]
    pub warmup: f64,
    /// Length of the measurement window in seconds.
    #[arg(long, default_value_t = 1.0, value_parser = seconds(true))]
    pub seconds: f64,
    /// Instead of a timed window: blocks each connection round-trips, every
    /// one counted, then stops (no warm-up).
    #[arg(long, conflicts_with_all = ["warmup", "seconds"], value_parser = clap::value_parser!(u64).range(1..))]
    pub blocks: Option<u64>,
    /// Do not record round-trip times.
    #[arg(long)]
    pub no_latency: bool,
    /// When each connection starts its pingpong: once all are up (gated),
    /// or as soon as it is connected (immediate), as independent clients do.
    #[arg(long, value_enum, default_value_t = Arrival::Gated, conflicts_with = "blocks")]
    pub arrival: Arrival,
    /// Blocks each connection round-trips before it closes and another
    /// opens in its place (short-lived connections, as HTTP/1.0 clients
    /// make them).
    #[arg(long, value_name = "BLOCKS", conflicts_with = "blocks", value_parser = clap::value_parser!(u64).range(1..))]
    pub churn: Option<u64>,
    /// Open loop: send blocks at this rate (blocks a second over all
    /// connections) whatever comes back, and time each from when it was
    /// due (wrk2's model). pingpong-mio's client only.
    #[arg(long, value_name = "BLOCKS_PER_S", conflicts_with_all = ["blocks", "churn", "no_latency", "tls_trust"], value_parser = clap::value_parser!(u64).range(1..))]
    pub rate: Option<u64>,
    /// Pingpong inside TLS 1.3, trusting this certificate alone (base64 of
    /// its DER, as the server's ready line gives it).
    #[arg(long, value_name = "CERTIFICATE")]
    pub tls_trust: Option<String>,
    /// With --tls-trust: each reconnect (--churn) offers a session ticket
    /// from an earlier connection.
    #[arg(long, requires = "tls_trust")]
    pub tls_resumption: bool,
    /// After the result, wait until stdin closes before exiting, so that an
    /// orchestrator samples a live process at the window's end.
    #[arg(long)]
    pub linger: bool,
    /// Once every connection is up, print a connected line and wait for a
    /// line on stdin before starting (an orchestrator's signal, which
    /// starts clients on several hosts together); the result then gives
    /// the window's edges after it.
    #[arg(long, conflicts_with = "blocks")]
    pub start_signal: bool,
}

/// What both sides agree on.
#[derive(Debug, Clone, Copy, PartialEq, Args)]
pub struct Sizes {
    /// What carries the pingpong: TCP streams, UDP datagrams (one in
    /// flight per socket, --block bytes each), or HTTP/1.1 or WebSocket
    /// messages over TCP (a block each).
    #[arg(long, value_enum, default_value_t = Protocol::Tcp)]
    pub protocol: Protocol,
    /// Threads (executors, event loops) this process runs.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,
    /// Bytes per block.
    #[arg(long, default_value_t = 16384, value_parser = clap::value_parser!(u32).range(1..=MAX_IN_FLIGHT as i64))]
    pub block: u32,
    /// Blocks in flight per connection (pipelining); a server reads a
    /// whole window at a time.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub window: u32,
}

impl Sizes {
    /// Fails when the bytes in flight per connection exceed what one
    /// connection may hold, or (over UDP) what one datagram carries.
    fn check(&self) -> Result<(), String> {
        if self.protocol == Protocol::Udp {
            if self.window > 1 {
                return Err(format!(
                    "--window {}: over UDP each socket keeps one datagram in flight",
                    self.window
                ));
            }
            return datagram::check_size(self.block as usize);
        }
        let bytes = self.block as usize * self.window as usize;
        if bytes > MAX_IN_FLIGHT {
            return Err(format!(
                "--block {} with --window {} puts {bytes} bytes in flight per connection; the most is {}",
                self.block, self.window, MAX_IN_FLIGHT
            ));
        }
        Ok(())
    }
}

impl Cli {
    /// The command line that parses back into this, the binary's name
    /// aside: what an orchestrator starts a binary with, written once
    /// beside the parser. A flag at its default is left out.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = match &self.command {
            Command::Server(server) => server.to_args(),
            Command::Client(client) => client.to_args(),
        };
        if !self.knobs.is_empty() {
            args.extend(["--knobs".into(), self.knobs.clone()]);
        }
        args
    }
}

impl ServerArgs {
    fn to_args(&self) -> Vec<String> {
        let mut args = vec!["server".into(), "--bind".into(), self.bind.to_string()];
        args.extend(self.sizes.to_args());
        args.extend(["--work".into(), self.work.to_string()]);
        if self.shape != Shape::Echo {
            args.extend(["--shape".into(), value(self.shape)]);
        }
        flag(&mut args, "--until-killed", self.until_killed);
        flag(&mut args, "--tls", self.tls);
        flag(&mut args, "--tls-resumption", self.tls_resumption);
        args
    }
}

impl ClientArgs {
    fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "client".into(),
            "--connect".into(),
            self.connect.to_string(),
        ];
        args.extend(self.sizes.to_args());
        args.extend(["--connections".into(), self.connections.to_string()]);
        match self.blocks {
            // A fixed number of blocks has no window to time.
            Some(blocks) => args.extend(["--blocks".into(), blocks.to_string()]),
            None => args.extend([
                "--warmup".into(),
                self.warmup.to_string(),
                "--seconds".into(),
                self.seconds.to_string(),
            ]),
        }
        flag(&mut args, "--no-latency", self.no_latency);
        if self.arrival != Arrival::Gated {
            args.extend(["--arrival".into(), value(self.arrival)]);
        }
        if let Some(churn) = self.churn {
            args.extend(["--churn".into(), churn.to_string()]);
        }
        if let Some(rate) = self.rate {
            args.extend(["--rate".into(), rate.to_string()]);
        }
        if let Some(trust) = &self.tls_trust {
            args.extend(["--tls-trust".into(), trust.clone()]);
        }
        flag(&mut args, "--tls-resumption", self.tls_resumption);
        flag(&mut args, "--linger", self.linger);
        flag(&mut args, "--start-signal", self.start_signal);
        args
    }
}

impl Sizes {
    fn to_args(self) -> Vec<String> {
        let mut args = Vec::new();
        if self.protocol != Protocol::Tcp {
            args.extend(["--protocol".into(), value(self.protocol)]);
        }
        args.extend([
            "--threads".into(),
            self.threads.to_string(),
            "--block".into(),
            self.block.to_string(),
            "--window".into(),
            self.window.to_string(),
        ]);
        args
    }
}

/// `name` where `set`.
fn flag(args: &mut Vec<String>, name: &str, set: bool) {
    if set {
        args.push(name.into());
    }
}

/// A value of a `clap::ValueEnum` as its flag takes it.
fn value(v: impl clap::ValueEnum) -> String {
    v.to_possible_value()
        .expect("every value can be named")
        .get_name()
        .to_string()
}

/// Parses seconds: finite, and positive or non-negative.
pub fn seconds(positive: bool) -> impl Fn(&str) -> Result<f64, String> + Clone {
    move |s| {
        let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
        match (v.is_finite(), positive) {
            (true, true) if v > 0.0 => Ok(v),
            (true, false) if v >= 0.0 => Ok(v),
            _ => Err(format!(
                "{s} is not a {} number of seconds",
                if positive { "positive" } else { "non-negative" }
            )),
        }
    }
}

impl From<ServerArgs> for ServerConfig {
    fn from(a: ServerArgs) -> Self {
        Self {
            protocol: a.sizes.protocol,
            bind: a.bind,
            threads: a.sizes.threads as usize,
            block: a.sizes.block as usize,
            window: a.sizes.window as usize,
            work: a.work,
            shape: a.shape,
            until_killed: a.until_killed,
            tls: a.tls.then_some(a.tls_resumption),
            knobs: Settings::default(),
        }
    }
}

impl TryFrom<ClientArgs> for ClientConfig {
    type Error = TlsError;

    fn try_from(a: ClientArgs) -> Result<Self, TlsError> {
        let tls = a
            .tls_trust
            .map(|trust| Connector::new(&trust, a.tls_resumption))
            .transpose()?;
        Ok(Self {
            protocol: a.sizes.protocol,
            connect: a.connect,
            threads: a.sizes.threads as usize,
            connections: a.connections as usize,
            block: a.sizes.block as usize,
            warmup: Duration::from_secs_f64(a.warmup),
            seconds: Duration::from_secs_f64(a.seconds),
            latency: !a.no_latency,
            window: a.sizes.window as usize,
            blocks: a.blocks,
            arrival: a.arrival,
            churn: a.churn,
            rate: a.rate,
            tls: tls.map(Arc::new),
            knobs: Settings::default(),
            start_signal: a.start_signal,
        })
    }
}

impl Command {
    /// What `protocol` has no counterpart for, if this asks for any.
    fn refusal(&self, protocol: Protocol) -> Option<String> {
        let udp = protocol == Protocol::Udp;
        let asked = match self {
            Command::Server(a) => [
                (a.tls && udp, "--tls"),
                (a.shape != Shape::Echo, "--shape other than echo"),
            ]
            .into_iter()
            .find(|(asked, _)| *asked),
            Command::Client(a) => [
                (a.tls_trust.is_some() && udp, "--tls-trust"),
                (a.churn.is_some(), "--churn"),
                (a.rate.is_some(), "--rate"),
            ]
            .into_iter()
            .find(|(asked, _)| *asked),
        };
        let why = match protocol {
            Protocol::Tcp => return None,
            Protocol::Udp => {
                "over UDP: datagrams have no connections to close or secure, and their server \
                 answers each datagram itself"
            }
            Protocol::Http | Protocol::WebSocket => {
                "over HTTP or WebSocket: one hyper or tungstenite server answers each message \
                 itself, on keep-alive connections that the closed-loop client keeps full"
            }
        };
        asked.map(|(_, flag)| format!("{flag} does not apply {why}"))
    }
}

/// The whole `main` of a runtime binary.
pub fn main<R: Runtime>() -> ExitCode {
    run(R::KNOBS, |command, knobs| match command {
        Command::Server(args) => server::run::<R>(ServerConfig {
            knobs,
            ..args.into()
        })
        .map_err(|e| Failure {
            message: e.to_string(),
            unavailable: e.unavailable().map(Into::into),
        }),
        Command::Client(args) => measure(args, knobs, client::run::<R>),
    })
}

/// The whole `main` of the open loop's generator (`pingpong-generator`):
/// a client that runs `--rate` over TCP and nothing else, its connections
/// run by `open_loop`.
pub fn generator_main(open_loop: fn(&Arc<Client>) -> std::io::Result<()>) -> ExitCode {
    let refused = |message: &str| Failure {
        message: message.into(),
        unavailable: None,
    };
    run(&[], |command, knobs| match command {
        Command::Server(_) => Err(refused(
            "pingpong-generator is the open loop's client for every server: it serves nothing",
        )),
        Command::Client(args) if args.rate.is_none() => Err(refused(
            "pingpong-generator runs the open loop only: give --rate",
        )),
        Command::Client(args) if args.sizes.protocol != Protocol::Tcp => {
            Err(refused("pingpong-generator sends blocks over TCP only"))
        }
        Command::Client(args) => measure(args, knobs, |config| client::run_with(config, open_loop)),
    })
}

/// Parses the command line, checks what every command shares, runs
/// `command` and prints its error line if it fails.
fn run(
    knobs: &'static [Knob],
    command: impl FnOnce(Command, Settings) -> Result<(), Failure>,
) -> ExitCode {
    let Cli {
        command: parsed,
        knobs: asked,
    } = Cli::parse();
    let sizes = match &parsed {
        Command::Server(args) => &args.sizes,
        Command::Client(args) => &args.sizes,
    };
    let paced = matches!(&parsed, Command::Client(args) if args.rate.is_some());
    let setup = deny::apply_from_env()
        .map_err(|e| format!("cannot apply {}: {e}", deny::ENV))
        .and_then(|()| fault::init())
        .and_then(|()| sizes.check())
        .and_then(|()| match (paced, sizes.window) {
            (true, 2..) => Err(
                "--rate sends blocks on their schedule, pipelined as they fall due; \
                 --window does not apply"
                    .to_string(),
            ),
            _ => Ok(()),
        })
        .and_then(|()| parsed.refusal(sizes.protocol).map_or(Ok(()), Err))
        .and_then(|()| Settings::parse(&asked, knobs).map_err(|e| format!("--knobs: {e}")))
        .map_err(|message| Failure {
            message,
            unavailable: None,
        });
    match setup.and_then(|knobs| command(parsed, knobs)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            Line::Error(failure).print();
            ExitCode::FAILURE
        }
    }
}

/// Runs a client with `run` and prints its result line; with `--linger`,
/// stays until stdin closes.
fn measure(
    args: ClientArgs,
    knobs: Settings,
    run: impl FnOnce(ClientConfig) -> Result<crate::wire::ClientResult, client::ClientError>,
) -> Result<(), Failure> {
    let linger = args.linger;
    let config = ClientConfig::try_from(args).map_err(|e| Failure {
        message: e.to_string(),
        unavailable: None,
    })?;
    let result = run(ClientConfig { knobs, ..config }).map_err(|e| Failure {
        message: e.to_string(),
        unavailable: e.unavailable().map(Into::into),
    })?;
    Line::Result(Box::new(result)).print();
    if linger {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn refusal(args: &str) -> Option<String> {
        let cli = Cli::try_parse_from(args.split(' ')).unwrap();
        let protocol = match &cli.command {
            Command::Server(a) => a.sizes.protocol,
            Command::Client(a) => a.sizes.protocol,
        };
        cli.command.refusal(protocol)
    }

    #[test]
    fn what_a_protocol_has_no_counterpart_for_is_refused_with_the_reason() {
        let client = "x client --connect 127.0.0.1:1 --protocol";
        for (args, refused) in [
            ("x server --protocol http --tls", None),
            (
                "x server --protocol websocket --shape split",
                Some("--shape"),
            ),
            ("x server --protocol udp --tls", Some("--tls")),
            (&format!("{client} http --churn 5"), Some("--churn")),
            (&format!("{client} websocket --rate 100"), Some("--rate")),
            (&format!("{client} websocket --window 16"), None),
            (&format!("{client} tcp --churn 5"), None),
        ] {
            let said = refusal(args);
            match refused {
                None => assert_eq!(said, None, "{args}"),
                Some(flag) => {
                    let said = said.unwrap_or_else(|| panic!("{args}: not refused"));
                    assert!(
                        said.starts_with(flag) && said.contains("does not apply over"),
                        "{said}"
                    );
                }
            }
        }
    }

    fn sizes() -> impl Strategy<Value = Sizes> {
        let protocol = prop_oneof![
            Just(Protocol::Tcp),
            Just(Protocol::Udp),
            Just(Protocol::Http),
            Just(Protocol::WebSocket)
        ];
        (protocol, 1..=1024u32, 1..=65536u32, 1..=16u32).prop_map(
            |(protocol, threads, block, window)| Sizes {
                protocol,
                threads,
                block,
                window,
            },
        )
    }

    fn address() -> impl Strategy<Value = SocketAddr> {
        (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| SocketAddr::from((ip, port)))
    }

    /// Seconds as a person or compare writes them: whole milliseconds.
    fn seconds(least: u64) -> impl Strategy<Value = f64> {
        (least..100_000u64).prop_map(|ms| ms as f64 / 1000.0)
    }

    fn server() -> impl Strategy<Value = ServerArgs> {
        (
            address(),
            sizes(),
            any::<u64>(),
            prop_oneof![
                Just(Shape::Echo),
                Just(Shape::Split),
                Just(Shape::Spawn),
                Just(Shape::Pool)
            ],
            any::<bool>(),
            any::<Option<bool>>(),
        )
            .prop_map(|(bind, sizes, work, shape, until_killed, tls)| ServerArgs {
                bind,
                sizes,
                work,
                shape,
                until_killed,
                tls: tls.is_some(),
                tls_resumption: tls == Some(true),
            })
    }

    fn client() -> impl Strategy<Value = ClientArgs> {
        let timed = (seconds(0), seconds(1), any::<bool>(), any::<Option<u64>>());
        let tls = proptest::option::of(("[A-Za-z0-9+/]{1,40}", any::<bool>()));
        (
            address(),
            sizes(),
            1..=20_000u32,
            timed,
            tls,
            any::<bool>(),
            0..4u8,
        )
            .prop_map(
                |(
                    connect,
                    sizes,
                    connections,
                    (warmup, seconds, immediate, churn),
                    tls,
                    linger,
                    kind,
                )| {
                    let mut client = ClientArgs {
                        connect,
                        sizes,
                        connections,
                        warmup: 0.25,
                        seconds: 1.0,
                        blocks: None,
                        no_latency: false,
                        arrival: Arrival::Gated,
                        churn: None,
                        rate: None,
                        tls_trust: tls.as_ref().map(|(trust, _)| trust.clone()),
                        tls_resumption: tls.is_some_and(|(_, resume)| resume),
                        linger,
                        start_signal: false,
                    };
                    // What the flags allow together: counted blocks, a timed
                    // window with or without latency, churn or arrival, or the
                    // open loop's rate.
                    match kind {
                        0 => client.blocks = churn.map(|n| n.max(1)).or(Some(1)),
                        1 => {
                            (client.warmup, client.seconds) = (warmup, seconds);
                            client.no_latency = immediate;
                            client.start_signal = linger;
                        }
                        2 => {
                            (client.warmup, client.seconds) = (warmup, seconds);
                            client.churn = churn.map(|n| n.max(1));
                            client.arrival = match immediate {
                                true => Arrival::Immediate,
                                false => Arrival::Gated,
                            };
                        }
                        _ => {
                            (client.warmup, client.seconds) = (warmup, seconds);
                            client.rate = Some(churn.unwrap_or(1).max(1));
                            (client.tls_trust, client.tls_resumption) = (None, false);
                        }
                    }
                    client
                },
            )
    }

    fn parsed(cli: &Cli) -> Cli {
        let args = cli.to_args();
        Cli::try_parse_from(std::iter::once("pingpong-test".to_string()).chain(args.clone()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    proptest! {
        #[test]
        fn a_server_command_line_parses_back_into_what_wrote_it(
            args in server(),
            knobs in "|[a-z_]{1,12}=[0-9]{1,4}",
        ) {
            let cli = Cli { command: Command::Server(args), knobs };
            prop_assert_eq!(parsed(&cli), cli);
        }

        #[test]
        fn a_client_command_line_parses_back_into_what_wrote_it(
            args in client(),
            knobs in "|[a-z_]{1,12}=[0-9]{1,4}",
        ) {
            let cli = Cli { command: Command::Client(args), knobs };
            prop_assert_eq!(parsed(&cli), cli);
        }
    }
}
