//! N current-thread tokio runtimes, one per thread, each server thread with
//! its own SO_REUSEPORT listener ("N contexts / N threads").

use pingpong::async_runtime::Async;
use pingpong_tokio::{PerThread, Tokio};

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<Async<Tokio<PerThread>>>()
}
