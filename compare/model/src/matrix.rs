//! Which loads to run: the muduo article's matrix, or a cross product.

use pingpong::protocol::Protocol;
use pingpong::server::Shape;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One point of the matrix; every implementation runs at every load.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct Load {
    /// The server's threads, and the client's unless `client_threads` says.
    pub threads: usize,
    pub connections: usize,
    /// `--client-threads`, where it differs from `threads`; absent: the
    /// client has as many threads as the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_threads: Option<usize>,
}

impl Load {
    /// `threads` on each side.
    pub fn new(threads: usize, connections: usize) -> Self {
        Self::sized(threads, connections, threads)
    }

    /// `threads` for the server, `client_threads` for the client.
    pub fn sized(threads: usize, connections: usize, client_threads: usize) -> Self {
        Self {
            threads,
            connections,
            client_threads: (client_threads != threads).then_some(client_threads),
        }
    }

    /// The client's threads.
    pub fn client_threads(&self) -> usize {
        self.client_threads.unwrap_or(self.threads)
    }

    /// The same load with `client_threads` for the client.
    pub fn with_client_threads(self, client_threads: usize) -> Self {
        Self::sized(self.threads, self.connections, client_threads)
    }

    /// The load in words: "2 threads, 10 connections", "1 thread, client
    /// 2 threads, 10 connections".
    pub fn label(&self) -> String {
        let c = self.connections;
        format!(
            "{}, {c} connection{}",
            self.threads_words(),
            plural(c as u64)
        )
    }

    /// Its thread counts in words: "2 threads", "1 thread, client 2 threads".
    pub fn threads_words(&self) -> String {
        let words = |n: usize| format!("{n} thread{}", plural(n as u64));
        match self.client_threads {
            Some(n) => format!("{}, client {}", words(self.threads), words(n)),
            None => words(self.threads),
        }
    }

    /// How file names tell it from the others: "2t-10c", "1t-c2t-10c".
    pub fn slug(&self) -> String {
        let client = match self.client_threads {
            Some(n) => format!("-c{n}t"),
            None => String::new(),
        };
        format!("{}t{client}-{}c", self.threads, self.connections)
    }

    /// Its thread counts as tables name them: "2", or "2, client 4"
    /// where the client's differ.
    pub fn threads_label(&self) -> String {
        match self.client_threads {
            None => self.threads.to_string(),
            Some(client) => format!("{}, client {client}", self.threads),
        }
    }
}

/// A window tied to a connection count: a workload of another window does
/// not run at loads of these connections (`--preset loopback-bench`: one
/// client with one block in flight, sixteen with sixteen).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct WindowAt {
    pub connections: usize,
    pub window: usize,
}

/// What each connection does: over which protocol, bytes per block, blocks
/// in flight, in the open loop the rate over all connections, with churn
/// the blocks after which a connection closes and another opens, and
/// whether inside TLS, and what the server's connections do with each
/// block (its shape). (In this order, a run's TCP workloads come before
/// its UDP ones, its plain and TLS workloads side by side, the handshake
/// scenario's churning ones after them.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Workload {
    pub protocol: Protocol,
    pub block: usize,
    pub window: usize,
    /// The open loop's rate; none: the closed loop.
    pub rate: Option<Rate>,
    pub churn: Option<u64>,
    pub tls: Option<Tls>,
    pub shape: Shape,
}

/// An open loop's rate over all connections: so many blocks a second, or a
/// share of the capacity the run's first implementation showed in the
/// closed loop at the same load, in the same workload otherwise (so that a
/// maintainer's partial loads follow the machine: `--rates 10%,50%`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rate {
    PerSecond(u64),
    /// Percent of the capacity.
    Share(u32),
}

impl Rate {
    /// "5000 blocks/s", "10% of capacity".
    pub fn label(self) -> String {
        match self {
            Self::PerSecond(r) => format!("{r} blocks/s"),
            Self::Share(p) => format!("{p}% of capacity"),
        }
    }

    /// "5000", "10%": as `--rates` takes it, and tables head their columns.
    pub fn short(self) -> String {
        match self {
            Self::PerSecond(r) => r.to_string(),
            Self::Share(p) => format!("{p}%"),
        }
    }
}

impl std::str::FromStr for Rate {
    type Err = String;

