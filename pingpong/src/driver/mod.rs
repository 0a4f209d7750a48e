//! The two processes a runtime binary can be, generic over its [`Runtime`]:
//! each sets up its side, hands it to the runtime, and reports on stdout.
//!
//! [`Runtime`]: crate::runtime::Runtime

pub mod client;
pub mod server;
