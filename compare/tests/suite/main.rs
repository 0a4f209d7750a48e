//! `compare` end to end: the real binary, which builds and runs the real
//! runtime binaries. Real processes, real sockets on loopback.

mod check;
mod common;
mod errors;
mod external;
mod faults;
mod interop;
mod report;
mod run;
mod two_hosts;
mod unavailable;
mod workloads;

/// Every implementation `compare list` knows, in its order.
pub const IMPLEMENTATIONS: [&str; 10] = [
    "tokio",
    "tokio-local",
    "mio",
    "async-std",
    "smol",
    "glommio",
    "monoio",
    "monoio-epoll",
    "compio",
    "std-threads",
];

/// The implementations that need io_uring.
pub const IO_URING: [&str; 3] = ["glommio", "monoio", "compio"];