    /// "5000" blocks a second, or "10%" of the capacity.
    fn from_str(s: &str) -> Result<Self, String> {
        let number = |t: &str, max: u64| match t.trim().parse::<u64>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(format!(
                "{s:?}: give blocks a second (1 to {max}) or a share such as 10%"
            )),
        };
        match s.strip_suffix('%') {
            Some(p) => Ok(Self::Share(number(p, 100)? as u32)),
            None => Ok(Self::PerSecond(number(s, u32::MAX as u64)?)),
        }
    }
}

/// How a workload runs inside TLS.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tls {
    /// No tickets, no sessions kept: every handshake is a full one.
    Full,
    /// The server issues a ticket with every handshake; each reconnect
    /// offers one from an earlier connection.
    Resumption,
}

impl Tls {
    pub fn label(self) -> &'static str {
        match self {
            Self::Full => "TLS",
            Self::Resumption => "TLS with resumption",
        }
    }
}

impl Workload {
    /// How tables and charts name it: the block, the window where
    /// pipelined, the rate in the open loop, churn, TLS, the server's
    /// shape where it is not the echo.
    pub fn label(&self) -> String {
        let mut label = format!("block {} bytes", self.block);
        if self.window > 1 {
            label += &format!(", window {}", self.window);
        }
        label + &self.beyond_block_and_window()
    }

    /// The rest of its label, after block and window: empty for a plain
    /// closed-loop echo over TCP.
    pub fn beyond_block_and_window(&self) -> String {
        let mut label = String::new();
        if self.protocol != Protocol::Tcp {
            label += &format!(", over {}", self.protocol.label());
        }
        if let Some(rate) = self.rate {
            label += &format!(", open loop at {}", rate.label());
        }
        if let Some(churn) = self.churn {
            label += &format!(", a new connection every {churn} block{}", plural(churn));
        }
        if let Some(tls) = self.tls {
            label += &format!(", {}", tls.label());
        }
        if self.shape != Shape::Echo {
            label += &format!(", {} shape", self.shape.name());
        }
        label
    }

    /// How file names tell it from the run's other workloads.
    pub fn slug(&self) -> String {
        let mut slug = format!("-{}B-w{}", self.block, self.window);
        if self.protocol != Protocol::Tcp {
            slug += &format!("-{}", self.protocol.name());
        }
        match self.rate {
            None => {}
            Some(Rate::PerSecond(r)) => slug += &format!("-r{r}"),
            Some(Rate::Share(p)) => slug += &format!("-r{p}pc"),
        }
        if let Some(churn) = self.churn {
            slug += &format!("-churn{churn}");
        }
        match self.tls {
            None => {}
            Some(Tls::Full) => slug += "-tls",
            Some(Tls::Resumption) => slug += "-tls-resumption",
        }
        if self.shape != Shape::Echo {
            slug += &format!("-{}", self.shape.name());
        }
        slug
    }

    /// What of it `protocol` runs: all of it over TCP; over HTTP and
    /// WebSocket, whose one server answers each message itself on
    /// keep-alive connections, the closed-loop echo (plain or inside TLS,
    /// at any window); over UDP, which has one datagram in flight and no
    /// connections to secure either, that echo at window 1 in plain alone.
    pub fn over(self, protocol: Protocol) -> Option<Self> {
        let echo = self.churn.is_none() && self.rate.is_none() && self.shape == Shape::Echo;
        match protocol {
            Protocol::Tcp => Some(self),
            Protocol::Http | Protocol::WebSocket => echo.then_some(self),
            Protocol::Udp => (echo && self.tls.is_none()).then_some(Self { window: 1, ..self }),
        }
    }

    /// The same workload over plain TCP.
    pub fn plain(self) -> Self {
        Self { tls: None, ..self }
    }

    /// The same workload in the closed loop.
    pub fn closed(self) -> Self {
        Self { rate: None, ..self }
    }

