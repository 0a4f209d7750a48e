//! Where a side of a pair runs, and how it starts there: one [`Place`]
//! each. Our binaries on this host ([`here`]) or on other hosts over ssh
//! ([`ssh`]), an external program on this host ([`external`]), a server
//! already running, started by hand ([`Given`]). A place starts a side and
//! reads what it says; what a pair of sides measures is
//! [`crate::pair`]'s.

pub mod external;
pub mod here;
pub mod mode;
mod ours;
pub mod ssh;

use std::net::SocketAddr;

use anyhow::anyhow;

use crate::child::{Child, Counting};
use crate::counters::Edge;
use crate::repetition::{Job, Measurement, RepetitionError};
use mode::Mode;
use model::results::Cost;

/// Where a side of a pair runs.
pub trait Place {
    /// Starts `job`'s server here, ready to be connected to.
    fn server(&self, job: &Job, mode: Mode, counting: Counting) -> Result<Server, RepetitionError>;

    /// Runs `job`'s client here against `server` for one pair: what it
    /// measured (the server's figures too, where it sees them).
    fn client(
        &self,
        job: &Job,
        server: &mut Server,
        mode: Mode,
        counting: Counting,
    ) -> Result<Measurement, RepetitionError>;
}

/// A server that accepts connections.
pub struct Server {
    /// Absent for a server started by hand; ssh, for one on another host.
    pub(crate) process: Option<Child>,
    /// The server's process id, where it runs on this host and can be sampled.
    pub(crate) pid: Option<u32>,
    pub(crate) addr: SocketAddr,
    pub(crate) cpus: Vec<usize>,
    /// With TLS: the certificate it made, for the client to trust.
    pub(crate) certificate: Option<String>,
}

impl Server {
    /// What the kernel has counted of the server so far, or why it cannot say.
    pub(crate) fn counts(&mut self, edge: Edge) -> Result<Cost, String> {
        match &mut self.process {
            Some(process) => process.counts(edge),
            None => Err("the server was started by hand".into()),
        }
    }
}

/// A server already running at an address, started by hand (`--server`):
/// nothing of it is started, sampled or stopped.
pub struct Given(pub SocketAddr);

impl Place for Given {
    fn server(&self, _: &Job, _: Mode, _: Counting) -> Result<Server, RepetitionError> {
        Ok(Server {
            process: None,
            pid: None,
            addr: self.0,
            cpus: Vec::new(),
            certificate: None,
        })
    }

    fn client(
        &self,
        _: &Job,
        _: &mut Server,
        _: Mode,
        _: Counting,
    ) -> Result<Measurement, RepetitionError> {
        Err(anyhow!("a server's address runs no client").into())
    }
}
