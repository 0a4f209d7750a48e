//! `compare` end to end: the real binary, which builds and runs the real
//! runtime binaries. Real processes, real sockets on loopback.

mod arrivals;
mod check;
mod client_bound;
mod client_hosts;
mod common;
mod disk;
mod errors;
mod explain;
mod external;
mod faults;
mod history;
mod history_file;
mod history_stores;
mod interop;
mod knobs;
mod netns;
mod open_loop;
mod report;
mod run;
mod shapes;
mod site;
mod tls;
mod two_hosts;
mod udp;
mod unavailable;
mod unreleased;
mod web;
mod workloads;

use model::adapters::ADAPTERS;

/// Every implementation `compare list` knows, in its order.
pub fn implementations() -> Vec<&'static str> {
    ADAPTERS.iter().map(|a| a.name).collect()
}
