//! Matrices that stand for another benchmark's, by name: `--preset
//! loopback-bench` is the loopback benchmark of the C++ library this suite
//! grew from (shared/reference/, the arknet pages), so that its published
//! tables have a Rust counterpart side by side.

use pingpong::protocol::Protocol;

use crate::matrix::WindowAt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    LoopbackBench,
}

impl crate::named::Named for Preset {
    const ALL: &'static [Self] = &[Self::LoopbackBench];
    const NAMES: &'static [&'static str] = &["loopback-bench"];
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
    pub seconds: f64,
    pub warmup: f64,
    pub repeat: usize,
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
                seconds: 1.0,
                warmup: 0.25,
                repeat: 3,
            },
        }
    }
}