    /// The same workload in the echo shape.
    pub fn echo(self) -> Self {
        Self {
            shape: Shape::Echo,
            ..self
        }
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The loads a run takes when it names none, by `--matrix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matrix {
    /// The muduo article's, less its 10,000-connection load, whose runs
    /// take seconds each, and less the thread counts over the machine's
    /// CPUs, which measure its time slicing more than a runtime: the
    /// default, meant to reach its precision, build included, within 15
    /// minutes of a fresh clone on a 2-core machine (the book's "The
    /// default run" says how close it comes).
    Quick,
    /// The muduo article's whole matrix.
    Muduo,
}

impl crate::named::Named for Matrix {
    const ALL: &'static [Self] = &[Self::Quick, Self::Muduo];
    const NAMES: &'static [&'static str] = &["quick", "muduo"];
}

impl Matrix {
    /// Its loads on a machine of `cpus` CPUs (none: the server is on
    /// another machine, whose CPUs are not known here).
    pub fn loads(self, cpus: Option<usize>) -> Vec<Load> {
        let all = muduo();
        match self {
            Self::Muduo => all,
            Self::Quick => all
                .into_iter()
                .filter(|l| l.connections < 10_000)
                .filter(|l| cpus.is_none_or(|cpus| l.threads <= cpus.max(1)))
                .collect(),
        }
    }
}

/// The muduo article's loads: one thread at 1 to 10,000 connections, then 1 to
/// 4 threads at 100 and at 1,000 connections.
pub fn muduo() -> Vec<Load> {
    let single = [1, 10, 100, 1000, 10000].map(|connections| Load::new(1, connections));
    let threaded = [100, 1000]
        .into_iter()
        .flat_map(|connections| (1..=4).map(move |threads| Load::new(threads, connections)));
    let mut loads: Vec<Load> = single.into_iter().collect();
    loads.extend(threaded.filter(|l| l.threads > 1));
    loads
}

/// Every thread count at every connection count.
pub fn cross(threads: &[usize], connections: &[usize]) -> Vec<Load> {
    threads
        .iter()
        .flat_map(|&threads| {
            connections
                .iter()
                .map(move |&connections| Load::new(threads, connections))
        })
        .collect()
}

/// Each load at each of the client's thread counts (`--client-threads`;
/// none: each load as it is, the client's threads the server's).
pub fn with_client_threads(loads: Vec<Load>, client_threads: &[usize]) -> Vec<Load> {
    if client_threads.is_empty() {
        return loads;
    }
    let mut out: Vec<Load> = Vec::new();
    for load in loads {
        for &client in client_threads {
            let sized = load.with_client_threads(client);
            if !out.contains(&sized) {
                out.push(sized);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn quick_leaves_out_ten_thousand_connections_and_threads_over_the_cpus() {
        let threads = |cpus| -> Vec<usize> {
            let mut t: Vec<usize> = Matrix::Quick
                .loads(cpus)
                .iter()
                .map(|l| l.threads)
                .collect();
            t.dedup();
            t
        };
        assert_eq!(Matrix::Quick.loads(Some(16)).len(), 10);
        assert_eq!(Matrix::Quick.loads(None), Matrix::Quick.loads(Some(16)));
        assert_eq!(threads(Some(2)), [1, 2]);
        assert_eq!(Matrix::Quick.loads(Some(2)).len(), 6);
        assert_eq!(threads(Some(1)), [1]);
        assert_eq!(threads(Some(0)), [1]);
        assert!(
            Matrix::Quick
                .loads(None)
                .iter()
                .all(|l| l.connections < 10_000)
        );
        assert_eq!(Matrix::Muduo.loads(Some(2)), muduo());
    }

    #[test]
    fn client_threads_multiply_the_loads_and_equal_ones_are_the_default() {
        let loads = with_client_threads(cross(&[1, 2], &[10]), &[2]);
        assert_eq!(
            loads,
            [Load::sized(1, 10, 2), Load::new(2, 10)],
            "2 client threads beside 2 server threads is the plain load"
        );
        assert_eq!(loads[0].client_threads(), 2);
        assert_eq!(loads[1].client_threads(), 2);
        assert_eq!(loads[0].threads_label(), "1, client 2");
        assert_eq!(loads[1].threads_label(), "2");
        assert_eq!(with_client_threads(cross(&[1], &[10]), &[]).len(), 1);
        assert_eq!(with_client_threads(cross(&[1], &[10]), &[1, 2, 4]).len(), 3);
        let json = serde_json::to_string(&Load::new(2, 10)).unwrap();
        assert_eq!(
            json, r#"{"threads":2,"connections":10}"#,
            "files stay as they were"
        );
    }

    #[test]
    fn muduo_matrix_has_each_load_once() {
        let loads = muduo();
        assert_eq!(loads.len(), 11);
        assert_eq!(loads.iter().collect::<HashSet<_>>().len(), loads.len());
        for c in [100, 1000] {
            for t in 1..=4 {
                assert!(loads.contains(&Load::new(t, c)));
            }
        }
    }
}
