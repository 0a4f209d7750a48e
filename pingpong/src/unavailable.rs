//! A runtime that cannot start on this machine: a fact about the machine, not
//! a failure of the runtime, so its cells say "unavailable" with the reason.

use std::io;

#[derive(Debug, thiserror::Error)]
#[error("{short}: {source}; {advice}")]
pub struct Unavailable {
    /// A few words for a table cell.
    pub short: &'static str,
    pub source: io::Error,
    /// What to change.
    pub advice: &'static str,
}

impl Unavailable {
    /// An io_uring instance could not be created: names the likely cause.
    pub fn io_uring(source: io::Error) -> io::Error {
        let (short, advice) = match source.kind() {
            io::ErrorKind::Unsupported => (
                "no io_uring in this kernel",
                "io_uring needs Linux 5.6 or newer built with CONFIG_IO_URING",
            ),
            io::ErrorKind::PermissionDenied => (
                "io_uring forbidden",
                "a seccomp profile (Docker's default blocks io_uring) or kernel.io_uring_disabled \
                 forbids it: allow io_uring, or leave this runtime out",
            ),
            io::ErrorKind::OutOfMemory => (
                "too little locked memory for io_uring",
                "raise the locked-memory limit (ulimit -l)",
            ),
            _ => (
                "io_uring could not start",
                "see the OS error; leave this runtime out until it is fixed",
            ),
        };
        io::Error::other(Unavailable {
            short,
            source,
            advice,
        })
    }

    /// A runtime without tasks or services (a baseline) asked for a server
    /// shape other than the echo: `why` says what it has instead.
    pub fn no_tasks(shape: crate::server::Shape, why: &'static str) -> io::Error {
        let short = match shape.hands_off() {
            true => "no tasks to hand blocks to",
            false => "no runtime services",
        };
        io::Error::other(Unavailable {
            short,
            source: io::Error::new(
                io::ErrorKind::Unsupported,
                format!("the {} shape {}; {why}", shape.name(), shape.calls()),
            ),
            advice: "run it in the echo shape",
        })
    }

    /// A runtime that lacks a service a shape calls: `short` names it,
    /// `why` says why.
    pub fn no_service(
        shape: crate::server::Shape,
        short: &'static str,
        why: &'static str,
    ) -> io::Error {
        Self::missing(
            short,
            &format!("the {} shape needs it; {why}", shape.name()),
        )
    }

    /// A service the runtime's glue does not give: `short` names it, `why`
    /// says why.
    pub fn missing(short: &'static str, why: &str) -> io::Error {
        io::Error::other(Unavailable {
            short,
            source: io::Error::new(io::ErrorKind::Unsupported, why.to_owned()),
            advice: "run the shapes and protocols it has",
        })
    }

    /// A binary whose glue has no UDP sockets.
    pub fn no_udp() -> io::Error {
        io::Error::other(Unavailable {
            short: "no UDP",
            source: io::Error::new(
                io::ErrorKind::Unsupported,
                "this binary's glue serves and connects TCP streams only",
            ),
            advice: "run it over TCP, or give its glue UDP sockets (serve_udp, client_udp)",
        })
    }

    /// A binary whose glue serves no HTTP or WebSocket: `why` says what
    /// it lacks.
    pub fn no_web(protocol: crate::protocol::Protocol, why: &'static str) -> io::Error {
        io::Error::other(Unavailable {
            short: "no HTTP or WebSocket server",
            source: io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "hyper and tungstenite serve {} over poll-based IO on an executor; {why}",
                    protocol.name()
                ),
            ),
            advice: "run its client against another server (compare --client), or run it over TCP",
        })
    }

    /// Creates and closes a one-entry io_uring: whether this process may use
    /// io_uring at all, for runtimes that panic rather than report it.
    pub fn probe_io_uring() -> io::Result<()> {
        // struct io_uring_params: 120 bytes the kernel reads as zeroes and fills in.
        let mut params = [0u64; 15];
        // SAFETY: io_uring_setup(2) writes within the params it is given.
        let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) };
        if fd < 0 {
            return Err(Self::io_uring(io::Error::last_os_error()));
        }
        // SAFETY: the descriptor was just created here and is used by nothing else.
        unsafe { libc::close(fd as libc::c_int) };
        Ok(())
    }

    /// The `Unavailable` inside an IO error, if that is what it is.
    pub fn of(error: &io::Error) -> Option<&Unavailable> {
        error.get_ref()?.downcast_ref()
    }
}
