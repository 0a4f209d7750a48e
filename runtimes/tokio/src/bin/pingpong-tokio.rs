//! tokio's multi-threaded work-stealing runtime: one shared IO driver, N
//! worker threads, one listener ("1 context / N threads").

use pingpong::async_runtime::Async;
use pingpong_tokio::{Tokio, WorkStealing};

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<Async<Tokio<WorkStealing>>>()
}
