//! monoio on io_uring, owned-buffer IO, one runtime per thread.

use pingpong::async_runtime::Async;
use pingpong_monoio::PerThread;

fn main() -> std::process::ExitCode {
    pingpong::cli::main::<Async<PerThread<monoio::IoUringDriver>>>()
}
