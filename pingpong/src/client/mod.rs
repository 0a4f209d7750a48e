//! The client side: the state its connections share, each connection's
//! protocol state machine, and the connection task of async runtimes.

mod datagram;
pub mod open_loop;
mod open_loop_record;
mod session;
mod state;
mod tasks;

pub use datagram::{DatagramSession, Reply, datagram_connection};
pub(crate) use open_loop_record::Record as OpenLoopRecord;
pub use session::{Next, Session, SessionError};
pub(crate) use state::Shares;
pub use state::{Arrival, Arrivals, Client, ClientConfig, Phase};
pub use tasks::connection;
