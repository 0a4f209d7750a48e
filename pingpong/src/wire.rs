//! The JSON lines a runtime binary prints on stdout: the one contract between
//! a `pingpong-<name>` process and the orchestrator (or any other caller).

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// One line of a runtime binary's stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    /// The server accepts connections at this address.
    Ready(Ready),
    /// The client's connections are up, and it waits for the start signal
    /// (a line on stdin; `--start-signal`).
    Connected,
    /// The client's measurement window opened or closed.
    Window(Window),
    /// The client's measurement.
    Result(Box<ClientResult>),
    /// What the server's connections did, printed as it stops.
    Served(Served),
    /// The process could not do its job.
    Error(Failure),
}

impl Line {
    /// A line of a runtime binary's stdout, if it is one: anything else the
    /// binary prints is not the orchestrator's to read.
    pub fn parse(text: &str) -> Option<Line> {
        serde_json::from_str(text).ok()
    }

    /// Prints the line on stdout, where the orchestrator reads it.
    pub fn print(&self) {
        println!(
            "{}",
            serde_json::to_string(self).expect("report lines serialize")
        );
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    Open,
    Closed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ready {
    pub addr: SocketAddr,
    /// How many listening sockets serve `addr` (one per thread with
    /// SO_REUSEPORT; over UDP always one per thread).
    pub listeners: usize,
    /// The accept backlog in force: the kernel caps the one asked for at
    /// somaxconn (0 over UDP, which accepts nothing).
    pub backlog: u32,
    /// The CPUs the server process may run on, as it sees its own affinity.
    #[serde(default)]
    pub cpus: Vec<usize>,
    /// With TLS: the certificate the server made at start (base64 of its
    /// DER), for the client to trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_certificate: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientResult {
    pub threads: usize,
    pub connections: usize,
    pub block: usize,
    /// Bytes read by the client inside the measurement window.
    pub bytes: u64,
    /// The window as measured with a monotonic clock.
    pub seconds: f64,
    /// Time from starting the client runtime until every connection was up
    /// (no traffic flows until then, unless arrival is immediate).
    pub connect_seconds: f64,
    /// Connections that ended cleanly after at least one whole block came back verified.
    pub verified_connections: usize,
    /// Jain's fairness index of the connections' bytes in the window: 1 when
    /// all moved as much, k/n when k of n moved everything evenly.
    #[serde(default)]
    pub fairness: Option<f64>,
    /// Connections that received no byte inside the window.
    #[serde(default)]
    pub starved_connections: usize,
    /// Every block's round-trip time inside the window, in nanoseconds, as a
    /// base64 HdrHistogram V2 encoding; absent when recording was off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_histogram: Option<String>,
    /// Each connection's time to connect (from starting to connect until
    /// established), in nanoseconds, encoded as `rtt_histogram` is; absent
    /// when recording was off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_histogram: Option<String>,
    /// Each connection's first round trip, in nanoseconds: with immediate
    /// arrival it includes the wait for the server to accept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_rtt_histogram: Option<String>,
    /// With churn: connections that came up inside the window, each one
    /// replacing one closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_connections: Option<u64>,
    /// In the open loop (`--rate`): what the schedule asked and what it
    /// got; `rtt_histogram` then times each block from when it was due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<Box<OpenLoop>>,
    /// With TLS: what its connections negotiated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Box<Tls>>,
    /// Over UDP: the datagrams sent and lost inside the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams: Option<Datagrams>,
    /// The CPUs the client process may run on, as it sees its own affinity.
    #[serde(default)]
    pub cpus: Vec<usize>,
    /// Bytes read in each slice of the window (they add up to `bytes`).
    #[serde(default)]
    pub series: Vec<u64>,
    /// How long each slice lasted, in seconds (they add up to `seconds`).
    #[serde(default)]
    pub slice_seconds: Vec<f64>,
    /// With `--start-signal`: when the window opened and closed, in seconds
    /// after the signal came, on this host's monotonic clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_edges: Option<[f64; 2]>,
}

/// What a UDP client's sockets sent inside the window, and how many of
/// those datagrams had no answer within the loss timeout
/// ([`crate::datagram::LOSS_TIMEOUT`]): each was sent again, and none is
/// throughput.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Datagrams {
    pub sent: u64,
    pub lost: u64,
}

impl ClientResult {
    /// Why the result cannot be a measurement, if it cannot: a window of
    /// no time (or of none at all) makes throughput infinite, and counts
    /// of more connections than ran make no sense of any figure.
    pub fn impossible(&self) -> Option<String> {
        let time = |t: f64| t.is_finite() && t >= 0.0;
        if !(self.seconds.is_finite() && self.seconds > 0.0) {
            return Some(format!("a window of {} s", self.seconds));
        }
        if !(self.mib_per_s().is_finite() && self.messages_per_s().is_finite()) {
            return Some(format!(
                "{} bytes in {} s, no finite throughput",
                self.bytes, self.seconds
            ));
        }
        if !time(self.connect_seconds) {
            return Some(format!("{} s to connect", self.connect_seconds));
        }
        for (what, n) in [
            ("verified", self.verified_connections),
            ("starved", self.starved_connections),
        ] {
            if n > self.connections {
                return Some(format!("{n} {what} connections of {}", self.connections));
            }
        }
        // Jain's index is at most 1, give or take its sums' rounding.
        if let Some(f) = self.fairness.filter(|f| !(0.0..=1.0 + 1e-9).contains(f)) {
            return Some(format!("a fairness of {f}, outside 0 to 1"));
        }
        if let Some(t) = self.slice_seconds.iter().find(|t| !time(**t)) {
            return Some(format!("a slice of the window of {t} s"));
        }
        None
    }

