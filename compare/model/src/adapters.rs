//! Our implementations: one runtime adapter each, built as a
//! `pingpong-<name>` binary from a crate under `runtimes/`. This list is the
//! one every part of the suite reads: the builds, `compare list`, the charts'
//! colours and the tests (which fail when a runtime crate is missing here).

use pingpong::knobs::{self, Knob};

include!(concat!(env!("OUT_DIR"), "/locked.rs"));

#[derive(Debug, PartialEq, Eq)]
pub struct Adapter {
    pub name: &'static str,
    /// The cargo package that builds the binary.
    pub package: &'static str,
    /// The crate whose version the results name.
    pub krate: &'static str,
    /// The IO model, in words.
    pub model: &'static str,
    /// Whether `--threads` changes what runs (it does not for thread-per-connection).
    pub threads_matter: bool,
    /// Whether it needs io_uring (and is unavailable where io_uring is).
    pub io_uring: bool,
    /// The builder settings a configuration may turn (`tokio{event_interval=1}`).
    pub knobs: &'static [Knob],
}

const fn adapter(
    name: &'static str,
    package: &'static str,
    krate: &'static str,
    model: &'static str,
) -> Adapter {
    Adapter {
        name,
        package,
        krate,
        model,
        threads_matter: true,
        io_uring: false,
        knobs: &[],
    }
}

pub const ADAPTERS: &[Adapter] = &[
    Adapter {
        knobs: knobs::TOKIO,
        ..adapter(
            "tokio",
            "pingpong-tokio",
            "tokio",
            "work-stealing multi-thread runtime, one shared IO driver and listener (1 context / N threads)",
        )
    },
    Adapter {
        knobs: knobs::TOKIO_LOCAL,
        ..adapter(
            "tokio-local",
            "pingpong-tokio",
            "tokio",
            "one current-thread runtime per thread, SO_REUSEPORT listener per thread (N contexts / N threads)",
        )
    },
    adapter(
        "mio",
        "pingpong-mio",
        "mio",
        "baseline: raw mio event loop per thread, no async runtime, SO_REUSEPORT listener per thread",
    ),
    adapter(
        "async-std",
        "pingpong-async-std",
        "async-std",
        "global executor on N threads, one shared async-io reactor and listener",
    ),
    // smol itself only re-exports its parts: a version of smol, for a
    // scheduler, is the version of its executor.
    adapter(
        "smol",
        "pingpong-smol",
        "async-executor",
        "one async-executor run by N threads, one shared async-io reactor and listener",
    ),
    Adapter {
        io_uring: true,
        knobs: knobs::GLOMMIO,
        ..adapter(
            "glommio",
            "pingpong-glommio",
            "glommio",
            "io_uring thread-per-core executor per thread, SO_REUSEPORT listener per thread",
        )
    },
    Adapter {
        io_uring: true,
        knobs: knobs::MONOIO,
        ..adapter(
            "monoio",
            "pingpong-monoio",
            "monoio",
            "io_uring runtime per thread, owned-buffer IO, SO_REUSEPORT listener per thread",
        )
    },
    Adapter {
        knobs: knobs::MONOIO,
        ..adapter(
            "monoio-epoll",
            "pingpong-monoio",
            "monoio",
            "the monoio code on its legacy epoll driver, runtime and listener per thread",
        )
    },
    Adapter {
        io_uring: true,
        knobs: knobs::COMPIO,
        ..adapter(
            "compio",
            "pingpong-compio",
            "compio",
            "completion-based io_uring runtime per thread, SO_REUSEPORT listener per thread",
        )
    },
    Adapter {
        threads_matter: false,
        ..adapter(
            "std-threads",
            "pingpong-std-threads",
            "std",
            "baseline: blocking std::net, one OS thread per connection on both sides, no event loop",
        )
    },
    Adapter {
        knobs: knobs::MAY,
        ..adapter(
            "may",
            "pingpong-may",
            "may",
            "stackful coroutines on N work-stealing worker threads, blocking-style IO, one shared listener",
        )
    },
    Adapter {
        io_uring: true,
        knobs: knobs::KIMOJIO,
        ..adapter(
            "kimojio",
            "pingpong-kimojio",
            "kimojio",
            "single-threaded io_uring runtime per thread (borrowed buffers), SO_REUSEPORT listener per thread",
        )
    },
];

/// The open loop's generator (`generator/`): the client of every open-loop
/// cell, so that only the server differs. An instrument, not one of the
/// implementations compared: it serves nothing, and no run measures it as
/// a server. Built and versioned as an adapter is: on mio.
pub const GENERATOR: Adapter = adapter(
    "generator",
    "pingpong-generator",
    "mio",
    "a mio event loop per thread, sending blocks on their schedules and timing each from when it was due",
);

impl Adapter {
    /// The binary cargo builds for it.
    pub fn binary(&self) -> String {
        format!("pingpong-{}", self.name)
    }

    /// The version of the crate it is built on: locked, or the compiler's for std.
    pub fn version(&self) -> &'static str {
        if self.krate == "std" {
            return RUSTC_VERSION;
        }
        LOCKED
            .iter()
            .find(|(package, dep, _)| *package == self.package && *dep == self.krate)
            .map_or("unknown", |(_, _, version)| version)
    }

    /// The adapter named `name`, if it is one of ours.
    pub fn find(name: &str) -> Option<&'static Adapter> {
        ADAPTERS.iter().find(|a| a.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_adapter_has_a_locked_version() {
        for a in ADAPTERS.iter().chain([&GENERATOR]) {
            assert_ne!(a.version(), "unknown", "{}", a.name);
        }
    }
}
