//! How a side of one pair runs: for the timed window, or under a profiler
//! over a span of blocks or seconds.

use std::path::Path;
use std::time::Duration;

use pingpong::client::{Arrival, ClientConfig};

use crate::callgrind::Callgrind;
use crate::perf::Perf;
use crate::repetition::Side;

/// How long a server may take to print its ready line (under callgrind, six
/// times as long: valgrind reads the binary's debug information first).
pub(crate) const READY_DEADLINE: Duration = Duration::from_secs(10);

/// Slack on every deadline derived from the options: a loaded machine is slow.
pub(crate) const MARGIN: Duration = Duration::from_secs(5);

/// How one pair of processes runs.
#[derive(Clone, Copy)]
pub enum Mode<'a> {
    /// The timed window of the options.
    Timed,
    /// `span`'s pingpong, the `under` side run by `profiler`, which writes
    /// what it counted to `out`.
    Counted {
        span: Span,
        under: Side,
        profiler: Profiler<'a>,
        out: &'a Path,
    },
}

impl Mode<'_> {
    /// `program args`, or the two under the profiler where `side` is counted.
    pub(super) fn wrap(
        &self,
        side: Side,
        program: &Path,
        args: Vec<String>,
    ) -> (std::path::PathBuf, Vec<String>) {
        match self {
            Mode::Counted {
                under,
                profiler,
                out,
                ..
            } if *under == side => match profiler {
                Profiler::Callgrind { callgrind, stacks } => {
                    callgrind.wrap(program, &args, out, *stacks)
                }
                Profiler::Perf(perf) => perf.wrap(program, &args, out),
            },
            _ => (program.to_path_buf(), args),
        }
    }

    pub(super) fn ready_deadline(&self) -> Duration {
        match self {
            Mode::Timed => READY_DEADLINE,
            Mode::Counted { .. } => READY_DEADLINE * 6,
        }
    }
}

/// How much a counted pair round-trips.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Span {
    /// So many blocks per connection, the connections started together,
    /// no warm-up and no clock: the closed loop's count.
    Blocks(u64),
    /// A window of so many seconds at the job's own rate, no warm-up: the
    /// open loop's, whose schedule no count of blocks keeps.
    Seconds(f64),
}

impl Span {
    /// Twice as much.
    pub fn doubled(self) -> Self {
        match self {
            Self::Blocks(n) => Self::Blocks(2 * n),
            Self::Seconds(s) => Self::Seconds(2.0 * s),
        }
    }
}

/// What counts a side of a counted pair.
#[derive(Clone, Copy)]
pub enum Profiler<'a> {
    /// callgrind, its instructions in all or, with `stacks`, by call stack.
    Callgrind {
        callgrind: &'a Callgrind,
        stacks: bool,
    },
    /// perf, sampling by call stack.
    Perf(&'a Perf),
}

/// What a counted pair's client does instead of the timed window: its
/// span of blocks, or its window at the job's rate.
pub(super) fn profiled_span(config: &mut ClientConfig, mode: Mode) {
    match mode {
        Mode::Counted {
            span: Span::Blocks(blocks),
            ..
        } => {
            // The clock that times round trips is the suite's work, not the
            // runtime's: counted without it. Connections stay open and start
            // together.
            config.blocks = Some(blocks);
            config.churn = None;
            config.rate = None;
            config.arrival = Arrival::Gated;
            config.warmup = Duration::ZERO;
            config.latency = false;
        }
        Mode::Counted {
            span: Span::Seconds(seconds),
            ..
        } => {
            // The open loop times every block from when it was due: its
            // clock is how it keeps the rate.
            config.seconds = Duration::from_secs_f64(seconds);
            config.warmup = Duration::ZERO;
            config.latency = true;
        }
        Mode::Timed => {}
    }
}