    pub fn mib_per_s(&self) -> f64 {
        self.bytes as f64 / self.seconds / (1 << 20) as f64
    }

    /// Blocks that came back per second.
    pub fn messages_per_s(&self) -> f64 {
        self.bytes as f64 / self.block as f64 / self.seconds
    }
}

/// An open-loop run: blocks sent on a schedule at a fixed rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenLoop {
    /// The rate asked for, in blocks a second over all connections.
    pub rate: u64,
    /// Blocks that came back inside the window, per second.
    pub achieved: f64,
    /// Blocks due inside the window, and of those, the ones that came back
    /// (the others were not sent by the window's end).
    pub due: u64,
    pub returned: u64,
    /// Round trips from when each block went out (not when it was due), in
    /// nanoseconds, encoded as `rtt_histogram`.
    pub uncorrected_histogram: String,
    /// How late each block went out after it was due.
    pub lag_histogram: String,
    /// How late the generator woke for a due time: its own timing error.
    pub timer_histogram: String,
    /// The mean send lag in each slice of the window, in seconds (null
    /// where no block was due).
    pub lag_series: Vec<Option<f64>>,
    /// The share of the window the generator's threads had work: near 1,
    /// the generator may set the pace.
    pub generator_busy: f64,
    /// Why the run did not sustain the rate, if it did not: then its round
    /// trips time a server that fell behind, not one at this rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_sustained: Option<String>,
}

/// A client's TLS: the protocol version, cipher suite, key exchange group
/// and crypto provider, the only ones offered (so the ones every completed
/// handshake negotiated), and whether sessions were resumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tls {
    pub version: String,
    pub suite: String,
    pub group: String,
    pub provider: String,
    /// Whether reconnects offered a session ticket from an earlier connection.
    pub resumption: bool,
    /// With resumption: every handshake of the run (warm-up included), and
    /// those that offered a ticket (the others were full handshakes: each
    /// connection's first, and any that found no ticket left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshakes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_ticket: Option<u64>,
}

/// What a server's connections did with their blocks over the server's
/// life (warm-up and every window), in its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Served {
    /// Reads that returned bytes, each echoed (a block, part of one, or
    /// several pipelined).
    pub reads: u64,
    /// Reads whose bytes went to another task.
    pub handoffs: u64,
    /// Tasks the shape spawned: handlers, workers, connections' writers.
    pub spawned: u64,
    /// Timers armed around a read (the timeout shape), and those that
    /// fired: a connection ended for each.
    #[serde(default)]
    pub timers: u64,
    #[serde(default)]
    pub timeouts: u64,
    /// Blocks handed to the blocking pool.
    #[serde(default)]
    pub unblocked: u64,
    /// Blocks counted under the shared lock.
    #[serde(default)]
    pub locked: u64,
    /// Futures that each drove a thread's connections (the select shape).
    #[serde(default)]
    pub selects: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub message: String,
    /// Set when the runtime cannot start on this machine at all: a few words
    /// of why (the message has the whole reason and what to change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn result() -> impl Strategy<Value = ClientResult> {
        let counts = (
            0usize..5,
            0usize..5,
            0usize..5,
            1usize..65_536,
            any::<u64>(),
        );
        let times = (
            prop_oneof![Just(0.0), -1e3f64..1e3, Just(f64::MAX)],
            -1e3f64..1e3,
            proptest::option::of(-1f64..2.0),
            proptest::collection::vec(-1f64..1e3, 0..4),
        );
        (counts, times).prop_map(
            |(
                (connections, verified, starved, block, bytes),
                (seconds, connect, fairness, slices),
            )| ClientResult {
                threads: 1,
                connections,
                block,
                bytes,
                seconds,
                connect_seconds: connect,
                verified_connections: verified,
                fairness,
                starved_connections: starved,
                rtt_histogram: None,
                connect_histogram: None,
                first_rtt_histogram: None,
                opened_connections: None,
                open_loop: None,
                tls: None,
                datagrams: None,
                cpus: Vec::new(),
                series: Vec::new(),
                slice_seconds: slices,
                window_edges: None,
            },
        )
    }

    proptest! {
        #[test]
        fn any_line_is_read_or_ignored_without_a_panic(text in ".{0,300}") {
            let _ = Line::parse(&text);
        }

        #[test]
        fn a_result_line_cut_or_changed_anywhere_is_read_or_ignored(
            result in result(),
            cut in 0usize..2000,
            at in 0usize..2000,
            byte in any::<u8>(),
        ) {
            let line = serde_json::to_string(&Line::Result(Box::new(result.clone()))).unwrap();
            prop_assert_eq!(Line::parse(&line), Some(Line::Result(Box::new(result))));
            let _ = Line::parse(&line[..cut.min(line.len())]);
            let mut changed = line.into_bytes();
            let at = at % changed.len();
            changed[at] = byte;
            let _ = Line::parse(&String::from_utf8_lossy(&changed));
        }

        #[test]
        fn a_result_that_can_be_a_measurement_has_finite_figures(result in result()) {
            match result.impossible() {
                None => {
                    prop_assert!(result.mib_per_s().is_finite());
                    prop_assert!(result.messages_per_s().is_finite());
                    prop_assert!(result.verified_connections <= result.connections);
                }
                Some(why) => prop_assert!(!why.is_empty()),
            }
        }
    }
}
