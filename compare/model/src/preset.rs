//! Matrices by name: `--preset loopback-bench` is the loopback benchmark
//! of the C++ library this suite grew from (shared/reference/, the arknet
//! pages), so that its published tables have a Rust counterpart side by
//! side; `--preset services` is the regression workload of a service,
//! which runs its runtime at a part of its capacity, where a release
//! changes what each request costs more than how many fit in a second.

use clap::ValueEnum;
use pingpong::protocol::Protocol;
use pingpong::server::Shape;

use crate::matrix::{Rate, WindowAt};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    LoopbackBench,
    Services,
}

impl crate::named::Named for Preset {
    const ALL: &'static [Self] = &[Self::LoopbackBench, Self::Services];
    const NAMES: &'static [&'static str] = &["loopback-bench", "services"];
}

/// What a preset sets: its matrix and its method.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub protocols: Vec<Protocol>,
    /// Whether every TCP workload also runs inside TLS (steady state, no
    /// handshake scenario).
    pub tls: bool,
    pub blocks: Vec<usize>,
    pub connections: Vec<usize>,
    pub threads: Vec<usize>,
    /// The window each connection count runs at.
    pub windows_at: Vec<WindowAt>,
    /// The client's threads, where they differ from the server's.
    pub client_threads: Vec<usize>,
    pub shapes: Vec<Shape>,
    /// The open loop's rates; none: the closed loop alone.
    pub rates: Vec<Rate>,
    pub seconds: f64,
    pub warmup: f64,
    pub repeat: usize,
    pub cost_runs: usize,
}

impl Preset {
    pub fn matrix(self) -> Matrix {
        match self {
            // The reference's loads: payloads of 64, 1,024 and 16,384
            // bytes; one client with one message in flight, sixteen with
            // sixteen each (over UDP, one); TCP, TCP inside TLS and UDP
            // (its HTTP and WebSocket pages have no counterpart here yet).
            // Its method: 0.25 s of warm-up, a 1 s window, 3 repetitions.
            // One thread: its "1 context / 1 thread" rows.
            Self::LoopbackBench => Matrix {
                protocols: vec![
                    Protocol::Tcp,
                    Protocol::Udp,
                    Protocol::Http,
                    Protocol::WebSocket,
                ],
                tls: true,
                blocks: vec![64, 1024, 16384],
                connections: vec![1, 16],
                threads: vec![1],
                windows_at: vec![
                    WindowAt {
                        connections: 1,
                        window: 1,
                    },
                    WindowAt {
                        connections: 16,
                        window: 16,
                    },
                ],
                client_threads: Vec::new(),
                shapes: vec![Shape::Echo],
                rates: Vec::new(),
                seconds: 1.0,
                warmup: 0.25,
                repeat: 3,
                cost_runs: 1,
            },
            // A service's: ten connections to a server of one thread and
            // of two, in the echo and in each shape that hands blocks off
            // (a proxy's connection, a handler per request, a worker pool)
            // or calls a runtime service (a read timeout, the blocking
            // pool, one future for all connections, a shared lock),
            // each in the closed loop (its capacity) and in the open loop
            // at a tenth and at three tenths of the first implementation's
            // capacity, where workers park and wake between requests. One
            // client thread: the generator needs little at a part of
            // capacity. (At half of it, 45,000 blocks a second, the 2-core
            // VM this grew on sustained the rate in 1 to 5 runs of 6 short
            // in most cells: the generator and the server share its cores.)
            // Six runs and six cost runs a cell: an interval for every cost
            // figure, system calls by kind among them.
            Self::Services => Matrix {
                protocols: vec![Protocol::Tcp],
                tls: false,
                blocks: vec![16384],
                connections: vec![10],
                threads: vec![1, 2],
                windows_at: vec![WindowAt {
                    connections: 10,
                    window: 1,
                }],
                client_threads: vec![1],
                shapes: Shape::value_variants().to_vec(),
                rates: vec![Rate::Share(10), Rate::Share(30)],
                seconds: 0.5,
                warmup: 0.2,
                repeat: 6,
                cost_runs: 6,
            },
        }
    }
}
